# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""SIGHUP rotates or revokes the token: new connections need the file's new token, the old
one is refused, connections that authenticated before continue. A bad new file keeps the
previous token in force."""
import signal
import subprocess

from conftest import binary
from rfswire import Conn, session


def ls(srv, token):
    env = dict(srv.env(), RFS_TOKEN=token)
    return subprocess.run([binary("rfs"), "ls", srv.url("/")], env=env, capture_output=True,
                          text=True, timeout=60)


def reload_and_wait(srv):
    """SIGHUP, then wait until rfsd logged the outcome (its stderr, read line by line)."""
    srv.proc.send_signal(signal.SIGHUP)
    for line in srv.proc.stderr:
        if "SIGHUP" in line or "reload" in line:
            return line
    raise AssertionError("rfsd said nothing after SIGHUP")


def test_sighup_rotates_the_token(rfsd):
    old, new = rfsd.token, "n" * 40
    assert ls(rfsd, old).returncode == 0
    with session(rfsd) as before:                  # authenticated with the old token
        tf = rfsd.root.parent / "token"
        tf.write_text(new)
        assert "token reloaded" in reload_and_wait(rfsd)
        r = ls(rfsd, old)
        assert r.returncode == 1 and "rejected the token" in r.stderr
        assert ls(rfsd, new).returncode == 0
        assert before.call("PING", b"still").check().body == b"still"
        # a too-short token in the file: refused, the current one stays
        tf.write_text("short")
        assert "previous token stays" in reload_and_wait(rfsd)
        assert ls(rfsd, new).returncode == 0
    rfsd.token = new                               # for the fixture's clean stop
