# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""End-to-end tests of the `rfs` command against a real rfsd (fixtures in conftest.py).

Every transfer is checked byte for byte against the file in the server's export root, and
every failure against its exit status and its one-line message."""
import os
import pty
import re
import resource
import select
import signal
import socket
import stat
import subprocess
import time

import pytest

from conftest import binary

RFS_TIMEOUT = 120  # seconds; a hung command fails the test instead of hanging the run


def rfs(srv, *args, env=None, timeout=RFS_TIMEOUT, **kw):
    e = srv.env() if env is None else env
    return subprocess.run([binary("rfs"), *map(str, args)], capture_output=True, text=True,
                          env=e, timeout=timeout, **kw)


def ok(res):
    assert res.returncode == 0, f"exit {res.returncode}: {res.stderr}"
    return res


def one_line_error(res, status=1):
    assert res.returncode == status, f"expected exit {status}, got {res.returncode}: {res.stderr!r}"
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {res.stderr!r}"
    return lines[0]


def random_file(path, size):
    path.write_bytes(os.urandom(size))
    return path


def leftovers(directory):
    """Temporary files a get may have left behind."""
    return [p for p in os.listdir(directory) if ".rfs-part-" in p]


# ---------------------------------------------------------------- transfers

@pytest.mark.parametrize("size", [0, 1, 4097, 3 * 1024 * 1024 + 17])
def test_put_get_roundtrip(rfsd, tmp_path, size):
    src = random_file(tmp_path / "src.bin", size)
    ok(rfs(rfsd, "put", src, rfsd.url("/data.bin")))
    assert (rfsd.root / "data.bin").read_bytes() == src.read_bytes()
    dst = tmp_path / "dst.bin"
    ok(rfs(rfsd, "get", rfsd.url("/data.bin"), dst))
    assert dst.read_bytes() == src.read_bytes()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("streams", [1, 4])
def test_large_roundtrip(rfsd, tmp_path, streams):
    size = 64 * 1024 * 1024 + 12345  # not a multiple of any chunk or range size
    src = random_file(tmp_path / "big.bin", size)
    ok(rfs(rfsd, "put", "--streams", streams, src, rfsd.url("/big.bin")))
    assert (rfsd.root / "big.bin").read_bytes() == src.read_bytes()
    dst = tmp_path / "back.bin"
    ok(rfs(rfsd, "get", "--streams", streams, rfsd.url("/big.bin"), dst))
    assert dst.read_bytes() == src.read_bytes()


@pytest.mark.parametrize("min_rtt_us,expect", [(None, "1 stream "), ("0", "4 streams ")])
def test_streams_auto_by_round_trip(rfsd, tmp_path, min_rtt_us, expect):
    """--streams auto (the default): one stream on a short path, 4 when the round trip is long
    (forced on loopback with $RFS_STREAMS_AUTO_MIN_RTT_US=0); the bytes are exact either way."""
    env = rfsd.env()
    if min_rtt_us is not None:
        env["RFS_STREAMS_AUTO_MIN_RTT_US"] = min_rtt_us
    size = 32 * 1024 * 1024 + 7
    src = random_file(tmp_path / "a.bin", size)
    res = ok(rfs(rfsd, "put", "-v", src, rfsd.url("/a.bin"), env=env))
    assert f"{expect}(--streams auto)" in res.stderr, res.stderr
    assert (rfsd.root / "a.bin").read_bytes() == src.read_bytes()
    dst = tmp_path / "back.bin"
    res = ok(rfs(rfsd, "get", "-v", "--streams", "auto", rfsd.url("/a.bin"), dst, env=env))
    assert f"{expect}(--streams auto)" in res.stderr, res.stderr
    assert dst.read_bytes() == src.read_bytes()


def test_streams_option_refuses_junk(rfsd, tmp_path):
    src = random_file(tmp_path / "a.bin", 10)
    msg = one_line_error(rfs(rfsd, "put", "--streams", "many", src, rfsd.url("/a.bin")), 2)
    assert "--streams needs auto or a number" in msg


def test_put_truncates_existing_remote_file(rfsd, tmp_path):
    (rfsd.root / "f").write_bytes(b"x" * 100000)
    src = random_file(tmp_path / "small", 10)
    ok(rfs(rfsd, "put", src, rfsd.url("/f")))
    assert (rfsd.root / "f").read_bytes() == src.read_bytes()


def test_put_into_directory_keeps_name(rfsd, tmp_path):
    (rfsd.root / "dir").mkdir()
    src = random_file(tmp_path / "name.bin", 1000)
    ok(rfs(rfsd, "put", src, rfsd.url("/dir/")))
    assert (rfsd.root / "dir" / "name.bin").read_bytes() == src.read_bytes()
    src2 = random_file(tmp_path / "other.bin", 1000)
    ok(rfs(rfsd, "put", src2, rfsd.url("/dir")))
    assert (rfsd.root / "dir" / "other.bin").read_bytes() == src2.read_bytes()


def test_get_into_directory_and_url_forms(rfsd, tmp_path):
    data = os.urandom(5000)
    (rfsd.root / "r.bin").write_bytes(data)
    out = tmp_path / "out"
    out.mkdir()
    ok(rfs(rfsd, "get", rfsd.url("/r.bin"), out))
    assert (out / "r.bin").read_bytes() == data
    url2 = f"rfs://{rfsd.host}:{rfsd.port}/r.bin"
    ok(rfs(rfsd, "get", url2, tmp_path / "r2.bin"))
    assert (tmp_path / "r2.bin").read_bytes() == data


def test_get_replaces_file_and_keeps_its_mode(rfsd, tmp_path):
    data = os.urandom(3000)
    (rfsd.root / "r.bin").write_bytes(data)
    dst = tmp_path / "dst"
    dst.write_bytes(b"old contents")
    dst.chmod(0o640)
    ok(rfs(rfsd, "get", rfsd.url("/r.bin"), dst))
    assert dst.read_bytes() == data
    assert stat.S_IMODE(dst.stat().st_mode) == 0o640


def test_token_file_option(rfsd, tmp_path):
    tf = tmp_path / "tok"
    tf.write_text(rfsd.token + "\n")
    env = rfsd.env()
    env.pop("RFS_TOKEN", None)
    src = random_file(tmp_path / "a", 100)
    ok(rfs(rfsd, "put", "--token-file", tf, src, rfsd.url("/a"), env=env))
    assert (rfsd.root / "a").read_bytes() == src.read_bytes()
    env["RFS_TOKEN_FILE"] = str(tf)
    ok(rfs(rfsd, "stat", rfsd.url("/a"), env=env))


# ---------------------------------------------------------------- metadata commands

LS_LINE = re.compile(r"^([d?-]) +(\d+)  (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)  (.+)$")


def test_ls(rfsd):
    (rfsd.root / "sub").mkdir()
    (rfsd.root / "b.txt").write_bytes(b"12345")
    (rfsd.root / "a.txt").write_bytes(b"")
    out = ok(rfs(rfsd, "ls", rfsd.url("/"))).stdout.splitlines()
    rows = [LS_LINE.match(line) for line in out]
    assert all(rows), out
    got = [(m.group(1), m.group(4)) for m in rows]
    assert got == [("-", "a.txt"), ("-", "b.txt"), ("d", "sub")]
    sizes = {m.group(4): int(m.group(2)) for m in rows}
    assert sizes["a.txt"] == 0 and sizes["b.txt"] == 5
    # A server-only name lists the root; a file lists as itself.
    assert ok(rfs(rfsd, "ls", f"rfs:{rfsd.host}:{rfsd.port}")).stdout.splitlines() == out
    one = ok(rfs(rfsd, "ls", rfsd.url("/b.txt"))).stdout.splitlines()
    assert len(one) == 1 and LS_LINE.match(one[0]).group(4) == "b.txt"


def test_stat(rfsd):
    p = rfsd.root / "s.bin"
    p.write_bytes(b"x" * 1234)
    p.chmod(0o640)
    out = ok(rfs(rfsd, "stat", rfsd.url("/s.bin"))).stdout
    fields = dict(line.split(":", 1) for line in out.splitlines())
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    assert fields["size"] == "1234"
    assert fields["type"] == "regular file"
    assert fields["mode"] == "0640"
    assert fields["path"] == "/s.bin"
    assert fields["server"] == f"{rfsd.host}:{rfsd.port}"
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{9} [+-]\d{4}$", fields["mtime"])
    (rfsd.root / "d").mkdir()
    out = ok(rfs(rfsd, "stat", rfsd.url("/d"))).stdout
    assert re.search(r"^type: +directory$", out, re.M)


def test_rm(rfsd):
    (rfsd.root / "gone").write_bytes(b"1")
    ok(rfs(rfsd, "rm", rfsd.url("/gone")))
    assert not (rfsd.root / "gone").exists()
    line = one_line_error(rfs(rfsd, "rm", rfsd.url("/gone")))
    assert "/gone" in line and f"{rfsd.port}" in line


def test_mkdir(rfsd):
    ok(rfs(rfsd, "mkdir", rfsd.url("/newdir")))
    assert (rfsd.root / "newdir").is_dir()
    line = one_line_error(rfs(rfsd, "mkdir", rfsd.url("/newdir")))
    assert "/newdir" in line
    ok(rfs(rfsd, "mkdir", "-p", rfsd.url("/x/y/z")))
    assert (rfsd.root / "x" / "y" / "z").is_dir()
    ok(rfs(rfsd, "mkdir", "-p", rfsd.url("/x/y/z")))  # already there: fine with -p
    (rfsd.root / "file").write_bytes(b"")
    one_line_error(rfs(rfsd, "mkdir", "-p", rfsd.url("/file/sub")))


def test_ping(rfsd):
    out = ok(rfs(rfsd, "ping", "--count", "3", rfsd.url("/"))).stdout.splitlines()
    replies = [line for line in out if re.search(r"seq=\d+ time=\d+\.\d{3} ms$", line)]
    assert len(replies) == 3
    summary = [i for i, line in enumerate(out)
               if re.search(r"3 replies, rtt min/avg/max = [\d.]+/[\d.]+/[\d.]+ ms$", line)]
    assert summary == [3], out
    # then the connection as TCP runs it (test_tcp_tuning.py checks its content)
    assert out[4].startswith("tcp: congestion control "), out


# ---------------------------------------------------------------- errors

def test_get_missing_remote_file(rfsd, tmp_path):
    dst = tmp_path / "never"
    line = one_line_error(rfs(rfsd, "get", rfsd.url("/no/such/file"), dst))
    assert f"{rfsd.host}:{rfsd.port}" in line
    assert "/no/such/file" in line
    assert "no such file" in line.lower()
    assert not dst.exists() and leftovers(tmp_path) == []


def test_wrong_token(rfsd, tmp_path):
    env = rfsd.env()
    env["RFS_TOKEN"] = "not-the-token"
    src = random_file(tmp_path / "a", 10)
    line = one_line_error(rfs(rfsd, "put", src, rfsd.url("/a"), env=env))
    assert "auth" in line.lower() and str(rfsd.port) in line
    assert not (rfsd.root / "a").exists()


def test_unreachable_server_fails_quickly(rfsd, tmp_path):
    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    line = one_line_error(rfs(rfsd, "--timeout", "5", "stat", f"rfs:127.0.0.1:{port}:/x", timeout=30))
    assert time.monotonic() - start < 20
    assert f"127.0.0.1:{port}" in line


@pytest.mark.parametrize("url", ["rfs:127.0.0.1:/x", "rfs:127.0.0.1:notaport:/x",
                                 "rfs:127.0.0.1:99999:/x", "http://127.0.0.1:1/x", "/local/path",
                                 "rfs://127.0.0.1/x"])
def test_malformed_url_is_usage_error(rfsd, tmp_path, url):
    line = one_line_error(rfs(rfsd, "stat", url), status=2)
    assert "rfs" in line
    one_line_error(rfs(rfsd, "get", url, tmp_path / "x"), status=2)
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("args", [[], ["frobnicate"], ["put", "onlyone"], ["get", "a", "b", "c"],
                                  ["put", "--streams", "0", "a", "rfs:h:1:/a"],
                                  ["put", "--streams", "x", "a", "rfs:h:1:/a"],
                                  ["ls", "--bogus", "rfs:h:1:/"], ["ping", "--count"],
                                  ["run"], ["run", "--"], ["run", "--mpi", "lam", "mpiexec"],
                                  ["run", "--bogus", "mpiexec"], ["run", "--", "/bin/true"]])
def test_usage_errors(rfsd, args):
    one_line_error(rfs(rfsd, *args), status=2)


def test_get_into_missing_directory(rfsd, tmp_path):
    (rfsd.root / "f").write_bytes(b"data")
    dst = tmp_path / "nodir" / "f"
    line = one_line_error(rfs(rfsd, "get", rfsd.url("/f"), dst))
    assert str(tmp_path / "nodir") in line
    assert not (tmp_path / "nodir").exists()


def test_put_missing_local_file(rfsd, tmp_path):
    line = one_line_error(rfs(rfsd, "put", tmp_path / "absent", rfsd.url("/x")))
    assert "absent" in line
    assert not (rfsd.root / "x").exists()


def _limit_file_size(limit):
    def apply():
        # Writes past the limit then fail with EFBIG instead of killing the process.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_failed_get_leaves_no_partial_file(rfsd, tmp_path):
    data = os.urandom(8 * 1024 * 1024)
    (rfsd.root / "big").write_bytes(data)
    new = tmp_path / "new.bin"
    line = one_line_error(rfs(rfsd, "get", rfsd.url("/big"), new, preexec_fn=_limit_file_size(1 << 20)))
    assert "too large" in line.lower() or "fbig" in line.lower()
    assert not new.exists() and leftovers(tmp_path) == []
    # A file that was there before stays untouched.
    old = tmp_path / "old.bin"
    old.write_bytes(b"previous")
    one_line_error(rfs(rfsd, "get", "--streams", "4", rfsd.url("/big"), old,
                       preexec_fn=_limit_file_size(1 << 20)))
    assert old.read_bytes() == b"previous" and leftovers(tmp_path) == []


# ---------------------------------------------------------------- help, version, progress

def test_help_and_version(rfsd):
    out = ok(rfs(rfsd, "--help")).stdout
    for cmd in ("put", "get", "ls", "stat", "rm", "mkdir", "ping", "recover", "run"):
        assert re.search(rf"^  {cmd} ", out, re.M), cmd
    run_help = ok(rfs(rfsd, "run", "--help")).stdout
    assert "--mpi" in run_help and "RFS_MPIIO_DIR" in run_help
    assert ok(rfs(rfsd, "help", "run")).stdout == run_help
    put_help = ok(rfs(rfsd, "put", "--help")).stdout
    assert "--streams" in put_help and "--token-file" in put_help
    assert "--count" in ok(rfs(rfsd, "ping", "--help")).stdout
    assert re.match(r"^rfs \d+\.\d+\.\d+$", ok(rfs(rfsd, "--version")).stdout.strip())


def test_no_progress_output_without_terminal(rfsd, tmp_path):
    src = random_file(tmp_path / "p.bin", 4 * 1024 * 1024)
    env = rfsd.env()
    env["RFS_PROGRESS_MIN_SECONDS"] = "0"
    res = ok(rfs(rfsd, "put", src, rfsd.url("/p.bin"), env=env))
    assert res.stderr == "" and res.stdout == ""


def run_on_pty(argv, env, timeout=RFS_TIMEOUT):
    """Runs argv with stderr on a pseudo-terminal; returns (exit status, terminal output)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=slave, env=env)
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            r, _, _ = select.select([master], [], [], 1.0)
            if r:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        status = proc.wait(timeout=max(1, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return status, b"".join(chunks).decode(errors="replace")


@pytest.mark.parametrize("cmd", ["put", "get"])
def test_progress_bar_on_terminal(rfsd, tmp_path, cmd):
    src = random_file(tmp_path / "p.bin", 16 * 1024 * 1024)
    (rfsd.root / "p.bin").write_bytes(src.read_bytes())
    env = rfsd.env()
    env["RFS_PROGRESS_MIN_SECONDS"] = "0"  # show it at once instead of after a second
    if cmd == "put":
        argv = [binary("rfs"), "put", str(src), rfsd.url("/p.bin")]
    else:
        argv = [binary("rfs"), "get", rfsd.url("/p.bin"), str(tmp_path / "g.bin")]
    status, out = run_on_pty(argv, env)
    assert status == 0, out
    assert "p.bin" in out
    assert re.search(r"100% 16\.0 MiB / 16\.0 MiB [\d.]+ [KMG]?i?B/s", out), out
    assert out.endswith("\n")
    # --no-progress silences it even on a terminal.
    status, out = run_on_pty(argv[:2] + ["--no-progress"] + argv[2:], env)
    assert status == 0 and out == ""
