# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""bench/run: runs a benchmark suite, writes bench/results/<suite>.json, PNG plots and REPORT.md.

Flow: build the workloads for the chosen MPI -> decide which configurations can run (missing
prerequisites become "skipped: reason") -> bring up the WAN if a remote configuration can run
(or fall back to loopback and say so) -> start rfsd -> run every experiment x ranks x
configuration `reps` times -> medians, ratios measured in this run, plots, report.
"""
import argparse
import datetime
import json
import os
import platform
import random
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
REPO = os.path.dirname(BENCH)
sys.path.insert(0, HERE)

import configs as cfgmod  # noqa: E402
import pattern  # noqa: E402
import suites as suitemod  # noqa: E402


def log(msg):
    print(msg, flush=True)


def write_results(doc, outdir, name):
    """Writes a suite's JSON document as outdir/name and says so."""
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, name)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    log(f"wrote {os.path.relpath(path, REPO)}")


# ---- environment ------------------------------------------------------------------------

def rfs_build_dir():
    return os.path.abspath(os.environ.get("RFS_BUILD_DIR", os.path.join(REPO, "build")))


def rfs_lib():
    return os.path.join(rfs_build_dir(), "librfs-mpiio.so")


def rfs_daemon():
    return os.path.join(rfs_build_dir(), "rfsd")


def lib_mpi_flavor(path):
    """Which MPI a shared library links against ('mpich', 'openmpi' or None)."""
    try:
        out = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    if "libmpich" in out:
        return "mpich"
    if "libmpi.so" in out:
        return "openmpi"
    return None


def choose_mpi(requested):
    if requested != "auto":
        return requested, f"requested with --mpi {requested}"
    if os.path.exists(rfs_lib()):
        flavor = lib_mpi_flavor(rfs_lib())
        if flavor:
            return flavor, f"the MPI {os.path.basename(rfs_lib())} links against"
    # MPICH is the primary MPI and the only one with ROMIO's testfs here; its busy polling is
    # tamed by bench/apps/idle_yield.c (see mpich_preload). Open MPI if MPICH is not installed.
    if shutil.which("mpicc.mpich") and shutil.which("mpiexec.mpich"):
        return "mpich", "default (no librfs-mpiio.so to match)"
    return "openmpi", "default (no librfs-mpiio.so to match, MPICH not installed)"


def mpich_installed():
    return bool(shutil.which("mpicc.mpich") and shutil.which("mpiexec.mpich"))


def mpich_preload(bindir):
    """The library that makes MPICH's idle ranks sleep (bench/apps/idle_yield.c), or None.

    MPICH 4.0's ch4:ucx device waits by polling without ever yielding (no CVAR changes that:
    MPIR_CVAR_POLLS_BEFORE_YIELD is ch3's), so with more ranks than cores a waiting rank burns
    its time slice while the rank it waits for is descheduled: 4 ranks of jacobi3d took 70 s
    instead of 1.8 s here. RFS_BENCH_MPICH_SPIN=1 runs MPICH unmodified."""
    if os.environ.get("RFS_BENCH_MPICH_SPIN") == "1":
        return None
    path = os.path.join(bindir, "libidle_yield.so")
    return path if os.path.exists(path) else None


def build_apps(mpi):
    log(f"building workloads for {mpi} (make -C bench/apps MPI={mpi})")
    r = subprocess.run(["make", "-s", "-C", os.path.join(BENCH, "apps"), f"MPI={mpi}"],
                       capture_output=True, text=True, timeout=600)
    if r.returncode:
        sys.exit(f"bench/run: building the workloads failed:\n{r.stdout}{r.stderr}")
    return os.path.join(BENCH, ".build", mpi)


