# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""A TCP forwarding proxy that plays the wide-area link between clients and rfsd in fault tests.

blackhole(): the link goes silent in both directions. Bytes already sent stay queued (in the
proxy and in the kernels' socket buffers) and nobody is told: this is what a cut WAN path looks
like to TCP, which keeps retransmitting. heal(): the queued bytes flow again, late. reset():
every connection through the proxy is closed (a router that sends RSTs, a NAT that forgets).
New connections made during a blackhole are accepted and then stall like the old ones."""
import selectors
import socket
import threading


class Proxy:
    def __init__(self):
        self._lk = threading.Lock()
        self._pairs = []          # [client_sock, server_sock]
        self._held = False
        self._stop = False
        self._wake_r, self._wake_w = socket.socketpair()
        self._ls = None
        self._thread = None
        self.target = None
        self._reset_asked = 0
        self._reset_done = 0
        self._reset_cv = threading.Condition(self._lk)

    def start(self, host, port):
        self.target = (host, port)
        self._ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._ls.bind(("127.0.0.1", 0))
        self._ls.listen(128)
        self.port = self._ls.getsockname()[1]
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self.port

    def retarget(self, host, port):
        """New connections go to host:port (a restarted server on another port)."""
        self.target = (host, port)

    def _kick(self):
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    def blackhole(self):
        with self._lk:
            self._held = True
        self._kick()

    def heal(self):
        with self._lk:
            self._held = False
        self._kick()

    def reset(self):
        """Closes every connection, from the proxy's own thread: a socket closed under the
        selector would leave its descriptor registered, and the next accepted connection that
        reuses the number could not be registered."""
        with self._lk:
            if self._thread is None or not self._thread.is_alive():
                pairs, self._pairs = self._pairs, []
                self._close_pairs(pairs)
                return
            ticket = self._reset_asked = self._reset_asked + 1
        self._kick()
        with self._lk:
            self._reset_cv.wait_for(lambda: self._reset_done >= ticket or self._stop, timeout=10)

    @staticmethod
    def _close_pairs(pairs):
        for a, b in pairs:
            for s in (a, b):
                try:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                except OSError:
                    pass
                s.close()

    def connections(self):
        with self._lk:
            return len(self._pairs)

    def close(self):
        with self._lk:
            self._stop = True
            self._reset_cv.notify_all()
        self._kick()
        if self._thread:
            self._thread.join(timeout=10)
        self.reset()
        if self._ls:
            self._ls.close()
        self._wake_r.close()
        self._wake_w.close()

    def _run(self):
        sel = selectors.DefaultSelector()
        sel.register(self._ls, selectors.EVENT_READ, "listen")
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        registered = {}
        while not self._stop:
            with self._lk:
                if self._reset_done < self._reset_asked:
                    doomed, self._pairs = self._pairs, []
                    for a, b in doomed:
                        for s in (a, b):
                            self._unregister(sel, registered, s)
                    self._close_pairs(doomed)
                    self._reset_done = self._reset_asked
                    self._reset_cv.notify_all()
                held = self._held
                pairs = list(self._pairs)
            live = {s for p in pairs for s in p}
            # Stale sockets leave the selector before new ones join: a new connection may
            # have been given the number of one closed since the last turn.
            for s in [s for s in registered if s not in live]:
                self._unregister(sel, registered, s)
            # While held, nothing is read, so nothing is forwarded: the peers' send buffers
            # fill and their writes block, as on a silent path.
            for a, b in pairs:
                for src, dst in ((a, b), (b, a)):
                    want = None if held else (src, dst)
                    if want is None:
                        self._unregister(sel, registered, src)
                    elif src not in registered:
                        try:
                            sel.register(src, selectors.EVENT_READ, want)
                            registered[src] = want
                        except (ValueError, OSError):
                            pass
            for key, _ in sel.select(timeout=0.5):
                if key.data == "wake":
                    try:
                        self._wake_r.recv(4096)
                    except OSError:
                        pass
                elif key.data == "listen":
                    try:
                        c, _ = self._ls.accept()
                    except OSError:
                        continue
                    try:
                        s = socket.create_connection(self.target, timeout=5)
                    except OSError:
                        c.close()
                        continue
                    s.settimeout(None)
                    with self._lk:
                        self._pairs.append([c, s])
                else:
                    src, dst = key.data
                    with self._lk:
                        if self._held:
                            continue
                    try:
                        data = src.recv(1 << 16)
                    except OSError:
                        data = b""
                    if data:
                        try:
                            dst.sendall(data)
                            continue
                        except OSError:
                            pass
                    self._drop(src, sel, registered)
        sel.close()

    @staticmethod
    def _unregister(sel, registered, s):
        if s in registered:
            try:
                sel.unregister(s)
            except (ValueError, KeyError, OSError):
                pass
            del registered[s]

    def _drop(self, sock, sel, registered):
        with self._lk:
            keep = []
            gone = None
            for p in self._pairs:
                if sock in p:
                    gone = p
                else:
                    keep.append(p)
            self._pairs = keep
        if gone:
            for s in gone:
                self._unregister(sel, registered, s)
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
