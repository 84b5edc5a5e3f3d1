#!/usr/bin/python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Tiny TCP probes that run through the emulated WAN (one process per namespace).

  tcpprobe.py serve --bind ADDR --port P [--out DIR]   # prints "ready", serves until killed
  tcpprobe.py pingpong --host H --port P [--count N] [--size B]
  tcpprobe.py send --host H --port P (--bytes N | --file F) [--name NAME]

Each connection starts with one byte saying what it wants:
  b"P": ping-pong: echo fixed-size messages until the client closes.
  b"S": sink: 8-byte big-endian length, 2-byte name length, name; then that many bytes, which
        are discarded (or written to DIR/name with --out); the server answers b"K" after the
        last byte, so the sender's clock covers delivery, not just its socket buffer.
Client commands print one JSON object.
"""

import argparse
import json
import os
import socket
import struct
import sys
import time

CHUNK = 4 << 20


def recv_exact(conn, n):
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = conn.recv_into(view[got:], n - got)
        if k == 0:
            raise ConnectionError("peer closed after %d of %d bytes" % (got, n))
        got += k
    return bytes(buf)


def serve_pingpong(conn):
    size = struct.unpack("!I", recv_exact(conn, 4))[0]
    if size < 1 or size > 65536:
        return
    while True:
        try:
            msg = recv_exact(conn, size)
        except ConnectionError:
            return
        conn.sendall(msg)


def serve_sink(conn, out_dir):
    length, name_len = struct.unpack("!QH", recv_exact(conn, 10))
    name = recv_exact(conn, name_len).decode() if name_len else ""
    dst = None
    if out_dir and name:
        # names are plain file names inside out_dir; anything else is refused
        if "/" in name or name in (".", ".."):
            return
        dst = open(os.path.join(out_dir, name), "wb")
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    left = length
    while left:
        k = conn.recv_into(view, min(CHUNK, left))
        if k == 0:
            raise ConnectionError("sender closed early")
        if dst:
            dst.write(view[:k])
        left -= k
    if dst:
        dst.close()  # like the other tools: delivered to the server's page cache
    conn.sendall(b"K")


def cmd_serve(a):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((a.bind, a.port))
    ls.listen(8)
    print("ready", flush=True)
    while True:
        conn, _ = ls.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            kind = conn.recv(1)
            if kind == b"P":
                serve_pingpong(conn)
            elif kind == b"S":
                serve_sink(conn, a.out)
        except (ConnectionError, OSError) as e:
            print("serve: %s" % e, file=sys.stderr, flush=True)
        finally:
            conn.close()


def connect(host, port):
    s = socket.create_connection((host, port), timeout=60)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def cmd_pingpong(a):
    s = connect(a.host, a.port)
    s.sendall(b"P" + struct.pack("!I", a.size))
    msg = b"x" * a.size
    rtts = []
    for _ in range(a.count):
        t0 = time.perf_counter()
        s.sendall(msg)
        recv_exact(s, a.size)
        rtts.append((time.perf_counter() - t0) * 1e3)
    s.close()
    srt = sorted(rtts)
    print(json.dumps({
        "count": a.count, "size": a.size,
        "rtt_ms_min": round(srt[0], 3),
        "rtt_ms_median": round(srt[len(srt) // 2], 3),
        "rtt_ms_max": round(srt[-1], 3),
    }))


def cmd_send(a):
    if a.file:
        length = os.path.getsize(a.file)
        src = open(a.file, "rb")
    else:
        length = a.bytes
        src = None
    name = (a.name or "").encode()
    t0 = time.perf_counter()
    s = connect(a.host, a.port)
    s.sendall(b"S" + struct.pack("!QH", length, len(name)) + name)
    block = bytes(CHUNK) if src is None else None
    left = length
    while left:
        n = min(CHUNK, left)
        if src is not None:
            data = src.read(n)
            if len(data) != n:
                raise SystemExit("file shrank while sending")
            s.sendall(data)
        else:
            s.sendall(memoryview(block)[:n])
        left -= n
    if recv_exact(s, 1) != b"K":
        raise SystemExit("bad acknowledgement")
    secs = time.perf_counter() - t0
    s.close()
    print(json.dumps({"bytes": length, "seconds": round(secs, 3),
                      "mbit_s": round(length * 8 / secs / 1e6, 1)}))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("serve")
    p.add_argument("--bind", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--out")
    p = sub.add_parser("pingpong")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--count", type=int, default=20)
    p.add_argument("--size", type=int, default=64)
    p = sub.add_parser("send")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, required=True)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--bytes", type=int)
    g.add_argument("--file")
    p.add_argument("--name")
    a = ap.parse_args()
    if a.cmd in ("pingpong",) and not (1 <= a.size <= 65536 and a.count >= 1):
        ap.error("size must be 1..65536 and count >= 1")
    {"serve": cmd_serve, "pingpong": cmd_pingpong, "send": cmd_send}[a.cmd](a)


if __name__ == "__main__":
    main()
