#!/usr/bin/env python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""What TLS costs against plain TCP: `rfs put`/`rfs get` throughput of one file, rfsd's CPU
time for them, and small-op latency (4-byte rfs_pread, bench/roundtrip/lat.c), with an rfsd
with --tls-cert/--tls-key and one without, side by side in the same run.

Where: --where loopback (rfsd on 127.0.0.1:0) or --where wan (the WAN testbed that is up,
bench/wan/up; RFS_WAN_NAME selects it: rfsd in the server namespace, clients in the client
namespace). Each repetition runs TCP then TLS (order alternating between repetitions), and the
report gives medians of the repetitions and the median of the per-repetition tls/tcp ratios.
The certificate (RSA 2048, signed by a CA made here) is verified by CA file, as a user would.

Usage: bench/tls/run.py --where loopback|wan [--build-dir build] [--size-mib 512] [--reps 5]
                        [--lat-n 2000] [--streams 1] [--out FILE]
Prints JSON; with --out merges it into FILE under the key given by --key (default: --where).
Wrap runs in `flock /tmp/rfs-bench.lock`."""
import argparse
import json
import os
import platform
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "wan"))
import wanlib  # noqa: E402


def log(msg):
    print(f"bench/tls: {msg}", file=sys.stderr, flush=True)


def make_pki(d):
    def ossl(*a):
        subprocess.run(["openssl", *a], cwd=d, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    (d / "ext.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1,IP:%s\n"
                               % os.environ.get("BENCH_TLS_SERVER_IP", "127.0.0.1"))
    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
         "-days", "2", "-subj", "/CN=rfs bench CA")
    ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr",
         "-subj", "/CN=rfs bench server")
    ossl("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
         "-CAcreateserial", "-out", "srv.pem", "-days", "2", "-extfile", "ext.cnf")


class Rfsd:
    def __init__(self, ns, build, root, listen, token_file, tls_dir=None, log=None):
        argv = [str(build / "rfsd"), "--root", str(root), "--listen", listen, "--token-file",
                str(token_file), "--log-level", "info"]
        if tls_dir:
            argv += ["--tls-cert", str(tls_dir / "srv.pem"), "--tls-key", str(tls_dir / "srv.key")]
        self.log = open(log, "w") if log else subprocess.DEVNULL
        self.proc = wanlib.start(ns, argv, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("rfsd listening on "):
            wanlib.stop(self.proc)
            raise RuntimeError(f"rfsd did not start: {line!r}")
        self.port = int(line.split()[-1].rsplit(":", 1)[1])

    def cpu(self):
        return wanlib.cpu_seconds(self.proc.pid)

    def stop(self):
        wanlib.stop(self.proc)
        if self.log is not subprocess.DEVNULL:
            self.log.close()


def timed(ns, argv, env, timeout=600):
    t0 = time.monotonic()
    p = subprocess.run(wanlib.in_ns(ns, argv) if ns else argv, env=env, capture_output=True,
                       text=True, timeout=timeout)
    dt = time.monotonic() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {p.stderr.strip()[-600:]}")
    return dt, p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--where", choices=("loopback", "wan"), required=True)
    ap.add_argument("--build-dir", default=str(REPO / "build"))
    ap.add_argument("--size-mib", type=int, default=512)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--lat-n", type=int, default=2000)
    ap.add_argument("--streams", type=int, default=1)
    ap.add_argument("--out")
    ap.add_argument("--key")
    ap.add_argument("--logs", help="directory for rfsd's logs (kept after the run)")
    a = ap.parse_args()
    build = Path(a.build_dir).resolve()
    if a.where == "wan":
        w = wanlib.load_env()
        cli_ns, srv_ns, host = w["RFS_WAN_CLIENT_NS"], w["RFS_WAN_SERVER_NS"], w["RFS_WAN_SERVER_ADDR"]
        link = {k: w.get(k) for k in ("RFS_WAN_RATE_MBIT", "RFS_WAN_RTT_MS", "RFS_WAN_MTU",
                                      "RFS_WAN_TCP_CC")}
    else:
        cli_ns = srv_ns = None
        host, link = "127.0.0.1", None
    os.environ["BENCH_TLS_SERVER_IP"] = host
    work = Path(tempfile.mkdtemp(prefix="rfs-bench-tls.", dir="/dev/shm"))
    servers = []
    try:
        pki = work / "pki"
        pki.mkdir()
        make_pki(pki)
        tok = work / "token"
        tok.write_text(secrets.token_hex(16))
        tok.chmod(0o600)
        root = work / "export"
        root.mkdir()
        lat = work / "lat"
        subprocess.run([os.environ.get("CC", "cc"), "-O2", "-Wall", "-I", str(REPO / "include"),
                        "-o", str(lat), str(REPO / "bench" / "roundtrip" / "lat.c"), "-L",
                        str(build), "-lrfs", f"-Wl,-rpath,{build}"], check=True)
        src = work / "src.bin"
        with open(src, "wb") as f:
            for _ in range(a.size_mib):
                f.write(os.urandom(1 << 20))
        listen = f"{host}:0"
        logs = Path(a.logs) if a.logs else None
        if logs:
            logs.mkdir(parents=True, exist_ok=True)
        srv = {"tcp": Rfsd(srv_ns, build, root, listen, tok, log=logs and logs / "rfsd-tcp.log"),
               "tls": Rfsd(srv_ns, build, root, listen, tok, pki,
                           log=logs and logs / "rfsd-tls.log")}
        servers = list(srv.values())
        env = dict(os.environ, RFS_TOKEN=tok.read_text(), RFS_TLS_CA=str(pki / "ca.pem"),
                   RFS_CONFIG="")
        env.pop("RFS_TLS", None)
        env.pop("RFS_TLS_PIN", None)
        scheme = {"tcp": "rfs", "tls": "rfss"}
        rfs = str(build / "rfs")
        res = {m: {"put_s": [], "get_s": [], "put_cpu_s": [], "get_cpu_s": [], "lat_us": []}
               for m in srv}
        for rep in range(a.reps):
            order = ["tcp", "tls"] if rep % 2 == 0 else ["tls", "tcp"]
            for m in order:
                name = f"{scheme[m]}://{host}:{srv[m].port}/{m}.bin"
                c0 = srv[m].cpu()
                dt, _ = timed(cli_ns, [rfs, "put", "--streams", str(a.streams), str(src), name], env)
                if logs:
                    with open(logs / "times.log", "a") as f:
                        f.write(f"{time.time():.3f} rep {rep} {m} put {dt:.3f}\n")
                c1 = srv[m].cpu()
                res[m]["put_s"].append(dt)
                res[m]["put_cpu_s"].append(c1 - c0)
                back = work / f"back-{m}.bin"
                dt, _ = timed(cli_ns, [rfs, "get", "--streams", str(a.streams), name, str(back)], env)
                res[m]["get_s"].append(dt)
                res[m]["get_cpu_s"].append(srv[m].cpu() - c1)
                if back.stat().st_size != src.stat().st_size:
                    raise RuntimeError(f"{m}: got back {back.stat().st_size} bytes")
                back.unlink()
                _, out = timed(cli_ns, [str(lat), name, str(a.lat_n)], env)
                res[m]["lat_us"].append(json.loads(out)["median_us"])
                log(f"rep {rep} {m}: put {res[m]['put_s'][-1]:.2f} s, get "
                    f"{res[m]['get_s'][-1]:.2f} s, lat {res[m]['lat_us'][-1]:.1f} us")
            (root / "tcp.bin").unlink()
            (root / "tls.bin").unlink()
        mib = a.size_mib
        med = statistics.median

        def summary(key, per_mib=False, rate=False):
            out = {}
            for m in ("tcp", "tls"):
                xs = res[m][key]
                out[m] = round(mib / med(xs), 1) if rate else round(med(xs) / (mib / 1024 if per_mib else 1), 3)
            ratios = [res["tls"][key][i] / res["tcp"][key][i] for i in range(a.reps)
                      if res["tcp"][key][i] > 0]
            r = med(ratios) if ratios else None
            # for a rate the ratio of times is inverted: tls/tcp throughput
            out["ratio_tls_tcp"] = round(1 / r, 3) if (rate and r) else (round(r, 3) if r else None)
            return out

        report = {
            "where": a.where,
            "link": link,
            "size_mib": mib,
            "streams": a.streams,
            "reps": a.reps,
            "tls": "TLS 1.3, OpenSSL default suite (AES-256-GCM here), RSA 2048 certificate, CA-verified",
            "put_MiB_per_s": summary("put_s", rate=True),
            "get_MiB_per_s": summary("get_s", rate=True),
            "rfsd_cpu_s_per_GiB_put": summary("put_cpu_s", per_mib=True),
            "rfsd_cpu_s_per_GiB_get": summary("get_cpu_s", per_mib=True),
            "pread_4B_median_us": {m: round(med(res[m]["lat_us"]), 1) for m in ("tcp", "tls")},
            "runs": res,
            "host": platform.node(),
            "cpus": os.cpu_count(),
        }
        lr = [res["tls"]["lat_us"][i] / res["tcp"]["lat_us"][i] for i in range(a.reps)]
        report["pread_4B_median_us"]["ratio_tls_tcp"] = round(med(lr), 3)
        text = json.dumps(report, indent=2)
        print(text)
        if a.out:
            p = Path(a.out)
            all_ = json.loads(p.read_text()) if p.exists() else {}
            all_[a.key or a.where] = report
            p.write_text(json.dumps(all_, indent=2) + "\n")
    finally:
        for s in servers:
            s.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
