#!/usr/bin/env python3
"""memtrace top, leaks and flamegraph on several traces (a process tree, a fleet): the
sites (stacks) of each matched by name and their figures added, exactly at
rate 1; a directory as its .ctf files; --by-process; what cannot be ranked
together.

usage: multi_test.py MEMTRACE MT_TOOLS_SYNTH
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

MEMTRACE, SYNTH = sys.argv[1:3]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)


def top(*args, status=0):
    p = subprocess.run([MEMTRACE, "top", "-n", "0", "--format", "json", *args],
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == status, f"top {args}: exit {p.returncode}, want {status}: {p.stderr}")
    return json.loads(p.stdout) if p.returncode == 0 else p.stderr


def leaks(*args, status=0):
    p = subprocess.run([MEMTRACE, "leaks", "-n", "0", "--depth", "0", "--format", "json", *args],
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == status, f"leaks {args}: exit {p.returncode}, want {status}: {p.stderr}")
    return json.loads(p.stdout) if p.returncode == 0 else p.stderr


def stack_key(st):
    return tuple((f.get("function"), f.get("file"), f.get("line"), f.get("code"))
                 for f in st["frames"])


def by_stack(doc):
    out = {}
    for st in doc["stacks"]:
        v = out.setdefault(stack_key(st), [0, 0, 0])
        v[0] += st["bytes"]["value"]
        v[1] += st["objects"]["value"]
        v[2] += st["samples"]
    return out


def check_leaks(paths):
    """Leaks of the traces together: each stack's figures the sum of its
    figures in each trace; --by-process keeps each trace's own."""
    want = {}
    for p in paths:
        for k, v in by_stack(leaks(p)).items():
            w = want.setdefault(k, [0, 0, 0])
            for i in range(3):
                w[i] += v[i]
    both = leaks(*paths)
    got = by_stack(both)
    check(len(got) > 3 and got == want, "leaks: the stacks of the traces together are the sums")
    check(len(got) == len(both["stacks"]), "leaks: a stack printed the same is one group")
    check([t["trace"] for t in both["traces"]] == paths, "leaks: the traces listed")
    check(all("age_s" not in st for st in both["stacks"]), "leaks: no age across traces")
    bp = leaks("--by-process", *paths)
    for i, p in enumerate(paths):
        mine = {}
        for st in bp["stacks"]:
            if st["trace_index"] == i:
                mine[stack_key(st)] = [st["bytes"]["value"], st["objects"]["value"],
                                       st["samples"]]
        check(mine == by_stack(leaks(p)), f"leaks --by-process: trace {i}'s stacks are its own")
    shown = leaks("-n", "2", *paths)
    check(len(shown["stacks"]) == 2 and shown["stacks_total"] == len(got),
          "leaks -n 2: two shown of all")


def folded(*args):
    p = subprocess.run([MEMTRACE, "flamegraph", *args], capture_output=True, text=True,
                       timeout=120)
    check(p.returncode == 0, f"flamegraph {args}: exit {p.returncode}: {p.stderr}")
    lines = [l.rsplit(" ", 1) for l in p.stdout.splitlines()]
    return [(stack, int(w)) for stack, w in lines]


def check_flamegraph(paths):
    """A stack's weight across traces is the sum of its weights; the lines
    in the order of one trace's output (name by name)."""
    for opts in ([], ["--weight", "bytes"], ["--weight", "objects", "--inverted"]):
        want = {}
        for p in paths:
            for stack, w in folded(*opts, p):
                want[stack] = want.get(stack, 0) + w
        got = folded(*opts, *paths)
        check(dict(got) == want and len(got) == len(want) and len(got) > 3,
              f"flamegraph {opts}: the traces' stacks summed")
        names = [stack.split(";") for stack, _ in got]
        check(names == sorted(names, key=lambda n: [x.encode() for x in n]),
              f"flamegraph {opts}: stacks in order, name by name")
    one = folded(paths[0])
    check(folded(paths[0], paths[0]) == [(s, 2 * w) for s, w in one],
          "flamegraph: a trace twice is its own output, doubled")


def key(s):
    return (s.get("function"), s.get("file"), s.get("line"), "code" in s)


def by_site(doc):
    out = {}
    for s in doc["sites"]:
        k = key(s)
        v = out.setdefault(k, [0, 0, 0, 0])
        v[0] += s["bytes"]["value"]
        v[1] += s["objects"]["value"]
        v[2] += s["samples"]
        v[3] += s["sampled_objects"]
    return out


def main():
    tmp = tempfile.mkdtemp(prefix="mt_multi_")
    try:
        paths = []
        for seed in (3, 4, 5):
            p = os.path.join(tmp, f"t{seed}.ctf")
            subprocess.run([SYNTH, p, p + ".json", "--rate", "1", "--seed", str(seed)], check=True)
            paths.append(p)
        for by in ("function", "line"):
            each = [by_site(top("--by", by, p)) for p in paths]
            both = top("--by", by, *paths)
            want = {}
            for e in each:
                for k, v in e.items():
                    w = want.setdefault(k, [0, 0, 0, 0])
                    for i in range(4):
                        w[i] += v[i]
            got = by_site(both)
            check(set(got) == set(want), f"by {by}: the sites of the traces together")
            for k in set(got) & set(want):
                check(got[k] == want[k], f"by {by}: {k}: {got[k]} != {want[k]} (the sum of each)")
            singles = [top("--by", by, p)["total"] for p in paths]
            check(both["total"]["samples"] == sum(t["samples"] for t in singles) and
                  both["total"]["bytes"]["value"] == sum(t["bytes"]["value"] for t in singles),
                  f"by {by}: the total is the sum of the traces'")
            check([t["trace"] for t in both["traces"]] == paths, f"by {by}: the traces listed")
        check_leaks(paths)
        check_flamegraph(paths)
        # a directory is its traces
        d = os.path.join(tmp, "dir")
        os.mkdir(d)
        for p in paths:
            shutil.copy(p, d)
        check(by_site(top(d)) == by_site(top(*sorted(os.path.join(d, os.path.basename(p))
                                                    for p in paths))), "a directory")
        # by process: each trace's sites apart, named by their trace
        bp = top("--by-process", *paths)
        for i, p in enumerate(paths):
            mine = {key(s): (s["bytes"]["value"], s["samples"]) for s in bp["sites"]
                    if s["trace_index"] == i}
            own = {k: (v[0], v[2]) for k, v in by_site(top(p)).items()}
            check(mine == own, f"--by-process: trace {i}'s rows are its own ranking")
        # what cannot be ranked together
        other = os.path.join(tmp, "r.ctf")
        subprocess.run([SYNTH, other, other + ".json", "--rate", "1e-2", "--seed", "6"], check=True)
        err = top(paths[0], other, status=1)
        check("different sample rates" in err, f"different rates: {err}")
        err = leaks(paths[0], other, status=1)
        check("different sample rates" in err, f"leaks, different rates: {err}")
        err = top("--by", "stack", *paths[:2], status=2)
        check("--by stack ranks one trace" in err, f"by stack: {err}")
        empty = os.path.join(tmp, "empty")
        os.mkdir(empty)
        err = top(empty, status=1)
        check("no trace" in err, f"an empty directory: {err}")
    finally:
        shutil.rmtree(tmp)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


sys.exit(main())
