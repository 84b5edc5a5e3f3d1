# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""fsspec filesystem for rfs:// URLs, so fsspec-aware libraries (pandas, xarray, zarr, dask)
read and write files on an rfsd server:

    pandas.read_csv("rfs://dtn.example.org:7070/run42/table.csv")
    xarray.open_dataset(fsspec.open("rfs://host:7070/run/out.nc").open(), engine="h5netcdf")
    zarr.open(fsspec.get_mapper("rfs://host:7070/run/store.zarr"))

One filesystem instance per server (host, port); paths inside it are the server's absolute
paths. A path ending in .rfsm is a logical file over several servers (docs/manifest.md): open,
info and rm treat it as the logical file (its size, its objects), as MPI-IO and the rfs command
do; ls shows the manifest file as the directory holds it. New logical files are laid out by the
`servers`, `stripe_size`, `stripe_count` and `replicas` storage options. The token comes from `token=` or `token_file=` storage options, else $RFS_TOKEN /
$RFS_TOKEN_FILE, as for every rfs client."""
import ctypes
import posixpath

from fsspec.spec import AbstractFileSystem
from fsspec.utils import infer_storage_options

from . import _lib
from .file import RemoteFile, make_options
from .file import open as _open_buffered


def _kind(t):
    return {_lib.RFS_TYPE_FILE: "file", _lib.RFS_TYPE_DIR: "directory"}.get(t, "other")


def _plain(path):
    """An rfss: name spelt as the rfs: name of the same file (TLS is the class's business)."""
    path = str(path)
    return "rfs:" + path[5:] if path.startswith("rfss:") else path


class RfsFileSystem(AbstractFileSystem):
    protocol = "rfs"
    root_marker = "/"
    scheme = "rfs"  # what url() names files with; RfssFileSystem: rfss (TLS)

    def __init__(self, host="127.0.0.1", port=7070, token=None, token_file=None, streams=0,
                 retry_timeout_ms=0, servers=None, stripe_size=None, stripe_count=None,
                 replicas=None, **kwargs):
        super().__init__(**kwargs)
        self._layout = dict(servers=servers, stripe_size=stripe_size, stripe_count=stripe_count,
                            replicas=replicas)
        if token is None and token_file:
            with open(token_file, "rb") as f:
                token = f.read().strip()
        self.host = host.strip("[]")
        self.port = int(port)
        self._token = token
        self._streams = streams
        self._retry = retry_timeout_ms
        self._opts, self._tok = make_options(token, streams, retry_timeout_ms)
        self._lib = _lib.load()

    # -- URLs --
    @classmethod
    def _strip_protocol(cls, path):
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = _plain(path)
        if path.startswith("rfs://"):
            path = infer_storage_options(path)["path"]
        elif path.startswith("rfs:"):
            # ROMIO-style rfs:HOST:PORT:/path
            path = path.split(":/", 1)[1] if ":/" in path[4:] else path[4:]
        path = "/" + path.lstrip("/")
        return path.rstrip("/") or "/"

    @staticmethod
    def _get_kwargs_from_urls(path):
        path = _plain(path)
        if str(path).startswith("rfs://"):
            o = infer_storage_options(str(path))
            out = {"host": o.get("host", "127.0.0.1")}
            if o.get("port"):
                out["port"] = int(o["port"])
            return out
        if str(path).startswith("rfs:"):
            rest = str(path)[4:]
            if rest.startswith("["):
                host, rest = rest[1:].split("]:", 1)
            else:
                host, rest = rest.split(":", 1)
            return {"host": host, "port": int(rest.split(":", 1)[0])}
        return {}

    def url(self, path):
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self._strip_protocol(path)}"

    def unstrip_protocol(self, name):
        return self.url(name)

    # -- metadata --
    def _entry(self, path, st):
        return {"name": path, "size": st.size if st.type == _lib.RFS_TYPE_FILE else 0,
                "type": _kind(st.type), "mode": st.mode, "mtime": st.mtime_ns / 1e9}

    def _logical(self, path):
        return path.endswith(".rfsm") and self._lib.rfs_is_manifest_name(self.url(path).encode())

    def info(self, path, **kwargs):
        path = self._strip_protocol(path)
        st = _lib.StatInfo()
        rc = self._lib.rfs_stat(self.url(path).encode(), ctypes.byref(self._opts), ctypes.byref(st))
        if rc:
            _lib.raise_for(rc, f"stat {self.url(path)}")
        entry = self._entry(path, st)
        if entry["type"] == "file" and self._logical(path):
            with self._raw(path, "rb") as f:   # the logical file's size, not the manifest's
                entry["size"] = f.size()
        return entry

    def ls(self, path, detail=True, **kwargs):
        path = self._strip_protocol(path)
        if self.info(path)["type"] != "directory":
            entry = self.info(path)
            return [entry] if detail else [entry["name"]]
        out = []

        def one(_ctx, name, st):
            n = name.decode("utf-8", "surrogateescape")
            if n not in (".", ".."):
                out.append(self._entry(posixpath.join(path, n), st.contents))
            return 0

        cb = _lib.LIST_FN(one)
        rc = self._lib.rfs_list(self.url(path).encode(), ctypes.byref(self._opts), cb, None)
        if rc:
            _lib.raise_for(rc, f"list {self.url(path)}")
        out.sort(key=lambda e: e["name"])
        return out if detail else [e["name"] for e in out]

    def mkdir(self, path, create_parents=True, **kwargs):
        path = self._strip_protocol(path)
        if create_parents:
            return self.makedirs(path, exist_ok=True)
        rc = self._lib.rfs_mkdir(self.url(path).encode(), 0o755, ctypes.byref(self._opts))
        if rc:
            _lib.raise_for(rc, f"mkdir {self.url(path)}")

    def makedirs(self, path, exist_ok=False):
        path = self._strip_protocol(path)
        parts = [p for p in path.split("/") if p]
        cur = ""
        for i, p in enumerate(parts):
            cur += "/" + p
            rc = self._lib.rfs_mkdir(self.url(cur).encode(), 0o755, ctypes.byref(self._opts))
            if rc == -2:  # RFS_E_EXIST
                if i == len(parts) - 1 and not exist_ok:
                    _lib.raise_for(rc, f"mkdir {self.url(cur)}")
                continue
            if rc:
                _lib.raise_for(rc, f"mkdir {self.url(cur)}")

    def _delete(self, path):
        # a logical file goes with its objects on every server (the manifest last)
        fn = self._lib.rfs_manifest_delete if self._logical(path) else self._lib.rfs_delete
        rc = fn(self.url(path).encode(), ctypes.byref(self._opts))
        if rc:
            _lib.raise_for(rc, f"delete {self.url(path)}")

    def rm_file(self, path):
        self._delete(self._strip_protocol(path))

    def _rm(self, path):
        self._delete(self._strip_protocol(path))

    def rmdir(self, path):
        self._delete(self._strip_protocol(path))

    def rm(self, path, recursive=False, maxdepth=None):
        paths = self.expand_path(path, recursive=recursive, maxdepth=maxdepth)
        # Deepest first, so directories are empty when their turn comes.
        for p in sorted(paths, key=lambda p: p.count("/"), reverse=True):
            self._delete(p)

    def mv(self, path1, path2, recursive=False, maxdepth=None, **kwargs):
        """A rename on the server (no data moves)."""
        src, dst = self._strip_protocol(path1), self._strip_protocol(path2)
        rc = self._lib.rfs_rename(self.url(src).encode(), dst.encode(), ctypes.byref(self._opts))
        if rc:
            _lib.raise_for(rc, f"rename {self.url(src)} to {dst}")

    def cp_file(self, path1, path2, **kwargs):
        with self.open(path1, "rb") as src, self.open(path2, "wb") as dst:
            while True:
                chunk = src.read(16 << 20)
                if not chunk:
                    break
                dst.write(chunk)

    def checksum(self, path):
        """The server's CRC-32C of the file's bytes."""
        with self._raw(self._strip_protocol(path), "rb") as f:
            return f.checksum()

    def ukey(self, path):
        i = self.info(path)
        return f"{i['size']}-{i['mtime']}"

    def created(self, path):
        raise NotImplementedError("rfs keeps no creation time")

    def modified(self, path):
        import datetime
        return datetime.datetime.fromtimestamp(self.info(path)["mtime"], datetime.timezone.utc)

    # -- many small files at once (zarr chunks, many CSVs): one request each, pipelined --
    BATCH_READ_CAP = 1 << 20   # bigger files take the one-by-one path

    def pipe(self, path, value=None, **kwargs):
        """Writes {path: bytes} in pipelined whole-file requests (rfs_write_files): each file
        is replaced atomically on the server and on stable storage when this returns."""
        items = path if isinstance(path, dict) else {path: value}
        big = {p: v for p, v in items.items()
               if len(v) > self._lib.rfs_write_file_max(None, None)
               or self._logical(self._strip_protocol(p))}
        small = [(self._strip_protocol(p), bytes(v)) for p, v in items.items() if p not in big]
        if small:
            arr = (_lib.WriteItem * len(small))()
            keep = []
            for i, (p, v) in enumerate(small):
                b = ctypes.create_string_buffer(v, len(v))
                keep.append(b)
                arr[i] = _lib.WriteItem(p.encode(), ctypes.cast(b, ctypes.c_void_p), len(v), 0o644, 0)
            self._lib.rfs_write_files(self.url("/").encode(), arr, len(small),
                                      _lib.RFS_WRITE_SYNC, ctypes.byref(self._opts))
            for i, (p, _) in enumerate(small):
                if arr[i].result:
                    _lib.raise_for(arr[i].result, f"write {self.url(p)}")
        for p, v in big.items():
            self.pipe_file(p, v)

    def cat(self, path, recursive=False, on_error="raise", **kwargs):
        """Whole files; several paths (a list, a pattern, recursive) are fetched in pipelined
        requests (rfs_read_files) and returned as {path: bytes}."""
        paths = self.expand_path(path, recursive=recursive)
        single = not (len(paths) > 1 or isinstance(path, list)
                      or paths[0] != self._strip_protocol(path))
        if single:
            return self.cat_file(paths[0])
        out = {}
        logical = [p for p in paths if self._logical(p)]
        for p in logical:   # through the manifest layer, one by one
            try:
                out[p] = self.cat_file(p)
            except Exception as e:
                if on_error == "raise":
                    raise
                if on_error == "return":
                    out[p] = e
        paths = [p for p in paths if p not in set(logical)]
        if not paths:
            return out
        cap = self.BATCH_READ_CAP
        arr = (_lib.ReadItem * len(paths))()
        bufs = []
        for i, p in enumerate(paths):
            b = ctypes.create_string_buffer(cap)
            bufs.append(b)
            arr[i] = _lib.ReadItem(p.encode(), ctypes.cast(b, ctypes.c_void_p), cap, 0, 0)
        self._lib.rfs_read_files(self.url("/").encode(), arr, len(paths), ctypes.byref(self._opts))
        for i, p in enumerate(paths):
            rc = arr[i].result
            try:
                if rc == 0:
                    out[p] = bufs[i].raw[:arr[i].len]
                elif rc == -15:  # RFS_E_TOOBIG: bigger than the batch takes
                    out[p] = self.cat_file(p)
                else:
                    raise _lib.error_for(rc, f"read {self.url(p)}")
            except Exception as e:
                if on_error == "raise":
                    raise
                if on_error == "return":
                    out[p] = e
                # "omit": left out
        return out

    # -- data --
    def cat_file(self, path, start=None, end=None, **kwargs):
        with self._raw(self._strip_protocol(path), "rb") as f:
            size = f.size()
            s = 0 if start is None else (start if start >= 0 else max(size + start, 0))
            e = size if end is None else (end if end >= 0 else max(size + end, 0))
            return f.pread(max(min(e, size) - s, 0), s)

    def _raw(self, path, mode):
        layout = self._layout if self._logical(path) else {}
        return RemoteFile(self.url(path), mode, token=self._token, streams=self._streams,
                          retry_timeout_ms=self._retry, **layout)

    def pipe_file(self, path, value, **kwargs):
        with self._raw(self._strip_protocol(path), "wb") as f:
            f.pwrite(value, 0)

    def _open(self, path, mode="rb", block_size=None, autocommit=True, cache_options=None,
              **kwargs):
        if not autocommit:
            raise NotImplementedError("rfs: transactions (autocommit=False) are not supported")
        layout = self._layout if self._logical(path) else {}
        return _open_buffered(self.url(path), mode if "b" in mode else mode + "b",
                              buffering=block_size or -1, token=self._token,
                              streams=self._streams, retry_timeout_ms=self._retry, **layout)


class RfssFileSystem(RfsFileSystem):
    """rfss:// URLs: the same over TLS (the server is verified by $RFS_TLS_CA or $RFS_TLS_PIN,
    docs/security.md)."""
    protocol = "rfss"
    scheme = "rfss"
