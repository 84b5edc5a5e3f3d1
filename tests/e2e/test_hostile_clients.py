# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Hostile authenticated clients (issue #21, docs/security.md "Hostile authenticated clients").

Each test runs one attack with a raw protocol client (rfswire.py: well-formed frames, the real
token) against a real rfsd and checks that the server answers the attacker with the documented
error, and that an honest client (the real `rfs` binary) is served within a bound meanwhile.
No test sleeps to wait for something: bounds are timeouts on conditions."""
import fcntl
import os
import resource
import signal
import struct
import subprocess
import termios
import time

import pytest

from conftest import binary
from rfswire import (E, O_CREAT, O_RDWR, OP, Conn, RfsError, b_fh, b_hello, b_lock, b_mkdir,
                     b_open, b_path, b_pread, b_pwrite, b_set_view, b_size, b_view_read,
                     b_view_write, frame, session)

HONEST_BOUND_S = 20  # an honest put/get must finish within this while attackers run


def rfs(srv, *args, timeout=HONEST_BOUND_S, env=None):
    return subprocess.run([binary("rfs"), *map(str, args)], capture_output=True, text=True,
                          env=env or srv.env(), timeout=timeout)


def honest_roundtrip(srv, tmp_path, name="honest.bin", size=1 << 20):
    """`rfs put` then `rfs get` of a fresh file, each within HONEST_BOUND_S; data checked."""
    src, dst = tmp_path / (name + ".src"), tmp_path / (name + ".dst")
    data = os.urandom(size)
    src.write_bytes(data)
    t0 = time.monotonic()
    res = rfs(srv, "put", src, srv.url("/" + name))
    assert res.returncode == 0, res.stderr
    res = rfs(srv, "get", srv.url("/" + name), dst)
    assert res.returncode == 0, res.stderr
    assert dst.read_bytes() == data
    return time.monotonic() - t0


# ---- datatype encodings (docs/datatypes.md), built here from the document ----
NAMED, CONTIGUOUS, VECTOR, HVECTOR, STRUCT = 1, 3, 4, 5, 10


def dt(tree):
    return b"RFDT" + bytes([1, 0, 0, 0]) + struct.pack("<Q", 16 + len(tree)) + tree


def dt_byte():
    return bytes([NAMED]) + struct.pack("<qqqIqq", 1, 0, 1, 1, 0, 1)


def dt_vector(kind, count, bl, stride, kid):
    return bytes([kind]) + struct.pack("<qqq", count, bl, stride) + kid


def dt_struct(bls, disps, kids):
    return (bytes([STRUCT]) + struct.pack("<q", len(bls)) + struct.pack(f"<{len(bls)}q", *bls)
            + struct.pack(f"<{len(disps)}q", *disps) + b"".join(kids))


def issue_attack_type(children=256):
    """The issue's filetype: STRUCT of 256 zero-blocklength VECTOR(2^24, 1, 2) children of
    bytes (16 Mi runs each if expanded) plus one real byte at displacement 7."""
    empty = dt_vector(VECTOR, 1 << 24, 1, 2, dt_byte())
    return dt(dt_struct([0] * children + [1], [0] * children + [7],
                        [empty] * children + [dt_byte()]))


def open_file(c, path):
    return c.open(path, O_RDWR | O_CREAT)


# ---- item 1: bounded work per request ----

def test_struct_of_empty_children_answered_quickly_and_correctly(rfsd, tmp_path):
    """16 connections each set the issue's view (once it held 16 workers for minutes): every
    SET_VIEW is answered, the views are right, and an honest put/get is served meanwhile."""
    enc = issue_attack_type()
    conns, ids = [], []
    for i in range(16):
        c = session(rfsd, timeout=30)
        fh = open_file(c, f"/attack{i}")
        ids.append((c.send("SET_VIEW", b_set_view(fh, 0, 0, enc)), fh))
        conns.append(c)
    honest_roundtrip(rfsd, tmp_path)
    for c, (rid, fh) in zip(conns, ids):
        rep = c.recv()
        assert rep.req_id == rid and rep.status == 0, rep.error()
        # a one-byte filetype at displacement 7 with extent 1: stream bytes land at 7, 8, 9
        assert c.call("VIEW_WRITE", b_view_write(fh, 0, 0, b"abc")).u64() == 3
        assert c.call("VIEW_READ", b_view_read(fh, 0, 1, 2)).check().body == b"bc"
        assert c.pread(fh, 0, 10) == b"\0" * 7 + b"abc"
        c.close()


def test_sigterm_under_flatten_attack(rfsd_factory, tmp_path):
    """Attackers keep every worker flattening fragmented (valid) views; SIGTERM still stops rfsd
    within a bound, because flattening polls the shutdown flag."""
    srv = rfsd_factory()
    frag = dt(dt_vector(HVECTOR, 1 << 19, 1, 2, dt_byte()))  # 512 Ki runs, ~12 MiB flattened
    conns = []
    for i in range(8):
        c = session(srv, timeout=30)
        fh = open_file(c, f"/f{i}")
        for _ in range(32):
            c.send("SET_VIEW", b_set_view(fh, 0, 0, frag))
        conns.append(c)
    # the server is busy: the first reply of each attacker proves its requests are being run
    for c in conns:
        assert c.recv().status in (0, E["BUSY"])
    t0 = time.monotonic()
    srv.proc.send_signal(signal.SIGTERM)
    rc = srv.proc.wait(timeout=10)
    took = time.monotonic() - t0
    assert rc == 0, srv.proc.stderr.read()[-2000:]
    assert took < 10
    for c in conns:
        c.close()


def test_flatten_over_view_memory_is_toobig(rfsd):
    """A type of a trillion runs is refused with TOOBIG naming the connection's view memory
    limit, after flattening no more than that limit allows."""
    with session(rfsd) as c:
        fh = open_file(c, "/big")
        enc = dt(dt_vector(HVECTOR, 1 << 40, 1, 2, dt_byte()))
        rep = c.call("SET_VIEW", b_set_view(fh, 0, 0, enc))
        assert rep.status == E["TOOBIG"], rep.error()
        assert "limit 268435456 bytes" in rep.error().msg and "--max-view-bytes" in rep.error().msg


# ---- item 4: host safety ----

def test_setid_bits_cleared_on_disk(rfsd):
    with session(rfsd) as c:
        for name, mode in (("suid", 0o4755), ("sgid", 0o2755), ("sticky", 0o1755)):
            c.close_fh(c.open("/" + name, O_RDWR | O_CREAT, mode))
            got = os.stat(rfsd.root / name).st_mode & 0o7777
            assert got & 0o7000 == 0, (name, oct(got))
        c.call("MKDIR", b_mkdir("/d", 0o6755)).check()
        got = os.stat(rfsd.root / "d").st_mode & 0o7777
        assert got & 0o6000 == 0, oct(got)


def test_allow_setid_keeps_them(rfsd_factory):
    srv = rfsd_factory(extra=["--allow-setid"])
    with session(srv) as c:
        c.close_fh(c.open("/suid", O_RDWR | O_CREAT, 0o4755))
        assert os.stat(srv.root / "suid").st_mode & 0o4000


def test_reserve_refuses_growth_with_dquot(rfsd_factory, tmp_path):
    """A reserve larger than the disk: PREALLOCATE and SET_SIZE growth get DQUOT naming the
    reserve; shrinking still works and an honest put/get is unaffected."""
    reserve = 1 << 62
    srv = rfsd_factory(extra=["--reserve-bytes", str(reserve)])
    with session(srv) as c:
        fh = c.open("/f", O_RDWR | O_CREAT)
        c.pwrite(fh, 0, b"x" * 4096)
        for op in ("PREALLOCATE", "SET_SIZE"):
            rep = c.call(op, b_size(fh, 1 << 40))
            assert rep.status == E["DQUOT"], (op, rep.status)
            assert f"reserve of {reserve} bytes" in rep.error().msg
        c.call("SET_SIZE", b_size(fh, 10)).check()
        assert os.stat(srv.root / "f").st_size == 10
    honest_roundtrip(srv, tmp_path)


# ---- item 5: authentication hardening ----

def run_rfsd(*args):
    return subprocess.run([binary("rfsd"), *map(str, args)], capture_output=True, text=True,
                          timeout=30)


def test_short_token_refused_at_start(tmp_path):
    tf = tmp_path / "tok"
    tf.write_text("x" * 15 + "\n")
    res = run_rfsd("--root", tmp_path, "--listen", "127.0.0.1:0", "--token-file", tf)
    assert res.returncode == 2
    assert "15 bytes" in res.stderr and "at least 16" in res.stderr and "rfs token" in res.stderr


def test_rfs_token_makes_a_good_token(rfsd_factory, tmp_path):
    toks = [subprocess.run([binary("rfs"), "token"], capture_output=True, text=True,
                           timeout=30, check=True).stdout for _ in range(2)]
    for t in toks:
        assert len(t) == 65 and t.endswith("\n") and int(t, 16) >= 0
    assert toks[0] != toks[1]
    srv = rfsd_factory(token=toks[0].strip())
    honest_roundtrip(srv, tmp_path)


def fail_auth(srv, source):
    """One connection from source that presents a wrong token: AUTH refused and closed."""
    c = session_raw(srv, source)
    h = c.hello()
    with pytest.raises(RfsError) as ei:
        c.auth("wrong-token-wrong-token", h["nonce"])
    assert ei.value.status == E["AUTH"]
    c.close()


def session_raw(srv, source):
    return Conn(srv.host, srv.port, source=source)


def test_auth_failures_back_off_per_address(rfsd_factory, tmp_path):
    """127.0.0.2 fails AUTH repeatedly: after the free attempts it is refused at HELLO, even with
    the right token; 127.0.0.1 (an honest session and `rfs put/get`) is not slowed."""
    srv = rfsd_factory(extra=["--auth-backoff-ms", "60000"])
    early = session_raw(srv, "127.0.0.2")  # said HELLO before the failures began
    early_hello = early.hello()
    for _ in range(4):  # 3 free failures, the 4th starts a 60 s backoff
        fail_auth(srv, "127.0.0.2")
    with pytest.raises(RfsError) as ei:  # even the right token waits, unchecked
        early.auth(srv.token, early_hello["nonce"])
    assert ei.value.status == E["AUTH"] and "retry in" in ei.value.msg
    early.close()
    c = session_raw(srv, "127.0.0.2")
    rep = c.call("HELLO", b_hello())
    assert rep.status == E["AUTH"] and "retry in" in rep.error().msg
    assert c.peer_closed()
    c.close()
    with session(srv) as ok:  # from 127.0.0.1
        assert ok.call("PING", b"x").check().body == b"x"
    honest_roundtrip(srv, tmp_path)
    assert srv.stop() == 0
    log = srv.proc.stderr.read()
    fails = [line for line in log.splitlines() if "authentication failed" in line]
    assert len(fails) == 4 and all("127.0.0.2" in line for line in fails), log[-2000:]


# ---- item 6: client side ----

def test_ls_escapes_control_characters(rfsd):
    """A name made by another client (here: directly on disk) with a terminal escape sequence
    and a line break is shown escaped, as `ls -b` would, never raw."""
    evil = "\x1b[31mred\nfake-line\x07\\x"
    (rfsd.root / evil).write_bytes(b"1")
    (rfsd.root / "caf\u00e9").write_bytes(b"2")
    res = rfs(rfsd, "ls", rfsd.url("/"))
    assert res.returncode == 0, res.stderr
    assert "\x1b" not in res.stdout and "\x07" not in res.stdout
    lines = res.stdout.splitlines()
    assert len(lines) == 2, res.stdout
    assert any(line.endswith("\\e[31mred\\nfake-line\\a\\\\x") for line in lines), res.stdout
    assert any(line.endswith("caf\u00e9") for line in lines), res.stdout  # UTF-8 kept


def test_over_long_names_get_name_error_with_limit(rfsd, tmp_path):
    src = tmp_path / "src"
    src.write_bytes(b"x")
    res = rfs(rfsd, "put", src, rfsd.url("/" + "a" * 256))
    assert res.returncode != 0 and "limit 255" in res.stderr, res.stderr
    res = rfs(rfsd, "put", src, rfsd.url("/" + "b/" * 2100))
    assert res.returncode != 0 and "limit 4095" in res.stderr, res.stderr
    with session(rfsd) as c:  # the server says the same to a raw client
        for op, body in (("OPEN", b_open("/" + "a" * 256, O_RDWR | O_CREAT)),
                         ("MKDIR", b_mkdir("/d/" + "c" * 300)),
                         ("STAT", b_path("/" + "s" * 256))):
            rep = c.call(op, body)
            assert rep.status == E["NAME"], (op, rep.status)
            assert "limit 255" in rep.error().msg


# ---- item 3: per-connection limits, descriptors, memory ----

def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def sanitized(pid):
    return "libasan" in open(f"/proc/{pid}/maps").read()


def wait_for(cond, timeout=15):
    """Bounded polling for a condition (no fixed sleeps)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def test_view_memory_per_connection_and_returned(rfsd_factory, tmp_path):
    """Views of one connection are capped by --max-view-bytes (error names it); another
    connection has its own budget; when the client leaves, rfsd's RSS returns near idle."""
    srv = rfsd_factory(extra=["--max-view-bytes", str(100 << 20)])
    frag = dt(dt_vector(HVECTOR, 1 << 20, 1, 2, dt_byte()))  # 1 Mi runs: ~24 MiB flattened
    idle = rss_kib(srv.proc.pid)
    c = session(srv, timeout=60)
    fh = open_file(c, "/v")
    for slot in range(4):
        c.call("SET_VIEW", b_set_view(fh, slot, 0, frag)).check()
    rep = c.call("SET_VIEW", b_set_view(fh, 4, 0, frag))
    assert rep.status == E["TOOBIG"] and "--max-view-bytes" in rep.error().msg, rep.error()
    with session(srv) as other:  # its own budget
        other.call("SET_VIEW", b_set_view(open_file(other, "/w"), 0, 0, frag)).check()
    assert rss_kib(srv.proc.pid) > idle + 80 * 1024
    honest_roundtrip(srv, tmp_path)
    c.close()
    if sanitized(srv.proc.pid):
        return  # ASan's allocator keeps freed memory in quarantine: RSS says nothing here
    assert wait_for(lambda: rss_kib(srv.proc.pid) < idle + 48 * 1024), \
        (idle, rss_kib(srv.proc.pid))


