# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""rfs from Python, without MPI: `rfs.open(url, mode)` gives a file object on an rfsd server,
and importing the package registers the "rfs" protocol (and "rfss", the same over TLS) with
fsspec (installed packages also register both through the fsspec.specs entry points).

    import rfs
    with rfs.open("rfs://dtn.example.org:7070/run42/out.bin", "wb") as f:
        f.write(data)
    fs = rfs.RfsFileSystem("dtn.example.org", 7070)
    fs.ls("/run42")
"""
from ._lib import RfsError
from .file import RemoteFile, open

__all__ = ["RfsError", "RemoteFile", "open", "RfsFileSystem", "RfssFileSystem"]

try:
    import fsspec

    from .fs import RfsFileSystem, RfssFileSystem

    fsspec.register_implementation("rfs", RfsFileSystem, clobber=True)
    fsspec.register_implementation("rfss", RfssFileSystem, clobber=True)
except ImportError:  # fsspec is optional for plain file access
    RfsFileSystem = RfssFileSystem = None
