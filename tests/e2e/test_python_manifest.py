# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""The Python package on logical files (a name ending in .rfsm, docs/manifest.md): rfs.open and
the fsspec filesystem open the file the manifest describes, as MPI-IO and the rfs command do.
A 2-column, 2-replica file over 2 rfsd is written from Python; the objects on both servers'
disks hold exactly their stripes; reads at any offset, info's size, multi-file cat, h5py
through the logical file, and rm (objects and manifest gone) are checked."""
import io
import os
import sys

import pytest

from conftest import BUILD, REPO
from test_manifest import TOKEN, expected_objects, objects_on_disk, show, two  # noqa: F401

sys.path.insert(0, str(REPO / "python"))
os.environ.setdefault("RFS_LIBRARY", str(BUILD / "librfs.so"))
rfs = pytest.importorskip("rfs")
fsspec = pytest.importorskip("fsspec")
np = pytest.importorskip("numpy")

pytestmark = pytest.mark.nosan  # librfs.so of the sanitizer build needs the ASan runtime

SS = 64 << 10


def fs_of(g, **layout):
    s = g.servers[0]
    return fsspec.filesystem("rfs", host=s.host, port=s.port, token=TOKEN, skip_instance_cache=True,
                             **layout)


def test_write_read_striped_replicated(two):
    data = os.urandom(7 * SS + 999)
    path = "/d/py.rfsm"
    (two.root(0) / "d").mkdir()
    with rfs.open(two.url(path), "wb", token=TOKEN, servers=two.servers_hint(),
                  stripe_size=SS, stripe_count=2, replicas=2) as f:
        for i in range(0, len(data), 100_000):   # writes that straddle stripe units
            f.write(data[i:i + 100_000])
    assert objects_on_disk(two, path) == expected_objects(data, path, SS, 2, 2, 2)
    m = show(two, path)
    assert m["size"] == len(data) and all(o["complete"] for o in m["objects"])

    with rfs.open(two.url(path), "rb", token=TOKEN) as f:
        assert f.read() == data
        f.seek(SS - 3)
        assert f.read(10) == data[SS - 3:SS + 7]   # across a column boundary
    with rfs.RemoteFile(two.url(path), "r+b", token=TOKEN) as raw:
        assert raw.size() == len(data)
        raw.pwrite(b"ABCDEF", 2 * SS - 2)
        assert raw.pread(6, 2 * SS - 2) == b"ABCDEF"
        with pytest.raises(io.UnsupportedOperation):
            raw.checksum()                       # no one server holds it whole
        raw.truncate(3 * SS)
    want = (data[:2 * SS - 2] + b"ABCDEF" + data[2 * SS + 4:])[:3 * SS]
    with rfs.open(two.url(path), "rb", token=TOKEN) as f:
        assert f.read() == want
    assert show(two, path)["size"] == 3 * SS


def test_fsspec_on_logical_files(two, tmp_path):
    h5py = pytest.importorskip("h5py")
    fs = fs_of(two, servers=two.servers_hint(), stripe_size=SS, stripe_count=2)
    blob = os.urandom(5 * SS + 17)
    fs.pipe_file("/blob.rfsm", blob)
    fs.pipe({"/small.rfsm": b"tiny logical file", "/plain.txt": b"plain"})
    assert (two.root(0) / "plain.txt").read_bytes() == b"plain"
    assert objects_on_disk(two, "/blob.rfsm") == expected_objects(blob, "/blob.rfsm", SS, 2, 1, 2)
    assert fs.info("/blob.rfsm")["size"] == len(blob)     # the logical size, not the manifest's
    assert fs.cat_file("/blob.rfsm", start=SS, end=SS + 50) == blob[SS:SS + 50]
    got = fs.cat(["/blob.rfsm", "/small.rfsm", "/plain.txt"])
    assert got == {"/blob.rfsm": blob, "/small.rfsm": b"tiny logical file", "/plain.txt": b"plain"}

    local = tmp_path / "local.h5"

    def build(h):
        for i in range(60):
            h.create_dataset(f"g{i % 6}/x{i}", data=np.arange(3000, dtype="f8") * i, chunks=(500,))

    with h5py.File(local, "w") as h:
        build(h)
    with fs.open("/sim.rfsm", "w+b") as f, h5py.File(f, "w") as h:
        build(h)
    with fs.open("/sim.rfsm", "rb") as f, h5py.File(f, "r") as h, h5py.File(local, "r") as a:
        names = []
        a.visit(names.append)
        for n in names:
            if isinstance(a[n], h5py.Dataset):
                assert np.array_equal(a[n][()], h[n][()]), n
    # the logical file's bytes spread over both servers
    assert {i for i, _ in objects_on_disk(two, "/sim.rfsm")} == {0, 1}

    fs.rm("/blob.rfsm")
    assert objects_on_disk(two, "/blob.rfsm") == {}
    assert not (two.root(0) / "blob.rfsm").exists()
    with pytest.raises(FileNotFoundError):
        fs.info("/blob.rfsm")


def test_layout_options_only_for_logical_files(two):
    with pytest.raises(ValueError, match=r"\.rfsm"):
        rfs.open(two.url("/plain.bin"), "wb", token=TOKEN, servers=two.servers_hint())
    with pytest.raises(FileNotFoundError):
        rfs.open(two.url("/missing.rfsm"), "rb", token=TOKEN)
    with pytest.raises(OSError):   # one column cannot have 2 replicas on 1 server
        rfs.open(two.url("/bad.rfsm"), "wb", token=TOKEN, servers=two.server(0), replicas=2)
    assert not (two.root(0) / "bad.rfsm").exists()


def test_log_mode_and_start_server_from_python(two):
    """log=True appends the writes to a log object mapped by the manifest (format version 3);
    depot_slot=2 starts a new file's first column on the second server."""
    (two.root(0) / "d").mkdir()
    want = bytearray(4 * SS)
    with rfs.RemoteFile(two.url("/d/log.rfsm"), "w+b", token=TOKEN, servers=two.servers_hint(),
                        stripe_size=SS, stripe_count=2, log=True) as raw:
        for k in range(8):                       # scattered writes, each appended to the log
            off = k * (SS // 2) + 100
            piece = os.urandom(1000)
            raw.pwrite(piece, off)
            want[off:off + 1000] = piece
        raw.truncate(len(want))
    m = show(two, "/d/log.rfsm")
    assert m["version"] == 3 and m["size"] == len(want), m
    with rfs.open(two.url("/d/log.rfsm"), "rb", token=TOKEN) as f:
        assert f.read() == bytes(want)

    data = os.urandom(3 * SS)
    with rfs.open(two.url("/d/slot.rfsm"), "wb", token=TOKEN, servers=two.servers_hint(),
                  stripe_size=SS, stripe_count=1, depot_slot=2) as f:
        f.write(data)
    assert objects_on_disk(two, "/d/slot.rfsm") == {(1, "/d/slot.rfsm.c0.r0"): data}
