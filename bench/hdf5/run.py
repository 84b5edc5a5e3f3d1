#!/usr/bin/python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""HDF5 checkpoint benchmark over the emulated WAN (bench/wan): h5py's parallel HDF5 writing
many datasets per file from 4 ranks (bench/hdf5/h5ckpt.py), in the same run through

  LOCAL     a file on the client's local disk (what the job sees without any remote storage)
  STAGE     LOCAL, then each checkpoint file copied to an XRootD server with xrdcp (the
            stage-by-copy workflow: the data is remote only once the copy ends)
  RFS       rfs: names through librfs-mpiio.so, default hints (the write window is on: small
            writes return once sent, failures come at the next call, sync or close)
  RFS-NOWINDOW  the same with rfs_write_window=0: every write waits for the server's reply
  RFS+ABT   active buffering with deferred close (rfs_abt=enable;rfs_defer_close=enable): a
            checkpoint's close returns once its writes are queued; they reach the server during
            the next computation phase (and before MPI_Finalize returns)
  SSHFS     the files in an sshfs mount of the server

Each configuration runs --reps times, interleaved; every file that lands is checked value by
value with serial h5py (on the server's disk for RFS and SSHFS). Times are medians:
io_visible (what the application waits for inside HDF5 file create .. close) and, for STAGE,
io_visible + the copies; wall_s (mpiexec start to exit) includes what deferred designs move
past the last close. Goals (issue #10): RFS io_visible <= 1.5 x STAGE, RFS+ABT io_visible
<= 1.2 x LOCAL.

    bench/hdf5/run.py [--rate-mbit 100] [--delay-ms 25] [--reps 3] [--datasets 200]
        [--elems 8192] [--ckpts 3] [--work 40] [--tcp-buf-mb 4] [--cc cubic]
        [--build-dir build-ompi] [--out FILE]

The committed runs: `--ckpts 2 --datasets 100 --work 1000` (hdf5_ckpt.json) and
`--rate-mbit 1000 --ckpts 2 --datasets 100 --elems 131072 --work 400 --out
bench/results/hdf5_ckpt_large.json`.

Brings the WAN up (and down again) when none is up. Needs Open MPI's librfs-mpiio.so (h5py on
Debian links Open MPI), `scripts/deps bench` (xrootd, sshfs). Prints JSON and writes it to
bench/results/hdf5_ckpt.json."""
import argparse
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "bench" / "anchors"))
sys.path.insert(0, str(HERE))
import anchorlib as al  # noqa: E402
import h5ckpt  # noqa: E402

wanlib = al.wanlib
PY = "/usr/bin/python3"
PORT = 7070
CONFIGS = ["LOCAL", "RFS", "RFS-NOWINDOW", "RFS+ABT", "SSHFS"]


def log(msg):
    print(f"hdf5 bench: {msg}", file=sys.stderr, flush=True)


class Bench:
    def __init__(self, a):
        self.a = a
        self.build = Path(a.build_dir).resolve()
        self.lib = self.build / "librfs-mpiio.so"
        if not self.lib.exists():
            raise wanlib.WanError(f"{self.lib} not built (cmake -DMPI_C_COMPILER=mpicc.openmpi)")
        self.work = Path(al.workdir("hdf5"))
        self.export = self.work / "export"      # rfsd's root
        self.xexport = self.work / "xrootd"     # xrootd's and sshd's directory
        self.local = self.work / "local"
        for d in (self.export, self.xexport, self.local):
            d.mkdir()
            d.chmod(0o777)
        self.token = secrets.token_hex(16)
        self.rfsd = None
        self.brought_up = False

    def up(self):
        try:
            self.env = wanlib.load_env()
        except wanlib.WanError:
            log(f"bringing the WAN up: {self.a.rate_mbit} Mbit/s, {self.a.delay_ms} ms one way")
            subprocess.run([str(REPO / "bench/wan/up"), "--rate-mbit", str(self.a.rate_mbit),
                            "--delay-ms", str(self.a.delay_ms), "--tcp-buf-mb",
                            str(self.a.tcp_buf_mb), "--cc", self.a.cc], check=True, timeout=120)
            self.brought_up = True
            self.env = wanlib.load_env()
        self.cli, self.srv = self.env["RFS_WAN_CLIENT_NS"], self.env["RFS_WAN_SERVER_NS"]
        self.addr = self.env["RFS_WAN_SERVER_ADDR"]
        tf = self.work / "token"
        tf.write_text(self.token)
        tf.chmod(0o600)
        self.rfsd = wanlib.start(self.srv, [str(self.build / "rfsd"), "--root", str(self.export),
                                            "--listen", f"{self.addr}:{PORT}", "--token-file",
                                            str(tf)], stdout=subprocess.PIPE, text=True)
        wanlib.wait_line(self.rfsd, "rfsd listening", 20)
        self.xrd = al.ctl("xrootd-ctl", "start", str(self.xexport))
        al.ctl("sshd-ctl", "start")

    def down(self):
        wanlib.stop(self.rfsd)
        for script in ("xrootd-ctl", "sshd-ctl"):
            subprocess.run([str(REPO / "bench/anchors" / script), "stop"], timeout=60,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if self.brought_up:
            subprocess.run([str(REPO / "bench/wan/down")], timeout=60)
        al.remove(str(self.work))

    def workload_args(self, prefix, out):
        a = self.a
        return [PY, str(HERE / "h5ckpt.py"), prefix, "--ckpts", str(a.ckpts), "--datasets",
                str(a.datasets), "--elems", str(a.elems), "--work", str(a.work), "--json", out]

    def mpiexec(self, env):
        argv = ["mpiexec.openmpi", "--oversubscribe", "--allow-run-as-root", "-n",
                str(self.a.ranks)]
        for k, v in env.items():
            argv += ["-x", f"{k}={v}"]
        return argv

    def run_config(self, cfg, rep):
        out = str(self.work / f"result-{cfg}-{rep}.json")
        tag = f"{cfg.replace('+', '_')}-{rep}-"
        env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
        limit = 900
        if cfg == "LOCAL":
            prefix = on_disk = str(self.local / tag)
            argv = self.mpiexec(env) + self.workload_args(prefix, out)
        elif cfg.startswith("RFS"):
            env.update(LD_PRELOAD=str(self.lib), RFS_TOKEN=self.token)
            if cfg == "RFS+ABT":
                env["RFS_HINTS"] = "rfs_abt=enable;rfs_defer_close=enable"
            elif cfg == "RFS-NOWINDOW":
                env["RFS_HINTS"] = "rfs_write_window=0"
            prefix = f"rfs:{self.addr}:{PORT}:/{tag}"
            on_disk = str(self.export / tag)
            argv = self.mpiexec(env) + self.workload_args(prefix, out)
        else:  # SSHFS: the mount exists only inside sshfs-run's command
            on_disk = str(self.xexport / tag)
            inner = " ".join(self.mpiexec(env) + self.workload_args(
                f"$RFS_SSHFS_MOUNT/{tag}", out))
            argv = [str(REPO / "bench/anchors/sshfs-run"), str(self.xexport), "bash", "-c", inner]
        al.sync()
        t0 = time.monotonic()
        if cfg == "SSHFS":
            p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=limit)
        else:
            p = wanlib.run(self.cli, argv, timeout=limit, check=False)
        wall = time.monotonic() - t0
        if p.returncode != 0:
            raise wanlib.WanError(f"{cfg} run {rep} failed ({p.returncode}): "
                                  f"{(p.stdout + p.stderr)[-1500:]}")
        res = json.loads(Path(out).read_text())
        res["wall_s"] = round(wall, 3)
        n_total = self.a.elems * self.a.ranks
        bad = h5ckpt.verify(on_disk, self.a.ckpts, self.a.datasets, n_total)
        if bad:
            raise wanlib.WanError(f"{cfg} run {rep}: wrong content: {bad[:5]}")
        if cfg == "LOCAL":
            res["copy_s"] = self.stage_copy(on_disk, tag)
        for k in range(self.a.ckpts):
            Path(f"{on_disk}{k}.h5").unlink()
        return res

    def stage_copy(self, prefix, tag):
        """xrdcp every checkpoint file to the XRootD server; the seconds it took in all."""
        url = self.xrd["XRD_URL"].rstrip("/")
        t = 0.0
        for k in range(self.a.ckpts):
            src = f"{prefix}{k}.h5"
            dst = f"{url}/{self.xexport}/stage-{tag}{k}.h5"
            secs, _ = al.timed(self.cli, ["xrdcp", "--nopbar", "-f", src, dst], timeout=600)
            t += secs
            al.check_same(src, str(self.xexport / f"stage-{tag}{k}.h5"), "xrdcp")
            (self.xexport / f"stage-{tag}{k}.h5").unlink()
        return round(t, 3)


def med(xs):
    return round(statistics.median(xs), 4)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rate-mbit", type=float, default=100)
    ap.add_argument("--delay-ms", type=float, default=25)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tcp-buf-mb", type=int, default=4,
                    help="socket buffer maxima of both hosts (4: a default Linux host)")
    ap.add_argument("--cc", default="cubic", help="TCP congestion control of both hosts")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--ckpts", type=int, default=3)
    ap.add_argument("--datasets", type=int, default=200)
    ap.add_argument("--elems", type=int, default=8192)
    ap.add_argument("--work", type=int, default=40)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--build-dir", default=str(REPO / "build-ompi"))
    ap.add_argument("--out", default=str(REPO / "bench/results/hdf5_ckpt.json"))
    a = ap.parse_args()
    configs = [c for c in a.configs.split(",") if c]
    b = Bench(a)
    samples = {c: [] for c in configs}
    t_start = time.monotonic()
    load0 = os.getloadavg()[0]
    try:
        b.up()
        for rep in range(a.reps):
            for cfg in configs:
                log(f"rep {rep + 1}/{a.reps} {cfg} ...")
                r = b.run_config(cfg, rep)
                samples[cfg].append(r)
                log(f"rep {rep + 1}/{a.reps} {cfg}: io_visible {r['io_visible_s']} s, total "
                    f"{r['total_s']} s" + (f", xrdcp {r['copy_s']} s" if "copy_s" in r else ""))
    finally:
        b.down()
    summary = {}
    for cfg, ss in samples.items():
        if ss:
            summary[cfg] = {k: med([s[k] for s in ss]) for k in ("io_visible_s", "total_s", "wall_s")}
            summary[cfg]["samples"] = ss
    if "LOCAL" in summary:
        loc = samples["LOCAL"]
        summary["STAGE"] = {"io_visible_s": med([s["io_visible_s"] + s["copy_s"] for s in loc]),
                            "copy_s": med([s["copy_s"] for s in loc])}
    ratios, goals = {}, {}

    def ratio(n, d, key="io_visible_s"):
        if n in summary and d in summary:
            ratios[f"{n}/{d}"] = round(summary[n][key] / summary[d][key], 3)
            return ratios[f"{n}/{d}"]
        return None
    r = ratio("RFS", "STAGE")
    if r is not None:
        goals["RFS io_visible <= 1.5 x STAGE (local write + xrdcp)"] = {"ratio": r, "met": r <= 1.5}
    ratio("RFS-NOWINDOW", "STAGE")
    r = ratio("RFS+ABT", "LOCAL")
    if r is not None:
        goals["RFS+ABT io_visible <= 1.2 x LOCAL"] = {"ratio": r, "met": r <= 1.2}
    ratio("RFS", "LOCAL")
    ratio("SSHFS", "LOCAL")
    ratio("RFS", "SSHFS")
    ratio("RFS+ABT", "RFS")
    ratio("RFS-NOWINDOW", "RFS")
    nbytes = a.ckpts * a.datasets * a.elems * a.ranks * 8
    doc = {"benchmark": "hdf5_ckpt", "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
           "link": {"rate_mbit": float(b.env["RFS_WAN_RATE_MBIT"]),
                    "rtt_ms": float(b.env["RFS_WAN_RTT_MS"]),
                    "tcp_cc": b.env.get("RFS_WAN_TCP_CC"),
                    "tcp_buf_mb": b.env.get("RFS_WAN_TCP_BUF_MB")},
           "workload": {"ranks": a.ranks, "ckpts": a.ckpts, "datasets_per_file": a.datasets,
                        "bytes_per_dataset": a.elems * a.ranks * 8, "bytes_total": nbytes,
                        "work_units": a.work, "mpi": "openmpi (h5py)"},
           "reps": a.reps, "seconds": round(time.monotonic() - t_start, 1),
           "loadavg_1m": [load0, os.getloadavg()[0]],
           "link_time_s": round(nbytes * 8 / (float(b.env["RFS_WAN_RATE_MBIT"]) * 1e6), 3),
           "medians": {c: {k: v for k, v in s.items() if k != "samples"}
                       for c, s in summary.items()},
           "ratios": ratios, "goals": goals, "samples": {c: summary[c].get("samples")
                                                        for c in configs if c in summary}}
    text = json.dumps(doc, indent=1)
    print(text)
    Path(a.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except wanlib.WanError as e:
        print(json.dumps({"benchmark": "hdf5_ckpt", "error": str(e)}))
        sys.exit(1)