def test_handles_per_connection_flag(rfsd_factory, tmp_path):
    srv = rfsd_factory(extra=["--max-handles", "8"])
    with session(srv) as c:
        for i in range(8):
            c.open(f"/h{i}", O_RDWR | O_CREAT)
        rep = c.call("OPEN", b_open("/h8", O_RDWR | O_CREAT))
        assert rep.status == E["NOSPC"] and "limit 8" in rep.error().msg
        honest_roundtrip(srv, tmp_path)  # others still open files


def test_locks_per_connection_below_file_cap(rfsd_factory):
    """One connection cannot take a file's whole lock table: it stops at --max-locks, and a
    second client still locks a free range of the same file."""
    srv = rfsd_factory(extra=["--max-locks", "100"])
    with session(srv) as a, session(srv) as b:
        fa = a.open("/locked", O_RDWR | O_CREAT)
        for i in range(100):
            rids = a.send("LOCK", b_lock(fa, 2 * i, 1, 2, 0))
            assert a.recv().status == 0, rids
        rep = a.call("LOCK", b_lock(fa, 1000, 1, 2, 0))
        assert rep.status == E["NOSPC"] and "limit 100" in rep.error().msg
        fb = b.open("/locked", O_RDWR)
        b.call("LOCK", b_lock(fb, 5000, 10, 2, 0)).check()
        a.close_fh(fa)  # releases a's locks and its count
        fa = a.open("/locked", O_RDWR)
        a.call("LOCK", b_lock(fa, 0, 1, 2, 0)).check()


