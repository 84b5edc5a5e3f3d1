# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""`rfs put` / `rfs get` are atomic, restartable and verifiable (docs/reliability.md, "rfs put
and rfs get"), against a real rfsd and the real `rfs` binary.

"Mid-transfer" is made deterministic by a link with a byte budget (Link below): it forwards the
first N bytes in one direction and then holds the rest, so the transfer cannot finish; the test
then waits (bounded polling) until a known prefix of the data is on disk and breaks the transfer
by killing rfsd or resetting the link. No test sleeps for a fixed time."""
import glob
import os
import re
import socket
import struct
import subprocess
import threading
import time

import pytest

from conftest import Server, binary
from rfswire import E, O_RDWR, O_WRONLY, b_fh, session


@pytest.fixture(autouse=True)
def no_reconnect(monkeypatch):
    """These cases break a transfer for good (a killed server, a reset link): the client must
    give up at once instead of reconnecting for a minute (recovery is test_reconnect.py)."""
    monkeypatch.setenv("RFS_RETRY_TIMEOUT_MS", "0")

MiB = 1024 * 1024
UNIT = 4 * MiB              # --resume trusts partial files in units of this size
BIG = 64 * MiB + 12345      # not a multiple of any chunk or unit
RFS_TIMEOUT = 120
POLL_LIMIT_S = 60

RESUMED = re.compile(r"resumed (\S+): (\d+) of (\d+) bytes already .* \(verified\), (\d+) (sent|received)")


def rfs(srv, *args, env=None, **kw):
    return subprocess.run([binary("rfs"), *map(str, args)], capture_output=True, text=True,
                          env=env or srv.env(), timeout=RFS_TIMEOUT, **kw)


def rfs_start(srv, *args):
    """A transfer to be broken mid-way. One copying thread (RFS_CLI_DEPTH, a tuning override):
    chunk k+1 leaves only after chunk k is on the server's disk, so once the link holds, a known
    prefix is there. (With several threads the chunks race for the connection and may leave in
    any order: an earlier one can still be missing behind later ones when the link holds, which
    --resume handles but a test cannot wait for.)"""
    env = srv.env()
    env["RFS_CLI_DEPTH"] = "1"
    return subprocess.Popen([binary("rfs"), *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def ok(res):
    assert res.returncode == 0, f"exit {res.returncode}: {res.stderr}"
    return res


def one_line_error(res_or_proc):
    if isinstance(res_or_proc, subprocess.Popen):
        out, err = res_or_proc.communicate(timeout=RFS_TIMEOUT)
        code = res_or_proc.returncode
    else:
        err, code = res_or_proc.stderr, res_or_proc.returncode
    assert code == 1, f"expected exit 1, got {code}: {err!r}"
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {err!r}"
    return lines[0]


def resumed(res):
    m = RESUMED.search(res.stdout)
    assert m, f"no resume summary in {res.stdout!r}"
    kept, total, moved = int(m.group(2)), int(m.group(3)), int(m.group(4))
    assert kept + moved == total and kept % UNIT == 0
    return kept, moved


def poll(cond, what, limit=POLL_LIMIT_S, state=lambda: ""):
    """Waits for cond() to become true: a bounded loop on a state, not a timed sleep."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what} {state()}")


def blockmap(path, data):
    got = open(path, "rb").read() if path else b""
    return "".join("=" if got[k:k + MiB] == data[k:k + MiB] else "x" for k in range(0, len(got), MiB))


def listing(directory):
    return {n: os.path.getsize(os.path.join(str(directory), n)) for n in os.listdir(directory)}


def parts(directory, name):
    return glob.glob(os.path.join(str(directory), f".{name}.rfs-part-*"))


def prefix_on_disk(path_fn, want):
    """cond(): the file named by path_fn() starts with the bytes `want`."""
    def cond():
        p = path_fn()
        if not p:
            return False
        try:
            with open(p, "rb") as f:
                return f.read(len(want)) == want
        except FileNotFoundError:
            return False
    return cond


def only_part(directory, name):
    def get():
        found = parts(directory, name)
        return found[0] if len(found) == 1 else None
    return get


