# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""The collaborative page cache (ccache/, hint rfs_cache, docs/hints.md "Collaborative cache")
through librfs-mpiio.so against a real rfsd, on both MPIs:
- the BTIO-, FLASH-IO- and S3D-IO-like workloads of bench/apps (small interleaved writes, then
  their own read-back verification) at 1, 2 and 4 ranks leave the same bytes as the MPI
  library's own MPI-IO on a local file: with independent I/O at the default page size and cap,
  with a cap of a few 16 KiB pages (pages written early to make room; RFS_STATS: the frames in
  use never exceed the cap), and with collective I/O (two-phase through the cache);
- sync-barrier-sync makes every rank's bytes visible to every other rank round after round,
  and the server has them;
- atomic mode turns the cache off (every access goes straight to the server: RFS_STATS counts
  it as direct) and back on after;
- a rank killed with dirty pages: whatever it and its peers synced is on the server (the
  process manager ends the whole job, so the peers' error at their next sync/close is tested
  without MPI in tests/ccache, as is a rank dying while it holds a page lock)."""
import re
import subprocess
from pathlib import Path

import pytest

from mpiio_util import FLAVOURS, mpiexec, program

pytestmark = pytest.mark.mpi

APPS_DIR = Path(__file__).resolve().parents[2] / "bench" / "apps"

WORKLOADS = {
    "btio": ["--n", "12", "--dumps", "2"],
    "flashio": ["--blocks", "6", "--nxb", "4", "--guard", "2", "--vars", "4",
                "--checkpoints", "2"],
    "s3dio": ["--local", "6", "--checkpoints", "2"],
}
COMMON = ["--compute", "0", "--seed", "11"]

VARIANTS = {
    "enable": ("rfs_cache=enable", ["--independent"]),
    "small-cap": ("rfs_cache=enable;rfs_cache_page_size=16K;rfs_cache_max_memory=64K",
                  ["--independent"]),
    "collective": ("rfs_cache=enable;rfs_cache_page_size=64K", []),
}

STATS = re.compile(r"collaborative cache: reads (\d+) \((\d+) bytes\), writes (\d+) \((\d+) "
                   r"bytes\), hits (\d+), fills (\d+) \((\d+) bytes\), evictions (\d+), flushed "
                   r"pages (\d+) \((\d+) bytes\), direct (\d+) bytes, frames peak (\d+) of "
                   r"(\d+), page (\d+)")
F = {k: i for i, k in enumerate(["reads", "read_bytes", "writes", "write_bytes", "hits", "fills",
                                  "fill_bytes", "evictions", "flushed_pages", "flushed_bytes",
                                  "direct", "peak", "frames", "page"])}


@pytest.fixture(scope="module")
def apps(tmp_path_factory):
    out = tmp_path_factory.mktemp("cc-apps")
    built = {}

    def get(flavour, name):
        if flavour not in built:
            mpi = "mpich" if flavour == "mpich" else "openmpi"
            d = out / mpi
            r = subprocess.run(["make", "-s", "-C", str(APPS_DIR), f"MPI={mpi}", f"BUILD={d}"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            assert r.returncode == 0, r.stdout
            built[flavour] = d
        return str(built[flavour] / name)
    return get


def files_of(d, prefix):
    return {p.name: p.read_bytes() for p in sorted(Path(d).iterdir()) if p.name.startswith(prefix)}


def stats_of(out):
    return [dict(zip(F, map(int, m.groups()))) for m in STATS.finditer(out)]


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("nprocs", [1, 2, 4])
@pytest.mark.parametrize("app", list(WORKLOADS))
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_workload_same_as_local(rfsd, tmp_path, apps, flavour, nprocs, app, variant):
    prog = apps(flavour, app)
    hints, mode = VARIANTS[variant]
    args = WORKLOADS[app] + COMMON + mode
    local = tmp_path / "local"
    local.mkdir()
    ref = mpiexec(flavour, nprocs, [prog, str(local / "out"), *args], rfsd.env(),
                  preload=False, reference=True)
    assert ref.returncode == 0 and '"verify_errors": 0' in ref.stdout, ref.stdout
    sub = f"cc-{app}-{variant}-{flavour}-{nprocs}"
    (rfsd.root / sub).mkdir()
    r = mpiexec(flavour, nprocs, [prog, rfsd.url(f"/{sub}/out"), *args], rfsd.env(),
                extra_env={"RFS_STATS": "1", "RFS_HINTS": hints})
    assert r.returncode == 0 and '"verify_errors": 0' in r.stdout, r.stdout
    want = files_of(local, "out")
    got = files_of(rfsd.root / sub, "out")
    assert want and sorted(got) == sorted(want)
    for name in want:
        assert got[name] == want[name], f"{name} differs from the local run"
    st = stats_of(r.stdout)
    # one line per rank and file; the bytes went through the cache, none around it
    assert st and len(st) % nprocs == 0, r.stdout
    assert sum(s["write_bytes"] for s in st) > 0, r.stdout
    assert all(s["direct"] == 0 for s in st), r.stdout
    for s in st:
        assert s["peak"] <= s["frames"], r.stdout
    if variant == "small-cap":
        # the cap: 64K of 16K pages, at least ranks + 2 pages per rank's share
        assert all(s["page"] == 16384 and s["frames"] == max(4, nprocs + 2) for s in st), r.stdout
        # more bytes than the ranks' caps hold at once: pages went below early
        if sum(s["write_bytes"] for s in st) > nprocs * max(4, nprocs + 2) * 16384:
            assert sum(s["evictions"] for s in st) > 0, r.stdout
    else:
        assert all(s["frames"] * s["page"] == 32 << 20 for s in st), r.stdout


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("nprocs", [1, 2, 4])
def test_sync_barrier_sync(rfsd, tmp_path, flavour, nprocs):
    prog = program(flavour, "t_wbehind")  # its "sbs" mode suits any layer that holds writes
    ref = mpiexec(flavour, nprocs, [prog, str(tmp_path / "local.dat"), "sbs", "3"], rfsd.env(),
                  preload=False, reference=True)
    assert ref.returncode == 0 and "OK" in ref.stdout, ref.stdout
    name = f"/ccsbs-{flavour}-{nprocs}.dat"
    # 16 KiB pages: the region spans pages of every rank, so pieces of a page come from several
    env = {"RFS_STATS": "1", "RFS_HINTS": "rfs_cache=enable;rfs_cache_page_size=16K"}
    r = mpiexec(flavour, nprocs, [prog, rfsd.url(name), "sbs", "3"], rfsd.env(), extra_env=env)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    assert (rfsd.root / name[1:]).read_bytes() == (tmp_path / "local.dat").read_bytes()
    st = stats_of(r.stdout)
    assert len(st) == nprocs, r.stdout
    assert all(s["writes"] > 0 and s["direct"] == 0 for s in st), r.stdout
    # each dirty page is written once, by the first of its writers to sync
    assert sum(s["flushed_pages"] for s in st) > 0, r.stdout


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("nprocs", [2, 4])
def test_atomic_mode_turns_it_off(rfsd, tmp_path, flavour, nprocs):
    prog = program(flavour, "t_wbehind")
    name = f"/ccatomic-{flavour}-{nprocs}.dat"
    env = {"RFS_STATS": "1", "RFS_HINTS": "rfs_cache=enable;rfs_cache_page_size=16K"}
    r = mpiexec(flavour, nprocs, [prog, rfsd.url(name), "atomic"], rfsd.env(), extra_env=env)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    st = stats_of(r.stdout)
    assert len(st) == nprocs, r.stdout
    for s in st:
        # atomic mode: its 64 writes of 1000 bytes and its read of the whole region went
        # straight to the server; the round after went through the cache
        assert s["direct"] == 64 * 1000 + 64 * 1000 * nprocs, r.stdout
        assert s["write_bytes"] == 64 * 1000, r.stdout


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("nprocs", [2, 4])
def test_killed_rank_loses_nothing_synced(rfsd, flavour, nprocs):
    prog = program(flavour, "t_ccache")
    name = f"/cckill-{flavour}-{nprocs}.dat"
    env = {"RFS_HINTS": "rfs_cache=enable;rfs_cache_page_size=16K"}
    r = mpiexec(flavour, nprocs, [prog, rfsd.url(name), "kill"], rfsd.env(), extra_env=env)
    assert r.returncode != 0 and "SYNCED" in r.stdout, r.stdout
    data = (rfsd.root / name[1:]).read_bytes()
    n = 64 * 1000 * nprocs
    assert len(data) >= n
    pat = [lambda o, w=w: (o * 7 + w * 31 + 1) & 0xff for w in (1, 2)]
    bad = [o for o in range(n) if data[o] != pat[0](o) and data[o] != pat[1](o)]
    assert not bad, f"{len(bad)} acknowledged bytes lost, first at {bad[0]}"


def test_hints_reported(rfsd):
    prog = program("mpich", "t_wbehind")
    env = {"RFS_HINTS": "rfs_cache=bogus", "RFS_STATS": "1"}
    r = mpiexec("mpich", 2, [prog, rfsd.url("/ccbogus.dat"), "sbs", "1"], rfsd.env(),
                extra_env=env)
    # an invalid value is ignored (as for every hint): the default, off
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    assert "collaborative cache:" not in r.stdout
    # auto takes a file opened MPI_MODE_RDWR by several ranks of one node
    env = {"RFS_HINTS": "rfs_cache=auto", "RFS_STATS": "1"}
    r = mpiexec("mpich", 2, [prog, rfsd.url("/ccauto.dat"), "sbs", "1"], rfsd.env(),
                extra_env=env)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    assert len(stats_of(r.stdout)) == 2, r.stdout
    # ... and steps aside when write-behind is asked for
    env = {"RFS_HINTS": "rfs_cache=auto;rfs_write_behind=enable", "RFS_STATS": "1"}
    r = mpiexec("mpich", 2, [prog, rfsd.url("/ccauto2.dat"), "sbs", "1"], rfsd.env(),
                extra_env=env)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    assert not stats_of(r.stdout) and "write-behind:" in r.stdout, r.stdout
