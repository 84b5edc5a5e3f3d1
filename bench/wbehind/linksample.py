#!/usr/bin/python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Samples a link device's transmitted bytes and the machine's CPU use every --interval
seconds until SIGTERM, one line per sample: CLOCK_MONOTONIC seconds (the clock of RFS_TRACE's
marks), tx bytes, idle and total CPU ticks from /proc/stat. Run inside the namespace whose
device it reads (bench/wbehind/run.py --sample-link does), read with timeline.py.

    linksample.py OUT [--dev rfsw0] [--interval 0.01]"""
import argparse
import signal
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--dev", default="rfsw0")
    ap.add_argument("--interval", type=float, default=0.01)
    a = ap.parse_args()
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    path = f"/sys/class/net/{a.dev}/statistics/tx_bytes"
    with open(a.out, "w") as out:
        while not stop:
            with open(path) as f:
                tx = int(f.read())
            with open("/proc/stat") as f:
                cpu = f.readline().split()
            idle = int(cpu[4]) + int(cpu[5])
            total = sum(int(x) for x in cpu[1:8])
            out.write(f"{time.monotonic():.4f} {tx} {idle} {total}\n")
            time.sleep(a.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
