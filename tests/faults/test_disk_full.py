# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Server storage errors reach the application at a defined call with the right MPI error class:
a full export (a small tmpfs) gives MPI_ERR_NO_SPACE at the write (with ABT: at sync, the data
kept in the journal), a read-only export MPI_ERR_READ_ONLY, a file or directory the server may
not write MPI_ERR_ACCESS. rfsd serves other clients meanwhile, and once space is freed the same
write succeeds. Every test checks that each byte the program was told is written (its ACK
lines) is on the server. tests/mpiio/t_nospc.c is the program."""
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import Server, binary
from mpiio_util import FLAVOURS, OutputLines, mpiexec, mpiexec_command, program

pytestmark = pytest.mark.mpi

MIB = 1 << 20
EXPORT_MIB = 16
NPROCS = 2


def pattern(off, n):
    """t_nospc's bytes for [off, off + n)."""
    return bytes((((o >> 12) * 31 + o * 7 + 1) & 0xFF) for o in range(off, off + n))


def parse(out):
    acks = [(int(r), int(o), int(n)) for tag, r, o, n in
            (l.split()[:4] for l in out.splitlines() if l.startswith("ACK "))]
    errs = [l for l in out.splitlines() if l.startswith("ERR ")]
    return acks, errs


def assert_acked_on_server(path, acks):
    data = Path(path).read_bytes()
    assert acks, "the program was told nothing succeeded"
    for rank, off, n in acks:
        assert data[off:off + n] == pattern(off, n), f"rank {rank}: bytes at {off}+{n} not on the server"


def err_field(line, key):
    return next(w.split("=", 1)[1] for w in line.split() if w.startswith(key + "="))


def mount(*args):
    r = subprocess.run(["mount", *args], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"mount {' '.join(args)}: {r.stderr.strip()} (needs root)")


@pytest.fixture
def small_export(tmp_path):
    """A 16 MiB tmpfs as the export root: a disk that fills up."""
    d = tmp_path / "export"
    d.mkdir()
    mount("-t", "tmpfs", "-o", f"size={EXPORT_MIB}m", "tmpfs", str(d))
    yield d
    subprocess.run(["umount", "-l", str(d)], check=False)


def rfs_cli(srv, *args):
    return subprocess.run([binary("rfs"), *args], env=srv.env(), capture_output=True, text=True,
                          timeout=60)


def popen(flavour, argv, srv, hints):
    cmd, e = mpiexec_command(flavour, NPROCS, argv, srv.env(), extra_env={"RFS_HINTS": hints})
    return subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("access", ["indep", "coll"])
