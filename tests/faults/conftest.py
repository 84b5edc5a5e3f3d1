# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Fixtures for the fault matrix: the end-to-end fixtures (a real rfsd on loopback with a
temporary export root, tests/e2e/conftest.py) plus a forwarding proxy that can cut, freeze and
heal the link (proxy.py)."""
import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
E2E = HERE.parent / "e2e"
# mpiio_util and rfswire live beside the end-to-end tests; fault tests use them too.
sys.path.insert(0, str(E2E))
sys.path.insert(0, str(HERE))

_spec = importlib.util.spec_from_file_location("rfs_e2e_fixtures", E2E / "conftest.py")
_e2e = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_e2e)

REPO = _e2e.REPO
BUILD = _e2e.BUILD
MPICH_BUILD = _e2e.MPICH_BUILD
OMPI_BUILD = _e2e.OMPI_BUILD
Server = _e2e.Server
binary = _e2e.binary
rfsd = _e2e.rfsd
rfsd_factory = _e2e.rfsd_factory


@pytest.fixture
def link():
    """A forwarding proxy to be pointed at a server: link.start(host, port) returns the port to
    give clients; link.blackhole() / heal() / reset() cut and restore it."""
    from proxy import Proxy
    p = Proxy()
    yield p
    p.close()
