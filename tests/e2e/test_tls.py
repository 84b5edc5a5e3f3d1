# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""TLS on the wire (docs/security.md "TLS"): rfsd --tls-cert/--tls-key, rfss: names, RFS_TLS,
RFS_TLS_CA, RFS_TLS_PIN and the rfs_tls hint. Certificates are made here with the openssl
command; every server listens on 127.0.0.1 only. Each handshake failure must give one message
naming its cause, with the AUTH error class (not retried, not a lost connection)."""
import fcntl
import os
import resource
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import termios
import threading
import time

import pytest

from conftest import BUILD, REPO, Server, binary
from mpiio_util import mpiexec, program
from rfswire import O_CREAT, O_RDWR, OP, PRE_HELLO_MAX, Conn, b_open, b_pread, frame

sys.path.insert(0, str(REPO / "python"))
os.environ.setdefault("RFS_LIBRARY", str(BUILD / "librfs.so"))
import rfs  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")

RFS_E_AUTH = -4


def ossl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """Two CAs; a server certificate of CA 'ca' for localhost/127.0.0.1; an expired one of the
    same CA; a self-signed one."""
    d = tmp_path_factory.mktemp("pki")
    (d / "ext.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for ca in ("ca", "otherca"):
        ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{ca}.key", "-out",
             f"{ca}.pem", "-days", "30", "-subj", f"/CN=rfs test {ca}", cwd=d)
    ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr",
         "-subj", "/CN=localhost", cwd=d)
    ossl("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
         "-CAcreateserial", "-out", "srv.pem", "-days", "30", "-extfile", "ext.cnf", cwd=d)
    # expired: `openssl ca` is the one that takes explicit validity dates
    (d / "index.txt").write_text("")
    (d / "serial").write_text("1000\n")
    (d / "ca.cnf").write_text(
        "[ca]\ndefault_ca = c\n[c]\ndatabase = index.txt\nnew_certs_dir = .\nserial = serial\n"
        "default_md = sha256\npolicy = p\n[p]\ncommonName = supplied\n")
    ossl("ca", "-batch", "-config", "ca.cnf", "-cert", "ca.pem", "-keyfile", "ca.key", "-in",
         "srv.csr", "-out", "expired.pem", "-notext", "-startdate", "20200101000000Z",
         "-enddate", "20200102000000Z", "-extfile", "ext.cnf", cwd=d)
    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "self.key", "-out",
         "self.pem", "-days", "30", "-subj", "/CN=localhost", "-addext",
         "subjectAltName=DNS:localhost,IP:127.0.0.1", cwd=d)
    (d / "other.cnf").write_text("subjectAltName=DNS:elsewhere.example\n")
    ossl("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
         "-CAcreateserial", "-out", "other.pem", "-days", "30", "-extfile", "other.cnf", cwd=d)
    return d


def fingerprint(pem):
    out = subprocess.run(["openssl", "x509", "-in", str(pem), "-noout", "-fingerprint",
                          "-sha256"], check=True, capture_output=True, text=True).stdout
    return out.strip().split("=", 1)[1]


class TlsServer(Server):
    def url(self, path):
        return f"rfss://{self.host}:{self.port}{path}"


@pytest.fixture
def tls_factory(tmp_path):
    started = []

    def make(cert, key, token=None, extra=(), preexec=None):
        root = tmp_path / f"tls-export{len(started)}"
        root.mkdir()
        s = TlsServer(root, token=token, preexec=preexec,
                      extra=["--tls-cert", str(cert), "--tls-key", str(key), *extra])
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()


@pytest.fixture
def tls_env(monkeypatch):
    for k in ("RFS_TLS", "RFS_TLS_CA", "RFS_TLS_PIN", "RFS_TOKEN", "RFS_TOKEN_FILE"):
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


def cli(srv, *args, **env):
    e = srv.env()
    for k in ("RFS_TLS", "RFS_TLS_CA", "RFS_TLS_PIN"):
        e.pop(k, None)
    e.update({k: str(v) for k, v in env.items()})
    return subprocess.run([binary("rfs"), *args], env=e, capture_output=True, text=True,
                          timeout=60)


def failure(name):
    """The rfs error of a stat on name through librfs (the Python package)."""
    with pytest.raises(rfs.RfsError) as ei:
        rfs.stat(name) if hasattr(rfs, "stat") else rfs.open(name, "rb")
    return ei.value


def test_put_get_with_ca_byte_identical(pki, tls_factory, tmp_path):
    srv = tls_factory(pki / "srv.pem", pki / "srv.key", token="t" * 32)
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(6 * 1024 * 1024 + 12345))
    for host in ("localhost", "127.0.0.1"):  # host name and IP address checks
        name = f"rfss://{host}:{srv.port}/data-{host}.bin"
        r = cli(srv, "put", str(src), name, RFS_TLS_CA=pki / "ca.pem")
        assert r.returncode == 0, r.stderr
        assert (srv.root / f"data-{host}.bin").read_bytes() == src.read_bytes()
        back = tmp_path / f"back-{host}.bin"
        r = cli(srv, "get", name, str(back), RFS_TLS_CA=pki / "ca.pem")
        assert r.returncode == 0, r.stderr
        assert back.read_bytes() == src.read_bytes()
    r = cli(srv, "ls", f"rfss:127.0.0.1:{srv.port}", RFS_TLS_CA=pki / "ca.pem")
    assert r.returncode == 0 and "data-localhost.bin" in r.stdout, r.stderr
    # a host alias from the configuration file, named rfss://
    conf = tmp_path / "rfs.conf"
    conf.write_text(f"[host dtn]\naddress = localhost:{srv.port}\n")
    r = cli(srv, "ls", "rfss://dtn/", RFS_TLS_CA=pki / "ca.pem", RFS_CONFIG=conf)
    assert r.returncode == 0 and "data-localhost.bin" in r.stdout, r.stderr
    # recursive copy: the CLI builds further names from the server string, all over TLS
    r = cli(srv, "cp", "-r", f"rfss://localhost:{srv.port}/", str(tmp_path / "tree"),
            RFS_TLS_CA=pki / "ca.pem")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "tree" / "data-localhost.bin").read_bytes() == src.read_bytes()


def test_pin_and_rfs_tls_env(pki, tls_factory, tmp_path):
    srv = tls_factory(pki / "srv.pem", pki / "srv.key")
    src = tmp_path / "p.bin"
    src.write_bytes(os.urandom(3 * 1024 * 1024))
    # a plain rfs: name with RFS_TLS=1, verified by pin (colon form, as openssl prints it)
    r = cli(srv, "put", str(src), f"rfs://127.0.0.1:{srv.port}/p.bin", RFS_TLS="1",
            RFS_TLS_PIN=fingerprint(pki / "srv.pem"))
    assert r.returncode == 0, r.stderr
    assert (srv.root / "p.bin").read_bytes() == src.read_bytes()


@pytest.mark.nosan  # the Python package loads librfs.so into an uninstrumented interpreter
def test_python_package_over_tls(pki, tls_factory, tls_env):
    srv = tls_factory(pki / "srv.pem", pki / "srv.key")
    tls_env.setenv("RFS_TLS_CA", str(pki / "ca.pem"))
    data = os.urandom(1 << 20)
    with rfs.open(srv.url("/py.bin"), "wb") as f:
        f.write(data)
    with rfs.open(srv.url("/py.bin"), "rb") as f:
        assert f.read() == data
    if rfs.RfssFileSystem is not None:  # fsspec: rfss:// URLs
        import fsspec
        with fsspec.open(f"rfss://127.0.0.1:{srv.port}/py.bin", "rb") as f:
            assert f.read() == data
        fs = fsspec.filesystem("rfss", host="127.0.0.1", port=srv.port)
        assert fs.info("/py.bin")["size"] == len(data)
        assert fs.ls("/", detail=False) == ["/py.bin"]


CASES = ["wrong_ca", "expired", "self_signed", "pin_mismatch", "hostname"]


def failure_case(pki, tls_factory, tls_env, case):
    """Starts the server of a failure case and sets the client's environment; returns the
    server, the host to name and the words the message must contain."""
    cert, key = {"expired": ("expired.pem", "srv.key"), "hostname": ("other.pem", "srv.key"),
                 "self_signed": ("self.pem", "self.key")}.get(case, ("srv.pem", "srv.key"))
    srv = tls_factory(pki / cert, pki / key)
    host = "127.0.0.1"
    if case == "wrong_ca":
        tls_env.setenv("RFS_TLS_CA", str(pki / "otherca.pem"))
        want = "is not signed by a CA in the CA file"
    elif case == "expired":
        tls_env.setenv("RFS_TLS_CA", str(pki / "ca.pem"))
        want = "certificate has expired"
    elif case == "self_signed":
        tls_env.setenv("RFS_TLS_CA", str(pki / "ca.pem"))
        want = "has a self-signed certificate that is not trusted"
    elif case == "pin_mismatch":
        tls_env.setenv("RFS_TLS_PIN", fingerprint(pki / "self.pem"))
        want = "does not match RFS_TLS_PIN"
    else:
        tls_env.setenv("RFS_TLS_CA", str(pki / "ca.pem"))
        want = "certificate is not issued for '127.0.0.1'"
    return srv, host, want


@pytest.mark.nosan
@pytest.mark.parametrize("case", CASES)
def test_handshake_failures_error_class(pki, tls_factory, tls_env, case):
    """Through librfs: the AUTH class (no retry), the message naming the cause."""
    srv, host, want = failure_case(pki, tls_factory, tls_env, case)
    e = failure(f"rfss://{host}:{srv.port}/x")
    assert e.rfs_code == RFS_E_AUTH, str(e)
    assert want in str(e) and "TLS" in str(e), str(e)


@pytest.mark.parametrize("case", CASES)
def test_handshake_failures_one_line(pki, tls_factory, tls_env, case):
    """The rfs command shows the same cause in one line, and rfsd logs why it closed."""
    srv, host, want = failure_case(pki, tls_factory, tls_env, case)
    r = cli(srv, "ls", f"rfss://{host}:{srv.port}/",
            **{k: os.environ[k] for k in ("RFS_TLS_CA", "RFS_TLS_PIN") if k in os.environ})
    assert r.returncode != 0 and want in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_plaintext_client_to_tls_server(pki, tls_factory, tls_env):
    srv = tls_factory(pki / "srv.pem", pki / "srv.key")
    if not os.environ.get("RFS_BUILD_DIR", "").endswith("asan"):
        e = failure(f"rfs://127.0.0.1:{srv.port}/x")
        assert e.rfs_code == RFS_E_AUTH, str(e)
        assert "server requires TLS" in str(e) and "rfss://" in str(e), str(e)
    r = cli(srv, "ls", f"rfs:127.0.0.1:{srv.port}:/")
    assert r.returncode != 0 and "server requires TLS" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_tls_client_to_plaintext_server(rfsd_factory, pki, tls_env):
    srv = rfsd_factory(token=None)
    tls_env.setenv("RFS_TLS_CA", str(pki / "ca.pem"))
    if not os.environ.get("RFS_BUILD_DIR", "").endswith("asan"):
        e = failure(f"rfss://127.0.0.1:{srv.port}/x")
        assert e.rfs_code == RFS_E_AUTH, str(e)
        assert "does not offer TLS" in str(e), str(e)
    r = cli(srv, "ls", f"rfss://127.0.0.1:{srv.port}/", RFS_TLS_CA=pki / "ca.pem")
    assert r.returncode != 0 and "does not offer TLS" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


class Relay:
    """A TCP relay on 127.0.0.1 between a client and rfsd that records every byte."""

    def __init__(self, port):
        self.port_to = port
        self.ls = socket.create_server(("127.0.0.1", 0))
        self.port = self.ls.getsockname()[1]
        self.seen = bytearray()
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _pipe(self, a, b):
        while True:
            try:
                d = a.recv(65536)
            except OSError:
                d = b""
            if not d:
                for s in (a, b):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                return
            with self.lock:
                self.seen += d
            b.sendall(d)

    def _accept(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            s = socket.create_connection(("127.0.0.1", self.port_to))
            threading.Thread(target=self._pipe, args=(c, s), daemon=True).start()
            threading.Thread(target=self._pipe, args=(s, c), daemon=True).start()

    def close(self):
        self.ls.close()


def test_nothing_travels_in_clear(pki, tls_factory, rfsd_factory, tmp_path):
    marker = b"RFS-SECRET-MARKER-" + os.urandom(8).hex().encode()
    src = tmp_path / "m.bin"
    src.write_bytes((marker + b"\n") * 20000 + os.urandom(100000))
    path = "/very-distinctive-path-name-4711.bin"
    token = "k" * 32

    def transfer(srv, scheme, **env):
        relay = Relay(srv.port)
        try:
            name = f"{scheme}://127.0.0.1:{relay.port}{path}"
            r = cli(srv, "put", str(src), name, **env)
            assert r.returncode == 0, r.stderr
            r = cli(srv, "get", name, str(tmp_path / "back.bin"), **env)
            assert r.returncode == 0, r.stderr
            assert (tmp_path / "back.bin").read_bytes() == src.read_bytes()
            with relay.lock:
                return bytes(relay.seen)
        finally:
            relay.close()

    # the relay does see the content and the name on plain TCP: the check below is meaningful
    # uncompressed both ways (RFS_COMPRESS=none: no packed writes, no packed read replies), so
    # "both directions went through" can be judged by size
    plain = transfer(rfsd_factory(token=token), "rfs", RFS_COMPRESS="none")
    assert marker in plain and path.encode() in plain
    tls = transfer(tls_factory(pki / "srv.pem", pki / "srv.key", token=token), "rfss",
                   RFS_TLS_CA=pki / "ca.pem", RFS_COMPRESS="none")
    assert len(tls) > src.stat().st_size * 2  # both directions went through
    assert marker not in tls and path.encode() not in tls and path.encode()[1:20] not in tls
    assert token.encode() not in tls


@pytest.mark.mpi
@pytest.mark.parametrize("how", ["name", "hint"])
def test_mpiio_write_over_tls(pki, tls_factory, tmp_path, how):
    srv = tls_factory(pki / "srv.pem", pki / "srv.key")
    env = srv.env()
    env["RFS_TLS_CA"] = str(pki / "ca.pem")
    prog = program("mpich", "t_coll")
    local = tmp_path / "local.dat"
    r = mpiexec("mpich", 2, [prog, str(local)], env, preload=False, reference=True)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    if how == "name":
        name, extra = srv.url("/coll.dat"), None
    else:
        name, extra = f"rfs:{srv.host}:{srv.port}:/coll.dat", {"RFS_HINTS": "rfs_tls=require"}
    r = mpiexec("mpich", 2, [prog, name], env, extra_env=extra)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    assert (srv.root / "coll.dat").read_bytes() == local.read_bytes()


def test_rfsd_refuses_bad_key_and_missing_half(pki, tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    base = [binary("rfsd"), "--root", str(root), "--listen", "127.0.0.1:0", "--no-auth"]
    r = subprocess.run(base + ["--tls-cert", str(pki / "srv.pem")], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "--tls-cert and --tls-key go together" in r.stderr
    r = subprocess.run(base + ["--tls-cert", str(pki / "srv.pem"), "--tls-key",
                               str(pki / "self.key")], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "does not belong to the certificate" in r.stderr, r.stderr
    conf = tmp_path / "rfsd.conf"
    conf.write_text(f"tls-cert = {pki / 'srv.pem'}\ntls-key = {pki / 'srv.key'}\n")
    srv = Server(root, extra=["--config", str(conf)])
    try:
        e = subprocess.run([binary("rfs"), "ls", f"rfs:127.0.0.1:{srv.port}:/"], env=srv.env(),
                           capture_output=True, text=True, timeout=30)
        assert e.returncode != 0 and "server requires TLS" in e.stderr
    finally:
        srv.stop()


class TlsConn(Conn):
    """rfswire's raw protocol client over TLS (Python's ssl module, not librfs)."""

    def __init__(self, host, port, ca, timeout=15):
        raw = socket.create_connection((host, port), timeout=timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = ssl.create_default_context(cafile=str(ca)).wrap_socket(
            raw, server_hostname=host)
        self.next_id = 1
        self.max_frame = PRE_HELLO_MAX


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def wait_for(cond, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)  # polling a condition, bounded
    return cond()


def unread_bytes(c):
    buf = fcntl.ioctl(c.sock.fileno(), termios.FIONREAD, b"\0\0\0\0")
    return struct.unpack("i", buf)[0]


def test_nonreading_tls_client_does_not_block_others(pki, tls_factory, tmp_path):
    """Two TLS clients pipeline 64 PREADs of 4 MiB each and never read: replies pile up in
    their sockets while an honest TLS put/get is served, and after --send-timeout-ms both are
    dropped (the reply writer's nonblocking sends and timeout work through TLS too)."""
    srv = tls_factory(pki / "srv.pem", pki / "srv.key", token="s" * 32,
                      extra=["--send-timeout-ms", "1000"])
    size = 4 << 20
    with open(srv.root / "big.bin", "wb") as f:
        f.truncate(size)
    idle = fd_count(srv.proc.pid)
    conns = []
    for _ in range(2):
        c = TlsConn(srv.host, srv.port, pki / "ca.pem", timeout=60)
        c.handshake(srv.token, max_frame=size + 4096)
        fh = c.open("/big.bin", O_RDWR)
        c.send_raw(b"".join(frame(OP["PREAD"], 1000 + i, b_pread(fh, 0, size)) for i in range(64)))
        conns.append(c)
    for c in conns:
        assert wait_for(lambda: unread_bytes(c) > 32 << 10)
    src = tmp_path / "h.bin"
    src.write_bytes(os.urandom(1 << 20))
    t0 = time.monotonic()
    r = cli(srv, "put", str(src), srv.url("/h.bin"), RFS_TLS_CA=pki / "ca.pem")
    assert r.returncode == 0, r.stderr
    r = cli(srv, "get", srv.url("/h.bin"), str(tmp_path / "h.back"), RFS_TLS_CA=pki / "ca.pem")
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - t0 < 10
    assert (tmp_path / "h.back").read_bytes() == src.read_bytes()
    assert wait_for(lambda: fd_count(srv.proc.pid) <= idle), (idle, fd_count(srv.proc.pid))
    for c in conns:
        c.close()
    assert srv.stop() == 0
    log = srv.proc.stderr.read()
    assert log.count("read none of its replies for 1000 ms") == 2, log[-3000:]


def test_sigterm_with_tls_clients_connected(pki, tls_factory):
    """TLS connections held open (one after the handshake, one inside a frame, one that never
    finishes its handshake) do not delay SIGTERM: rfsd exits 0 promptly."""
    srv = tls_factory(pki / "srv.pem", pki / "srv.key", token="s" * 32)
    a = TlsConn(srv.host, srv.port, pki / "ca.pem")
    a.handshake(srv.token)
    b = TlsConn(srv.host, srv.port, pki / "ca.pem")
    b.handshake(srv.token)
    b.send_raw(frame(OP["PING"], 7, b"12345678")[:10])  # half a frame
    c = socket.create_connection((srv.host, srv.port))
    c.sendall(b"\x16\x03\x01")  # a ClientHello that stops after three bytes
    t0 = time.monotonic()
    assert srv.stop(timeout=15) == 0
    assert time.monotonic() - t0 < 12
    for s in (a, b):
        s.close()
    c.close()


def test_busy_server_tells_tls_client(pki, tls_factory):
    """Out of descriptors, rfsd answers a new connection "server busy" before any TLS: the TLS
    client recognises the plaintext rfs frame and shows that message (class BUSY), instead of
    a failed handshake."""
    srv = tls_factory(pki / "srv.pem", pki / "srv.key", token="s" * 32,
                      preexec=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256)))
    held = []
    c = TlsConn(srv.host, srv.port, pki / "ca.pem")
    c.handshake(srv.token)
    held.append(c)
    for i in range(300):
        if c.call("OPEN", b_open(f"/fd{i}", O_RDWR | O_CREAT)).status:
            break
    said = ""
    for _ in range(40):  # the reserve of descriptors for new clients runs out
        r = cli(srv, "ls", srv.url("/"), RFS_TLS_CA=pki / "ca.pem")
        if r.returncode != 0:
            said = r.stderr
            break
        try:
            k = TlsConn(srv.host, srv.port, pki / "ca.pem", timeout=10)
            k.handshake(srv.token)
            held.append(k)
        except (ssl.SSLError, OSError):
            pass
    assert "server busy" in said and "refused the connection" in said, said
    assert len(said.strip().splitlines()) == 1, said
    for k in held:
        k.close()


