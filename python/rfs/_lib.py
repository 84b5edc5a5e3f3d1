# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""ctypes bindings to librfs.so (include/rfs/rfs.h).

ctypes rather than a compiled extension: the package then needs no compiler or Python headers
at install time and works with any CPython that can load the C library; every call moves a
whole request (the C library pipelines frames inside one rfs_pread/rfs_pwrite), so the
per-call cost of ctypes is not per byte. ctypes releases the GIL during each call, so threads
reading different files or ranges run in parallel."""
import ctypes
import ctypes.util
import errno
import os
import threading

_lock = threading.Lock()
_lib = None

RFS_O_RDONLY, RFS_O_WRONLY, RFS_O_RDWR = 0x01, 0x02, 0x03
RFS_O_CREAT, RFS_O_EXCL, RFS_O_TRUNC, RFS_O_APPEND = 0x04, 0x08, 0x10, 0x20
RFS_TYPE_FILE, RFS_TYPE_DIR, RFS_TYPE_OTHER = 1, 2, 3


class Options(ctypes.Structure):
    """struct rfs_options: zero means the library's default for every field."""
    _fields_ = [
        ("token", ctypes.c_char_p),
        ("connect_timeout_ms", ctypes.c_int),
        ("io_timeout_ms", ctypes.c_int),
        ("streams", ctypes.c_int),
        ("sndbuf", ctypes.c_int),
        ("rcvbuf", ctypes.c_int),
        ("max_frame", ctypes.c_uint32),
        ("window", ctypes.c_int),
        ("write_window", ctypes.c_size_t),
        ("retry_timeout_ms", ctypes.c_int),
        ("compress", ctypes.c_char_p),
        ("tls", ctypes.c_int),
    ]


class StatInfo(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_uint64),
        ("mode", ctypes.c_uint32),
        ("type", ctypes.c_uint32),
        ("mtime_ns", ctypes.c_int64),
    ]


class WriteItem(ctypes.Structure):
    """struct rfs_write_item"""
    _fields_ = [("path", ctypes.c_char_p), ("data", ctypes.c_void_p), ("len", ctypes.c_size_t),
                ("mode", ctypes.c_uint), ("result", ctypes.c_int)]


class ReadItem(ctypes.Structure):
    """struct rfs_read_item"""
    _fields_ = [("path", ctypes.c_char_p), ("data", ctypes.c_void_p), ("cap", ctypes.c_size_t),
                ("len", ctypes.c_size_t), ("result", ctypes.c_int)]


RFS_WRITE_EXCL, RFS_WRITE_SYNC = 0x1, 0x2

LIST_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                           ctypes.POINTER(StatInfo))

# rfs_err -> (Python exception class, errno) so callers can catch FileNotFoundError etc.
_ERRORS = {
    -1: (FileNotFoundError, errno.ENOENT),
    -2: (FileExistsError, errno.EEXIST),
    -3: (PermissionError, errno.EACCES),
    -4: (PermissionError, errno.EACCES),
    -5: (PermissionError, errno.EROFS),
    -6: (ValueError, errno.EINVAL),
    -7: (OSError, errno.ENOSPC),
    -8: (IsADirectoryError, errno.EISDIR),
    -9: (NotADirectoryError, errno.ENOTDIR),
    -10: (OSError, errno.ENOTEMPTY),
    -11: (OSError, errno.EIO),
    -12: (OSError, errno.EPROTO),
    -13: (ConnectionError, errno.ECONNRESET),
    -14: (TimeoutError, errno.ETIMEDOUT),
    -15: (OSError, errno.E2BIG),
    -16: (MemoryError, errno.ENOMEM),
    -17: (OSError, errno.EBADF),
    -18: (OSError, errno.EOPNOTSUPP),
    -19: (BlockingIOError, errno.EBUSY),
    -20: (ValueError, errno.ENAMETOOLONG),
    -21: (OSError, errno.EPROTONOSUPPORT),
    -22: (OSError, errno.EFBIG),
    -23: (OSError, errno.EDQUOT),
}


class RfsError(OSError):
    """An rfs failure: .rfs_code is the library's rfs_err, the message the library's own
    (naming server, path and cause)."""


class ManifestParams(ctypes.Structure):
    """struct rfs_manifest_params (include/rfs/rfs_manifest.h): zero means the default. The
    reserved tail stays zero, so a library whose struct has grown by fields added at its end
    reads them as their defaults."""
    LAYOUT_KEYS = ("servers", "stripe_size", "stripe_count", "replicas", "buffered", "sieve",
                   "buffer_size", "log", "depot_slot")
    _fields_ = [
        ("servers", ctypes.c_char_p),
        ("stripe_size", ctypes.c_uint64),
        ("stripe_count", ctypes.c_int),
        ("replicas", ctypes.c_int),
        ("buffered", ctypes.c_int),
        ("sieve", ctypes.c_int),
        ("buffer_size", ctypes.c_uint64),
        ("log", ctypes.c_int),
        ("depot_slot", ctypes.c_uint),
        ("_reserved", ctypes.c_uint64 * 16),
    ]