class Link:
    """A forwarding proxy between rfs and rfsd. up_budget / down_budget: bytes forwarded
    client->server / server->client (over all connections) before the link holds that direction;
    flip_up / flip_down: stream offset of a byte to corrupt in that direction (data damaged on
    the way in a way TCP did not catch). release() lifts the budgets; reset() closes every
    connection with an RST."""

    def __init__(self, srv, up_budget=None, down_budget=None, flip_up=None, flip_down=None):
        self.target = (srv.host, srv.port)
        self.budget = {"up": up_budget, "down": down_budget}
        self.flip = {"up": flip_up, "down": flip_down}
        self.used = {"up": 0, "down": 0}
        self.held = threading.Event()
        self.closing = threading.Event()
        self.lk = threading.Lock()
        self.cv = threading.Condition(self.lk)
        self.socks = []
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(64)
        self.port = self.ls.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, path):
        return f"rfs:127.0.0.1:{self.port}:{path}"

    def _accept(self):
        while not self.closing.is_set():
            try:
                c, _ = self.ls.accept()
                s = socket.create_connection(self.target, timeout=10)
            except OSError:
                return
            s.settimeout(None)
            with self.lk:
                self.socks += [c, s]
            threading.Thread(target=self._pump, args=(c, s, "up"), daemon=True).start()
            threading.Thread(target=self._pump, args=(s, c, "down"), daemon=True).start()

    def _take(self, d, want):
        """How many bytes direction d may forward; while its budget is spent, waits (holding
        the direction: nothing is read, as on a stalled path) until release() or reset()."""
        with self.cv:
            while not self.closing.is_set():
                b = self.budget[d]
                n = want if b is None else max(0, min(want, b - self.used[d]))
                if n:
                    return n
                self.held.set()
                self.cv.wait()
            return 0

    def release(self):
        with self.cv:
            self.budget = {"up": None, "down": None}
            self.cv.notify_all()

    def _pump(self, src, dst, d):
        try:
            while not self.closing.is_set():
                n = self._take(d, 1 << 16)
                if n == 0:
                    return
                data = src.recv(n)
                if not data:
                    break
                with self.lk:
                    start = self.used[d]
                    self.used[d] += len(data)
                    at = self.flip[d]
                if at is not None and start <= at < start + len(data):
                    data = bytearray(data)
                    data[at - start] ^= 0x5A
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):  # one side ended: end the other, as a router would
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def reset(self):
        with self.cv:
            self.closing.set()
            self.cv.notify_all()
            socks, self.socks = self.socks, []
        for s in socks:
            # shutdown() first: it wakes a pump blocked in recv() on this socket, which close()
            # alone would not (the blocked call keeps the socket alive, and nothing is sent).
            for step in (lambda: s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                              struct.pack("ii", 1, 0)),
                         lambda: s.shutdown(socket.SHUT_RDWR), s.close):
                try:
                    step()
                except OSError:
                    pass

    def close(self):
        self.reset()
        self.ls.close()


@pytest.fixture
def links():
    made = []

    def make(srv, **kw):
        link = Link(srv, **kw)
        made.append(link)
        return link

    yield make
    for link in made:
        link.close()


def restart(srv):
    """rfsd again on the same export root (after it was killed)."""
    return Server(srv.root, token=srv.token)


def interrupted_put(srv, links, tmp_path, how, name="big.bin", old=None):
    """A put of BIG bytes broken after at least 16 MiB reached the server's disk; returns the
    source, the temporary file on the server and the failed command's error line."""
    src = tmp_path / "src.bin"
    if not src.exists():
        src.write_bytes(os.urandom(BIG))
    if old is not None:
        (srv.root / name).write_bytes(old)
    link = links(srv, up_budget=24 * MiB)
    proc = rfs_start(srv, "put", src, link.url(f"/{name}"))
    data = src.read_bytes()
    poll(prefix_on_disk(only_part(srv.root, name), data[:16 * MiB]), "16 MiB on the server",
         state=lambda: (listing(srv.root), link.used, proc.poll(), blockmap(only_part(srv.root, name)(), data)))
    assert proc.poll() is None, "the put must still be running: the link holds the rest"
    if how == "kill":
        srv.proc.kill()
        srv.proc.wait()
        link.release()  # so the link reads, and passes on, the end of the dead server's stream
    else:
        link.reset()
    line = one_line_error(proc)
    part = only_part(srv.root, name)()
    assert part, os.listdir(srv.root)
    return src, part, line


# ---------------------------------------------------------------- put: atomicity

@pytest.mark.parametrize("how", ["kill", "reset"])
def test_failed_put_keeps_the_previous_file(rfsd, links, tmp_path, how):
    old = os.urandom(3 * MiB + 7)
    src, part, line = interrupted_put(rfsd, links, tmp_path, how, old=old)
    assert "big.bin" in line and "--resume" in line
    assert (rfsd.root / "big.bin").read_bytes() == old
    assert sorted(os.listdir(rfsd.root)) == sorted(["big.bin", os.path.basename(part)])


