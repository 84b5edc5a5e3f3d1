# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""MPI-IO with the read cache (cache/, docs/hints.md "Read cache and prefetch") through
librfs-mpiio.so against a real rfsd: sequential and strided reads at 1, 2 and 4 ranks read the
same bytes as the MPI library's own MPI-IO on a local file, with and without prefetch and with
a cap small enough to evict; sync-barrier-sync makes a writer's bytes visible to cached
readers (and without the readers' sync they are not, which shows the cache was in play); a
barrier drops the cache of a file open for writing; atomic mode turns the cache off; RFS_STATS
reports reads served from the cache."""
import os
import re

import pytest

from mpiio_util import FLAVOURS, mpiexec, program

pytestmark = pytest.mark.mpi

# 5 MiB and an odd tail, so that no rank's share or block ends on the file's last byte.
SIZE = 5 * 1024 * 1024 + 4321

VARIANTS = {
    "default": None,  # read-only files: the cache and automatic prefetch are on
    "no-prefetch": "rfs_prefetch=disable",
    "forced-prefetch": "rfs_prefetch=enable;rfs_prefetch_threads=1",
    "small-cap": "rfs_cache_size=1M;rfs_prefetch_max=256K",
    "no-cache": "rfs_cache_read=disable",
}


def data_file(srv, tmp_path):
    data = os.urandom(SIZE)
    local = tmp_path / "input.dat"
    local.write_bytes(data)
    (srv.root / "input.dat").write_bytes(data)
    return local, srv.url("/input.dat")


def phases(out):
    lines = [ln for ln in out.splitlines() if ln.startswith("phase ")]
    assert lines, out
    return lines


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("nprocs", [1, 2, 4])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_reads_same_as_local(rfsd, tmp_path, flavour, nprocs, variant):
    local, remote = data_file(rfsd, tmp_path)
    prog = program(flavour, "t_cache")
    ref = mpiexec(flavour, nprocs, [prog, str(local), "read"], rfsd.env(), preload=False,
                  reference=True)
    assert ref.returncode == 0 and "OK" in ref.stdout, ref.stdout
    env = {"RFS_STATS": "1"}
    if VARIANTS[variant]:
        env["RFS_HINTS"] = VARIANTS[variant]
    r = mpiexec(flavour, nprocs, [prog, remote, "read"], rfsd.env(), extra_env=env)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    assert phases(r.stdout) == phases(ref.stdout)
    stats = [ln for ln in r.stdout.splitlines() if "read cache:" in ln]
    if variant == "no-cache":
        assert stats == []
        return
    # One line per rank; every rank's re-read came from its cache (no request).
    assert len(stats) == nprocs, r.stdout
    for ln in stats:
        m = re.search(r"reads (\d+), served from cache (\d+) \((\d+) bytes\).*prefetched (\d+) "
                      r"bytes, prefetched never read (\d+) bytes.*cap (\d+), peak (\d+)", ln)
        assert m, ln
        reads, cached, cached_bytes, prefetched, _wasted, cap, peak = map(int, m.groups())
        assert reads > 0 and cached > 0 and cached_bytes > 0, ln
        assert peak <= cap, ln
        if variant == "no-prefetch":
            assert prefetched == 0, ln
        else:
            assert prefetched > 0, ln
        if variant == "small-cap":
            assert cap == 1024 * 1024, ln


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("nprocs", [2, 4])
def test_sync_barrier_sync(rfsd, tmp_path, flavour, nprocs):
    """One writer rank, the others read through read-only handles (cached) round after round;
    after the writer's sync, a barrier and their own sync they read the new bytes."""
    prog = program(flavour, "t_cache")
    r = mpiexec(flavour, nprocs, [prog, rfsd.url("/coherent.dat"), "coherence", "4"],
                rfsd.env(), extra_env={"RFS_STATS": "1"})
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    assert "stale 0" in r.stdout
    assert re.search(r"served from cache [1-9]", r.stdout), r.stdout


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_without_reader_sync_cached_bytes_stay(rfsd, tmp_path, flavour):
    """The control for the test above: readers that skip their sync keep reading what they
    cached (MPI allows it), so the sync is what made the new bytes visible there. A local file
    shows no stale bytes, as MPI-IO on a POSIX file system happens to."""
    prog = program(flavour, "t_cache")
    r = mpiexec(flavour, 2, [prog, rfsd.url("/nosync.dat"), "coherence", "3", "nosync"],
                rfsd.env())
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    m = re.search(r"stale (\d+)", r.stdout)
    assert m and int(m.group(1)) > 0, r.stdout


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("nprocs", [2, 4])
def test_barrier_drops_cache_of_writable_file(rfsd, tmp_path, flavour, nprocs):
    """A file open for writing with the cache hinted on: rank 0 writes, MPI_Barrier, the others
    read (twice, the second time cached), round after round, without sync, as HDF5 orders its
    ranks: the readers see each round's bytes."""
    prog = program(flavour, "t_cache")
    r = mpiexec(flavour, nprocs, [prog, rfsd.url("/barrier.dat"), "barrier"], rfsd.env(),
                extra_env={"RFS_STATS": "1"})
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    assert re.search(r"served from cache [1-9]", r.stdout), r.stdout


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("nprocs", [2, 4])
def test_atomic_mode_turns_cache_off(rfsd, tmp_path, flavour, nprocs):
    prog = program(flavour, "t_cache")
    r = mpiexec(flavour, nprocs, [prog, rfsd.url("/atomic.dat"), "atomic", "on"], rfsd.env(),
                extra_env={"RFS_STATS": "1"})
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    assert "stale 0" in r.stdout
    # Nothing was served from the cache in atomic mode.
    for ln in r.stdout.splitlines():
        if "read cache:" in ln:
            assert "reads 0," in ln, ln
    # The same program without atomic mode (cache hinted on): readers see what they cached.
    r = mpiexec(flavour, nprocs, [prog, rfsd.url("/atomic2.dat"), "atomic", "off"], rfsd.env())
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    m = re.search(r"stale (\d+)", r.stdout)
    assert m and int(m.group(1)) > 0, r.stdout