class IoOps(ctypes.Structure):
    """The head of struct rfs_io_ops (include/rfs/rfs_io.h), up to close: the slots the
    Python file object calls, and the ones before them that fix their places."""
    _fields_ = [(name, ctypes.c_void_p) for name in (
        "pread", "pwrite", "preadv", "pwritev", "pwritev_gather", "sync", "flush", "write_mark",
        "mark_answered", "get_size", "set_size", "preallocate", "counter", "lock", "unlock",
        "set_view", "view_read", "view_write", "close")]


class IoHead(ctypes.Structure):
    """The head of struct rfs_io: its op table."""
    _fields_ = [("ops", ctypes.POINTER(IoOps))]


def _error_class(cls):
    # One subclass per builtin, so `except FileNotFoundError` and `except rfs.RfsError` both
    # catch a missing file.
    return RfsError if cls is OSError else type("Rfs" + cls.__name__, (RfsError, cls), {})


_CLASSES = {code: (_error_class(cls), no) for code, (cls, no) in _ERRORS.items()}


def error_for(rc, what=""):
    """The exception raise_for would raise, to return or collect instead."""
    try:
        raise_for(rc, what)
    except RfsError as e:
        return e


def raise_for(rc, what=""):
    lib = load()
    msg = lib.rfs_last_error().decode("utf-8", "replace") or lib.rfs_strerror(rc).decode()
    cls, no = _CLASSES.get(rc, (RfsError, errno.EIO))
    # The library's message already names server, path and cause; `what` is for the rare
    # failure that left none.
    err = cls(no, msg if lib.rfs_last_error() else f"{what}: {msg}")
    err.rfs_code = rc
    raise err


def _candidates():
    env = os.environ.get("RFS_LIBRARY")
    if env:
        yield env
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "librfs.so")
    for d in (os.environ.get("RFS_BUILD_DIR"),
              os.path.join(here, "..", "..", "build")):
        if d:
            yield os.path.join(d, "librfs.so")
    found = ctypes.util.find_library("rfs")
    if found:
        yield found
    yield "librfs.so"


def load():
    """The C library, loaded once: $RFS_LIBRARY, next to this package, $RFS_BUILD_DIR, the
    source tree's build/, then the system's library path."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for path in _candidates():
            if os.sep in path and not os.path.exists(path):
                tried.append(path)
                continue
            try:
                lib = ctypes.CDLL(path)
                break
            except OSError as e:
                tried.append(f"{path} ({e})")
        else:
            raise ImportError("rfs: cannot load librfs.so; set RFS_LIBRARY to its path (tried: "
                              + ", ".join(tried) + ")")
        _declare(lib)
        _lib = lib
        return lib


def _declare(lib):
    P = ctypes.c_void_p
    S = ctypes.c_size_t
    U64 = ctypes.c_uint64
    OPT = ctypes.POINTER(Options)
    sig = {
        "rfs_strerror": (ctypes.c_char_p, [ctypes.c_int]),
        "rfs_last_error": (ctypes.c_char_p, []),
        "rfs_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_uint, ctypes.c_uint, OPT,
                                    ctypes.POINTER(P)]),
        "rfs_close": (ctypes.c_int, [P]),
        "rfs_pread": (ctypes.c_int, [P, P, S, U64, ctypes.POINTER(S)]),
        "rfs_pwrite": (ctypes.c_int, [P, P, S, U64, ctypes.POINTER(S)]),
        "rfs_sync": (ctypes.c_int, [P]),
        "rfs_get_size": (ctypes.c_int, [P, ctypes.POINTER(U64)]),
        "rfs_set_size": (ctypes.c_int, [P, U64]),
        "rfs_checksum": (ctypes.c_int, [P, U64, U64, ctypes.POINTER(ctypes.c_uint32),
                                        ctypes.POINTER(U64)]),
        "rfs_delete": (ctypes.c_int, [ctypes.c_char_p, OPT]),
        "rfs_rename": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, OPT]),
        "rfs_mkdir": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_uint, OPT]),
        "rfs_stat": (ctypes.c_int, [ctypes.c_char_p, OPT, ctypes.POINTER(StatInfo)]),
        "rfs_list": (ctypes.c_int, [ctypes.c_char_p, OPT, LIST_FN, P]),
        "rfs_ping": (ctypes.c_int, [ctypes.c_char_p, OPT, ctypes.POINTER(ctypes.c_double)]),
        "rfs_write_file_max": (S, [ctypes.c_char_p, OPT]),
        "rfs_write_files": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(WriteItem), S,
                                           ctypes.c_uint, OPT]),
        "rfs_read_files": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ReadItem), S, OPT]),
        "rfs_is_manifest_name": (ctypes.c_int, [ctypes.c_char_p]),
        "rfs_io_open_manifest": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_uint, ctypes.c_uint,
                                                OPT, ctypes.POINTER(ManifestParams),
                                                ctypes.POINTER(P)]),
        "rfs_manifest_delete": (ctypes.c_int, [ctypes.c_char_p, OPT]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
