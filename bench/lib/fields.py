# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Data files the benchmarks write: a smooth simulation field and random bytes.

The smooth field is what bench/apps/jacobi3d writes: snapshots (every 8th sweep) of a 3-D
Jacobi diffusion on a 96^3 grid as doubles, interior starting at 0 with the x-low face held at
1.0, so each snapshot is zero ahead of the diffusion front and smooth behind it. Its
compressibility (zstd about 3.7x) is that of real data, which no closed formula reproduces.
"""
import os


def smooth_field(path, size):
    """Jacobi snapshots (doubles) until size bytes: every 8th sweep of a 96^3 grid."""
    import numpy as np
    n = 96
    a = np.zeros((n + 2, n + 2, n + 2))
    a[0, :, :] = 1.0
    with open(path, "wb") as f:
        written = 0
        while written < size:
            for _ in range(8):
                b = a.copy()
                b[1:-1, 1:-1, 1:-1] = (a[:-2, 1:-1, 1:-1] + a[2:, 1:-1, 1:-1] + a[1:-1, :-2, 1:-1]
                                       + a[1:-1, 2:, 1:-1] + a[1:-1, 1:-1, :-2]
                                       + a[1:-1, 1:-1, 2:]) / 6.0
                a = b
            snap = a[1:-1, 1:-1, 1:-1].tobytes()[:size - written]
            f.write(snap)
            written += len(snap)


def random_file(path, size):
    with open(path, "wb") as f:
        left = size
        while left:
            k = min(left, 16 << 20)
            f.write(os.urandom(k))
            left -= k