def test_no_space_at_the_write_then_retry(small_export, tmp_path, flavour, access):
    """Without ABT the write that finds the disk full fails with MPI_ERR_NO_SPACE; the server
    goes on serving another client; after that client deletes a file the same write succeeds."""
    srv = Server(small_export, token="nospc-token-0123456789abcdef")
    try:
        filler = small_export / "filler.dat"
        filler.write_bytes(os.urandom(8 * MIB))
        go = tmp_path / "go"
        # 1.5 MiB chunks: the failing write lands partly (rfsd says how much)
        chunk, nchunks = 3 * MIB // 2, 5  # 15 MiB in all: fits once the filler is gone
        argv = [program(flavour, "t_nospc"), srv.url("/out.dat"), str(chunk), str(nchunks),
                f"go={go}"] + (["coll"] if access == "coll" else [])
        # The write window (on by default) would report it one call late: that is
        # test_no_space_with_write_window_reported_late.
        p = popen(flavour, argv, srv, "rfs_abt=disable;rfs_write_window=0")
        out = OutputLines(p)
        try:
            out.wait_for(r"^WAITING", 120)
            # Another client is served while the disk is full and the job waits.
            st = rfs_cli(srv, "stat", srv.url("/filler.dat"))
            assert st.returncode == 0 and str(8 * MIB) in st.stdout, st.stdout + st.stderr
            got = tmp_path / "filler.copy"
            g = rfs_cli(srv, "get", srv.url("/filler.dat"), str(got))
            assert g.returncode == 0 and got.read_bytes() == filler.read_bytes(), g.stderr
            rm = rfs_cli(srv, "rm", srv.url("/filler.dat"))
            assert rm.returncode == 0, rm.stderr
            go.touch()
            text = out.rest(120)
        finally:
            if p.poll() is None:
                p.wait(timeout=120)
        assert p.returncode == 0, text
        acks, errs = parse(text)
        assert errs, text
        for e in errs:
            assert e.split()[2] == "write" and err_field(e, "class") == "NO_SPACE", e
            assert "/out.dat" in e and f"127.0.0.1:{srv.port}" in e and "No space left" in e, e
            assert "landed before the error" in e, e
        assert text.count(" ok\n") == 2 * NPROCS, text  # sync and close
        # every write was told it succeeded in the end, the failed ones by their retry
        assert {o for _, o, _ in acks} == {(i * NPROCS + r) * chunk for i in range(nchunks)
                                          for r in range(NPROCS)}, text
        assert_acked_on_server(small_export / "out.dat", acks)
        assert (small_export / "out.dat").stat().st_size == nchunks * NPROCS * chunk
    finally:
        srv.stop()


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_no_space_with_abt_at_sync_then_recover(small_export, tmp_path, flavour):
    """With ABT the writes return once buffered; the server's ENOSPC is reported at sync with
    MPI_ERR_NO_SPACE, the data is kept in the journal, and `rfs recover` delivers it once the
    disk has room again."""
    staging = tmp_path / "staging"
    staging.mkdir()
    srv = Server(small_export, token="nospc-abt-token-0123456789abcdef")
    try:
        (small_export / "filler.dat").write_bytes(os.urandom(8 * MIB))
        chunk, nchunks = MIB, 6
        argv = [program(flavour, "t_nospc"), srv.url("/abt.dat"), str(chunk), str(nchunks)]
        r = mpiexec(flavour, NPROCS, argv, srv.env(),
                    extra_env={"RFS_HINTS": f"rfs_abt=enable;rfs_staging_dir={staging}"})
        acks, errs = parse(r.stdout)
        assert r.returncode == 0 and r.stdout.count("DONE") == NPROCS, r.stdout
        assert len(acks) == nchunks * NPROCS, r.stdout  # buffered: every write returned
        sync_errs = [e for e in errs if e.split()[2] == "sync"]
        assert sync_errs and all(err_field(e, "class") == "NO_SPACE" for e in sync_errs), r.stdout
        assert all(e.split()[2] == "sync" for e in errs), r.stdout
        assert any("/abt.dat" in e and "No space left" in e for e in sync_errs), r.stdout
        assert "rfs recover" in r.stdout, r.stdout
        assert any(staging.iterdir())
        (small_export / "filler.dat").unlink()
        rec = rfs_cli(srv, "recover", str(staging))
        if rec.returncode != 0:
            # Two ranks' writes refused mid-burst may each have landed in part after the other
            # rank's last version check: recover cannot tell that from another job's writer
            # and refuses (docs/abt.md "Replay safety"); nobody else writes here, so --force.
            assert "--force" in rec.stderr, rec.stdout + rec.stderr
            rec = rfs_cli(srv, "recover", str(staging), "--force")
        assert rec.returncode == 0, rec.stdout + rec.stderr
        assert_acked_on_server(small_export / "abt.dat", acks)
        assert list(staging.iterdir()) == []
    finally:
        srv.stop()


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_no_space_with_write_window_reported_late(small_export, tmp_path, flavour):
    """With the write window a small write's ENOSPC comes back with a later call on the file
    (documented: "reported late"), still as MPI_ERR_NO_SPACE; sync then has every reply."""
    srv = Server(small_export, token="nospc-wwin-token-0123456789abcdef")
    try:
        (small_export / "filler.dat").write_bytes(os.urandom(15 * MIB))
        chunk, nchunks = 64 * 1024, 24
        argv = [program(flavour, "t_nospc"), srv.url("/wwin.dat"), str(chunk), str(nchunks)]
        r = mpiexec(flavour, NPROCS, argv, srv.env(),
                    extra_env={"RFS_HINTS": "rfs_write_window=1M"})
        acks, errs = parse(r.stdout)
        assert r.returncode == 0 and r.stdout.count("DONE") == NPROCS, r.stdout
        assert errs and all(err_field(e, "class") == "NO_SPACE" for e in errs), r.stdout
        assert any("reported late" in e for e in errs), r.stdout
        # What sync and close confirmed is on the server: the window's writes before the
        # first failure of each rank are all there or the failure was reported.
        data = (small_export / "wwin.dat").read_bytes()
        # get_size after sync counts no failed write (the ranks' published sizes, fence.c,
        # are not trusted once a call failed)
        sizes = re.findall(r"^SIZE \d+ (\d+)$", r.stdout, re.M)
        assert len(sizes) == NPROCS and all(int(x) == len(data) for x in sizes), \
            (sizes, len(data), r.stdout)
        failed = {int(e.split()[1]) for e in errs}
        for rank, off, n in acks:
            if rank not in failed:
                assert data[off:off + n] == pattern(off, n)
    finally:
        srv.stop()


