# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Third-party copy (docs/protocol.md "Third-party copy"): `rfs cp rfs://A/f rfs://B/g` has B pull
the file from A with a one-time grant, so the bytes never cross the client; when B cannot, the
copy streams through the client as before. The tests check the bytes on B's disk, what crossed
the client's network (RFS_STATS), and that refusals and failures leave no file behind."""
import os
import secrets
import signal
import struct
import subprocess
import time
from pathlib import Path

import pytest

from conftest import Server, binary
from rfswire import (E, FEAT_TPC_DST, FEAT_TPC_SRC, O_RDONLY, O_RDWR, TPC_DONE, TPC_RUNNING,
                     Conn, b_open, b_tpc_pull, b_tpc_status, session)

MiB = 1 << 20


@pytest.fixture
def pair(tmp_path):
    """A (source) and B (destination, --tpc on) sharing one token."""
    tok = secrets.token_hex(16)
    started = []

    def make(b_extra=("--tpc", "on"), a_extra=()):
        a_root, b_root = tmp_path / "a" / "export", tmp_path / "b" / "export"
        a_root.mkdir(parents=True)
        b_root.mkdir(parents=True)
        a = Server(a_root, token=tok, extra=a_extra)
        started.append(a)
        b = Server(b_root, token=tok, extra=b_extra)
        started.append(b)
        return a, b

    yield make
    codes = [(s.proc.returncode, s.stop()) for s in started]
    # a server the test did not kill ends cleanly (under ASan: no leak, no error at exit)
    assert all(rc == 0 for before, rc in codes if before is None), codes


def cp(a, *args, stats=True, check=None):
    env = a.env()
    if stats:
        env["RFS_STATS"] = "1"
    r = subprocess.run([binary("rfs"), "cp", "--no-progress", *args], env=env,
                       capture_output=True, text=True, timeout=300)
    if check is not None:
        assert r.returncode == check, r.stderr
    return r


def wire_bytes(stderr):
    line = [ln for ln in stderr.splitlines() if ln.startswith("rfs stats: wire bytes")][-1]
    w = line.split()
    return int(w[5]), int(w[7])


def leftovers(root):
    return sorted(p.name for p in Path(root).iterdir() if ".rfs-" in p.name)


def write_random(path, size, seed):
    rnd = __import__("random").Random(seed)
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 4 * MiB)
            f.write(rnd.randbytes(n))
            left -= n


@pytest.mark.parametrize("size", [0, 1, MiB + 1, 100 * MiB])
def test_bytes_go_server_to_server(pair, size):
    a, b = pair()
    write_random(a.root / "src.bin", size, size)
    r = cp(a, "-v", a.url("/src.bin"), b.url("/dst.bin"), check=0)
    assert "server-to-server copy of %d bytes" % size in r.stderr
    assert (b.root / "dst.bin").read_bytes() == (a.root / "src.bin").read_bytes()
    sent, received = wire_bytes(r.stderr)
    # a few small frames (HELLO, AUTH, the grant, the pull, its status), never the data
    assert sent < 16384 and received < 16384, (sent, received, size)
    assert leftovers(b.root) == []


def test_streaming_fallback_when_destination_has_tpc_off(pair):
    a, b = pair(b_extra=())
    write_random(a.root / "src.bin", 3 * MiB + 5, 7)
    r = cp(a, "-v", a.url("/src.bin"), b.url("/dst.bin"), check=0)
    assert "no server-to-server copy (the destination server does not pull copies: rfsd --tpc " \
        "on enables it); copying through this client" in r.stderr
    assert (b.root / "dst.bin").read_bytes() == (a.root / "src.bin").read_bytes()
    sent, received = wire_bytes(r.stderr)
    assert sent > 3 * MiB and received > 3 * MiB  # the data did come through here
    with Conn.to(b) as c:
        assert not c.hello()["features"] & FEAT_TPC_DST


def test_no_tpc_streams_through_client(pair):
    a, b = pair()
    write_random(a.root / "src.bin", MiB, 8)
    r = cp(a, "-v", "--no-tpc", a.url("/src.bin"), b.url("/dst.bin"), check=0)
    assert "(--no-tpc); copying through this client" in r.stderr
    assert (b.root / "dst.bin").read_bytes() == (a.root / "src.bin").read_bytes()
    assert wire_bytes(r.stderr)[0] > MiB


def test_allow_list_refusal_falls_back(pair):
    a, b = pair(b_extra=("--tpc", "on", "--tpc-allow", "192.0.2.1,example.org:7070"))
    write_random(a.root / "src.bin", 1000, 9)
    r = cp(a, "-v", a.url("/src.bin"), b.url("/dst.bin"), check=0)
    assert f"source {a.host}:{a.port} is not in this server's --tpc-allow list" in r.stderr
    assert (b.root / "dst.bin").read_bytes() == (a.root / "src.bin").read_bytes()


