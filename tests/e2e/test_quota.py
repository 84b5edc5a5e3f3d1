# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Per-export byte quotas (issue #21 item 4): writes, truncates, preallocation, whole-file
writes and renames are held to the export's quota with RFS_E_DQUOT before any byte of the
request lands; deletes free quota; MPI-IO sees MPI_ERR_QUOTA."""
import os
import struct

import pytest

from mpiio_util import FLAVOURS, mpiexec, program
from multi_server import MultiServer
from rfswire import (E, O_APPEND, O_CREAT, O_RDWR, O_TRUNC, O_WRONLY, b_iov, b_path,
                     b_pwrite, b_rename, b_size, b_write_file)

KIB = 1024
QUOTA = 1024 * KIB


@pytest.fixture
def srv(tmp_path):
    s = MultiServer(tmp_path, {"q": "1M", "free": None}, {"alice": "*:rw"})
    yield s
    assert s.stop() == 0, s.proc.stderr.read()[-3000:]


def assert_dquot(rep, what="write"):
    assert rep.status == E["DQUOT"], rep.status
    msg = rep.error().msg
    assert "export q" in msg and f"quota of {QUOTA} bytes" in msg, msg
    return msg


def test_writes_up_to_the_quota_then_dquot_and_nothing_of_it_written(srv):
    f = srv.dirs["q"] / "f.dat"
    data = os.urandom(QUOTA)
    with srv.connect("alice") as c:
        fh = c.open("/q/f.dat", O_RDWR | O_CREAT)
        assert c.pwrite(fh, 0, data[:QUOTA // 2]) == QUOTA // 2
        assert c.pwrite(fh, QUOTA // 2, data[QUOTA // 2:]) == QUOTA // 2   # exactly full
        assert c.pwrite(fh, 100, b"z" * 100) == 100      # rewriting inside the file is free
        msg = assert_dquot(c.call("PWRITE", b_pwrite(fh, QUOTA, b"!")))
        assert "nothing of this request was written" in msg
        # a large write (streamed by rfsd as it arrives) over the quota: none of it lands
        assert_dquot(c.call("PWRITE", b_pwrite(fh, QUOTA - 10, os.urandom(512 * KIB))))
        assert_dquot(c.call("PWRITEV", b_iov(fh, [(0, 10), (QUOTA, 10)], b"y" * 20)))
        assert_dquot(c.call("SET_SIZE", b_size(fh, QUOTA + 1)))
        assert_dquot(c.call("PREALLOCATE", b_size(fh, 2 * QUOTA)))
        # the connection is still in step and the file holds exactly what was acknowledged
        assert c.pread(fh, 0, 16) == data[:16]
        c.close_fh(fh)
        expect = data[:100] + b"z" * 100 + data[200:]
        assert f.read_bytes() == expect
        # df shows the quota: nothing left
        r = srv.rfs("alice", "df", "--json", srv.url("/q"))
        assert r.returncode == 0 and '"total_bytes": %d' % QUOTA in r.stdout, r.stdout + r.stderr
        assert '"avail_bytes": 0' in r.stdout, r.stdout
        # the other export has no quota
        fh = c.open("/free/big.dat", O_WRONLY | O_CREAT)
        assert c.pwrite(fh, 0, os.urandom(2 * QUOTA)) == 2 * QUOTA
        c.close_fh(fh)


def test_delete_truncate_and_replace_free_quota(srv):
    with srv.connect("alice") as c:
        fh = c.open("/q/a.dat", O_WRONLY | O_CREAT)
        assert c.pwrite(fh, 0, b"a" * QUOTA) == QUOTA
        c.close_fh(fh)
        fh = c.open("/q/b.dat", O_WRONLY | O_CREAT)
        assert_dquot(c.call("PWRITE", b_pwrite(fh, 0, b"b")))
        c.call("DELETE", b_path("/q/a.dat")).check()          # frees the whole MiB
        assert c.pwrite(fh, 0, b"b" * (QUOTA // 2)) == QUOTA // 2
        c.call("SET_SIZE", b_size(fh, QUOTA // 4)).check()   # shrinking frees
        assert c.pwrite(fh, QUOTA // 4, b"c" * (3 * QUOTA // 4)) == 3 * QUOTA // 4
        assert_dquot(c.call("PWRITE", b_pwrite(fh, QUOTA, b"!")))
        c.close_fh(fh)
        # reopening with truncation frees the file's bytes
        fh = c.open("/q/b.dat", O_WRONLY | O_TRUNC)
        assert c.pwrite(fh, 0, b"d" * QUOTA) == QUOTA
        c.close_fh(fh)
        # WRITE_FILE replacing b.dat: counted as the difference; over it, the old file stays
        assert_dquot(c.call("WRITE_FILE", b_write_file("/q/b.dat", b"e" * (QUOTA + 1))))
        assert (srv.dirs["q"] / "b.dat").read_bytes() == b"d" * QUOTA
        c.call("WRITE_FILE", b_write_file("/q/b.dat", b"e" * (QUOTA // 2))).check()
        c.call("WRITE_FILE", b_write_file("/q/c.dat", b"f" * (QUOTA // 2))).check()
        assert_dquot(c.call("WRITE_FILE", b_write_file("/q/d.dat", b"g")))
        # renaming c.dat over b.dat frees b.dat's half
        c.call("RENAME", b_rename("/q/c.dat", "/q/b.dat")).check()
        c.call("WRITE_FILE", b_write_file("/q/d.dat", b"g" * (QUOTA // 2))).check()
        assert_dquot(c.call("WRITE_FILE", b_write_file("/q/e.dat", b"h")))
    q = srv.dirs["q"]
    assert sorted(p.name for p in q.iterdir()) == ["b.dat", "d.dat"]
    assert (q / "b.dat").read_bytes() == b"f" * (QUOTA // 2)


def test_append_and_concurrent_writers_of_one_file_are_counted_once(srv):
    with srv.connect("alice") as c1, srv.connect("alice") as c2:
        h1 = c1.open("/q/shared.dat", O_WRONLY | O_CREAT)
        h2 = c2.open("/q/shared.dat", O_WRONLY)
        # two writers fill disjoint halves (as MPI ranks do): the file is 1 MiB, counted once
        assert c2.pwrite(h2, QUOTA // 2, b"2" * (QUOTA // 2)) == QUOTA // 2
        assert c1.pwrite(h1, 0, b"1" * (QUOTA // 2)) == QUOTA // 2
        assert_dquot(c1.call("PWRITE", b_pwrite(h1, QUOTA, b"!")))
        c1.close_fh(h1)
        c2.close_fh(h2)
        c1.call("DELETE", b_path("/q/shared.dat")).check()
        fh = c1.open("/q/log.txt", O_WRONLY | O_CREAT | O_APPEND)
        for _ in range(4):
            assert c1.pwrite(fh, 0, b"L" * (QUOTA // 4)) == QUOTA // 4
        assert_dquot(c1.call("PWRITE", b_pwrite(fh, 0, b"L")))
        c1.close_fh(fh)
    assert (srv.dirs["q"] / "log.txt").stat().st_size == QUOTA


def test_existing_files_are_counted_at_start(tmp_path):
    d = tmp_path / "exports" / "q"
    d.mkdir(parents=True)
    (d / "old.dat").write_bytes(b"o" * (600 * KIB))
    (d / "sub").mkdir()
    (d / "sub" / "old2.dat").write_bytes(b"o" * (300 * KIB))
    (d / "link").symlink_to("/usr")          # not followed: /usr is not counted
    s = MultiServer(tmp_path, {"q": "1M"}, {"alice": "q:rw"})
    try:
        with s.connect("alice") as c:
            fh = c.open("/q/new.dat", O_WRONLY | O_CREAT)
            assert c.pwrite(fh, 0, b"n" * (QUOTA - 900 * KIB)) == QUOTA - 900 * KIB
            assert_dquot(c.call("PWRITE", b_pwrite(fh, QUOTA - 900 * KIB, b"n")))
            c.close_fh(fh)
        assert (d / "new.dat").stat().st_size == QUOTA - 900 * KIB
    finally:
        assert s.stop() == 0


@pytest.mark.mpi
@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_mpiio_write_over_the_quota_is_mpi_err_quota(tmp_path, flavour):
    """t_nospc writes 256 KiB chunks until one fails: the quota of 1 MiB takes 4 of them, the
    fifth fails with MPI_ERR_QUOTA at the write, and the file holds exactly the 4 acknowledged."""
    s = MultiServer(tmp_path, {"q": "1M"}, {"alice": "q:rw"})
    try:
        # At the write itself: the write window (on by default) would report it one call late.
        r = mpiexec(flavour, 1, [program(flavour, "t_nospc"), s.url("/q/m.dat"),
                                 str(256 * KIB), "6"], s.env("alice"),
                    extra_env={"RFS_HINTS": "rfs_write_window=0"})
        out = r.stdout
        acks = [ln for ln in out.splitlines() if ln.startswith("ACK")]
        errs = [ln for ln in out.splitlines() if ln.startswith("ERR")]
        assert r.returncode == 0 and "DONE" in out, out
        assert len(acks) == 4, out
        assert errs and errs[0].split()[2] == "write" and "class=QUOTA" in errs[0], out
        assert "export q" in errs[0] and "quota" in errs[0], errs[0]
        assert (s.dirs["q"] / "m.dat").stat().st_size == QUOTA
    finally:
        assert s.stop() == 0


def test_last_close_counts_what_the_file_really_holds(srv):
    """A file grown behind rfsd's back while it had it open is counted when its last handle
    closes (the reconciliation that also covers failed writes)."""
    f = srv.dirs["q"] / "outside.dat"
    with srv.connect("alice") as c:
        fh = c.open("/q/outside.dat", O_WRONLY | O_CREAT)
        os.truncate(f, 900 * KIB)                    # not through rfsd
        c.close_fh(fh)
        fh = c.open("/q/other.dat", O_WRONLY | O_CREAT)
        assert_dquot(c.call("PWRITE", b_pwrite(fh, 0, b"x" * (200 * KIB))))
        assert c.pwrite(fh, 0, b"x" * (100 * KIB)) == 100 * KIB
        c.close_fh(fh)
        c.call("DELETE", b_path("/q/outside.dat")).check()
        fh = c.open("/q/other.dat", O_WRONLY)
        assert c.pwrite(fh, 100 * KIB, b"y" * (900 * KIB)) == 900 * KIB
        c.close_fh(fh)


def test_view_write_over_the_quota(srv):
    """VIEW_WRITE: the view is mapped before the write to find the highest byte it touches."""
    from test_server_views import STRIDED, set_view   # 8 data bytes in every 16 file bytes
    with srv.connect("alice") as c:
        fh = c.open("/q/view.bin", O_RDWR | O_CREAT)
        set_view(c, fh, 0, 0, STRIDED).check()
        pos = QUOTA // 2 - 8                          # the last tile inside the quota
        rep = c.call("VIEW_WRITE", struct.pack("<IIQ", fh, 0, pos) + b"v" * 8)
        assert rep.u64() == 8
        rep = c.call("VIEW_WRITE", struct.pack("<IIQ", fh, 0, pos) + b"w" * 16)
        assert_dquot(rep)
        c.close_fh(fh)
    d = (srv.dirs["q"] / "view.bin").read_bytes()
    assert len(d) == QUOTA - 4 and d[-12:] == b"vvvv\0\0\0\0vvvv"
