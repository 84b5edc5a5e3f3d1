# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
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


# ---- anchors: what the same link gives other tools, measured in the same run -------------

def _mbps(entry):
    """MB/s (10^6 bytes) of an anchor entry that reports mbit_s, or None."""
    if isinstance(entry, dict) and isinstance(entry.get("mbit_s"), (int, float)):
        return entry["mbit_s"] / 8.0
    return None


def _mpi_anchor(entry):
    """Median MB/s over the completed runs of an anchor's MPI-IO attempts, and a note."""
    if not isinstance(entry, dict):
        return None, "not measured"
    if "mbit_s" in entry:
        return entry["mbit_s"] / 8.0, ""
    runs = [r for r in entry.get("runs", []) if r.get("ok") and r.get("mbit_s")]
    if not runs:
        return None, entry.get("reason") or "no run completed"
    vals = sorted(r["mbit_s"] / 8.0 for r in runs)
    note = f"{entry.get('runs_ok', '?')} runs completed"
    if entry.get("usable") is False:
        why = str(entry.get("reason", "some attempts hung or failed"))
        note += "; " + (why if why.lower().startswith("not usable") else "NOT usable: " + why)
    return vals[len(vals) // 2], note


def anchor_rows(anchors):
    """[(key, label, MB/s or None, note)] from bench/anchors/run-all's JSON."""
    rows = []
    raw = anchors.get("raw_link") or {}
    xr = anchors.get("xrootd") or {}
    ss = anchors.get("sshfs") or {}
    st = anchors.get("stage_copy") or {}
    size = (raw.get("link") or {}).get("file_bytes") or (st.get("link") or {}).get("file_bytes")
    mib = f"{size / 2**20:g} MiB" if size else "the anchor file"
    rows.append(("iperf3_1", "raw link: iperf3, 1 TCP stream (steady state)", _mbps(raw.get("iperf3_1")), ""))
    rows.append(("iperf3_4", "raw link: iperf3, 4 TCP streams", _mbps(raw.get("iperf3_4")), ""))
    rows.append(("tcp_copy_memory", f"raw link: one TCP copy of {mib}, memory to sink (incl. connect and slow start)",
                 _mbps(raw.get("tcp_copy_memory")), ""))
    rows.append(("tcp_copy_file", f"raw link: one TCP copy of {mib}, file to file", _mbps(raw.get("tcp_copy_file")), ""))
    rows.append(("xrdcp_put", "xrootd: xrdcp put", _mbps(xr.get("xrdcp_put")), ""))
    rows.append(("xrdcp_put_streams4", "xrootd: xrdcp put --streams 4", _mbps(xr.get("xrdcp_put_streams4")), ""))
    rows.append(("xrdcp_get", "xrootd: xrdcp get", _mbps(xr.get("xrdcp_get")), ""))
    rows.append(("xrd_stage", "xrootd: write locally, then xrdcp (total)", _mbps(xr.get("stage_write_then_xrdcp")), ""))
    v, note = _mpi_anchor(xr.get("mpiio_xrdposix_preload"))
    rows.append(("xrd_mpiio", "xrootd: MPI-IO through libXrdPosixPreload (collective write)", v, note))
    rows.append(("sshfs_write", "sshfs: sequential write (dd bs=1M)", _mbps(ss.get("write")), ""))
    rows.append(("sshfs_read", "sshfs: read of an uncached file", _mbps(ss.get("read")), ""))
    v, note = _mpi_anchor(ss.get("mpiio_in_mount"))
    rows.append(("sshfs_mpiio", "sshfs: MPI-IO in the mount (collective write)", v, note))
    for tool, entry in (st.get("copy") or {}).items():
        rows.append((f"copy_{tool}", f"stage by copy: {tool} of a local file", _mbps(entry), ""))
    best = st.get("best_tool")
    rows.append(("staged_total", f"stage by copy: local write + fastest copy ({best or '?'})",
                 _mbps(st.get("staged_total")), ""))
    return [r for r in rows if r[2] is not None or r[3]]


def _anchor_section(doc):
    anchors = doc.get("anchors") or {}
    if not anchors:
        return []
    if "skipped" in anchors:
        return [f"Anchors (raw link references): skipped: {anchors['skipped']}.", ""]
    if "error" in anchors:
        return [f"Anchors (raw link references): **failed**: {anchors['error']}.", ""]
    rate = doc["link"].get("rate_mbit")
    out = ["### Anchors: the same link through other tools (bench/anchors, this run)", "",
           "Each anchor moves one file over the emulated link right before the workloads run; "
           "MB/s = 10^6 bytes/s. \"of rate\" = the anchor's bit rate / the configured link rate "
           "(TCP/IP headers alone cap goodput at about 0.965).", "",
           "| anchor | MB/s | of rate | note |", "|---|---|---|---|"]
    for _key, label, v, note in anchor_rows(anchors):
        frac = f"{v * 8 / rate:.2f}" if v is not None and rate else "-"
        out.append(f"| {label} | {_fmt(v)} | {frac} | {note} |")
    out.append("")
    return out


# Workloads whose primary metric is a bandwidth and whose transfers are large enough to be
# compared with a one-file copy: RFS's figure divided by the anchors'.
ANCHOR_COMPARE = [("tcp_copy_file", "raw TCP copy"), ("staged_total", "stage by copy"),
                  ("xrd_mpiio", "XRootD MPI-IO"), ("sshfs_mpiio", "sshfs MPI-IO")]


def _rfs_vs_anchors(doc):
    anchors = doc.get("anchors") or {}
    if not anchors or "skipped" in anchors or "error" in anchors:
        return []
    ref = {k: v for k, _l, v, _n in anchor_rows(anchors) if v}
    cols = [(k, label) for k, label in ANCHOR_COMPARE if ref.get(k)]
    if not cols:
        return []
    out = ["### RFS against the anchors (same run)", "",
           "Bandwidth of the RFS configurations whose calls return once the server has the "
           "data (median `io_bw_MBps`: all bytes the workload wrote and read in timed calls / "
           "the time spent in open + write + read + close) divided by each anchor's MB/s from "
           "the table above; 1.0 = as fast as that tool on this link. Write-behind "
           "configurations (RFS+ABT) are left out: their transfers continue outside the timed "
           "calls (e.g. during romio_perf's untimed-for-bandwidth sync phase), so the same "
           "quotient would exceed the link and mean nothing; their effect is in the ratios "
           "`RFS+ABT/RFS` and `X/PEAK` below and in the `abt` suite. The "
           "anchors move one file in one transfer; the workloads move what the column "
           "\"bytes\" says, in their own pattern, with every round trip their MPI-IO calls "
           "need and on connections that start in TCP slow start, so small workloads cannot "
           "reach a one-file copy's rate on any implementation. For synthetic and tile the "
           "whole-run figure includes many tiny calls (one round trip each); their bulk "
           "cases are listed separately, as the write bandwidth of calls that return once the "
           "server has the data.", "",
           "| workload | config | ranks | bytes | RFS MB/s | " +
           " | ".join(f"/ {label}" for _k, label in cols) + " |",
           "|---|---|---|---|---|" + "---|" * len(cols)]

    def row(name, config, ranks, nbytes, v):
        size = f"{nbytes / 2**20:.3g} MiB" if nbytes else "-"
        return (f"| {name} | {config} | {ranks} | {size} | {_fmt(v)} | " +
                " | ".join(f"{v / ref[k]:.2f}" for k, _l in cols) + " |")

    for exp in doc["experiments"]:
        if exp["primary"] == "total":
            continue
        for r in exp["results"]:
            if r["status"] != "ok" or not r["config"].startswith("RFS"):
                continue
            if "rfs_abt=enable" in (doc["configs"].get(r["config"], {}).get("hints") or ""):
                continue  # write-behind: see the note above the table
            v = r.get("median", {}).get("io_bw_MBps")
            s0 = r["samples"][0] if r.get("samples") else {}
            nbytes = (s0.get("bytes_written") or 0) + (s0.get("bytes_read") or 0)
            if v:
                out.append(row(exp["name"], r["config"], r["ranks"], nbytes, v))
            if exp["metric"] == "cases" and r["config"] in ("RFS", "RFS+STREAMS4"):
                for cname, c in _bulk_cases(r.get("cases") or {}):
                    cv = c.get("write_bw_MBps")
                    if cv:
                        out.append(row(f"{exp['name']}: case {cname}, write", r["config"],
                                       r["ranks"], c["bytes"], cv))
    out.append("")
    return out


def _bulk_cases(cases):
    """The synthetic cases that move bulk data: the largest contiguous one, the strided one
    with the most regions, and the tiles."""
    out = []
    large = [(n, c) for n, c in cases.items() if c.get("kind") == "large"]
    if large:
        out.append(max(large, key=lambda nc: nc[1].get("size", 0)))
    strided = [(n, c) for n, c in cases.items() if c.get("kind") == "strided"]
    if strided:
        out.append(max(strided, key=lambda nc: nc[1].get("regions", 0)))
    out += [(n, c) for n, c in cases.items() if c.get("kind") == "tile"]
    return out


RATIO_LEGEND = [
    "How to read the ratios below (all from medians of this run, same workload and rank count):",
    "",
    "- `RFS/LOCAL`: RFS over the link against the same program writing to the client's own "
    "disk (page cache, no sync): the price of putting the file on the other side of the link.",
    "- `RFS/TESTFS`, `LOCAL/TESTFS`: against ROMIO's testfs (MPICH only), collective "
    "reorganization without any storage: the best visible write bandwidth MPI-IO can give.",
    "- `RFS+X/RFS`: what the optional layer X (ABT, nonblocking I/O, 4 streams, compression) "
    "changes; for bandwidths > 1 is better, for run times (`total`) < 1 is better.",
    "- `X/PEAK (total)`: run time of X / run time of the same program writing nothing: 1.0 means "
    "the I/O cost nothing visible, 2.0 means the run took twice as long.",
    "",
    "The tables' primary metric is the one bench/README.md names per workload. For RFS+ABT "
    "(write-behind) the visible write bandwidth is the speed of copying into ABT's buffers: "
    "the transfer over the link still happens, in the background, and is paid in close (see "
    "`io_bw` in the table above) or hidden behind computation (see `X/PEAK`); it is not a "
    "faster link.",
    "",
]


def _row_mpis(doc, exp, config):
    return {r.get("mpi") for r in exp["results"] if r["config"] == config and r.get("mpi")}


def _config_label(doc, exp, config):
    """The configuration's name, with its MPI when it differs from the run's."""
    other = sorted(m for m in _row_mpis(doc, exp, config) if m != doc["mpi"]["name"])
    return f"{config} [{', '.join(other)}]" if other else config


def _mpi_text(doc):
    """Which MPI each row used, and how MPICH's ranks were kept from spinning."""
    mpi = doc["mpi"]
    used = {}
    for exp in doc["experiments"]:
        for r in exp["results"]:
            if r.get("mpi"):
                used.setdefault(r["mpi"], set()).add(r["config"])
    if len(used) > 1:
        parts = [f"{m}: {', '.join(sorted(c))}" for m, c in sorted(used.items())]
        text = (f"MPI per row: {'; '.join(parts)}. Rows that ran with another MPI than "
                f"{mpi['name']} carry its name in brackets; ratios between them compare two "
                "MPI-IO implementations (MPICH's ROMIO against Open MPI's) as well as the file "
                "systems.")
    else:
        text = f"MPI per row: every row ran with {next(iter(used), mpi['name'])}."
    if "mpich" in used:
        if mpi.get("mpich_idle_yield"):
            text += (" MPICH ranks ran with bench/apps/idle_yield.c preloaded: MPICH 4.0's ch4 "
                     "device polls without ever yielding (no CVAR changes that), so on these 2 "
                     "cores a waiting rank would burn the time slice of the rank it waits for "
                     "(4 ranks of jacobi3d: 70 s instead of 1.8 s); the preload makes an idle "
                     "rank yield, then nap once a wait passes 10 ms, as Open MPI does when "
                     "oversubscribed. The I/O path is unchanged.")
        elif mpi.get("mpich_idle_yield") is False:
            text += (" MPICH ranks ran unmodified (RFS_BENCH_MPICH_SPIN=1 or no "
                     "libidle_yield.so): with more ranks than cores they busy-poll.")
    return text


def _timing_text(doc):
    """Where the run's wall time went (bench/README.md explains the budget)."""
    t = doc.get("timing")
    if not t:
        return ""
    runs = sum(s.get("wall_s", 0) for e in doc["experiments"] for r in e["results"]
               for s in r.get("samples", []))
    nruns = sum(len(r.get("samples", [])) for e in doc["experiments"] for r in e["results"])
    parts = [f"building {t.get('build_s', 0):g} s", f"link and rfsd {t.get('link_and_server_s', 0):g} s",
             f"anchors {t.get('anchors_s', 0):g} s"]
    secs = ((doc.get("anchors") or {}).get("run_all") or {}).get("seconds")
    if secs:
        parts[-1] += " (" + ", ".join(f"{k} {v:g}" for k, v in secs.items()) + ")"
    exps = t.get("experiments_s") or {}
    if exps:
        parts.append("workloads " + ", ".join(f"{k} {v:g}" for k, v in exps.items()) + " s")
    return (f"Time: {doc['duration_s']} s in all: " + "; ".join(parts) +
            f". {nruns} runs took {runs:.0f} s from mpiexec start to exit; the rest is `sync` "
            "before each run, file checks and process start-up.")


def _suite_section(doc):
    out = []
    link = doc["link"]
    out.append(f"## Suite `{doc['suite']}`{' (--full)' if doc['full'] else ''}")
    out.append("")
    host = doc["host"]
    load = ""
    if host.get("loadavg_1m_start") is not None:
        load = (f", machine load (1-min average) {host['loadavg_1m_start']:g} at the start and "
                f"{host.get('loadavg_1m_end', float('nan')):g} at the end")
    out.append(f"Run {doc['started']}, {doc['duration_s']} s, {doc['reps']} repetitions per cell "
               f"(every number is the median, with min-max), "
               f"MPI {doc['mpi']['name']} ({doc['mpi']['why']}), {host['cores']} cores, "
               f"kernel {host['kernel']}{load}."
               + (f" rfsd and librfs-mpiio.so from `{doc['rfs_build_dir']}`." if doc.get("rfs_build_dir") else ""))

    if link.get("mode") == "wan":
        w = doc.get("wan_settings") or {}
        extra = ""
        if w:
            extra = (f"; bench/wan: tbf rate limit both ways, delay daemon {w.get('RFS_WAN_DELAY_MS', '?')} ms "
                     f"each way, MTU {w.get('RFS_WAN_MTU', '?')}, TCP congestion control "
                     f"{w.get('RFS_WAN_TCP_CC', '?')}, TCP buffers up to {w.get('RFS_WAN_TCP_BUF_MB', '?')} MB")
        out.append(f"Link: emulated WAN, {link['rate_mbit']:g} Mbit/s, RTT {link['rtt_ms']:g} ms "
                   f"({link.get('reason', '')}{extra}).")
    else:
        out.append(f"Link: {link.get('mode')}: {link.get('reason', '')}.")
    out.append("")
    out.append(_mpi_text(doc))
    timing = _timing_text(doc)
    if timing:
        out.append("")
        out.append(timing)
    sel = doc.get("selection") or {}
    if sel.get("only") or sel.get("configs") or sel.get("reps_override") or sel.get("no_anchors"):
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
    out.append("")
    out.extend(_anchor_section(doc))
    out.extend(_rfs_vs_anchors(doc))
    out.extend(RATIO_LEGEND)
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
            out.append(f"| {_config_label(doc, exp, c)} | " + " | ".join(cells) +
                       f" | {'; '.join(sorted(checks))} |")
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
                mixed = ""
                if q.get("mpis") and q["mpis"][0] != q["mpis"][1]:
                    mixed = (f" ({q['num']} ran with {q['mpis'][0]}, {q['den']} with "
                             f"{q['mpis'][1]}: different MPI-IO implementations)")
                out.append(f"- {q['num']}/{q['den']} ({q['metric']}, {q['ranks']} ranks): "
                           f"{q['value']:.3g}{mixed}")
        plot = f"{doc['suite']}-{exp['name']}.png"
        out.append("")
        out.append(f"Plot: [{plot}]({plot})")
        out.append("")
    return "\n".join(out)


def _roundtrip_pool_lines(outdir):
    """bench/roundtrip/pool.py's result (roundtrip_pooled.json): the goals judged on several runs."""
    try:
        with open(os.path.join(outdir, "roundtrip_pooled.json")) as f:
            d = json.load(f)
    except (OSError, ValueError):
        return []
    r, g = d.get("ratios_vs_raw", {}), d.get("goals", {})
    runs = d.get("runs", [])
    per_run = "; ".join(f"{x.get('time', '?')}: put {_fmt(x.get('put_streams1_vs_raw'))}, "
                        f"get {_fmt(x.get('get_streams1_vs_raw'))}" for x in runs)
    return [f"Pooled over {len(runs)} runs ({d.get('reps_pooled', '?')} paired repetitions, "
            "`bench/roundtrip/pool.py`, bench/results/roundtrip_runs/; the goals are judged on "
            "this pool, since one run's median moves by about 0.1): "
            f"put {_fmt(r.get('put_streams1_vs_raw'))}, get {_fmt(r.get('get_streams1_vs_raw'))} "
            "of raw TCP (" + ("both >= 0.8: met" if g.get("put_streams1_met") and
                             g.get("get_streams1_met") else ">= 0.8: **not met**") +
            f"). Each run's own median: {per_run}.", ""]


def _roundtrip_section(outdir):
    """bench/roundtrip's result (roundtrip.json), if present."""
    path = os.path.join(outdir, "roundtrip.json")
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError):
        return ""
    if d.get("benchmark") != "roundtrip":
        return ""
    tp, rat = d.get("throughput_MiBps", {}), d.get("throughput_ratio_vs_raw", {})
    lat = d.get("latency_us", {})
    goals = d.get("goals", {})
    out = ["## Round trip (`bench/roundtrip`, loopback)", "",
           f"Run {d.get('time', '?')}, {d.get('link', '?')}, files in {d.get('files_on', '?')}, "
           f"{d.get('file_bytes', 0) / 2**20:g} MiB per transfer, {d.get('reps', '?')} repetitions "
           f"interleaved, {d.get('statistic', 'median')}. Loopback on a shared 2-core machine: "
           "only ratios taken in the same run mean anything, and they swing between runs too.", "",
           "| quantity | median | ratio to raw TCP (median of per-rep ratios) | goal |",
           "|---|---|---|---|"]
    out.append(f"| raw TCP copy (file -> socket -> file) | {_fmt(tp.get('raw_tcp'))} MiB/s | 1 | |")
    for k, v in tp.items():
        if k == "raw_tcp":
            continue
        kind, _, streams = k.partition("_streams")
        r = rat.get(f"{kind.replace('rfs_', '')}_streams{streams}_vs_raw")
        goal = goals.get(f"{kind.replace('rfs_', '')}_streams{streams}_met")
        out.append(f"| `rfs {kind.replace('rfs_', '')}` --streams {streams} | {_fmt(v)} MiB/s | "
                   f"{_fmt(r)} | " + ("" if goal is None else
                                      (">= 0.8: met" if goal else ">= 0.8: **not met**")) + " |")
    lr = d.get("latency_ratio_rfs_vs_raw")
    out.append(f"| 4-byte read: rfs_pread round trip | {_fmt(lat.get('rfs_pread4'))} us | "
               f"{_fmt(lr)} (rfs / raw ping-pong {_fmt(lat.get('raw_pingpong4'))} us) | "
               + ("<= 2: met" if goals.get("latency_met") else "<= 2: **not met**") + " |")
    out.append("")
    out += _roundtrip_pool_lines(outdir)
    samples = d.get("throughput_samples_MiBps", {})
    if samples:
        out.append("Samples (MiB/s): " + "; ".join(
            f"{k} " + ", ".join(f"{x:.0f}" for x in v) for k, v in samples.items()) +
            ". Latency samples (us): " + "; ".join(
            f"{k} " + ", ".join(f"{x:.1f}" for x in v)
            for k, v in d.get("latency_samples_us", {}).items()) + ".")
        out.append("")
    return "\n".join(out)


