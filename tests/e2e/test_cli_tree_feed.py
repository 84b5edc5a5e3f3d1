# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""`rfs cp -r` feeds a tree's small files to one whole-file batch while it walks the tree
(cli/tree_feed.c), and lists a level of remote directories at once (rfs_list_many) while it
goes into the first of them. These check what that must not change: every listing whole
(however many pages it takes), every file once and intact, and a server lost half-way ends the
command with an error instead of a hang."""
import os
import re
import signal
import socket
import struct
import subprocess
import threading
import time

from conftest import binary, tree_contents as tree
from rfswire import F_REPLY, HDR, OP


def rfs(srv, *args, timeout=120):
    return subprocess.run([binary("rfs"), *map(str, args)], env=srv.env(), capture_output=True,
                          text=True, timeout=timeout)


def test_get_lists_a_level_at_once_and_long_directories_whole(rfsd, tmp_path):
    """A directory of 2500 entries takes three listing pages (1024 entries each at most), here
    fetched behind one pipelined listing of its level (the rest of its pages on the connection
    that got the first), while the walk already fetches the files of the directories listed."""
    top = rfsd.root / "t"
    for i in range(2500):
        p = top / "a" / f"f{i:04d}"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(i.to_bytes(2, "little") * (i % 7))
    for sub in ("b", "c/x", "c/y"):
        for i in range(3):
            (top / sub).mkdir(parents=True, exist_ok=True)
            (top / sub / f"g{i}").write_bytes(os.urandom(100 + i))
    (top / "e").mkdir()
    back = tmp_path / "back"
    r = rfs(rfsd, "--debug", "cp", "-r", "--streams", "2", rfsd.url("/t"), back)
    assert r.returncode == 0, r.stderr[-3000:]
    assert tree(back) == tree(top)
    sends = [ln for ln in r.stderr.splitlines() if re.search(r"\bsend LIST\b", ln)]
    # t, b, c, e, c/x and c/y come whole in the first reply (LIST_TREE, which skips the long
    # a); a then takes its 3 pages: each directory listed once
    assert r.stderr.count("send LIST_TREE") == 1
    assert len(sends) == 3, "\n".join(sends)
    assert r.stderr.count("send READ_FILE") == 2500 + 9


def test_put_and_get_every_file_once_with_large_ones_beside(rfsd, tmp_path):
    """Small files go through the feed, files over 1 MiB as a put or get each, in one walk."""
    src = tmp_path / "src"
    want = {}
    for i in range(1500):
        p = src / f"d{i % 12}" / f"f{i}"
        p.parent.mkdir(parents=True, exist_ok=True)
        n = (3 << 20) if i % 500 == 7 else i * 13 % 5000
        p.write_bytes(os.urandom(n))
        want[p] = n
    r = rfs(rfsd, "--debug", "cp", "-r", "--streams", "3", src, rfsd.url("/up"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stderr.count("send WRITE_FILE") == 1500 - 3
    assert tree(rfsd.root / "up") == tree(src)
    back = tmp_path / "back"
    r = rfs(rfsd, "cp", "-r", "--streams", "3", rfsd.url("/up"), back)
    assert r.returncode == 0, r.stderr[-3000:]
    assert tree(back) == tree(src)
    assert not [p for d, _, fs in os.walk(back) for p in fs if ".rfs-" in p]


def test_server_lost_half_way_ends_the_copy_with_an_error(rfsd, tmp_path):
    """rfsd killed while a tree is on the wire: the walk must not wait for a feed no connection
    drains; the command ends, non-zero, naming the connection."""
    src = tmp_path / "src"
    for i in range(6000):
        p = src / f"d{i % 20}" / f"f{i}"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(os.urandom(20000))
    env = dict(rfsd.env(), RFS_RETRY_TIMEOUT_MS="0")
    proc = subprocess.Popen([binary("rfs"), "cp", "-r", "--streams", "2", str(src),
                             rfsd.url("/up")], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    arrived = 0
    while time.monotonic() < deadline and proc.poll() is None:
        up = rfsd.root / "up"
        arrived = sum(len(fs) for _, _, fs in os.walk(up)) if up.exists() else 0
        if arrived >= 200:
            break
        time.sleep(0.01)
    assert proc.poll() is None, "the copy ended before the server could be stopped"
    rfsd.stop(signal.SIGKILL)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err[-2000:]
    assert re.search(r"connect|connection|closed|refused|lost", err, re.I), err[-2000:]


FEAT_WPARENTS = 0x0400


class OlderServer:
    """A TCP relay to rfsd that hides a feature (RFS_FEAT_WPARENTS unless told) in its HELLO
    replies: the server as a client of an older rfsd sees it."""

    def __init__(self, srv, hide=FEAT_WPARENTS):
        self.srv = srv
        self.hide = hide
        self.lsock = socket.create_server(("127.0.0.1", 0))
        self.port = self.lsock.getsockname()[1]
        self.hellos = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, path):
        return f"rfs:127.0.0.1:{self.port}:{path}"

    def _accept(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            s = socket.create_connection((self.srv.host, self.srv.port))
            threading.Thread(target=self._pump, args=(c, s), daemon=True).start()
            threading.Thread(target=self._replies, args=(s, c), daemon=True).start()

    @staticmethod
    def _pump(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        for x in (a, b):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _replies(self, s, c):
        try:
            head = b""
            while len(head) < HDR.size:
                d = s.recv(HDR.size - len(head))
                if not d:
                    raise OSError
                head += d
            h = HDR.unpack(head)
            body = b""
            while len(body) < h[7]:
                d = s.recv(h[7] - len(body))
                if not d:
                    raise OSError
                body += d
            if h[2] == OP["HELLO"] and h[3] & F_REPLY and h[6] == 0:
                feats = struct.unpack_from("<H", body, 2)[0]
                body = body[:2] + struct.pack("<H", feats & ~self.hide) + body[4:]
                self.hellos += 1
            c.sendall(head + body)
        except OSError:
            pass
        self._pump(s, c)

    def close(self):
        self.lsock.close()


def test_put_to_an_older_server_makes_the_directories_first(rfsd, tmp_path):
    """Without RFS_FEAT_WPARENTS a tree's directories are all made before its first file goes
    (WRITE_FILE never carries the flag such a server would refuse); with it, files go at once
    and the directories are made beside them. The tree arrives whole either way."""
    src = tmp_path / "src"
    for i in range(300):
        p = src / f"d{i % 6}" / f"s{i % 4}" / f"f{i}"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(os.urandom(i * 11 % 3000))
    (src / "empty" / "deeper").mkdir(parents=True)
    old = OlderServer(rfsd)
    try:
        r = rfs(rfsd, "--debug", "cp", "-r", "--streams", "2", src, old.url("/old"))
    finally:
        old.close()
    assert r.returncode == 0, r.stderr[-3000:]
    assert old.hellos >= 1
    lines = r.stderr.splitlines()
    mk = [i for i, ln in enumerate(lines) if re.search(r"\breply MKDIR\b", ln)]
    wf = [i for i, ln in enumerate(lines) if re.search(r"\bsend WRITE_FILE\b", ln)]
    assert len(wf) == 300 and mk and max(mk) < min(wf)
    assert tree(rfsd.root / "old") == tree(src)
    r = rfs(rfsd, "--debug", "cp", "-r", "--streams", "2", src, rfsd.url("/new"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert tree(rfsd.root / "new") == tree(src)
    assert (rfsd.root / "new" / "empty" / "deeper").is_dir()
