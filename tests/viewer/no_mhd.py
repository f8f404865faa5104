#!/usr/bin/env python3
"""memtrace view without libmicrohttpd: the library is dlopened when the
server starts (src/viewer/mhd_load.c), so a missing one must give a clear
message and exit 1, and the other commands must not need it at all.

No library can be uninstalled here, so the test runs a copy of memtrace-tools
(the executable of every command but `run`, which runs on its own) whose
soname string is changed to one that does not exist (same length)."""
import os, subprocess, sys, tempfile

memtrace, trace = sys.argv[1], sys.argv[2]
if not os.path.exists(trace):
    print(f"skip: no {trace}")
    sys.exit(77)
SONAME, MISSING = b"libmicrohttpd.so.12", b"libmicrohttpd.so.99"

data = open(memtrace, "rb").read()
n = data.count(SONAME)
if n != 1:
    sys.exit(f"FAIL: expected the soname once in memtrace-tools (the loader's), found it {n} times")

with tempfile.TemporaryDirectory() as tmp:
    exe = os.path.join(tmp, "memtrace")
    with open(exe, "wb") as f:
        f.write(data.replace(SONAME, MISSING))
    os.chmod(exe, 0o755)

    # not a dependency of the executable: it starts and runs other commands
    r = subprocess.run([exe, "help"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0 or "view" not in r.stdout + r.stderr:
        sys.exit(f"FAIL: memtrace help without the library: {r.returncode} {r.stderr!r}")
    r = subprocess.run([exe, "info", trace], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        sys.exit(f"FAIL: memtrace info without the library: {r.returncode} {r.stderr!r}")

    r = subprocess.run([exe, "view", "--port", "0", trace], capture_output=True, text=True,
                       timeout=30)
    if r.returncode != 1:
        sys.exit(f"FAIL: memtrace view exited {r.returncode}, expected 1: {r.stderr!r}")
    for want in ("memtrace view: cannot load libmicrohttpd.so.99", "libmicrohttpd12"):
        if want not in r.stderr:
            sys.exit(f"FAIL: {want!r} not in the message: {r.stderr!r}")
    if "serving" in r.stdout:
        sys.exit(f"FAIL: said it was serving: {r.stdout!r}")
print("ok")
