# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""rfsd end to end over raw sockets (rfswire.py): start-up, authentication, file operations.
Every write is checked against the bytes in the server's export root."""
import os
import socket
import struct
import subprocess

import pytest

from conftest import binary
from rfswire import rfsd_exits_cleanly  # noqa: F401 (autouse fixture)
from rfswire import (E, O_APPEND, O_CREAT, O_EXCL, O_RDONLY, O_RDWR, O_TRUNC, O_WRONLY, OP,
                     PRE_HELLO_MAX, TYPE_DIR, TYPE_FILE, Conn, RfsError, b_auth, b_fh, b_iov,
                     b_list, b_mkdir, b_open, b_path, b_pread, b_pwrite, b_rename, b_size,
                     client_mac, frame, parse_list, server_mac, session)


def run_rfsd(*args, timeout=20):
    return subprocess.run([binary("rfsd"), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


# ---- start-up ----

def test_startup_line_names_real_port(rfsd):
    assert rfsd.host == "127.0.0.1" and 0 < rfsd.port < 65536
    with session(rfsd) as c:
        assert c.call("PING", b"hi").check().body == b"hi"


def test_help_exits_zero():
    res = run_rfsd("--help")
    assert res.returncode == 0
    assert "--root" in res.stdout and "--no-auth" in res.stdout


def test_refuses_to_start_without_auth_choice(tmp_path):
    res = run_rfsd("--root", tmp_path, "--listen", "127.0.0.1:0")
    assert res.returncode != 0
    assert "--token-file" in res.stderr and "--no-auth" in res.stderr
    assert "rfsd listening" not in res.stdout


@pytest.mark.parametrize("args,needle", [
    (["--listen", "127.0.0.1:0", "--no-auth"], "--root"),
    (["--root", "/nonexistent-rfs-root", "--no-auth", "--listen", "127.0.0.1:0"], "nonexistent"),
    (["--root", "/tmp", "--no-auth", "--listen", "nocolon"], "HOST:PORT"),
    (["--root", "/tmp", "--no-auth", "--threads", "zero"], "--threads"),
    (["--root", "/tmp", "--no-auth", "--max-frame", "12"], "--max-frame"),
    (["--root", "/tmp", "--no-auth", "--log-level", "loud"], "--log-level"),
    (["--root", "/tmp", "--no-auth", "--bogus"], "--bogus"),
])
def test_bad_command_lines(args, needle):
    res = run_rfsd(*args)
    assert res.returncode != 0
    assert needle in res.stderr


def test_empty_token_file_refused(tmp_path):
    tf = tmp_path / "tok"
    tf.write_text("\n")
    res = run_rfsd("--root", tmp_path, "--listen", "127.0.0.1:0", "--token-file", tf)
    assert res.returncode != 0 and "empty" in res.stderr


def test_ipv6_loopback(tmp_path):
    try:
        s = socket.socket(socket.AF_INET6)
        s.bind(("::1", 0))
        s.close()
    except OSError:
        pytest.skip("no IPv6 loopback here")
    p = subprocess.Popen([binary("rfsd"), "--root", tmp_path, "--listen", "[::1]:0", "--no-auth"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        assert line.startswith("rfsd listening on [::1]:")
        port = int(line.rsplit(":", 1)[1])
        with Conn("::1", port) as c:
            c.handshake()
            assert c.call("PING", b"v6").check().body == b"v6"
    finally:
        p.terminate()
        assert p.wait(timeout=20) == 0


# ---- authentication ----

def test_auth_success_and_server_proves_secret(rfsd):
    with Conn.to(rfsd) as c:
        h = c.hello()
        assert h["auth_required"] == 1 and h["version"] == 1
        assert h["max_frame"] == 4 * 1024 * 1024
        c.auth(rfsd.token, h["nonce"])  # also verifies the server's MAC
        assert c.call("STAT", b_path("/")).check()


def test_hello_announces_views(rfsd):
    with Conn.to(rfsd) as c:
        assert c.hello()["features"] & 1  # RFS_FEAT_VIEWS: this build has dtype/


def test_requests_pipelined_behind_auth(rfsd):
    """AUTH and the frames behind it go out in one write: the server answers AUTH first, then
    serves them (in any order) with the negotiated frame size: a 1 MiB PING is over the
    pre-handshake limit."""
    data = os.urandom(1 << 20)
    with Conn.to(rfsd) as c:
        h = c.hello()
        cn = os.urandom(32)
        secret = rfsd.token.encode()
        burst = (frame(OP["AUTH"], 2, b_auth(cn, client_mac(secret, h["nonce"], cn)))
                 + frame(OP["OPEN"], 3, b_open("/piped", O_RDWR | O_CREAT))
                 + frame(OP["PING"], 4, data))
        c.next_id = 5
        c.send_raw(burst)
        rep = c.recv()
        assert rep.op == OP["AUTH"] and rep.req_id == 2 and rep.status == 0
        assert rep.body == server_mac(secret, h["nonce"], cn)
        reps = {r.req_id: r for r in (c.recv(), c.recv())}
        assert reps[4].check().body == data
        fh = struct.unpack_from("<I", reps[3].check().body)[0]
        c.call("PWRITE", b_pwrite(fh, 0, b"after")).check()
        c.call("CLOSE", b_fh(fh)).check()
    assert (rfsd.root / "piped").read_bytes() == b"after"


def test_nothing_behind_a_failed_auth_is_served(rfsd):
    """A wrong token: the server answers AUTH with an error and closes; the create pipelined
    behind it never happens."""
    with Conn.to(rfsd) as c:
        h = c.hello()
        cn = os.urandom(32)
        c.send_raw(frame(OP["AUTH"], 2, b_auth(cn, client_mac(b"wrong", h["nonce"], cn)))
                   + frame(OP["OPEN"], 3, b_open("/never", O_RDWR | O_CREAT)))
        rep = c.recv()
        assert rep.op == OP["AUTH"] and rep.status == E["AUTH"]
        assert c.peer_closed()
    assert not (rfsd.root / "never").exists()


def test_wrong_token_gets_auth_error_then_close(rfsd):
    with Conn.to(rfsd) as c:
        h = c.hello()
        with pytest.raises(RfsError) as ei:
            c.auth("not-the-token", h["nonce"])
        assert ei.value.status == E["AUTH"]
        assert c.peer_closed()
    with session(rfsd) as c:  # others still served
        assert c.call("PING", b"x").check().body == b"x"


def test_secret_never_on_the_wire(rfsd):
    with Conn.to(rfsd) as c:
        h = c.hello()
        assert rfsd.token.encode() not in h["nonce"]
        rep = c.auth(rfsd.token, h["nonce"])
        assert rfsd.token.encode() not in rep.body


def test_ops_before_auth_refused(rfsd):
    with Conn.to(rfsd) as c:
        rep = c.call("OPEN", b_open("/x", O_RDWR | O_CREAT))
        assert rep.status == E["AUTH"]
        assert c.call("PING", b"pre").check().body == b"pre"  # allowed before auth
        h = c.hello()
        rep = c.call("STAT", b_path("/"))
        assert rep.status == E["AUTH"]
        c.auth(rfsd.token, h["nonce"])
        assert c.call("STAT", b_path("/")).check()
    assert not (rfsd.root / "x").exists()


def test_auth_before_hello_is_protocol_error(rfsd):
    with Conn.to(rfsd) as c:
        rep = c.call("AUTH", b_auth(b"\0" * 32, b"\0" * 32))
        assert rep.status == E["PROTO"]


def test_max_frame_negotiated_to_minimum(rfsd_factory):
    srv = rfsd_factory(extra=["--max-frame", str(256 * 1024)])
    with Conn.to(srv) as c:
        assert c.hello(max_frame=1024 * 1024)["max_frame"] == 256 * 1024
    with Conn.to(srv) as c:
        assert c.hello(max_frame=128 * 1024)["max_frame"] == 128 * 1024


def test_no_auth_server(rfsd_factory):
    srv = rfsd_factory(token=None)
    with Conn.to(srv) as c:
        h = c.hello()
        assert h["auth_required"] == 0
        fh = c.open("/na.bin", O_RDWR | O_CREAT)
        c.pwrite(fh, 0, b"open")
        c.close_fh(fh)
    assert (srv.root / "na.bin").read_bytes() == b"open"


def test_pre_auth_frame_limit(rfsd):
    with Conn.to(rfsd) as c:
        rep = c.call("PING", b"z" * (PRE_HELLO_MAX - 24 + 1))
        assert rep.status == E["TOOBIG"]
        assert c.peer_closed()


# ---- file operations ----

def test_write_read_bytes_on_disk(rfsd):
    data = os.urandom(300000)
    with session(rfsd) as c:
        fh = c.open("/out.h5", O_RDWR | O_CREAT)
        assert c.pwrite(fh, 5, data) == len(data)
        c.call("SYNC", b_fh(fh)).check()
        assert c.call("GET_SIZE", b_fh(fh)).u64() == 5 + len(data)
        assert c.pread(fh, 5, len(data)) == data
        assert c.pread(fh, len(data), 100) == data[-5:]   # short only at EOF
        assert c.pread(fh, 10 ** 9, 10) == b""
        c.close_fh(fh)
    assert (rfsd.root / "out.h5").read_bytes() == b"\0" * 5 + data


def test_large_reads_cross_eof(rfsd):
    """Reads of 64 KiB and more leave the server straight from the file (sendfile)."""
    data = os.urandom((1 << 20) + 123)
    (rfsd.root / "big.bin").write_bytes(data)
    with session(rfsd) as c:
        fh = c.open("/big.bin", O_RDONLY)
        for off, n in [(0, 1 << 20), (1000, 256 << 10), ((1 << 20) - 5000, 256 << 10),
                       (len(data) - 1, 1 << 16), (len(data), 1 << 16), (len(data) + 7, 1 << 20)]:
            assert c.pread(fh, off, n) == data[off:off + n], (off, n)
        assert c.call("PING").status == 0   # the stream stayed in step after every reply
        c.close_fh(fh)


def test_absolute_paths_are_relative_to_root(rfsd):
    (rfsd.root / "run42").mkdir()
    with session(rfsd) as c:
        fh = c.open("/run42/out.h5", O_WRONLY | O_CREAT)
        c.pwrite(fh, 0, b"abc")
        c.close_fh(fh)
        fh = c.open("run42//out.h5", O_RDONLY)
        assert c.pread(fh, 0, 3) == b"abc"
    assert (rfsd.root / "run42" / "out.h5").read_bytes() == b"abc"


def test_list_io_packs_bytes(rfsd):
    (rfsd.root / "v.bin").write_bytes(bytes(range(256)) * 4)
    with session(rfsd) as c:
        fh = c.open("/v.bin", O_RDWR)
        ext = [(10, 5), (100, 3), (0, 2)]
        rep = c.call("PREADV", b_iov(fh, ext)).check()
        assert rep.body == bytes(range(10, 15)) + bytes(range(100, 103)) + bytes([0, 1])
        wext = [(2000, 4), (1024, 2), (1030, 3)]
        assert c.call("PWRITEV", b_iov(fh, wext, b"AAAABBCCC")).u64() == 9
        # a run that crosses EOF ends the packed reply there
        rep = c.call("PREADV", b_iov(fh, [(0, 1), (2002, 10), (5, 1)])).check()
        assert rep.body == b"\x00AA"
        # mismatched data length is refused
        assert c.call("PWRITEV", b_iov(fh, [(0, 4)], b"xy")).status == E["PROTO"]
        c.close_fh(fh)
    d = (rfsd.root / "v.bin").read_bytes()
    assert len(d) == 2004 and d[2000:] == b"AAAA" and d[1024:1026] == b"BB"
    assert d[1030:1033] == b"CCC" and d[1026:1030] == b"\0" * 4 and d[:1024] == bytes(range(256)) * 4


def test_open_flags(rfsd):
    (rfsd.root / "e").write_bytes(b"12345")
    with session(rfsd) as c:
        assert c.call("OPEN", b_open("/e", O_RDWR | O_CREAT | O_EXCL)).status == E["EXIST"]
        assert c.call("OPEN", b_open("/missing", O_RDONLY)).status == E["NOENT"]
        fh = c.open("/e", O_RDONLY)
        rep = c.call("PWRITE", struct.pack("<IQ", fh, 0) + b"x")
        assert rep.status == E["ROFS"]
        assert c.call("SET_SIZE", b_size(fh, 0)).status == E["ROFS"]
        c.close_fh(fh)
        fh = c.open("/e", O_WRONLY | O_APPEND)
        c.pwrite(fh, 0, b"67")
        assert c.call("PREAD", b_pread(fh, 0, 1)).status == E["ACCESS"]
        c.close_fh(fh)
        assert (rfsd.root / "e").read_bytes() == b"1234567"
        fh = c.open("/e", O_RDWR | O_TRUNC)
        assert c.call("GET_SIZE", b_fh(fh)).u64() == 0
        c.close_fh(fh)
        (rfsd.root / "d").mkdir()
        assert c.call("OPEN", b_open("/d", O_RDONLY)).status == E["ISDIR"]
        os.mkfifo(rfsd.root / "fifo")
        assert c.call("OPEN", b_open("/fifo", O_RDONLY)).status == E["INVAL"]
        assert c.call("OPEN", b_open("/x", 0)).status == E["INVAL"]


def test_sizes_and_preallocate(rfsd):
    with session(rfsd) as c:
        fh = c.open("/s", O_RDWR | O_CREAT)
        c.call("SET_SIZE", b_size(fh, 1000)).check()
        assert (rfsd.root / "s").stat().st_size == 1000
        c.call("PREALLOCATE", b_size(fh, 500)).check()  # never shrinks
        assert (rfsd.root / "s").stat().st_size == 1000
        c.call("PREALLOCATE", b_size(fh, 70000)).check()
        assert (rfsd.root / "s").stat().st_size == 70000
        c.call("SET_SIZE", b_size(fh, 10)).check()
        assert c.call("GET_SIZE", b_fh(fh)).u64() == 10
        c.close_fh(fh)
        assert c.call("GET_SIZE", b_fh(fh)).status == E["BADF"]
        assert c.call("CLOSE", b_fh(fh)).status == E["BADF"]


def test_namespace_ops(rfsd):
    with session(rfsd) as c:
        c.call("MKDIR", b_mkdir("/dir", 0o750)).check()
        assert (rfsd.root / "dir").is_dir()
        assert c.call("MKDIR", b_mkdir("/dir")).status == E["EXIST"]
        fh = c.open("/dir/a", O_WRONLY | O_CREAT)
        c.pwrite(fh, 0, b"hello")
        c.close_fh(fh)
        st = c.stat("/dir/a")
        assert st["type"] == TYPE_FILE and st["size"] == 5
        assert c.stat("/dir")["type"] == TYPE_DIR
        assert c.stat("/")["type"] == TYPE_DIR
        c.call("RENAME", b_rename("/dir/a", "/dir/b")).check()
        assert (rfsd.root / "dir" / "b").read_bytes() == b"hello"
        assert c.call("DELETE", b_path("/dir")).status == E["NOTEMPTY"]
        c.call("DELETE", b_path("/dir/b")).check()
        c.call("DELETE", b_path("/dir")).check()
        assert not (rfsd.root / "dir").exists()
        assert c.call("STAT", b_path("/dir")).status == E["NOENT"]
        for bad in ["/", ".", "a/..", "/x/."]:
            assert c.call("DELETE", b_path(bad)).status == E["INVAL"], bad
        assert c.call("MKDIR", b_mkdir("/")).status == E["INVAL"]
    assert rfsd.root.is_dir()


def test_list_paged(rfsd):
    names = {f"f{i:04d}" for i in range(1500)}
    for n in names:
        (rfsd.root / n).write_bytes(b"")
    (rfsd.root / "sub").mkdir()
    with session(rfsd) as c:
        seen, start, pages = {}, 0, 0
        while True:
            rep = c.call("LIST", b_list("/", start)).check()
            entries, nxt = parse_list(rep.body)
            pages += 1
            for e in entries:
                seen[e["name"]] = e
            if nxt == 0:
                break
            assert nxt > start
            start = nxt
        assert pages >= 2
        assert set(seen) == names | {"sub"}
        assert seen["sub"]["type"] == TYPE_DIR and seen["f0001"]["type"] == TYPE_FILE
        assert c.call("LIST", b_list("/f0001")).status == E["NOTDIR"]
        assert c.call("LIST", b_list("/nope")).status == E["NOENT"]


def test_ping_echo_after_auth(rfsd):
    with session(rfsd) as c:
        payload = os.urandom(100000)
        assert c.call("PING", payload).check().body == payload
        assert c.call("PING").check().body == b""
