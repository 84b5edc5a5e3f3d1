# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""What `cmake --install` delivers is usable by someone else's build: headers, librfs.so exporting
exactly the public API, a CMake package (find_package(rfs)) and a pkg-config file that each
build a program which then writes through a real rfsd, man pages that render, and --version."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import BUILD, REPO, binary

pytestmark = pytest.mark.nosan  # an installed ASan build would need the sanitizer runtime too

PROGRAM = r"""
#include <rfs/rfs.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
    rfs_file *f;
    const char *msg = "installed\n";
    size_t done = 0;
    if (rfs_open(argv[1], RFS_O_WRONLY | RFS_O_CREAT | RFS_O_TRUNC, 0644, NULL, &f) ||
        rfs_pwrite(f, msg, strlen(msg), 0, &done) || rfs_close(f)) {
        fprintf(stderr, "%s\n", rfs_last_error());
        return 1;
    }
    return done == strlen(msg) ? 0 : 1;
}
"""


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    assert r.returncode == 0, f"{cmd}: {r.stdout}\n{r.stderr}"
    return r


def public_functions():
    names = set()
    for h in (REPO / "include" / "rfs").glob("*.h"):
        names |= set(re.findall(r"\b(rfs_[a-z0-9_]+)\(", h.read_text()))
    return names


def test_librfs_exports_only_the_public_api():
    out = run(["nm", "-D", "--defined-only", str(BUILD / "librfs.so")]).stdout
    exported = {line.split()[-1].split("@")[0] for line in out.splitlines()
                if line.split()[1] in ("T", "W", "D", "B", "R")}
    assert exported == public_functions()


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    p = tmp_path_factory.mktemp("prefix")
    run(["cmake", "--install", str(BUILD), "--prefix", str(p)])
    return p


def libdir(prefix):
    return next(d for d in (prefix / "lib", prefix / "lib64") if (d / "pkgconfig").exists())


def test_install_layout(prefix):
    lib = libdir(prefix)
    for rel in ("bin/rfs", "bin/rfsd", "include/rfs/rfs.h", "include/rfs/rfs_io.h",
                "share/man/man1/rfs.1", "share/man/man8/rfsd.8", "share/doc/rfs/LICENSE",
                "share/bash-completion/completions/rfs"):
        assert (prefix / rel).exists(), rel
    assert (lib / "librfs.so").exists() and (lib / "cmake" / "rfs" / "rfsConfig.cmake").exists()
    assert list((lib / "rfs").glob("*/librfs-mpiio.so")), "no MPI-IO library installed"
    for page in ("man1/rfs.1", "man8/rfsd.8"):
        text = (prefix / "share" / "man" / page).read_text()
        assert "@RFS_" not in text
        r = run(["groff", "-man", "-Tutf8", "-P-cbou", "-ww",
                 str(prefix / "share" / "man" / page)])
        assert "SYNOPSIS" in r.stdout and r.stderr == ""
    for prog in ("rfs", "rfsd"):
        assert re.fullmatch(rf"{prog} \d+\.\d+\.\d+\n",
                            run([str(prefix / "bin" / prog), "--version"]).stdout)


def check_program(exe, rfsd, prefix, name):
    env = dict(rfsd.env(), LD_LIBRARY_PATH=str(libdir(prefix)))
    run([str(exe), rfsd.url(f"/{name}")], env=env)
    assert (rfsd.root / name).read_bytes() == b"installed\n"


def test_pkg_config_builds_a_client(prefix, rfsd, tmp_path):
    src = tmp_path / "p.c"
    src.write_text(PROGRAM)
    env = dict(os.environ, PKG_CONFIG_PATH=str(libdir(prefix) / "pkgconfig"))
    flags = run(["pkg-config", "--cflags", "--libs", "rfs"], env=env).stdout.split()
    assert run(["pkg-config", "--modversion", "rfs"], env=env).stdout.strip()
    run(["cc", "-std=c11", "-Wall", "-Werror", str(src), "-o", str(tmp_path / "p"), *flags])
    check_program(tmp_path / "p", rfsd, prefix, "pc.txt")


def test_cmake_package_builds_a_client(prefix, rfsd, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "p.c").write_text(PROGRAM)
    (proj / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(user C)\n"
        "find_package(rfs 0.1 REQUIRED)\nadd_executable(p p.c)\n"
        "target_link_libraries(p PRIVATE rfs::rfs)\n"
        "message(STATUS \"mpiio: ${RFS_MPIIO_DIR}\")\n")
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    r = run(["cmake", "-S", str(proj), "-B", str(proj / "b"), *gen,
             f"-DCMAKE_PREFIX_PATH={prefix}"])
    assert f"mpiio: {libdir(prefix)}/rfs" in r.stdout
    run(["cmake", "--build", str(proj / "b")])
    check_program(proj / "b" / "p", rfsd, prefix, "cmake.txt")


def test_versions_of_the_build():
    for prog in ("rfs", "rfsd"):
        assert run([binary(prog), "--version"]).stdout.startswith(prog + " ")


def test_rfsd_config_file_and_shipped_examples(tmp_path, prefix):
    """rfsd --config: keys are the long options; the command line wins; mistakes name the
    file and line or the option they became. The shipped example and unit are well formed."""
    root = tmp_path / "export"
    root.mkdir()
    tok = tmp_path / "tok"
    tok.write_text("t" * 32)
    tok.chmod(0o600)
    conf = tmp_path / "rfsd.conf"
    conf.write_text(f"# comment\nroot = {root}\nlisten = 127.0.0.1:1\ntoken-file = {tok}\n"
                    "allow-setid   # a flag\nlog-level = debug\n")
    p = subprocess.Popen([binary("rfsd"), "--config", str(conf), "--listen", "127.0.0.1:0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        assert line.startswith("rfsd listening on 127.0.0.1:") and not line.endswith(":1\n")
    finally:
        p.terminate()
        _, err = p.communicate(timeout=30)
    assert "debug" in err or "info" in err
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z rfs ", err)   # ISO 8601, UTC
    conf.write_text(f"root = {root}\nno-such-key = 1\n")
    r = subprocess.run([binary("rfsd"), "--config", str(conf)], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2 and "--no-such-key=1" in r.stderr
    conf.write_text("root\n= x\n")
    r = subprocess.run([binary("rfsd"), "--config", str(conf)], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2 and f"{conf}:2" in r.stderr
    example = prefix / "share" / "doc" / "rfs" / "rfsd.conf.example"
    keys = [ln.split("=")[0].strip() for ln in example.read_text().splitlines()
            if ln.strip() and not ln.startswith("#")]
    helptext = subprocess.run([binary("rfsd"), "--help"], capture_output=True, text=True).stdout
    assert keys and all(f"--{k}" in helptext for k in keys)
    unit = (prefix / "lib" / "systemd" / "system" / "rfsd.service").read_text()
    assert f"ExecStart={prefix}/bin/rfsd --config /etc/rfs/rfsd.conf" in unit or \
        "/bin/rfsd --config /etc/rfs/rfsd.conf" in unit
    if shutil.which("systemd-analyze"):
        r = subprocess.run(["systemd-analyze", "verify", str(prefix / "lib/systemd/system/rfsd.service")],
                           capture_output=True, text=True)
        assert "Unknown key" not in r.stderr and "Unknown section" not in r.stderr, r.stderr
