# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Real, unmodified MPI-IO clients on rfs: names through librfs-mpiio.so (LD_PRELOAD).

- h5py (Debian's python3-h5py-mpi, parallel HDF5 over Open MPI) writes and reads a contiguous
  and a chunked dataset collectively; the file on the server's disk is then opened with serial
  h5py and compared with the expected arrays and with the same script's output on a local path.
- PnetCDF (Debian's libpnetcdf, which links Open MPI) writes a 3-D variable with
  ncmpi_put_vara_all from 4 ranks and reads it back; the server's file must be byte-identical
  to a local run's file and readable by ncmpidump and by a second PnetCDF pass; ncmpi_open of
  the rfs: name (format probe through the POSIX shim) + get_vara_all reads it back.
- examples/demo3d (subarray view + write_all/read_all) with MPICH and with Open MPI: the
  server's file must be byte-identical to a local run's file.

Build dirs: RFS_BUILD_DIR_OMPI (default build-ompi) and RFS_BUILD_DIR_MPICH (default build) hold
librfs-mpiio.so for each MPI; a test is skipped only when its library is not built.
"""
import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import MPICH_BUILD, OMPI_BUILD, REPO

pytestmark = pytest.mark.mpi

CLIENTS = REPO / "tests" / "realclients"
PYTHON = "/usr/bin/python3"  # Debian's, where h5py, mpi4py and numpy live
NP = 4
TIMEOUT = 300

MPIS = {
    "mpich": {"build": MPICH_BUILD, "mpicc": "mpicc.mpich", "mpiexec": "mpiexec.mpich"},
    "ompi": {"build": OMPI_BUILD, "mpicc": "mpicc.openmpi", "mpiexec": "mpiexec.openmpi"},
}


def preload_lib(mpi):
    lib = MPIS[mpi]["build"] / "librfs-mpiio.so"
    if not lib.exists():
        pytest.skip(f"{lib} not built (set RFS_BUILD_DIR_{mpi.upper()} to a build with MPI)")
    return str(lib)


def need_tool(name):
    if shutil.which(name) is None:
        pytest.skip(f"{name} not installed (see scripts/deps)")


def mpirun(mpi, args, env, cwd, preload=None):
    """Runs args on NP ranks; preload is librfs-mpiio.so's path or None for the plain MPI."""
    env = dict(env)
    env.pop("LD_PRELOAD", None)
    if mpi == "ompi":
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        cmd = ["mpiexec.openmpi", "-n", str(NP), "--oversubscribe", "--allow-run-as-root"]
        if preload:
            cmd += ["-x", f"LD_PRELOAD={preload}"]
        if "RFS_TOKEN" in env:
            cmd += ["-x", "RFS_TOKEN"]
    else:
        # Debian's MPICH (ch4:ucx) needs UCX limited to shared memory inside containers.
        cmd = ["mpiexec.mpich", "-n", str(NP), "-genv", "UCX_TLS", "self,sm"]
        if preload:
            cmd += ["-genv", "LD_PRELOAD", preload]
    r = subprocess.run(cmd + [str(a) for a in args], env=env, cwd=cwd, capture_output=True,
                       text=True, timeout=TIMEOUT)
    return r


def check_ok(r, what):
    assert r.returncode == 0, (f"{what} failed (exit {r.returncode})\n--- stdout\n{r.stdout[-3000:]}"
                               f"\n--- stderr\n{r.stderr[-5000:]}")


def compile_c(mpicc, source, out, libs=()):
    need_tool(mpicc)
    r = subprocess.run([mpicc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(out),
                        str(source), *libs], capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, f"{mpicc} {source} failed:\n{r.stderr}"
    return out


def pnetcdf_mpi():
    """Which MPI Debian's libpnetcdf links: the test program must use the same one."""
    lib = subprocess.run(["cc", "-print-file-name=libpnetcdf.so"], capture_output=True,
                         text=True).stdout.strip()
    if not os.path.isabs(lib) or not os.path.exists(lib):
        pytest.skip("libpnetcdf.so not found (apt-get install libpnetcdf-dev)")
    deps = subprocess.run(["ldd", lib], capture_output=True, text=True).stdout
    if "libmpich" in deps:
        return "mpich"
    if re.search(r"libmpi\.so\.\d", deps):
        return "ompi"
    pytest.skip(f"cannot tell which MPI {lib} links:\n{deps}")


@pytest.fixture(scope="module")
def binaries(tmp_path_factory):
    """Compiles the C clients once per module, lazily, per MPI."""
    out = tmp_path_factory.mktemp("realclients-bin")
    cache = {}

    def get(name, mpi):
        key = (name, mpi)
        if key not in cache:
            if name == "demo3d":
                cache[key] = compile_c(MPIS[mpi]["mpicc"], REPO / "examples" / "demo3d.c",
                                       out / f"demo3d-{mpi}")
            elif name == "pnetcdf_write3d":
                cache[key] = compile_c(MPIS[mpi]["mpicc"], CLIENTS / "pnetcdf_write3d.c",
                                       out / f"pnetcdf_write3d-{mpi}", ["-lpnetcdf"])
        return cache[key]

    return get


def run_dir(rfsd):
    d = rfsd.root / "run42"
    d.mkdir(exist_ok=True)
    return d


# ---------------------------------------------------------------- h5py (parallel HDF5)

def load_h5py_client():
    spec = importlib.util.spec_from_file_location("h5py_mpio", CLIENTS / "h5py_mpio.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def read_serial(path):
    """Opens an HDF5 file with serial h5py in this (non-MPI) process."""
    import h5py
    with h5py.File(path, "r") as f:
        return (f["contig"][...], f["chunked"][...], f["chunked"].chunks, f["contig"].chunks,
                f.attrs["title"])


def test_h5py_mpio_collective_through_rfs(rfsd, tmp_path):
    lib = preload_lib("ompi")
    need_tool("mpiexec.openmpi")
    pytest.importorskip("h5py")
    client = load_h5py_client()
    remote_dir = run_dir(rfsd)
    local = tmp_path / "local" / "checkpoint.h5"
    local.parent.mkdir()
    script = CLIENTS / "h5py_mpio.py"

    # The same command on both names: the local one passes through the preloaded library to
    # Open MPI's own MPI-IO, the rfs: one goes to the server.
    r = mpirun("ompi", [PYTHON, script, local], rfsd.env(), tmp_path, preload=lib)
    check_ok(r, "h5py on a local path")
    assert "h5py_mpio: ok" in r.stdout
    r = mpirun("ompi", [PYTHON, script, rfsd.url("/run42/checkpoint.h5")], rfsd.env(), tmp_path,
               preload=lib)
    check_ok(r, "h5py on an rfs: name")
    assert "h5py_mpio: ok rfs:" in r.stdout

    contig, chunked = client.expected_arrays()
    on_server = read_serial(remote_dir / "checkpoint.h5")
    on_local = read_serial(local)
    for got in (on_server, on_local):
        g_contig, g_chunked, chunks, contig_chunks, title = got
        assert np.array_equal(g_contig, contig)
        assert np.array_equal(g_chunked, chunked)
        assert chunks == client.CHUNKS and contig_chunks is None
        assert title == "rfs real-client test"
    assert np.array_equal(on_server[0], on_local[0]) and np.array_equal(on_server[1], on_local[1])


# ---------------------------------------------------------------- PnetCDF

NC_SIZES = ["20", "24", "36"]


def ncmpidump(path, cwd):
    r = subprocess.run(["ncmpidump", str(path)], capture_output=True, text=True, cwd=cwd,
                       timeout=TIMEOUT)
    assert r.returncode == 0, f"ncmpidump {path} failed:\n{r.stderr}"
    return r.stdout


def test_pnetcdf_put_get_vara_all_through_rfs(rfsd, tmp_path, binaries):
    mpi = pnetcdf_mpi()
    lib = preload_lib(mpi)
    need_tool("ncmpidump")
    prog = binaries("pnetcdf_write3d", mpi)
    remote_dir = run_dir(rfsd)
    local = tmp_path / "local" / "temperature.nc"
    local.parent.mkdir()

    r = mpirun(mpi, [prog, "write", local, *NC_SIZES], rfsd.env(), tmp_path)
    check_ok(r, "PnetCDF on a local file (reference)")
    r = mpirun(mpi, [prog, "write", rfsd.url("/run42/temperature.nc"), *NC_SIZES], rfsd.env(),
               tmp_path, preload=lib)
    check_ok(r, "PnetCDF on an rfs: name")
    assert "pnetcdf_write3d: ok rfs:" in r.stdout

    server_copy = remote_dir / "temperature.nc"
    assert server_copy.read_bytes() == local.read_bytes()
    # Readable by other tools and by a second PnetCDF pass over the server's file itself.
    dump = ncmpidump(server_copy, tmp_path)
    assert "double temperature(z, y, x)" in dump and ":title = \"rfs real-client test\"" in dump
    assert dump == ncmpidump(local, tmp_path)
    r = mpirun(mpi, [prog, "read", server_copy, *NC_SIZES], rfsd.env(), tmp_path)
    check_ok(r, "PnetCDF second read pass of the server's file")


def test_pnetcdf_reopen_through_rfs(rfsd, tmp_path, binaries):
    """ncmpi_open of an rfs: name: PnetCDF probes the file format with POSIX open()+read() of
    the name minus its "rfs:" prefix on rank 0 (outside MPI-IO), which librfs-mpiio's read-only
    POSIX shim serves; then the header and get_vara_all go through MPI-IO. A second write over
    the existing file (NC_CLOBBER) must still work with the shim in place."""
    mpi = pnetcdf_mpi()
    lib = preload_lib(mpi)
    need_tool("ncmpidump")
    prog = binaries("pnetcdf_write3d", mpi)
    remote_dir = run_dir(rfsd)
    name = rfsd.url("/run42/reopen.nc")
    local = tmp_path / "local" / "reopen.nc"
    local.parent.mkdir()
    r = mpirun(mpi, [prog, "write", local, *NC_SIZES], rfsd.env(), tmp_path)
    check_ok(r, "PnetCDF write on a local file (reference)")
    for attempt in ("create", "overwrite"):
        r = mpirun(mpi, [prog, "write", name, *NC_SIZES], rfsd.env(), tmp_path, preload=lib)
        check_ok(r, f"PnetCDF write on an rfs: name ({attempt})")
        assert (remote_dir / "reopen.nc").read_bytes() == local.read_bytes()
    r = mpirun(mpi, [prog, "read", name, *NC_SIZES], rfsd.env(), tmp_path, preload=lib)
    check_ok(r, "PnetCDF ncmpi_open + get_vara_all on an rfs: name")
    assert "pnetcdf_write3d: ok rfs:" in r.stdout
    # The reader only read: the file is as the writer left it.
    assert (remote_dir / "reopen.nc").read_bytes() == local.read_bytes()
    # A missing file is still reported as missing, through the shim.
    r = mpirun(mpi, [prog, "read", rfsd.url("/run42/absent.nc"), *NC_SIZES], rfsd.env(), tmp_path,
               preload=lib)
    assert r.returncode != 0
    assert "does not exist" in r.stdout + r.stderr


# ---------------------------------------------------------------- the demo program

@pytest.mark.parametrize("mpi", ["mpich", "ompi"])
def test_demo3d_through_rfs(rfsd, tmp_path, binaries, mpi):
    lib = preload_lib(mpi)
    need_tool(MPIS[mpi]["mpiexec"])
    prog = binaries("demo3d", mpi)
    remote_dir = run_dir(rfsd)
    sizes = ["40", "36", "29"]  # uneven blocks on a 2 x 2 x 1 grid
    # A longer leftover must be cut to the array's size by the program.
    (remote_dir / "demo3d.bin").write_bytes(b"\x5a" * (40 * 36 * 29 * 8 + 4096))
    local = tmp_path / "reference.bin"
    r = mpirun(mpi, [prog, local, *sizes], rfsd.env(), tmp_path)
    check_ok(r, "demo3d on a local file (reference)")
    r = mpirun(mpi, [prog, rfsd.url("/run42/demo3d.bin"), *sizes], rfsd.env(), tmp_path,
               preload=lib)
    check_ok(r, "demo3d on an rfs: name")
    assert "verified      all 41760 elements read back match" in r.stdout
    expected = np.arange(40 * 36 * 29, dtype="<f8").tobytes()
    assert local.read_bytes() == expected
    assert (remote_dir / "demo3d.bin").read_bytes() == expected
