# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""An h5py application as scientists write it, run on every rank of an MPI job:
parallel HDF5 (driver='mpio') writes a contiguous and a chunked dataset collectively, closes
the file, reopens it and reads both back collectively, checking every value.

Usage: mpiexec -n N python3 h5py_mpio.py FILE
Rank 0 prints "h5py_mpio: ok ..." when every rank's data matches; exit status 1 otherwise.
The expected arrays are expected_arrays() below, so the test process can check the file
itself with serial h5py.
"""
import sys

import numpy as np

CONTIG_SHAPE = (24, 20, 16)   # float64, written in slabs along axis 0
CHUNKED_SHAPE = (40, 36)      # int32, chunks of 8 x 12, written in row blocks
CHUNKS = (8, 12)


def expected_arrays():
    contig = np.arange(np.prod(CONTIG_SHAPE), dtype=np.float64).reshape(CONTIG_SHAPE) * 0.25 + 3.0
    rows, cols = np.indices(CHUNKED_SHAPE)
    chunked = (rows * 1000 + cols * 7 - 5000).astype(np.int32)
    return contig, chunked


def block(n, parts, p):
    """Rows [start, stop) of part p when n rows are split as evenly as possible."""
    base, extra = divmod(n, parts)
    start = p * base + min(p, extra)
    return start, start + base + (1 if p < extra else 0)


def main(path):
    from mpi4py import MPI
    import h5py

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if not h5py.get_config().mpi:
        print(f"h5py_mpio: rank {rank}: h5py was loaded without MPI support", file=sys.stderr)
        return 1
    contig, chunked = expected_arrays()
    c0, c1 = block(CONTIG_SHAPE[0], size, rank)
    k0, k1 = block(CHUNKED_SHAPE[0], size, rank)

    with h5py.File(path, "w", driver="mpio", comm=comm) as f:
        f.attrs["title"] = "rfs real-client test"
        dc = f.create_dataset("contig", CONTIG_SHAPE, dtype="f8")
        dk = f.create_dataset("chunked", CHUNKED_SHAPE, dtype="i4", chunks=CHUNKS)
        with dc.collective:
            dc[c0:c1] = contig[c0:c1]
        with dk.collective:
            dk[k0:k1] = chunked[k0:k1]

    bad = []
    with h5py.File(path, "r", driver="mpio", comm=comm) as f:
        if f.attrs.get("title") != "rfs real-client test":
            bad.append("title attribute")
        dc, dk = f["contig"], f["chunked"]
        if dk.chunks != CHUNKS:
            bad.append(f"chunks {dk.chunks}")
        with dc.collective:
            got_c = dc[c0:c1]
        with dk.collective:
            got_k = dk[k0:k1]
        if not np.array_equal(got_c, contig[c0:c1]):
            bad.append(f"contig rows {c0}:{c1}")
        if not np.array_equal(got_k, chunked[k0:k1]):
            bad.append(f"chunked rows {k0}:{k1}")
    if bad:
        print(f"h5py_mpio: rank {rank}: {path}: wrong {', '.join(bad)}", file=sys.stderr)
    nbad = comm.allreduce(len(bad))
    if rank == 0 and nbad == 0:
        print(f"h5py_mpio: ok {path} on {size} ranks (hdf5 {h5py.version.hdf5_version}, mpi)")
    return 0 if nbad == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
