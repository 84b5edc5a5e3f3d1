# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""A librfs-mpiio.so built for one MPI preloaded into a program of the other (mpiio/mismatch.c):
one line names the build to use, the program runs to completion without rfs (its local files
right, an rfs: name refused with an error, no crash), in both directions and for h5py (Open MPI)
whose MPI is loaded only at import. And `rfs run`, which picks the right build for the launcher
(cli/cmd_run.c): correct bytes on the server with both MPIs."""
import re
import subprocess

import pytest

from conftest import BUILD, binary
from mpiio_util import FLAVOURS, RUN_TIMEOUT, mpiexec, mpiexec_command, program

pytestmark = pytest.mark.mpi

BLOCK = 4096
NAMES = {"mpich": "MPICH", "openmpi": "Open MPI"}
OTHER = {"mpich": "openmpi", "openmpi": "mpich"}


def pattern(n):
    return bytes((i * 7 + 1) & 0xFF for i in range(n))  # t_pat(i, 0) of t_common.h


def need_both():
    if len(FLAVOURS) < 2:
        pytest.skip("needs the MPICH and the Open MPI build")


def mismatch_lines(out, prog, lib):
    # The other build's path when it is where the layouts put it (scripts/test's build trees,
    # lib/rfs/{mpich,openmpi}), else how to build one.
    right = re.escape(str(FLAVOURS[prog] / "librfs-mpiio.so"))
    rx = (rf"^rfs: librfs-mpiio\.so was built for {NAMES[lib]} but this program uses "
          rf"{NAMES[prog]}: use ({right}|a build made with -DMPI_C_COMPILER=mpicc\.\w+) "
          r"\(or launch with `rfs run`\); running it without rfs$")
    return [line for line in out.splitlines() if re.match(rx, line)]


@pytest.mark.parametrize("prog", ["mpich", "openmpi"])
def test_wrong_build_names_the_right_one_and_steps_aside(rfsd, tmp_path, prog):
    need_both()
    lib = OTHER[prog]
    local = tmp_path / "local.dat"
    r = mpiexec(prog, 2, [program(prog, "t_wrongmpi"), str(local), rfsd.url("/never.dat")],
                rfsd.env(), preload=False,
                extra_env={"LD_PRELOAD": str(FLAVOURS[lib] / "librfs-mpiio.so")})
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    assert len(mismatch_lines(r.stdout, prog, lib)) == 1, r.stdout  # one rank speaks
    assert "rfs name refused:" in r.stdout, r.stdout
    assert local.read_bytes() == pattern(2 * BLOCK)
    assert list(rfsd.root.iterdir()) == []


def test_wrong_build_under_h5py(rfsd, tmp_path):
    """Python loads its MPI (Open MPI's, for Debian's h5py and mpi4py) at import, after the
    library's constructor: the mismatch is seen in MPI_Init."""
    need_both()
    try:
        import h5py  # noqa: F401  (only to know whether the test can run)
    except ImportError:
        pytest.skip("no h5py")
    script = tmp_path / "h5.py"
    script.write_text(
        "import sys, h5py\n"
        "from mpi4py import MPI\n"
        "f = h5py.File(sys.argv[1], 'w', driver='mpio', comm=MPI.COMM_WORLD)\n"
        "d = f.create_dataset('x', (2 * 8,), dtype='i4')\n"
        "r = MPI.COMM_WORLD.rank\n"
        "d[r * 8:(r + 1) * 8] = list(range(r * 8, (r + 1) * 8))\n"
        "f.close()\n"
        "if r == 0:\n"
        "    print('OK')\n")
    out = tmp_path / "out.h5"
    r = mpiexec("openmpi", 2, ["/usr/bin/python3", str(script), str(out)], rfsd.env(),
                preload=False, extra_env={"LD_PRELOAD": str(FLAVOURS["mpich"] / "librfs-mpiio.so")})
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    assert len(mismatch_lines(r.stdout, "openmpi", "mpich")) == 1, r.stdout
    import h5py
    with h5py.File(out, "r") as f:
        assert list(f["x"][:]) == list(range(16))


def run_env(rfsd, flavour):
    """The environment of `rfs run`: it finds the build trees next to its own (scripts/test's
    layout); anywhere else, RFS_MPIIO_DIR says where."""
    e = rfsd.env()
    e.pop("LD_PRELOAD", None)
    e.pop("RFS_MPIIO_DIR", None)
    lib_dir = FLAVOURS[flavour]
    if lib_dir != BUILD and lib_dir.parent != BUILD.parent:
        e["RFS_MPIIO_DIR"] = str(lib_dir)
    return e


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_rfs_run_preloads_the_build_for_the_launcher(rfsd, tmp_path, flavour):
    # The launcher line mpiio_util would use, without its preload: rfs run adds that.
    cmd, _ = mpiexec_command(flavour, 2, [program(flavour, "t_wrongmpi"), rfsd.url("/run.dat")],
                             rfsd.env(), preload=False)
    e = run_env(rfsd, flavour)
    dry = subprocess.run([binary("rfs"), "run", "--dry-run", "--", *cmd], env=e, text=True,
                         capture_output=True, timeout=RUN_TIMEOUT)
    assert dry.returncode == 0, dry.stderr
    assert str(FLAVOURS[flavour] / "librfs-mpiio.so") in dry.stdout
    assert ("-genv LD_PRELOAD " if flavour == "mpich" else "-x LD_PRELOAD=") in dry.stdout
    r = subprocess.run([binary("rfs"), "run", "--", *cmd], env=e, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    assert (rfsd.root / "run.dat").read_bytes() == pattern(2 * BLOCK)


def test_rfs_run_install_layout(rfsd, tmp_path):
    """RFS_MPIIO_DIR with the builds side by side in mpich/ and openmpi/ (the install
    layout); the launcher known by the name it links to (Debian's plain mpiexec)."""
    need_both()
    for f in FLAVOURS:
        (tmp_path / f).mkdir()
        (tmp_path / f / "librfs-mpiio.so").symlink_to(FLAVOURS[f] / "librfs-mpiio.so")
    e = rfsd.env()
    e["RFS_MPIIO_DIR"] = str(tmp_path)
    for launcher, flavour in (("mpiexec.mpich", "mpich"), ("mpiexec.openmpi", "openmpi")):
        r = subprocess.run([binary("rfs"), "run", "--dry-run", launcher, "-n", "1", "prog"],
                           env=e, text=True, capture_output=True, timeout=RUN_TIMEOUT)
        assert r.returncode == 0, r.stderr
        assert str(FLAVOURS[flavour] / "librfs-mpiio.so") in r.stdout, r.stdout
    r = subprocess.run([binary("rfs"), "run", "--dry-run", "--mpi", "openmpi", "/bin/true"],
                       env=e, text=True, capture_output=True, timeout=RUN_TIMEOUT)
    assert r.returncode == 0 and "-x LD_PRELOAD=" in r.stdout, r.stdout
