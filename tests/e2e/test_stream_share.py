# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Additional streams (rfs_streams=auto) against rfsd's per-address connection limit: a client's
extra connections may take only a share of the address's connections, so more clients (more
ranks of a job, another user behind the same NAT) can still make their first connection."""
import re
import subprocess

import pytest

from conftest import binary
from mpiio_util import FLAVOURS, mpiexec, program
from rfswire import E, F_EXTRA, FEAT_XSTREAM, b_hello
from test_hostile_clients import session_raw

TIMEOUT = 120


def fill(n, seed):
    """The bytes api_e2e.c's fill() writes (off 0)."""
    out = bytearray(n)
    for i in range(n):
        x = (i * 0x9E3779B97F4A7C15 ^ seed) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 29
        out[i] = (x ^ (x >> 17)) & 0xFF
    return bytes(out)


def hold(srv, path, streams, seed, env):
    p = subprocess.Popen([binary("client_api_e2e"), "hold", srv.url(""), path, str(streams),
                          str(seed)], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()  # blocks until the file is open (or the program ended)
    return p, line


def test_extra_streams_leave_room_for_first_connections(rfsd_factory):
    """--max-conns-per-addr 8, of which additional streams may hold 4. The first client asks for
    8 streams and gets 5 (its first and 4 more); three more clients then each get their first
    connection. Without the share the first client would hold all 8 and the second would be
    refused at HELLO."""
    srv = rfsd_factory(extra=["--max-conns-per-addr", "8", "--log-level", "info"])
    env = {**srv.env(), "RFS_STREAMS_AUTO_MIN_RTT_US": "0", "RFS_LOG_LEVEL": "info",
           "RFS_CONN_LINGER_MS": "0"}
    procs = []
    try:
        for i in range(4):
            p, line = hold(srv, f"/h{i}", -1, i + 1, env)
            procs.append(p)
            assert line.strip() == "OPENED", f"client {i}: {line!r} {p.communicate()[1]}"
        outs = []
        for p in procs:
            out, err = p.communicate("go\n", timeout=TIMEOUT)
            outs.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for i, (rc, out, err) in enumerate(outs):
        assert rc == 0 and out.strip().endswith("OK"), f"client {i}: rc={rc}\n{out}\n{err}"
    assert "5 of 8 streams" in outs[0][2], outs[0][2]
    assert "additional stream refused" in outs[0][2], outs[0][2]
    for i in range(4):
        assert (srv.root / f"h{i}").read_bytes() == fill(1 << 20, i + 1), f"/h{i}"
    srv.stop()
    log = srv.proc.stderr.read()
    assert "additional stream refused" in log and "--max-stream-conns-per-addr" in log, log[-3000:]


def test_extra_hello_refused_only_past_the_share(rfsd_factory):
    """On the wire: the server offers the mark; past the share (here 2 of 4) a HELLO marked
    as an additional stream gets BUSY naming the option, while an unmarked HELLO (a client's
    first connection) is still taken; an ended stream frees its place in the share; the mark
    on any other request is a protocol error."""
    srv = rfsd_factory(extra=["--max-conns-per-addr", "4", "--max-stream-conns-per-addr", "2"])
    first = session_raw(srv, "127.0.0.2")
    assert first.hello()["features"] & FEAT_XSTREAM
    streams = []
    for _ in range(2):
        s = session_raw(srv, "127.0.0.2")
        rep = s.call("HELLO", b_hello(), flags=F_EXTRA)
        assert rep.status == 0, rep.status
        streams.append(s)
    extra = session_raw(srv, "127.0.0.2")  # a 3rd additional stream: past the share
    rep = extra.call("HELLO", b_hello(), flags=F_EXTRA)
    assert rep.status == E["BUSY"], rep.status
    msg = rep.error().msg
    assert "additional stream refused" in msg and "limit 2" in msg, msg
    assert "--max-stream-conns-per-addr" in msg, msg
    assert extra.peer_closed()
    extra.close()
    second = session_raw(srv, "127.0.0.2")  # a first connection still fits (4 of 4)
    assert second.hello()["version"] == 1
    rep = second.call("PING", b"x", flags=F_EXTRA)
    assert rep.status == E["PROTO"], rep.status
    streams.pop().close()
    second.close()

    def stream_admitted():
        s = session_raw(srv, "127.0.0.2")
        if s.call("HELLO", b_hello(), flags=F_EXTRA).status == 0:
            streams.append(s)
            return True
        s.close()
        return False
    # the server notices the close asynchronously: bounded retries, each a full round trip
    assert any(stream_admitted() for _ in range(200)), "an ended stream did not free its place"
    for c in streams + [first]:
        c.close()


@pytest.mark.mpi
@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("nprocs,hint,per_rank", [
    (1, "rfs_streams=auto", [8]),
    # rank 0 is the node's aggregator: the node's 8 for collective I/O, the others 8/4 each
    (4, "rfs_streams=auto", [8, 2, 2, 2]),
    (4, "rfs_streams=auto;cb_nodes=2", [4, 4, 2, 2]),
    # without collective buffering nobody aggregates: equal shares
    (4, "rfs_streams=auto;romio_cb_write=disable;romio_cb_read=disable", [2, 2, 2, 2]),
    (4, "rfs_streams=auto:3", [3, 3, 3, 3]),
    (2, "rfs_streams=2", None)])
def test_mpiio_ranks_of_a_node_share_its_streams(rfsd, flavour, nprocs, hint, per_rank):
    """rfs_streams=auto gives each of a node's ranks a share of 8 streams (one rank: 8, four:
    2 each) and the node's aggregators the node's 8 among them; auto:N sets a rank's own cap;
    a count opens that many and does not probe. The program's own checks of the bytes must
    pass whatever each rank got."""
    r = mpiexec(flavour, nprocs, [program(flavour, "t_getsize"), rfsd.url(f"/share-{nprocs}")],
                rfsd.env(), extra_env={"RFS_HINTS": hint, "RFS_LOG_LEVEL": "info",
                                       "RFS_STREAMS_AUTO_MIN_RTT_US": "0"})
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout[-4000:]
    caps = [int(n) for n in re.findall(r"streams auto: round trip \S+ ms: up to (\d+) streams",
                                       r.stdout)]
    if per_rank is None:
        assert caps == [], r.stdout[-3000:]
        return
    assert caps, r.stdout[-3000:]
    assert set(caps) == set(per_rank), (caps, r.stdout[-3000:])
    # every open decides on every rank: the caps come in the ranks' proportions
    opens = len(caps) // nprocs
    assert opens >= 1 and sorted(caps) == sorted(per_rank * opens), caps