@pytest.fixture
def readonly_export(tmp_path):
    """A read-only bind mount of a directory holding one file."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "old.dat").write_bytes(b"x" * 4096)
    d = tmp_path / "ro"
    d.mkdir()
    mount("--bind", str(src), str(d))
    try:
        mount("-o", "remount,bind,ro", str(d))
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], check=False)


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("name", ["/new.dat", "/old.dat"])
def test_read_only_export(readonly_export, flavour, name):
    srv = Server(readonly_export, token="ro-token-0123456789abcdef")
    try:
        r = mpiexec(flavour, NPROCS, [program(flavour, "t_nospc"), srv.url(name), "4096", "2"],
                    srv.env())
        acks, errs = parse(r.stdout)
        assert r.returncode == 0 and not acks, r.stdout
        assert len(errs) == NPROCS, r.stdout
        for e in errs:
            assert e.split()[2] == "open" and err_field(e, "class") == "READ_ONLY", e
            assert name in e and f"127.0.0.1:{srv.port}" in e, e
        # rfsd still serves reads of the same export
        st = rfs_cli(srv, "stat", srv.url("/old.dat"))
        assert st.returncode == 0, st.stderr
        assert (readonly_export / "old.dat").read_bytes() == b"x" * 4096
    finally:
        srv.stop()


class NobodyServer(Server):
    """rfsd running as nobody, so file permissions apply (root would bypass them)."""

    def __init__(self, root, token):
        import secrets  # noqa: F401  (Server's interface: token)
        self.root = Path(root)
        self.token = token
        tf = self.root.parent / "token"
        tf.write_text(token)
        os.chown(tf, 65534, 65534)
        tf.chmod(0o600)
        args = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", binary("rfsd"),
                "--root", str(self.root), "--listen", "127.0.0.1:0", "--token-file", str(tf)]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("rfsd listening on "):
            self.proc.kill()
            pytest.skip(f"rfsd as nobody did not start: {line!r} {self.proc.stderr.read()}")
        self.addr = line.split()[-1]
        self.host, port = self.addr.rsplit(":", 1)
        self.port = int(port)


@pytest.fixture
def nobody_export():
    """An export owned by nobody, outside the 0700 pytest directories nobody cannot cross:
    locked.dat (mode 000) and a directory ro/ without write permission."""
    base = Path(tempfile.mkdtemp(prefix="rfs-perm-", dir="/tmp"))
    base.chmod(0o755)
    root = base / "export"
    root.mkdir()
    (root / "locked.dat").write_bytes(b"y" * 4096)
    (root / "ro").mkdir()
    for p in (root, root / "locked.dat", root / "ro"):
        os.chown(p, 65534, 65534)
    (root / "locked.dat").chmod(0)
    (root / "ro").chmod(0o555)
    yield root
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("name", ["/locked.dat", "/ro/new.dat"])
def test_permission_denied(nobody_export, flavour, name):
    srv = NobodyServer(nobody_export, token="perm-token-0123456789abcdef")
    try:
        r = mpiexec(flavour, NPROCS, [program(flavour, "t_nospc"), srv.url(name), "4096", "2"],
                    srv.env())
        acks, errs = parse(r.stdout)
        assert r.returncode == 0 and not acks, r.stdout
        assert len(errs) == NPROCS, r.stdout
        for e in errs:
            assert e.split()[2] == "open" and err_field(e, "class") == "ACCESS", e
            assert name in e and f"127.0.0.1:{srv.port}" in e and "ermission denied" in e, e
        # a file the server may write still works, on the same rfsd
        r = mpiexec(flavour, NPROCS, [program(flavour, "t_nospc"), srv.url("/ok.dat"), "4096", "2"],
                    srv.env())
        acks, errs = parse(r.stdout)
        assert not errs and len(acks) == 2 * NPROCS, r.stdout
        assert_acked_on_server(nobody_export / "ok.dat", acks)
    finally:
        srv.stop()


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_quota_at_the_write(tmp_path, monkeypatch, flavour):
    """EDQUOT maps to MPI_ERR_QUOTA at the write. This kernel has no quota support, so rfsd gets
    its EDQUOT from a pwrite interposer (tests/faults/fakequota.c): a 3.5 MiB limit per file."""
    lib = Path(binary("faults-tests/libfaults_fakequota.so"))
    root = tmp_path / "export"
    root.mkdir()
    limit = 7 * MIB // 2
    monkeypatch.setenv("LD_PRELOAD", str(lib))
    monkeypatch.setenv("RFS_TEST_QUOTA_BYTES", str(limit))
    srv = Server(root, token="quota-token-0123456789abcdef")
    monkeypatch.delenv("LD_PRELOAD")
    try:
        argv = [program(flavour, "t_nospc"), srv.url("/q.dat"), str(MIB), "4"]
        # At the write itself: without the write window (on by default, it reports late).
        r = mpiexec(flavour, NPROCS, argv, srv.env(), extra_env={"RFS_HINTS": "rfs_write_window=0"})
        acks, errs = parse(r.stdout)
        assert r.returncode == 0 and r.stdout.count("DONE") == NPROCS, r.stdout
        assert errs, r.stdout
        for e in errs:
            assert e.split()[2] == "write" and err_field(e, "class") == "QUOTA", e
            assert "/q.dat" in e and f"127.0.0.1:{srv.port}" in e and "quota" in e.lower(), e
        assert all(off + n <= limit for _, off, n in acks), r.stdout
        assert_acked_on_server(root / "q.dat", acks)
        assert (root / "q.dat").stat().st_size == limit  # the short write's part landed
    finally:
        srv.stop()
