# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""The `rfs` commands beyond put and get: cat and standard input/output, mv, du, --json
listings, -H sizes, -n/--no-clobber, -v/--debug. Every result is checked against the server's
export root (bytes, names) and every failure against its exit status and one-line message."""
import json
import os
import subprocess

import pytest

from conftest import binary
from test_cli import ok, one_line_error, rfs

TIMEOUT = 120


def rfs_bytes(srv, *args, stdin=None):
    """rfs with binary standard input and output."""
    return subprocess.run([binary("rfs"), *map(str, args)], input=stdin, capture_output=True,
                          env=srv.env(), timeout=TIMEOUT)


def test_cat_and_get_to_stdout(rfsd):
    data = os.urandom(9 << 20) + b"end"        # more than one 8 MiB request
    (rfsd.root / "big.bin").write_bytes(data)
    r = rfs_bytes(rfsd, "cat", rfsd.url("/big.bin"))
    assert r.returncode == 0 and r.stdout == data, r.stderr
    r = rfs_bytes(rfsd, "get", "--verify", rfsd.url("/big.bin"), "-")
    assert r.returncode == 0 and r.stdout == data, r.stderr
    assert not os.path.exists("-")
    (rfsd.root / "empty").write_bytes(b"")
    assert rfs_bytes(rfsd, "cat", rfsd.url("/empty")).stdout == b""
    r = rfs_bytes(rfsd, "cat", rfsd.url("/nothing"))
    assert r.returncode == 1 and b"/nothing" in r.stderr
    r = rfs_bytes(rfsd, "get", "--resume", rfsd.url("/big.bin"), "-")
    assert r.returncode == 2 and b"standard output" in r.stderr


def test_cat_into_closed_pipe_is_not_an_error(rfsd):
    (rfsd.root / "big.bin").write_bytes(os.urandom(20 << 20))
    cat = subprocess.Popen([binary("rfs"), "cat", rfsd.url("/big.bin")], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=rfsd.env())
    head = cat.stdout.read(1000)
    cat.stdout.close()
    assert cat.wait(timeout=TIMEOUT) == 0 and len(head) == 1000
    assert cat.stderr.read() == b""


def test_put_from_stdin_is_atomic_and_verified(rfsd):
    data = os.urandom((8 << 20) + 12345)
    ok_ = rfs_bytes(rfsd, "put", "--verify", "-", rfsd.url("/in.bin"), stdin=data)
    assert ok_.returncode == 0, ok_.stderr
    assert (rfsd.root / "in.bin").read_bytes() == data
    assert [p for p in os.listdir(rfsd.root) if ".rfs-part-" in p] == []
    # Replacing it: the old content stays until the new one is complete.
    assert rfs_bytes(rfsd, "put", "-", rfsd.url("/in.bin"), stdin=b"short").returncode == 0
    assert (rfsd.root / "in.bin").read_bytes() == b"short"
    # Standard input has no name: a directory destination is refused.
    (rfsd.root / "dir").mkdir()
    r = rfs_bytes(rfsd, "put", "-", rfsd.url("/dir"), stdin=b"x")
    assert r.returncode == 2 and b"directory" in r.stderr
    r = rfs_bytes(rfsd, "put", "--resume", "-", rfsd.url("/x"), stdin=b"x")
    assert r.returncode == 2 and b"--resume" in r.stderr
    # A failed put from stdin (the directory it goes to is missing) leaves nothing behind.
    r = rfs_bytes(rfsd, "put", "-", rfsd.url("/missing/x"), stdin=b"x")
    assert r.returncode == 1 and b"/missing" in r.stderr
    assert sorted(os.listdir(rfsd.root)) == ["dir", "in.bin"]


def test_no_clobber_and_force(rfsd, tmp_path):
    (rfsd.root / "there").write_bytes(b"remote")
    src = tmp_path / "src"
    src.write_bytes(b"local")
    line = one_line_error(rfs(rfsd, "put", "-n", src, rfsd.url("/there")))
    assert "exists" in line and "--no-clobber" in line
    assert (rfsd.root / "there").read_bytes() == b"remote"
    ok(rfs(rfsd, "put", "-n", "-f", src, rfsd.url("/there")))          # the last one counts
    assert (rfsd.root / "there").read_bytes() == b"local"
    ok(rfs(rfsd, "put", "--no-clobber", src, rfsd.url("/new")))       # absent: copied
    assert (rfsd.root / "new").read_bytes() == b"local"
    dst = tmp_path / "dst"
    dst.write_bytes(b"mine")
    line = one_line_error(rfs(rfsd, "get", "-n", rfsd.url("/there"), dst))
    assert "exists" in line
    assert dst.read_bytes() == b"mine"
    ok(rfs(rfsd, "get", rfsd.url("/there"), dst))
    assert dst.read_bytes() == b"local"
    r = rfs_bytes(rfsd, "put", "-n", "-", rfsd.url("/there"), stdin=b"stdin")
    assert r.returncode == 1 and (rfsd.root / "there").read_bytes() == b"local"


def test_mv(rfsd):
    (rfsd.root / "a.txt").write_bytes(b"A")
    (rfsd.root / "d").mkdir()
    ok(rfs(rfsd, "mv", rfsd.url("/a.txt"), "/b.txt"))
    assert not (rfsd.root / "a.txt").exists() and (rfsd.root / "b.txt").read_bytes() == b"A"
    ok(rfs(rfsd, "mv", rfsd.url("/b.txt"), rfsd.url("/d")))          # into a directory
    assert (rfsd.root / "d" / "b.txt").read_bytes() == b"A"
    (rfsd.root / "c.txt").write_bytes(b"C")
    line = one_line_error(rfs(rfsd, "mv", "-n", rfsd.url("/c.txt"), "/d/b.txt"))
    assert "exists" in line and (rfsd.root / "c.txt").exists()
    ok(rfs(rfsd, "mv", rfsd.url("/c.txt"), "/d/b.txt"))               # replaces, like mv
    assert (rfsd.root / "d" / "b.txt").read_bytes() == b"C"
    line = one_line_error(rfs(rfsd, "mv", rfsd.url("/d/b.txt"), "rfs:127.0.0.1:1:/x"), status=2)
    assert "another server" in line
    line = one_line_error(rfs(rfsd, "mv", rfsd.url("/d/b.txt"), "relative"), status=2)
    assert "absolute" in line
    line = one_line_error(rfs(rfsd, "mv", rfsd.url("/none"), "/x"))
    assert "/none" in line


def test_du_counts_and_formats(rfsd):
    for d, sizes in {"": [10], "a": [100, 200], "a/b": [4000], "c": []}.items():
        (rfsd.root / d).mkdir(exist_ok=True, parents=True)
        for i, s in enumerate(sizes):
            (rfsd.root / d / f"f{i}").write_bytes(b"x" * s)
    out = ok(rfs(rfsd, "du", rfsd.url("/"))).stdout.splitlines()
    assert out == ["4000\t/a/b", "4300\t/a", "0\t/c", "4310\t/"]
    assert ok(rfs(rfsd, "du", "-s", "-H", rfsd.url("/a"))).stdout == "4.2K\t/a\n"
    doc = json.loads(ok(rfs(rfsd, "du", "--json", rfsd.url("/"))).stdout)
    total = doc["entries"][-1]
    assert total == {"path": "/", "bytes": 4310, "files": 4, "directories": 3}
    assert ok(rfs(rfsd, "du", rfsd.url("/a/f1"))).stdout == "200\t/a/f1\n"   # a file
    line = one_line_error(rfs(rfsd, "du", rfsd.url("/nope")))
    assert "/nope" in line


def test_ls_and_stat_json_and_human(rfsd):
    (rfsd.root / "big").write_bytes(b"x" * (3 << 20))
    (rfsd.root / "sub").mkdir()
    weird = b"bad\xffname\x1b[31m"
    (rfsd.root / os.fsdecode(weird)).write_bytes(b"12")
    doc = json.loads(ok(rfs(rfsd, "ls", "--json", rfsd.url("/"))).stdout)
    assert doc["path"] == "/" and doc["server"] == f"{rfsd.host}:{rfsd.port}"
    by = {e["name"]: e for e in doc["entries"]}
    assert by["big"]["size"] == 3 << 20 and by["big"]["type"] == "file"
    assert by["sub"]["type"] == "directory"
    # The invalid byte survives as surrogateescape; the escape character is \u001b, not raw.
    names = [n.encode("utf-8", "surrogateescape") for n in by]
    assert weird in names
    st = json.loads(ok(rfs(rfsd, "stat", "--json", rfsd.url("/big"))).stdout)
    assert st["size"] == 3 << 20 and st["type"] == "file" and st["path"] == "/big"
    assert st["mtime_ns"] == os.stat(rfsd.root / "big").st_mtime_ns
    human = ok(rfs(rfsd, "ls", "-l", "-H", rfsd.url("/"))).stdout
    assert any(line.startswith("-   3.0M") and line.endswith(" big") for line in human.splitlines())
    assert "\x1b" not in human


def test_verbose_and_debug(rfsd):
    (rfsd.root / "f").write_bytes(b"1")
    r = ok(rfs(rfsd, "--debug", "stat", rfsd.url("/f")))
    assert "rfs trace" in r.stderr and "STAT" in r.stderr
    r = ok(rfs(rfsd, "stat", "-v", rfsd.url("/f")))
    assert "rfs trace" not in r.stderr
    assert ok(rfs(rfsd, "stat", rfsd.url("/f"))).stderr == ""


def tree(root):
    """{relative path: bytes} of every file under root."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


