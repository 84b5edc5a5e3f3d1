# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""SIGTERM ends rfsd within a bound whatever its clients do (issue #22 item 5): requests in
flight get RFSD_SHUTDOWN_MS (10 s), then every connection is cut; clients see a lost connection
and carry on against the restarted server."""
import signal
import socket
import subprocess
import time

from conftest import Server, binary
import rfswire
from test_reconnect import Lines, kill, pattern, restart

MiB = 1 << 20


def test_sigterm_with_a_client_that_stopped_reading(rfsd):
    # A client that pipelines big reads and never reads the replies: rfsd's workers block in
    # their sends (the send timeout is a minute).
    (rfsd.root / "big.bin").write_bytes(b"\x5a" * (16 * MiB))
    hog = rfswire.Conn.to(rfsd)
    hog.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    hog.handshake(rfsd.token)
    fh = hog.open("/big.bin", 2)
    for _ in range(32):
        hog.send("PREAD", rfswire.b_pread(fh, 0, 4 * MiB))
    # An honest writer streaming at the same time, with recovery on.
    w = subprocess.Popen([binary("rfs_writer"), rfsd.url("/honest.bin"), str(64 * MiB), "21"],
                         env=rfsd.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = Lines(w)
    srv2 = None
    try:
        out.wait_for(lambda l: l.startswith("wrote ") and int(l.split()[1]) >= 4 * MiB)
        t0 = time.monotonic()
        rfsd.stop(sig=signal.SIGTERM, timeout=60)
        took = time.monotonic() - t0
        assert took < 20, f"rfsd took {took:.1f} s to stop after SIGTERM"
        assert rfsd.proc.returncode == 0
        srv2 = restart(rfsd)
        lines = out.rest()
        # Joined, not a list: pytest cuts a long list's repr before the writer's error line.
        assert w.returncode == 0 and lines[-1] == "closed", "\n".join(lines[-3:]) + "\n" + \
            w.stderr.read()
        assert (rfsd.root / "honest.bin").read_bytes() == pattern(0, 64 * MiB, 21)
    finally:
        hog.close()
        kill(w)
        if srv2:
            srv2.stop()