def _hdf5_section(outdir, name="hdf5_ckpt.json", title=""):
    """A bench/hdf5 result (hdf5_ckpt.json: the small checkpoints; hdf5_ckpt_large.json), if
    present."""
    try:
        with open(os.path.join(outdir, name)) as f:
            d = json.load(f)
    except (OSError, ValueError):
        return ""
    if d.get("benchmark") != "hdf5_ckpt" or "medians" not in d:
        return ""
    link, w, med = d.get("link", {}), d.get("workload", {}), d["medians"]
    out = [f"## HDF5 checkpoints{title} (`bench/hdf5`, h5py over the WAN testbed)", "",
           f"Run {d.get('when', '?')}: {w.get('ranks')} ranks (Open MPI, h5py), {w.get('ckpts')} "
           f"checkpoint files of {w.get('datasets_per_file')} chunked datasets of "
           f"{_fmt(w.get('bytes_per_dataset', 0) / 2**10)} KiB, {w.get('bytes_total', 0) / 1e6:.1f} "
           f"MB in all; link {_fmt(link.get('rate_mbit'))} Mbit/s, RTT {_fmt(link.get('rtt_ms'))} ms, "
           f"TCP {link.get('tcp_cc') or '?'} with {link.get('tcp_buf_mb') or '?'} MiB socket "
           "buffer maxima "
           f"(moving the bytes alone takes {_fmt(d.get('link_time_s'))} s); {d.get('reps')} "
           "repetitions, medians. io_visible: seconds the application spends from each file's "
           "create to its close (summed); STAGE = LOCAL + xrdcp of the files.", "",
           "| configuration | io_visible s | wall s |", "|---|---|---|"]
    for cfg, m in med.items():
        out.append(f"| {cfg} | {_fmt(m.get('io_visible_s'))} | {_fmt(m.get('wall_s'))} |")
    out.append("")
    out.append("Ratios (io_visible): " + ", ".join(f"{k} {_fmt(v)}"
                                                  for k, v in d.get("ratios", {}).items()) + ".")
    for g, v in d.get("goals", {}).items():
        out.append(f"- {g}: {_fmt(v.get('ratio'))}, " + ("met" if v.get("met") else "**not met**"))
    out.append("")
    return "\n".join(out)



