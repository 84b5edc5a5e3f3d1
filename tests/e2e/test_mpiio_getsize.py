# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""MPI_File_get_size without a round trip when writes return early: as the first call after
open (mpiio/manage.c), and with several ranks on one node at any time (the ranks publish what
they wrote, mpiio/fence.c). tests/mpiio/t_getsize.c asks right after opens, after barriers,
set_size, preallocate and a truncate() by name, and once with MPI_MODE_APPEND; the requests it sends are counted with
RFS_TRACE=1 against a run with the write window off, where every one goes to the server. The
answers themselves are checked against the MPI library's own MPI-IO in
test_mpiio_programs.py."""
import re

import pytest

from mpiio_util import FLAVOURS, mpiexec, program

pytestmark = pytest.mark.mpi


def get_size_requests(srv, flavour, nprocs, hints, name):
    r = mpiexec(flavour, nprocs, [program(flavour, "t_getsize"), srv.url(name)], srv.env(),
                extra_env={"RFS_TRACE": "1", "RFS_HINTS": hints})
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout[-4000:]
    known = sum(int(n) for n in re.findall(r"sizes known without asking (\d+)", r.stdout))
    return len(re.findall(r"rfs trace \S+ \S+ send GET_SIZE ", r.stdout)), known


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("nprocs", [1, 2])
@pytest.mark.parametrize("hints", ["rfs_write_window=8M", "rfs_abt=enable"])
def test_get_size_right_after_open_costs_no_request(rfsd, flavour, nprocs, hints):
    sync, _ = get_size_requests(rfsd, flavour, nprocs, "rfs_write_window=0", f"/gs-sync-{nprocs}")
    early, known = get_size_requests(rfsd, flavour, nprocs, hints, f"/gs-early-{nprocs}")
    if nprocs == 1:
        # each get_size right after the first and the third open, and the look at the size for
        # MPI_MODE_APPEND; the others ask the server
        assert early == sync - 3 and known == 0, (early, sync, known)
    else:
        # ranks on one node: every size is known without asking, except after a truncate()
        # by name, which the ranks could not see (one request per rank)
        assert early == nprocs and sync > 2 * nprocs and known > 0, (early, sync, known)
