# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""rfsd with named exports and identities from a --config file (docs/operations.md
"Identities and exports"), for tests/e2e/test_identities.py and test_quota.py."""
import os
import secrets
import signal
import subprocess
from pathlib import Path

from conftest import binary
from rfswire import Conn


class MultiServer:
    """exports: {name: quota or None}; identities: {name: "a:rw,b:ro"}. Directories, tokens
    and the config file live under base; self.tokens[name] is each identity's token."""

    def __init__(self, base, exports, identities, extra_lines=(), audit=True):
        self.base = Path(base)
        self.dirs, self.tokens = {}, {}
        self.audit = self.base / "audit.log" if audit else None
        lines = []
        for name, quota in exports.items():
            d = self.base / "exports" / name
            d.mkdir(parents=True, exist_ok=True)
            self.dirs[name] = d
            lines.append(f"export {name} {d}" + (f" quota={quota}" if quota else ""))
        for name in identities:
            self.tokens[name] = secrets.token_hex(16)
        self.identities = dict(identities)
        self.extra = list(extra_lines)
        self.export_lines = lines
        self.conf = self.base / "rfsd.conf"
        self.write_config()
        args = [binary("rfsd"), "--config", str(self.conf), "--listen", "127.0.0.1:0"]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("rfsd listening on "):
            self.proc.kill()
            raise RuntimeError(f"rfsd did not start: {line!r} {self.proc.stderr.read()}")
        self.host, port = line.split()[-1].rsplit(":", 1)
        self.port = int(port)

    def token_file(self, name):
        return self.base / f"{name}.token"

    def write_config(self):
        lines = list(self.export_lines)
        for name, rights in self.identities.items():
            tf = self.token_file(name)
            if name in self.tokens:
                tf.write_text(self.tokens[name])
                tf.chmod(0o600)
            lines.append(f"identity {name} token-file={tf} exports={rights}")
        if self.audit:
            lines.append(f"audit-log = {self.audit}")
        self.conf.write_text("\n".join(lines + self.extra) + "\n")

    def reload(self):
        """SIGHUP, then wait until rfsd logged the outcome; returns that line."""
        self.proc.send_signal(signal.SIGHUP)
        for line in self.proc.stderr:
            if "SIGHUP" in line or "reload" in line:
                return line
        raise AssertionError("rfsd said nothing after SIGHUP")

    def reload_lines(self):
        """SIGHUP; the log lines up to its summary (or its refusal)."""
        self.proc.send_signal(signal.SIGHUP)
        lines = []
        for line in self.proc.stderr:
            lines.append(line)
            if "SIGHUP:" in line or "stay in force" in line:
                return lines
        raise AssertionError(f"rfsd said nothing conclusive after SIGHUP: {lines}")

    def url(self, path):
        return f"rfs:{self.host}:{self.port}:{path}"

    def env(self, who):
        e = dict(os.environ)
        e.pop("RFS_TOKEN_FILE", None)
        e["RFS_CONFIG"] = ""
        e["RFS_TOKEN"] = self.tokens[who]
        return e

    def connect(self, who):
        c = Conn(self.host, self.port)
        c.handshake(self.tokens[who])
        return c

    def rfs(self, who, *args):
        return subprocess.run([binary("rfs"), *args], env=self.env(who), capture_output=True,
                              text=True, timeout=120)

    def audit_lines(self):
        return self.audit.read_text().splitlines() if self.audit and self.audit.exists() else []

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)
        return self.proc.returncode


def start_fails(base, lines):
    """rfsd --config with these lines must refuse to start: returns its stderr."""
    conf = Path(base) / "bad.conf"
    conf.write_text("\n".join(lines) + "\n")
    r = subprocess.run([binary("rfsd"), "--config", str(conf), "--listen", "127.0.0.1:0"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "listening" not in r.stdout, (r.returncode, r.stdout, r.stderr)
    return r.stderr