def test_out_of_descriptors_busy_not_hang(rfsd_factory, tmp_path):
    """With a low descriptor limit, clients opening files until refused leave room to accept:
    OPEN gets NOSPC naming the limit, and a new client is answered (served or told busy) at
    HELLO instead of hanging; rfsd keeps serving once files close."""
    srv = rfsd_factory(preexec=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256)))
    attackers = []
    refused = None
    for k in range(4):
        c = session(srv)
        attackers.append(c)
        for i in range(300):
            rep = c.call("OPEN", b_open(f"/fd{k}_{i}", O_RDWR | O_CREAT))
            if rep.status:
                refused = rep
                break
        if refused:
            break
    assert refused is not None and refused.status == E["NOSPC"], refused
    assert "file descriptors" in refused.error().msg
    # new clients are still answered at HELLO: served (the reserve) or told busy
    answered = []
    for _ in range(40):
        c = Conn(srv.host, srv.port, timeout=10)
        rep = c.call("HELLO", b_hello())
        answered.append(rep.status)
        attackers.append(c)
        if rep.status:
            assert rep.status == E["BUSY"] and "server busy" in rep.error().msg
            break
    assert answered[-1] == E["BUSY"], answered  # the reserve ran out: told, not hung
    for c in attackers:
        c.close()
    honest_roundtrip(srv, tmp_path)