class Prereqs:
    """Answers 'can configuration X run here, and if not, why' once per suite."""

    def __init__(self, mpi, extra_mpis=()):
        self.mpi = mpi
        # MPIs a configuration with its own `mpi` may run with although the run uses another
        # (bench/run builds the workloads for them too); the ABT suite passes none.
        self.extra_mpis = tuple(extra_mpis)
        self._lib_bytes = None
        self._symbols = None

    def lib_bytes(self):
        if self._lib_bytes is None:
            with open(rfs_lib(), "rb") as f:
                self._lib_bytes = f.read()
        return self._lib_bytes

    def symbols(self):
        if self._symbols is None:
            r = subprocess.run(["nm", "-D", "--defined-only", rfs_lib()], capture_output=True,
                               text=True, timeout=60)
            self._symbols = {line.split()[-1] for line in r.stdout.splitlines() if line.strip()}
        return self._symbols

    def config_reason(self, cfg):
        """None if the configuration's environment is there, else why not (app-independent)."""
        for need in cfg.needs:
            kind, _, arg = need.partition(":")
            if kind == "mpi" and self.mpi != arg and not (arg in self.extra_mpis and cfg.mpi == arg):
                return f"needs {arg} (this run uses {self.mpi}; ROMIO testfs is MPICH-only here)"
            if kind == "rfs":
                missing = [p for p in (rfs_lib(), rfs_daemon()) if not os.path.exists(p)]
                if missing:
                    return "not built yet: " + ", ".join(missing)
                flavor = lib_mpi_flavor(rfs_lib())
                if flavor and flavor != self.mpi:
                    return f"librfs-mpiio.so links {flavor}, this run uses {self.mpi}"
            if kind == "hint" and os.path.exists(rfs_lib()) and arg.encode() not in self.lib_bytes():
                return f"placeholder: librfs-mpiio.so does not know the hint {arg} yet"
            if kind == "symbol" and os.path.exists(rfs_lib()) and arg not in self.symbols():
                return f"placeholder: librfs-mpiio.so does not define {arg} yet"
        return None

    @staticmethod
    def app_reason(cfg, app):
        for need in cfg.needs:
            kind, _, arg = need.partition(":")
            if kind == "app" and not cfgmod.APPS[app].get(arg):
                return f"{app} has no --{arg} mode"
        return None


# ---- WAN and server ---------------------------------------------------------------------

def wan_env():
    """Variables of a running WAN (bench/wan/env), or None."""
    script = os.path.join(BENCH, "wan", "env")
    if not os.access(script, os.X_OK):
        return None
    r = subprocess.run([script], capture_output=True, text=True, timeout=30)
    if r.returncode:
        return None
    env = {}
    for line in r.stdout.splitlines():
        line = line.strip()
        if line.startswith("export "):
            key, _, val = line[7:].partition("=")
            env[key] = val.strip("'\"")
    return env if env.get("RFS_WAN_SERVER_ADDR") else None


def wan_up(spec):
    """Brings the WAN up. Returns (env, brought_up_by_us, note)."""
    env = wan_env()
    if env:
        return env, False, "WAN already up: used as it is"
    up = os.path.join(BENCH, "wan", "up")
    if not os.access(up, os.X_OK):
        return None, False, "bench/wan/up not present"
    args = [up, "--rate-mbit", str(spec["rate_mbit"]), "--delay-ms", str(spec["delay_ms"])]
    log("bringing the WAN up: " + " ".join(args[1:]))
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if r.returncode:
        return None, False, f"bench/wan/up failed (rc {r.returncode}): {(r.stderr or r.stdout).strip()[-300:]}"
    env = wan_env()
    if not env:
        return None, True, "bench/wan/up succeeded but bench/wan/env reports no WAN"
    return env, True, "brought up by bench/run"


def wan_down():
    down = os.path.join(BENCH, "wan", "down")
    if os.access(down, os.X_OK):
        subprocess.run([down], capture_output=True, text=True, timeout=120)


def run_anchors(link, size_mib, extra_args=()):
    """Runs bench/anchors/run-all (the WAN helper's raw-link and user-tool references)."""
    script = os.path.join(BENCH, "anchors", "run-all")
    if not os.access(script, os.X_OK):
        return {"skipped": "bench/anchors/run-all not present"}
    if link.get("mode") != "wan":
        return {"skipped": "anchors measure the emulated WAN, which is not in use for this run"}
    argv = [script, "--size-mib", str(size_mib)] + list(extra_args)
    log("anchors: bench/anchors/run-all " + " ".join(argv[1:]))
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        return {"error": "bench/anchors/run-all timed out after 900 s"}
    try:
        return json.loads(r.stdout)
    except ValueError:
        for line in reversed(r.stdout.splitlines()):
            if line.strip().startswith("{"):
                try:
                    return json.loads(line)
                except ValueError:
                    pass
    return {"error": f"bench/anchors/run-all: rc {r.returncode}, no JSON on stdout",
            "stderr": r.stderr.strip()[-400:]}


