# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""The Python package (python/rfs): file objects over librfs.so and the fsspec filesystem for
rfs:// URLs, checked with the libraries scientists use without MPI: h5py, xarray (h5netcdf),
pandas and zarr. Bytes on the server's disk are compared with what was written, and files
written through rfs with the same files written locally."""
import io
import os
import sys

import pytest

from conftest import BUILD, REPO

sys.path.insert(0, str(REPO / "python"))
os.environ.setdefault("RFS_LIBRARY", str(BUILD / "librfs.so"))
rfs = pytest.importorskip("rfs")
fsspec = pytest.importorskip("fsspec")
np = pytest.importorskip("numpy")

# librfs.so of the sanitizer build needs the ASan runtime loaded before the interpreter.
pytestmark = pytest.mark.nosan


@pytest.fixture
def fs(rfsd):
    return fsspec.filesystem("rfs", host=rfsd.host, port=rfsd.port, token=rfsd.token)


def url(rfsd, path):
    return f"rfs://{rfsd.host}:{rfsd.port}{path}"


def test_file_object_modes_and_bytes_on_disk(rfsd):
    u, disk = url(rfsd, "/f.bin"), rfsd.root / "f.bin"
    data = os.urandom(3 << 20) + b"tail"
    with rfs.open(u, "wb", token=rfsd.token) as f:
        for i in range(0, len(data), 1 << 19):      # several buffered writes
            f.write(data[i:i + (1 << 19)])
    assert disk.read_bytes() == data
    with rfs.open(u, "rb", token=rfsd.token) as f:
        assert f.read(10) == data[:10]
        f.seek(-4, io.SEEK_END)
        assert f.read() == b"tail"
        f.seek(1 << 20)
        assert f.read(5) == data[1 << 20:(1 << 20) + 5]
    with rfs.open(u, "r+b", token=rfsd.token) as f:   # random writes in place
        f.seek(100)
        f.write(b"XYZ")
        f.seek(0)
        assert f.read(3) == data[:3]
    with rfs.open(u, "ab", token=rfsd.token) as f:
        f.write(b"++")
    want = data[:100] + b"XYZ" + data[103:] + b"++"
    assert disk.read_bytes() == want
    with rfs.RemoteFile(u, "r+b", token=rfsd.token) as raw:
        assert raw.size() == len(want)
        assert raw.checksum() == crc32c(want)
        raw.truncate(10)
    assert disk.read_bytes() == want[:10]
    with rfs.open(u, "w", token=rfsd.token) as t:     # text mode
        t.write("line 1\nline 2\n")
    with rfs.open(u, "r", token=rfsd.token) as t:
        assert t.readlines() == ["line 1\n", "line 2\n"]


def test_errors_are_python_exceptions(rfsd):
    with pytest.raises(FileNotFoundError) as e:
        rfs.open(url(rfsd, "/missing/x"), "rb", token=rfsd.token)
    assert isinstance(e.value, rfs.RfsError) and "/missing/x" in str(e.value)
    (rfsd.root / "there").write_bytes(b"1")
    with pytest.raises(FileExistsError):
        rfs.open(url(rfsd, "/there"), "xb", token=rfsd.token)
    with pytest.raises(PermissionError):
        rfs.open(url(rfsd, "/there"), "rb", token="0" * 32)     # wrong token
    with pytest.raises(PermissionError):
        rfs.open(url(rfsd, "/../outside"), "wb", token=rfsd.token)
    assert not (rfsd.root.parent / "outside").exists()
    with pytest.raises(ValueError):
        rfs.open(url(rfsd, "/there"), "rw", token=rfsd.token)
    with rfs.open(url(rfsd, "/there"), "rb", token=rfsd.token) as f, pytest.raises(io.UnsupportedOperation):
        f.write(b"no")
    assert (rfsd.root / "there").read_bytes() == b"1"


def test_fsspec_filesystem_operations(rfsd, fs):
    fs.makedirs("/a/b/c", exist_ok=True)
    assert (rfsd.root / "a/b/c").is_dir()
    fs.pipe_file("/a/b/one.bin", b"0123456789")
    with fsspec.open(url(rfsd, "/a/two.txt"), "w", token=rfsd.token) as f:
        f.write("two\n")
    assert (rfsd.root / "a/two.txt").read_text() == "two\n"
    assert fs.ls("/a", detail=False) == ["/a/b", "/a/two.txt"]
    info = fs.info(url(rfsd, "/a/b/one.bin"))
    assert info["type"] == "file" and info["size"] == 10
    assert fs.info("/a/b")["type"] == "directory"
    assert fs.cat_file("/a/b/one.bin", start=2, end=5) == b"234"
    assert fs.cat_file("/a/b/one.bin", start=-3) == b"789"
    assert sorted(fs.find("/a")) == ["/a/b/one.bin", "/a/two.txt"]
    assert fs.glob("/a/*.txt") == ["/a/two.txt"]
    assert fs.checksum("/a/b/one.bin") == crc32c(b"0123456789")
    fs.mv("/a/two.txt", "/a/b/three.txt")
    assert not (rfsd.root / "a/two.txt").exists() and (rfsd.root / "a/b/three.txt").exists()
    fs.cp_file("/a/b/one.bin", "/a/copy.bin")
    assert (rfsd.root / "a/copy.bin").read_bytes() == b"0123456789"
    assert fs.exists("/a/copy.bin") and not fs.exists("/a/nothing")
    fs.rm("/a", recursive=True)
    assert not (rfsd.root / "a").exists()
    # ROMIO-style names and fsspec's URL parsing agree.
    assert fs._strip_protocol(rfsd.url("/x/y")) == "/x/y"
    assert fs._get_kwargs_from_urls(rfsd.url("/x")) == {"host": rfsd.host, "port": rfsd.port}


def test_h5py_file_through_rfs_equals_local(rfsd, fs, tmp_path):
    h5py = pytest.importorskip("h5py")

    def build(h):
        for i in range(120):                       # many datasets in nested groups
            g = h.create_group(f"grp{i % 12}/ds{i}")
            g.create_dataset("x", data=np.arange(2000, dtype="f8") * i, chunks=(256,))
            g.attrs["step"] = i
        cmp = np.dtype([("id", "i4"), ("v", "f8")])
        h.create_dataset("table", data=np.array([(k, k / 3) for k in range(500)], dtype=cmp))
        r = h.create_dataset("grow", shape=(0, 16), maxshape=(None, 16), chunks=(8, 16), dtype="i8")
        for k in range(40):
            r.resize(r.shape[0] + 8, axis=0)
            r[-8:] = k

    local = tmp_path / "local.h5"
    with h5py.File(local, "w") as h:
        build(h)
    with fs.open("/sim.h5", "w+b") as f, h5py.File(f, "w") as h:
        build(h)
    with fs.open("/sim.h5", "r+b") as f, h5py.File(f, "a") as h:   # reopened to append
        h["grow"].resize(h["grow"].shape[0] + 1, axis=0)
        h["grow"][-1] = -1
    with h5py.File(local, "a") as h:
        h["grow"].resize(h["grow"].shape[0] + 1, axis=0)
        h["grow"][-1] = -1
    # The server's copy, read from its disk, has the content of the local one.
    with h5py.File(local, "r") as a, h5py.File(rfsd.root / "sim.h5", "r") as b:
        names = []
        a.visit(names.append)
        other = []
        b.visit(other.append)
        assert names == other and len(names) > 250
        for n in names:
            if isinstance(a[n], h5py.Dataset):
                assert np.array_equal(a[n][()], b[n][()]), n
            assert dict(a[n].attrs) == dict(b[n].attrs), n
    with fs.open("/sim.h5", "rb") as f, h5py.File(f, "r") as h:      # read back through rfs
        assert h["grp5/ds17/x"][3] == 3 * 17 and h["grow"].shape == (321, 16)


def test_xarray_pandas_zarr(rfsd, fs, tmp_path):
    xr = pytest.importorskip("xarray")
    pd = pytest.importorskip("pandas")
    zarr = pytest.importorskip("zarr")
    pytest.importorskip("h5netcdf")
    so = {"token": rfsd.token}
    ds = xr.Dataset({"temp": (("t", "y", "x"), np.random.rand(6, 20, 30)),
                     "mask": (("y", "x"), np.random.rand(20, 30) > 0.5)},
                    coords={"t": np.arange(6), "y": np.linspace(0, 1, 20)},
                    attrs={"title": "rfs test"})
    local = tmp_path / "field.nc"
    ds.to_netcdf(local, engine="h5netcdf")
    fs.put_file(str(local), "/field.nc")
    assert (rfsd.root / "field.nc").read_bytes() == local.read_bytes()
    with fs.open("/field.nc", "rb") as f:
        assert xr.open_dataset(f, engine="h5netcdf").load().identical(ds)

    df = pd.DataFrame({"step": range(1000), "energy": np.random.rand(1000),
                       "tag": [f"r{k % 7}" for k in range(1000)]})
    df.to_csv(tmp_path / "local.csv", index=False)
    df.to_csv(url(rfsd, "/table.csv"), index=False, storage_options=so)
    assert (rfsd.root / "table.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()
    back = pd.read_csv(url(rfsd, "/table.csv"), storage_options=so)
    assert back.equals(pd.read_csv(tmp_path / "local.csv"))

    store = fsspec.get_mapper(url(rfsd, "/grid.zarr"), token=rfsd.token)
    z = zarr.open(store, mode="w", shape=(200, 100), chunks=(50, 25), dtype="f4")
    z[:] = np.arange(20000, dtype="f4").reshape(200, 100)
    z.attrs["units"] = "K"
    assert (rfsd.root / "grid.zarr" / ".zarray").exists()
    assert len(list((rfsd.root / "grid.zarr").iterdir())) == 4 * 4 + 2
    z2 = zarr.open(fsspec.get_mapper(url(rfsd, "/grid.zarr"), token=rfsd.token), mode="r")
    assert np.array_equal(z2[:], np.arange(20000, dtype="f4").reshape(200, 100))
    assert z2.attrs["units"] == "K"


def test_package_metadata_is_installable():
    """pyproject.toml names the fsspec entry point that installed copies register with."""
    text = (REPO / "python" / "pyproject.toml").read_text()
    assert 'rfs = "rfs.fs:RfsFileSystem"' in text
    assert fsspec.get_filesystem_class("rfs").__name__ == "RfsFileSystem"


def crc32c(data):
    """Bitwise CRC-32C (Castagnoli), independent of the C implementation it checks."""
    crc = 0xFFFFFFFF
    table = _table()
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


_T = []


def _table():
    if not _T:
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
            _T.append(c)
    return _T


def test_many_small_files_pipelined(rfsd, fs, tmp_path):
    """pipe({...}) and cat([...]) (what zarr and fsspec mappers use) move small files in
    pipelined whole-file requests: counted in the library's request trace."""
    import subprocess
    script = tmp_path / "batch.py"
    script.write_text(
        "import sys, fsspec\n"
        f"sys.path.insert(0, {str(REPO / 'python')!r})\n"
        "import rfs\n"
        "fs = fsspec.filesystem('rfs', host=sys.argv[1], port=int(sys.argv[2]), token=sys.argv[3])\n"
        "fs.makedirs('/many', exist_ok=True)\n"
        "data = {f'/many/k{i}': bytes([i % 251]) * (i * 37 % 3000) for i in range(300)}\n"
        "fs.pipe(data)\n"
        "back = fs.cat(sorted(data))\n"
        "assert back == data, 'content differs'\n"
        "got = fs.cat(['/many/k1', '/many/missing'], on_error='omit')\n"
        "assert list(got) == ['/many/k1']\n"
        "print('ok')\n")
    env = dict(os.environ, RFS_TRACE="1", RFS_LIBRARY=str(BUILD / "librfs.so"))
    r = subprocess.run([sys.executable, str(script), rfsd.host, str(rfsd.port), rfsd.token],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]
    assert r.stderr.count("send WRITE_FILE") == 300
    assert r.stderr.count("send READ_FILE") == 302
    assert r.stderr.count("send OPEN") == 0
    for i in (0, 7, 299):
        assert (rfsd.root / "many" / f"k{i}").read_bytes() == bytes([i % 251]) * (i * 37 % 3000)