def test_allow_list_match_copies_server_to_server(pair, tmp_path):
    tok = secrets.token_hex(16)
    a_root = tmp_path / "a2" / "export"
    a_root.mkdir(parents=True)
    a = Server(a_root, token=tok)
    b_root = tmp_path / "b2" / "export"
    b_root.mkdir(parents=True)
    b = Server(b_root, token=tok, extra=("--tpc", "on", "--tpc-allow", f"192.0.2.1, {a.host}:{a.port}"))
    try:
        write_random(a.root / "src.bin", 5000, 10)
        r = cp(a, "-v", a.url("/src.bin"), b.url("/dst.bin"), check=0)
        assert "server-to-server copy of 5000 bytes" in r.stderr
        assert (b.root / "dst.bin").read_bytes() == (a.root / "src.bin").read_bytes()
    finally:
        a.stop()
        b.stop()


def test_recursive_directory(pair):
    a, b = pair()
    (a.root / "tree" / "sub" / "deeper").mkdir(parents=True)
    files = {"tree/x.bin": 0, "tree/y.bin": 12345, "tree/sub/z.bin": 2 * MiB + 3,
             "tree/sub/deeper/w.bin": 70000}
    for i, (rel, size) in enumerate(files.items()):
        write_random(a.root / rel, size, 100 + i)
    r = cp(a, "-r", a.url("/tree"), b.url("/copy"), check=0)
    for rel in files:
        got = b.root / rel.replace("tree", "copy", 1)
        assert got.read_bytes() == (a.root / rel).read_bytes(), rel
    sent, received = wire_bytes(r.stderr)
    assert received < 64 * 1024, received  # listings and small frames only


def test_verify(pair):
    a, b = pair()
    write_random(a.root / "src.bin", 9 * MiB + 17, 11)
    r = cp(a, "-v", "--verify", a.url("/src.bin"), b.url("/dst.bin"), check=0)
    assert "(verified)" in r.stderr
    assert (b.root / "dst.bin").read_bytes() == (a.root / "src.bin").read_bytes()


def test_no_clobber_leaves_destination(pair):
    a, b = pair()
    write_random(a.root / "src.bin", 4096, 12)
    (b.root / "dst.bin").write_bytes(b"old contents")
    r = cp(a, "-n", a.url("/src.bin"), b.url("/dst.bin"), check=1)
    assert "exists (not overwritten: no-clobber)" in r.stderr
    assert (b.root / "dst.bin").read_bytes() == b"old contents"
    assert leftovers(b.root) == []
    # and without -n it is replaced
    cp(a, a.url("/src.bin"), b.url("/dst.bin"), check=0)
    assert (b.root / "dst.bin").read_bytes() == (a.root / "src.bin").read_bytes()


def test_missing_source_is_a_clear_error(pair):
    a, b = pair()
    r = cp(a, a.url("/nope.bin"), b.url("/dst.bin"), check=1)
    assert "nope.bin" in r.stderr, r.stderr
    assert list(b.root.iterdir()) == []


# ---- the grant, on the wire ----

def test_grant_is_one_time_and_for_one_path_only(pair):
    a, b = pair()
    (a.root / "f.bin").write_bytes(b"granted bytes")
    (a.root / "other.bin").write_bytes(b"secret")
    with session(a) as c:
        g = c.tpc_grant("/f.bin", uses=1)
    assert g["size"] == 13 and g["ttl_ms"] == 60000
    with Conn.to(a) as c:
        h = c.hello()
        assert h["features"] & FEAT_TPC_SRC
        c.tpc_auth(g["id"], g["key"], h["nonce"]).check()
        fh = c.open("/f.bin", O_RDONLY)
        assert c.pread(fh, 0, 100) == b"granted bytes"
        err = c.call("OPEN", b_open("/other.bin", O_RDONLY)).error()
        assert err.status == E["ACCESS"] and "may only read /f.bin" in err.msg
        err = c.call("OPEN", b_open("/f.bin", O_RDWR)).error()
        assert err.status == E["ACCESS"]
        err = c.call("TPC_GRANT", struct.pack("<I", 1) + struct.pack("<H", 6) + b"/f.bin").error()
        assert err.status == E["ACCESS"]
    with Conn.to(a) as c:  # used once: gone
        h = c.hello()
        err = c.tpc_auth(g["id"], g["key"], h["nonce"]).error()
        assert err.status == E["AUTH"] and "unknown here" in err.msg
        assert c.peer_closed()
    assert (a.root / "f.bin").read_bytes() == b"granted bytes"


