# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""The POSIX shim in librfs-mpiio.so. posix/posix_shim.c: open/read/pread/lseek/fstat/close,
stat/lstat/access on rfs: names (also with the "rfs:" prefix cut off, as PnetCDF passes them, and
in URL form), open for writing refused with EROFS, missing files ENOENT, local files untouched,
several threads on one descriptor (tests/mpiio/t_posix.c). posix/posix_names.c: unlink, rename,
truncate, mkdir/rmdir, remove and their *at forms next to MPI-IO, each checked on the server's
disk with the kernel's errno values (tests/mpiio/t_posix_write.c). PnetCDF's ncmpi_open through
it is in test_realclients.py."""
import pytest

from mpiio_util import FLAVOURS, mpiexec, program

pytestmark = pytest.mark.mpi

SIZE = 100_000


def pattern(n):
    return bytes((i * 7 + 1) & 0xFF for i in range(n))  # t_pat(i, 0) of t_common.h


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("nprocs", [1, 2])
def test_posix_shim_reads_rfs_names(rfsd, tmp_path, flavour, nprocs):
    data = pattern(SIZE)
    (rfsd.root / "posix.dat").write_bytes(data)
    local = tmp_path / "local.dat"
    r = mpiexec(flavour, nprocs, [program(flavour, "t_posix"), rfsd.url("/posix.dat"), str(SIZE),
                                  str(local)], rfsd.env())
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    assert (rfsd.root / "posix.dat").read_bytes() == data  # read-only: untouched
    for rank in range(nprocs):
        assert (tmp_path / f"local.dat.{rank}").read_bytes() == b"local"


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_posix_shim_leaves_programs_without_rfs_names_alone(rfsd, tmp_path, flavour):
    """Every MPI-IO test program on a local file with the library preloaded: byte-for-byte what
    the MPI library alone writes (the shim sits under every open/read/close of the process)."""
    for name in ("t_basic", "t_view"):
        out = {}
        for preload in (False, True):
            f = tmp_path / f"{name}-{preload}.dat"
            r = mpiexec(flavour, 2, [program(flavour, name), str(f)], rfsd.env(), preload=preload,
                        reference=True)
            assert r.returncode == 0 and "OK" in r.stdout, r.stdout
            out[preload] = f.read_bytes()
        assert out[True] == out[False]


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("nprocs", [1, 2])
def test_posix_names_unlink_recreate_rename_truncate(rfsd, tmp_path, flavour, nprocs):
    """Written with MPI-IO, unlink()ed (gone from the server's disk), re-created with
    MPI_MODE_EXCL, rename()d, truncate()d shorter and longer, mkdir/rmdir with their errors;
    the program checks each step on the export directory, and this test the bytes left."""
    local = tmp_path / "local"
    local.mkdir()
    r = mpiexec(flavour, nprocs, [program(flavour, "t_posix_write"), rfsd.url("/pw.dat"),
                                  str(rfsd.root / "pw.dat"), str(local)], rfsd.env())
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    # Written by writer 1 (the re-created file), cut to 700 bytes, grown to 5000 with zeros.
    want = bytes((i * 7 + 31 + 1) & 0xFF for i in range(700)) + bytes(4300)
    assert (rfsd.root / "pw.dat.renamed").read_bytes() == want
    assert sorted(p.name for p in rfsd.root.iterdir()) == ["pw.dat.renamed"]
    assert list(local.iterdir()) == []  # its local files and the stripped-name twin are gone