class RfsServer:
    """An rfsd with a fresh export root, in the server namespace when the WAN is up."""

    def __init__(self, ns_prefix, listen_host, workdir):
        self.root = os.path.join(workdir, "export")
        os.makedirs(self.root)
        self.token = secrets.token_hex(16)
        tf = os.path.join(workdir, "token")
        with open(tf, "w") as f:
            f.write(self.token)
        os.chmod(tf, 0o600)
        argv = ns_prefix + [rfs_daemon(), "--root", self.root, "--listen", f"{listen_host}:0",
                            "--token-file", tf]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("rfsd listening on "):
            self.stop()
            raise RuntimeError(f"rfsd did not start: {line!r}")
        self.host, port = line.split()[-1].rsplit(":", 1)
        self.port = int(port)

    def name(self, rel):
        return f"rfs:{self.host}:{self.port}:/{rel}"

    def local_path(self, rel):
        return os.path.join(self.root, rel)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ---- one run ----------------------------------------------------------------------------

def mpiexec_argv(mpi, ranks, env, in_namespace):
    if mpi == "mpich":
        argv = ["mpiexec.mpich", "-n", str(ranks)]
        if in_namespace:
            env = dict(env, UCX_TLS="self,sm")  # MPICH/UCX cannot init in a netns otherwise
        if "UCX_TLS" not in env:
            # UCX's default transport probe also opens TCP and IB; the ranks share this node.
            env = dict(env, UCX_TLS="self,sm")
        for k, v in env.items():
            argv += ["-genv", k, v]
        return argv
    argv = ["mpiexec.openmpi", "--oversubscribe", "--allow-run-as-root", "-n", str(ranks)]
    for k, v in env.items():
        argv += ["-x", f"{k}={v}"]
    return argv