# ---- item 2: fair scheduling; item 3: per-address limits ----

HONEST_OP_S = 5  # one honest request, or a short sequence, while an attack runs


def unread_bytes(c):
    """Bytes waiting in c's receive buffer (the replies it has not read)."""
    buf = fcntl.ioctl(c.sock.fileno(), termios.FIONREAD, b"\0\0\0\0")
    return struct.unpack("i", buf)[0]


def honest_raw_ops(srv, n=50, bound=HONEST_OP_S):
    """A raw client opens a file and does n small PWRITE + PREAD round trips, then SYNC and
    CLOSE (which always go to a worker); each step must be answered within bound seconds.
    Returns the slowest step's time."""
    worst = 0.0
    with session(srv, timeout=60) as c:
        t = time.monotonic()
        fh = open_file(c, "/honest_raw")
        worst = max(worst, time.monotonic() - t)
        for i in range(n):
            data = os.urandom(512)
            t = time.monotonic()
            assert c.call("PWRITE", b_pwrite(fh, 4096 * i, data)).u64() == len(data)
            assert c.call("PREAD", b_pread(fh, 4096 * i, len(data))).check().body == data
            worst = max(worst, time.monotonic() - t)
        for op in ("SYNC", "CLOSE"):
            t = time.monotonic()
            c.call(op, b_fh(fh)).check()
            worst = max(worst, time.monotonic() - t)
    assert worst < bound, f"an honest request took {worst:.1f} s while the attack ran"
    return worst


