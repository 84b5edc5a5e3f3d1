# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Real HDF5 and NetCDF-4 applications at a realistic scale through librfs-mpiio.so, unmodified,
launched with `rfs run` (which preloads the build made for the launcher's MPI), 4 ranks each:

- tests/realclients/h5py_scale.py (Debian's python3-h5py-mpi, Open MPI): 1000 chunked datasets
  in nested groups, written collectively and independently through noncontiguous file views,
  attributes, a compound dataset, a dataset extended 100 times, an append pass, a read-only
  pass checking everything on every rank.
- tests/realclients/hdf5_scale.c, the same in C with the parallel HDF5 API, built against
  libhdf5-openmpi (1000 datasets) and libhdf5-mpich (60 datasets: MPICH busy-polls, and 4
  ranks on a small machine make its collective-heavy runs slow); with Open MPI also with
  collective metadata operations (the metadata cache flushed by all ranks at once), and
  without fill values under rfs_abt=enable.
- tests/realclients/netcdf4_par.c (libnetcdf-mpi, which links Open MPI's HDF5): nc_create_par
  with NC_NETCDF4, six variables incl. an unlimited dimension, collective and independent
  access, an append pass with nc_open_par(NC_WRITE), verification with nc_open_par.

Each program also runs on a local file with the plain MPI (no preload). HDF5 files are not
byte-reproducible, so the server's copy and the local file are compared by content: h5diff
(exit 1 on any difference in objects, values or attributes: checked here on a copy changed on
purpose) and a serial h5py walk of every object (kind, dtype, shape, chunks, maxshape, every
attribute, every value); NetCDF files by ncdump output. The packages come from scripts/deps: a
missing one fails these tests, it does not skip them.
"""
import importlib.util
import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from conftest import MPICH_BUILD, OMPI_BUILD, REPO, binary

pytestmark = pytest.mark.mpi

CLIENTS = REPO / "tests" / "realclients"
PYTHON = "/usr/bin/python3"  # Debian's, where h5py, mpi4py and numpy live
NP = 4
TIMEOUT = 300
BUILDS = {"mpich": MPICH_BUILD, "ompi": OMPI_BUILD}
# Datasets per HDF5 run. MPICH busy-polls: 4 ranks on 2 busy cores need ~0.5 s per dataset
# (created collectively, written, reread) and ~15 s for the rest of the program, so its runs
# are kept to 60 datasets (h5py links Open MPI only).
NDATASETS = {"ompi": 1000, "mpich": 60}
STATS = re.compile(r"rfs stats (\S+): views sent (\d+), found already on the server (\d+)")


def need_tool(name):
    # Installed by scripts/deps: absence is a broken test machine, not a reason to skip.
    assert shutil.which(name), f"{name} not installed (scripts/deps installs it)"


def need_lib(mpi):
    lib = BUILDS[mpi] / "librfs-mpiio.so"
    if not lib.exists():
        pytest.skip(f"{lib} not built (set RFS_BUILD_DIR_{mpi.upper()} to a build with MPI)")
    return lib


def pkg_config(*args):
    r = subprocess.run(["pkg-config", *args], capture_output=True, text=True)
    assert r.returncode == 0, f"pkg-config {' '.join(args)}: {r.stderr} (see scripts/deps)"
    return r.stdout.split()


def launcher(mpi):
    if mpi == "ompi":
        need_tool("mpiexec.openmpi")
        return ["mpiexec.openmpi", "-n", str(NP), "--oversubscribe", "--allow-run-as-root"]
    need_tool("mpiexec.mpich")
    # Debian's MPICH (ch4:ucx) needs UCX limited to shared memory inside containers.
    return ["mpiexec.mpich", "-n", str(NP), "-genv", "UCX_TLS", "self,sm"]


def run_local(mpi, args, env, cwd):
    """The program on a local file with the plain MPI: the reference."""
    e = dict(env)
    e.pop("LD_PRELOAD", None)
    e.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return subprocess.run(launcher(mpi) + [str(a) for a in args], env=e, cwd=cwd,
                          capture_output=True, text=True, timeout=TIMEOUT)


def run_rfs(mpi, args, env, cwd, hints=None, abt_stats=None):
    """The program through `rfs run` with RFS_STATS=1 (and RFS_HINTS=hints, RFS_ABT_STATS=
    abt_stats); returns (result, [(views sent, found)] one per rank and open)."""
    need_lib(mpi)
    e = dict(env)
    for k in ("LD_PRELOAD", "RFS_HINTS", "RFS_ABT_STATS"):
        e.pop(k, None)
    if hints:
        e["RFS_HINTS"] = hints
    if abt_stats:
        e["RFS_ABT_STATS"] = str(abt_stats)
    e.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", RFS_STATS="1",
             RFS_MPIIO_DIR=str(BUILDS[mpi]))
    r = subprocess.run([binary("rfs"), "run", "--", *launcher(mpi), *[str(a) for a in args]],
                       env=e, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)
    stats = [(int(m[2]), int(m[3])) for m in STATS.finditer(r.stdout + r.stderr)]
    return r, stats


LAYER_STATS = {
    "rfs_write_behind=enable": re.compile(r"rfs stats \S+: write-behind: writes (\d+)"),
    "rfs_cache=enable": re.compile(r"rfs stats \S+: collaborative cache: reads \d+ "
                                   r"\(\d+ bytes\), writes (\d+)"),
}


def assert_layer_carried_writes(r, hints):
    """With write-behind or the collaborative cache asked for, RFS_STATS shows that the layer
    took the program's writes (not only that the run passed through with it off)."""
    pat = LAYER_STATS.get(hints)
    if pat:
        writes = [int(m[1]) for m in pat.finditer(r.stdout + r.stderr)]
        assert writes and sum(writes) > 0, \
            f"{hints}: no writes through the layer\n{r.stderr[-3000:]}"


def check_ok(r, what, marker):
    assert r.returncode == 0 and marker in r.stdout, (
        f"{what} failed (exit {r.returncode})\n--- stdout\n{r.stdout[-3000:]}"
        f"\n--- stderr\n{r.stderr[-5000:]}")


def report_stats(what, stats):
    sent, found = sum(s for s, _ in stats), sum(f for _, f in stats)
    print(f"\n{what}: RFS_STATS over {len(stats)} rank-opens: views sent {sent}, "
          f"found already on the server {found}")
    return sent, found


# ---------------------------------------------------------------- HDF5 content comparison

def h5_content(path):
    """Every object of an HDF5 file, read with serial h5py in this process: name -> (kind,
    attributes, and for datasets dtype, shape, chunks, maxshape, values)."""
    import h5py

    def attrs(obj):
        out = {}
        for k in obj.attrs:
            v = obj.attrs[k]
            a = np.asarray(v)
            out[k] = (type(v).__name__, a.dtype.str, a.shape, a.tobytes() if a.dtype != object
                      else repr(v))
        return out

    content = {}
    with h5py.File(path, "r") as f:
        content["/"] = ("group", attrs(f))

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                content[name] = ("dataset", attrs(obj), obj.dtype.descr, obj.shape, obj.chunks,
                                 obj.maxshape, obj[...].tobytes())
            else:
                content[name] = ("group", attrs(obj))
        f.visititems(visit)
    return content


def assert_same_hdf5(server_copy, local, cwd):
    need_tool("h5diff")
    r = subprocess.run(["h5diff", str(local), str(server_copy)], capture_output=True, text=True,
                       cwd=cwd, timeout=TIMEOUT)
    assert r.returncode == 0, (f"h5diff {local} {server_copy}: exit {r.returncode}\n"
                               f"{r.stdout[-3000:]}{r.stderr[-2000:]}")
    a, b = h5_content(local), h5_content(server_copy)
    assert a.keys() == b.keys(), (
        f"objects only in the local file: {sorted(a.keys() - b.keys())[:10]}, "
        f"only on the server: {sorted(b.keys() - a.keys())[:10]}")
    differ = [k for k in a if a[k] != b[k]]
    assert not differ, (f"{len(differ)} objects differ between {local} and {server_copy}: "
                        f"{differ[:10]}")
    return a


def test_h5diff_finds_differences(tmp_path):
    """The comparison above can fail: h5diff exits 1 for a changed attribute, a changed value
    and a missing object, and the serial walk sees them too."""
    need_tool("h5diff")
    import h5py
    base = tmp_path / "base.h5"
    with h5py.File(base, "w") as f:
        g = f.create_group("step_00")
        d = g.create_dataset("field_00", data=np.arange(60.0).reshape(6, 10), chunks=(4, 3))
        d.attrs["units"] = "K"
        g.create_dataset("field_01", data=np.arange(6))
    changes = {
        "attribute": lambda f: f["step_00/field_00"].attrs.modify("units", "m"),
        "value": lambda f: f["step_00/field_00"].__setitem__((5, 9), -1.0),
        "object": lambda f: f.__delitem__("step_00/field_01"),
    }
    for what, change in changes.items():
        other = tmp_path / f"{what}.h5"
        shutil.copy(base, other)
        with h5py.File(other, "a") as f:
            change(f)
        r = subprocess.run(["h5diff", str(base), str(other)], capture_output=True, text=True,
                           timeout=TIMEOUT)
        assert r.returncode == 1, f"h5diff missed a changed {what}: exit {r.returncode} {r.stdout}"
        assert h5_content(base) != h5_content(other), what
    assert h5_content(base) == h5_content(shutil.copy(base, tmp_path / "same.h5"))


# ---------------------------------------------------------------- h5py

def load_h5py_scale():
    spec = importlib.util.spec_from_file_location("h5py_scale", CLIENTS / "h5py_scale.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("hints", [None, "rfs_write_window=0", "rfs_abt=enable",
                                   "rfs_write_behind=enable", "rfs_cache=enable"],
                         ids=["default", "no-window", "abt", "write-behind", "ccache"])
def test_h5py_scale_through_rfs(rfsd, tmp_path, hints):
    """By default (the write window), without it, with ABT, with two-stage write-behind and
    with the collaborative page cache (HDF5's small metadata writes from every rank are what
    those two gather into pages). With the layers that let writes return before the server
    has them, HDF5
    fills a new chunk on one rank and has others write into it after an MPI_Barrier, so
    those writes must reach the server in that order (mpiio/barrier.c)."""
    need_lib("ompi")
    import h5py  # noqa: F401  (python3-h5py-mpi brings the serial build too)
    client = load_h5py_scale()
    script = CLIENTS / "h5py_scale.py"
    (rfsd.root / "run42").mkdir()
    local = tmp_path / "local.h5"
    n = NDATASETS["ompi"]

    r = run_local("ompi", [PYTHON, script, local, n], rfsd.env(), tmp_path)
    check_ok(r, "h5py_scale on a local file (reference)", "h5py_scale: ok")
    r, stats = run_rfs("ompi", [PYTHON, script, rfsd.url("/run42/scale.h5"), n], rfsd.env(),
                       tmp_path, hints=hints)
    check_ok(r, "h5py_scale on an rfs: name", "h5py_scale: ok rfs:")
    assert f"{n} chunked datasets" in r.stdout
    assert_layer_carried_writes(r, hints)

    server_copy = rfsd.root / "run42" / "scale.h5"
    content = assert_same_hdf5(server_copy, local, tmp_path)
    assert sum(1 for v in content.values() if v[0] == "dataset") == n + 2 + client.APPENDED
    # The server's copy, opened with serial h5py, holds exactly what the program wrote.
    with h5py.File(server_copy, "r") as f:
        problems = client.verify(f, n)
    assert not problems, problems[:10]

    # Three opens (create, append, read-only), every rank prints its line at each close.
    assert len(stats) == 3 * NP, r.stdout + r.stderr
    sent, found = report_stats("h5py_scale", stats)
    # HDF5 sets a noncontiguous file view for every chunked dataset written: without the
    # write window they reach the server as views, each at least once (under ABT, and with the
    # write window's lazy barriers -- all ranks on this node, mpiio/fence.h -- the client maps
    # views to extent lists).
    if hints == "rfs_write_window=0":
        assert sent >= n


# ---------------------------------------------------------------- HDF5 from C

@pytest.fixture(scope="module")
def c_programs(tmp_path_factory):
    out = tmp_path_factory.mktemp("realapps-bin")
    cache = {}

    def get(name, mpi):
        key = (name, mpi)
        if key in cache:
            return cache[key]
        mpicc = {"ompi": "mpicc.openmpi", "mpich": "mpicc.mpich"}[mpi]
        need_tool(mpicc)
        if name == "hdf5_scale":
            pc = {"ompi": "hdf5-openmpi", "mpich": "hdf5-mpich"}[mpi]
            flags = pkg_config("--cflags", "--libs", pc)
        else:
            # Debian's netcdf-mpi.pc names /usr/include, but the header is under its prefix.
            prefix = pkg_config("--variable=prefix", "netcdf-mpi")[0]
            flags = [f"-I{prefix}/include"] + pkg_config("--cflags", "--libs", "netcdf-mpi")
        exe = out / f"{name}-{mpi}"
        r = subprocess.run([mpicc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(exe),
                            str(CLIENTS / f"{name}.c"), *flags], capture_output=True, text=True,
                           timeout=TIMEOUT)
        assert r.returncode == 0, f"{mpicc} {name}.c failed:\n{r.stderr}"
        cache[key] = exe
        return exe

    return get


@pytest.mark.parametrize("mpi,mode", [("ompi", ""), ("mpich", ""), ("ompi", "collmeta"),
                                      ("ompi", "nofill"), ("mpich", "wb"), ("mpich", "ccache")],
                         ids=["ompi", "mpich", "ompi-collmeta", "ompi-nofill-abt",
                              "mpich-write-behind", "mpich-ccache"])
def test_hdf5_c_scale_through_rfs(rfsd, tmp_path, c_programs, mpi, mode):
    """mode collmeta: collective metadata reads and writes (H5Pset_all_coll_metadata_ops,
    H5Pset_coll_metadata_write): the metadata cache is flushed by all ranks at once.
    mode nofill: H5D_FILL_TIME_NEVER, run with rfs_abt=enable: the way to use ABT with parallel
    HDF5 (docs/mpiio.md: with fill values, one rank's buffered fill of a new chunk can reach
    the server after other ranks' data in it).
    mode wb / ccache: the program as it is, with rfs_write_behind=enable / rfs_cache=enable."""
    need_lib(mpi)
    prog = c_programs("hdf5_scale", mpi)
    n = NDATASETS[mpi]
    layer_hints = {"wb": "rfs_write_behind=enable", "ccache": "rfs_cache=enable"}
    extra = [mode] if mode and mode not in layer_hints else []
    what = f"hdf5_scale ({mpi}{', ' + mode if mode else ''})"
    local = tmp_path / "local.h5"
    r = run_local(mpi, [prog, local, n, *extra], rfsd.env(), tmp_path)
    check_ok(r, f"{what} on a local file (reference)", "hdf5_scale: ok")
    abt = mode == "nofill"
    r, stats = run_rfs(mpi, [prog, rfsd.url("/scale-c.h5"), n, *extra], rfsd.env(), tmp_path,
                       hints="rfs_abt=enable" if abt else layer_hints.get(mode),
                       abt_stats=tmp_path / "abt" if abt else None)
    check_ok(r, f"{what} on an rfs: name", "hdf5_scale: ok rfs:")
    assert f"{n} chunked datasets" in r.stdout
    assert ("collective metadata" in r.stdout) == (mode == "collmeta")
    assert ("no fill" in r.stdout) == (mode == "nofill")
    assert_layer_carried_writes(r, layer_hints.get(mode))
    if abt:  # the writes did go through ABT's buffers
        per_rank = [json.loads(p.read_text()) for p in tmp_path.glob("abt.*.json")]
        assert len(per_rank) == NP and all(s["bytes_buffered"] > 0 for s in per_rank), per_rank
    content = assert_same_hdf5(rfsd.root / "scale-c.h5", local, tmp_path)
    assert sum(1 for v in content.values() if v[0] == "dataset") == n + 2 + 12
    assert len(stats) == 3 * NP, r.stdout + r.stderr
    report_stats(what, stats)


# ---------------------------------------------------------------- NetCDF-4

def netcdf_mpi():
    """The MPI Debian's libnetcdf_mpi links (through its HDF5): the program must use it."""
    lib = subprocess.run(["cc", "-print-file-name=libnetcdf_mpi.so"], capture_output=True,
                         text=True).stdout.strip()
    deps = subprocess.run(["ldd", lib], capture_output=True, text=True).stdout
    assert "libnetcdf_mpi" in lib and deps, \
        "libnetcdf_mpi.so not found (scripts/deps installs libnetcdf-mpi-dev)"
    if "libmpich" in deps:
        return "mpich"
    assert re.search(r"libmpi\.so\.\d", deps), f"cannot tell which MPI {lib} links:\n{deps}"
    return "ompi"


def ncdump(path, *opts):
    need_tool("ncdump")
    r = subprocess.run(["ncdump", *opts, str(path)], capture_output=True, text=True,
                       timeout=TIMEOUT)
    assert r.returncode == 0, f"ncdump {path} failed:\n{r.stderr}"
    # The first line names the file ("netcdf NAME {"): the two copies have different names.
    first, rest = r.stdout.split("\n", 1)
    assert re.fullmatch(r"netcdf \S+ \{", first), first
    return rest


def test_netcdf4_par_through_rfs(rfsd, tmp_path, c_programs):
    mpi = netcdf_mpi()
    need_lib(mpi)
    prog = c_programs("netcdf4_par", mpi)
    local = tmp_path / "local.nc"
    r = run_local(mpi, [prog, local], rfsd.env(), tmp_path)
    check_ok(r, "netcdf4_par on a local file (reference)", "netcdf4_par: ok")
    r, stats = run_rfs(mpi, [prog, rfsd.url("/model.nc")], rfsd.env(), tmp_path)
    check_ok(r, "netcdf4_par on an rfs: name", "netcdf4_par: ok rfs:")
    server_copy = rfsd.root / "model.nc"
    dump = ncdump(server_copy)
    assert dump == ncdump(local)
    assert "time = UNLIMITED ; // (9 currently)" in dump
    for decl in ("float temp(time, y, x)", "double pressure(y, x)", "ubyte flags(y, x)",
                 "int levels(level)", "int64 step_id(time)", "char names(station, namelen)",
                 ':history = "appended 3 steps"'):
        assert decl in dump, decl
    kind = subprocess.run(["ncdump", "-k", str(server_copy)], capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert kind.stdout.strip() == "netCDF-4", kind.stdout + kind.stderr
    # The storage ncdump -s reports (chunking, contiguous) is the same too.
    assert ncdump(server_copy, "-hs") == ncdump(local, "-hs")
    report_stats("netcdf4_par", stats)