def test_failed_put_of_a_new_file_leaves_nothing_under_its_name(rfsd, links, tmp_path):
    interrupted_put(rfsd, links, tmp_path, "reset", name="new.bin")
    assert not (rfsd.root / "new.bin").exists()


def test_put_local_read_error_keeps_the_previous_file(rfsd, links, tmp_path):
    (rfsd.root / "d.bin").write_bytes(b"previous")
    src = tmp_path / "d.bin"
    src.write_bytes(os.urandom(BIG))
    link = links(rfsd, up_budget=24 * MiB)
    proc = rfs_start(rfsd, "put", src, link.url("/d.bin"))
    poll(link.held.is_set, "the link to hold")
    os.truncate(src, 20 * MiB)  # the rest of the source can no longer be read
    link.release()
    line = one_line_error(proc)
    assert str(src) in line and "shrank" in line
    assert (rfsd.root / "d.bin").read_bytes() == b"previous"


# ---------------------------------------------------------------- put: --resume

def test_put_resume_sends_only_the_rest(rfsd, links, tmp_path):
    src, part, _ = interrupted_put(rfsd, links, tmp_path, "kill", old=b"old")
    srv = restart(rfsd)
    try:
        res = ok(rfs(srv, "put", "--resume", src, srv.url("/big.bin")))
        kept, sent = resumed(res)
        assert kept >= 16 * MiB and sent < BIG
        assert (srv.root / "big.bin").read_bytes() == src.read_bytes()
        assert parts(srv.root, "big.bin") == []
    finally:
        srv.stop()


def test_put_resume_distrusts_a_tampered_partial_file(rfsd, links, tmp_path):
    src, part, _ = interrupted_put(rfsd, links, tmp_path, "reset")
    with open(part, "r+b") as f:  # one byte of the second unit goes bad on the server
        f.seek(UNIT + 4321)
        b = f.read(1)
        f.seek(UNIT + 4321)
        f.write(bytes([b[0] ^ 1]))
    res = ok(rfs(rfsd, "put", "--resume", "--verify", src, rfsd.url("/big.bin")))
    kept, _ = resumed(res)
    assert kept == UNIT
    assert (rfsd.root / "big.bin").read_bytes() == src.read_bytes()


def test_put_resume_after_the_source_changed_starts_over(rfsd, links, tmp_path):
    src, part, _ = interrupted_put(rfsd, links, tmp_path, "reset")
    with open(src, "r+b") as f:  # same size, new contents and mtime
        f.write(b"changed")
    os.utime(src, ns=(time.time_ns(), time.time_ns() + 10**9))
    res = ok(rfs(rfsd, "put", "--resume", src, rfsd.url("/big.bin")))
    assert resumed(res) == (0, BIG)
    assert (rfsd.root / "big.bin").read_bytes() == src.read_bytes()
    assert os.path.exists(part), "the stale partial file is left for the user to remove"


def test_put_without_resume_rewrites_the_partial_file(rfsd, links, tmp_path):
    src, part, _ = interrupted_put(rfsd, links, tmp_path, "reset")
    res = ok(rfs(rfsd, "put", src, rfsd.url("/big.bin")))
    assert res.stdout == "" and res.stderr == ""
    assert (rfsd.root / "big.bin").read_bytes() == src.read_bytes()
    assert parts(rfsd.root, "big.bin") == []


# ---------------------------------------------------------------- --verify

def test_verify_passes_on_good_transfers(rfsd, tmp_path):
    src = tmp_path / "v.bin"
    src.write_bytes(os.urandom(9 * MiB + 3))
    ok(rfs(rfsd, "put", "--verify", "--streams", "2", src, rfsd.url("/v.bin")))
    assert (rfsd.root / "v.bin").read_bytes() == src.read_bytes()
    dst = tmp_path / "back.bin"
    ok(rfs(rfsd, "get", "--verify", rfsd.url("/v.bin"), dst))
    assert dst.read_bytes() == src.read_bytes()
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    ok(rfs(rfsd, "put", "--verify", empty, rfsd.url("/empty")))
    ok(rfs(rfsd, "get", "--verify", rfsd.url("/empty"), tmp_path / "empty2"))
    assert (tmp_path / "empty2").read_bytes() == b""


# A byte flipped on the way: with frame checksums (the default) the damaged frame is refused
# at once and nothing of it is written; without them (RFS_CHECKSUM=off, or an older server)
# --verify's end-to-end crc32c catches it before the rename. Either way the target keeps its
# old bytes, and --resume repairs the upload.
CAUGHT_BY = {"frame": "checksum mismatch", "verify": "verification failed"}