def _cli_cc(d):
    """The namespaces' congestion control (newer runs record it per profile); older runs
    recorded only the host's default."""
    ccs = {p.get("congestion") for p in d.get("profiles", {}).values() if p.get("congestion")}
    if ccs:
        return ", ".join(sorted(ccs))
    # bench/wan/up sets cubic in the namespaces since 2026-11-26 01:28; runs before inherited
    # the host's default, which is what they recorded
    when = d.get("when", "")
    ran = "cubic" if when >= "2026-11-26T01:28" else d.get("congestion")
    return f"{ran} (the JSON records the host's default, {d.get('congestion')})"

def _cli_wan_section(outdir):
    """bench/cli's result (cli_wan.json), if present."""
    try:
        with open(os.path.join(outdir, "cli_wan.json")) as f:
            d = json.load(f)
    except (OSError, ValueError):
        return ""
    if d.get("benchmark") != "cli_wan" or not d.get("profiles"):
        return ""
    out = ["## The tools users reach for (`bench/cli`, `rfs cp` over the WAN testbed)", "",
           f"Run {d.get('when', '?')}: link {_fmt(d.get('rate_mbit'))} Mbit/s, "
           f"{_fmt(d.get('delay_ms_one_way'))} ms each way, TCP congestion control "
           f"{_cli_cc(d)}; a {d.get('size_mib')} MiB random file and a tree of "
           f"{d.get('files')} random files of 4..64 KiB; {d.get('reps')} repetitions, medians; "
           "MB/s = 10^6 bytes / wall time of the command (start-up, open, sync and rename "
           "included). Small files: seconds. bench/cli/README.md explains every number.", "",
           "| profile | iperf3 -P 4 | rfs cp put / get | xrdcp best put / get (streams) | "
           "rfs / xrdcp put, get | tree rfs put / get s | rsync put / get s | rsync / rfs | "
           "xrdcp -r put s | server to server / through client |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for name, p in d["profiles"].items():
        sm = p.get("summary", {})
        m, r = sm.get("medians", {}), sm.get("ratios", {})
        xb = sm.get("xrdcp_best", {})
        out.append(
            f"| {name} ({p.get('tcp_buf_max_mb')} MiB buffers) | {_fmt(m.get('iperf3_P4'))} | "
            f"{_fmt(m.get('rfs_put_auto'))} / {_fmt(m.get('rfs_get_auto'))} | "
            f"{_fmt(xb.get('put', {}).get('MBps'))} / {_fmt(xb.get('get', {}).get('MBps'))} "
            f"(-S {xb.get('put', {}).get('streams')} / {xb.get('get', {}).get('streams')}) | "
            f"{_fmt(r.get('rfs_put_default_vs_xrdcp_best_put'))}, "
            f"{_fmt(r.get('rfs_get_default_vs_xrdcp_best_get'))} | "
            f"{_fmt(m.get('rfs_tree_put'))} / {_fmt(m.get('rfs_tree_get'))} | "
            f"{_fmt(m.get('rsync_tree_put'))} / {_fmt(m.get('rsync_tree_get'))} | "
            f"{_fmt(r.get('small_put_rsync_time_over_rfs'))}, "
            f"{_fmt(r.get('small_get_rsync_time_over_rfs'))} | "
            f"{_fmt(m.get('xrdcp_tree_put_parallel16'))} | "
            f"{_fmt(m.get('tpc_server_to_server'))} / {_fmt(m.get('tpc_through_client'))} MB/s |")
    out.append("")
    for name, p in d["profiles"].items():
        for g, v in p.get("summary", {}).get("goals", {}).items():
            out.append(f"- {name}: {g}: {_fmt(v.get('ratio'))}, "
                       + ("met" if v.get("met") else "**not met**"))
        if p.get("errors"):
            out.append(f"- {name}: errors: " + "; ".join(p["errors"]))
    out.append("")
    return "\n".join(out)


def _cli_tree_section(outdir):
    """Every small-files run of bench/cli (cli_wan_tree*.json: --parts small), side by side:
    the 3x-rsync goal is met by a thin margin, so each run is shown, not one."""
    import glob

    def r3(x):
        return "?" if x is None else f"{x:.3f}"  # the margin is in the third digit

    rows = []
    for path in sorted(glob.glob(os.path.join(outdir, "cli_wan_tree*.json"))):
        try:
            with open(path) as f:
                d = json.load(f)
        except (OSError, ValueError):
            continue
        if d.get("benchmark") != "cli_wan":
            continue
        load = d.get("loadavg_at_start") or [None]
        for name, p in d.get("profiles", {}).items():
            m = p.get("summary", {}).get("medians", {})
            r = p.get("summary", {}).get("ratios", {})
            if m.get("rfs_tree_put") is None:
                continue
            rows.append(f"| {os.path.basename(path)} | {d.get('when', '?')} | {_fmt(load[0])} | "
                        f"{name} ({p.get('tcp_buf_max_mb')} MiB) | {d.get('reps')} | "
                        f"{_fmt(m.get('rfs_tree_put'))} / {_fmt(m.get('rfs_tree_get'))} | "
                        f"{_fmt(m.get('rsync_tree_put'))} / {_fmt(m.get('rsync_tree_get'))} | "
                        f"{r3(r.get('small_put_rsync_time_over_rfs'))}, "
                        f"{r3(r.get('small_get_rsync_time_over_rfs'))} |")
    if not rows:
        return ""
    return "\n".join([
        "## Trees of small files: `rfs cp -r` against `rsync -a` (`bench/cli --parts small`)", "",
        "10 000 random files of 4..64 KiB (347 MB) in 100 directories, 1 Gbit/s, 25 ms each "
        "way; medians of each run's repetitions, seconds; goal (issue #15): rsync's time >= 3x "
        "rfs's. The link alone needs 2.88 s. bench/cli/README.md explains the runs.", "",
        "| file | run | load at start | profile | reps | rfs put / get | rsync put / get | "
        "rsync / rfs put, get |",
        "|---|---|---:|---|---:|---:|---:|---:|", *rows, ""])


def _cache_read_section(outdir):
    """bench/cache's result (cache_read.json), if present."""
    try:
        with open(os.path.join(outdir, "cache_read.json")) as f:
            d = json.load(f)
    except (OSError, ValueError):
        return ""
    if d.get("bench") != "cache_read" or not d.get("results"):
        return ""
    ln = d.get("link", {})
    out = ["## Reads with the read cache and prefetch (`bench/cache`)", "",
           f"Link {_fmt(ln.get('rate_mbit'))} Mbit/s, {_fmt(ln.get('delay_ms_one_way'))} ms each "
           f"way, {ln.get('tcp_buf_max_mib')} MiB socket buffer maxima, "
           f"{ln.get('congestion_control')}; a {d.get('file_bytes', 0) >> 20} MiB file; "
           f"{d.get('reps')} repetitions, medians. RAW: the file's bytes over one TCP connection, "
           f"{_fmt(d.get('raw', {}).get('mbit_s'))} Mbit/s. Ratios: Mbit/s of the bytes the "
           "workload reads over RAW's (seconds from open to close). bench/results/notes/cache.md "
           "says what they mean.", "",
           "| workload | ranks | LOCAL s | PREFETCH s (ratio to RAW) | NOPREFETCH s (ratio) |",
           "|---|---|---|---|---|"]
    for kind, by_n in d["results"].items():
        for n, cfg in by_n.items():
            pf, npf, loc = cfg.get("PREFETCH", {}), cfg.get("NOPREFETCH", {}), cfg.get("LOCAL", {})
            out.append(f"| {kind} | {n.split('_')[0]} | {_fmt(loc.get('median_s'))} | "
                       f"{_fmt(pf.get('median_s'))} ({_fmt(pf.get('ratio_to_raw'))}) | "
                       f"{_fmt(npf.get('median_s'))} ({_fmt(npf.get('ratio_to_raw'))}) |")
    out.append("")
    for g, v in d.get("goal", {}).items():
        out.append(f"- {g}: {v}")
    out.append("")
    return "\n".join(out)


def _load(outdir, name):
    try:
        with open(os.path.join(outdir, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def _wbehind_section(outdir):
    """bench/wbehind's results (wbehind.json; wbehind_large.json, --large), if present."""
    d = _load(outdir, "wbehind.json")
    if d.get("bench") != "wbehind" or not d.get("results"):
        return ""
    ln = d.get("link", {})
    out = ["## Two-stage write-behind (`bench/wbehind`)", "",
           f"Link {_fmt(ln.get('rate_mbit'))} Mbit/s, {_fmt(ln.get('delay_ms_one_way'))} ms each "
           f"way, {ln.get('tcp_buf_max_mib')} MiB socket buffer maxima, "
           f"{ln.get('congestion_control')}; {d.get('ranks')} ranks, {d.get('reps')} repetitions, "
           "medians; the slowest rank's open + write + close (before wb4: the sum of the phases' "
           "maxima over the ranks, which overstated WB), no computation. RAW: the same bytes "
           "over one TCP "
           "connection, same run. Seconds and (ratio to RAW); every file byte-identical to a "
           "local run's. bench/README.md, \"Two-stage write-behind\", says what they mean.", ""]
    large = _load(outdir, "wbehind_large.json")
    runs = [("", d)]
    if large.get("bench") == "wbehind" and large.get("results"):
        runs.append((f" (--large, {large.get('reps')} repetitions)", large))
    for label, r0 in runs:
        la = r0.get("load_average", {})
        if label or la:
            out += [f"Workloads{label}; load average {_fmt(la.get('start', [None])[0])} at the "
                    f"start, {_fmt(la.get('end', [None])[0])} at the end:", ""]
        out += ["| workload | MB | RAW s | COLL | INDEP | WB | WBAUTO | WB / COLL time |",
                "|---|---|---|---|---|---|---|---|"]
        for app, r in r0["results"].items():
            cells = [f"{_fmt(r[c]['median_s'])} ({_fmt(r[c]['ratio_to_raw'])})"
                     for c in ("COLL", "INDEP", "WB", "WBAUTO")]
            out.append(f"| {app} | {r['bytes'] / 1e6:.1f} | {_fmt(r['RAW']['median_s'])} | "
                       + " | ".join(cells)
                       + f" | {_fmt(r['WB']['median_s'] / r['COLL']['median_s'])} |")
        out.append("")
        for g, v in r0.get("goal", {}).items():
            out.append(f"- {g}: {v}")
        out.append("")
    return "\n".join(out)


def _mpisrv_section(outdir):
    """bench/mpisrv's results (mpisrv_links.json, mpisrv_backends.json), if present."""
    links, back = _load(outdir, "mpisrv_links.json"), _load(outdir, "mpisrv_backends.json")
    out = []
    if links.get("benchmark") == "mpisrv_links" and "links_iperf3_fwd_MBps" in next(
            iter(links.get("summary", {}).values()), {}):
        p = links["params"]
        out += ["## A server group's aggregate bandwidth (`bench/mpisrv`)", "",
                f"4 client ranks (romio_perf, independent, {p['size_mib']} MiB) against N rfsd "
                f"processes, each behind its own {_fmt(p['link_mbit'])} Mbit/s link, "
                f"{_fmt(p['delay_ms'])} ms each way; {p['reps']} repetitions, medians. The "
                "reference is one iperf3 flow through each of the N links at once, in the same "
                "run (client to server for writes, back for reads).", "",
                "| processes | iperf3 to server | durable write | ratio | iperf3 back | read | "
                "ratio |", "|---:|---:|---:|---:|---:|---:|---:|"]
        for n, s in links["summary"].items():
            out.append(f"| {n} | {_fmt(s['links_iperf3_fwd_MBps'])} MB/s | "
                       f"{_fmt(s['write_MBps'])} MB/s | {_fmt(s['write_vs_iperf3'])} | "
                       f"{_fmt(s['links_iperf3_rev_MBps'])} MB/s | {_fmt(s['read_MBps'])} MB/s | "
                       f"{_fmt(s['read_vs_iperf3'])} |")
        out += ["", f"- goal: {links.get('goal')}", ""]
    if back.get("benchmark") == "mpisrv_backends":
        p = back["params"]
        out += ["### Collective writes: MPI-IO backend against POSIX backend", "",
                f"romio_perf --collective ({p['size_mib']} MiB, 4 ranks interleaved in 1 MiB "
                f"blocks), same links; {p['reps']} repetitions, medians. posix: the client's "
                "two-phase with its default aggregators (one per node); posix cb_nodes=4: every "
                "rank aggregates; mpiio: `rfsd --backend mpiio`, the group's MPI-IO aggregates.",
                "", "| processes | posix write | posix cb_nodes=4 write | mpiio write | "
                "mpiio / posix | mpiio / posix cb_nodes=4 | posix read | mpiio read |",
                "|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for n, s in back["summary"].items():
            out.append(f"| {n} | {_fmt(s['posix']['write_MBps'])} MB/s | "
                       f"{_fmt(s['posix_cb4']['write_MBps'])} MB/s | "
                       f"{_fmt(s['mpiio']['write_MBps'])} MB/s | "
                       f"{_fmt(s['mpiio_vs_posix_write'])} | "
                       f"{_fmt(s['mpiio_vs_posix_cb4_write'])} | "
                       f"{_fmt(s['posix']['read_MBps'])} MB/s | "
                       f"{_fmt(s['mpiio']['read_MBps'])} MB/s |")
        out.append("")
    return "\n".join(out)


# The paper's figures (mpiio-logistical-networking.txt) and where their analogues are.
_LN_FIGURES = (
    ("6", "contiguous writes of 1 B .. 1 MiB, direct vs buffered", "sweep",
     "manifest_wan_ns_more.json (and manifest_wan.json)"),
    ("7", "large contiguous writes: striped vs one server, by size", "stripe, stripe512, sizes",
     "manifest_wan_ns.json (and manifest_wan.json)"),
    ("8", "cost of replication: 2 replicas vs 1", "sizes", "manifest_wan_ns.json"),
    ("9", "small writes, direct vs buffered", "small",
     "manifest_wan_ns_more.json (and manifest_wan.json)"),
    ("10", "log-structured noncontiguous writes", "noncontig", "manifest_wan_noncontig.json"),
    ("11", "strided reads, direct vs data sieving", "small",
     "manifest_wan_ns_more.json (and manifest_wan.json)"),
    ("12, 13", "2-D tiles (2 x 2), collective vs independent, write and read", "sweep",
     "manifest_wan_ns_more.json (and manifest_wan.json)"),
    ("14", "depot reordering: fixed vs rotated server order", "depot", "manifest_wan_ns.json"),
)


def _stripe_table(st, img):
    out = [f"{st['workload']}. Reference: {st['reference']}. Goal: {st['goal']}. "
           "`sync`: the write + sync phase's time less the write phase's (two writes of "
           "the same bytes: noise can make it negative).", "",
           "| file | servers | write + sync | vs one server | write alone | sync | "
           "read | vs one server | iperf3 to / from the servers |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n, s in st["summary"].items():
        out.append(f"| {n} | {s['servers']} | {_fmt(s['write_sync_MBps'])} MB/s | "
                   f"{_fmt(s['write_vs_one_server'])} | "
                   f"{_fmt(s.get('write_MBps', float('nan')))} MB/s | "
                   f"{_fmt(s.get('sync_s', float('nan')))} s | {_fmt(s['read_MBps'])} MB/s | "
                   f"{_fmt(s['read_vs_one_server'])} | "
                   f"{_fmt(s['links_iperf3_fwd_MBps'])} / "
                   f"{_fmt(s['links_iperf3_rev_MBps'])} MB/s |")
    return out + ["", f"![striped]({img})", ""]


def _depot_table(dp, img):
    out = [f"{dp['workload']}; reference: iperf3 through 1 link "
           f"{_fmt(dp['iperf3_fwd_MBps']['1'])} MB/s, through the 4 links "
           f"{_fmt(dp['iperf3_fwd_MBps']['4'])} MB/s (same run). `slow0`/`slow3`: server 0's "
           f"or server 3's link at {_fmt(dp['slow_link_mbit'])} Mbit/s. Write phase (each "
           "write returns when every object replied), median MB/s. A shared file starts on "
           "server 0 with either value (the same layout): its two columns differ by noise "
           "alone.", "",
           "| links | pattern | write fixed | write rotate | rotate / fixed | read fixed | "
           "read rotate | rotate / fixed |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for v, pats in dp["summary"].items():
        for pat, x in pats.items():
            m = x["median"]
            out.append(f"| {v} | {pat.replace('_', ' ')} | {_fmt(m['fixed']['write_MBps'])} | "
                       f"{_fmt(m['rotate']['write_MBps'])} | "
                       f"{_fmt(x['write_rotate_vs_fixed'])} | {_fmt(m['fixed']['read_MBps'])} | "
                       f"{_fmt(m['rotate']['read_MBps'])} | {_fmt(x['read_rotate_vs_fixed'])} |")
    return out + ["", f"![depot]({img})", ""]


def _sizes_table(sz, img):
    m, r = sz["median"], sz["ratios"]
    out = [f"{sz['workload']}. Reference: {sz['reference']}, same run. Median MB/s:", "",
           "| MiB in all | plain write | 4x1 write | 4x2 write | 4x1 / plain | 4x2 / 4x1 | "
           "plain read | 4x1 read | 4x2 read |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for k in sorted(m["plain"], key=int):
        out.append(f"| {k} | {_fmt(m['plain'][k]['write_MBps'])} | "
                   f"{_fmt(m['4x1'][k]['write_MBps'])} | {_fmt(m['4x2'][k]['write_MBps'])} | "
                   f"{_fmt(r[k]['4x1_vs_plain_write'])} | {_fmt(r[k]['4x2_vs_4x1_write'])} | "
                   f"{_fmt(m['plain'][k]['read_MBps'])} | {_fmt(m['4x1'][k]['read_MBps'])} | "
                   f"{_fmt(m['4x2'][k]['read_MBps'])} |")
    return out + ["", f"![sizes]({img})", ""]


def _manifest_wan_section(outdir, fname="manifest_wan.json"):
    """bench/manifest/wan.py's results (manifest_wan.json: one link divided per port;
    manifest_wan_ns.json: a namespace and link per server), if present: the analogues of
    mpiio-logistical-networking Figs. 6-14, and replica failover under load."""
    d = _load(outdir, fname)
    if d.get("benchmark") != "manifest_wan":
        return ""
    p = d["params"]
    img = os.path.splitext(fname)[0].replace("_", "-")
    ns = p.get("links_kind") == "ns"
    out = ["## One logical file over several servers on the WAN (`bench/manifest/wan.py`"
           + (", a namespace per server" if ns else "") + f", {fname})", "",
           f"{p['servers']} independent rfsd, each behind its own {_fmt(p['link_mbit'])} Mbit/s "
           f"link ({p['links']}), {_fmt(p['delay_ms_each_way'])} ms each way; client ranks in "
           f"the client namespace; {p['reps']} repetitions, medians; load average (1 min) seen: "
           + ", ".join(_fmt(x) for x in d.get("loadavg_1min_seen", [])) + ".", ""]
    if ns:
        out += ["The paper's figures (mpiio-logistical-networking.txt) and where their analogues "
                "are:", "", "| figure | what | part | file |", "|---|---|---|---|"]
        out += [f"| {f} | {w} | {pt} | {fl} |" for f, w, pt, fl in _LN_FIGURES]
        out.append("")
    for key, label in (("stripe", "Striped write and read against one server (Fig. 7 analogue)"),
                       ("stripe512", "The same at 512 MiB (Fig. 7 analogue)")):
        if d.get(key):
            out += [f"### {label}", ""] + _stripe_table(d[key], f"{img}-{key}.png")
    if d.get("depot"):
        out += ["### Depot reordering (Fig. 14 analogue)", ""] + _depot_table(
            d["depot"], f"{img}-depot.png")
    if d.get("sizes"):
        out += ["### Contiguous writes by size and the cost of replication (Figs. 7 and 8 "
                "analogues)", ""] + _sizes_table(d["sizes"], f"{img}-sizes.png")
    fo = d.get("failover")
    if fo:
        s = fo["summary"]
        out += ["### Replica failover under load", "", fo["workload"] + ".", "",
                f"- undisturbed read: {_fmt(s['clean_total_s'])} s, longest wait for one piece "
                f"{_fmt(s['clean_max_wait_s'])} s;",
                f"- with the server killed: {_fmt(s['faulted_total_s'])} s, longest wait "
                f"{_fmt(s['faulted_max_wait_s'])} s; stall over the usual wait (time to "
                f"recover): {_fmt(s['stall_s'])} s;",
                f"- after the kill, every rank had received a piece again within "
                f"{_fmt(s.get('every_rank_progressed_after_kill_s'))} s (a piece usually takes "
                f"{_fmt(s.get('clean_median_wait_s'))} s with 4 ranks sharing the links);",
                f"- every byte read and checked in every run: {s['all_bytes_correct']} "
                f"({s['bytes_per_run']} bytes per run).", "",
                f"![failover]({img}-failover.png)", ""]
    sm = d.get("small")
    if sm:
        a, b = sm["small"], sm["strided"]
        out += ["### Small writes and noncontiguous reads (Figs. 9 and 11 analogues)", "",
                f"Logical file over the 4 servers (1 MiB units), {a['ranks']} rank(s) writing "
                f"{a['write_size']} B pieces; {a['note']}.", "",
                "| mode | write + sync |", "|---|---:|",
                f"| direct | {_fmt(a['write_MBps']['direct'])} MB/s |",
                f"| buffered | {_fmt(a['write_MBps']['buffered'])} MB/s |", "",
                f"- buffered / direct: {_fmt(a['buffered_vs_direct'])} ({a['goal']})", "",
                f"Strided read (Fig. 11), {b['ranks']} ranks, {b['bytes_per_rank']} bytes per "
                "rank in regions each followed by a hole of its size (a vector view):", "",
                "| regions per rank | region | direct (list I/O) | sieve | sieve / direct | "
                "a request per region (rfs_max_extents=1) | sieve / that |",
                "|---:|---:|---:|---:|---:|---:|---:|"]
        for n, c in b["cases"].items():
            pr = c["read_MBps"].get("per_region")
            out.append(f"| {n} | {c['region_bytes']} B | {_fmt(c['read_MBps']['direct'])} MB/s "
                       f"| {_fmt(c['read_MBps']['sieve'])} MB/s | {_fmt(c['sieve_vs_direct'])} | "
                       + (f"{_fmt(pr)} MB/s | {_fmt(c['sieve_vs_per_region'])} |" if pr
                          else "not run | |"))
        out += ["",
                f"![small]({img}-small.png)", ""]
    sw = d.get("sweep")
    if sw:
        sz, tl = sw["sizes"], sw["tiles"]
        modes = list(sz["write_MBps"])
        out += ["### Contiguous writes by size and 2-D tiles (Figs. 6 and 13 analogues)", "",
                f"One rank, {sz['calls_per_size']} writes of each size, then MPI_File_sync "
                "(timed together), median MB/s:", "",
                "| bytes per write | " + " | ".join(modes) + " | " +
                " / ".join(reversed(modes)) + " |", "|---:|" + "---:|" * (len(modes) + 1)]
        for k in sorted(sz["write_MBps"][modes[0]], key=int):
            v = [sz["write_MBps"][m][k] for m in modes]
            out.append(f"| {k} | " + " | ".join(_fmt(x) for x in v) + f" | {_fmt(v[-1] / v[0])} |")
        tmodes = list(tl["median"])
        out += ["", f"{tl['side']} x {tl['side']} doubles in 2 x 2 tiles, {tl['ranks']} ranks "
                f"({tl['note']}), median MB/s:", "",
                "| case | " + " | ".join(f"{m} write | {m} read" for m in tmodes) + " |",
                "|---|" + "---:|---:|" * len(tmodes)]
        for c in tl["median"][tmodes[0]]:
            out.append(f"| {c} | " + " | ".join(
                f"{_fmt(tl['median'][m][c]['write_MBps'])} | "
                f"{_fmt(tl['median'][m][c]['read_MBps'])}" for m in tmodes) + " |")
        out += ["", f"![sweep]({img}-sweep.png)", ""]
    return "\n".join(out)


def _manifest_wan_noncontig_section(outdir):
    """bench/manifest/wan.py --parts noncontig (manifest_wan_noncontig.json), if present: the
    analogue of mpiio-logistical-networking Fig. 10 and of Fig. 11(b)'s read back."""
    d = _load(outdir, "manifest_wan_noncontig.json")
    nc = d.get("noncontig") if d.get("benchmark") == "manifest_wan" else None
    if not nc:
        return ""
    p = d["params"]
    out = ["## Log-structured noncontiguous writes on the WAN (`bench/manifest/wan.py --parts "
           "noncontig`)", "",
           f"{p['servers']} rfsd, each behind its own {_fmt(p['link_mbit'])} Mbit/s link, "
           f"{_fmt(p['delay_ms_each_way'])} ms each way; {nc['ranks']} ranks, "
           f"{nc['bytes_per_rank']} bytes per rank, {nc['note']}; {p['reps']} repetitions, "
           "medians; load average (1 min) seen: "
           + ", ".join(_fmt(x) for x in d.get("loadavg_1min_seen", [])) + ".", "",
           "| regions per write | region | log write | direct list write | per-region write "
           "| log / list | log / per-region | read: log-written | read: direct-written |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n, c in nc["cases"].items():
        w, r = c["write_MBps"], c["read_MBps"]
        pr = w.get("direct_per_region")
        out.append(f"| {n} | {c['region_bytes']} B | {_fmt(w['log'])} MB/s | "
                   f"{_fmt(w['direct_list'])} MB/s | "
                   + (f"{_fmt(pr)} MB/s" if pr else "not run") +
                   f" | {_fmt(c['log_vs_direct_list_write'])} | "
                   + (f"{_fmt(c['log_vs_per_region_write'])}" if pr else "") +
                   f" | {_fmt(r['log'])} MB/s | {_fmt(r['direct_list'])} MB/s |")
    out += ["", "![noncontig](manifest-wan-noncontig.png)", ""]
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
    order = {"standard": 0, "abt": 1, "smoke": 2}
    docs.sort(key=lambda d: (order.get(d["suite"], 2), d["suite"]))
    text = ["# Benchmark report", "",
            "Generated by `bench/run` from the JSON files in this directory; do not edit by hand. "
            "bench/README.md explains every number. Numbers come from one shared 2-core VM: "
            "CPU-bound figures swing by 30% or more between runs, so compare configurations "
            "only within one suite run (the ratios below), never across runs.", ""]
    for d in docs:
        if d.get("kind") == "abt":  # its own layout: bench/lib/abt_report.py
            import abt_report
            text.append(abt_report.section(d))
        else:
            text.append(_suite_section(d))
    for section in (_roundtrip_section(outdir), _hdf5_section(outdir),
                    _hdf5_section(outdir, "hdf5_ckpt_large.json", ", large files"),
                    _hdf5_section(outdir, "hdf5_ckpt_compute.json",
                                  ", large files with compute to drain them"),
                    _cli_wan_section(outdir), _cli_tree_section(outdir),
                    _cache_read_section(outdir),
                    _wbehind_section(outdir),
                    _mpisrv_section(outdir), _manifest_wan_section(outdir),
                    _manifest_wan_section(outdir, "manifest_wan_ns.json"),
                    _manifest_wan_section(outdir, "manifest_wan_ns_more.json"),
                    _manifest_wan_noncontig_section(outdir)):
        if section:
            text.append(section)
    # Sections written by hand (a benchmark without a generator, or what a run showed that its
    # JSON cannot say): bench/results/notes/*.md, in name order.
    for note in sorted(glob.glob(os.path.join(outdir, "notes", "*.md"))):
        with open(note) as f:
            text.append(f.read().rstrip() + "\n")
    path = os.path.join(outdir, "REPORT.md")
    with open(path, "w") as f:
        f.write("\n".join(text).rstrip() + "\n")
    return path
