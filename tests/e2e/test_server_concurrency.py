# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""rfsd concurrency: pipelined requests answered out of order, several clients at once,
per-handle ordering of SYNC/CLOSE, shared counters and byte-range locks across connections,
and SIGTERM with requests in flight. No sleeps: waits are on replies, with timeouts only as
failure bounds."""
import os
import signal
import struct
import threading

from rfswire import rfsd_exits_cleanly  # noqa: F401 (autouse fixture)
from rfswire import (E, LOCK_EXCL, LOCK_SHARED, O_CREAT, O_RDONLY, O_RDWR, Conn, b_counter, b_fh,
                     b_lock, b_pread, b_pwrite, b_unlock, session)


def collect(c, ids):
    """Replies for the given request ids, in whatever order they come."""
    want, got = set(ids), {}
    while want:
        rep = c.recv()
        assert rep.req_id in want, f"unexpected or duplicate reply id {rep.req_id}"
        want.discard(rep.req_id)
        got[rep.req_id] = rep
    return got


def test_100_pipelined_requests(rfsd):
    chunk = 4096
    blocks = [os.urandom(chunk) for _ in range(50)]
    with session(rfsd) as c:
        fh = c.open("/pipe.bin", O_RDWR | O_CREAT)
        writes = {c.send("PWRITE", b_pwrite(fh, i * chunk, b)): i for i, b in enumerate(blocks)}
        pings = {c.send("PING", struct.pack("<I", i)): i for i in range(25)}
        sync = c.send("SYNC", b_fh(fh))
        reads = {c.send("PREAD", b_pread(fh, i * chunk, chunk)): i for i in range(24)}
        got = collect(c, list(writes) + list(pings) + [sync] + list(reads))
        assert len(got) == 100
        for rid, i in writes.items():
            assert got[rid].u64() == chunk
        for rid, i in pings.items():
            assert got[rid].check().body == struct.pack("<I", i)
        got[sync].check()
        # reads were sent after the SYNC barrier, so they see every earlier write
        for rid, i in reads.items():
            assert got[rid].check().body == blocks[i]
        c.close_fh(fh)
    assert (rfsd.root / "pipe.bin").read_bytes() == b"".join(blocks)


def test_close_waits_for_earlier_writes_and_later_requests_see_closed(rfsd):
    with session(rfsd) as c:
        fh = c.open("/order.bin", O_RDWR | O_CREAT)
        ws = [c.send("PWRITE", b_pwrite(fh, i * 65536, bytes([i]) * 65536)) for i in range(30)]
        cl = c.send("CLOSE", b_fh(fh))
        late = c.send("PREAD", b_pread(fh, 0, 10))
        got = collect(c, ws + [cl, late])
        for w in ws:
            assert got[w].u64() == 65536
        got[cl].check()
        assert got[late].status == E["BADF"]
    d = (rfsd.root / "order.bin").read_bytes()
    assert d == b"".join(bytes([i]) * 65536 for i in range(30))


def test_several_clients_concurrently(rfsd):
    errors = []

    def client(k):
        try:
            with session(rfsd) as c:
                fh = c.open(f"/client{k}.bin", O_RDWR | O_CREAT)
                data = bytes([k]) * 100000
                ids = [c.send("PWRITE", b_pwrite(fh, j * len(data), data)) for j in range(10)]
                for rep in collect(c, ids).values():
                    assert rep.u64() == len(data)
                assert c.pread(fh, 3 * len(data), len(data)) == data
                c.close_fh(fh)
        except Exception as e:  # surfaced in the main thread
            errors.append(e)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    for k in range(6):
        assert (rfsd.root / f"client{k}.bin").read_bytes() == bytes([k]) * 1000000


def test_counters_shared_across_connections(rfsd):
    with session(rfsd) as a, session(rfsd) as b:
        fa = a.open("/shared", O_RDWR | O_CREAT)
        fb = b.open("shared", O_RDONLY)
        assert a.call("COUNTER", b_counter(fa, 7, 5)).i64() == 0
        assert b.call("COUNTER", b_counter(fb, 7, 3)).i64() == 5
        assert b.call("COUNTER", b_counter(fb, 8, 1)).i64() == 0     # keys are separate
        assert a.call("COUNTER", b_counter(fa, 7, 100, set_=1)).i64() == 8
        assert b.call("COUNTER", b_counter(fb, 7, -1)).i64() == 100
        # many pipelined increments from both sides: every old value seen exactly once
        ia = [a.send("COUNTER", b_counter(fa, 9, 1)) for _ in range(40)]
        ib = [b.send("COUNTER", b_counter(fb, 9, 1)) for _ in range(40)]
        olds = [r.i64() for r in collect(a, ia).values()] + [r.i64() for r in collect(b, ib).values()]
        assert sorted(olds) == list(range(80))
        a.close_fh(fa)
        assert b.call("COUNTER", b_counter(fb, 7, 0)).i64() == 99   # b still has it open
        b.close_fh(fb)
    with session(rfsd) as c:     # last opener closed: counters are gone
        f = c.open("/shared", O_RDONLY)
        assert c.call("COUNTER", b_counter(f, 7, 0)).i64() == 0


def test_locks_conflict_across_connections(rfsd):
    with session(rfsd) as a, session(rfsd) as b:
        fa = a.open("/locked", O_RDWR | O_CREAT)
        fb = b.open("/locked", O_RDWR)
        a.call("LOCK", b_lock(fa, 0, 100, LOCK_EXCL, 0)).check()
        rep = b.call("LOCK", b_lock(fb, 50, 10, LOCK_SHARED, 0))
        assert rep.status == E["BUSY"] and "locked" in rep.error().msg
        b.call("LOCK", b_lock(fb, 100, 10, LOCK_EXCL, 0)).check()    # adjacent: no overlap
        # bounded wait, still conflicting: BUSY after the wait
        assert b.call("LOCK", b_lock(fb, 0, 1, LOCK_SHARED, 200)).status == E["BUSY"]
        # a waiting LOCK is granted when the holder unlocks
        w = b.send("LOCK", b_lock(fb, 0, 100, LOCK_EXCL, 20000))
        p = b.send("PING", b"queued")      # its reply proves the LOCK was read first
        assert collect(b, [p])[p].check().body == b"queued"
        a.call("UNLOCK", b_unlock(fa, 0, 100)).check()
        assert collect(b, [w])[w].status == 0
        # shared locks coexist
        b.call("UNLOCK", b_unlock(fb, 0, 0)).check()              # len 0: to the end
        a.call("LOCK", b_lock(fa, 0, 10, LOCK_SHARED, 0)).check()
        b.call("LOCK", b_lock(fb, 5, 10, LOCK_SHARED, 0)).check()
        assert b.call("LOCK", b_lock(fb, 0, 1, LOCK_EXCL, 0)).status == E["BUSY"]


def test_partial_unlock_splits(rfsd):
    with session(rfsd) as a, session(rfsd) as b:
        fa = a.open("/split", O_RDWR | O_CREAT)
        fb = b.open("/split", O_RDWR)
        a.call("LOCK", b_lock(fa, 0, 100, LOCK_EXCL, 0)).check()
        a.call("UNLOCK", b_unlock(fa, 40, 20)).check()
        b.call("LOCK", b_lock(fb, 40, 20, LOCK_EXCL, 0)).check()
        assert b.call("LOCK", b_lock(fb, 39, 1, LOCK_EXCL, 0)).status == E["BUSY"]
        assert b.call("LOCK", b_lock(fb, 60, 1, LOCK_EXCL, 0)).status == E["BUSY"]


def test_disconnect_releases_locks(rfsd):
    with session(rfsd) as b:
        fb = b.open("/gone", O_RDWR | O_CREAT)
        a = session(rfsd)
        fa = a.open("/gone", O_RDWR)
        a.call("LOCK", b_lock(fa, 0, 0, LOCK_EXCL, 0)).check()
        assert b.call("LOCK", b_lock(fb, 10, 1, LOCK_SHARED, 0)).status == E["BUSY"]
        w = b.send("LOCK", b_lock(fb, 10, 1, LOCK_EXCL, 20000))
        a.close()                              # no UNLOCK: the server must release
        assert collect(b, [w])[w].status == 0


def test_close_releases_locks(rfsd):
    with session(rfsd) as a, session(rfsd) as b:
        fa = a.open("/cl", O_RDWR | O_CREAT)
        fb = b.open("/cl", O_RDWR)
        a.call("LOCK", b_lock(fa, 0, 10, LOCK_EXCL, 0)).check()
        a.close_fh(fa)
        b.call("LOCK", b_lock(fb, 0, 10, LOCK_EXCL, 0)).check()


def test_sigterm_with_requests_in_flight(rfsd_factory):
    srv = rfsd_factory()
    blocks = [os.urandom(256 * 1024) for _ in range(16)]
    with session(srv) as holder, session(srv) as c:
        fl = holder.open("/lockfile", O_RDWR | O_CREAT)
        holder.call("LOCK", b_lock(fl, 0, 0, LOCK_EXCL, 0)).check()
        fh = c.open("/term.bin", O_RDWR | O_CREAT)
        fw = c.open("/lockfile", O_RDWR)
        waiting = c.send("LOCK", b_lock(fw, 0, 1, LOCK_EXCL, 30000))
        writes = [c.send("PWRITE", b_pwrite(fh, i * len(b), b)) for i, b in enumerate(blocks)]
        marker = c.send("PING", b"read")
        # the PING's reply proves the server read every request before it
        rep = c.recv()
        seen = {}
        while rep.req_id != marker:
            seen[rep.req_id] = rep
            rep = c.recv()
        srv.proc.send_signal(signal.SIGTERM)
        while set(seen) != set(writes) | {waiting}:
            rep = c.recv()
            seen[rep.req_id] = rep
        for w in writes:
            assert seen[w].u64() == len(blocks[0])
        # the waiting LOCK is answered, not dropped: granted if the holder's connection was
        # torn down first (its locks released), else cancelled with BUSY
        assert seen[waiting].status in (0, E["BUSY"])
        assert c.peer_closed()
    assert srv.proc.wait(timeout=20) == 0
    assert (srv.root / "term.bin").read_bytes() == b"".join(blocks)


def test_sigint_idle_exits_zero(rfsd_factory):
    srv = rfsd_factory()
    with session(srv) as c:
        c.open("/idle", O_RDWR | O_CREAT)     # left open: closed by the server on exit
        srv.proc.send_signal(signal.SIGINT)
        assert c.peer_closed()
    assert srv.proc.wait(timeout=20) == 0


def test_handle_limit_per_connection(rfsd):
    (rfsd.root / "h").write_bytes(b"")
    with session(rfsd) as c:
        ids = [c.send("OPEN", struct.pack("<II", O_RDONLY, 0) + struct.pack("<H", 2) + b"/h")
               for _ in range(4100)]
        got = collect(c, ids)
        ok = [r for r in got.values() if r.status == 0]
        full = [r for r in got.values() if r.status == E["NOSPC"]]
        assert len(ok) == 4096 and len(full) == 4
        handles = {struct.unpack("<IQ", r.body)[0] for r in ok}
        assert len(handles) == 4096


def test_overlapping_data_ops_apply_in_arrival_order(rfsd):
    """Rule 3 of the per-handle ordering (docs/design.md): a write, a write over the same bytes
    and a read of them, sent back to back without waiting, are applied in the order sent. A
    LOCK waiting on another client's lock keeps the connection busy, so the 4 MiB write goes
    to a worker instead of being run by the reader itself; without the rule, the small
    overwrite sent after it would land first and then be overwritten, and the read would see
    the first write."""
    big = 4 * 1024 * 1024 - 4096
    with session(rfsd) as c, session(rfsd) as other:
        fh = c.open("/overlap.bin", O_RDWR | O_CREAT)
        busy = c.open("/overlap-lock.bin", O_RDWR | O_CREAT)
        ofh = other.open("/overlap-lock.bin", O_RDWR)
        for rnd in range(10):
            other.call("LOCK", b_lock(ofh, 0, 1, LOCK_EXCL, 0)).check()
            lk = c.send("LOCK", b_lock(busy, 0, 1, LOCK_EXCL, 20000))
            first = bytes([rnd]) * big
            patch = bytes([255 - rnd]) * 4096
            w1 = c.send("PWRITE", b_pwrite(fh, 0, first))
            w2 = c.send("PWRITE", b_pwrite(fh, big - 8192, patch))
            r = c.send("PREAD", b_pread(fh, big - 8192, 8192))
            got = collect(c, [w1, w2, r])
            assert got[w1].u64() == big and got[w2].u64() == 4096
            assert got[r].check().body == patch + bytes([rnd]) * 4096, f"round {rnd}"
            other.call("UNLOCK", b_unlock(ofh, 0, 1)).check()
            collect(c, [lk])[lk].check()
            c.call("UNLOCK", b_unlock(busy, 0, 1)).check()
        c.close_fh(fh)
    d = (rfsd.root / "overlap.bin").read_bytes()
    assert d[:big - 8192] == bytes([9]) * (big - 8192)
    assert d[big - 8192:big - 4096] == bytes([255 - 9]) * 4096
