# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""bench/apps/romio_perf --data (the checkpoint-dump workload of bench/streams/science.py):
its collective write of real science data (the smooth Jacobi field of bench/lib/fields.py,
which compresses about 3.7x) through librfs-mpiio.so leaves the same bytes on the server as
the MPI library's own MPI-IO on a local file, with rfs's defaults (auto compression) and with
zstd forced, on both MPIs; its read phase checks the bytes it reads back against the field."""
import subprocess
import sys
from pathlib import Path

import pytest

from mpiio_util import FLAVOURS, mpiexec

pytestmark = pytest.mark.mpi

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "lib"))
from fields import smooth_field  # noqa: E402

PER_RANK = 3 << 20          # three 1 MiB blocks per rank: every aggregator round interleaves
HINTS = {"defaults": "", "zstd": "rfs_compress=zstd"}


@pytest.fixture(scope="module")
def romio_perf(tmp_path_factory):
    out = tmp_path_factory.mktemp("romio-perf")
    built = {}

    def get(flavour):
        if flavour not in built:
            mpi = "mpich" if flavour == "mpich" else "openmpi"
            d = out / mpi
            r = subprocess.run(["make", "-s", "-C", str(REPO / "bench" / "apps"), f"MPI={mpi}",
                                f"BUILD={d}", f"{d}/romio_perf"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            assert r.returncode == 0, r.stdout
            built[flavour] = d / "romio_perf"
        return str(built[flavour])
    return get


@pytest.fixture(scope="module")
def field(tmp_path_factory):
    # 5 MiB, less than the 4 ranks' 12 MiB, so the ranks' arrays also wrap around its end
    p = tmp_path_factory.mktemp("field") / "smooth.bin"
    smooth_field(str(p), 5 << 20)
    return p


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("hints", list(HINTS))
def test_collective_dump_of_the_field_same_as_local(rfsd, tmp_path, romio_perf, field, flavour,
                                                    hints):
    prog = romio_perf(flavour)
    args = ["--size", str(PER_RANK), "--collective", "--data", str(field)]
    local = tmp_path / "local.dat"
    ref = mpiexec(flavour, 4, [prog, str(local), *args], rfsd.env(), preload=False,
                  reference=True)
    assert ref.returncode == 0 and '"verify": "ok"' in ref.stdout, ref.stdout
    name = f"dump-{flavour}-{hints}.dat"
    extra = {"RFS_HINTS": HINTS[hints]} if HINTS[hints] else {}
    r = mpiexec(flavour, 4, [prog, rfsd.url(f"/{name}"), *args], rfsd.env(), extra_env=extra)
    assert r.returncode == 0 and '"verify": "ok"' in r.stdout, r.stdout
    want = local.read_bytes()
    assert len(want) == 4 * PER_RANK
    # rank r's array is the field from r * PER_RANK, wrapping: the file is not the pattern
    data = field.read_bytes()
    rank1_first_block = (data * 3)[PER_RANK % len(data):][:1 << 20]
    assert want[1 << 20:2 << 20] == rank1_first_block
    assert (rfsd.root / name).read_bytes() == want


def test_no_read_reports_verification_skipped(rfsd, tmp_path, romio_perf, field):
    prog = romio_perf("mpich")
    r = mpiexec("mpich", 2, [prog, str(tmp_path / "x.dat"), "--size", str(1 << 20),
                             "--data", str(field), "--no-read"], rfsd.env(), preload=False,
                reference=True)
    assert r.returncode == 0 and '"verify": "skipped"' in r.stdout, r.stdout
    assert '"bytes_read": 0' in r.stdout, r.stdout
