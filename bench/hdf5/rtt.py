#!/usr/bin/python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Where one HDF5 checkpoint (bench/hdf5/h5ckpt.py, 4 ranks, h5py) waits for the server: per
MPI call type, how many calls, the requests they sent and the sequential round trips on the
critical path, over the WAN named by RFS_WAN_NAME (bench/wan/up first; the default link when
unset). RFS_TRACE=1 makes the client print each request and reply and the MPI-IO layer each
call's begin and end; bench/mpiio/rtt_count.py's analysis turns them into round trips.

    bench/hdf5/rtt.py [--datasets 100] [--configs RFS,RFS-NOWINDOW,RFS+ABT]
        [--build-dir build-ompi] [--keep-trace DIR]

Prints JSON: for each configuration, io_visible_s and per call name {calls, requests, rtts,
ms, ms_over_rtt} summed over the checkpoint. `rtts` chains the requests a call sent itself;
when writes return early (window, ABT) the waiting moves to the call that collects their
replies (MPI_Barrier's flush), so there ms_over_rtt (time inside the call / RTT) is the
measure, and ABT's background sends are counted in whichever call was running."""
import argparse
import json
import secrets
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "bench" / "wan"))
sys.path.insert(0, str(REPO / "bench" / "mpiio"))
import rtt_count  # noqa: E402
import wanlib  # noqa: E402

HINTS = {"RFS": "", "RFS-NOWINDOW": "rfs_write_window=0",
         "RFS+ABT": "rfs_abt=enable;rfs_defer_close=enable"}


def breakdown(text, rtt_ms):
    out = {}
    for call, lst in rtt_count.analyse(text, rtt_ms).items():
        ops = defaultdict(int)
        for e in lst:
            for o, n in e["ops"].items():
                ops[o] += n
        out[call] = {"calls": len(lst), "requests": sum(e["requests"] for e in lst),
                     "rtts": sum(e["rtts"] for e in lst),
                     "ms": round(sum(e["ms"] for e in lst), 1),
                     "ms_over_rtt": round(sum(e["ms"] for e in lst) / rtt_ms, 1),
                     "ops": dict(sorted(ops.items()))}
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["ms"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--datasets", type=int, default=100)
    ap.add_argument("--elems", type=int, default=8192)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--configs", default=",".join(HINTS))
    ap.add_argument("--build-dir", default=str(REPO / "build-ompi"))
    ap.add_argument("--keep-trace", default="")
    a = ap.parse_args()
    build = Path(a.build_dir).resolve()
    env = wanlib.load_env()
    cli, srv, addr = env["RFS_WAN_CLIENT_NS"], env["RFS_WAN_SERVER_NS"], env["RFS_WAN_SERVER_ADDR"]
    rtt_ms = float(env["RFS_WAN_RTT_MS"])
    work = Path(tempfile.mkdtemp(prefix="rfs-h5rtt."))
    root = work / "root"
    root.mkdir()
    root.chmod(0o777)
    token = secrets.token_hex(16)
    tf = work / "token"
    tf.write_text(token)
    tf.chmod(0o600)
    rfsd = wanlib.start(srv, [str(build / "rfsd"), "--root", str(root), "--listen", f"{addr}:7079",
                              "--token-file", str(tf)], stdout=subprocess.PIPE, text=True)
    result = {"link": f"{env['RFS_WAN_RATE_MBIT']} Mbit/s, RTT {rtt_ms:g} ms", "ranks": a.ranks,
              "datasets": a.datasets, "bytes_per_dataset": a.elems * a.ranks * 8, "configs": {}}
    try:
        wanlib.wait_line(rfsd, "rfsd listening", 20)
        for cfg in [c for c in a.configs.split(",") if c]:
            out = work / f"{cfg}.json"
            argv = ["mpiexec.openmpi", "--oversubscribe", "--allow-run-as-root", "--tag-output",
                    "-n", str(a.ranks)]
            for k, v in {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                         "LD_PRELOAD": str(build / "librfs-mpiio.so"), "RFS_TOKEN": token,
                         "RFS_TRACE": "1", "RFS_HINTS": HINTS[cfg]}.items():
                argv += ["-x", f"{k}={v}"]
            argv += ["/usr/bin/python3", str(HERE / "h5ckpt.py"),
                     f"rfs:{addr}:7079:/{cfg.replace('+', '_')}-", "--ckpts", "1", "--datasets",
                     str(a.datasets), "--elems", str(a.elems), "--work", "1", "--json", str(out)]
            t0 = time.monotonic()
            p = wanlib.run(cli, argv, timeout=900, check=False)
            if p.returncode != 0:
                raise wanlib.WanError(f"{cfg} failed: {(p.stdout + p.stderr)[-1500:]}")
            text = p.stdout + "\n" + p.stderr
            if a.keep_trace:
                Path(a.keep_trace).mkdir(parents=True, exist_ok=True)
                (Path(a.keep_trace) / f"{cfg}.txt").write_text(text)
            calls = breakdown(text, rtt_ms)
            result["configs"][cfg] = {
                "io_visible_s": json.loads(out.read_text())["io_visible_s"],
                "wall_s": round(time.monotonic() - t0, 2),
                "rtts_total": sum(c["rtts"] for c in calls.values()), "calls": calls}
            print(f"hdf5 rtt: {cfg}: io_visible {result['configs'][cfg]['io_visible_s']} s, "
                  f"{result['configs'][cfg]['rtts_total']} round trips", file=sys.stderr)
    finally:
        wanlib.stop(rfsd)
        subprocess.run(["rm", "-rf", str(work)], check=False)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
