# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""ABT when the staging disk is full and the server is gone (issue 22 item 4): a write that
finds neither buffer nor staging room fails with an MPI error within rfs_abt_wait_timeout_ms
instead of waiting forever, and every byte a write call was told it took is on the server or
in a journal that `rfs recover` delivers. tests/mpiio/t_nospc.c is the program; the staging
directory is a small tmpfs."""
import signal
import subprocess

import pytest

from conftest import Server, binary
from mpiio_util import (FLAVOURS, OutputLines, mpiexec_command, program,
                        wait_journals_released)
from test_disk_full import assert_acked_on_server, err_field, mount, parse


@pytest.fixture(autouse=True)
def no_reconnect(monkeypatch):
    """These cases break a transfer for good (a killed server, a reset link): the client must
    give up at once instead of reconnecting for a minute (recovery is test_reconnect.py)."""
    monkeypatch.setenv("RFS_RETRY_TIMEOUT_MS", "0")

pytestmark = pytest.mark.mpi

MIB = 1 << 20
NPROCS = 2
WAIT_MS = 3000
# Each rank may hold 4 MiB in memory (with 4 MiB of journal room reserved for it): two ranks
# fill a 12 MiB staging disk after a few more MiB of staged writes.
# rfs_abt_max_memory=1: every write is staged (the setting of issue 22's report).
HINTS = ("rfs_abt=enable;rfs_abt_buffer_size=1M;rfs_abt_bg_staging=disable;"
         f"rfs_abt_wait_timeout_ms={WAIT_MS};rfs_io_timeout_ms=60000")


@pytest.fixture
def small_staging(tmp_path):
    d = tmp_path / "staging"
    d.mkdir()
    mount("-t", "tmpfs", "-o", "size=12m", "tmpfs", str(d))
    yield d
    subprocess.run(["umount", "-l", str(d)], check=False)


def start(flavour, srv, staging, go, access, memory="4M", nchunks=40):
    argv = [program(flavour, "t_nospc"), srv.url("/abt.dat"), str(MIB), str(nchunks), "pause=2",
            f"go={go}"] + (["coll"] if access == "coll" else [])
    # The server is killed at PAUSED, after an MPI_Barrier: these tests need that barrier to
    # end the burst (the writes before it delivered and the journal's file version asked after
    # them), which a lazy barrier does not (docs/abt.md, "Replay safety"): recovery would then
    # refuse without --force, as after any crash in the middle of a burst.
    cmd, e = mpiexec_command(flavour, NPROCS, argv, srv.env(),
                             extra_env={"RFS_HINTS": f"{HINTS};rfs_abt_max_memory={memory};"
                                                    f"rfs_staging_dir={staging};"
                                                    "rfs_lazy_barrier=disable"})
    return subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def write_errors(errs):
    return [e for e in errs if e.split()[2] == "write"]


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("access", ["indep", "coll"])
@pytest.mark.parametrize("memory", ["4M", "1"], ids=["buffered", "all-staged"])
def test_staging_full_server_killed(tmp_path, small_staging, flavour, access, memory):
    """rfsd SIGKILLed mid-run with the staging disk nearly full: the writes that still find
    room return (their data goes to the journal when its send fails), the first that finds none
    fails at once (the server is not taking writes), and after a restart `rfs recover` puts
    every acknowledged byte on the server."""
    root = tmp_path / "export"
    root.mkdir()
    srv = Server(root, token="abt-bounded-token-0123456789abcdef")
    port = srv.port
    go = tmp_path / "go"
    p = start(flavour, srv, small_staging, go, access, memory)
    out = OutputLines(p)
    try:
        out.wait_for(r"^PAUSED", 120)
        srv.stop(sig=signal.SIGKILL)
        go.touch()
        text = out.rest(120)
    finally:
        if p.poll() is None:
            p.kill()
    p.wait(timeout=60)
    acks, errs = parse(text)
    assert text.count("DONE") == NPROCS, text
    werrs = write_errors(errs)
    assert werrs, text
    for e in werrs:
        assert float(err_field(e, "secs")) < WAIT_MS / 1000 + 10, e
        assert "/abt.dat" in e and "staging" in e, e
    assert "rfs recover" in text, text
    assert len(acks) < 40 * NPROCS  # the run did stop on the full staging disk

    srv2 = Server(root, token="abt-bounded-token-0123456789abcdef", listen=f"127.0.0.1:{port}")
    try:
        assert not wait_journals_released(small_staging), "a rank outlived its job"
        rec = subprocess.run([binary("rfs"), "recover", str(small_staging)], env=srv2.env(),
                             capture_output=True, text=True, timeout=120)
        assert rec.returncode == 0, rec.stdout + rec.stderr
        assert_acked_on_server(root / "abt.dat", acks)
        assert list(small_staging.iterdir()) == []
    finally:
        srv2.stop()


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_staging_full_server_frozen(tmp_path, small_staging, flavour):
    """rfsd stopped (SIGSTOP): nothing is delivered, so the write that finds no room fails
    after rfs_abt_wait_timeout_ms, not never. Once rfsd runs again, sync and close complete
    and every acknowledged byte is on the server."""
    root = tmp_path / "export"
    root.mkdir()
    srv = Server(root, token="abt-frozen-token-0123456789abcdef")
    go = tmp_path / "go"
    p = start(flavour, srv, small_staging, go, "indep")
    out = OutputLines(p)
    try:
        out.wait_for(r"^PAUSED", 120)
        srv.freeze()
        go.touch()
        line = out.wait_for(r"^ERR \d+ write", WAIT_MS / 1000 + 60)
        srv.thaw()
        text = out.rest(120)
    finally:
        srv.thaw()
        if p.poll() is None:
            p.kill()
    p.wait(timeout=60)
    acks, errs = parse(text)
    assert "rfs_abt_wait_timeout_ms" in line, line
    assert float(err_field(line, "secs")) < WAIT_MS / 1000 + 10, line
    assert all(e.split()[2] == "write" for e in errs), text  # sync and close succeed
    assert text.count(" ok\n") == 2 * NPROCS, text
    assert_acked_on_server(root / "abt.dat", acks)
    assert list(small_staging.iterdir()) == []
    srv.stop()
