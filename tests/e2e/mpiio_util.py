# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Running the MPI-IO test programs (tests/mpiio/*.c) under mpiexec, with and without
librfs-mpiio.so preloaded, for the MPICH build (RFS_BUILD_DIR_MPICH, default RFS_BUILD_DIR) and,
when it exists, the Open MPI build (RFS_BUILD_DIR_OMPI, default build-ompi)."""
import fcntl
import os
import queue
import re
import subprocess
import threading
import time
from pathlib import Path

from conftest import MPICH_BUILD, OMPI_BUILD

FLAVOURS = {"mpich": MPICH_BUILD}
if (OMPI_BUILD / "librfs-mpiio.so").exists():
    FLAVOURS["openmpi"] = OMPI_BUILD

RUN_TIMEOUT = 180


def program(flavour, name):
    p = FLAVOURS[flavour] / "mpiio-tests" / f"mpiio_{name}"
    if not p.exists():
        raise FileNotFoundError(f"{p} not built (cmake --build ... --target mpiio-tests)")
    return str(p)


# Open MPI's ROMIO 3.2.1 component crashes in these programs: their references use OMPIO.
OMPIO_REFERENCE = {"t_nonblock"}


def mpiexec_command(flavour, nprocs, argv, env, preload=True, extra_env=None, reference=False,
                    preload_first=()):
    """The launcher command line and environment for argv on nprocs ranks. preload_first:
    libraries to load before librfs-mpiio.so (a malloc interposer, say)."""
    lib = str(FLAVOURS[flavour] / "librfs-mpiio.so")
    envs = dict(extra_env or {})
    if preload:
        # RFS_PRELOAD_FIRST: libraries that must come before ours (libasan.so for a sanitizer
        # build of the library: the ASan runtime has to be the first object loaded).
        first = [os.environ.get("RFS_PRELOAD_FIRST")] + list(preload_first)
        envs["LD_PRELOAD"] = ":".join([x for x in first if x] + [lib])
    if flavour == "mpich":
        cmd = ["mpiexec.mpich", "-n", str(nprocs), "-genv", "UCX_TLS", "self,sm"]
        for k, v in envs.items():
            cmd += ["-genv", k, v]
    else:
        cmd = ["mpiexec.openmpi", "--oversubscribe", "--allow-run-as-root", "-n", str(nprocs)]
        if reference and Path(argv[0]).name.removeprefix("mpiio_") not in OMPIO_REFERENCE:
            # Open MPI's default OMPIO mishandles some calls (set_size at >1 rank): reference
            # files come from its ROMIO component.
            cmd += ["--mca", "io", "romio321"]
        for k in ("RFS_TOKEN", "RFS_HINTS", "ASAN_OPTIONS", "UBSAN_OPTIONS"):
            if k in env:
                cmd += ["-x", k]
        for k, v in envs.items():
            cmd += ["-x", f"{k}={v}"]
    e = dict(env)
    e.pop("LD_PRELOAD", None)
    return cmd + list(argv), e


def mpiexec(flavour, nprocs, argv, env, preload=True, extra_env=None, reference=False,
            preload_first=()):
    """Runs argv on nprocs ranks; returns the CompletedProcess (stdout+stderr text)."""
    cmd, e = mpiexec_command(flavour, nprocs, argv, env, preload, extra_env, reference,
                             preload_first)
    return subprocess.run(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=RUN_TIMEOUT)


def run_both(srv, tmp_path, flavour, name, nprocs, fname, extra_args=(), extra_env=None):
    """Runs program `name` on a local file and on an rfs file; returns (local bytes, remote
    bytes). Both runs must pass their own checks."""
    prog = program(flavour, name)
    local = tmp_path / f"local-{name}-{nprocs}.dat"
    r = mpiexec(flavour, nprocs, [prog, str(local), *extra_args], srv.env(), preload=False,
                extra_env=extra_env, reference=True)
    assert r.returncode == 0 and "OK" in r.stdout, f"local run failed:\n{r.stdout}"
    remote_path = f"/{name}-{flavour}-{nprocs}.dat"
    r = mpiexec(flavour, nprocs, [prog, srv.url(remote_path), *extra_args], srv.env(),
                extra_env=extra_env)
    assert r.returncode == 0 and "OK" in r.stdout, f"rfs run failed:\n{r.stdout}"
    remote = srv.root / remote_path.lstrip("/")
    return local.read_bytes() if local.exists() else None, \
        remote.read_bytes() if remote.exists() else None


class OutputLines:
    """A program's output lines, read by a thread so that waiting for one has a deadline."""

    def __init__(self, p):
        self.q = queue.Queue()
        self.seen = []
        threading.Thread(target=self._pump, args=(p.stdout,), daemon=True).start()

    def _pump(self, f):
        for line in f:
            self.q.put(line)
        self.q.put(None)

    def wait_for(self, pattern, timeout):
        """The first line matching the regular expression; fails if the output ends or stays
        silent for timeout seconds first."""
        rx = re.compile(pattern)
        while True:
            try:
                line = self.q.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"{pattern} did not come within {timeout} s:\n{''.join(self.seen)}")
            if line is None:
                raise AssertionError(f"{pattern} never came:\n{''.join(self.seen)}")
            self.seen.append(line)
            if rx.search(line):
                return line

    def rest(self, timeout):
        """Everything seen so far plus what follows until the output ends or stays silent for
        timeout seconds."""
        while True:
            try:
                line = self.q.get(timeout=timeout)
            except queue.Empty:
                return "".join(self.seen)
            if line is None:
                return "".join(self.seen)
            self.seen.append(line)


def run_with_pause(cmd, env, at_pause, timeout):
    """Runs an MPI program that prints "paused" and waits for a line on its standard input;
    at_pause() runs there (say, killing a server), then the program goes on. Returns its exit
    status and its whole output."""
    p = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    try:
        out = OutputLines(p)
        out.wait_for(r"^paused", timeout)
        at_pause()
        p.stdin.write("go\n")
        p.stdin.flush()
        text = out.rest(timeout)
        p.wait(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, text


def wait_journals_released(staging, timeout_s=60):
    """Waits until no process holds an ABT journal in staging (bounded). mpiexec can return
    before every rank of a job that failed has finished exiting, and rfs recover rightly skips
    a journal whose writer is alive ("held by another process"), which a test would then see
    as data that never arrived. Returns the journals still held at the bound (empty: none)."""
    deadline = time.monotonic() + timeout_s
    while True:
        held = []
        for j in sorted(Path(staging).glob("*.rfsj")):
            try:
                fd = os.open(j, os.O_RDWR)
            except FileNotFoundError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                held.append(j.name)
            finally:
                os.close(fd)  # (releases the lock, if this took it)
        if not held or time.monotonic() > deadline:
            return held
        time.sleep(0.05)