def nonreading_attackers(srv, n, preads=256, size=4 << 20):
    """n connections, each pipelining `preads` PREADs of `size` bytes of one file and never
    reading a reply (issue #21: it made an honest put/get wait > 60 s). Returns them once the
    server has answered so much that every one has replies stuck in its socket."""
    with open(srv.root / "big.bin", "wb") as f:
        f.truncate(size)
    conns = []
    for _ in range(n):
        c = Conn.to(srv, timeout=60)
        c.handshake(srv.token, max_frame=size + 4096)  # as librfs asks: 4 MiB + 4 KiB
        fh = c.open("/big.bin", O_RDWR)
        c.send_raw(b"".join(frame(OP["PREAD"], 1000 + i, b_pread(fh, 0, size))
                            for i in range(preads)))
        conns.append(c)
    for c in conns:  # the attack is on: replies are piling up unread
        assert wait_for(lambda: unread_bytes(c) > 32 << 10, timeout=30)
    return conns


def test_nonreading_pipelined_preads_do_not_starve_others(rfsd, tmp_path):
    """Clients that pipeline 256 PREADs of 4 MiB and never read (enough to hold every worker in
    its send before, for 60 s) hold up only themselves: an honest raw client's small round
    trips and an honest `rfs put`/`rfs get` are served within a few seconds meanwhile."""
    attackers = nonreading_attackers(rfsd, 4)
    honest_raw_ops(rfsd)
    took = honest_roundtrip(rfsd, tmp_path)
    assert took < 2 * HONEST_OP_S, took
    for c in attackers:
        c.close()


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_nonreading_client_dropped_after_send_timeout(rfsd_factory, tmp_path):
    """A client that takes none of its replies for --send-timeout-ms is disconnected (its
    descriptor closed, the log names the option) and the server goes on serving."""
    srv = rfsd_factory(extra=["--send-timeout-ms", "1000"])
    idle = fd_count(srv.proc.pid)
    attackers = nonreading_attackers(srv, 2, preads=64)
    assert fd_count(srv.proc.pid) >= idle + 2
    assert wait_for(lambda: fd_count(srv.proc.pid) <= idle, timeout=30), \
        (idle, fd_count(srv.proc.pid))
    for c in attackers:  # what was sent before the cut is there, then the end of the stream
        c.sock.settimeout(10)
        while c.sock.recv(1 << 20):
            pass
        c.close()
    honest_roundtrip(srv, tmp_path)
    assert srv.stop() == 0
    log = srv.proc.stderr.read()
    assert log.count("read none of its replies for 1000 ms") == 2, log[-3000:]
    assert "--send-timeout-ms" in log


