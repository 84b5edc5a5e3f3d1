# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""bench/run abt: active buffering with threads measured as rfs-abt.txt sec. 4 does.

Flow: pick the build (Open MPI preferred, see suites.py) -> build the workloads -> decide which
configurations can run -> WAN up (or loopback, said so) -> rfsd -> measure the link (iperf3) ->
calibrate per rank count: the cost of one Jacobi sweep (PEAK run) and the time one snapshot
takes to reach the server when RFS alone writes it after an idle computation phase (RFS run);
the computation phase of experiment "long" is then factor_long x that time, of "short"
factor_short x -> run every cell `reps` times, interleaved (rep 1 of every cell, then rep 2, ...),
each ABT run with RFS_ABT_STATS so every rank's staging counters are kept -> medians and
ratios within this run -> bench/results/abt.json, abt-*.png, REPORT.md.

Every number written is explained in bench/lib/abt_report.py (and REPORT.md).
"""
import dataclasses
import datetime
import glob
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

import configs as cfgmod
import runner

log = runner.log


def _pick_build(suite):
    """Open MPI's build unless RFS_BUILD_DIR says otherwise (MPICH busy-polls on 2 cores)."""
    if os.environ.get("RFS_BUILD_DIR"):
        return f"RFS_BUILD_DIR={os.environ['RFS_BUILD_DIR']}"
    pref = suite.get("prefer_build")
    if pref:
        cand = os.path.join(runner.REPO, pref)
        if os.path.exists(os.path.join(cand, "librfs-mpiio.so")):
            os.environ["RFS_BUILD_DIR"] = cand
            return f"{pref}/ (the suite's preferred build; RFS_BUILD_DIR overrides)"
    return "build/ (default; the preferred build is missing)"


def _size(n):
    """Bytes as an RFS hint size (K/M suffix when exact)."""
    for suf, sc in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n % sc == 0:
            return f"{n // sc}{suf}"
    return str(n)


def _jacobi_args(jac, phase_s=None, single=False):
    """jacobi3d arguments; phase_s: wall-clock seconds per computation phase (--phase-seconds),
    so "long" and "short" keep their meaning however loaded the shared machine is."""
    iters, every = (1, 1) if single else (jac["iters"], jac["every"])
    a = ["--nx", str(jac["nx"]), "--ny", str(jac["ny"]), "--nz", str(jac["nz"]),
         "--iters", str(iters), "--every", str(every)]
    return a + (["--phase-seconds", f"{phase_s:.3f}"] if phase_s else ["--compute-scale", "1"])


# Repetitions per rank count (interleaved; --reps or --full override): the 1-rank cells take
# seconds, so they get enough repetitions for a median and a spread of the slowdown; the
# larger ones fewer, to keep the suite near 15 minutes.
REPS_BY_RANKS = {1: 7, 2: 3, 4: 2}


def _cpu_layout():
    """(cpus for the network side, cpus for the application) or None: on a cluster the
    emulator, the server and the TCP stack of the far end are other machines, so they get CPU 0
    and the computing ranks (with ABT's threads, as on a node whose cores all compute) the rest.
    RFS_BENCH_ABT_PIN=off disables it."""
    n = os.cpu_count() or 1
    if n < 2 or os.environ.get("RFS_BENCH_ABT_PIN", "").lower() in ("off", "0", "no"):
        return None
    return [0], list(range(1, n))


def _pin_pid(pid, cpus, saved):
    """Pins every thread of pid to cpus; remembers the old masks in saved (for restore)."""
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return 0
    for tid in tids:
        try:
            saved.setdefault(tid, os.sched_getaffinity(tid))
            os.sched_setaffinity(tid, cpus)
        except OSError:
            pass
    return len(tids)


def _med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


