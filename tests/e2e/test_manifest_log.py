# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Log-structured writes through MPI-IO (docs/manifest.md "Log-structured writes",
rfs_manifest_mode=log) against 4 loopback rfsd: t_view (noncontiguous views) and t_coll
(interleaved collective views) write through their log objects and read their own bytes back
through the overlays (and, run again, through sieved reads); the logical file read through the
C API (direct) must hold exactly the bytes the MPI library's own MPI-IO leaves in a local file,
the manifest is version 3 with overlays into log objects that exist on the servers, and after
`rfs manifest compact` the servers hold exactly the stripes (no log object left) and a version
2 manifest. Augment refuses a file with overlays (naming compact); a replicated file refuses
log mode at open with a clear error."""
import os

import pytest

from mpiio_util import FLAVOURS, mpiexec, program
from test_manifest import (cli, expected_objects, four, objects_on_disk, reference,  # noqa: F401
                           show, tool)

LOG = "rfs_manifest_mode=log"
CASES = [
    # (flavour, program, ranks, stripe count, hints of the second run)
    ("mpich", "t_view", 2, 4, LOG + ";rfs_manifest_read=sieve"),
    ("mpich", "t_coll", 4, 2, LOG),
    ("openmpi", "t_view", 2, 2, LOG + ";rfs_manifest_read=sieve"),
    ("openmpi", "t_coll", 4, 4, LOG),
]


def case_id(c):
    return f"{c[0]}-{c[1]}-{c[2]}ranks-{c[3]}cols"


def logs_on_disk(g, path):
    """{(server index, log path): bytes} of the log objects of `path` on the servers."""
    d, base = os.path.split(path)
    got = {}
    for i in range(len(g.servers)):
        folder = g.root(i) / d.lstrip("/")
        if folder.is_dir():
            for f in folder.iterdir():
                if f.name.startswith(base + ".l"):
                    got[(i, os.path.join(d, f.name))] = f.read_bytes()
    return got


def read_back(g, path, tmp_path, want):
    out = tmp_path / "logical.bin"
    r = tool(g.env(), "get", g.url(path), out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert out.read_bytes() == want


@pytest.mark.mpi
@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_log_writes_same_bytes_then_compact(four, tmp_path, case):  # noqa: F811
    flavour, prog, nprocs, count, again = case
    if flavour not in FLAVOURS:
        pytest.skip(f"{flavour} build not found")
    ss = 4096
    layout = f"rfs_servers={four.servers_hint()};rfs_stripe_size={ss};rfs_stripe_count={count}"
    want = reference(flavour, prog, nprocs, four.env(), tmp_path)
    # the program's own reads go through the overlays: directly, then (a second file) sieved
    for k, hints in enumerate((LOG, again)):
        path = f"/log-{case_id(case)}-{k}.rfsm"
        r = mpiexec(flavour, nprocs, [program(flavour, prog), four.url(path)], four.env(),
                    extra_env={"RFS_HINTS": f"{layout};{hints}"})
        assert r.returncode == 0 and "OK" in r.stdout, r.stdout
        m = show(four, path)
        assert m["version"] == 3 and m["size"] == len(want)
        assert m["overlays"], m
        logs = logs_on_disk(four, path)
        # at most one log per process (one that never wrote has none), each named in the
        # manifest with the bytes it holds, the processes spread over the servers
        nlogs = len(m["logs"])
        assert 1 <= nlogs <= nprocs and len(logs) == nlogs
        for lg in m["logs"]:
            assert len(logs[(lg["server"], lg["path"])]) >= lg["length"]
        assert len({lg["server"] for lg in m["logs"]}) == nlogs
        read_back(four, path, tmp_path, want)
        if k == 0:
            # a new replica would not hold the log bytes: refused, naming compact
            aug = cli(four.env(), "manifest", "augment", four.url(path), "--server",
                      four.url("/", 3))
            assert aug.returncode != 0 and "rfs manifest compact" in aug.stderr, aug.stderr
            assert show(four, path)["generation"] == m["generation"]

        c = cli(four.env(), "manifest", "compact", four.url(path))
        assert c.returncode == 0, c.stderr
        assert f"deleted {nlogs} log object" in c.stdout, c.stdout
        m = show(four, path)
        assert m["version"] == 2 and "overlays" not in m and m["size"] == len(want)
        assert logs_on_disk(four, path) == {}
        assert objects_on_disk(four, path) == expected_objects(want, path, ss, count, 1, 4)
        read_back(four, path, tmp_path, want)


@pytest.mark.mpi
def test_cp_r_leaves_log_objects_out(four, tmp_path):  # noqa: F811
    """rfs cp -r of a directory holding a log-written logical file: the logical file's bytes
    (overlays resolved), none of its stripe or log objects as plain files."""
    flavour = "mpich" if "mpich" in FLAVOURS else next(iter(FLAVOURS), None)
    if flavour is None:
        pytest.skip("no MPI build found")
    hints = f"rfs_servers={four.servers_hint(1)};rfs_stripe_size=4096;{LOG}"
    r = mpiexec(flavour, 2, [program(flavour, "t_view"), four.url("/logcp/a.rfsm")],
                four.env(), extra_env={"RFS_HINTS": hints})
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    assert logs_on_disk(four, "/logcp/a.rfsm")  # on the home server, beside the manifest
    got = tmp_path / "got"
    c = cli(four.env(), "cp", "-r", four.url("/logcp"), got)
    assert c.returncode == 0, c.stderr
    assert sorted(p.name for p in got.iterdir()) == ["a.rfsm"]
    assert (got / "a.rfsm").read_bytes() == reference(flavour, "t_view", 2, four.env(), tmp_path)


@pytest.mark.mpi
def test_log_mode_refused_on_replicated_file(four):  # noqa: F811
    flavour = "mpich" if "mpich" in FLAVOURS else next(iter(FLAVOURS), None)
    if flavour is None:
        pytest.skip("no MPI build found")
    hints = f"rfs_servers={four.servers_hint()};rfs_stripe_size=4096;rfs_stripe_count=2;" \
            f"rfs_replicas=2;{LOG}"
    r = mpiexec(flavour, 1, [program(flavour, "t_basic"), four.url("/log-replicated.rfsm")],
                four.env(), extra_env={"RFS_HINTS": hints})
    assert r.returncode != 0
    assert "rfs_manifest_mode=log is refused on a replicated file" in r.stdout, r.stdout


def test_compaction_keeps_an_open_writers_log_truncation_cuts(four, tmp_path):  # noqa: F811
    """Through the C API (manifest_e2e logcheck): a compaction while the writer holds its log
    open keeps the log (the writer appends to it again, its reads stay right); a truncation
    inside an overlay and an extension read zeros past the cut; after the writer closed, a
    second compaction deletes the log and the servers hold exactly the stripes."""
    path = "/log-capi.rfsm"
    local = tmp_path / "want.bin"
    r = tool(four.env(), "logcheck", four.url(path), four.servers_hint(), local)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "compact1 overlays=16 logs=0" in r.stdout, r.stdout
    assert "compact2 overlays=" in r.stdout and " logs=1" in r.stdout, r.stdout
    want = local.read_bytes()
    assert logs_on_disk(four, path) == {}
    assert objects_on_disk(four, path) == expected_objects(want, path, 4096, 2, 1, 4)
    m = show(four, path)
    assert m["version"] == 2 and m["size"] == len(want)