def test_wrong_key_is_refused_and_revokes_the_grant(pair):
    a, b = pair()
    (a.root / "f.bin").write_bytes(b"x" * 100)
    with session(a) as c:
        g = c.tpc_grant("/f.bin", uses=2)
    with Conn.to(a) as c:
        h = c.hello()
        err = c.tpc_auth(g["id"], bytes(32), h["nonce"]).error()
        assert err.status == E["AUTH"] and "wrong key" in err.msg
    with Conn.to(a) as c:  # the right key no longer works either
        h = c.hello()
        assert c.tpc_auth(g["id"], g["key"], h["nonce"]).error().status == E["AUTH"]


def test_expired_grant_is_refused(pair):
    a, b = pair(a_extra=("--tpc-grant-ttl-ms", "1"))
    (a.root / "f.bin").write_bytes(b"y" * 100)
    with session(a) as c:
        g = c.tpc_grant("/f.bin")
    made = time.monotonic()
    while time.monotonic() - made < 0.005:  # past the 1 ms lifetime, measured, not guessed
        pass
    with Conn.to(a) as c:
        h = c.hello()
        err = c.tpc_auth(g["id"], g["key"], h["nonce"]).error()
        assert err.status == E["AUTH"] and "expired" in err.msg


def pull_until_done(c, job, limit=10000):
    for _ in range(limit):
        rep = c.call("TPC_STATUS", b_tpc_status(job))
        if rep.status:
            return rep.error()
        state, crc, done, total = struct.unpack("<IIQQ", rep.body)
        assert state in (TPC_RUNNING, TPC_DONE) and done <= total
        if state == TPC_DONE:
            return (crc, total)
        time.sleep(0.005)  # polling a state, bounded by limit
    raise AssertionError("pull never finished")


def test_pull_with_a_bad_key_creates_nothing(pair):
    a, b = pair()
    (a.root / "f.bin").write_bytes(b"z" * 1000)
    (b.root / "dst.bin").write_bytes(b"keep me")
    with session(a) as c:
        g = c.tpc_grant("/f.bin")
    with session(b) as c:
        rep = c.call("TPC_PULL", b_tpc_pull(a.host, a.port, "/f.bin", "/dst.bin", g["id"],
                                            os.urandom(32)))
        job = struct.unpack("<I", rep.check().body)[0]
        err = pull_until_done(c, job)
        assert err.status == E["AUTH"] and "refused the third-party copy grant: third-party " \
            "copy grant refused: wrong key" in err.msg, err.msg
        # and the job is forgotten once reported
        assert c.call("TPC_STATUS", b_tpc_status(job)).error().status == E["NOENT"]
        # a reused grant: g was revoked by the wrong key
        rep = c.call("TPC_PULL", b_tpc_pull(a.host, a.port, "/f.bin", "/new.bin", g["id"],
                                            g["key"]))
        err = pull_until_done(c, struct.unpack("<I", rep.check().body)[0])
        assert err.status == E["AUTH"] and "unknown here" in err.msg
    assert sorted(p.name for p in b.root.iterdir()) == ["dst.bin"]
    assert (b.root / "dst.bin").read_bytes() == b"keep me"


def test_pull_refusals(pair):
    a, b = pair()
    (a.root / "f.bin").write_bytes(b"1")
    (b.root / "d").mkdir()
    with session(b) as c:
        bad = [
            (b_tpc_pull(a.host, a.port, "/f.bin", "/d", bytes(16), bytes(32)), "ISDIR"),
            (b_tpc_pull("a host", a.port, "/f.bin", "/x", bytes(16), bytes(32)), "INVAL"),
            (b_tpc_pull(a.host, 0, "/f.bin", "/x", bytes(16), bytes(32)), "INVAL"),
            (b_tpc_pull(a.host, a.port, "/f.bin", "/x", bytes(16), bytes(32), streams=17), "INVAL"),
            (b_tpc_pull(a.host, a.port, "/f.bin", "/x", bytes(16), bytes(32), flags=4), "INVAL"),
            (b_tpc_pull(a.host, a.port, "/f.bin", "/x", bytes(16), bytes(32), flags=0x100), "INVAL"),
            (b_tpc_pull(a.host, a.port, "/f.bin", "/../x", bytes(16), bytes(32)), "ACCESS"),
        ]
        for body, code in bad:
            err = c.call("TPC_PULL", body).error()
            assert err.status == E[code], (code, err)
    assert sorted(p.name for p in b.root.iterdir()) == ["d"]
    assert list((b.root / "d").iterdir()) == []


def test_pull_is_off_by_default(pair):
    a, b = pair(b_extra=())
    with session(b) as c:
        err = c.call("TPC_PULL", b_tpc_pull(a.host, a.port, "/f", "/x", bytes(16),
                                            bytes(32))).error()
        assert err.status == E["UNSUPPORTED"] and "--tpc on" in err.msg


# ---- failures in the middle ----

