"""Writes bench/results/REPORT.md from every <suite>.json in the results directory."""
import glob
import json
import os

UNIT = {"write_bw_MBps": "MB/s (visible write bandwidth, higher is better)",
        "read_bw_MBps": "MB/s (read bandwidth, higher is better)",
        "io_bw_MBps": "MB/s (all bytes over open+write+read+close time, higher is better)",
        "total": "s (wall time of the run, lower is better)"}


def _fmt(v):
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 1:
        return f"{v:.3g}"
    return f"{v:.3g}"


def _cell(r, metric):
    if r["status"] == "skipped":
        return "skipped"
    if r["status"] == "failed":
        return "**FAILED**"
    med = r.get("median", {}).get(metric)
    if med is None:
        total = r.get("median", {}).get("total")
        if r.get("samples") and r["samples"][0].get("peak") and total is not None:
            return f"no I/O (run {_fmt(total)} s)"
        return "n/a"
    lo, hi = r["min"].get(metric), r["max"].get(metric)
    return f"{_fmt(med)} ({_fmt(lo)}-{_fmt(hi)})"


def _suite_section(doc):
    out = []
    link = doc["link"]
    out.append(f"## Suite `{doc['suite']}`{' (--full)' if doc['full'] else ''}")
    out.append("")
    out.append(f"Run {doc['started']}, {doc['duration_s']} s, {doc['reps']} repetitions per cell, "
               f"MPI {doc['mpi']['name']} ({doc['mpi']['why']}), {doc['host']['cores']} cores, "
               f"kernel {doc['host']['kernel']}.")
    if link.get("mode") == "wan":
        out.append(f"Link: emulated WAN, {link['rate_mbit']:g} Mbit/s, RTT {link['rtt_ms']:g} ms "
                   f"({link.get('reason', '')}).")
    else:
        out.append(f"Link: {link.get('mode')}: {link.get('reason', '')}.")
    sel = doc.get("selection") or {}
    if sel.get("only") or sel.get("configs") or sel.get("reps_override"):
        out.append("")
        out.append(f"**Partial run** (selection {json.dumps(sel)}): not the whole suite.")
    out.append("")
    skipped = {n: s for n, s in doc["configs"].items() if s["status"] != "runnable"}
    ran = [n for n, s in doc["configs"].items() if s["status"] == "runnable"]
    out.append(f"Configurations measured: {', '.join(ran) or 'none'}.")
    if skipped:
        out.append("")
        out.append("Not measured (no numbers were substituted for them):")
        out.append("")
        for n, s in skipped.items():
            out.append(f"- {n}: skipped: {s['reason']}")
    if doc.get("failed_cells"):
        out.append("")
        out.append(f"**{doc['failed_cells']} cell(s) failed**: their numbers are missing, see the JSON.")
    for note in doc.get("notes", []):
        out.append(f"- Note: {note}")
    anchors = doc.get("anchors") or {}
    if anchors:
        out.append("")
        if "skipped" in anchors:
            out.append(f"Anchors (raw link references): skipped: {anchors['skipped']}.")
        else:
            out.append("Anchors (raw link references from bench/anchors/): " +
                       "; ".join(f"{k}: {json.dumps(v)[:160]}" for k, v in anchors.items()))
    out.append("")
    for exp in doc["experiments"]:
        metric = exp["primary"]
        out.append(f"### {exp['name']} (`{exp['app']} {' '.join(exp['args'])}`)")
        out.append("")
        out.append(f"Median (min-max), {UNIT.get(metric, metric)}.")
        out.append("")
        ranks = sorted({r["ranks"] for r in exp["results"]})
        confs = list(dict.fromkeys(r["config"] for r in exp["results"]))
        ran_confs = [c for c in confs if any(r["config"] == c and r["status"] != "skipped"
                                             for r in exp["results"])]
        if not ran_confs:
            out.append("No configuration could run.")
            out.append("")
            continue
        out.append("| config | " + " | ".join(f"{n} ranks" for n in ranks) + " | checks |")
        out.append("|---|" + "---|" * len(ranks) + "---|")
        for c in ran_confs:
            cells, checks = [], set()
            for n in ranks:
                r = next((r for r in exp["results"] if r["config"] == c and r["ranks"] == n), None)
                cells.append(_cell(r, metric) if r else "")
                if r and r.get("samples"):
                    checks.add("verify " + ",".join(sorted({s["verify"] for s in r["samples"]})))
                if r and r.get("filecheck"):
                    checks.add("file " + r["filecheck"])
            out.append(f"| {c} | " + " | ".join(cells) + f" | {'; '.join(sorted(checks))} |")
        failed = [r for r in exp["results"] if r["status"] == "failed"]
        for r in failed:
            out.append(f"\nFAILED {r['config']} n={r['ranks']}: {r.get('reason')}")
        if exp["metric"] == "cases":
            out.append("")
            out.append("Per-case medians (write / read MB/s):")
            out.append("")
            for r in exp["results"]:
                if r["status"] != "ok" or not r.get("cases"):
                    continue
                items = [f"{name} {_fmt(c.get('write_bw_MBps'))}/{_fmt(c.get('read_bw_MBps'))}"
                         for name, c in r["cases"].items()]
                out.append(f"- {r['config']} n={r['ranks']}: " + ", ".join(items))
        if exp["ratios"]:
            out.append("")
            out.append("Ratios measured in this run (medians; for time, >1 means slower):")
            out.append("")
            for q in exp["ratios"]:
                out.append(f"- {q['num']}/{q['den']} ({q['metric']}, {q['ranks']} ranks): "
                           f"{q['value']:.3g}")
        plot = f"{doc['suite']}-{exp['name']}.png"
        out.append("")
        out.append(f"Plot: [{plot}]({plot})")
        out.append("")
    return "\n".join(out)


def write_report(outdir):
    docs = []
    for path in sorted(glob.glob(os.path.join(outdir, "*.json"))):
        try:
            with open(path) as f:
                d = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(d, dict) and "experiments" in d and "suite" in d:
            docs.append(d)
    order = {"standard": 0, "smoke": 1}
    docs.sort(key=lambda d: (order.get(d["suite"], 2), d["suite"]))
    text = ["# Benchmark report", "",
            "Generated by `bench/run` from the JSON files in this directory; do not edit by hand. "
            "bench/README.md explains every number. Numbers come from one shared 2-core VM: "
            "CPU-bound figures swing by 30% or more between runs, so compare configurations "
            "only within one suite run (the ratios below), never across runs.", ""]
    for d in docs:
        text.append(_suite_section(d))
    path = os.path.join(outdir, "REPORT.md")
    with open(path, "w") as f:
        f.write("\n".join(text).rstrip() + "\n")
    return path