def first_difference(got, want):
    """The offset of the first byte where got differs from want (len(got) if it is a prefix)."""
    step = 1 << 16
    for at in range(0, len(got), step):
        if got[at:at + step] != want[at:at + step]:
            return next(i for i in range(at, min(at + step, len(got))) if got[i] != want[i:i + 1][0])
    return len(got)


def sums_env(srv, caught_by):
    env = srv.env()
    if caught_by == "verify":
        env["RFS_CHECKSUM"] = "off"
    return env


@pytest.mark.parametrize("caught_by", list(CAUGHT_BY))
def test_put_verify_catches_corruption_and_resume_repairs_it(rfsd, links, tmp_path, caught_by):
    src = tmp_path / "c.bin"
    src.write_bytes(os.urandom(BIG))
    (rfsd.root / "c.bin").write_bytes(b"previous")
    link = links(rfsd, flip_up=40 * MiB + 12345)
    line = one_line_error(rfs(rfsd, "put", "--verify", src, link.url("/c.bin"),
                              env=sums_env(rfsd, caught_by)))
    assert CAUGHT_BY[caught_by] in line and "c.bin" in line
    if caught_by == "verify":
        assert "crc32c" in line
    assert (rfsd.root / "c.bin").read_bytes() == b"previous"
    part = parts(rfsd.root, "c.bin")
    assert len(part) == 1
    # The link counts bytes over all connections, so with several streams the flipped byte's
    # place in the file depends on how the streams interleaved: it is read off the disk.
    got, want = open(part[0], "rb").read(), src.read_bytes()
    first_bad = first_difference(got, want)
    assert 16 * MiB <= first_bad < BIG
    # The damaged unit is found and sent again; the units before it are kept.
    res = ok(rfs(rfsd, "put", "--resume", "--verify", src, rfsd.url("/c.bin")))
    kept, sent = resumed(res)
    assert kept == first_bad // UNIT * UNIT and sent < BIG
    assert (rfsd.root / "c.bin").read_bytes() == src.read_bytes()


@pytest.mark.parametrize("caught_by", list(CAUGHT_BY))
def test_get_verify_catches_corruption(rfsd, links, tmp_path, caught_by):
    data = os.urandom(BIG)
    (rfsd.root / "g.bin").write_bytes(data)
    dst = tmp_path / "g.bin"
    dst.write_bytes(b"previous")
    link = links(rfsd, flip_down=20 * MiB + 99)
    line = one_line_error(rfs(rfsd, "get", "--verify", link.url("/g.bin"), dst,
                              env=sums_env(rfsd, caught_by)))
    assert CAUGHT_BY[caught_by] in line and "g.bin" in line
    assert dst.read_bytes() == b"previous" and parts(tmp_path, "g.bin") == []


# ---------------------------------------------------------------- get

def interrupted_get(srv, links, tmp_path, how, *extra):
    data = os.urandom(BIG)
    (srv.root / "r.bin").write_bytes(data)
    dst = tmp_path / "r.bin"
    dst.write_bytes(b"previous local file")
    link = links(srv, down_budget=24 * MiB)
    proc = rfs_start(srv, "get", *extra, link.url("/r.bin"), dst)
    # Without --resume the temporary name is random: any .r.bin.rfs-part-* is it.
    poll(prefix_on_disk(only_part(tmp_path, "r.bin"), data[:8 * MiB]), "8 MiB received")
    if how == "kill":
        srv.proc.kill()
        srv.proc.wait()
        link.release()  # so the link reads, and passes on, the end of the dead server's stream
    else:
        link.reset()
    one_line_error(proc)
    assert dst.read_bytes() == b"previous local file"
    return data, dst


@pytest.mark.parametrize("how", ["kill", "reset"])
def test_failed_get_leaves_the_destination_untouched(rfsd, links, tmp_path, how):
    interrupted_get(rfsd, links, tmp_path, how)
    assert parts(tmp_path, "r.bin") == []


def test_get_resume_receives_only_the_rest(rfsd, links, tmp_path):
    data, dst = interrupted_get(rfsd, links, tmp_path, "kill", "--resume")
    assert len(parts(tmp_path, "r.bin")) == 1, "--resume keeps its partial file"
    srv = restart(rfsd)
    try:
        res = ok(rfs(srv, "get", "--resume", "--verify", srv.url("/r.bin"), dst))
        kept, received = resumed(res)
        assert kept >= 8 * MiB and received < BIG
        assert dst.read_bytes() == data
        assert parts(tmp_path, "r.bin") == []
    finally:
        srv.stop()