def test_cp_every_direction_recursive_and_patterns(rfsd, tmp_path):
    src = tmp_path / "run"
    (src / "sub" / "deep").mkdir(parents=True)
    files = {"a.h5": os.urandom(5000), "b.h5": b"", "notes.txt": b"n",
             "sub/c.h5": os.urandom(70000), "sub/deep/d.bin": os.urandom(3 << 20)}
    for rel, data in files.items():
        (src / rel).write_bytes(data)
    # local -> remote, recursive, into a missing destination: it becomes the copy
    ok(rfs(rfsd, "cp", "-r", src, rfsd.url("/run")))
    assert tree(rfsd.root / "run") == files
    # into an existing directory: the source keeps its name there
    (rfsd.root / "box").mkdir()
    ok(rfs(rfsd, "cp", "-r", "--verify", src, rfsd.url("/box")))
    assert tree(rfsd.root / "box" / "run") == files
    # remote -> local, recursive
    back = tmp_path / "back"
    ok(rfs(rfsd, "cp", "-r", rfsd.url("/run"), back))
    assert tree(back) == files
    # remote -> remote through the client, a file and a tree, with --verify
    ok(rfs(rfsd, "cp", "--verify", rfsd.url("/run/sub/deep/d.bin"), rfsd.url("/d-copy.bin")))
    assert (rfsd.root / "d-copy.bin").read_bytes() == files["sub/deep/d.bin"]
    ok(rfs(rfsd, "cp", "-r", rfsd.url("/run"), rfsd.url("/run2")))
    assert tree(rfsd.root / "run2") == files
    # a pattern in the last component, several sources into a directory
    (rfsd.root / "h5s").mkdir()
    ok(rfs(rfsd, "cp", rfsd.url("/run/*.h5"), rfsd.url("/run/sub/c.h5"), rfsd.url("/h5s/")))
    assert sorted(os.listdir(rfsd.root / "h5s")) == ["a.h5", "b.h5", "c.h5"]
    pulled = tmp_path / "pulled"
    pulled.mkdir()
    ok(rfs(rfsd, "cp", rfsd.url("/run/[ab].h5"), pulled))
    assert sorted(os.listdir(pulled)) == ["a.h5", "b.h5"]
    # refusals, each with one line and the right status
    assert "use -r" in one_line_error(rfs(rfsd, "cp", src, rfsd.url("/x")), status=2)
    assert "both local" in one_line_error(rfs(rfsd, "cp", src / "a.h5", tmp_path / "y"), status=2)
    assert "no match" in one_line_error(rfs(rfsd, "cp", rfsd.url("/run/*.nc"), pulled))
    assert "must be a directory" in one_line_error(
        rfs(rfsd, "cp", src / "a.h5", src / "b.h5", rfsd.url("/run/a.h5")), status=2)
    assert "last path component" in one_line_error(
        rfs(rfsd, "cp", rfsd.url("/r*/a.h5"), pulled), status=2)
    assert not (rfsd.root / "x").exists()
    assert [p for p in os.listdir(rfsd.root) if ".rfs-part-" in p] == []