def test_sighup_reloads_certificate(pki, tls_factory, tmp_path):
    """SIGHUP: new connections get the certificate now in the files; a bad file keeps the
    previous one (and rfsd keeps serving)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    shutil.copy(pki / "srv.pem", cert)
    shutil.copy(pki / "srv.key", key)
    srv = tls_factory(cert, key)
    old, new = fingerprint(pki / "srv.pem"), fingerprint(pki / "other.pem")
    assert cli(srv, "ls", srv.url("/"), RFS_TLS_PIN=old).returncode == 0
    shutil.copy(pki / "other.pem", cert)  # same key, another certificate
    srv.proc.send_signal(signal.SIGHUP)
    assert wait_for(lambda: cli(srv, "ls", srv.url("/"), RFS_TLS_PIN=new).returncode == 0)
    r = cli(srv, "ls", srv.url("/"), RFS_TLS_PIN=old)
    assert r.returncode != 0 and "does not match RFS_TLS_PIN" in r.stderr, r.stderr
    cert.write_text("not a certificate\n")
    srv.proc.send_signal(signal.SIGHUP)
    # the broken file is refused and the certificate loaded before stays in use
    assert cli(srv, "ls", srv.url("/"), RFS_TLS_PIN=new).returncode == 0
    assert srv.stop() == 0
    assert "keeping the previous certificate" in srv.proc.stderr.read()
