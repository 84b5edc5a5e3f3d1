# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
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
    # Write-behind makes the visible write bandwidth the speed of a memory copy; io_bw adds
    # open and close (where the buffered data must have reached the server), the fair compare.
    ("RFS+ABT", "RFS", "io_bw_MBps"),
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
        # Budget (bench/README.md, "Time budget"): every run over the link is link-bound, so
        # sizes are picked to move 2-16 MiB per run (a few times the link's 625 KB
        # bandwidth-delay product, still past TCP slow start), 1, 2 and 4 ranks only for
        # jacobi3d (rfs-abt Fig. 4's axis) and the smallest and largest rank count elsewhere.
        # 3 repetitions: the median of 3 for every row; the spread of remote rows is ~1%.
        "reps": 3, "full_reps": 5,
        # A run over the link takes 1-12 s here: 90 s means it hung (the cell is marked failed
        # and its remaining repetitions are skipped). --full moves up to ~1 GiB per run.
        "timeout": 90, "full_timeout": 900,
        # The link the runner brings up when a remote configuration is runnable:
        # 100 Mbit/s each way, 25 ms one way (50 ms RTT), a long fat pipe in miniature.
        "wan": {"rate_mbit": 100, "delay_ms": 25},
        # bench/anchors/run-all: 32 MiB transfers (its default 256 is too long), --quick: one
        # measurement per tool, no repeats (see run-all's header); --full runs all of them.
        "anchor_size_mib": 32, "anchor_args": ["--quick"], "full_anchor_args": [],
        "experiments": [
            # 48^3 doubles (864 KiB) per rank per snapshot, 3 snapshots.
            _exp("jacobi3d", "jacobi3d", ["--local", "48", "--iters", "6", "--every", "2"],
                 [1, 2, 4], "write_bw_MBps", ALL_CONFIGS,
                 full=["--nx", "128", "--ny", "128", "--nz", "256", "--iters", "10", "--every", "2"]),
            # The same with computation long enough to hide a snapshot's transfer (rfs-abt's
            # "long" phases): 1000 sweeps per iteration, ~0.25 s of computation between
            # snapshots per rank, against ~0.2 s to send one rank's snapshot. Its X/PEAK
            # total-time ratio is the computation slowdown that I/O causes. 1 and 2 ranks: at 4
            # the 2 cores are time-sliced and PEAK itself is mostly waiting (bench/run abt
            # measures overlap properly, with wall-clock phases calibrated against the link).
            _exp("jacobi3d-long", "jacobi3d", ["--local", "48", "--iters", "6", "--every", "2",
                                               "--compute-scale", "1000"], [1, 2],
                 "write_bw_MBps", ["PEAK", "TESTFS", "LOCAL", "RFS", "RFS+ABT"],
                 full=["--nx", "128", "--ny", "128", "--nz", "256", "--iters", "10", "--every", "2",
                       "--compute-scale", "20"], full_ranks=[1, 2, 4]),
            _exp("romio_perf", "romio_perf", ["--size", "2M"], [1, 4], "write_bw_MBps",
                 ALL_CONFIGS, full=["--size", "32M"], full_ranks=[1, 2, 4]),
            # 2 MiB per checkpoint, 4 checkpoints.
            _exp("laplace2d", "laplace2d", ["--n", "512", "--iters", "40", "--every", "10"],
                 [1, 4], "total", ALL_CONFIGS,
                 full=["--n", "3001", "--iters", "100", "--every", "25"], full_ranks=[1, 2, 4]),
            # 32 records of 50 KiB, each appended by one MPI_File_write (one round trip each).
            _exp("blast", "blast", ["--queries", "32", "--compute", "2"], [2, 4], "total",
                 ALL_CONFIGS, full=["--queries", "600", "--compute", "4"]),
            # small: 1 B-1 MiB in powers of 4, 2 calls per size (each call is one round trip:
            # more calls repeat the same 50 ms); large 1-4 MiB; strided 1 MiB in 1-64 regions.
            _exp("synthetic", "synthetic", ["--only", "small,large,strided", "--max-calls", "2",
                                            "--large-max", "4M", "--strided-total", "1M"], [1],
                 "cases", ALL_CONFIGS,
                 full=["--only", "small,large,strided", "--large-max", "64M",
                       "--strided-total", "16M"]),
            # a 512 x 512 array of doubles (2 MiB), collective and independent tiles.
            _exp("tile", "synthetic", ["--only", "tile", "--tile", "512"], [2, 4], "cases",
                 ALL_CONFIGS, full=["--only", "tile", "--tile", "4096"]),
            # 40^3 points x 5 doubles = 2.6 MB per dump, 3 dumps.
            _exp("btio", "btio", ["--n", "40", "--dumps", "3", "--compute", "5"], [1, 4],
                 "write_bw_MBps", ALL_CONFIGS, full=["--n", "102", "--dumps", "10", "--compute", "20"],
                 full_ranks=[1, 2, 4]),
            # one checkpoint of 8 variables (8 collective writes).
            _exp("flashio", "flashio", ["--blocks", "20", "--nxb", "8", "--vars", "8",
                                        "--checkpoints", "1", "--compute", "5"], [1, 4],
                 "write_bw_MBps", ALL_CONFIGS,
                 full=["--blocks", "80", "--nxb", "16", "--vars", "24", "--checkpoints", "1"],
                 full_ranks=[1, 2, 4]),
            _exp("s3dio", "s3dio", ["--local", "16", "--checkpoints", "2", "--compute", "5"],
                 [1, 4], "write_bw_MBps", ALL_CONFIGS,
                 full=["--local", "50", "--checkpoints", "10", "--compute", "20"],
                 full_ranks=[1, 2, 4]),
        ],
    },
}

