# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""An HDF5 checkpoint workload as simulations write them with h5py (parallel HDF5, driver='mpio'):
compute, then one new file per checkpoint holding many chunked datasets in groups, each rank
writing its slice collectively, with attributes; repeat.

    mpiexec -n 4 python3 h5ckpt.py PREFIX [--ckpts 3] [--datasets 200] [--elems 8192]
        [--work 40] [--json OUT]

PREFIX is a local path prefix, an rfs: name prefix or a path in a mount: checkpoint k goes to
PREFIX + f"{k}.h5". --work is the computation between checkpoints, in units of a fixed numpy
kernel (about 25 ms each on this machine). Rank 0 prints (and writes to --json) the times, as
the maximum over ranks: io_visible (inside File open .. close, summed over checkpoints),
compute, total. Values are a function of (checkpoint, dataset, global index), so
`verify(PREFIX, ...)` can check every file without MPI."""
import argparse
import json
import sys
import time

import numpy as np


def value(k, d, n_total):
    return np.arange(n_total, dtype=np.float64) + k * 1e9 + d * 1e6


def kernel(a):
    # Dense enough that it is computation, not memory traffic, that takes the time.
    for _ in range(8):
        a = np.sqrt(a * a + 1.0)
    return a


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("prefix")
    ap.add_argument("--ckpts", type=int, default=3)
    ap.add_argument("--datasets", type=int, default=200)
    ap.add_argument("--elems", type=int, default=8192, help="float64 per rank per dataset")
    ap.add_argument("--work", type=int, default=40)
    ap.add_argument("--json")
    a = ap.parse_args()

    from mpi4py import MPI
    import h5py
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    n_total = a.elems * size
    lo, hi = rank * a.elems, (rank + 1) * a.elems
    state = np.random.default_rng(rank).random(200_000)
    t_io = t_comp = 0.0
    comm.Barrier()
    t_start = time.monotonic()
    for k in range(a.ckpts):
        t0 = time.monotonic()
        for _ in range(a.work):
            state = kernel(state)
        comm.Barrier()
        t1 = time.monotonic()
        t_comp += t1 - t0
        with h5py.File(f"{a.prefix}{k}.h5", "w", driver="mpio", comm=comm) as f:
            f.attrs["step"] = k
            f.attrs["code"] = "h5ckpt"
            for d in range(a.datasets):
                g = f.require_group(f"group{d % 10}")
                ds = g.create_dataset(f"field{d}", (n_total,), dtype="f8",
                                      chunks=(a.elems,))
                ds.attrs["units"] = "m/s"
                ds.attrs["index"] = d
                with ds.collective:
                    ds[lo:hi] = value(k, d, n_total)[lo:hi]
        comm.Barrier()
        t_io += time.monotonic() - t1
    total = time.monotonic() - t_start
    io = comm.reduce(t_io, op=MPI.MAX)
    comp = comm.reduce(t_comp, op=MPI.MAX)
    if rank == 0:
        out = {"io_visible_s": round(io, 4), "compute_s": round(comp, 4),
               "total_s": round(total, 4), "ranks": size, "ckpts": a.ckpts,
               "datasets": a.datasets, "bytes": a.ckpts * a.datasets * n_total * 8,
               "hdf5": h5py.version.hdf5_version}
        print(json.dumps(out), flush=True)
        if a.json:
            with open(a.json, "w") as fh:
                json.dump(out, fh)
    return 0


def verify(prefix, ckpts, datasets, n_total):
    """Serial check of every checkpoint file; returns a list of problems (empty: all good)."""
    import h5py
    bad = []
    for k in range(ckpts):
        try:
            with h5py.File(f"{prefix}{k}.h5", "r") as f:
                if f.attrs.get("step") != k:
                    bad.append(f"{prefix}{k}.h5: step attribute")
                for d in range(datasets):
                    ds = f[f"group{d % 10}/field{d}"]
                    if ds.attrs.get("index") != d or not np.array_equal(
                            ds[...], value(k, d, n_total)):
                        bad.append(f"{prefix}{k}.h5: group{d % 10}/field{d}")
        except (OSError, KeyError) as e:
            bad.append(f"{prefix}{k}.h5: {e}")
    return bad


if __name__ == "__main__":
    sys.exit(main())
