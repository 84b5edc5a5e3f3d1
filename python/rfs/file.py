# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""A remote file as a Python raw file object: random-access reads and writes with pread and
pwrite, so io.BufferedReader/BufferedWriter/BufferedRandom and every library that takes a file
object (h5py, pandas, zipfile, numpy) work on it."""
import ctypes
import io

from . import _lib
from .handle import open_handle

# Reads and writes of up to this size go out as one library call (the library splits it into
# pipelined frames); buffered wrappers use it as their buffer size.
DEFAULT_BUFFER = 4 << 20


def make_options(token=None, streams=0, retry_timeout_ms=0, connect_timeout_ms=0,
                 io_timeout_ms=0, compress=None):
    """An rfs_options; also returns the bytes objects that must outlive it (token, compress)."""
    opts = _lib.Options()
    tok = token.encode() if isinstance(token, str) else token
    opts.token = tok
    z = compress.encode() if isinstance(compress, str) else compress
    opts.compress = z
    tok = (tok, z)
    opts.streams = int(streams or 0)
    opts.retry_timeout_ms = int(retry_timeout_ms or 0)
    opts.connect_timeout_ms = int(connect_timeout_ms or 0)
    opts.io_timeout_ms = int(io_timeout_ms or 0)
    return opts, tok


_MODES = {
    # mode letters -> (rfs open flags, readable, writable, append)
    "r": (_lib.RFS_O_RDONLY, True, False, False),
    "r+": (_lib.RFS_O_RDWR, True, True, False),
    "w": (_lib.RFS_O_WRONLY | _lib.RFS_O_CREAT | _lib.RFS_O_TRUNC, False, True, False),
    "w+": (_lib.RFS_O_RDWR | _lib.RFS_O_CREAT | _lib.RFS_O_TRUNC, True, True, False),
    "x": (_lib.RFS_O_WRONLY | _lib.RFS_O_CREAT | _lib.RFS_O_EXCL, False, True, False),
    "x+": (_lib.RFS_O_RDWR | _lib.RFS_O_CREAT | _lib.RFS_O_EXCL, True, True, False),
    "a": (_lib.RFS_O_WRONLY | _lib.RFS_O_CREAT, False, True, True),
    "a+": (_lib.RFS_O_RDWR | _lib.RFS_O_CREAT, True, True, True),
}


def parse_mode(mode):
    m = mode.replace("b", "").replace("t", "")
    if m not in _MODES or "t" in mode:
        raise ValueError(f"rfs: unsupported mode {mode!r} (binary modes: r, r+, w, w+, x, x+, "
                         "a, a+; wrap in io.TextIOWrapper for text)")
    return _MODES[m]


class RemoteFile(io.RawIOBase):
    """An open rfs file. `name` is the rfs URL (rfs://host:port/path or rfs:host:port:/path).
    Data written is on the server when close() or flush_to_server() returns.

    A name ending in .rfsm opens the logical file its manifest describes (striped and
    replicated over several servers, docs/manifest.md), as MPI-IO and the rfs command do; a
    new one is laid out by `servers` (comma-separated rfs names), `stripe_size`,
    `stripe_count` and `replicas` (zero or None: the defaults, the home server alone), and
    `buffered`, `sieve`, `buffer_size` and `log` choose the small-write and noncontiguous-read
    modes, `depot_slot` the server a new file starts on (docs/manifest.md)."""

    def __init__(self, url, mode="rb", token=None, streams=0, retry_timeout_ms=0, compress=None,
                 servers=None, stripe_size=None, stripe_count=None, replicas=None,
                 buffered=None, sieve=None, buffer_size=None, log=None, depot_slot=None,
                 **_ignored):
        super().__init__()
        self._lib = _lib.load()
        flags, self._readable, self._writable, self._append = parse_mode(mode)
        self.name = url
        self.mode = mode
        self._opts, self._tok = make_options(token, streams, retry_timeout_ms, compress=compress)
        layout = dict(servers=servers, stripe_size=stripe_size, stripe_count=stripe_count,
                      replicas=replicas, buffered=buffered, sieve=sieve, buffer_size=buffer_size,
                      log=log, depot_slot=depot_slot)
        self._h = open_handle(url, flags, self._opts, layout)
        self._pos = self._size() if self._append else 0

    # -- raw I/O --
    def readable(self):
        return self._readable

    def writable(self):
        return self._writable

    def seekable(self):
        return True

    def _check(self):
        if self.closed:
            raise ValueError("I/O operation on closed rfs file")

    def _size(self):
        sz = ctypes.c_uint64()
        rc = self._h.get_size(ctypes.byref(sz))
        if rc:
            _lib.raise_for(rc, f"size of {self.name}")
        return sz.value

    def size(self):
        self._check()
        return self._size()

    def pread(self, n, offset):
        """n bytes at offset (fewer at end of file), without moving the position."""
        self._check()
        buf = bytearray(n)
        got = self._pread_into(memoryview(buf), offset)
        del buf[got:]
        return bytes(buf)

    def _pread_into(self, mv, offset):
        n = len(mv)
        if n == 0:
            return 0
        cbuf = (ctypes.c_char * n).from_buffer(mv)
        done = ctypes.c_size_t()
        rc = self._h.pread(cbuf, n, offset, ctypes.byref(done))
        if rc:
            _lib.raise_for(rc, f"read {self.name}")
        return done.value

    def pwrite(self, data, offset):
        self._check()
        if not self._writable:
            raise io.UnsupportedOperation(f"rfs: {self.name} is not open for writing")
        mv = memoryview(data).cast("B")
        n = len(mv)
        if n == 0:
            return 0
        if isinstance(data, bytes):
            cbuf = data             # ctypes passes a pointer to the bytes, no copy
        elif mv.readonly:
            cbuf = bytes(mv)
        else:
            cbuf = (ctypes.c_char * n).from_buffer(mv)
        done = ctypes.c_size_t()
        rc = self._h.pwrite(cbuf, n, offset, ctypes.byref(done))
        if rc:
            _lib.raise_for(rc, f"write {self.name}")
        return done.value

    def readinto(self, b):
        self._check()
        if not self._readable:
            raise io.UnsupportedOperation(f"rfs: {self.name} is not open for reading")
        mv = memoryview(b).cast("B")
        got = self._pread_into(mv, self._pos)
        self._pos += got
        return got

    def readall(self):
        self._check()
        size = self._size()
        out = self.pread(max(size - self._pos, 0), self._pos)
        self._pos += len(out)
        return out

    def write(self, b):
        if self._append:
            self._pos = self._size()
        n = self.pwrite(b, self._pos)
        self._pos += n
        return n

    def seek(self, offset, whence=io.SEEK_SET):
        self._check()
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self._size() + offset
        else:
            raise ValueError(f"bad whence {whence}")
        if pos < 0:
            raise OSError(22, "rfs: seek to a negative offset")
        self._pos = pos
        return pos

    def tell(self):
        self._check()
        return self._pos

    def truncate(self, size=None):
        self._check()
        size = self._pos if size is None else size
        rc = self._h.set_size(size)
        if rc:
            _lib.raise_for(rc, f"truncate {self.name}")
        return size

    def flush_to_server(self):
        """Waits until everything written is on the server's storage (rfs_sync)."""
        self._check()
        rc = self._h.sync()
        if rc:
            _lib.raise_for(rc, f"sync {self.name}")

    def checksum(self, offset=0, length=None):
        """CRC-32C of the bytes as the server's storage holds them."""
        self._check()
        if length is None:
            length = max(self._size() - offset, 0)
        crc = ctypes.c_uint32()
        done = ctypes.c_uint64()
        rc = self._h.checksum(offset, length, ctypes.byref(crc), ctypes.byref(done))
        if rc is None:
            raise io.UnsupportedOperation(f"rfs: {self.name} is a logical file over several "
                                          "servers: no server can checksum it whole")
        if rc:
            _lib.raise_for(rc, f"checksum {self.name}")
        return crc.value

    def close(self):
        if self.closed:
            return
        h, self._h = getattr(self, "_h", None), None
        super().close()
        if h:
            rc = h.close()
            if rc:
                _lib.raise_for(rc, f"close {self.name}")

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def open(url, mode="rb", buffering=-1, encoding=None, errors=None, newline=None, **kw):
    """Like the builtin open, for rfs URLs: binary modes give buffered file objects, text modes
    a TextIOWrapper over them."""
    text = "b" not in mode
    raw = RemoteFile(url, mode.replace("t", "") + ("" if "b" in mode else "b"), **kw)
    if buffering == 0:
        if text:
            raise ValueError("can't have unbuffered text I/O")
        return raw
    size = DEFAULT_BUFFER if buffering in (-1, 1) else buffering
    if raw.readable() and raw.writable():
        f = io.BufferedRandom(raw, size)
    elif raw.writable():
        f = io.BufferedWriter(raw, size)
    else:
        f = io.BufferedReader(raw, size)
    if text:
        return io.TextIOWrapper(f, encoding=encoding, errors=errors, newline=newline)
    return f