# rfs-abt sec. 4 (Fig. 4, Tables 2 and 3) in miniature, plus the measurements behind the
# "ABT on by default?" decision. Run by bench/lib/abt_suite.py (kind "abt"): it calibrates the
# computation phase against the snapshot transfer time it measures on the link, interleaves the
# repetitions (rep 1 of every cell, then rep 2, ...) so load drift on the shared machine hits all
# configurations alike, and collects every rank's ABT statistics (RFS_ABT_STATS).
SUITES["abt"] = {
    "kind": "abt",
    "desc": "active buffering with threads (rfs-abt sec. 4): 3-D Jacobi snapshots over the "
            "emulated WAN with long and short computation phases, large and small buffers",
    "reps": 3, "full_reps": 5, "timeout": 240,
    "wan": {"rate_mbit": 100, "delay_ms": 25},
    # Open MPI: MPICH's ch4:ucx busy-polls, which on 2 cores starves the ranks (and ABT's
    # threads) at 4 ranks; the suite uses build-ompi/ when RFS_BUILD_DIR is not set.
    "prefer_build": "build-ompi",
    "ranks": [1, 2, 4], "full_ranks": [1, 2, 4],
    # Per rank 64x64x128 doubles = 4 MiB per snapshot, 5 snapshots (paper: 32 MiB, 5).
    "jacobi": {"nx": 64, "ny": 64, "nz": 128, "iters": 10, "every": 2},
    "full_jacobi": {"nx": 128, "ny": 128, "nz": 256, "iters": 10, "every": 2},
    # ABT buffer for the paper's configurations: 1/8 of a rank's snapshot, so staging (whose
    # unit is one buffer) can move the fraction eq. (1) asks for.
    "buffer": "512K", "full_buffer": "4M",
    # Computation phase = factor x the measured transfer time of one snapshot (all ranks
    # together) when RFS alone writes it after an idle phase: "long" carries a whole
    # snapshot with margin, "short" carries 60% (the paper: 45-75%).
    "phase_factor": {"long": 1.5, "short": 0.6},
    "min_phase_s": 0.3,      # ABT sees a computation phase only after 100 ms without writes
    "calib_phase_s": 0.6,    # phase (s) of the RFS run that measures the transfer time
    "experiments": [
        {"name": "long", "phase": "long",
         "configs": ["PEAK", "TESTFS", "MEMFS", "LOCAL", "RFS", "RFS+ABT-large-long",
                     "RFS+ABT-small-long"]},
        # The visible-write peak (TESTFS/MEMFS) does not depend on the phase length: the
        # short experiment's ratios use the long experiment's, measured in the same reps.
        {"name": "short", "phase": "short",
         "configs": ["PEAK", "RFS", "RFS+ABT-large-short"]},
    ],
    # ABT as a user would switch it on (default settings; buffer sizes 1/4/16 MiB), on three
    # workloads: one it is made for and two where it cannot hide anything.
    "decision_ranks": [2],
    "decision": [
        {"name": "write-compute", "app": "jacobi3d", "phase": "long", "baseline": "long",
         "desc": "jacobi3d with long computation phases (as experiment long; RFS and PEAK "
                 "are taken from it)",
         "configs": ["RFS+ABT-1M", "RFS+ABT-4M", "RFS+ABT-16M"]},
        {"name": "romio_perf", "app": "romio_perf", "args": ["--size", "8M"],
         "desc": "romio_perf: write_at, write_at + MPI_File_sync, read_at of the same bytes, "
                 "no computation: every buffered byte must reach the server before the sync "
                 "or the read returns",
         "configs": ["RFS", "RFS+ABT-4M"]},
        {"name": "single-write", "app": "jacobi3d", "single": True,
         "desc": "one collective snapshot (4 MiB per rank) written right after open, then "
                 "close: no computation to hide the transfer behind",
         "configs": ["RFS", "RFS+ABT-4M"]},
    ],
}