def wait_for_partial(root, limit=200000):
    for _ in range(limit):
        parts = [p for p in Path(root).iterdir() if ".rfs-tpc-" in p.name]
        if parts and parts[0].stat().st_size > 0:
            return parts[0]
    raise AssertionError("the pull never started writing")


def test_source_dies_mid_copy_destination_untouched(pair):
    a, b = pair()
    write_random(a.root / "big.bin", 256 * MiB, 13)
    (b.root / "dst.bin").write_bytes(b"previous version")
    env = a.env()
    p = subprocess.Popen([binary("rfs"), "cp", "--no-progress", "--streams", "1",
                          a.url("/big.bin"), b.url("/dst.bin")], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_partial(b.root)
    a.freeze()            # no more bytes come from A ...
    a.proc.kill()         # ... and then it is gone: its connections are reset
    a.proc.wait()
    out, err = p.communicate(timeout=120)
    assert p.returncode == 1, err
    assert f"source {a.host}:{a.port}" in err, err
    assert (b.root / "dst.bin").read_bytes() == b"previous version"
    assert leftovers(b.root) == []


def test_client_killed_mid_copy_pull_stops(pair):
    a, b = pair()
    write_random(a.root / "big.bin", 256 * MiB, 14)
    (b.root / "dst.bin").write_bytes(b"previous version")
    p = subprocess.Popen([binary("rfs"), "cp", "--no-progress", "--streams", "1",
                          a.url("/big.bin"), b.url("/dst.bin")], env=a.env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_partial(b.root)
    a.freeze()  # hold the copy in the middle once it has begun
    try:
        p.kill()
        p.wait()
    finally:
        a.thaw()
    # B notices its client is gone, stops the pull and removes its temporary
    with session(b) as c:
        for _ in range(100000):
            if not leftovers(b.root):
                break
            c.call("PING").check()  # a round trip between looks, not a timer
        else:
            raise AssertionError("the temporary file stayed: %s" % leftovers(b.root))
    assert (b.root / "dst.bin").read_bytes() == b"previous version"


# ---- TLS sources ----

@pytest.mark.skipif(__import__("shutil").which("openssl") is None, reason="needs openssl")
def test_tls_servers_copy_server_to_server(tmp_path):
    """Both servers speak TLS: B verifies A by the pin of the certificate A showed the client."""
    d = tmp_path / "pki"
    d.mkdir()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    "srv.key", "-out", "srv.pem", "-days", "30", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], cwd=d, check=True,
                   capture_output=True)
    pin = subprocess.run(["openssl", "x509", "-in", "srv.pem", "-noout", "-fingerprint",
                          "-sha256"], cwd=d, check=True, capture_output=True,
                         text=True).stdout.strip().split("=", 1)[1]
    tok = secrets.token_hex(16)
    tls = ("--tls-cert", str(d / "srv.pem"), "--tls-key", str(d / "srv.key"))
    roots = []
    for n in ("a", "b"):
        r = tmp_path / n / "export"
        r.mkdir(parents=True)
        roots.append(r)
    a = Server(roots[0], token=tok, extra=tls)
    b = Server(roots[1], token=tok, extra=(*tls, "--tpc", "on"))
    try:
        write_random(a.root / "src.bin", 5 * MiB + 3, 16)
        env = a.env()
        env.update(RFS_STATS="1", RFS_TLS_PIN=pin)
        r = subprocess.run([binary("rfs"), "cp", "--no-progress", "-v", "--verify",
                            f"rfss://{a.host}:{a.port}/src.bin", f"rfss://{b.host}:{b.port}/dst.bin"],
                           env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert "server-to-server copy of %d bytes" % (5 * MiB + 3) in r.stderr
        assert (b.root / "dst.bin").read_bytes() == (a.root / "src.bin").read_bytes()
        assert wire_bytes(r.stderr)[1] < 16384
    finally:
        a.stop()
        b.stop()


def test_audit_names_grant_and_pull(pair, tmp_path):
    a_log, b_log = tmp_path / "a-audit.log", tmp_path / "b-audit.log"
    a, b = pair(a_extra=("--audit-log", str(a_log)),
                b_extra=("--tpc", "on", "--audit-log", str(b_log)))
    write_random(a.root / "src.bin", 10000, 17)
    cp(a, a.url("/src.bin"), b.url("/dst.bin"), check=0)
    grants = [ln for ln in a_log.read_text().splitlines() if "op=TPC_GRANT" in ln]
    assert len(grants) == 1 and 'path="/src.bin"' in grants[0] and "result=ok" in grants[0]
    # B's connections to A authenticated by the grant, reading only that file
    assert "tpc:default" in a_log.read_text()
    pulls = [ln for ln in b_log.read_text().splitlines() if "op=TPC_PULL" in ln]
    assert len(pulls) == 1 and 'path="/dst.bin"' in pulls[0]
    assert f'from_host="{a.host}" from_port={a.port} from="/src.bin"' in pulls[0]
