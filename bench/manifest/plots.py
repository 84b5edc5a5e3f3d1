#!/usr/bin/env python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""PNG plots of bench/manifest/wan.py's JSON (bench/results/manifest_wan.json), the analogues
of mpiio-logistical-networking Figs. 7 (striped bandwidth), 9 (buffered vs direct small
writes) and 11 (sieved vs direct noncontiguous reads), and a failover timeline.

    /usr/bin/python3 bench/manifest/plots.py [bench/results/manifest_wan.json]
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(os.path.dirname(HERE), "results")


def _link(doc):
    p = doc["params"]
    return (f"{p['servers']} rfsd, each its own {p['link_mbit']:g} Mbit/s link, "
            f"{p['delay_ms_each_way']:g} ms each way")


def stripe(doc, out, key="stripe"):
    s = doc[key]["summary"]
    names = list(s)
    fig, ax = plt.subplots(figsize=(7, 4))
    x = range(len(names))
    w = [s[n]["write_sync_MBps"] for n in names]
    r = [s[n]["read_MBps"] for n in names]
    ax.bar([i - 0.2 for i in x], w, 0.4, label="write + MPI_File_sync")
    ax.bar([i + 0.2 for i in x], r, 0.4, label="read")
    ax.scatter(list(x), [s[n]["links_iperf3_fwd_MBps"] for n in names], marker="_", s=900,
               color="k", label="iperf3 through the same links", zorder=3)
    ax.set_xticks(list(x))
    ax.set_xticklabels([f"{n}\n({s[n]['servers']} server{'s' if s[n]['servers'] > 1 else ''})"
                        for n in names])
    ax.set_ylabel("MB/s (median)")
    ax.set_title(f"Striped logical file vs one server (romio_perf, 4 ranks, "
                 f"{doc[key].get('size_mib', doc['params']['size_mib'])} MiB)\n{_link(doc)}",
                 fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def failover(doc, out):
    run = doc["failover"]["runs"][0]
    fig, ax = plt.subplots(figsize=(7, 4))
    chunk = 4 << 20
    for key, label, style in (("clean_times", "undisturbed", "-"),
                              ("faulted_times", "server 1 killed", "-")):
        times = sorted(t for rank in run[key] for t in rank)
        ax.plot(times, [(i + 1) * chunk / 2**20 for i in range(len(times))], style, label=label,
                drawstyle="steps-post")
    k = run["faulted"]["killed_at_s"]
    ax.axvline(k, color="r", linestyle=":", label=f"SIGKILL at {k:.2f} s")
    ax.set_xlabel("seconds since the reads started")
    ax.set_ylabel("MiB read and checked (4 ranks)")
    ax.set_title("Read of a 2-replica file over 4 servers, one server killed mid-read\n"
                 + _link(doc), fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def small(doc, out):
    sm, st = doc["small"]["small"], doc["small"]["strided"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 4))
    a1.bar(["direct", "buffered"], [sm["write_MBps"]["direct"], sm["write_MBps"]["buffered"]])
    a1.set_yscale("log")
    a1.set_ylabel("MB/s (median, log scale)")
    a1.set_title(f"{sm['write_size']} B writes + sync\n(Fig. 9): "
                 f"{sm['buffered_vs_direct']:.0f}x", fontsize=9)
    labels, direct, sieve, per = [], [], [], []
    for n, c in st["cases"].items():
        labels.append(f"{n} x {c['region_bytes']} B")
        direct.append(c["read_MBps"]["direct"])
        sieve.append(c["read_MBps"]["sieve"])
        per.append(c["read_MBps"].get("per_region", 0))
    x = range(len(labels))
    a2.bar([i - 0.27 for i in x], direct, 0.27, label="direct (list I/O)")
    a2.bar(list(x), sieve, 0.27, label="sieve")
    a2.bar([i + 0.27 for i in x], per, 0.27, label="a request per region")
    a2.set_xticks(list(x))
    a2.set_xticklabels(labels, fontsize=8)
    a2.set_ylabel("MB/s (median)")
    a2.set_title("strided read, regions per rank (Fig. 11)", fontsize=9)
    a2.legend(fontsize=8)
    fig.suptitle(_link(doc), fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def sweep(doc, out):
    sz, tl = doc["sweep"]["sizes"], doc["sweep"]["tiles"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 4))
    for m, v in sz["write_MBps"].items():
        xs = sorted(v, key=int)
        a1.plot([int(x) for x in xs], [v[x] for x in xs], "o-", label=m)
    a1.set_xscale("log", base=2)
    a1.set_yscale("log")
    a1.set_xlabel("bytes per write")
    a1.set_ylabel("MB/s (median, write + sync)")
    a1.set_title("contiguous writes, one rank (Fig. 6)", fontsize=9)
    a1.legend(fontsize=8)
    cases = list(next(iter(tl["median"].values())))
    labels, bars = [], {}
    for c in cases:
        for q in ("write_MBps", "read_MBps"):
            labels.append(f"{c}\n{q.split('_')[0]}")
            for m in tl["median"]:
                bars.setdefault(m, []).append(tl["median"][m][c][q])
    x = range(len(labels))
    wdt = 0.8 / len(bars)
    for i, (m, v) in enumerate(bars.items()):
        a2.bar([j - 0.4 + wdt * (i + 0.5) for j in x], v, wdt, label=m)
    a2.set_xticks(list(x))
    a2.set_xticklabels(labels, fontsize=7)
    a2.set_ylabel("MB/s (median)")
    a2.set_title(f"{tl['side']}^2 doubles in 2x2 tiles, 4 ranks (Fig. 13)", fontsize=9)
    a2.legend(fontsize=8)
    fig.suptitle(_link(doc), fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def depot(doc, out):
    """Fig. 14: rfs_depot_order fixed against rotate, per pattern and link variant."""
    d = doc["depot"]
    cases = [(v, p) for v in d["summary"] for p in d["summary"][v]]
    fig, ax = plt.subplots(figsize=(8, 4))
    x = range(len(cases))
    for k, (order, off) in enumerate((("fixed", -0.2), ("rotate", 0.2))):
        ax.bar([i + off for i in x],
               [d["summary"][v][p]["median"][order]["write_MBps"] for v, p in cases], 0.4,
               label=f"write, rfs_depot_order={order}")
    ax.axhline(d["iperf3_fwd_MBps"]["4"], color="k", lw=0.8, ls="--",
               label="iperf3 through the 4 links")
    ax.axhline(d["iperf3_fwd_MBps"]["1"], color="grey", lw=0.8, ls=":",
               label="iperf3 through 1 link")
    ax.set_xticks(list(x))
    ax.set_xticklabels([f"{p.replace('_', ' ')}\n{v}" for v, p in cases], fontsize=8)
    ax.set_ylabel("MB/s (median)")
    ax.set_title(f"Depot reordering (Fig. 14 analogue): {d['workload']}\n{_link(doc)}; "
                 f"slow: one link at {d['slow_link_mbit']:g} Mbit/s", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def sizes(doc, out):
    """Figs. 7 and 8: write bandwidth by size, plain / striped / striped with 2 replicas."""
    m = doc["sizes"]["median"]
    fig, axs = plt.subplots(1, 2, figsize=(9, 3.8))
    for ax, q, what in ((axs[0], "write_MBps", "write"), (axs[1], "read_MBps", "read")):
        for name in m:
            ks = sorted(m[name], key=int)
            ax.plot([int(k) for k in ks], [m[name][k][q] for k in ks], marker="o", label=name)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("MiB in all (4 ranks)")
        ax.set_ylabel(f"{what} MB/s (median)")
        ax.legend(fontsize=8)
    fig.suptitle(f"Contiguous writes by size, replication cost (Figs. 7, 8 analogues)\n"
                 f"{_link(doc)}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def noncontig(doc, out):
    nc = doc["noncontig"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 4))
    labels = [f"{n} x {c['region_bytes'] >> 10} KiB" for n, c in nc["cases"].items()]
    for ax in (a1, a2):
        ax.set_yscale("log")
    x = range(len(labels))
    for ax, key, title in ((a1, "write_MBps", "strided write + sync (Fig. 10)"),
                           (a2, "read_MBps", "reading it back (Fig. 11(b))")):
        for k, (m, lab) in enumerate((("log", "log"), ("direct_list", "direct (list I/O)"),
                                      ("direct_per_region", "a request per region"))):
            ax.bar([i + (k - 1) * 0.27 for i in x],
                   [c[key].get(m, 0) for c in nc["cases"].values()], 0.27, label=lab)
        ax.set_xticks(list(x))
        ax.set_xticklabels(labels, fontsize=7, rotation=25)
        ax.set_ylabel("MB/s per rank (median, log scale)")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(_link(doc), fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def plot_all(path, outdir=RESULTS):
    with open(path) as f:
        doc = json.load(f)
    made = []
    # manifest_wan.json -> manifest-wan-*.png, manifest_wan_ns.json -> manifest-wan-ns-*.png
    prefix = os.path.splitext(os.path.basename(path))[0].replace("_", "-")
    for key, fn in (("stripe", stripe), ("stripe512", lambda d, o: stripe(d, o, "stripe512")),
                    ("depot", depot), ("sizes", sizes), ("failover", failover),
                    ("small", small), ("sweep", sweep), ("noncontig", noncontig)):
        if key in doc:
            # manifest_wan_noncontig.json's noncontig part: manifest-wan-noncontig.png
            name = prefix if prefix.endswith("-" + key) else f"{prefix}-{key}"
            out = os.path.join(outdir, f"{name}.png")
            fn(doc, out)
            made.append(out)
    return made


if __name__ == "__main__":
    for p in plot_all(sys.argv[1] if len(sys.argv) > 1 else
                      os.path.join(RESULTS, "manifest_wan.json")):
        print(p)
