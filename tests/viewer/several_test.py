#!/usr/bin/env python3
"""The viewer on several traces read as one (a process tree started at
different times): its answers against the command line's on the same
traces: totals, each named site, leaks, statistics and the live heap (read
as one analysis by both: exactly the same); `memtrace report` of the
traces; the resident memory recorded beside a trace; traces of two rates
read at the lower one, the other thinned.

usage: several_test.py MEMTRACE MT_TOOLS_SYNTH
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import viewer_server
from viewer_server import check, failures

MEMTRACE, SYNTH = sys.argv[1:3]


def cli(*args):
    p = subprocess.run([MEMTRACE, *args], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"memtrace {args}: exit {p.returncode}: {p.stderr}")
    return json.loads(p.stdout) if p.returncode == 0 else {}


def close(a, b, path="$"):
    """Equal JSON values, numbers within 1e-9 relative (sums in another
    order); None, or where they differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return f"{path}: keys {sorted(set(a) ^ set(b))}"
        return next((d for k in a for d in [close(a[k], b[k], f"{path}.{k}")] if d), None)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: lengths {len(a)} {len(b)}"
        return next((d for i, (x, y) in enumerate(zip(a, b)) for d in [close(x, y, f"{path}[{i}]")]
                     if d), None)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return None if abs(a - b) <= 1e-9 * max(abs(a), abs(b)) else f"{path}: {a} {b}"
    return None if a == b else f"{path}: {a!r:.60} {b!r:.60}"


def named(rows):
    """{(function, file, line): bytes} of the rows with a location."""
    return {(r["function"], r["file"], r.get("line")): r["bytes"]["value"]
            for r in rows if "function" in r}


def main():
    tmp = tempfile.mkdtemp(prefix="mt_several_")
    server = None
    try:
        paths = []
        for i, start in enumerate((0, 120000, 300000)):
            p = os.path.join(tmp, f"proc{i}.ctf")
            subprocess.run([SYNTH, p, p + ".json", "--rate", "1e-2", "--seed", str(21 + i),
                            "--start", str(start)], check=True)
            paths.append(p)
        # memtrace run's resident-memory record beside the first trace (two
        # samples, then a line cut short), drawn by the viewer and timeline
        start = 1700000000000000
        with open(paths[0] + ".rss", "w") as f:
            f.write("# memtrace-c resident memory: time_us pid rss_anon_kib rss_file_kib "
                    "rss_shmem_kib\n")
            f.write(f"{start + 50000} 4242 1000 200 0\n{start + 50000} 4243 24 0 8\n")
            f.write(f"{start + 100000} 4242 2000 200 0\n{start + 150000} 42")
        server = viewer_server.Server(MEMTRACE, *paths)
        server.wait_ready()
        info = server.json("/api/info")
        check(info["trace"] == "3 traces" and "3 traces read as one" in info["context"],
              f"info names the traces: {info['trace']!r}, {info['context']!r}")
        for by in ("function", "line"):
            api = server.json(f"/api/sites?by={by}&n=10000")
            top = cli("top", "--by", by, "-n", "0", "--format", "json", *paths)
            d = close(api["total"]["bytes"], top["total"]["bytes"])
            check(not d and api["total"]["samples"] == top["total"]["samples"],
                  f"sites by {by}: the totals of the traces together: {d}")
            a, t = named(api["sites"]), named(top["sites"])
            d = close(a, t)
            check(len(a) > 3 and not d, f"sites by {by}: each named site's bytes: {d}")
        api = server.json("/api/leaks?n=10000")
        lk = cli("leaks", "-n", "0", "--format", "json", *paths)
        d = close(api["total"], lk["total"])
        check(not d, f"leaks: the total of the traces together: {d}")
        api = server.json("/api/stats")
        st = cli("stats", "--format", "json", *paths)
        check(api["all"] == st["all"], f"stats: one population: {close(api['all'], st['all'])}")
        api = server.json("/api/timeline?bins=64")
        tl = cli("timeline", "--bins", "64", "--format", "json", *paths)
        for k in ("time", "all", "filtered", "peak", "rss"):
            check(api.get(k) == tl.get(k), f"timeline: {k} as the command line's")
        rss = api.get("rss", {})
        at = [(t * 1e6, a) for t, a in zip(api["time"], rss.get("anon", []))]
        check(all(a == 0 for t, a in at if t < 50000) and
              all(a == 1024 * 1024 for t, a in at if 50000 <= t < 100000) and
              all(a == 2000 * 1024 for t, a in at if t >= 100000) and len(at) == 64,
              f"timeline: the resident memory at each bin's end, summed over processes: {at[:3]}")
        want = lambda t: 0 if t < 50000 else (1024 + 200 + 8) * 1024 if t < 100000 else 2200 * 1024
        check([x for x in rss.get("total", [])] == [want(t) for t, _ in at],
              "timeline: the resident total is RssAnon + RssFile + RssShmem")
        check("exact" not in api["peak"], "timeline: the exact peak")
        server.stop()
        server = None
        # the report of the traces
        html = os.path.join(tmp, "tree.html")
        p = subprocess.run([MEMTRACE, "report", "-o", html, *paths], capture_output=True,
                           text=True, timeout=120)
        check(p.returncode == 0 and "3 traces read as one" in open(html).read(),
              f"report of several: {p.returncode} {p.stderr}")
        # two rates: read at the lower, the other's samples thinned to it; as
        # many sampled objects as the lower-rate trace's own, and some of the other's
        other = os.path.join(tmp, "other.ctf")
        subprocess.run([SYNTH, other, other + ".json", "--rate", "1", "--seed", "5"], check=True)
        server = viewer_server.Server(MEMTRACE, paths[0], other)
        server.wait_ready()
        info = server.json("/api/info")
        check(info["sample_rate"] == 1e-2 and "thinned" in info["context"],
              f"view of two rates: {info['sample_rate']} {info['context']!r}")
        own = cli("stats", "--format", "json", paths[0])["all"]["sampled_objects"]
        with open(other + ".json") as f:  # an object of w words stays with 1 - 0.99^w
            kept = sum(1 - 0.99 ** o[1] for o in json.load(f)["objects"])
        got = info["sampled_objects"] - own
        check(abs(got - kept) < 0.1 * kept,
              f"view of two rates: {got} objects of the rate-1 trace kept, ~{kept:.0f} expected")
        server.stop()
        server = None
    finally:
        if server:
            server.stop()
        shutil.rmtree(tmp)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


sys.exit(main())
