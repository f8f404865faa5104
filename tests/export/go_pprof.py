#!/usr/bin/env python3
"""memtrace export read by the real consumer, Go's own pprof (`go tool
pprof`, Debian's golang-go; 77 without it): the profile's totals, and each
function's flat bytes and allocations, equal `memtrace top --by function`'s
for the same trace, exactly at rate 1, within the export's rounding (half a
unit per sample) when sampled. And the fleet path: the profiles of several
traces merged by pprof (`go tool pprof -proto A B C`) give the same tables,
for every sample type, as `memtrace export A B C` (traces of two programs
and two rates).

Functions are compared where pprof and memtrace name the same place: pprof
credits an allocation to the innermost location of its stack, memtrace's
site rule skips up to two locations the trace never described, and pprof
merges functions of one name; so a pprof name is compared with the sum of
memtrace's sites of that name, and address-only locations ([synthetic])
are left out.

usage: go_pprof.py MEMTRACE MT_TOOLS_SYNTH TRACES_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

MEMTRACE, SYNTH, TRACES = sys.argv[1:4]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)


def pprof_top(profile, index, env):
    """{function: flat} and the total, from `go tool pprof -top`."""
    unit = ["-unit=B"] if index == "alloc_space" else []
    out = subprocess.run(["go", "tool", "pprof", "-top", "-nodefraction=0", "-nodecount=0",
                          "-sample_index=" + index, *unit, profile],
                         capture_output=True, text=True, env=env, timeout=300, check=True).stdout
    total = int(re.search(r"of (\d+)B? total", out).group(1))
    flat = {}
    for line in out.splitlines():
        m = re.match(r"^\s*(\d+)B?\s+\S+%\s+\S+%\s+\d+B?\s+\S+%\s+(.*)$", line)
        if m and int(m.group(1)) > 0:
            flat[m.group(2)] = flat.get(m.group(2), 0) + int(m.group(1))
    return flat, total


def compare(trace, tmp, env, exact):
    profile = os.path.join(tmp, os.path.basename(trace) + ".pb.gz")
    subprocess.run([MEMTRACE, "export", "--merge-sources", trace, "-o", profile], check=True)
    top = json.loads(subprocess.run([MEMTRACE, "top", "--by", "function", "-n", "0", "--format",
                                     "json", trace], capture_output=True, text=True,
                                    check=True).stdout)
    nsamples = int(subprocess.run(["go", "tool", "pprof", "-raw", profile], capture_output=True,
                                  text=True, env=env, check=True).stdout.count("\n"))
    for index, key in (("alloc_space", "bytes"), ("alloc_objects", "objects")):
        flat, total = pprof_top(profile, index, env)
        want = top["total"][key]["value"]
        slack = 0 if exact else nsamples / 2 + 1
        check(abs(total - want) <= slack, "%s %s total: pprof %d, memtrace top %r" % (trace, index, total, want))
        ours = {}
        for s in top["sites"]:
            if "function" in s:
                ours[s["function"]] = ours.get(s["function"], 0) + s[key]["value"]
        compared = 0
        for name, value in flat.items():
            if name.startswith("[") or name == "(no backtrace)" or name not in ours:
                continue
            compared += 1
            check(abs(value - ours[name]) <= slack,
                  "%s %s %.60s: pprof %d, memtrace top %r" % (trace, index, name, value, ours[name]))
        check(compared >= 3, "%s %s: %d functions compared" % (trace, index, compared))
        # the heaviest function is the same
        best = max(flat, key=flat.get)
        check(best == max(ours, key=ours.get), "%s %s: heaviest %s vs %s" % (trace, index, best, max(ours, key=ours.get)))


def top_table(profile, index, env):
    """`go tool pprof -top` of every node, from its table's heading on."""
    out = subprocess.run(["go", "tool", "pprof", "-top", "-nodefraction=0", "-nodecount=0",
                          "-sample_index=" + index, profile],
                         capture_output=True, text=True, env=env, timeout=300, check=True).stdout
    lines = out.splitlines()
    start = next((i for i, l in enumerate(lines) if l.lstrip().startswith("flat")), len(lines))
    return lines[start:]


def merged(traces, tmp, env):
    """pprof's merge of one profile a trace against memtrace's export of all."""
    singles = []
    for i, trace in enumerate(traces):
        singles.append(os.path.join(tmp, "single-%d.pb.gz" % i))
        subprocess.run([MEMTRACE, "export", trace, "-o", singles[-1]], check=True)
    ours = os.path.join(tmp, "together.pb.gz")
    subprocess.run([MEMTRACE, "export", *traces, "-o", ours], check=True)
    theirs = os.path.join(tmp, "pprof-merged.pb.gz")
    with open(theirs, "wb") as f:
        subprocess.run(["go", "tool", "pprof", "-proto", *singles], stdout=f,
                       stderr=subprocess.DEVNULL, env=env, timeout=300, check=True)
    for index in ("alloc_objects", "alloc_space", "inuse_objects", "inuse_space"):
        a, b = top_table(theirs, index, env), top_table(ours, index, env)
        check(len(a) > 3, "merge %s: pprof's table has %d lines" % (index, len(a)))
        check(a == b, "merge %s: pprof's merge and memtrace's export differ:\n%s\n--\n%s"
              % (index, "\n".join(a[:8]), "\n".join(b[:8])))
    tags = subprocess.run(["go", "tool", "pprof", "-tags", ours], capture_output=True, text=True,
                          env=env, timeout=300, check=True).stdout
    check("pid:" in tags and "executable:" in tags, "the traces' labels: " + tags[:300])


def main():
    if not shutil.which("go"):
        print("SKIP: no go (Debian: golang-go)")
        return 77
    with tempfile.TemporaryDirectory(prefix="mt_go_pprof_") as tmp:
        env = dict(os.environ, HOME=tmp, GOCACHE=os.path.join(tmp, "gocache"), GOFLAGS="")
        for rate, exact in (("1", True), ("1e-2", False)):
            trace = os.path.join(tmp, "synth-%s.ctf" % rate)
            subprocess.run([SYNTH, trace, trace + ".json", "--rate", rate, "--seed", "3",
                            "--scale", "2"], check=True)
            compare(trace, tmp, env, exact)
        ocaml = os.path.join(TRACES, "workload-1e-4.ctf")
        if os.path.exists(ocaml):
            compare(ocaml, tmp, env, False)
        fleet = [os.path.join(tmp, "synth-1.ctf"), os.path.join(tmp, "synth-1e-2.ctf")]
        merged(fleet + ([ocaml] if os.path.exists(ocaml) else []), tmp, env)
    print("%d failures" % len(failures))
    return 1 if failures else 0


sys.exit(main())
