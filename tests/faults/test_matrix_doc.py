# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""docs/reliability.md "The fault matrix: outcomes" names every test of the fault matrix, so
the table of outcomes cannot silently fall behind the tests (a new case without a row fails
here), and names no test that does not exist."""
import re

from conftest import REPO

HERE = REPO / "tests" / "faults"


def table_names():
    text = (REPO / "docs" / "reliability.md").read_text()
    start = text.index("## The fault matrix: outcomes")
    end = text.index("\n## ", start + 1)
    return set(re.findall(r"`(test_\w+)`", text[start:end]))


def fault_test_names():
    names = set()
    for f in HERE.glob("test_*.py"):
        names |= set(re.findall(r"^def (test_\w+)\(", f.read_text(), re.M))
    return names


def test_every_fault_test_has_a_row():
    names = fault_test_names()
    names.discard("test_every_fault_test_has_a_row")
    names.discard("test_every_row_names_a_real_test")
    names.discard("test_wan_rows_match_the_committed_result")
    missing = sorted(names - table_names())
    assert not missing, f"tests without a row in docs/reliability.md's outcome table: {missing}"


def test_every_row_names_a_real_test():
    unknown = sorted(table_names() - fault_test_names())
    assert not unknown, f"rows naming tests that do not exist: {unknown}"


def test_wan_rows_match_the_committed_result():
    """The WAN link-cut rows are what bench/wan/linkcut.py --rows makes of
    bench/results/wan_linkcut.json, so the table says what the last run measured."""
    import subprocess
    import sys
    result = REPO / "bench" / "results" / "wan_linkcut.json"
    rows = subprocess.run([sys.executable, str(REPO / "bench" / "wan" / "linkcut.py"), "--rows",
                           str(result)], capture_output=True, text=True, timeout=60, check=True)
    text = (REPO / "docs" / "reliability.md").read_text()
    missing = [r for r in rows.stdout.splitlines() if r and r not in text]
    assert not missing, "rows of bench/wan/linkcut.py --rows not in docs/reliability.md:\n" + \
        "\n".join(missing)
