# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""File-system configurations the benchmark runner compares (data-driven: add a row to add one).

A configuration says where the target file lives and how the application is run:
  target   "local"  : a file in the client-side scratch directory (on this machine's disk)
           "testfs" : ROMIO's testfs: prefix (MPICH only): collective reorganization runs,
                      nothing reaches a disk; the rfs-abt paper's PEAK
           "rfs"    : rfs:HOST:PORT:/name on an rfsd in the server namespace (or loopback),
                      through LD_PRELOAD=librfs-mpiio.so
  app_args extra workload arguments (e.g. --peak, --async)
  hints    RFS_HINTS string handed to the ranks (for applications that cannot set MPI_Info)
  env      extra environment for the ranks
  needs    prerequisites; a configuration whose prerequisites are missing is recorded as
           "skipped: <reason>", never run with a substitute:
             app:peak / app:async   the workload supports --peak / --async
             mpi:mpich              the run uses MPICH, or (bench/run standard/smoke) MPICH
                                    is installed to run this configuration on its own
             rfs                    build/librfs-mpiio.so and build/rfsd exist
             hint:KEY               librfs-mpiio.so knows the hint KEY (the string is in the
                                    library: a placeholder becomes live when its feature lands)
             symbol:NAME            librfs-mpiio.so defines NAME (e.g. MPI_File_iwrite_at)
  verify   False where reads cannot return the data (testfs)
  mpi      the MPI this configuration needs whatever MPI the rest of the run uses ("mpich"
           for testfs): when the run's MPI is another one, bench/run runs just this
           configuration with it (its rows are labelled with the MPI); empty: the run's MPI
  phase    for the ABT suite (bench/lib/abt_suite.py): the computation-phase regime a
           configuration is defined for ("long": a phase can carry a whole snapshot over the
           link; "short": only 45-75% of one, rfs-abt sec. 4). Empty: any.

Hints may hold placeholders that bench/lib/abt_suite.py fills per run (only that suite lists
the configurations that use them): {buf} ABT buffer size, {snap_rank} bytes one rank writes per
snapshot (the "large" memory cap), {half_snap_rank} half of that (the "small" cap),
{staging} the staging directory (on the client's disk), {ranks} the number of ranks.
"""
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Config:
    name: str
    target: str
    desc: str
    app_args: tuple = ()
    hints: str = ""
    env: dict = field(default_factory=dict)
    needs: tuple = ()
    verify: bool = True
    phase: str = ""
    mpi: str = ""


CONFIGS = [
    Config("PEAK", "local", "computation only: every write is skipped (--peak); the baseline for "
           "computation slowdown", app_args=("--peak",), needs=("app:peak",)),
    Config("TESTFS", "testfs", "ROMIO testfs: collective data reorganization without a disk "
           "(rfs-abt's PEAK: the best visible write bandwidth MPI-IO can give)",
           needs=("mpi:mpich",), verify=False, mpi="mpich"),
    Config("LOCAL", "local", "file on the client side's local disk"),
    Config("RFS", "rfs", "rfs: name over the emulated WAN, librfs-mpiio.so, no optional layer",
           needs=("rfs",)),
    Config("RFS+ABT", "rfs", "RFS with active buffering threads (rfs-abt sec. 3)",
           hints="rfs_abt=enable", needs=("rfs", "hint:rfs_abt")),
    # rfs-abt sec. 4's configurations (suite `abt`). "large": the memory cap holds one
    # snapshot of this rank; "small": half of one, so half of every snapshot is staged in the
    # foreground, fdatasync'ed as the paper did. Staging goes to the client's disk.
    Config("MEMFS", "memfs", "the MPI's own MPI-IO collective write into tmpfs (/dev/shm): "
           "data reorganization plus one memory copy, no disk, no network; the visible-write "
           "peak when ROMIO's testfs (MPICH only) cannot run"),
    Config("RFS+ABT-large-long", "rfs", "ABT, memory cap = one snapshot per rank, computation "
           "phase long enough to send a whole snapshot: nothing should be staged",
           hints="rfs_abt=enable;rfs_abt_buffer_size={buf};rfs_abt_max_memory={snap_rank};"
                 "rfs_staging_dir={staging}",
           needs=("rfs", "hint:rfs_abt_max_memory"), phase="long"),
    Config("RFS+ABT-large-short", "rfs", "ABT, memory cap = one snapshot per rank, computation "
           "phase carries only 45-75% of a snapshot: eq. (1) background staging must free the "
           "rest before the next snapshot",
           hints="rfs_abt=enable;rfs_abt_buffer_size={buf};rfs_abt_max_memory={snap_rank};"
                 "rfs_staging_dir={staging}",
           needs=("rfs", "hint:rfs_abt_max_memory", "hint:rfs_abt_bg_staging"), phase="short"),
    Config("RFS+ABT-small-long", "rfs", "ABT, memory cap = half a snapshot per rank, long "
           "phases: the other half is staged in the foreground (fdatasync, as in the paper)",
           hints="rfs_abt=enable;rfs_abt_buffer_size={buf};rfs_abt_max_memory={half_snap_rank};"
                 "rfs_abt_sync_staging=enable;rfs_staging_dir={staging}",
           needs=("rfs", "hint:rfs_abt_max_memory", "hint:rfs_abt_sync_staging"), phase="long"),
    # What a user gets by only switching ABT on (defaults: 4 MiB buffers, cap 25% of
    # MemAvailable / ranks), and the same with other buffer sizes: the default-on question.
    Config("RFS+ABT-1M", "rfs", "ABT with default settings but 1 MiB buffers",
           hints="rfs_abt=enable;rfs_abt_buffer_size=1M;rfs_staging_dir={staging}",
           needs=("rfs", "hint:rfs_abt_buffer_size")),
    Config("RFS+ABT-4M", "rfs", "ABT with default settings (4 MiB buffers, cap 25% of "
           "MemAvailable / ranks)", hints="rfs_abt=enable;rfs_staging_dir={staging}",
           needs=("rfs", "hint:rfs_abt")),
    Config("RFS+ABT-16M", "rfs", "ABT with default settings but 16 MiB buffers",
           hints="rfs_abt=enable;rfs_abt_buffer_size=16M;rfs_staging_dir={staging}",
           needs=("rfs", "hint:rfs_abt_buffer_size")),
    Config("RFS+ASYNC", "rfs", "RFS with the workload's nonblocking variant (--async: "
           "MPI_File_iwrite*, semplar sec. 4)", app_args=("--async",),
           needs=("rfs", "app:async", "symbol:MPI_File_iwrite_at")),
    Config("RFS+STREAMS4", "rfs", "RFS with 4 TCP streams per process (semplar sec. 4.2)",
           hints="rfs_streams=4", needs=("rfs", "hint:rfs_streams")),
    Config("RFS+ZSTD", "rfs", "RFS with on-the-fly zstd compression (semplar sec. 4.3)",
           hints="rfs_compress=zstd", needs=("rfs", "hint:rfs_compress")),
]

BY_NAME = {c.name: c for c in CONFIGS}

# What each workload supports (bench/apps/*.c).
APPS = {
    "jacobi3d": {"peak": True, "async": False},
    "romio_perf": {"peak": False, "async": False},
    "laplace2d": {"peak": True, "async": True},
    "blast": {"peak": True, "async": True},
    "synthetic": {"peak": False, "async": False},
    "btio": {"peak": True, "async": False},
    "flashio": {"peak": True, "async": False},
    "s3dio": {"peak": True, "async": False},
}
