"""Benchmark suites: which workloads, sizes, rank counts, configurations and repetitions.

An experiment runs one workload with fixed arguments for every (ranks, configuration) pair,
`reps` times each. `metric` names the number its plot and ratios use:
  write_bw_MBps  application-visible write bandwidth (bytes / time inside write calls)
  read_bw_MBps   the same for reads
  total          wall time of the whole run (s): for workloads whose point is overlap
  cases          per-case bandwidths (synthetic)
--full switches to the `full` argument set (sizes nearer the seed papers') and `full_reps`.
"""

LOCAL_CONFIGS = ["PEAK", "TESTFS", "LOCAL"]
ALL_CONFIGS = ["PEAK", "TESTFS", "LOCAL", "RFS", "RFS+ABT", "RFS+ASYNC", "RFS+STREAMS4", "RFS+ZSTD"]

# Ratios measured within one run: (numerator, denominator, metric). A ratio is reported only
# where both medians exist. Times are "lower is better": their ratio reads as a slowdown.
RATIOS = [
    ("RFS", "LOCAL", "primary"),
    ("RFS", "TESTFS", "primary"),
    ("LOCAL", "TESTFS", "primary"),
    ("RFS+ABT", "RFS", "primary"),
    ("RFS+ASYNC", "RFS", "primary"),
    ("RFS+STREAMS4", "RFS", "primary"),
    ("RFS+ZSTD", "RFS", "primary"),
    ("LOCAL", "PEAK", "total"),
    ("RFS", "PEAK", "total"),
    ("RFS+ABT", "PEAK", "total"),
    ("RFS+ASYNC", "PEAK", "total"),
]


def _exp(name, app, args, ranks, metric, configs, full=None, full_ranks=None):
    return {"name": name, "app": app, "args": args, "ranks": ranks, "metric": metric,
            "configs": configs, "full": full if full is not None else args,
            "full_ranks": full_ranks or ranks}


SUITES = {
    "smoke": {
        "desc": "checks the benchmark machinery (CI): every workload, tiny sizes, local "
                "configurations only, files checked against the pattern",
        "reps": 2, "full_reps": 2, "timeout": 60, "wan": None,
        "experiments": [
            _exp("jacobi3d", "jacobi3d", ["--local", "16", "--iters", "4", "--every", "2"], [1, 2],
                 "write_bw_MBps", LOCAL_CONFIGS),
            _exp("romio_perf", "romio_perf", ["--size", "256K"], [2], "write_bw_MBps", LOCAL_CONFIGS),
            _exp("laplace2d", "laplace2d", ["--n", "128", "--iters", "10", "--every", "5"], [2],
                 "total", LOCAL_CONFIGS),
            _exp("blast", "blast", ["--queries", "8", "--compute", "0.2"], [2], "total",
                 LOCAL_CONFIGS),
            _exp("synthetic", "synthetic", ["--only", "small,large,strided", "--small-max", "4K",
                                            "--large-max", "2M", "--strided-total", "256K",
                                            "--max-regions", "16"], [1], "cases", LOCAL_CONFIGS),
            _exp("tile", "synthetic", ["--only", "tile", "--tile", "128"], [2], "cases",
                 LOCAL_CONFIGS),
            _exp("btio", "btio", ["--n", "16", "--dumps", "2", "--compute", "0.1"], [1, 2],
                 "write_bw_MBps", LOCAL_CONFIGS),
            _exp("flashio", "flashio", ["--blocks", "4", "--vars", "3", "--checkpoints", "1",
                                        "--compute", "0.1"], [2], "write_bw_MBps", LOCAL_CONFIGS),
            _exp("s3dio", "s3dio", ["--local", "8", "--checkpoints", "1", "--compute", "0.1"], [2],
                 "write_bw_MBps", LOCAL_CONFIGS),
        ],
    },
    "standard": {
        "desc": "the seed papers' workloads at sizes that finish in about 10 minutes on the "
                "2-core machine, over the emulated WAN when a remote configuration can run",
        "reps": 3, "full_reps": 5, "timeout": 180,
        # The link the runner brings up when a remote configuration is runnable:
        # 100 Mbit/s each way, 25 ms one way (50 ms RTT), a long fat pipe in miniature.
        "wan": {"rate_mbit": 100, "delay_ms": 25},
        "anchor_size_mib": 32,  # bench/anchors/run-all transfer size (its default 256 is too long)
        "experiments": [
            _exp("jacobi3d", "jacobi3d", ["--local", "48", "--iters", "10", "--every", "2"],
                 [1, 2, 4], "write_bw_MBps", ALL_CONFIGS,
                 full=["--nx", "128", "--ny", "128", "--nz", "256", "--iters", "10", "--every", "2"]),
            # The same with computation long enough to hide a snapshot's transfer (rfs-abt's
            # "long" phases): 200 sweeps per iteration. Its X/PEAK total-time ratio is the
            # computation slowdown that background I/O causes.
            _exp("jacobi3d-long", "jacobi3d", ["--local", "48", "--iters", "10", "--every", "2",
                                               "--compute-scale", "200"], [1, 2, 4],
                 "write_bw_MBps", ["PEAK", "TESTFS", "LOCAL", "RFS", "RFS+ABT"],
                 full=["--nx", "128", "--ny", "128", "--nz", "256", "--iters", "10", "--every", "2",
                       "--compute-scale", "20"]),
            _exp("romio_perf", "romio_perf", ["--size", "4M"], [1, 2, 4], "write_bw_MBps",
                 ALL_CONFIGS, full=["--size", "32M"]),
            _exp("laplace2d", "laplace2d", ["--n", "1024", "--iters", "40", "--every", "10"],
                 [1, 2, 4], "total", ALL_CONFIGS,
                 full=["--n", "3001", "--iters", "100", "--every", "25"]),
            _exp("blast", "blast", ["--queries", "64", "--compute", "2"], [2, 4], "total",
                 ALL_CONFIGS, full=["--queries", "600", "--compute", "4"]),
            _exp("synthetic", "synthetic", ["--only", "small,large,strided", "--large-max", "16M",
                                            "--strided-total", "4M"], [1], "cases", ALL_CONFIGS,
                 full=["--only", "small,large,strided", "--large-max", "64M",
                       "--strided-total", "16M"]),
            _exp("tile", "synthetic", ["--only", "tile", "--tile", "1024"], [2, 4], "cases",
                 ALL_CONFIGS, full=["--only", "tile", "--tile", "4096"]),
            _exp("btio", "btio", ["--n", "48", "--dumps", "5", "--compute", "5"], [1, 2, 4],
                 "write_bw_MBps", ALL_CONFIGS, full=["--n", "102", "--dumps", "10", "--compute", "20"]),
            _exp("flashio", "flashio", ["--blocks", "20", "--nxb", "8", "--vars", "12",
                                        "--checkpoints", "2", "--compute", "5"], [1, 2, 4],
                 "write_bw_MBps", ALL_CONFIGS,
                 full=["--blocks", "80", "--nxb", "16", "--vars", "24", "--checkpoints", "1"]),
            _exp("s3dio", "s3dio", ["--local", "16", "--checkpoints", "3", "--compute", "5"],
                 [1, 2, 4], "write_bw_MBps", ALL_CONFIGS,
                 full=["--local", "50", "--checkpoints", "10", "--compute", "20"]),
        ],
    },
}
