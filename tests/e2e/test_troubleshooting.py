# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""docs/troubleshooting.md quotes real messages: provoke each one and check it matches a
heading of the page, and that every heading is provoked (so the page and the code cannot
drift apart). Placeholders in <angle brackets> match any text."""
import re
import subprocess

import pytest

from conftest import REPO, binary
from mpiio_util import FLAVOURS, mpiexec, program
from test_client_api import free_port
from test_manifest_ops import with_missing

DOC = REPO / "docs" / "troubleshooting.md"
MPI_RAN = "(the MPI case ran)"


def templates():
    heads = [ln[4:].strip() for ln in DOC.read_text().splitlines() if ln.startswith("### ")]
    out = []
    for h in heads:
        assert h.startswith("`") and h.endswith("`"), h
        text = h[1:-1]
        rx = "".join(".+?" if part.startswith("<") else re.escape(part)
                     for part in re.split(r"(<[a-z]+>)", text))
        out.append((text, re.compile(rx)))
    return out


def run(args, env=None, timeout=60):
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout)
    return r.stdout + r.stderr


@pytest.fixture(scope="module")
def seen():
    return []


def check(seen, output):
    hits = [t for t, rx in templates() if rx.search(output)]
    assert hits, f"no heading of docs/troubleshooting.md matches:\n{output}"
    seen.extend(hits)


def test_client_messages(rfsd, tmp_path, seen):
    good = rfsd.env()
    check(seen, run([binary("rfs"), "ls", f"rfs:127.0.0.1:{free_port()}:/"], good))
    check(seen, run([binary("rfs"), "ls", "dtn:7070:/x"], good))
    check(seen, run([binary("rfs"), "ls", rfsd.url("/../etc")], good))
    check(seen, run([binary("rfs"), "get", rfsd.url("/nope.bin"), str(tmp_path / "x")], good))
    (rfsd.root / "there").write_bytes(b"1")
    (tmp_path / "src").write_bytes(b"2")
    check(seen, run([binary("rfs"), "put", "-n", str(tmp_path / "src"), rfsd.url("/there")], good))
    # Authentication last: failures put this address in the server's backoff.
    env = dict(good)
    env.pop("RFS_TOKEN", None)
    check(seen, run([binary("rfs"), "ls", rfsd.url("/")], env))              # no token
    bad = dict(env, RFS_TOKEN="0" * 32)
    check(seen, run([binary("rfs"), "ls", rfsd.url("/")], bad))              # wrong token
    for _ in range(3):
        run([binary("rfs"), "ls", rfsd.url("/")], bad)
    check(seen, run([binary("rfs"), "ls", rfsd.url("/")], bad))              # backoff
    # A silent address cannot be made portably here (the message needs a firewall that drops
    # packets): the text is checked against the transport's source instead.
    src = (REPO / "transport" / "tcp.c").read_text()
    assert "cannot connect: no answer within %d ms" in src
    seen.append("<server>: cannot connect: no answer within <n> ms")


def test_server_messages(rfsd, tmp_path, seen):
    short = tmp_path / "short"
    short.write_text("short")
    short.chmod(0o600)
    check(seen, run([binary("rfsd"), "--root", str(tmp_path), "--token-file", str(short)]))
    check(seen, run([binary("rfsd"), "--root", str(tmp_path / "none"), "--no-auth"]))
    check(seen, run([binary("rfsd"), "--root", str(tmp_path), "--no-auth", "--listen",
                     f"{rfsd.host}:{rfsd.port}"]))
    loose = tmp_path / "loose"
    loose.write_text("t" * 32)
    loose.chmod(0o644)
    p = subprocess.Popen([binary("rfsd"), "--root", str(tmp_path), "--token-file", str(loose),
                          "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    p.stdout.readline()
    p.terminate()
    _, err = p.communicate(timeout=30)
    check(seen, err)


def test_manifest_messages(rfsd_factory, tmp_path, seen):
    """Logical files over two servers (docs/manifest.md)."""
    token = "m" * 32
    a, b = rfsd_factory(token=token), rfsd_factory(token=token)
    env = a.env()
    servers = f"rfs://{a.host}:{a.port},rfs://{b.host}:{b.port}"
    src = tmp_path / "src"
    src.write_bytes(bytes(range(256)) * 4096)
    url = f"rfs://{a.host}:{a.port}/f.rfsm"
    check(seen, run([binary("rfs"), "cp", "--servers", servers, "--replicas", "3", str(src),
                     url], env))
    # a replica lost during a write: reported at sync
    p = subprocess.Popen([binary("manifest_e2e"), "put", url, str(src), servers, "65536", "2",
                          "2", "65536"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    assert p.stdout.readline().startswith("open rc=0")
    assert p.stdout.readline().strip() == "paused"
    b.stop()
    out, _ = p.communicate("go\n", timeout=60)
    check(seen, out)
    # a column with no live replica: one replica, its server down
    url1 = f"rfs://{a.host}:{a.port}/g.rfsm"
    c = rfsd_factory(token=token)
    r = run([binary("rfs"), "cp", "--servers", f"rfs://{a.host}:{a.port},rfs://{c.host}:{c.port}",
             str(src), url1], env)
    assert r == "", r
    c.stop()
    check(seen, run([binary("rfs"), "cp", url1, str(tmp_path / "back")], env))
    # bytes no replica holds: both replicas of a one-column file recorded missing the same range
    d = rfsd_factory(token=token)
    url2 = f"rfs://{a.host}:{a.port}/h.rfsm"
    r = run([binary("rfs"), "cp", "--servers", f"rfs://{a.host}:{a.port},rfs://{d.host}:{d.port}",
             "--stripe-count", "1", "--replicas", "2", str(src), url2], env)
    assert r == "", r
    h = a.root / "h.rfsm"
    h.write_bytes(with_missing(h.read_bytes(), {0: [(0, 4096)], 1: [(0, 4096)]}))
    check(seen, run([binary("rfs"), "cp", url2, str(tmp_path / "back2")], env))
    # a damaged manifest
    m = a.root / "g.rfsm"
    data = bytearray(m.read_bytes())
    data[50] ^= 0xFF
    m.write_bytes(bytes(data))
    check(seen, run([binary("rfs"), "manifest", "show", url1], env))


@pytest.mark.mpi
def test_mpi_messages(rfsd, tmp_path, seen):
    if "openmpi" not in FLAVOURS or "mpich" not in FLAVOURS:
        pytest.skip("needs both MPI builds")
    # The MPICH build preloaded into an Open MPI program.
    r = mpiexec("openmpi", 1, [program("openmpi", "t_wrongmpi"), str(tmp_path / "l.dat"),
                               rfsd.url("/x")], rfsd.env(), preload=False,
                extra_env={"LD_PRELOAD": str(FLAVOURS["mpich"] / "librfs-mpiio.so")})
    check(seen, r.stdout)
    seen.append(MPI_RAN)


def test_every_heading_is_provoked(seen):
    """Runs last (file order): each heading was matched by some provoked message above. The
    MPI heading counts only where the MPI case ran (not in the sanitizer stage, which
    deselects MPI tests, nor without both MPI builds)."""
    missing = {t for t, _ in templates()} - set(seen)
    if MPI_RAN not in seen:
        missing = {m for m in missing if not m.startswith("librfs-mpiio.so")}
    assert not missing, f"headings no test provoked: {missing}"
