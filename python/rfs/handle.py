# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""What a RemoteFile holds open: a plain file (rfs_open's rfs_file) or the logical file of a
manifest (a name ending in .rfsm, docs/manifest.md: rfs_io_open_manifest's rfs_io, whose calls
go through its op table). Both answer the same few calls, with the C library's status codes."""
import ctypes

from . import _lib

_P, _S, _U64 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64
_RW = ctypes.CFUNCTYPE(ctypes.c_int, _P, _P, _S, _U64, ctypes.POINTER(_S))
_ONE = ctypes.CFUNCTYPE(ctypes.c_int, _P)
_GET_SIZE = ctypes.CFUNCTYPE(ctypes.c_int, _P, ctypes.POINTER(_U64))
_SET_SIZE = ctypes.CFUNCTYPE(ctypes.c_int, _P, _U64)


class PlainHandle:
    """An rfs_file (include/rfs/rfs.h)."""
    logical = False

    def __init__(self, lib, url, flags, opts):
        self._lib = lib
        h = ctypes.c_void_p()
        rc = lib.rfs_open(url.encode(), flags, 0o644, ctypes.byref(opts), ctypes.byref(h))
        if rc:
            _lib.raise_for(rc, f"open {url}")
        self._h = h

    def pread(self, cbuf, n, off, done):
        return self._lib.rfs_pread(self._h, cbuf, n, off, done)

    def pwrite(self, cbuf, n, off, done):
        return self._lib.rfs_pwrite(self._h, cbuf, n, off, done)

    def sync(self):
        return self._lib.rfs_sync(self._h)

    def get_size(self, out):
        return self._lib.rfs_get_size(self._h, out)

    def set_size(self, size):
        return self._lib.rfs_set_size(self._h, size)

    def checksum(self, off, length, crc, done):
        return self._lib.rfs_checksum(self._h, off, length, crc, done)

    def close(self):
        h, self._h = self._h, None
        return self._lib.rfs_close(h) if h else 0


class LogicalHandle:
    """The logical file of a manifest: an rfs_io (include/rfs/rfs_io.h)."""
    logical = True

    def __init__(self, lib, url, flags, opts, layout=None):
        params = _lib.ManifestParams()
        for key, value in (layout or {}).items():
            if value is None:
                continue
            if key not in _lib.ManifestParams.LAYOUT_KEYS:
                raise TypeError(f"rfs: unknown layout option {key!r} (known: "
                                + ", ".join(_lib.ManifestParams.LAYOUT_KEYS) + ")")
            setattr(params, key, value.encode() if isinstance(value, str) else value)
        io = ctypes.c_void_p()
        rc = lib.rfs_io_open_manifest(url.encode(), flags, 0o644, ctypes.byref(opts),
                                      ctypes.byref(params), ctypes.byref(io))
        if rc:
            _lib.raise_for(rc, f"open {url}")
        self._io = io
        ops = ctypes.cast(io, ctypes.POINTER(_lib.IoHead)).contents.ops.contents
        self._pread = _RW(ops.pread)
        self._pwrite = _RW(ops.pwrite)
        self._sync = _ONE(ops.sync)
        self._get_size = _GET_SIZE(ops.get_size)
        self._set_size = _SET_SIZE(ops.set_size)
        self._close = _ONE(ops.close)

    def pread(self, cbuf, n, off, done):
        return self._pread(self._io, cbuf, n, off, done)

    def pwrite(self, cbuf, n, off, done):
        return self._pwrite(self._io, cbuf, n, off, done)

    def sync(self):
        return self._sync(self._io)

    def get_size(self, out):
        return self._get_size(self._io, out)

    def set_size(self, size):
        return self._set_size(self._io, size)

    def checksum(self, off, length, crc, done):
        return None  # the bytes live in several objects: no one server can sum them

    def close(self):
        io, self._io = self._io, None
        return self._close(io) if io else 0


def open_handle(url, flags, opts, layout=None):
    lib = _lib.load()
    if lib.rfs_is_manifest_name(url.encode()):
        return LogicalHandle(lib, url, flags, opts, layout)
    if layout and any(v is not None for v in layout.values()):
        raise ValueError(f"rfs: {url}: layout options are for logical files (names ending "
                         "in .rfsm)")
    return PlainHandle(lib, url, flags, opts)
