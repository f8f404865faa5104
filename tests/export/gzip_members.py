#!/usr/bin/env python3
"""The pprof export's compressors (src/cli/output/gzip_out.h) on a profile
of several MiB: ISA-L (MEMTRACE_COMPRESSOR=isal, the default where it is
installed) and zlib write one gzip stream, libdeflate one member per MiB,
and all hold the same profile, byte for byte, once decompressed; Go's pprof
(when installed) reads each whole, with the same totals. A compressor that
is not one, or does not load, is said, with exit status 1.

usage: gzip_members.py MEMTRACE MT_GEN_TRACE
"""
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


def loads(name, memtrace, trace, tmp, env):
    """Whether MEMTRACE_COMPRESSOR=name exports here."""
    r = subprocess.run([memtrace, "export", trace, "-o", os.path.join(tmp, "probe.pb.gz")],
                       env=dict(env, MEMTRACE_COMPRESSOR=name), capture_output=True, text=True)
    return r.returncode == 0


def main():
    with tempfile.TemporaryDirectory(prefix="mt_gzip_") as tmp:
        trace = os.path.join(tmp, "adv.ctf")
        # nearly every stack distinct: a profile of about 4 MiB
        subprocess.run([GEN, trace, "--events", "150000", "--seed", "5"], check=True,
                       stdout=subprocess.DEVNULL)
        plain_env = {k: v for k, v in os.environ.items() if k != "MEMTRACE_COMPRESSOR"}
        names = ["zlib"] + [n for n in ("isal", "libdeflate")
                            if loads(n, MEMTRACE, trace, tmp, plain_env)]
        for n in ("isal", "libdeflate"):
            if n not in names:
                print("%s does not load here: not compared" % n)
        out = {}
        for name, env in [("default", plain_env)] + [
                (n, dict(plain_env, MEMTRACE_COMPRESSOR=n)) for n in names]:
            path = os.path.join(tmp, name + ".pb.gz")
            subprocess.run([MEMTRACE, "export", trace, "-o", path], check=True, env=env)
            out[name] = path
        raw = {k: open(v, "rb").read() for k, v in out.items()}
        plain = {k: gzip.decompress(v) for k, v in raw.items()}
        check(len(plain["zlib"]) > 3 << 20,
              "the profile is %d bytes, want several MiB" % len(plain["zlib"]))
        for k in plain:
            check(plain[k] == plain["zlib"], "%s's profile differs from zlib's" % k)
        for k in ("zlib", "isal"):
            if k in raw:
                check(members(raw[k]) == 1, "%s wrote %d members" % (k, members(raw[k])))
        if "libdeflate" in raw:
            want = (len(plain["zlib"]) + (1 << 20) - 1) >> 20
            n = members(raw["libdeflate"])
            check(n == want, "libdeflate wrote %d members, want %d (one a MiB)" % (n, want))
        # the default: the fastest that loads
        fastest = next(n for n in ("isal", "libdeflate", "zlib") if n in names)
        check(raw["default"] == raw[fastest], "the default is not %s, the fastest here" % fastest)
        said = "MEMTRACE_COMPRESSOR=lz4: not a compressor (isal, libdeflate or zlib)"
        bad = os.path.join(tmp, "bad.pb.gz")
        r = subprocess.run([MEMTRACE, "export", trace, "-o", bad], capture_output=True, text=True,
                           env=dict(plain_env, MEMTRACE_COMPRESSOR="lz4"))
        check(r.returncode == 1 and said in r.stderr and not os.path.exists(bad),
              "MEMTRACE_COMPRESSOR=lz4: exit %d, said %r" % (r.returncode, r.stderr))
        if shutil.which("go"):
            env = dict(os.environ, HOME=tmp, GOCACHE=os.path.join(tmp, "gocache"), GOFLAGS="")
            totals = {k: pprof_total(v, env) for k, v in out.items()}
            check(len(set(totals.values())) == 1 and totals["zlib"] > 0,
                  "go tool pprof totals differ: %s" % totals)
        else:
            print("no go (Debian: golang-go): pprof's reading not checked")
    print("%d failures" % len(failures))
    return 1 if failures else 0


sys.exit(main())
