#!/usr/bin/env python3
"""The pprof export's two compressors (src/cli/output/gzip_out.h) on a
profile of several MiB: libdeflate writes one gzip member per MiB, zlib
(MEMTRACE_COMPRESSOR=zlib) one stream, and both hold the same profile,
byte for byte, once decompressed; Go's pprof (when installed) reads the
profile of many members whole, with the totals of the single stream.

usage: gzip_members.py MEMTRACE MT_GEN_TRACE
"""
import ctypes.util
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib

MEMTRACE, GEN = sys.argv[1:3]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)


def members(data):
    """The number of gzip members in data, each decompressed in turn."""
    n = 0
    while data:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        d.decompress(data)
        check(d.eof, "member %d is cut short" % (n + 1))
        data = d.unused_data
        n += 1
    return n


def pprof_total(profile, env):
    out = subprocess.run(["go", "tool", "pprof", "-top", "-nodecount=1", "-unit=B",
                          "-sample_index=alloc_space", profile],
                         capture_output=True, text=True, env=env, timeout=300, check=True).stdout
    return int(re.search(r"of (\d+)B total", out).group(1))


def main():
    with tempfile.TemporaryDirectory(prefix="mt_gzip_") as tmp:
        trace = os.path.join(tmp, "adv.ctf")
        # nearly every stack distinct: a profile of about 4 MiB
        subprocess.run([GEN, trace, "--events", "150000", "--seed", "5"], check=True,
                       stdout=subprocess.DEVNULL)
        out = {}
        plain_env = {k: v for k, v in os.environ.items() if k != "MEMTRACE_COMPRESSOR"}
        for name, env in (("default", plain_env),
                          ("zlib", dict(plain_env, MEMTRACE_COMPRESSOR="zlib"))):
            path = os.path.join(tmp, name + ".pb.gz")
            subprocess.run([MEMTRACE, "export", trace, "-o", path], check=True, env=env)
            out[name] = path
        raw = {k: open(v, "rb").read() for k, v in out.items()}
        plain = {k: gzip.decompress(v) for k, v in raw.items()}
        check(len(plain["zlib"]) > 3 << 20,
              "the profile is %d bytes, want several MiB" % len(plain["zlib"]))
        check(plain["default"] == plain["zlib"], "the two compressors' profiles differ")
        check(members(raw["zlib"]) == 1, "zlib wrote %d members" % members(raw["zlib"]))
        n = members(raw["default"])
        if ctypes.util.find_library("deflate"):
            want = (len(plain["default"]) + (1 << 20) - 1) >> 20
            check(n == want, "libdeflate wrote %d members, want %d (one a MiB)" % (n, want))
        else:
            print("libdeflate is not installed: the default is zlib")
            check(n == 1, "zlib wrote %d members" % n)
        if shutil.which("go"):
            env = dict(os.environ, HOME=tmp, GOCACHE=os.path.join(tmp, "gocache"), GOFLAGS="")
            a, b = pprof_total(out["default"], env), pprof_total(out["zlib"], env)
            check(a == b and a > 0, "go tool pprof totals: %d (members) against %d" % (a, b))
        else:
            print("no go (Debian: golang-go): pprof's reading not checked")
    print("%d failures" % len(failures))
    return 1 if failures else 0


sys.exit(main())