# ---------------------------------------------------------------- the CHECKSUM op on the wire

def crc32c(data, crc=0):
    table = crc32c.table
    c = crc ^ 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ table[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


crc32c.table = [0] * 256
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    crc32c.table[_i] = _c


def b_checksum(fh, off, length, seed=0, algo=1):
    return struct.pack("<IIQQQ", fh, algo, off, length, seed)


def test_checksum_op(rfsd):
    assert crc32c(b"123456789") == 0xE3069283
    data = os.urandom(300000)
    (rfsd.root / "k.bin").write_bytes(data)
    c = session(rfsd)
    try:
        fh = c.open("/k.bin", O_RDWR)
        rep = c.call(25, b_checksum(fh, 1000, 200000)).check()
        algo, covered, value = struct.unpack("<IQQ", rep.body)
        assert (algo, covered, value) == (1, 200000, crc32c(data[1000:201000]))
        # Chained through the seed; short at end of file; empty past it.
        first = crc32c(data[:100])
        rep = c.call(25, b_checksum(fh, 100, 10**6, seed=first)).check()
        assert struct.unpack("<IQQ", rep.body) == (1, len(data) - 100, crc32c(data))
        rep = c.call(25, b_checksum(fh, 10**7, 10, seed=7)).check()
        assert struct.unpack("<IQQ", rep.body) == (1, 0, 7)
        # Limits: over 1 GiB, unknown algorithm, a write-only handle, a closed handle. The
        # connection stays usable after each.
        for body, err in [(b_checksum(fh, 0, (1 << 30) + 1), "TOOBIG"),
                          (b_checksum(fh, 0, 10, algo=2), "INVAL"),
                          (b_checksum(fh, (1 << 63) - 1, 2), "FBIG")]:
            rep = c.call(25, body)
            assert rep.status == E[err], (err, rep.status)
        wo = c.open("/k.bin", O_WRONLY)
        assert c.call(25, b_checksum(wo, 0, 10)).status == E["ACCESS"]
        c.close_fh(wo)
        assert c.call(25, b_checksum(wo, 0, 10)).status == E["BADF"]
        assert c.call(25, b_fh(fh)).status == E["PROTO"]  # truncated body
        assert c.stat("/k.bin")["size"] == len(data)
    finally:
        c.close()


# ---------------------------------------------------------------- the temporary name rule

def fnv1a64(data, h=0xcbf29ce484222325):
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def put_part_name(src, remote_path):
    """docs/reliability.md: FNV-1a 64 of "put", the source's absolute path, size and mtime, and
    the destination's path."""
    st = os.stat(src)
    key = b"put\0" + os.path.realpath(src).encode() + b"\0"
    key += struct.pack("<QQQ", st.st_size, st.st_mtime_ns // 10**9, st.st_mtime_ns % 10**9)
    key += remote_path.encode() + b"\0"
    d, base = os.path.split(remote_path)
    return os.path.join(d, f".{base}.rfs-part-{fnv1a64(key):016x}")


def test_put_resumes_a_partial_file_found_by_its_documented_name(rfsd, tmp_path):
    src = tmp_path / "n.bin"
    src.write_bytes(os.urandom(BIG))
    (rfsd.root / "sub").mkdir()
    part = rfsd.root / put_part_name(src, "/sub/n.bin").lstrip("/")
    part.write_bytes(src.read_bytes()[:-5] + b"XXXXX")  # whole units intact, damaged tail
    res = ok(rfs(rfsd, "put", "--resume", "--streams", "4", src, rfsd.url("/sub/")))
    kept, sent = resumed(res)
    assert (kept, sent) == (BIG // UNIT * UNIT, BIG % UNIT)
    assert (rfsd.root / "sub" / "n.bin").read_bytes() == src.read_bytes()
    assert not part.exists()


def test_put_resume_stops_at_a_hole(rfsd, tmp_path):
    """Chunks sent by several threads may land out of order: a partial file can hold later
    units behind a missing one. Only the units before the hole are kept."""
    src = tmp_path / "h.bin"
    src.write_bytes(os.urandom(BIG))
    data = src.read_bytes()
    part = rfsd.root / put_part_name(src, "/h.bin").lstrip("/")
    part.write_bytes(data[:2 * UNIT] + bytes(UNIT) + data[3 * UNIT:6 * UNIT])
    res = ok(rfs(rfsd, "put", "--resume", src, rfsd.url("/h.bin")))
    assert resumed(res) == (2 * UNIT, BIG - 2 * UNIT)
    assert (rfsd.root / "h.bin").read_bytes() == data