def test_config_file_aliases_tokens_and_streams(rfsd, tmp_path):
    tok = tmp_path / "tok"
    tok.write_text(rfsd.token)
    cfg = tmp_path / "config"
    cfg.write_text(f"# site defaults\nstreams = 3\n[host store]\naddress = {rfsd.host}:{rfsd.port}\n"
                   f"token_file = {tok}   # per host\n")
    env = dict(rfsd.env(), RFS_CONFIG=str(cfg))
    env.pop("RFS_TOKEN", None)                 # the token can only come from the config
    (rfsd.root / "d").mkdir()
    (rfsd.root / "d" / "f").write_bytes(b"abc")
    for name in ("rfs://store/d", "rfs:store:/d"):
        assert ok(rfs(rfsd, "ls", name, env=env)).stdout.split()[-1] == "f"
    assert ok(rfs(rfsd, "ls", "rfs:store", env=env)).stdout.split()[-1] == "d"
    src = tmp_path / "src"
    src.write_bytes(os.urandom(4 << 20))       # worth 4 streams (1 MiB each at least)
    r = ok(rfs(rfsd, "--debug", "put", src, "rfs://store/d/up", env=env))
    # streams = 3 from the file: three connections authenticated (one AUTH per connection).
    assert r.stderr.count("send AUTH") == 3
    assert (rfsd.root / "d" / "up").read_bytes() == src.read_bytes()
    r = ok(rfs(rfsd, "--debug", "put", "--streams", "1", src, "rfs://store/d/up1", env=env))
    assert r.stderr.count("send AUTH") == 1                 # the command line wins
    # A full address of a configured host uses its token too.
    assert ok(rfs(rfsd, "cat", rfsd.url("/d/f"), env=env)).stdout == "abc"
    # Mistakes in the file are errors naming the line, not silently ignored.
    cfg.write_text("[host store]\naddres = 1.2.3.4:5\n")
    line = one_line_error(rfs(rfsd, "ls", "rfs://store/", env=env), status=2)
    assert f"{cfg}:2" in line and "unknown key" in line
    cfg.write_text("[host store]\n")
    assert "no address" in one_line_error(rfs(rfsd, "ls", "rfs://store/", env=env), status=2)
    missing = dict(env, RFS_CONFIG=str(tmp_path / "nope"))
    assert "config" in one_line_error(rfs(rfsd, "ls", rfsd.url("/"), env=missing))


