# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Capabilities (docs/security.md "Capabilities", issue #17 item 5): `rfs share` prints a
signed capability for one file and one right; with it and no token, a logical file striped
over two rfsd is read and written through the CLI, the C API (manifest_e2e, the capability in
$RFS_CAP) and MPI-IO (hint rfs_capability), the bytes checked on the servers' disks. Refused,
each with its reason: a wrong right, a wrong file, a tampered string, an unknown issuer, an
expired capability (the server's capability clock moved by --cap-clock-offset-s, no
sleeping), a revoked one (at the home server at once; on a data server when its lease's
window is over, and no new lease is made)."""
import os
import secrets
import subprocess

import pytest

from conftest import Server, binary
from mpiio_util import FLAVOURS, mpiexec, program

TIMEOUT = 60
TOKEN = secrets.token_hex(16)
SS = 64 << 10  # stripe unit: the test files span several per server


def run(args, env, **kw):
    return subprocess.run([str(a) for a in args], env=env, capture_output=True, text=True,
                          timeout=TIMEOUT, **kw)


def export(d):
    (d / "export").mkdir(parents=True)
    return d / "export"


def pubkey(state):
    r = run([binary("rfsd"), "--print-cap-key", "--state-dir", state], os.environ)
    assert r.returncode == 0 and r.stdout.startswith("rfspub1."), r.stderr
    return r.stdout.strip()


class Pair:
    """Home server A (it signs: --state-dir) and data server B (it trusts A's key); a logical
    file striped over both, made with the token."""

    def __init__(self, base):
        self.base = base
        self.state = base / "stateA"
        self.state.mkdir()
        self.pub = pubkey(self.state)  # made on first use, kept for the server below
        quick = ["--auth-backoff-ms", "1"]  # refusals below must not slow the next test down
        self.a = Server(export(base / "a"), token=TOKEN,
                        extra=["--state-dir", str(self.state), *quick])
        self.state_b = base / "stateB"  # B keeps its objects' leases here
        self.state_b.mkdir()
        self.b = Server(export(base / "b"), token=TOKEN,
                        extra=["--cap-trust", self.pub, "--state-dir", str(self.state_b), *quick])
        self.servers = [self.a, self.b]

    def url(self, path, i=0):
        s = self.servers[i]
        return f"rfs://{s.host}:{s.port}{path}"

    def hint(self):
        return ",".join(f"rfs://{s.host}:{s.port}" for s in self.servers)

    def token_env(self):
        return self.a.env()

    def cap_env(self, cap=None):
        e = self.a.env()
        e.pop("RFS_TOKEN", None)
        if cap:
            e["RFS_CAP"] = cap
        return e

    def rfs(self, *args, cap=None, token=False):
        return run([binary("rfs"), *args], self.token_env() if token else self.cap_env(cap))

    def share(self, path, right, *more, i=0):
        r = self.rfs("share", self.url(path, i), f"--{right}", *more, token=True)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    def objects(self, path):
        got = {}
        d, base = os.path.split(path)
        for i, s in enumerate(self.servers):
            folder = s.root / d.lstrip("/")
            if folder.is_dir():
                for f in folder.iterdir():
                    if f.name.startswith(base + ".c"):
                        got[(i, f.name)] = f.read_bytes()
        return got

    def stop(self):
        for s in self.servers:
            s.stop()


def striped(data, base, ss=SS, count=2):
    cols = [bytearray() for _ in range(count)]
    for u in range((len(data) + ss - 1) // ss):
        cols[u % count] += data[u * ss:(u + 1) * ss]
    return {(c, f"{base}.c{c}.r0"): bytes(cols[c]) for c in range(count)}


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    p = Pair(tmp_path_factory.mktemp("share"))
    yield p
    p.stop()


def make_file(pair, tmp_path, path, size=5 * SS + 1234):
    data = os.urandom(size)
    local = tmp_path / "made.bin"
    local.write_bytes(data)
    r = pair.rfs("cp", "--servers", pair.hint(), "--stripe-size", str(SS), local, pair.url(path),
                 token=True)
    assert r.returncode == 0, r.stderr
    assert pair.objects(path) == striped(data, os.path.basename(path))
    return data


def test_read_and_write_with_capabilities_cli_and_c_api(pair, tmp_path):
    path = "/proj/run1.rfsm"
    data = make_file(pair, tmp_path, path)
    read_cap = pair.share(path, "read", "--expires", "1h")
    write_cap = pair.share(path, "write", "--expires", "2h")
    assert read_cap.startswith("rfscap1.") and write_cap.startswith("rfscap1.")
    # CLI read, no token at all: the home server takes the capability, the data server its lease
    out = tmp_path / "out.bin"
    r = pair.rfs("--cap", read_cap, "cp", pair.url(path), out)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == data
    # C API (rfs_io_open_manifest, capability from $RFS_CAP): write new bytes, read them back
    new = os.urandom(7 * SS + 99)
    local = tmp_path / "new.bin"
    local.write_bytes(new)
    w = run([binary("manifest_e2e"), "put", pair.url(path), local], pair.cap_env(write_cap))
    assert w.returncode == 0, w.stdout + w.stderr
    assert pair.objects(path) == striped(new, "run1.rfsm")
    back = tmp_path / "back.bin"
    g = run([binary("manifest_e2e"), "get", pair.url(path), back], pair.cap_env(read_cap))
    assert g.returncode == 0, g.stdout
    assert back.read_bytes() == new
    # the wrong right: a read capability cannot write, and nothing changes
    w = run([binary("manifest_e2e"), "put", pair.url(path), tmp_path / "out.bin"],
            pair.cap_env(read_cap))
    assert w.returncode == 1 and "wrong right" in w.stdout, w.stdout
    assert pair.objects(path) == striped(new, "run1.rfsm")
    # a plain file and rfs put (its temporary renamed over the file) with a write capability
    (pair.a.root / "plain.txt").write_bytes(b"old\n")
    pw = pair.share("/plain.txt", "write")
    src = tmp_path / "p.txt"
    src.write_bytes(b"new contents\n")
    r = pair.rfs("--cap", pw, "put", src, pair.url("/plain.txt"))
    assert r.returncode == 0, r.stderr
    assert (pair.a.root / "plain.txt").read_bytes() == b"new contents\n"


def test_refusals_say_why(pair, tmp_path):
    path = "/proj/run2.rfsm"
    data = make_file(pair, tmp_path, path)
    (pair.a.root / "proj" / "other.txt").write_bytes(b"not shared\n")
    cap = pair.share(path, "read")
    out = tmp_path / "o.bin"
    # the wrong file: another file, another logical file, a directory listing
    r = pair.rfs("--cap", cap, "cat", pair.url("/proj/other.txt"))
    assert r.returncode == 1 and "wrong file" in r.stderr and "not shared" not in r.stdout, r.stderr
    r = pair.rfs("--cap", cap, "ls", pair.url("/proj"))
    assert r.returncode == 1 and "capability" in r.stderr, r.stderr
    # the wrong right on the CLI: a read capability cannot delete or replace
    r = pair.rfs("--cap", cap, "rm", pair.url(path))
    assert r.returncode == 1 and "wrong right" in r.stderr, r.stderr
    assert (pair.a.root / "proj" / "run2.rfsm").exists()
    # tampered: one character of the signed body changed
    i = len("rfscap1.") + 20
    bad = cap[:i] + ("A" if cap[i] != "A" else "B") + cap[i + 1:]
    r = pair.rfs("--cap", bad, "cp", pair.url(path), out)
    assert r.returncode == 1 and ("bad signature" in r.stderr or "malformed" in r.stderr), r.stderr
    r = pair.rfs("--cap", cap[:-10], "cp", pair.url(path), out)
    assert r.returncode == 1 and "capability" in r.stderr, r.stderr
    # a capability (not a lease) shown straight to the data server is refused there
    r = pair.rfs("--cap", cap, "stat", pair.url(path + ".c1.r0", 1))
    assert r.returncode == 1 and "takes only its short leases" in r.stderr, r.stderr
    # the data server takes a lease signed by the home server's key it trusts
    lease = pair.rfs("--cap", cap, "share", "--lease", "--read", pair.url(path))
    assert lease.returncode == 0, lease.stderr
    # a lease reaches the objects only: shown to the home server, not the manifest
    r = pair.rfs("--cap", lease.stdout.strip(), "stat", pair.url(path))
    assert r.returncode == 1 and "wrong file" in r.stderr, r.stderr
    obj = tmp_path / "obj.bin"
    r = pair.rfs("--cap", lease.stdout.strip(), "cp", pair.url(path + ".c1.r0", 1), obj)
    assert r.returncode == 0, r.stderr
    assert obj.read_bytes() == striped(data, "run2.rfsm")[(1, "run2.rfsm.c1.r0")]
    # an issuer nobody trusts: a third server with its own key
    other_state = tmp_path / "stateC"
    other_state.mkdir()
    c = Server(export(tmp_path / "c"), token=TOKEN, extra=["--state-dir", str(other_state)])
    try:
        (c.root / "proj").mkdir()
        (c.root / "proj" / "run2.rfsm").write_bytes(b"x")
        r = run([binary("rfs"), "share", f"rfs://{c.host}:{c.port}{path}", "--read"], c.env())
        assert r.returncode == 0, r.stderr
        foreign = r.stdout.strip()
    finally:
        c.stop()
    r = pair.rfs("--cap", foreign, "cp", pair.url(path), out)
    assert r.returncode == 1 and "unknown issuer" in r.stderr, r.stderr
    # issuing asks for rights: no token and no manage capability, no capability
    r = pair.rfs("--cap", cap, "share", pair.url(path), "--read")
    assert r.returncode == 1 and "manage" in r.stderr, r.stderr
    r = pair.rfs("share", pair.url(path), "--read", "--expires", "@1000", token=True)
    assert r.returncode == 1 and "in the past" in r.stderr, r.stderr


def test_manage_capability_shares_and_revokes(pair, tmp_path):
    path = "/proj/run3.rfsm"
    data = make_file(pair, tmp_path, path)
    manage = pair.share(path, "manage")
    # a manage capability makes capabilities for its file, never for another
    r = pair.rfs("--cap", manage, "share", pair.url(path), "--read", "--expires", "10m")
    assert r.returncode == 0, r.stderr
    reader = r.stdout.strip()
    r = pair.rfs("--cap", manage, "share", pair.url("/proj/run1.rfsm"), "--read")
    assert r.returncode == 1 and "wrong file" in r.stderr, r.stderr
    out = tmp_path / "o.bin"
    r = pair.rfs("--cap", reader, "cp", pair.url(path), out)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == data
    # a lease taken before the revocation: what a running reader holds on the data server
    lease = pair.rfs("--cap", reader, "share", "--lease", "--read", pair.url(path)).stdout.strip()
    assert lease.startswith("rfscap1.")
    # revoked by the manage capability (no token)
    r = pair.rfs("--cap", manage, "share", "--revoke", reader, pair.url(path))
    assert r.returncode == 0, r.stderr
    assert len((pair.state / "cap-revoked").read_text().split()) >= 2  # kept on disk
    r = pair.rfs("--cap", reader, "cp", pair.url(path), out)
    assert r.returncode == 1 and "revoked" in r.stderr, r.stderr
    r = pair.rfs("--cap", reader, "share", "--lease", "--read", pair.url(path))
    assert r.returncode == 1 and "revoked" in r.stderr, r.stderr
    # on the data server the old lease opens connections until its window ends (documented),
    # and not after: a data server whose capability clock is past the lease's end refuses it
    assert pair.rfs("--cap", lease, "stat", pair.url(path + ".c1.r0", 1)).returncode == 0
    late = Server(pair.b.root, token=TOKEN,
                  extra=["--cap-trust", pair.pub, "--cap-clock-offset-s", "301"])
    try:
        r = pair.rfs("--cap", lease, "stat", f"rfs://{late.host}:{late.port}{path}.c1.r0")
        assert r.returncode == 1 and "lease" in r.stderr and "expired" in r.stderr, r.stderr
    finally:
        late.stop()
    # the manage capability itself still works; revoking twice is fine
    r = pair.rfs("--cap", manage, "share", "--revoke", reader, pair.url(path))
    assert r.returncode == 0, r.stderr


def test_expired_capability_refused(pair, tmp_path):
    """The same key and export served by a second home server whose capability clock is two
    hours ahead: a capability for one hour is expired there, fine here."""
    path = "/proj/run4.rfsm"
    make_file(pair, tmp_path, path, size=SS)
    cap = pair.share(path, "read", "--expires", "1h")
    ahead = Server(pair.a.root, token=TOKEN,
                   extra=["--state-dir", str(pair.state), "--cap-clock-offset-s", "7200"])
    try:
        r = pair.rfs("--cap", cap, "stat", f"rfs://{ahead.host}:{ahead.port}{path}")
        assert r.returncode == 1 and "expired" in r.stderr, r.stderr
    finally:
        ahead.stop()
    r = pair.rfs("--cap", cap, "stat", pair.url(path))
    assert r.returncode == 0, r.stderr


@pytest.mark.mpi
@pytest.mark.parametrize("flavour", ["mpich", "openmpi"])
def test_mpiio_with_capability_hint(pair, tmp_path, flavour):
    """t_basic writes and reads back a logical file over both servers with only the hint
    rfs_capability (no token in the environment); the bytes are the MPI library's own."""
    if flavour not in FLAVOURS:
        pytest.skip(f"{flavour} build not found")
    path = f"/proj/mpi-{flavour}.rfsm"
    make_file(pair, tmp_path, path, size=1)
    cap = pair.share(path, "write")
    env = pair.cap_env()
    r = mpiexec(flavour, 2, [program(flavour, "t_basic"), pair.url(path)], env,
                extra_env={"RFS_HINTS": f"rfs_capability={cap}"})
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    local = tmp_path / "ref.dat"
    ref = mpiexec(flavour, 2, [program(flavour, "t_basic"), str(local)], env, preload=False,
                  reference=True)
    assert ref.returncode == 0, ref.stdout
    want = local.read_bytes()
    out = tmp_path / "got.bin"
    g = pair.rfs("--cap", cap, "cp", pair.url(path), out)
    assert g.returncode == 0, g.stderr
    assert out.read_bytes() == want
    assert pair.objects(path) == striped(want, os.path.basename(path))
    # without the hint and without a token, the same program is refused
    r = mpiexec(flavour, 2, [program(flavour, "t_basic"), pair.url(path)], env)
    assert r.returncode != 0


def leases(state):
    """{path: expiry} of a server's object-leases file (hex-encoded fields)."""
    f = state / "object-leases"
    out = {}
    for line in (f.read_text().splitlines() if f.exists() else []):
        t, _export, shown, _rel = line.split()
        out[bytes.fromhex(shown).decode()] = int(t)
    return out


def test_object_leases_refresh_and_reclaim(pair, tmp_path):
    """rfs manifest refresh renews every object's lease on its data server (here with a write
    capability and no token); a data server deletes objects whose lease lapsed only when it
    was started with --reclaim-expired (its clock moved past the lease: no sleeping)."""
    path = "/proj/leased.rfsm"
    make_file(pair, tmp_path, "/proj/unleased.rfsm")
    data = make_file(pair, tmp_path, path)
    reader = pair.share(path, "read")
    r = pair.rfs("--cap", reader, "manifest", "refresh", pair.url(path), "--extend", "1h")
    assert r.returncode == 1 and "wrong right" in r.stderr, r.stderr
    writer = pair.share(path, "write")
    r = pair.rfs("--cap", writer, "manifest", "refresh", pair.url(path), "--extend", "1h")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("leased until") == 2, r.stdout
    on_a, on_b = leases(pair.state), leases(pair.state_b)
    assert list(on_a) == [path + ".c0.r0"] and list(on_b) == [path + ".c1.r0"]
    assert on_a[path + ".c0.r0"] == on_b[path + ".c1.r0"] > 0
    obj_b = pair.b.root / "proj" / "leased.rfsm.c1.r0"
    # past the lease, but reclaiming not enabled: nothing is deleted
    late = Server(pair.b.root, token=TOKEN,
                  extra=["--state-dir", str(pair.state_b), "--cap-clock-offset-s", "7200"])
    late.stop()
    assert obj_b.exists()
    # enabled: the lapsed object goes at start, before the server takes clients
    late = Server(pair.b.root, token=TOKEN,
                  extra=["--state-dir", str(pair.state_b), "--cap-clock-offset-s", "7200",
                         "--reclaim-expired"])
    late.stop()
    assert not obj_b.exists()
    assert path + ".c1.r0" not in leases(pair.state_b)
    # the other server's object and every file without a lease are untouched
    assert (pair.a.root / "proj" / "leased.rfsm.c0.r0").read_bytes() == \
        striped(data, "leased.rfsm")[(0, "leased.rfsm.c0.r0")]
    assert (pair.b.root / "proj" / "unleased.rfsm.c1.r0").exists()


def test_lost_data_server_connection_renews_its_lease(tmp_path):
    """Both servers restart while a reader with a capability is paused, their capability clocks
    now past the lease the reader's object connections were opened with (so that lease is
    refused by the new data server): the reader's recovery asks the home server for a fresh
    lease, and every byte arrives."""
    p = Pair(tmp_path)
    try:
        data = make_file(p, tmp_path, "/r/big.rfsm", size=4 << 20)
        cap = p.share("/r/big.rfsm", "read")
        old_lease = p.rfs("--cap", cap, "share", "--lease", "--read", p.url("/r/big.rfsm")).stdout
        env = p.cap_env(cap)
        env["RFS_RETRY_TIMEOUT_MS"] = "30000"  # this test is about reconnecting
        out = tmp_path / "got.bin"
        reader = subprocess.Popen([binary("manifest_e2e"), "get", p.url("/r/big.rfsm"), str(out),
                                   str(1 << 20)], env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            assert reader.stdout.readline().startswith("open rc=0")
            assert reader.stdout.readline().startswith("size rc=0")
            assert reader.stdout.readline().strip() == "paused"
            ports = [s.port for s in p.servers]
            p.stop()
            later = ["--cap-clock-offset-s", "400"]  # past the default 300 s lease window
            p.a = Server(p.a.root, token=TOKEN, listen=f"127.0.0.1:{ports[0]}",
                         extra=["--state-dir", str(p.state), *later])
            p.b = Server(p.b.root, token=TOKEN, listen=f"127.0.0.1:{ports[1]}",
                         extra=["--cap-trust", p.pub, *later])
            p.servers = [p.a, p.b]
            r = p.rfs("--cap", old_lease.strip(), "stat", p.url("/r/big.rfsm.c1.r0", 1))
            assert r.returncode == 1 and "lease" in r.stderr and "expired" in r.stderr, r.stderr
            rest, _ = reader.communicate("go\n", timeout=TIMEOUT)
        finally:
            if reader.poll() is None:
                reader.kill()
                reader.wait()
        assert reader.returncode == 0, rest
        assert out.read_bytes() == data
    finally:
        p.stop()