def test_expensive_request_flood_on_many_connections(rfsd, tmp_path):
    """24 connections each pipeline 64 VIEW_READs of 64 KiB through a view of 1-byte runs (a
    pread per byte: tens of ms of a worker each; together far more work than the pool does in
    the bound) and never read. Before, the pool's one FIFO put an honest request behind all of
    them; now each connection holds at most its share of the workers and a free worker serves
    the connection with the fewest running first, so an honest client's requests (OPEN, SYNC
    and CLOSE need a worker) are served within the bound while the flood is still queued."""
    frag = dt(dt_vector(HVECTOR, 1 << 16, 1, 2, dt_byte()))  # 64 Ki one-byte runs
    with open(rfsd.root / "flood.bin", "wb") as f:
        f.truncate(1 << 20)
    conns = []
    for i in range(24):
        c = session(rfsd, timeout=60)
        fh = c.open("/flood.bin", O_RDWR)
        c.call("SET_VIEW", b_set_view(fh, 0, 0, frag)).check()
        c.send_raw(b"".join(frame(OP["VIEW_READ"], 1000 + k, b_view_read(fh, 0, 0, 1 << 16))
                            for k in range(64)))
        conns.append(c)
    honest_raw_ops(rfsd, n=20)
    honest_roundtrip(rfsd, tmp_path)
    # the flood was still running: not every attacker has all its 64 replies
    assert any(unread_bytes(c) < 64 * (24 + (1 << 16)) for c in conns)
    for c in conns:
        c.close()


def test_connections_per_address(rfsd_factory, tmp_path):
    """An address with --max-conns-per-addr connections gets BUSY naming the limit at HELLO;
    other addresses connect; a connection ending makes room again."""
    srv = rfsd_factory(extra=["--max-conns-per-addr", "4"])
    held = [session(srv, source="127.0.0.2") for _ in range(4)]
    extra = session_raw(srv, "127.0.0.2")
    rep = extra.call("HELLO", b_hello())
    assert rep.status == E["BUSY"], rep.status
    msg = rep.error().msg
    assert "127.0.0.2" in msg and "limit 4" in msg and "--max-conns-per-addr" in msg, msg
    extra.close()
    with session(srv) as ok:  # 127.0.0.1
        assert ok.call("PING", b"x").check().body == b"x"
    honest_roundtrip(srv, tmp_path)
    held.pop().close()

    def reconnects():
        c = session_raw(srv, "127.0.0.2")
        try:
            rep = c.call("HELLO", b_hello())
            if rep.status == 0:
                held.append(c)
                return True
            c.close()
            return False
        except (EOFError, OSError):
            c.close()
            return False
    assert wait_for(reconnects)
    for c in held:
        c.close()


def test_open_files_per_address(rfsd_factory, tmp_path):
    """--max-handles-per-addr counts the open files of all connections from one address: the
    one over it gets NOSPC naming the limit, another address still opens, and closing files
    (or a connection ending) makes room."""
    srv = rfsd_factory(extra=["--max-handles-per-addr", "10", "--max-handles", "8"])
    a = session(srv, source="127.0.0.2")
    b = session(srv, source="127.0.0.2")
    fa = [a.open(f"/a{i}", O_RDWR | O_CREAT) for i in range(8)]
    rep = a.call("OPEN", b_open("/a8", O_RDWR | O_CREAT))  # per connection first
    assert rep.status == E["NOSPC"] and "--max-handles)" in rep.error().msg, rep.error()
    fb = [b.open(f"/b{i}", O_RDWR | O_CREAT) for i in range(2)]
    rep = b.call("OPEN", b_open("/b2", O_RDWR | O_CREAT))
    assert rep.status == E["NOSPC"], rep.status
    msg = rep.error().msg
    assert "127.0.0.2" in msg and "limit 10" in msg and "--max-handles-per-addr" in msg, msg
    with session(srv) as other:  # 127.0.0.1 has its own count
        other.close_fh(other.open("/o", O_RDWR | O_CREAT))
    honest_roundtrip(srv, tmp_path)
    a.close_fh(fa.pop())
    fb.append(b.open("/b2", O_RDWR | O_CREAT))
    a.close()  # its 7 files close with it
    assert wait_for(lambda: b.call("OPEN", b_open("/b3", O_RDWR | O_CREAT)).status == 0)
    b.close()