COMPLETION = os.path.join(os.path.dirname(__file__), "..", "..", "cli", "completion")


def complete(rfsd, words, env):
    script = (f"source {COMPLETION}/rfs.bash; COMP_WORDS=({' '.join(words)}); "
              f"COMP_CWORD={len(words) - 1}; _rfs; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env,
                       timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    return [x for x in r.stdout.splitlines() if x]


def test_shell_completion(rfsd):
    assert subprocess.run(["bash", "-n", f"{COMPLETION}/rfs.bash"]).returncode == 0
    env = dict(rfsd.env(), PATH=os.path.dirname(binary("rfs")) + os.pathsep + os.environ["PATH"])
    assert complete(rfsd, ["rfs", "c"], env) == ["cp", "cat", "chmod"]
    assert "--recursive" in complete(rfsd, ["rfs", "cp", "--r"], env)
    assert complete(rfsd, ["rfs", "du", "--j"], env) == ["--json"]
    (rfsd.root / "data").mkdir()
    (rfsd.root / "data" / "run1.h5").write_bytes(b"")
    (rfsd.root / "data" / "run2.h5").write_bytes(b"")
    (rfsd.root / "dump").write_bytes(b"")
    assert complete(rfsd, ["rfs", "ls", rfsd.url("/d")], env) == [rfsd.url("/data/"),
                                                                   rfsd.url("/dump")]
    assert complete(rfsd, ["rfs", "get", rfsd.url("/data/run")], env) == [
        rfsd.url("/data/run1.h5"), rfsd.url("/data/run2.h5")]
    zsh = "/usr/bin/zsh"
    if os.path.exists(zsh):
        r = subprocess.run([zsh, "-f", "-c", f"source {COMPLETION}/rfs.zsh && "
                            "(( $+functions[_rfs] )) && echo defined"],
                           capture_output=True, text=True, timeout=TIMEOUT)
        assert r.stdout.strip() == "defined", r.stderr


def test_chmod_and_df(rfsd, tmp_path):
    f = rfsd.root / "f"
    f.write_bytes(b"x")
    (rfsd.root / "d").mkdir()
    mode = lambda p: os.stat(p).st_mode & 0o7777      # noqa: E731
    ok(rfs(rfsd, "chmod", "600", rfsd.url("/f")))
    assert mode(f) == 0o600
    ok(rfs(rfsd, "chmod", "g+r,o+r", rfsd.url("/f")))
    assert mode(f) == 0o644
    ok(rfs(rfsd, "chmod", "a-w,u+w", rfsd.url("/f")))
    assert mode(f) == 0o644
    ok(rfs(rfsd, "chmod", "go=", rfsd.url("/d")))
    assert mode(rfsd.root / "d") == 0o700
    ok(rfs(rfsd, "chmod", "4755", rfsd.url("/f")))  # set-uid is not the client's to give
    assert mode(f) == 0o755
    assert "bad mode" in one_line_error(rfs(rfsd, "chmod", "u+q", rfsd.url("/f")), status=2)
    assert "/nope" in one_line_error(rfs(rfsd, "chmod", "600", rfsd.url("/nope")))
    # A link out of the export is not followed: the outside file keeps its mode.
    outside = tmp_path / "outside"
    outside.write_bytes(b"secret")
    outside.chmod(0o600)
    os.symlink(outside, rfsd.root / "escape")
    line = one_line_error(rfs(rfsd, "chmod", "666", rfsd.url("/escape")))
    assert "/escape" in line
    assert mode(outside) == 0o600

    doc = json.loads(ok(rfs(rfsd, "df", "--json", rfsd.url("/d"))).stdout)
    v = os.statvfs(rfsd.root)
    assert doc["total_bytes"] == v.f_blocks * v.f_frsize
    assert doc["files"] == v.f_files
    # free space moves between the two calls on a shared disk: compare loosely
    assert abs(doc["avail_bytes"] - v.f_bavail * v.f_frsize) < 256 << 20
    assert doc["used_bytes"] + doc["avail_bytes"] <= doc["total_bytes"]
    out = ok(rfs(rfsd, "df", "-H", rfsd.url("/"))).stdout.splitlines()
    assert out[0].split()[:2] == ["Server", "Size"] and out[1].startswith(f"{rfsd.host}:")
