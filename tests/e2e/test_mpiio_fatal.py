# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""MPI_ERRORS_ARE_FATAL (and MPI 4's MPI_ERRORS_ABORT) on rfs files: the job stops with a
non-zero exit after printing the rfs message (server, path, cause) on stderr, on both MPIs.
MPICH 4.0 would print an unrelated internal error stack for codes added to predefined classes,
so the library formats the message itself (tests/mpiio/t_fatal.c)."""
import pytest

from mpiio_util import FLAVOURS, mpiexec, program

pytestmark = pytest.mark.mpi

CASES = {
    # mode: (path the message must name, cause it must give, prefix)
    "open": ("/fatal.dat.missing", "No such file or directory", "librfs-mpiio: fatal error: "),
    "write": ("/fatal.dat", "beyond the largest file offset", "librfs-mpiio: fatal error on rfs:"),
    "abort": ("/fatal.dat", "beyond the largest file offset", "librfs-mpiio: fatal error on rfs:"),
}


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("mode", list(CASES))
def test_fatal_error_handler_prints_rfs_message(rfsd, flavour, mode):
    path, cause, prefix = CASES[mode]
    # MPICH's launcher sometimes tears down the aborting job before it has forwarded the last
    # lines a rank wrote (the rank did write and flush them): every run must stop with a
    # non-zero exit before REACHED, and the message must come through in one of three runs.
    for _ in range(3):
        r = mpiexec(flavour, 2, [program(flavour, "t_fatal"), rfsd.url("/fatal.dat"), mode],
                    rfsd.env())
        out = r.stdout  # stdout and stderr together
        assert r.returncode != 0, out
        assert "REACHED" not in out, out
        lines = [ln for ln in out.splitlines() if ln.startswith(prefix)]
        if lines:
            break
    assert lines, out
    server = f"{rfsd.host}:{rfsd.port}"
    assert any(server in ln and path in ln and cause in ln for ln in lines), out
