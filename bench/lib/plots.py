# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""PNG plots from a suite's JSON, in the spirit of the seed papers' figures:
bandwidth (or run time) against ranks, one bar per configuration (rfs-abt Fig. 4), and for the
synthetic workload bandwidth against transfer size / number of regions
(mpiio-logistical-networking Figs. 6, 7, 10) and collective vs independent tiles (Fig. 13)."""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402,F401

LABEL = {"write_bw_MBps": "visible write bandwidth (MB/s)", "read_bw_MBps": "read bandwidth (MB/s)",
         "io_bw_MBps": "I/O bandwidth incl. open/close (MB/s)", "total": "run time (s), lower is better"}


def _size_label(v, _pos=None):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if v >= scale:
            return f"{v / scale:g}{unit}"
    return f"{v:g}"


def _link_text(doc):
    link = doc["link"]
    if link.get("mode") == "wan":
        return f"WAN {link.get('rate_mbit'):g} Mbit/s, RTT {link.get('rtt_ms'):g} ms"
    if link.get("mode") == "loopback":
        return "remote configs over LOOPBACK (no WAN)"
    return "local configurations only"


def _title(doc, exp, extra="", spread=", bars show min-max"):
    return (f"{exp['name']} ({doc['suite']}{' full' if doc['full'] else ''}, {doc['mpi']['name']}, "
            f"{_link_text(doc)}){extra}\nmedian of {doc['reps']} runs{spread}")


def _anchor_lines(ax, doc, metric):
    """Horizontal lines at what the same link gave a raw TCP copy and stage-by-copy in this run
    (bench/anchors), so a bar can be read against the link."""
    if metric not in ("write_bw_MBps", "read_bw_MBps", "io_bw_MBps") or doc["link"].get("mode") != "wan":
        return
    anchors = doc.get("anchors") or {}
    if not anchors or "skipped" in anchors or "error" in anchors:
        return
    import report
    ref = {k: v for k, _l, v, _n in report.anchor_rows(anchors) if v}
    for key, label, style in (("tcp_copy_file", "anchor: raw TCP copy", "--"),
                              ("staged_total", "anchor: stage by copy", ":")):
        if ref.get(key):
            ax.axhline(ref[key], color="black", linestyle=style, linewidth=1,
                       label=f"{label} ({ref[key]:.3g} MB/s)")


def _bars(doc, exp, path):
    ok = [r for r in exp["results"] if r["status"] == "ok" and "median" in r]
    metric = exp["primary"]
    ranks = sorted({r["ranks"] for r in exp["results"]})
    configs = [c for c in dict.fromkeys(r["config"] for r in ok)
               if any(r["median"].get(metric) is not None for r in ok if r["config"] == c)]
    if not configs:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(configs)
    for i, c in enumerate(configs):
        xs, ys, lo, hi = [], [], [], []
        for j, n in enumerate(ranks):
            r = next((r for r in ok if r["config"] == c and r["ranks"] == n), None)
            if not r or r["median"].get(metric) is None:
                continue
            xs.append(j + (i - (len(configs) - 1) / 2) * width)
            y = r["median"][metric]
            ys.append(y)
            lo.append(y - r["min"][metric])
            hi.append(r["max"][metric] - y)
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=c)
    _anchor_lines(ax, doc, metric)
    ax.set_xticks(range(len(ranks)))
    ax.set_xticklabels([f"{n} ranks" for n in ranks])
    ax.set_ylabel(LABEL.get(metric, metric))
    if metric != "total":
        ax.set_yscale("log")
    ax.set_title(_title(doc, exp), fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _cases(doc, exp, path):
    ok = [r for r in exp["results"] if r["status"] == "ok" and r.get("cases")]
    if not ok:
        return None
    kinds = [k for k in ("small", "large", "strided") if any(
        c["kind"] == k for r in ok for c in r["cases"].values())]
    tiles = any(c["kind"] == "tile" for r in ok for c in r["cases"].values())
    panels = kinds + (["tile"] if tiles else [])
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    confs = list(dict.fromkeys(r["config"] for r in ok))
    for ax, kind in zip(axes[0], panels):
        if kind == "tile":
            labels, vals = [], {}
            for r in ok:
                for mode in ("tile_coll", "tile_ind"):
                    c = r["cases"].get(mode)
                    if not c:
                        continue
                    for op in ("write", "read"):
                        key = f"{r['config']} n={r['ranks']}"
                        if key not in labels:
                            labels.append(key)
                        vals[(key, mode, op)] = c.get(f"{op}_bw_MBps")
            series = [(m, op) for m in ("tile_coll", "tile_ind") for op in ("write", "read")]
            width = 0.8 / len(series)
            for i, (m, op) in enumerate(series):
                xs = [j + (i - 1.5) * width for j in range(len(labels))]
                ys = [vals.get((lab, m, op)) or 0 for lab in labels]
                ax.bar(xs, ys, width, label=f"{'coll' if m == 'tile_coll' else 'indep'} {op}")
            ax.set_xticks(range(len(labels)))
            ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=7)
            ax.set_yscale("log")
            ax.set_title("tiles: collective vs independent", fontsize=9)
        else:
            for r in ok:
                color = colors[confs.index(r["config"]) % len(colors)]
                cs = sorted((c for c in r["cases"].values() if c["kind"] == kind),
                            key=lambda c: c["regions"] if kind == "strided" else c["size"])
                xs = [c["regions"] if kind == "strided" else c["size"] for c in cs]
                for op, style in (("write", "-"), ("read", "--")):
                    ys = [c.get(f"{op}_bw_MBps") for c in cs]
                    ax.plot(xs, [y if y is not None else float("nan") for y in ys], style,
                            marker="o", ms=3, color=color, label=f"{r['config']} n={r['ranks']} {op}")
            # The cases are powers of 4 (small) and of 2: ticks on them, labelled 1K, 4M...
            ax.set_xscale("log", base=4 if kind == "small" else 2)
            if kind != "strided":
                ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_size_label))
                ax.tick_params(axis="x", labelsize=7, labelrotation=45)
            ax.set_yscale("log")
            ax.set_xlabel("contiguous regions" if kind == "strided" else "bytes per call")
            ax.set_title({"small": "small contiguous", "large": "large contiguous",
                          "strided": "strided noncontiguous (same total)"}[kind], fontsize=9)
        ax.set_ylabel("MB/s")
        ax.legend(fontsize=6)
    fig.suptitle(_title(doc, exp, spread=" per case"), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_suite(doc, outdir):
    paths = []
    for exp in doc["experiments"]:
        path = os.path.join(outdir, f"{doc['suite']}-{exp['name']}.png")
        p = _cases(doc, exp, path) if exp["metric"] == "cases" else _bars(doc, exp, path)
        if p:
            paths.append(p)
    return paths