def run_once(ctx, exp, cfg, ranks, rep, args):
    app = exp["app"]
    rel = f"{exp['name']}-{cfg.name.replace('+', '_')}-{ranks}.dat"
    if cfg.target == "rfs":
        target = ctx["server"].name(rel)
        on_disk = ctx["server"].local_path(rel)
    elif cfg.target == "memfs":
        if not ctx.get("memdir"):  # tmpfs: a file system without a disk (removed by main)
            ctx["memdir"] = tempfile.mkdtemp(prefix="rfs-bench-", dir="/dev/shm")
        target = on_disk = os.path.join(ctx["memdir"], rel)
    else:
        on_disk = os.path.join(ctx["workdir"], "client", rel)
        target = ("testfs:" + on_disk) if cfg.target == "testfs" else on_disk
    seed = random.randint(1, 4095)
    json_path = os.path.join(ctx["workdir"], "last.json")
    if os.path.exists(json_path):
        os.unlink(json_path)
    # A configuration tied to another MPI (TESTFS: MPICH) runs with it when the run built the
    # workloads for it (ctx["bindirs"]); otherwise the run's MPI, as the prerequisites said.
    mpi, bindir = ctx["mpi"], ctx["bindir"]
    if cfg.mpi and cfg.mpi != mpi and cfg.mpi in ctx.get("bindirs", {}):
        mpi, bindir = cfg.mpi, ctx["bindirs"][cfg.mpi]
    env = dict(cfg.env)
    preload = []
    if mpi == "mpich" and mpich_preload(bindir):
        preload.append(mpich_preload(bindir))
    if cfg.target == "rfs":
        preload.append(rfs_lib())
        env["RFS_TOKEN"] = ctx["server"].token
        if cfg.hints:
            env["RFS_HINTS"] = cfg.hints
    if preload:
        env["LD_PRELOAD"] = ":".join(preload)
    verify = cfg.verify and (cfg.target != "rfs" or rep == 0)  # remote read-back costs link time
    argv = (ctx["ns_prefix"] + mpiexec_argv(mpi, ranks, env, bool(ctx["ns_prefix"])) +
            [os.path.join(bindir, app), target] + list(args) + list(cfg.app_args) +
            ["--seed", str(seed), "--json", json_path] + ([] if verify else ["--no-verify"]))
    t_sync = time.monotonic()
    subprocess.run(["sync"], timeout=120)  # earlier runs' writeback must not land in this one
    t_sync = time.monotonic() - t_sync
    load = os.getloadavg()[0]  # the machine is shared: how busy it was when this run started
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=ctx["timeout"])
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the group of the mpiexec we started
        out, err = proc.communicate()
        return {"status": "failed", "reason": f"timed out after {ctx['timeout']} s",
                "stderr": err[-600:], "cmd": argv}
    wall = time.monotonic() - t0
    sample = None
    if os.path.exists(json_path):
        with open(json_path) as f:
            try:
                sample = json.load(f)
            except ValueError:
                sample = None
    if proc.returncode or sample is None:
        return {"status": "failed", "reason": f"exit code {proc.returncode}" +
                ("" if sample else ", no JSON report"), "stderr": err[-600:], "cmd": argv,
                "sample": sample}
    sample["wall_s"] = round(wall, 4)
    sample["sync_s"] = round(t_sync, 3)
    sample["loadavg_1m"] = round(load, 2)
    sample["mpi"] = mpi
    sample["mpich_idle_yield"] = bool(mpi == "mpich" and mpich_preload(bindir))
    res = {"status": "ok", "sample": sample}
    # Check the bytes on the disk they landed on, independently of MPI, once per cell.
    if rep == 0 and cfg.target != "testfs" and not sample.get("peak"):
        files = pattern.files_for(app, on_disk, sample["params"], ranks)
        if files:
            bad = 0
            for fpath in files:
                try:
                    bad += pattern.check_file(fpath, seed, pattern.expected_bytes(
                        app, sample["params"], ranks))[1]
                except OSError as e:
                    bad += 1
                    res["filecheck_error"] = str(e)
            res["filecheck"] = "ok" if bad == 0 else f"failed: {bad} bad words"
    for fpath in pattern.files_for(app, on_disk, sample["params"], ranks) + [on_disk]:
        if os.path.exists(fpath):
            os.unlink(fpath)
    if sample.get("verify") == "failed":
        res["status"] = "failed"
        res["reason"] = f"verification failed: {sample.get('verify_errors')} bad words"
    if res.get("filecheck", "ok") != "ok":
        res["status"] = "failed"
        res["reason"] = "file check failed: " + res["filecheck"]
    return res


# ---- statistics -------------------------------------------------------------------------

def metric_of(sample, metric):
    if metric == "total":
        return sample["time"].get("total")
    if metric == "compute":
        return sample["time"].get("compute")
    return sample.get(metric)


def summarize(samples, exp_metric):
    keys = ["write_bw_MBps", "read_bw_MBps", "io_bw_MBps", "total", "compute"]
    med, lo, hi = {}, {}, {}
    for k in keys:
        vals = [metric_of(s, k) for s in samples]
        vals = [v for v in vals if v is not None]
        if vals:
            med[k] = statistics.median(vals)
            lo[k] = min(vals)
            hi[k] = max(vals)
    out = {"median": med, "min": lo, "max": hi}
    if exp_metric == "cases" and samples and "cases" in samples[0]:
        cases = {}
        for c in samples[0]["cases"]:
            name = c["name"]
            per = [next((x for x in s["cases"] if x["name"] == name), None) for s in samples]
            per = [p for p in per if p]
            entry = {"kind": c["kind"], "size": c["size"], "regions": c["regions"], "bytes": c["bytes"]}
            for k in ("write_bw_MBps", "read_bw_MBps"):
                vals = [p[k] for p in per if p.get(k) is not None]
                if vals:
                    entry[k] = statistics.median(vals)
            cases[name] = entry
        out["cases"] = cases
    return out


def primary(exp):
    return "io_bw_MBps" if exp["metric"] == "cases" else exp["metric"]


