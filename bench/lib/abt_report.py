# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Numbers, plots and the REPORT.md section "Active buffering (ABT)" from bench/results/abt.json.

derive() turns the per-cell medians written by abt_suite.py into the comparisons of rfs-abt
sec. 4 (all within one suite run): visible write bandwidth and its ratio to the peak, data
staged per snapshot (Table 2), computation slowdown (Table 3), run time against RFS, and the
default-on comparison. section() explains each number in words.
"""
import os

ABT_PAPER = ["RFS+ABT-large-long", "RFS+ABT-large-short", "RFS+ABT-small-long"]
GOAL_RATIO, GOAL_SLOWDOWN = 0.9, 0.05
PEAK_CANDIDATES = ("TESTFS", "MEMFS", "LOCAL")



def _save(fig, outdir, name):
    """Writes one figure as outdir/name and frees it; returns the path."""
    import matplotlib.pyplot as plt
    fig.tight_layout()
    p = os.path.join(outdir, name)
    fig.savefig(p, dpi=90)
    plt.close(fig)
    return p

def _cells(doc):
    return {(c["exp"], c["config"], c["ranks"]): c for c in doc["cells"]}


def _m(cell, key):
    if not cell or cell.get("status") != "ok":
        return None
    v = cell.get("summary", {}).get(key)
    return v["median"] if isinstance(v, dict) else None


def _div(a, b):
    return a / b if a is not None and b else None


def _minus1(r):
    return r - 1 if r is not None else None


def _per_sweep(s, compute_only=False):
    t = s["time"]
    sw = s["params"].get("sweeps")
    v = t.get("compute", 0.0) + (0.0 if compute_only else t.get("comm", 0.0))
    return v / sw if sw else None


def _paired_slowdown(cell, peak_cell, compute_only=False):
    """Slowdown per repetition against PEAK's sample of the same repetition (the two ran
    within minutes, so slow drifts of the machine's load cancel): {median, min, max, n,
    best}; best = the fastest run of the cell over PEAK's fastest - 1 (other jobs only ever
    add time, so the best runs are the least disturbed)."""
    if not cell or not peak_cell or cell.get("status") != "ok" or peak_cell.get("status") != "ok":
        return None
    base = {s.get("rep", i): _per_sweep(s, compute_only) for i, s in enumerate(peak_cell["samples"])}
    vals, mine = [], []
    for i, s in enumerate(cell["samples"]):
        v, b = _per_sweep(s, compute_only), base.get(s.get("rep", i))
        if v is not None:
            mine.append(v)
        if v is not None and b:
            vals.append(v / b - 1)
    if not vals:
        return None
    vals.sort()
    bvals = [b for b in base.values() if b]
    return {"median": vals[len(vals) // 2] if len(vals) % 2 else
            (vals[len(vals) // 2 - 1] + vals[len(vals) // 2]) / 2,
            "min": vals[0], "max": vals[-1], "n": len(vals),
            "best": min(mine) / min(bvals) - 1 if mine and bvals else None}


def derive(doc):
    cells = _cells(doc)
    ranks = sorted({c["ranks"] for c in doc["cells"]})
    out = {"paper": [], "decision": []}
    for e in doc["experiments"]:
        for n in ranks:
            # The visible-write peak: the best of the configurations that wait for neither a
            # disk nor a network (TESTFS: no copy at all; MEMFS: tmpfs; LOCAL: lands in the
            # page cache, no sync), in this experiment, else in experiment long (the peak does
            # not depend on the computation phase), measured in the same repetitions.
            peak_name, peak_bw = None, None
            for ex in (e["name"], "long"):
                for p in PEAK_CANDIDATES:
                    v = _m(cells.get((ex, p, n)), "write_bw_MBps")
                    if v and (peak_bw is None or v > peak_bw):
                        peak_name, peak_bw = (p if ex == e["name"] else f"{p} (long)"), v
                if peak_bw is not None:
                    break
            peak_cell = cells.get((e["name"], "PEAK", n))
            peak_phase = _m(peak_cell, "phase_s")
            peak_sweep = _m(peak_cell, "phase_per_sweep_s")
            peak_csweep = _m(peak_cell, "compute_per_sweep_s")
            rfs = cells.get((e["name"], "RFS", n))
            rfs_run, rfs_write = _m(rfs, "run_s"), _m(rfs, "write_s")
            for cname in e["configs"]:
                c = cells.get((e["name"], cname, n))
                if not c or c["status"] == "skipped":
                    continue
                row = {"exp": e["name"], "phase": e["phase"], "config": cname, "ranks": n,
                       "status": c["status"]}
                if c["status"] == "ok":
                    bw = c["summary"].get("write_bw_MBps")
                    row.update({
                        "write_bw_MBps": bw["median"] if bw else None,
                        "write_bw_min": bw["min"] if bw else None,
                        "write_bw_max": bw["max"] if bw else None,
                        "peak_config": peak_name,
                        "ratio_to_peak": _div(bw["median"] if bw else None, peak_bw),
                        "phase_s": _m(c, "phase_s"),
                        "sweeps": _m(c, "sweeps"),
                        "slowdown_of_medians": _minus1(_div(_m(c, "phase_per_sweep_s"),
                                                            peak_sweep)),
                        "compute_slowdown_of_medians": _minus1(_div(
                            _m(c, "compute_per_sweep_s"), peak_csweep)),
                        "run_s": _m(c, "run_s"),
                        "run_vs_rfs": _div(_m(c, "run_s"), rfs_run),
                        "close_s": _m(c, "close_s"),
                    })
                    ps = _paired_slowdown(c, peak_cell) if cname != "PEAK" else None
                    cs = _paired_slowdown(c, peak_cell, True) if cname != "PEAK" else None
                    row["slowdown_paired"], row["compute_slowdown_paired"] = ps, cs
                    row["slowdown"] = ps["median"] if ps else row["slowdown_of_medians"]
                    row["compute_slowdown"] = (cs["median"] if cs else
                                               row["compute_slowdown_of_medians"])
                    row["reps"] = len(c["samples"])
                    if cname == "PEAK":
                        # The noise floor of the slowdown: PEAK's own spread over repetitions.
                        ph = c["summary"].get("phase_per_sweep_s")
                        row["phase_spread"] = (ph["max"] / ph["min"] - 1) if ph and ph["min"] else None
                    if cname == "PEAK" and rfs_write:
                        # How much of one snapshot the link can carry during one computation
                        # phase (RFS's transfer time after an idle phase as the measure).
                        row["transferable_share"] = peak_phase / rfs_write if peak_phase else None
                    if "abt" in c["summary"]:
                        row["abt"] = c["summary"]["abt"]
                else:
                    row["reason"] = c.get("reason")
                out["paper"].append(row)
    dranks = set(doc.get("decision_ranks") or ranks)
    for d in doc.get("decision", []):
        for n in ranks:
            if n not in dranks:
                continue
            base = d.get("baseline")
            rfs = cells.get((base, "RFS", n)) if base else cells.get((d["name"], "RFS", n))
            peak = cells.get((base, "PEAK", n)) if base else None
            names = (["RFS"] if base else []) + d["configs"]
            for cname in names:
                c = rfs if cname == "RFS" else cells.get((d["name"], cname, n))
                if not c or c["status"] == "skipped":
                    continue
                row = {"workload": d["name"], "config": cname, "ranks": n, "status": c["status"]}
                if c["status"] == "ok":
                    row.update({
                        "write_bw_MBps": _m(c, "write_bw_MBps"),
                        "io_s": _m(c, "io_s"), "run_s": _m(c, "run_s"),
                        "close_s": _m(c, "close_s"),
                        "run_vs_rfs": _div(_m(c, "run_s"), _m(rfs, "run_s")),
                        "io_vs_rfs": _div(_m(c, "io_s"), _m(rfs, "io_s")),
                        "write_bw_vs_rfs": _div(_m(c, "write_bw_MBps"), _m(rfs, "write_bw_MBps")),
                    })
                    if peak:
                        ps = _paired_slowdown(c, peak)
                        row["slowdown_paired"] = ps
                        row["slowdown"] = (ps["median"] if ps else _minus1(_div(
                            _m(c, "phase_per_sweep_s"), _m(peak, "phase_per_sweep_s"))))
                    if "abt" in c.get("summary", {}):
                        row["abt"] = c["summary"]["abt"]
                else:
                    row["reason"] = c.get("reason")
                out["decision"].append(row)
    return out


# ---- plots --------------------------------------------------------------------------------

def _title(doc, what):
    link = doc["link"]
    lk = (f"WAN {link.get('rate_mbit'):g} Mbit/s, RTT {link.get('rtt_ms'):g} ms"
          if link.get("mode") == "wan" else f"link {link.get('mode')} (NOT a WAN)")
    rbr = doc.get("reps_by_ranks") or {}
    reps = "/".join(str(v) for v in rbr.values()) if rbr else doc["reps"]
    return (f"{what}\nabt suite, {doc['mpi']['name']}, {lk}, median of {reps} reps, "
            f"{doc['workload']['snapshot_bytes_per_rank'] >> 20} MiB/rank/snapshot")


def plot(doc, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = derive(doc)
    rows = [r for r in d["paper"] if r["status"] == "ok"]
    ranks = sorted({r["ranks"] for r in rows})
    paths = []
    if not rows:
        return paths

    # 1. Fig. 4: visible write bandwidth per configuration and ranks.
    series = []
    for peak in ("TESTFS", "MEMFS"):
        if any(r["config"] == peak and r["exp"] == "long" for r in rows):
            series.append(("long", peak, f"{peak} (peak)"))
            break
    series += [("long", "LOCAL", "LOCAL"), ("long", "RFS", "RFS"),
               ("long", "RFS+ABT-large-long", "RFS+ABT-large-long"),
               ("short", "RFS+ABT-large-short", "RFS+ABT-large-short"),
               ("long", "RFS+ABT-small-long", "RFS+ABT-small-long")]
    series = [s for s in series if any(r["exp"] == s[0] and r["config"] == s[1]
                                       and r.get("write_bw_MBps") for r in rows)]
    if series:
        fig, ax = plt.subplots(figsize=(8, 4.2))
        width = 0.8 / len(series)
        for i, (exp, cname, label) in enumerate(series):
            xs, ys, lo, hi = [], [], [], []
            for j, n in enumerate(ranks):
                r = next((r for r in rows if r["exp"] == exp and r["config"] == cname
                          and r["ranks"] == n), None)
                if not r or not r.get("write_bw_MBps"):
                    continue
                xs.append(j + (i - (len(series) - 1) / 2) * width)
                ys.append(r["write_bw_MBps"])
                lo.append(r["write_bw_MBps"] - r["write_bw_min"])
                hi.append(r["write_bw_max"] - r["write_bw_MBps"])
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=label)
        ax.set_xticks(range(len(ranks)))
        ax.set_xticklabels([f"{n} ranks" for n in ranks])
        ax.set_yscale("log")
        ax.set_ylabel("application-visible write bandwidth (MB/s)")
        ax.set_title(_title(doc, "Visible write bandwidth (rfs-abt Fig. 4)"), fontsize=9)
        ax.legend(fontsize=7)
        paths.append(_save(fig, outdir, "abt-bandwidth.png"))

    # 2. Table 2: bytes staged per snapshot, foreground and background.
    abt_rows = [r for r in rows if r["config"] in ABT_PAPER and r.get("abt")]
    if abt_rows:
        fig, ax = plt.subplots(figsize=(8, 4))
        labels = [f"{r['config'].replace('RFS+ABT-', '')}\nn={r['ranks']}" for r in abt_rows]
        fg = [100 * (r["abt"]["fg_share"] or 0) for r in abt_rows]
        bg = [100 * (r["abt"]["bg_share"] or 0) for r in abt_rows]
        xs = range(len(abt_rows))
        ax.bar(xs, fg, 0.6, label="foreground (visible)")
        ax.bar(xs, bg, 0.6, bottom=fg, label="background (eq. 1)")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_ylabel("% of all snapshot bytes staged to local disk")
        ax.set_title(_title(doc, "Data staged at the client (rfs-abt Table 2)"), fontsize=9)
        ax.legend(fontsize=7)
        paths.append(_save(fig, outdir, "abt-staging.png"))

    # 3. Table 3: computation slowdown against PEAK, and run time against RFS.
    sl_rows = [r for r in rows if r["config"] not in ("PEAK",) and r.get("slowdown") is not None
               and r["config"] not in ("TESTFS", "MEMFS")]
    if sl_rows:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        labels = [f"{r['exp']}:{r['config'].replace('RFS+ABT-', 'ABT-')}\nn={r['ranks']}"
                  for r in sl_rows]
        xs = list(range(len(sl_rows)))
        sp = [r.get("slowdown_paired") or {} for r in sl_rows]
        lo = [100 * (r["slowdown"] - p["min"]) if p else 0 for r, p in zip(sl_rows, sp)]
        hi = [100 * (p["max"] - r["slowdown"]) if p else 0 for r, p in zip(sl_rows, sp)]
        axes[0].bar(xs, [100 * r["slowdown"] for r in sl_rows], 0.6, yerr=[lo, hi], capsize=2)
        axes[0].axhline(100 * GOAL_SLOWDOWN, color="red", ls="--", lw=1, label="goal 5%")
        axes[0].set_ylabel("slowdown vs PEAK, paired median [min, max] (%)")
        axes[0].legend(fontsize=7)
        rv = [r.get("run_vs_rfs") or 0 for r in sl_rows]
        axes[1].bar(xs, rv, 0.6)
        axes[1].axhline(1.0, color="black", lw=0.8)
        axes[1].set_ylabel("run time / RFS run time (same phases)")
        for ax in axes:
            ax.set_xticks(xs)
            ax.set_xticklabels(labels, fontsize=6, rotation=60, ha="right")
        fig.suptitle(_title(doc, "Computation slowdown (rfs-abt Table 3) and run time"),
                     fontsize=9)
        paths.append(_save(fig, outdir, "abt-slowdown.png"))

    # 4. Default-on: time against RFS on each workload.
    dec = [r for r in d["decision"] if r["status"] == "ok"]
    if dec:
        wls = list(dict.fromkeys(r["workload"] for r in dec))
        fig, axes = plt.subplots(1, len(wls), figsize=(4 * len(wls), 3.8), squeeze=False)
        for ax, wl in zip(axes[0], wls):
            rs = [r for r in dec if r["workload"] == wl]
            key = "run_s"
            ax.bar(range(len(rs)), [r[key] for r in rs], 0.6,
                   color=["grey" if r["config"] == "RFS" else "tab:blue" for r in rs])
            ax.set_xticks(range(len(rs)))
            ax.set_xticklabels([f"{r['config'].replace('RFS+ABT-', 'ABT-')}\nn={r['ranks']}"
                                for r in rs], fontsize=7)
            ax.set_ylabel("run time (s), lower is better")
            ax.set_title(wl, fontsize=9)
        fig.suptitle(_title(doc, "ABT with default settings vs RFS"), fontsize=9)
        paths.append(_save(fig, outdir, "abt-default.png"))
    return paths


# ---- report section -------------------------------------------------------------------------

def _f(v, fmt=None):
    if v is None:
        return "-"
    if fmt:
        return fmt.format(v)
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"


def _pct(v):
    return "-" if v is None else f"{100 * v:+.1f}%"


def section(doc):
    d = derive(doc)
    link = doc["link"]
    w = doc["workload"]
    o = ["## Active buffering (ABT)", ""]
    rbr = doc.get("reps_by_ranks") or {}
    reps_txt = (", ".join(f"{k} at {n} rank{'s' if int(n) > 1 else ''}" for n, k in rbr.items())
                if rbr else str(doc["reps"]))
    o.append(f"Suite `abt` (bench/lib/abt_suite.py), run {doc['started']}, {doc['duration_s']} s, "
             f"repetitions per cell: {reps_txt} (interleaved: repetition 1 of every cell, then "
             f"2, ...), MPI {doc['mpi']['name']} ({doc['mpi']['why']}; build {doc['build']}), "
             f"{doc['host']['cores']} cores.")
    pin = doc.get("pinning") or {}
    if pin.get("app_cpus"):
        o.append(f"CPUs: the network side (rfsd, the WAN emulator delayd: on a cluster, other "
                 f"machines) on CPU {pin['network_cpus']}, runs of up to {len(pin['app_cpus'])} "
                 f"rank(s) (with ABT's threads, like a node whose cores all compute) on CPU "
                 f"{pin['app_cpus']}; larger runs unpinned on all CPUs, sharing them with the "
                 f"network side ({pin.get('how')}).")
    elif pin:
        o.append(f"CPUs: {pin.get('how')}.")
    if link.get("mode") == "wan":
        ip = link.get("iperf3") or {}
        o.append(f"Link: emulated WAN {link['rate_mbit']:g} Mbit/s, RTT {link['rtt_ms']:g} ms "
                 f"({link.get('reason')}); iperf3 1 stream measured "
                 f"{_f(ip.get('mbit_s'))} Mbit/s in this run.")
    else:
        o.append(f"**Link: {link.get('mode')}** ({link.get('reason')}): not the WAN numbers.")
    sel = doc.get("selection") or {}
    if sel.get("only") or sel.get("configs") or sel.get("reps_override"):
        o.append(f"\n**Partial run** (selection {sel}).")
    for note in doc.get("notes", []):
        o.append(f"- Note: {note}")
    skipped = {n: s for n, s in doc["configs"].items() if s["status"] != "runnable"}
    if skipped:
        o.append("")
        o.append("Not measured: " + "; ".join(f"{n} ({s['reason']})" for n, s in skipped.items())
                 + ".")
    if doc.get("failed_cells"):
        o.append(f"\n**{doc['failed_cells']} cell(s) failed**: see abt.json.")
    o.append("")
    o.append(f"Workload: `jacobi3d`, {w['nx']}x{w['ny']}x{w['nz']} doubles per rank "
             f"({w['snapshot_bytes_per_rank'] >> 20} MiB per rank per snapshot), {w['iters']} "
             f"iterations, a collective snapshot (`MPI_File_write_all`, subarray view, every rank "
             f"an aggregator: `cb_nodes`=ranks) every {w['every']}: {w['snapshots']} snapshots. "
             f"ABT buffers of {w['abt_buffer']}; staging on the client's disk.")
    o.append("")
    o.append("Computation phases are wall-clock (`jacobi3d --phase-seconds`: sweeps repeat until "
             "the phase's time has passed, so a loaded machine changes the work done, not the "
             "phase length). They are set from the time RFS needs to deliver one snapshot after "
             "an idle phase, measured at the start of the run (`calibration` in abt.json: time in "
             f"`MPI_File_write_all` / snapshots). Experiment **long**: phase = "
             f"{doc['phase_factor']['long']} x that time (a whole snapshot fits); **short**: "
             f"{doc['phase_factor']['short']} x (the paper's 45-75%). `share` below is the check "
             "after the fact: PEAK's computation time over RFS's write time in the same "
             "experiment.")
    o.append("")
    o.append("| ranks | snapshot transfer (s) | phase long / short (s) |")
    o.append("|---|---|---|")
    for n, c in sorted(doc["calibration"].items(), key=lambda x: int(x[0])):
        ph = c.get("phase_s", {})
        o.append(f"| {n} | {c['snapshot_transfer_s']:.3f} | "
                 f"{_f(ph.get('long'), '{:.3f}')} / {_f(ph.get('short'), '{:.3f}')} |")
    o.append("")
    o.append("What the columns are (medians over the repetitions; min-max in brackets):")
    o.append("- **visible write MB/s**: snapshot bytes (all ranks) / time inside "
             "`MPI_File_write_all` (max over ranks), 10^6 bytes per MB: rfs-abt Fig. 4's metric.")
    o.append("- **/peak**: that over the peak in the same experiment and run: the best median "
             "of the configurations whose writes wait for neither a disk nor a network "
             "(TESTFS when MPICH runs it; MEMFS, the MPI's own collective write into tmpfs; "
             "LOCAL, which lands in the page cache without sync): data reorganization plus one "
             "memory copy, what ABT's own visible cost is made of (rfs-abt's PEAK is TESTFS, "
             "which Open MPI lacks). The column **peak** names it. Goal for "
             f"RFS+ABT-large-long: >= {GOAL_RATIO}.")
    o.append("- **fg / bg staged per snapshot**: bytes ABT wrote to its local journal because the "
             "memory cap was full when the application wrote (foreground, visible), and bytes "
             "the eq. (1) stager moved to it during computation (background), summed over "
             "ranks, divided by the number of snapshots; % of one snapshot (rfs-abt Table 2). "
             "From every rank's RFS_ABT_STATS file.")
    o.append("- **slowdown**: time per sweep (computation + halo exchange, i.e. the computation "
             "phases' time over the sweeps done in them) / PEAK's - 1, PEAK = the same run with "
             f"every write skipped (rfs-abt Table 3). Goal <= {GOAL_SLOWDOWN:.0%}. Paired: each "
             "repetition is divided by PEAK's run of the same repetition (minutes apart at "
             "most, so drifts of the machine's load cancel); shown as the median of those "
             "ratios [min, max], and *best* = the cell's fastest run over PEAK's fastest (other "
             "jobs only add time, so the fastest runs are the least disturbed). RFS, which does "
             "nothing in the background, is the control: its slowdown is the measurement's "
             "noise. **cpu slowdown**: the median for the sweeps alone (halo exchanges "
             "excluded). PEAK's row shows its own max/min spread over the repetitions.")
    o.append("- **ABT CPU**: CPU time of ABT's background threads (senders, stager, pool "
             "filler; summed over ranks) over the ranks' computation time, median: what they "
             "take from cores that compute (here they share the ranks' CPU). **ABT in write**: "
             "share of the visible write time spent inside ABT (copying into its buffers, "
             "foreground staging); the rest is the MPI-IO layer (packing the memory datatype, "
             "two-phase exchange).")
    o.append("- **run s**: whole run minus the untimed read-back (includes close, where ABT "
             "drains); **/RFS**: over RFS's with the same phases.")
    o.append("")
    for e in doc["experiments"]:
        rows = [r for r in d["paper"] if r["exp"] == e["name"]]
        if not rows:
            continue
        o.append(f"### Experiment `{e['name']}` ({e['phase']} computation phases)")
        o.append("")
        o.append("| config | ranks | visible write MB/s | /peak | peak | fg staged / snapshot | "
                 "bg staged / snapshot | slowdown [min, max] (best) | cpu slowdown | ABT CPU | "
                 "ABT in write | run s | /RFS | close s |")
        o.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in sorted(rows, key=lambda r: (e["configs"].index(r["config"]), r["ranks"])):
            if r["status"] != "ok":
                o.append(f"| {r['config']} | {r['ranks']} | **FAILED**: {r.get('reason')} "
                         "| | | | | | | | | | | |")
                continue
            bw = (f"{_f(r['write_bw_MBps'])} ({_f(r['write_bw_min'])}-{_f(r['write_bw_max'])})"
                  if r.get("write_bw_MBps") else
                  (f"no I/O (share {_f(r.get('transferable_share'), '{:.2f}')})"
                   if r["config"] == "PEAK" else "-"))
            a = r.get("abt")
            fg = bg = "-"
            if a:
                snap = w["snapshot_bytes_per_rank"] * r["ranks"]
                fg = f"{a['fg_bytes_per_snapshot'] / 2**20:.2f} MiB ({100 * a['fg_bytes_per_snapshot'] / snap:.0f}%)"
                bg = f"{a['bg_bytes_per_snapshot'] / 2**20:.2f} MiB ({100 * a['bg_bytes_per_snapshot'] / snap:.0f}%)"
            if r["config"] == "PEAK":
                slow = f"(base; spread {_f(100 * r['phase_spread'], '{:.0f}') if r.get('phase_spread') is not None else '-'}%)"
                cslow = "(base)"
            else:
                sp = r.get("slowdown_paired")
                slow = (f"{_pct(sp['median'])} [{_pct(sp['min'])}, {_pct(sp['max'])}] "
                        f"({_pct(sp.get('best'))})" if sp else _pct(r.get("slowdown")))
                cslow = _pct(r.get("compute_slowdown"))
            acpu = awr = "-"
            if a:
                sh = a.get("thread_cpu_share")
                acpu = f"{100 * sh['median']:.1f}%" if sh else "-"
                if a.get("enqueue_s") is not None and r.get("write_bw_MBps"):
                    wr = w["snapshot_bytes_per_rank"] * r["ranks"] * w["snapshots"] / (
                        r["write_bw_MBps"] * 1e6)
                    awr = f"{100 * a['enqueue_s'] / wr:.0f}%" if wr > 0 else "-"
            o.append(f"| {r['config']} | {r['ranks']} | {bw} | {_f(r.get('ratio_to_peak'), '{:.2f}')} "
                     f"| {r.get('peak_config') or '-'} | {fg} | {bg} | {slow} | {cslow} | {acpu} | "
                     f"{awr} | {_f(r.get('run_s'))} | "
                     f"{_f(r.get('run_vs_rfs'), '{:.2f}')} | {_f(r.get('close_s'))} |")
        o.append("")
    o.append("Plots: [abt-bandwidth.png](abt-bandwidth.png) (Fig. 4), "
             "[abt-staging.png](abt-staging.png) (Table 2), "
             "[abt-slowdown.png](abt-slowdown.png) (Table 3 and run time), "
             "[abt-default.png](abt-default.png) (default-on).")
    o.append("")
    goals = []
    for r in d["paper"]:
        if r["status"] != "ok":
            continue
        if r["config"] == "RFS+ABT-large-long" and r.get("ratio_to_peak") is not None:
            goals.append(f"RFS+ABT-large-long n={r['ranks']}: /peak {r['ratio_to_peak']:.2f} "
                         f"({'met' if r['ratio_to_peak'] >= GOAL_RATIO else 'NOT met'})")
        app_cpus = (doc.get("pinning") or {}).get("app_cpus")
        if (r["config"].startswith("RFS+ABT") and r.get("slowdown") is not None and app_cpus
                and r["ranks"] > len(app_cpus)):
            goals.append(f"{r['config']} n={r['ranks']}: slowdown not judged ({r['ranks']} "
                         f"ranks on {len(app_cpus) + 1} CPUs shared with rfsd and the WAN "
                         "emulator, which on a cluster are other machines)")
        elif r["config"].startswith("RFS+ABT") and r.get("slowdown") is not None:
            goals.append(f"{r['config']} n={r['ranks']}: slowdown {_pct(r['slowdown'])} "
                         f"({'met' if r['slowdown'] <= GOAL_SLOWDOWN else 'NOT met'})")
    if goals:
        o.append("Goals: " + "; ".join(goals) + ".")
        o.append("")
    # Where the visible write time of RFS+ABT-large-long goes: inside ABT (enqueue_s) or in
    # the MPI-IO layer above it (packing the memory datatype, two-phase exchange).
    split = []
    for r in d["paper"]:
        a = r.get("abt") or {}
        if (r["config"] == "RFS+ABT-large-long" and r["status"] == "ok"
                and a.get("enqueue_s") is not None and r.get("write_bw_MBps")):
            wr = w["snapshot_bytes_per_rank"] * r["ranks"] * w["snapshots"] / (
                r["write_bw_MBps"] * 1e6)
            share = a["enqueue_s"] / wr if wr > 0 else None
            if share is not None:
                split.append(f"n={r['ranks']}: {100 * share:.0f}% inside ABT, "
                             f"{100 * (1 - share):.0f}% in the MPI-IO layer")
    if split:
        o.append("Where RFS+ABT-large-long's visible write time goes (median write time; ABT's "
                 "part is its `enqueue_s`: copying into the pre-touched buffers; the MPI-IO "
                 "layer's part is packing the subarray into a fresh buffer and, at 2 and more "
                 "ranks, the two-phase exchange, which also runs without ABT): "
                 + "; ".join(split) + ". The gap to the peak is mostly above ABT (see "
                 "docs/abt.md \"Measuring\").")
        o.append("")
    o.append("### Should ABT be on by default?")
    o.append("")
    o.append("ABT switched on as a user would (`rfs_abt=enable`, default cap; buffer size "
             "1/4/16 MiB) against RFS, on a workload it is built for and two it cannot help. "
             "**io s** = open + write + write_sync + read + close time (what the application "
             "waits for in I/O calls, draining included); **run s** as above.")
    o.append("")
    for dd in doc.get("decision", []):
        rows = [r for r in d["decision"] if r["workload"] == dd["name"]]
        if not rows:
            continue
        o.append(f"- `{dd['name']}`: {dd['desc']}.")
    o.append("")
    o.append("| workload | config | ranks | visible write MB/s | io s | /RFS | run s | /RFS | "
             "slowdown | fg / bg staged |")
    o.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in d["decision"]:
        if r["status"] != "ok":
            o.append(f"| {r['workload']} | {r['config']} | {r['ranks']} | **FAILED**: "
                     f"{r.get('reason')} | | | | | | |")
            continue
        a = r.get("abt")
        st = (f"{a['fg_bytes_per_snapshot'] / 2**20:.1f} / {a['bg_bytes_per_snapshot'] / 2**20:.1f} MiB"
              if a else "-")
        o.append(f"| {r['workload']} | {r['config']} | {r['ranks']} | {_f(r.get('write_bw_MBps'))} "
                 f"| {_f(r.get('io_s'))} | {_f(r.get('io_vs_rfs'), '{:.2f}')} | {_f(r.get('run_s'))} "
                 f"| {_f(r.get('run_vs_rfs'), '{:.2f}')} | {_pct(r.get('slowdown'))} | {st} |")
    o.append("")
    return "\n".join(o)
