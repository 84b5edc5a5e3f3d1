# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""An h5py application at a realistic scale, run on every rank of an MPI job (driver='mpio'):

  1. create: NDATASETS chunked 2-D datasets in nested groups /step_SS/field_FF (float64, int32
     and float32 in turn; chunks of 6 x 7 over 20 x 30, so every rank's block of rows cuts
     through chunks and HDF5 builds noncontiguous file views), every other one written
     collectively (`with dset.collective:`), the others independently, each rank its own rows;
     attributes on the file, the groups and the datasets (scalars, strings, arrays); a compound
     dataset; a resizable dataset (maxshape (None, 8)) extended 100 times with a write after
     each extension; close.
  2. append ('a'): a new group with datasets, new and changed attributes, some datasets
     overwritten (collectively and independently), the resizable one extended once more; close.
  3. read-only: every value, dtype, shape, chunk shape and attribute checked on every rank.

Usage: mpiexec -n N python3 h5py_scale.py FILE [NDATASETS]   (default 1000)
Rank 0 prints "h5py_scale: ok ..." when every rank found everything as expected; otherwise each
rank prints what was wrong and the exit status is 1.

verify(f, ndatasets) checks an open h5py.File (parallel or serial): the test process uses it on
the server's copy with serial h5py.
"""
import sys

import numpy as np

NDATASETS = 1000
FIELDS_PER_STEP = 20          # /step_SS holds field_00 .. field_19
SHAPE = (20, 30)
CHUNKS = (6, 7)
DTYPES = ("<f8", "<i4", "<f4")
EXT_ROWS, EXT_COLS, EXTENSIONS = 4, 8, 100
COMPOUND = np.dtype([("id", "<i8"), ("x", "<f8"), ("name", "S12"), ("flags", "u1", (3,))])
NRECORDS = 57
APPENDED = 12                 # datasets added in append mode
MODIFIED = range(0, 40, 3)    # datasets overwritten in append mode


def block(n, parts, p):
    """Rows [start, stop) of part p when n rows are split as evenly as possible."""
    base, extra = divmod(n, parts)
    start = p * base + min(p, extra)
    return start, start + base + (1 if p < extra else 0)


def name_of(i):
    return f"step_{i // FIELDS_PER_STEP:02d}/field_{i % FIELDS_PER_STEP:02d}"


def dtype_of(i):
    return np.dtype(DTYPES[i % len(DTYPES)])


def values(i, modified=False):
    rows, cols = np.indices(SHAPE)
    v = i * 1000 + rows * 37 + cols
    if modified:
        v = -v - 7
    return v.astype(dtype_of(i))


def ext_values(nrows):
    rows, cols = np.indices((nrows, EXT_COLS))
    return (rows * 10 + cols * 0.5).astype("<f8")


def records():
    r = np.zeros(NRECORDS, dtype=COMPOUND)
    r["id"] = np.arange(NRECORDS) * 11 - 3
    r["x"] = np.arange(NRECORDS) * 0.125
    r["name"] = [f"rec{k:04d}".encode() for k in range(NRECORDS)]
    r["flags"] = (np.arange(NRECORDS * 3).reshape(NRECORDS, 3) % 251).astype("u1")
    return r


def appended_values(j):
    return (np.arange(15 * 9).reshape(15, 9) + j * 0.5).astype("<f8")


def write_rows(dset, data, rank, size, collective):
    r0, r1 = block(dset.shape[0], size, rank)
    if collective:
        with dset.collective:
            dset[r0:r1] = data[r0:r1]
    else:
        dset[r0:r1] = data[r0:r1]


def create(path, comm, ndatasets):
    import h5py
    rank, size = comm.Get_rank(), comm.Get_size()
    with h5py.File(path, "w", driver="mpio", comm=comm) as f:
        f.attrs["title"] = "rfs h5py scale test"
        f.attrs["ndatasets"] = ndatasets
        f.attrs["shape"] = np.array(SHAPE, dtype="<i8")
        for i in range(ndatasets):
            gname, dname = name_of(i).split("/")
            if gname not in f:
                g = f.create_group(gname)
                s = i // FIELDS_PER_STEP
                g.attrs["step"] = s
                g.attrs["label"] = f"step {s}"
                g.attrs["time"] = np.linspace(0.0, 1.0, 5) + s
            d = f[gname].create_dataset(dname, SHAPE, dtype=dtype_of(i), chunks=CHUNKS)
            d.attrs["index"] = i
            d.attrs["units"] = "m/s" if i % 2 else "K"
            d.attrs["range"] = np.array([i, i + 1.5])
            write_rows(d, values(i), rank, size, collective=(i % 2 == 0))
        meta = f.create_group("meta/deeper/deepest")
        meta.attrs["comment"] = "three levels down"
        c = meta.create_dataset("records", (NRECORDS,), dtype=COMPOUND, chunks=(10,))
        write_rows(c, records(), rank, size, collective=True)
        e = f.create_dataset("extendable", (0, EXT_COLS), maxshape=(None, EXT_COLS),
                             dtype="<f8", chunks=(EXT_ROWS, EXT_COLS))
        full = ext_values(EXT_ROWS * (EXTENSIONS + 1))
        for k in range(EXTENSIONS):
            e.resize((k + 1) * EXT_ROWS, axis=0)
            lo, hi = block(EXT_ROWS, size, rank)
            rows = slice(k * EXT_ROWS + lo, k * EXT_ROWS + hi)
            if k % 2 == 0:
                with e.collective:
                    e[rows] = full[rows]
            else:
                e[rows] = full[rows]


def append(path, comm):
    import h5py
    rank, size = comm.Get_rank(), comm.Get_size()
    with h5py.File(path, "a", driver="mpio", comm=comm) as f:
        f.attrs["title"] = "rfs h5py scale test (appended)"
        f.attrs["appended"] = np.arange(6, dtype="<i2")
        g = f.create_group("appended")
        for j in range(APPENDED):
            d = g.create_dataset(f"extra_{j:02d}", (15, 9), dtype="<f8", chunks=(4, 4))
            d.attrs["j"] = j
            write_rows(d, appended_values(j), rank, size, collective=(j % 2 == 1))
        for n, i in enumerate(MODIFIED):
            if i >= f.attrs["ndatasets"]:
                break
            d = f[name_of(i)]
            write_rows(d, values(i, modified=True), rank, size, collective=(n % 2 == 0))
            d.attrs["modified"] = True
            d.attrs["units"] = "modified"
        e = f["extendable"]
        e.resize(EXT_ROWS * (EXTENSIONS + 1), axis=0)
        full = ext_values(EXT_ROWS * (EXTENSIONS + 1))
        lo, hi = block(EXT_ROWS, size, rank)
        rows = slice(EXTENSIONS * EXT_ROWS + lo, EXTENSIONS * EXT_ROWS + hi)
        with e.collective:
            e[rows] = full[rows]


def check_attr(bad, obj, key, want):
    if key not in obj.attrs:
        bad.append(f"{obj.name}: attribute {key} missing")
        return
    got = obj.attrs[key]
    if isinstance(want, str):
        if isinstance(got, bytes):
            got = got.decode()
        ok = got == want
    else:
        ok = np.array_equal(np.asarray(got), np.asarray(want))
    if not ok:
        bad.append(f"{obj.name}: attribute {key} = {got!r}, expected {want!r}")


def check_data(bad, d, want, chunks):
    if d.shape != want.shape or d.dtype != want.dtype or d.chunks != chunks:
        bad.append(f"{d.name}: shape {d.shape} dtype {d.dtype} chunks {d.chunks}, expected "
                   f"{want.shape} {want.dtype} {chunks}")
        return
    got = d[...]
    if not np.array_equal(got, want):
        n = int(np.count_nonzero(got != want))
        bad.append(f"{d.name}: {n} of {want.size} values differ")


def verify(f, ndatasets):
    """Everything the two writing phases left, as a list of problems (empty: all correct)."""
    bad = []
    check_attr(bad, f, "title", "rfs h5py scale test (appended)")
    check_attr(bad, f, "ndatasets", ndatasets)
    check_attr(bad, f, "shape", np.array(SHAPE))
    check_attr(bad, f, "appended", np.arange(6, dtype="<i2"))
    nsteps = (ndatasets + FIELDS_PER_STEP - 1) // FIELDS_PER_STEP
    steps = sorted(k for k in f.keys() if k.startswith("step_"))
    if steps != [f"step_{s:02d}" for s in range(nsteps)]:
        bad.append(f"groups {steps[:5]}... ({len(steps)}), expected {nsteps} step groups")
    for s in range(nsteps):
        g = f.get(f"step_{s:02d}")
        if g is None:
            continue
        check_attr(bad, g, "step", s)
        check_attr(bad, g, "label", f"step {s}")
        check_attr(bad, g, "time", np.linspace(0.0, 1.0, 5) + s)
    modified = set(i for i in MODIFIED if i < ndatasets)
    for i in range(ndatasets):
        d = f.get(name_of(i))
        if d is None:
            bad.append(f"{name_of(i)} missing")
            continue
        check_data(bad, d, values(i, modified=i in modified), CHUNKS)
        check_attr(bad, d, "index", i)
        check_attr(bad, d, "units", "modified" if i in modified else ("m/s" if i % 2 else "K"))
        check_attr(bad, d, "range", np.array([i, i + 1.5]))
        if i in modified:
            check_attr(bad, d, "modified", True)
        elif "modified" in d.attrs:
            bad.append(f"{d.name}: unexpected attribute modified")
    meta = f.get("meta/deeper/deepest")
    if meta is None:
        bad.append("meta/deeper/deepest missing")
    else:
        check_attr(bad, meta, "comment", "three levels down")
        check_data(bad, meta["records"], records(), (10,))
    check_data(bad, f["extendable"], ext_values(EXT_ROWS * (EXTENSIONS + 1)),
               (EXT_ROWS, EXT_COLS))
    if f["extendable"].maxshape != (None, EXT_COLS):
        bad.append(f"extendable maxshape {f['extendable'].maxshape}")
    for j in range(APPENDED):
        d = f.get(f"appended/extra_{j:02d}")
        if d is None:
            bad.append(f"appended/extra_{j:02d} missing")
            continue
        check_data(bad, d, appended_values(j), (4, 4))
        check_attr(bad, d, "j", j)
    return bad


def main(path, ndatasets):
    from mpi4py import MPI
    import h5py

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if not h5py.get_config().mpi:
        print(f"h5py_scale: rank {rank}: h5py was loaded without MPI support", file=sys.stderr)
        return 1
    phase = "create"
    try:
        create(path, comm, ndatasets)
        phase = "append"
        append(path, comm)
        phase = "verify"
        with h5py.File(path, "r", driver="mpio", comm=comm) as f:
            bad = verify(f, ndatasets)
            # Each rank's own rows once more, collectively, through the noncontiguous views.
            for i in range(0, ndatasets, 7):
                d = f[name_of(i)]
                r0, r1 = block(SHAPE[0], size, rank)
                with d.collective:
                    got = d[r0:r1]
                want = values(i, modified=i in set(MODIFIED))[r0:r1]
                if not np.array_equal(got, want):
                    bad.append(f"{d.name}: collective read of rows {r0}:{r1} differs")
    except Exception as e:  # an HDF5 error on one rank: report it, then stop every rank
        print(f"h5py_scale: rank {rank}: {path}: {phase} failed: {type(e).__name__}: {e}",
              file=sys.stderr, flush=True)
        comm.Abort(1)
    for b in bad[:20]:
        print(f"h5py_scale: rank {rank}: {path}: {b}", file=sys.stderr)
    nbad = comm.allreduce(len(bad))
    if rank == 0 and nbad == 0:
        print(f"h5py_scale: ok {path} on {size} ranks: {ndatasets} chunked datasets in "
              f"{(ndatasets + FIELDS_PER_STEP - 1) // FIELDS_PER_STEP} groups, {EXTENSIONS + 1} "
              f"extensions, {APPENDED} appended (hdf5 {h5py.version.hdf5_version})", flush=True)
    return 0 if nbad == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else NDATASETS))