class AbtRun:
    def __init__(self, opts, suite):
        self.opts, self.suite = opts, suite
        self.reps = opts.reps or (suite["full_reps"] if opts.full else suite["reps"])
        # Per rank count (see REPS_BY_RANKS); an explicit --reps or --full applies to all.
        self.reps_by_ranks = ({} if (opts.reps or opts.full) else
                              {n: max(r, 1) for n, r in REPS_BY_RANKS.items()})
        self.jac = suite["full_jacobi"] if opts.full else suite["jacobi"]
        self.ranks = suite["full_ranks"] if opts.full else suite["ranks"]
        self.buf = None  # ABT buffer size hint, set in main()
        self.snap_rank = self.jac["nx"] * self.jac["ny"] * self.jac["nz"] * 8
        self.n_snap = self.jac["iters"] // self.jac["every"]
        self.only = set(opts.only.split(",")) if opts.only else None
        self.wanted = set(opts.configs.split(",")) if opts.configs else None
        self.run_id = 0

    # ---- one run ----------------------------------------------------------------------

    def _hints(self, cfg, ranks):
        if cfg.target != "rfs":
            return cfg.hints
        h = cfg.hints.format(buf=self.buf, snap_rank=_size(self.snap_rank),
                             half_snap_rank=_size(self.snap_rank // 2),
                             staging=self.staging, ranks=ranks)
        # Every rank is an aggregator, as in the paper ("each responsible for writing 32 MB
        # of data per snapshot"), so a rank's share of a snapshot is what its cap is sized for.
        return ";".join(x for x in (h, f"cb_nodes={ranks}") if x)

    def run(self, exp_name, app, cfg, ranks, rep, args):
        self.run_id += 1
        stats_prefix = os.path.join(self.workdir, "abtstats", f"r{self.run_id}")
        env = dict(cfg.env)
        if cfg.target == "rfs" and "ABT" in cfg.name:
            env["RFS_ABT_STATS"] = stats_prefix
        c2 = dataclasses.replace(cfg, hints=self._hints(cfg, ranks), env=env)
        ctx = self.ctx
        if self.unpinned_prefix is not None and ranks > len(self.pinning["app_cpus"]):
            # More ranks than application CPUs: pinned, they would time-share one core and
            # measure the scheduler (every two-phase exchange waits for a time slice), so they
            # run on all cores, sharing them with the network side.
            ctx = dict(self.ctx, ns_prefix=self.unpinned_prefix)
        r = runner.run_once(ctx, {"name": exp_name, "app": app}, c2, ranks, rep, args)
        stats = []
        for path in sorted(glob.glob(stats_prefix + ".*.json")):
            try:
                with open(path) as f:
                    stats.append(json.load(f))
            except (OSError, ValueError):
                pass
            os.unlink(path)
        r["abt"] = stats
        r["hints"] = c2.hints
        # ABT must have carried every byte: nothing failed, and what it took in was sent.
        if r["status"] == "ok" and stats and "ABT" in cfg.name:
            took = sum(s["bytes_buffered"] + s["bytes_staged_fg"] for s in stats)
            sent = sum(s["bytes_sent"] for s in stats)
            failed = sum(s.get("bytes_failed", 0) for s in stats)
            if failed or took != sent:
                r["status"] = "failed"
                r["reason"] = f"ABT took {took} bytes, sent {sent}, failed {failed}"
        return r

    # ---- calibration ------------------------------------------------------------------

    def calibrate(self, ranks):
        """The time one snapshot takes to reach the server (all ranks together) when RFS alone
        writes it after an idle computation phase; the phases are set from it."""
        jac, cal = self.jac, {"ranks": ranks}
        if self.status["RFS"]["status"] == "runnable":
            r = self.run("calib-transfer", "jacobi3d", cfgmod.BY_NAME["RFS"], ranks, 1,
                         _jacobi_args(jac, self.suite["calib_phase_s"]))
            if r["status"] != "ok":
                raise RuntimeError(f"calibration RFS run failed at {ranks} ranks: {r['reason']}")
            s = r["sample"]
            cal["snapshot_transfer_s"] = s["time"]["write"] / self.n_snap
            cal["transfer_MBps"] = s["write_bw_MBps"]
            cal["how"] = (f"RFS run, computation phases of {self.suite['calib_phase_s']} s: "
                          "time in MPI_File_write_all / snapshots")
        else:
            rate = self.link.get("rate_mbit") or self.suite["wan"]["rate_mbit"]
            cal["snapshot_transfer_s"] = ranks * self.snap_rank / (rate * 0.96e6 / 8)
            cal["how"] = f"RFS cannot run: snapshot bytes / (0.96 x {rate} Mbit/s)"
        cal["phase_s"] = {p: max(self.suite["min_phase_s"], f * cal["snapshot_transfer_s"])
                          for p, f in self.suite["phase_factor"].items()}
        log(f"calibration n={ranks}: snapshot transfer {cal['snapshot_transfer_s']:.3f} s -> "
            "computation phases " + ", ".join(f"{p} {v:.3f} s" for p, v in cal["phase_s"].items()))
        return cal

    # ---- plan -------------------------------------------------------------------------

    def plan(self):
        """(cell key, exp name, app, config, ranks, args builder) in run order within a rep."""
        cells = []
        for ranks in self.ranks:
            for e in self.suite["experiments"]:
                if self.only and e["name"] not in self.only:
                    continue
                for c in e["configs"]:
                    cells.append((e["name"], "jacobi3d", c, ranks,
                                  lambda n=ranks, p=e["phase"]: _jacobi_args(
                                      self.jac, self.cal[n]["phase_s"][p])))
            if ranks not in self.suite["decision_ranks"]:
                continue
            for d in self.suite["decision"]:
                if self.only and d["name"] not in self.only and "decision" not in self.only:
                    continue
                for c in d["configs"]:
                    if d["app"] == "jacobi3d":
                        fn = (lambda n=ranks, d=d: _jacobi_args(
                            self.jac, None if d.get("single") else self.cal[n]["phase_s"][d["phase"]],
                            single=d.get("single", False)))
                    else:
                        fn = (lambda d=d: list(d["args"]))
                    cells.append((d["name"], d["app"], c, ranks, fn))
        return cells

    def config_status(self, names):
        pre = runner.Prereqs(self.mpi)
        st = {}
        for name in names:
            cfg = cfgmod.BY_NAME[name]
            reason = pre.config_reason(cfg)
            if cfg.target == "memfs" and not os.access("/dev/shm", os.W_OK):
                reason = "no writable tmpfs at /dev/shm"
            if self.wanted is not None and name not in self.wanted:
                reason = "not selected (--configs)"
            st[name] = {"desc": cfg.desc, "status": "skipped" if reason else "runnable",
                        "reason": reason, "hints": cfg.hints, "app_args": list(cfg.app_args),
                        "target": cfg.target, "phase": cfg.phase}
        return st

    # ---- main -------------------------------------------------------------------------

    def main(self):
        opts, suite = self.opts, self.suite
        started = time.time()
        build_why = _pick_build(suite)
        self.mpi, mpi_why = runner.choose_mpi(opts.mpi)
        bindir = runner.build_apps(self.mpi)
        self.buf = suite["full_buffer"] if opts.full else suite["buffer"]
        names = list(dict.fromkeys(
            [c for e in suite["experiments"] for c in e["configs"]] +
            [c for d in suite["decision"] for c in d["configs"]] + ["PEAK", "RFS"]))
        self.status = self.config_status(names)
        self.workdir = tempfile.mkdtemp(prefix="rfs-bench-abt-",
                                        dir=os.environ.get("RFS_BENCH_TMP", "/var/tmp"))
        os.makedirs(os.path.join(self.workdir, "client"))
        os.makedirs(os.path.join(self.workdir, "abtstats"))
        self.staging = os.path.join(self.workdir, "staging")  # client's disk, not tmpfs
        os.makedirs(self.staging)
        self.link = {"mode": "none", "reason": "no remote configuration is runnable"}
        self.ctx = {}
        self.unpinned_prefix = None  # set when runs are pinned: the prefix without taskset
        wan_ours, server, notes = False, None, []
        saved_affinity, env = {}, None
        cells_out, calib = {}, {}
        try:
            remote = any(s["status"] == "runnable" and s["target"] == "rfs"
                         for s in self.status.values())
            ns_prefix, srv_prefix, listen = [], [], "127.0.0.1"
            if remote:
                env = None
                if opts.no_wan:
                    why = "--no-wan given"
                else:
                    env, wan_ours, why = runner.wan_up(suite["wan"])
                if env:
                    self.link = {"mode": "wan", "reason": why, "ours": wan_ours,
                                 "rate_mbit": float(env.get("RFS_WAN_RATE_MBIT", "nan")),
                                 "rtt_ms": float(env.get("RFS_WAN_RTT_MS", "nan")),
                                 "server_addr": env["RFS_WAN_SERVER_ADDR"]}
                    if not wan_ours:
                        notes.append(
                            f"the WAN (namespaces {env['RFS_WAN_CLIENT_NS']}/"
                            f"{env['RFS_WAN_SERVER_NS']}, state {env.get('RFS_WAN_STATE_DIR')}) "
                            "was already up when the suite started, not brought up by this "
                            "run: make sure nobody else used it meanwhile")
                    self.link["namespaces"] = [env["RFS_WAN_CLIENT_NS"], env["RFS_WAN_SERVER_NS"]]
                    ns_prefix = ["ip", "netns", "exec", env["RFS_WAN_CLIENT_NS"]]
                    srv_prefix = ["ip", "netns", "exec", env["RFS_WAN_SERVER_NS"]]
                    listen = env["RFS_WAN_SERVER_ADDR"]
                    self.link["iperf3"] = self.measure_link()
                else:
                    self.link = {"mode": "loopback", "reason": f"WAN unavailable ({why}): rfsd "
                                 "on 127.0.0.1, so remote numbers measure loopback, not a WAN"}
                    notes.append(self.link["reason"])
                server = runner.RfsServer(srv_prefix, listen, self.workdir)
                log(f"rfsd serving {server.root} at {server.host}:{server.port} "
                    f"({self.link['mode']})")
            layout = _cpu_layout()
            if layout:
                net, app = layout
                pinned = {}
                if server:
                    pinned["rfsd"] = _pin_pid(server.proc.pid, set(net), saved_affinity)
                dpid = (env or {}).get("RFS_WAN_DELAYD_PID") if remote else None
                if dpid and dpid.isdigit():
                    pinned["delayd"] = _pin_pid(int(dpid), set(net), saved_affinity)
                # mpiexec must not re-bind the ranks inside the CPUs it is given.
                os.environ["OMPI_MCA_hwloc_base_binding_policy"] = "none"
                self.unpinned_prefix = list(ns_prefix)
                ns_prefix = ns_prefix + ["taskset", "-c", ",".join(map(str, app))]
                self.pinning = {"network_cpus": net, "app_cpus": app, "threads_pinned": pinned,
                                "how": "rfsd and delayd threads pinned with sched_setaffinity; "
                                       "runs with at most as many ranks as application CPUs "
                                       "under `taskset -c`, larger runs on all CPUs, Open MPI "
                                       "binding off"}
                log(f"CPUs: network side (rfsd, delayd) {net}, application {app}")
            else:
                self.pinning = {"network_cpus": None, "app_cpus": None,
                                "how": "not pinned (one CPU, or RFS_BENCH_ABT_PIN=off)"}
            self.ctx.update({"mpi": self.mpi, "bindir": bindir, "workdir": self.workdir,
                             "server": server, "ns_prefix": ns_prefix,
                             "timeout": suite["timeout"]})
            if ns_prefix:
                notes.append("every configuration ran inside the client namespace")

            self.cal = {}
            for n in self.ranks:
                self.cal[n] = calib[n] = self.calibrate(n)
            plan = self.plan()
            runnable = [p for p in plan if self.status[p[2]]["status"] == "runnable"]
            total = sum(self.reps_for(p[3]) for p in runnable)
            log(f"suite abt: {len(runnable)} cells, {total} runs (reps by ranks "
                f"{ {n: self.reps_for(n) for n in self.ranks} }), MPI {self.mpi}, "
                f"link {self.link['mode']}, buffer {self.buf}, {_size(self.snap_rank)} per rank "
                f"per snapshot, {self.n_snap} snapshots")
            for name, s in self.status.items():
                if s["status"] != "runnable":
                    log(f"  {name}: skipped: {s['reason']}")
            done = 0
            for p in plan:
                key = (p[0], p[2], p[3])
                cells_out[key] = {"exp": p[0], "app": p[1], "config": p[2], "ranks": p[3],
                                  "samples": [], "abt": []}
                if self.status[p[2]]["status"] != "runnable":
                    cells_out[key].update(status="skipped", reason=self.status[p[2]]["reason"])
            for rep in range(max(self.reps_for(p[3]) for p in plan) if plan else 0):
                for exp_name, app, cname, ranks, argfn in plan:
                    cell = cells_out[(exp_name, cname, ranks)]
                    if cell.get("status") in ("skipped", "failed") or rep >= self.reps_for(ranks):
                        continue
                    done += 1
                    args = argfn()
                    cfg = cfgmod.BY_NAME[cname]
                    cell["args"] = args
                    r = self.run(exp_name, app, cfg, ranks, rep, args)
                    tag = f"[{done}/{total}] {exp_name:<13} {cname:<20} n={ranks} rep {rep + 1}"
                    if r["status"] != "ok":
                        log(f"{tag}: FAILED: {r['reason']}")
                        cell.update(status="failed", reason=r["reason"],
                                    stderr=r.get("stderr", ""),
                                    cmd=" ".join(r.get("cmd", [])))
                        continue
                    s = r["sample"]
                    s["rep"] = rep  # samples of one repetition ran minutes apart at most: pairs
                    cell["samples"].append(s)
                    cell["abt"].append(r["abt"])
                    cell["hints"] = r["hints"]
                    if "filecheck" in r:
                        cell["filecheck"] = r["filecheck"]
                    t = s["time"]
                    extra = ""
                    if r["abt"]:
                        extra = (f" fg={sum(x['bytes_staged_fg'] for x in r['abt']) / 2**20:.1f}M"
                                 f" bg={sum(x['bytes_staged_bg'] for x in r['abt']) / 2**20:.1f}M")
                    bw = s.get("write_bw_MBps")
                    log(f"{tag}: write_bw={bw if bw is None else round(bw, 1)} "
                        f"phase={t.get('compute', 0) + t.get('comm', 0):.2f}s "
                        f"total={t['total'] - t.get('verify', 0):.2f}s verify={s['verify']}{extra}")
        finally:
            for tid, mask in saved_affinity.items():  # delayd may outlive the suite
                try:
                    os.sched_setaffinity(tid, mask)
                except OSError:
                    pass
            if server:
                server.stop()
            if wan_ours:
                log("bringing the WAN down (bench/wan/down)")
                runner.wan_down()
            shutil.rmtree(self.workdir, ignore_errors=True)
            if self.ctx.get("memdir"):
                shutil.rmtree(self.ctx["memdir"], ignore_errors=True)

        for cell in cells_out.values():
            cell.setdefault("status", "ok" if cell["samples"] else "failed")
            if cell["status"] == "ok":
                cell["summary"] = summarize(cell)
        doc = {
            "suite": "abt", "kind": "abt", "full": opts.full, "reps": self.reps,
            "reps_by_ranks": {str(n): self.reps_for(n) for n in self.ranks},
            "pinning": getattr(self, "pinning", None),
            "started": datetime.datetime.fromtimestamp(started).isoformat(timespec="seconds"),
            "duration_s": round(time.time() - started, 1),
            "host": {"cores": os.cpu_count(), "kernel": platform.release(),
                     "loadavg_end": os.getloadavg()},
            "mpi": {"name": self.mpi, "why": mpi_why}, "build": build_why,
            "link": self.link, "configs": self.status, "notes": notes,
            "workload": {"app": "jacobi3d", **self.jac, "snapshots": self.n_snap,
                         "snapshot_bytes_per_rank": self.snap_rank, "abt_buffer": self.buf},
            "phase_factor": suite["phase_factor"],
            "calibration": {str(k): v for k, v in calib.items()},
            "experiments": [
                {"name": e["name"], "phase": e["phase"], "configs": e["configs"]}
                for e in suite["experiments"] if not self.only or e["name"] in self.only],
            "decision": [{k: v for k, v in d.items()} for d in suite["decision"]],
            "decision_ranks": suite["decision_ranks"],
            "cells": list(cells_out.values()),
            "selection": {"only": opts.only, "configs": opts.configs,
                          "reps_override": opts.reps},
        }
        import abt_report
        doc["derived"] = abt_report.derive(doc)
        doc["failed_cells"] = sum(1 for c in doc["cells"] if c["status"] == "failed")
        runner.write_results(doc, opts.out, "abt.json")
        if not opts.no_plots:
            for p in abt_report.plot(doc, opts.out):
                log(f"wrote {os.path.relpath(p, runner.REPO)}")
        import report
        log(f"wrote {os.path.relpath(report.write_report(opts.out), runner.REPO)}")
        ok = sum(len(c["samples"]) for c in doc["cells"])
        log(f"bench: {ok} passed, {doc['failed_cells']} failed, "
            f"{sum(1 for c in doc['cells'] if c['status'] == 'skipped')} skipped")
        return 1 if doc["failed_cells"] else 0

    def reps_for(self, ranks):
        return self.reps_by_ranks.get(ranks, self.reps)

    def measure_link(self):
        """Raw TCP rate of the link (iperf3, 1 stream, 5 s), for the record."""
        sys.path.insert(0, os.path.join(runner.BENCH, "wan"))
        try:
            import wanlib
            return wanlib.iperf3(wanlib.load_env(), 1, 5, 1)
        except Exception as e:  # noqa: BLE001 - the reference is optional, the reason is kept
            return {"error": str(e)[:300]}


def summarize(cell):
    """Medians over repetitions of what the report shows (see abt_report.py for meanings)."""
    out = {}
    samples = cell["samples"]

    def t(s, k):
        return s["time"].get(k, 0.0)

    per = {
        "write_bw_MBps": [s.get("write_bw_MBps") for s in samples],
        "write_s": [t(s, "write") for s in samples],
        "phase_s": [t(s, "compute") + t(s, "comm") for s in samples],
        "compute_s": [t(s, "compute") for s in samples],
        "sweeps": [s["params"].get("sweeps") for s in samples],
        # Seconds per sweep: with wall-clock phases the computation's speed shows as work done.
        "phase_per_sweep_s": [(t(s, "compute") + t(s, "comm")) / s["params"]["sweeps"]
                              for s in samples if s["params"].get("sweeps")],
        "compute_per_sweep_s": [t(s, "compute") / s["params"]["sweeps"]
                                for s in samples if s["params"].get("sweeps")],
        "close_s": [t(s, "close") for s in samples],
        "run_s": [t(s, "total") - t(s, "verify") for s in samples],
        "io_s": [sum(t(s, k) for k in ("open", "write", "write_sync", "read", "close"))
                 for s in samples],
    }
    for k, vals in per.items():
        vals = [v for v in vals if v is not None]
        if vals:
            out[k] = {"median": statistics.median(vals), "min": min(vals), "max": max(vals)}
    stats = [st for st in cell["abt"] if st]
    if stats:
        snap_bytes = samples[0]["params"].get("snapshot_bytes")
        snaps = samples[0]["params"].get("snapshots") or 1  # romio_perf: per run

        def agg(key, how=sum):
            return _med([how(x.get(key, 0) for x in st) for st in stats])
        out["abt"] = {
            "fg_bytes_per_snapshot": agg("bytes_staged_fg") / snaps,
            "bg_bytes_per_snapshot": agg("bytes_staged_bg") / snaps,
            "fg_share": agg("bytes_staged_fg") / (snap_bytes * snaps) if snap_bytes else None,
            "bg_share": agg("bytes_staged_bg") / (snap_bytes * snaps) if snap_bytes else None,
            "bytes_sent": agg("bytes_sent"),
            "memory_cap_per_rank": agg("memory_cap", max),
            "memory_peak_per_rank": agg("memory_peak", max),
            "remote_bw_MBps_sum": agg("remote_bw") / 1e6,
            "staging_bw_MBps": agg("staging_bw", max) / 1e6,
            "interval_s": agg("interval_s", max),
            "output_bytes": agg("output_bytes", max),
            "phases": agg("phases", max),
            # ABT's own costs: the application thread's time inside ABT's write calls (its
            # visible part: copying into buffers, foreground staging), max over ranks, and the
            # CPU time of its background threads, summed over ranks.
            "enqueue_s": agg("enqueue_s", max),
            "thread_cpu_s": agg("thread_cpu_s"),
        }
        # Paired per repetition: that rank-summed thread CPU over the ranks' computation time.
        shares = [sum(x.get("thread_cpu_s", 0) for x in st) /
                  (len(st) * (t(s, "compute") + t(s, "comm")))
                  for st, s in zip(cell["abt"], samples) if st and t(s, "compute") + t(s, "comm") > 0]
        if shares:
            out["abt"]["thread_cpu_share"] = {"median": statistics.median(shares),
                                              "min": min(shares), "max": max(shares)}
    return out


def main(opts, suite):
    return AbtRun(opts, suite).main()