def compute_ratios(exp, results):
    by = {(r["config"], r["ranks"]): r for r in results if r["status"] == "ok"}
    ratios = []
    for num, den, which in suitemod.RATIOS:
        metric = primary(exp) if which == "primary" else which
        for ranks in sorted({r["ranks"] for r in results}):
            a, b = by.get((num, ranks)), by.get((den, ranks))
            if not a or not b:
                continue
            va, vb = a["median"].get(metric), b["median"].get(metric)
            if va is None or not vb:
                continue
            q = {"num": num, "den": den, "ranks": ranks, "metric": metric, "value": va / vb}
            if a.get("mpi") != b.get("mpi"):
                q["mpis"] = [a.get("mpi"), b.get("mpi")]  # different MPI-IO implementations
            ratios.append(q)
    return ratios


# ---- main -------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench/run", description=__doc__.splitlines()[0])
    ap.add_argument("suite", choices=sorted(suitemod.SUITES))
    ap.add_argument("--full", action="store_true", help="paper-like sizes and more repetitions")
    ap.add_argument("--mpi", choices=["auto", "mpich", "openmpi"], default="auto")
    ap.add_argument("--reps", type=int, help="override the suite's repetitions")
    ap.add_argument("--only", help="comma-separated experiment names to run")
    ap.add_argument("--configs", help="comma-separated configuration names to consider")
    ap.add_argument("--no-wan", action="store_true", help="never bring the WAN up: loopback")
    ap.add_argument("--out", default=os.path.join(BENCH, "results"), help="results directory")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--no-anchors", action="store_true",
                    help="skip bench/anchors (development runs; the report says so)")
    opts = ap.parse_args(argv)

    suite = suitemod.SUITES[opts.suite]
    if suite.get("kind") == "abt":  # its own flow: calibration, interleaved reps, ABT stats
        import abt_suite
        return abt_suite.main(opts, suite)
    reps = opts.reps or (suite["full_reps"] if opts.full else suite["reps"])
    started = time.time()
    timing = {}  # where the wall time went (seconds), stored in the JSON and the report
    load_start = round(os.getloadavg()[0], 2)
    mpi, mpi_why = choose_mpi(opts.mpi)
    bindir = build_apps(mpi)
    bindirs = {mpi: bindir}
    experiments = [e for e in suite["experiments"]
                   if not opts.only or e["name"] in opts.only.split(",")]
    wanted = set(opts.configs.split(",")) if opts.configs else None
    # Configurations tied to another MPI (TESTFS needs MPICH's ROMIO) run with that MPI on
    # their own when it is installed, so an Open MPI run still measures them.
    extra = sorted({cfgmod.BY_NAME[n].mpi for e in experiments for n in e["configs"]
                    if cfgmod.BY_NAME[n].mpi and cfgmod.BY_NAME[n].mpi != mpi
                    and (wanted is None or n in wanted)})
    extra = [m for m in extra if m != "mpich" or mpich_installed()]
    for m in extra:
        bindirs[m] = build_apps(m)
    pre = Prereqs(mpi, extra)
    timing["build_s"] = round(time.time() - started, 1)

    cfg_status = {}
    for e in experiments:
        for name in e["configs"]:
            if name in cfg_status:
                continue
            cfg = cfgmod.BY_NAME[name]
            reason = pre.config_reason(cfg)
            if wanted is not None and name not in wanted:
                reason = "not selected (--configs)"
            cfg_status[name] = {"desc": cfg.desc, "status": "skipped" if reason else "runnable",
                                "reason": reason, "hints": cfg.hints, "app_args": list(cfg.app_args),
                                "target": cfg.target}

    workdir = tempfile.mkdtemp(prefix="rfs-bench-", dir=os.environ.get("RFS_BENCH_TMP", "/var/tmp"))
    os.makedirs(os.path.join(workdir, "client"))
    notes = []
    link = {"mode": "none", "reason": "no remote configuration is runnable"}
    wan_ours = False
    server = None
    ns_prefix = []
    ctx = {}
    needs_remote = any(s["status"] == "runnable" and s["target"] == "rfs" for s in cfg_status.values())
    exp_out = []
    anchors = {}
    t_setup = time.time()
    try:
        if needs_remote:
            env = None
            if suite.get("wan") and not opts.no_wan:
                env, wan_ours, why = wan_up(suite["wan"])
            else:
                why = "--no-wan given" if opts.no_wan else "the suite asks for no WAN"
            if env:
                link = {"mode": "wan", "reason": why,
                        "rate_mbit": float(env.get("RFS_WAN_RATE_MBIT", "nan")),
                        "rtt_ms": float(env.get("RFS_WAN_RTT_MS", "nan")),
                        "server_addr": env["RFS_WAN_SERVER_ADDR"], "wan_env": env}
                ns_prefix = ["ip", "netns", "exec", env["RFS_WAN_CLIENT_NS"]]
                srv_prefix = ["ip", "netns", "exec", env["RFS_WAN_SERVER_NS"]]
                listen = env["RFS_WAN_SERVER_ADDR"]
            else:
                link = {"mode": "loopback", "reason": f"WAN unavailable ({why}): rfsd on 127.0.0.1, "
                        "so remote numbers measure loopback, not a WAN"}
                notes.append(link["reason"])
                srv_prefix, listen = [], "127.0.0.1"
            try:
                server = RfsServer(srv_prefix, listen, workdir)
                log(f"rfsd serving {server.root} at {server.host}:{server.port} ({link['mode']})")
            except (RuntimeError, OSError) as e:
                for s in cfg_status.values():
                    if s["target"] == "rfs" and s["status"] == "runnable":
                        s["status"], s["reason"] = "skipped", f"rfsd would not start: {e}"
        elif suite.get("wan"):
            notes.append("no remote configuration could run, so the WAN was not brought up; "
                         "local numbers were measured in the root namespace")
        if ns_prefix:
            notes.append("every configuration, local ones included, ran inside the client "
                         "namespace so process placement is the same")

        timing["link_and_server_s"] = round(time.time() - t_setup, 1)
        t0 = time.time()
        if opts.no_anchors:
            anchors = {"skipped": "--no-anchors given"}
        else:
            anchors = run_anchors(link, suite.get("anchor_size_mib", 32),
                                  suite.get("full_anchor_args" if opts.full else "anchor_args", []))
        timing["anchors_s"] = round(time.time() - t0, 1)
        timeout = suite.get("full_timeout", suite["timeout"]) if opts.full else suite["timeout"]
        ctx.update({"mpi": mpi, "bindir": bindir, "bindirs": bindirs, "workdir": workdir,
                    "server": server, "ns_prefix": ns_prefix, "timeout": timeout})

        plan = []
        for e in experiments:
            ranks_list = e["full_ranks"] if opts.full else e["ranks"]
            for ranks in ranks_list:
                for name in e["configs"]:
                    plan.append((e, name, ranks))
        runnable = [p for p in plan if cfg_status[p[1]]["status"] == "runnable"
                    and not Prereqs.app_reason(cfgmod.BY_NAME[p[1]], p[0]["app"])]
        total_runs = len(runnable) * reps
        log(f"suite {opts.suite}{' --full' if opts.full else ''}: {len(experiments)} experiments, "
            f"{total_runs} runs ({reps} repetitions), MPI {mpi}, link {link['mode']}")
        for name, s in cfg_status.items():
            if s["status"] != "runnable":
                log(f"  {name}: skipped: {s['reason']}")
            elif cfgmod.BY_NAME[name].mpi and cfgmod.BY_NAME[name].mpi != mpi:
                log(f"  {name}: runs with {cfgmod.BY_NAME[name].mpi} (needs it; the rest uses {mpi})")

        done = 0
        timing["experiments_s"] = {}
        for e in experiments:
            t_exp = time.time()
            args = e["full"] if opts.full else e["args"]
            results = []
            for ranks in (e["full_ranks"] if opts.full else e["ranks"]):
                for name in e["configs"]:
                    cfg = cfgmod.BY_NAME[name]
                    st = cfg_status[name]
                    why = st["reason"] if st["status"] != "runnable" else Prereqs.app_reason(cfg, e["app"])
                    if why:
                        results.append({"config": name, "ranks": ranks, "status": "skipped",
                                        "reason": why})
                        continue
                    samples, failure, filecheck = [], None, None
                    for rep in range(reps):
                        done += 1
                        r = run_once(ctx, e, cfg, ranks, rep, args)
                        tag = f"[{done}/{total_runs}] {e['name']:<10} {name:<12} n={ranks} rep {rep + 1}/{reps}"
                        if r["status"] != "ok":
                            log(f"{tag}: FAILED: {r['reason']}")
                            failure = r
                            done += reps - rep - 1
                            break
                        s = r["sample"]
                        if "filecheck" in r:
                            filecheck = r["filecheck"]
                        samples.append(s)
                        m = metric_of(s, primary(e))
                        mtxt = f"{primary(e)}={m:.4g}" if m is not None else f"{primary(e)}=n/a"
                        if primary(e) != "total":
                            mtxt += f" total={s['time']['total']:.3f}s"
                        log(f"{tag}: {mtxt} verify={s['verify']}"
                            + (f" file={r['filecheck']}" if "filecheck" in r else ""))
                    entry = {"config": name, "ranks": ranks,
                             "status": "failed" if failure else "ok", "samples": samples,
                             "mpi": (samples[0] if samples else failure.get("sample") or {}).get(
                                 "mpi", cfg.mpi if cfg.mpi in bindirs else mpi)}
                    if failure:
                        entry["reason"] = failure["reason"]
                        entry["stderr"] = failure.get("stderr", "")
                        entry["cmd"] = " ".join(failure.get("cmd", []))
                    if filecheck:
                        entry["filecheck"] = filecheck
                    if samples and not failure:
                        entry.update(summarize(samples, e["metric"]))
                    results.append(entry)
            exp_out.append({"name": e["name"], "app": e["app"], "args": args, "metric": e["metric"],
                            "primary": primary(e), "results": results,
                            "ratios": compute_ratios(e, results)})
            timing["experiments_s"][e["name"]] = round(time.time() - t_exp, 1)
    finally:
        if server:
            server.stop()
        if wan_ours:
            log("bringing the WAN down (bench/wan/down)")
            wan_down()
        shutil.rmtree(workdir, ignore_errors=True)
        if ctx.get("memdir"):
            shutil.rmtree(ctx["memdir"], ignore_errors=True)

    failed = sum(1 for e in exp_out for r in e["results"] if r["status"] == "failed")
    doc = {
        "suite": opts.suite, "full": opts.full, "reps": reps,
        "started": datetime.datetime.fromtimestamp(started).isoformat(timespec="seconds"),
        "duration_s": round(time.time() - started, 1),
        "host": {"cores": os.cpu_count(), "kernel": platform.release(),
                 "python": platform.python_version(),
                 "loadavg_1m_start": load_start, "loadavg_1m_end": round(os.getloadavg()[0], 2)},
        "mpi": {"name": mpi, "why": mpi_why, "also": extra,
                "mpich_idle_yield": bool(mpich_preload(bindirs["mpich"]))
                if "mpich" in bindirs else None},
        "timing": timing,
        "rfs_build_dir": rfs_build_dir(),
        "link": {k: v for k, v in link.items() if k != "wan_env"},
        "wan_settings": link.get("wan_env"),
        "anchors": anchors, "configs": cfg_status, "experiments": exp_out,
        "failed_cells": failed, "notes": notes,
        "selection": {"only": opts.only, "configs": opts.configs, "reps_override": opts.reps,
                      "no_anchors": opts.no_anchors or None},
    }
    write_results(doc, opts.out, f"{opts.suite}.json")
    if not opts.no_plots:
        import plots
        for p in plots.plot_suite(doc, opts.out):
            log(f"wrote {os.path.relpath(p, REPO)}")
    import report
    rpath = report.write_report(opts.out)
    log(f"wrote {os.path.relpath(rpath, REPO)}")
    runs_ok = sum(len(r.get("samples", [])) for e in exp_out for r in e["results"]
                  if r["status"] == "ok")
    skipped = sum(1 for e in exp_out for r in e["results"] if r["status"] == "skipped")
    if failed:
        log(f"{failed} cell(s) FAILED: see {os.path.relpath(out_json, REPO)}")
    # A closing line CI runners recognise: runs that passed, cells that failed.
    log(f"bench: {runs_ok} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0
