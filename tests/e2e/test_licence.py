"""Every source file the project wrote says whose it is and under which licence (LICENSE,
BSD-3-Clause): one SPDX line near the top, as facility and distribution reviews expect."""
import subprocess

from conftest import REPO

LINE = "SPDX-License-Identifier: BSD-3-Clause"
SOURCE = (".c", ".h", ".py", ".sh", ".bash", ".zsh", ".in", ".toml", ".service", ".map")


def tracked():
    out = subprocess.run(["git", "-C", str(REPO), "ls-files"], capture_output=True, text=True)
    if out.returncode != 0:
        import pytest
        pytest.skip("not a git checkout")
    return out.stdout.split()


def test_every_source_file_carries_the_licence_line():
    missing = []
    for f in tracked():
        p = REPO / f
        if "/corpus/" in f or f.startswith("bench/results/") or not p.is_file():
            continue
        head = p.read_bytes()[:600]
        script = head.startswith(b"#!")
        if not (f.endswith(SOURCE) or p.name == "CMakeLists.txt" or script):
            continue
        if LINE.encode() not in head:
            missing.append(f)
    assert not missing, f"no licence line: {missing}"
    assert (REPO / "LICENSE").read_text().startswith("BSD 3-Clause License")
