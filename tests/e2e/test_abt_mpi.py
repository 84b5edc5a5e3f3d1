# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""MPI-IO with active buffering (rfs_abt=enable) through librfs-mpiio.so against a real rfsd:
bytes on the server identical to a local run after close and after sync, with a memory cap that
forces staging, with deferred open and close, reads of buffered regions, and a server killed
mid-run whose staged data `rfs recover` delivers once it is back."""
import json
import subprocess

import pytest

from conftest import Server, binary
from mpiio_util import FLAVOURS, mpiexec, mpiexec_command, program, run_both

pytestmark = pytest.mark.mpi

VARIANTS = {
    "buffered": "rfs_abt=enable",
    "tiny-cap": "rfs_abt=enable;rfs_abt_max_memory=1",
    "mixed-cap": "rfs_abt=enable;rfs_abt_max_memory=256K;rfs_abt_buffer_size=64K",
    "deferred": "rfs_abt=enable;rfs_defer_open=enable;rfs_defer_close=enable",
    "one-thread": "rfs_abt=enable;rfs_abt_threads=1;rfs_abt_buffer_size=16K",
}


def stats(prefix, nprocs):
    return [json.loads((prefix.parent / f"{prefix.name}.{r}.json").read_text()) for r in range(nprocs)]


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("nprocs", [1, 2, 4])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_abt_same_bytes_as_local(rfsd, tmp_path, flavour, nprocs, variant):
    staging = tmp_path / "staging"
    staging.mkdir()
    prefix = tmp_path / "abtstats"
    env = {"RFS_HINTS": f"{VARIANTS[variant]};rfs_staging_dir={staging}",
           "RFS_ABT_STATS": str(prefix)}
    local, remote = run_both(rfsd, tmp_path, flavour, "t_abt", nprocs, None, extra_args=("write",),
                             extra_env=env)
    assert remote is not None and local == remote
    assert list(staging.iterdir()) == []  # nothing left after a clean run
    st = stats(prefix, nprocs)
    assert sum(s["bytes_sent"] for s in st) >= len(remote) - 5000 * nprocs  # all of it went through ABT
    if variant == "tiny-cap":
        assert all(s["bytes_buffered"] == 0 and s["bytes_staged_fg"] > 0 for s in st)
    if variant == "mixed-cap":
        assert all(s["memory_peak"] <= 256 * 1024 for s in st)


def popen(flavour, nprocs, argv, env, extra_env):
    """mpiexec with stdin/stdout pipes (rank 0 gets stdin), for the interactive modes."""
    cmd, e = mpiexec_command(flavour, nprocs, argv, env, extra_env=extra_env)
    return subprocess.Popen(cmd, env=e, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def wait_for(p, tag):
    seen = []
    for line in p.stdout:
        seen.append(line)
        if line.strip() == tag:
            return
    raise AssertionError(f"{tag} never came:\n{''.join(seen)}")


def local_reference(srv, tmp_path, flavour, nprocs):
    local = tmp_path / f"ref-{nprocs}.dat"
    r = mpiexec(flavour, nprocs, [program(flavour, "t_abt"), str(local), "write"], srv.env(),
                preload=False)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    return local.read_bytes()


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_abt_gathers_noncontiguous_memory(rfsd, tmp_path, flavour):
    """With ABT, writes from noncontiguous memory are copied into ABT's buffers straight from
    the memory runs, not packed first (t_abt part 4: a vector of 3 elements, blocks out of
    address order, and a subarray through a strided view collectively at 1 rank); the bytes
    are those of a local run."""
    staging = tmp_path / "staging"
    staging.mkdir()
    expect = local_reference(rfsd, tmp_path, flavour, 1)
    r = mpiexec(flavour, 1, [program(flavour, "t_abt"), rfsd.url("/gather.dat"), "write"],
                rfsd.env(), extra_env={"RFS_HINTS": f"rfs_abt=enable;rfs_staging_dir={staging}",
                                       "RFS_MPIIO_LOG": "debug"})
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    for what in ("12000 bytes gathered from 118 memory runs",  # 3 x 40 runs, 2 merged
                 "32 bytes gathered from 4 memory runs",
                 "720 bytes gathered from 60 memory runs"):
        assert what in r.stdout, r.stdout[-3000:]
    assert (rfsd.root / "gather.dat").read_bytes() == expect


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_abt_sync_reaches_server(rfsd, tmp_path, flavour):
    nprocs = 2
    expect = local_reference(rfsd, tmp_path, flavour, nprocs)
    staging = tmp_path / "staging"
    staging.mkdir()
    p = popen(flavour, nprocs, [program(flavour, "t_abt"), rfsd.url("/synced.dat"), "sync"],
              rfsd.env(), {"RFS_HINTS": f"rfs_abt=enable;rfs_staging_dir={staging}"})
    try:
        wait_for(p, "SYNCED")
        # After MPI_File_sync every buffered write is on the server, before close.
        assert (rfsd.root / "synced.dat").read_bytes() == expect
        out, _ = p.communicate("go\n", timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0 and "OK" in out, out


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_abt_server_killed_then_recover(tmp_path, flavour):
    nprocs = 2
    root = tmp_path / "export"
    root.mkdir()
    staging = tmp_path / "staging"
    staging.mkdir()
    srv = Server(root, token="abt-kill-token-0123456789")
    expect = local_reference(srv, tmp_path, flavour, nprocs)
    port = srv.port
    p = popen(flavour, nprocs, [program(flavour, "t_abt"), srv.url("/killed.dat"), "kill"], srv.env(),
              {"RFS_HINTS": f"rfs_abt=enable;rfs_abt_max_memory=1;rfs_staging_dir={staging}"})
    try:
        wait_for(p, "OPENED")
        srv.stop(sig=9)
        out, _ = p.communicate("go\n", timeout=180)
    finally:
        if p.poll() is None:
            p.kill()
    # The failure is reported at sync (an I/O class error naming the file), MPI_Finalize fails
    # and says where the undelivered data is.
    assert "sync_class=" in out and "OK" in out, out
    assert "killed.dat" in out
    assert "rfs recover" in out
    assert "finalize=0" not in out
    assert any(staging.iterdir())

    srv2 = Server(root, token="abt-kill-token-0123456789", listen=f"127.0.0.1:{port}")
    try:
        rec = subprocess.run([binary("rfs"), "recover", str(staging)], env=srv2.env(),
                             capture_output=True, text=True, timeout=120)
        assert rec.returncode == 0, rec.stdout + rec.stderr
        assert (root / "killed.dat").read_bytes() == expect
        assert list(staging.iterdir()) == []
    finally:
        srv2.stop()


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("hints", ["rfs_defer_open=enable",
                                   "rfs_defer_open=enable;rfs_abt=enable"], ids=["plain", "abt"])
def test_deferred_open_failure_reported_later(rfsd, tmp_path, flavour, hints):
    r = mpiexec(flavour, 2, [program(flavour, "t_abt"), rfsd.url("/no/such/dir/f.dat"), "deferfail"],
                rfsd.env(), extra_env={"RFS_HINTS": f"{hints};rfs_staging_dir={tmp_path}"})
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    assert "no_such_file=1" in r.stdout, r.stdout
    assert "/no/such/dir/f.dat" in r.stdout
    if "abt" in hints:
        assert "write=0 " in r.stdout  # buffered: the failure comes at sync
