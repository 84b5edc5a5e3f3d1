# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Parity with the MPI library's own MPI-IO where the standard leaves room (t_parity) and data
representations (t_datarep): each program runs on a local file with plain MPI (the reference)
and on an rfs: file with librfs-mpiio.so preloaded. Programs print "FACT" lines (must match the
reference), "NOTE" lines (recorded: known differences) and, for t_datarep, "RESULT what ok|bad"
lines (its own checks against MPI_Pack_external output; the reference run only records them).

References: error classes and EOF behaviour are ROMIO's (MPICH), as the item asks, for both
MPI builds of the library. Measured (2 ranks): ROMIO gives MPI_ERR_ARG for a filetype not a
multiple of the etype, a negative displacement and null types, MPI_ERR_TYPE for an uncommitted
type, MPI_ERR_IO for non-monotonic or (on writable files) overlapping filetypes, accepts
overlapping but nondecreasing filetypes on read-only files; Open MPI's romio321 refuses those
too (MPI_ERR_TYPE, and MPI_ERR_TYPE for null types); its OMPIO moves the file pointer by the
count asked for after a short read and hangs in t_parity's nonblocking read past end of file
at 2 ranks. Neither
library converts with user representations (MPI_Register_datarep: MPI_ERR_CONVERSION);
MPICH's ROMIO leaves MPI_File_iwrite_at and read_ordered unconverted in external32; OMPIO
converts every path (so its file is the byte reference for external32). For MPI_LONG in
external32 both libraries' MPI_Pack_external write 4 bytes (Open MPI's MPI_Pack_external_size
still says 8); ROMIO's get_type_extent says 8 and its file holds neither, OMPIO's read-back
fails: rfs follows MPI_Pack_external, and its own checks are the reference there."""
import pytest

from mpiio_util import FLAVOURS, mpiexec, program

pytestmark = pytest.mark.mpi


def lines(out, kind):
    return [ln for ln in out.splitlines() if ln.startswith(kind + " ")]


def run(flavour, nprocs, name, target, env, reference, extra=(), ompio=False, hints=None):
    argv = [program(flavour, name), target, *extra]
    r = mpiexec(flavour, nprocs, argv, env, preload=not reference,
                reference=reference and not ompio,
                extra_env={"RFS_HINTS": hints} if hints else None)
    return r


# Two-phase forced: a collective read through an overlapping view must still go independent.
HINTS = [None, "romio_cb_read=enable;romio_cb_write=enable;cb_nodes=2",
         "rfs_view=client"]


@pytest.mark.parametrize("hints", HINTS, ids=["default", "two-phase", "client-views"])
@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("nprocs", [1, 2, 4])
def test_parity_facts_match_romio(rfsd, tmp_path, flavour, nprocs, hints):
    """Reads past EOF, invalid views, the MPI_FILE_NULL handler, overlapping filetypes."""
    ref = run("mpich", nprocs, "t_parity", str(tmp_path / "ref.dat"), rfsd.env(), True)
    assert ref.returncode == 0 and "OK" in ref.stdout, f"ROMIO reference failed:\n{ref.stdout}"
    got = run(flavour, nprocs, "t_parity", rfsd.url(f"/parity-{flavour}-{nprocs}.dat"),
              rfsd.env(), False, ["--rfs-only"], hints=hints)
    assert got.returncode == 0 and "OK" in got.stdout, f"rfs run failed:\n{got.stdout}"
    want = lines(ref.stdout, "FACT")
    assert len(want) > 20
    assert lines(got.stdout, "FACT") == want
    # Beyond ROMIO: reads stop at end of file without touching the rest of the buffer.
    for ln in lines(got.stdout, "FACT"):
        if ln.startswith("FACT eof."):
            buf = ln.split("buf=")[1]
            assert buf.endswith("ee" * 6), ln


@pytest.mark.parametrize("hints", HINTS, ids=["default", "two-phase", "client-views"])
@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("nprocs", [1, 2, 4])
def test_datarep_against_library_and_pack_external(rfsd, tmp_path, flavour, nprocs, hints):
    """external32 on every access path and a user representation: rfs passes every check of
    its own (file bytes equal MPI_Pack_external's), agrees with the library on the facts, and
    leaves the same bytes as a library run whose own checks all passed (OMPIO for Open MPI)."""
    local = tmp_path / "ref.dat"
    ref = run(flavour, nprocs, "t_datarep", str(local), rfsd.env(), True, ["--reference"],
              ompio=flavour == "openmpi")
    assert ref.returncode == 0 and "OK" in ref.stdout, f"reference run failed:\n{ref.stdout}"
    path = f"/datarep-{flavour}-{nprocs}.dat"
    got = run(flavour, nprocs, "t_datarep", rfsd.url(path), rfsd.env(), False, hints=hints)
    assert got.returncode == 0 and "OK" in got.stdout, f"rfs run failed:\n{got.stdout}"
    results = lines(got.stdout, "RESULT")
    assert len(results) >= 16 and all(ln.endswith(" ok") for ln in results), got.stdout
    assert lines(got.stdout, "FACT") == lines(ref.stdout, "FACT")
    ref_results = dict(ln.rsplit(" ", 1) for ln in lines(ref.stdout, "RESULT"))
    ext32_ok = all(v == "ok" for k, v in ref_results.items() if k.startswith("RESULT ext32.bytes"))
    user_ok = ref_results.get("RESULT user.set_view") == "ok"
    print(f"{flavour} library reference: external32 bytes all right: {ext32_ok}; "
          f"user representations: {user_ok}")
    remote = (rfsd.root / path.lstrip("/")).read_bytes()
    if not ext32_ok and "openmpi" in FLAVOURS:
        # external32 bytes do not depend on the MPI: OMPIO's file is the reference then.
        local = tmp_path / "ompio.dat"
        ref = run("openmpi", nprocs, "t_datarep", str(local), rfsd.env(), True, ["--reference"],
                  ompio=True)
        assert ref.returncode == 0 and "OK" in ref.stdout, f"OMPIO reference failed:\n{ref.stdout}"
        ref_results = dict(ln.rsplit(" ", 1) for ln in lines(ref.stdout, "RESULT"))
        ext32_ok = all(v == "ok" for k, v in ref_results.items()
                       if k.startswith("RESULT ext32.bytes"))
        assert ext32_ok, ref.stdout
    if ext32_ok and user_ok:
        assert remote == local.read_bytes()
    elif ext32_ok:
        # The user representations rewrote the int and float regions afterwards.
        n = 4 * 8 * nprocs
        loc = local.read_bytes()
        flt = len(loc) - n
        assert len(remote) == len(loc)
        assert remote[n:flt] == loc[n:flt]


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("nprocs", [1, 3])
def test_datarep_size_changing(rfsd, flavour, nprocs):
    """Representations that change a type's size work: external32 MPI_LONG (4 bytes in the
    file, 8 in memory, in both libraries' MPI_Pack_external) and a user representation with
    8-byte ints, through a rank-interleaved filetype: the server's bytes are the
    representation's, statuses count memory elements. What nothing can convert (other sizes
    without conversion functions) is refused by name."""
    path = f"/resize-{flavour}-{nprocs}.dat"
    got = run(flavour, nprocs, "t_datarep", rfsd.url(path), rfsd.env(), False)
    assert got.returncode == 0 and "OK" in got.stdout, got.stdout
    # MPI_Register_datarep_c (MPI-4: MPICH 4 declares it, Open MPI 4.1 does not).
    tags = ("ext32long", "wide") + (("widec",) if flavour == "mpich" else ())
    for tag in tags:
        res = [ln for ln in lines(got.stdout, "RESULT") if ln.startswith(f"RESULT {tag}.")]
        assert len(res) == 8 and all(ln.endswith(" ok") for ln in res), got.stdout
    wide = (rfsd.root / (path.lstrip("/") + ".wide")).read_bytes()
    assert len(wide) == 8 * 8 * nprocs
    # Element 0 of rank 0 is 0x01020304, 8 bytes big-endian, sign-extended.
    assert wide[:8] == bytes.fromhex("0000000001020304")
    longs = (rfsd.root / (path.lstrip("/") + ".ext32long")).read_bytes()
    assert len(longs) == 4 * 8 * nprocs and longs[:4] == bytes.fromhex("01020304")
    note = [ln for ln in lines(got.stdout, "NOTE") if "user.plain_wide" in ln][0]
    assert "MPI_INT" in note and "no conversion functions" in note, note
