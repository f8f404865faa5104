#!/usr/bin/env python3
"""Tests of memtrace view's JSON API and memtrace report (docs/viewer.md).

usage: api_test.py MEMTRACE MT_TOOLS_SYNTH PRELOAD LIVE_PROG TRACES_DIR TEST

Each test starts `memtrace view` on a free port and reads the URL line it
prints. Synthetic traces at sample rate 1 (mt_tools_synth, with the truth of
every allocation) make every estimate exact, so answers are compared for
equality with figures computed here from the truth.
"""
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import viewer_server
from viewer_server import check, failures, free_port

MEMTRACE, SYNTH, PRELOAD, LIVE_PROG, TRACES, TEST = sys.argv[1:7]
TMP = tempfile.mkdtemp(prefix="mt_viewer_")


class Server(viewer_server.Server):
    def __init__(self, *args):
        super().__init__(MEMTRACE, *args)


def synth(*opts):
    path = os.path.join(TMP, f"s{len(os.listdir(TMP))}.ctf")
    truth = path + ".json"
    subprocess.run([SYNTH, path, truth, *map(str, opts)], check=True)
    with open(truth, encoding="utf-8") as f:
        return path, json.load(f)


def objs(truth):
    for o in truth["objects"]:
        yield dict(site=o[0], words=o[1], length=o[2], nsamples=o[3], source=o[4], alloc=o[5],
                   free=None if o[6] < 0 else o[6], names=truth["sites"][o[0]]["names"])


def sums(objects):
    b = sum(o["words"] * 8 for o in objects)
    return b, len(objects)


def exact(est, want, what):
    check(est == {"value": want, "lo": want, "hi": want}, f"{what}: {est} != {want}")


def frame_text(f):
    """A frame as the truth prints it (mt_tools_synth)."""
    return f"{f['function']} ({f['file']}:{f['line']})" if "function" in f else "#" + f["code"]


def site_key(row, by):
    """A ranking row's site as the truth names it: (function, file[, line]),
    or the site text of a code ("#hex") or of no backtrace."""
    if "function" not in row:
        return row["site"]
    return (row["function"], row["file"]) + ((row["line"],) if by == "line" else ())


def truth_key(st, by):
    if "function" not in st:
        return st["site"]
    return (st["function"], st["file"]) + ((st["line"],) if by == "line" else ())


def groups(objects, key):
    """Per group of key(site index): [bytes, objects, samples, sampled
    objects, oldest and newest allocation (us)]."""
    g = {}
    for o in objects:
        w = g.setdefault(key(o["site"]), [0, 0, 0, 0, float("inf"), 0])
        w[0] += o["words"] * 8
        w[1] += 1
        w[2] += o["nsamples"]
        w[3] += o["nsamples"] > 0
        w[4] = min(w[4], o["alloc"])
        w[5] = max(w[5], o["alloc"])
    return g


def live_at_bin_ends(objects, duration_us, nbins):
    """The live bytes at the end of each of nbins equal bins over [0,
    duration] (as mt_timeline_compute: bin j ends at (j + 1) x width; an
    object counts when allocated at or before the end and not yet
    collected), at rate 1."""
    width = duration_us / nbins
    diff = [0] * (nbins + 1)
    for o in objects:
        x = o["alloc"] / width
        j0 = 0 if x <= 1 else math.ceil(x) - 1
        if j0 >= nbins:
            continue
        j1 = nbins
        if o["free"] is not None:
            e = o["free"] / width
            j1 = min(nbins, 0 if e <= 1 else math.ceil(e) - 1)
        if j1 > j0:
            diff[j0] += o["words"] * 8
            diff[j1] -= o["words"] * 8
    out, run = [], 0
    for j in range(nbins):
        run += diff[j]
        out.append(run)
    return out


def walk(node):
    yield node
    for c in node["children"]:
        yield from walk(c)


def check_tree(tree, what):
    for n in walk(tree):
        kids = sum(c["bytes"]["value"] for c in n["children"])
        check(abs(kids + n["self"]["bytes"]["value"] - n["bytes"]["value"]) <= 1e-6 * max(1, n["bytes"]["value"]),
              f"{what}: node {n['fn']}: children + self != bytes")
        b = [c["bytes"]["value"] for c in n["children"]]
        check(b == sorted(b, reverse=True), f"{what}: children not sorted")


# ---- tests ------------------------------------------------------------------


def test_endpoints():
    srv = Server(os.path.join(TRACES, "ocamlopt.ctf"))
    try:
        st = srv.wait_ready()
        check(st["state"] == "ready" and st["generation"] >= 1 and st["live"] is False, f"status {st}")
        info = srv.json("/api/info")
        check(info["trace"] == "ocamlopt.ctf" and info["word_size"] == 64, "info fields")
        check(info["sampled_objects"] == st["objects"] > 0, "info objects")
        total = info["total"]["bytes"]["value"]
        samples = info["total"]["samples"]
        s = srv.json("/api/summary")
        check(s["bytes"] == info["total"]["bytes"] and s["share"] == 1, f"summary unfiltered {s}")
        check(s["samples"] == samples and s["sampled_objects"] == info["sampled_objects"],
              "summary samples and sampled objects")
        check(s["filter"] == {} and s["filter_text"] == "none", "summary: no filter")
        check(s["unmatched"] == [], "summary: no name to match")
        # the names of inside, not_inside and hide that no function has
        u = srv.json("/api/summary?inside=Nowhere&not_inside=Typecore&hide=Stdlib,Zilch,")
        check(u["unmatched"] == [{"parameter": "inside", "name": "Nowhere"},
                                 {"parameter": "hide", "name": "Zilch"}], f"summary unmatched {u}")
        check(u["bytes"]["value"] == 0, "inside a name no function has: nothing")
        _, h, _ = srv.get("/api/summary")
        check(h.get("Cache-Control") == "no-store", "Cache-Control")
        # the live heap: exactly the bins asked for, equal over [0, duration]
        tl = srv.json("/api/timeline?bins=50")
        check(tl["bins"] == 50 and len(tl["time"]) == 50 and len(tl["filtered"]) == 50 and
              all(len(tl["all"][k]) == 50 for k in ("min", "max", "end")), "timeline: 50 bins")
        check(tl["from"] == 0 and tl["to"] == info["duration"], f"timeline span {tl['from']}..{tl['to']}")
        check(all(abs(t - (i + 1) * info["duration"] / 50) < 1e-9 for i, t in enumerate(tl["time"])),
              "timeline: equal bins")
        check(tl["filtered"] == tl["all"]["end"], "unfiltered line == all.end")
        check(all(lo <= e <= hi for lo, e, hi in zip(tl["all"]["min"], tl["all"]["end"], tl["all"]["max"])),
              "timeline: min <= end <= max")
        check(abs(max(tl["all"]["max"]) - info["peak"]["bytes"]["value"]) < 1, "timeline max is the peak")
        check(tl["peak"] == info["peak"], "timeline peak is info's")
        fl = srv.json("/api/flame")
        check(fl["callers"] is None and fl["callees"]["fn"] == -1, "flame root")
        check(fl["callees"]["bytes"]["value"] == total, "flame root bytes")
        check(fl["total"] == info["total"], f"flame total {fl['total']}")
        check_tree(fl["callees"], "flame")
        ids = {f["id"] for f in fl["functions"]}
        check(all(n["fn"] in ids for n in walk(fl["callees"]) if n["fn"] >= 0), "functions listed")
        fn = srv.json("/api/functions?n=5&sort=total")
        t = [f["total"]["bytes"]["value"] for f in fn["functions"]]
        check(len(t) == 5 and t == sorted(t, reverse=True), "functions sorted by total")
        check(all(f["self"]["bytes"]["value"] <= f["total"]["bytes"]["value"] for f in fn["functions"]),
              "self <= total")
        check(fn["total"] == info["total"], "functions total")
        # paths: the stacks, every frame of each
        p = srv.json("/api/paths?n=3")
        check(p["by"] == "stack" and p["shown"] == len(p["sites"]) == 3 and p["sites_total"] > 3,
              f"paths: 3 of {p['sites_total']}")
        check(all(x["frames"] and x["frames_total"] == len(x["frames"]) for x in p["sites"]),
              "paths carry every frame")
        check(all(set(f) in ({"function", "file", "line"}, {"code"}) for x in p["sites"] for f in x["frames"]),
              "paths: frames are locations or codes")
        allp = srv.json("/api/paths?n=10000")
        check(allp["shown"] == allp["sites_total"] == len(allp["sites"]), "paths: all shown")
        check(sum(x["samples"] for x in allp["sites"]) == samples, "paths add up (samples)")
        check(abs(sum(x["bytes"]["value"] for x in allp["sites"]) - total) < 1e-6 * total, "paths add up")
        b = [x["bytes"]["value"] for x in allp["sites"]]
        check(b == sorted(b, reverse=True) and [x["rank"] for x in allp["sites"]] == list(range(1, len(b) + 1)),
              "paths ranked by bytes")
        # sites, by line (the default) and by function
        for by, q in (("line", ""), ("line", "&by=line"), ("function", "&by=function")):
            si = srv.json("/api/sites?n=10000" + q)
            check(si["by"] == by and si["sort"] == "bytes", f"sites{q}: by {si['by']}")
            check(si["total"]["samples"] == samples and si["total"]["bytes"] == info["total"]["bytes"],
                  f"sites{q}: total")
            check(si["trace_total"] == info["total"] and si["total"]["bytes_percent_of_trace"] == 100,
                  f"sites{q}: trace total")
            check(sum(x["samples"] for x in si["sites"]) == samples, f"sites{q} add up (samples)")
            check(abs(sum(x["bytes"]["value"] for x in si["sites"]) - total) < 1e-6 * total, f"sites{q} add up")
            check(abs(sum(x["bytes_percent"] for x in si["sites"]) - 100) < 1e-6, f"sites{q}: percents")
            check(all(("line" in x) == (by == "line" and "function" in x) for x in si["sites"]),
                  f"sites{q}: a line with each located site by line only")
            check(not any("frames" in x for x in si["sites"]), f"sites{q}: no frames")
        byfn = srv.json("/api/sites?n=10000&by=function")
        byln = srv.json("/api/sites?n=10000")
        check(byfn["sites_total"] < byln["sites_total"], "fewer functions than lines")
        # leaks: most bytes first, their age to the end
        lk = srv.json("/api/leaks?n=10000")
        check(lk["filter"] == {"collected": "never"} and lk["filter_text"] == "never collected",
              f"leaks filter {lk['filter']}")
        sizes = [x["bytes"]["value"] for x in lk["stacks"]]
        check(lk["stacks"] and sizes == sorted(sizes, reverse=True), "leaks most bytes first")
        check(lk["end_s"] == info["duration"], "leaks end")
        check(all(abs(x["age_s"] - (lk["end_s"] - x["oldest_alloc_s"])) < 1e-9 and
                  x["oldest_alloc_s"] <= x["newest_alloc_s"] for x in lk["stacks"]), "leaks ages")
        never = srv.json("/api/summary?collected=never")
        check(lk["total"]["bytes"] == never["bytes"] and lk["total"]["samples"] == never["samples"],
              "leaks total is the never collected objects'")
        check(sum(x["samples"] for x in lk["stacks"]) == never["samples"] and
              lk["stacks_total"] == len(lk["stacks"]), "leaks add up")
        hs = srv.json("/api/histograms")
        check(abs(sum(x["bytes"]["value"] for x in hs["size"]) - total) < 1e-6 * total, "size histogram")
        check(sum(x["samples"] for x in hs["size"]) == samples, "size histogram samples")
        lt = sum(x["bytes"]["value"] for x in hs["lifetime"]) + hs["live_at_end"]["bytes"]["value"]
        check(abs(lt - total) < 1e-6 * total, "lifetime histogram + live at end")
        check(hs["live_at_end"]["samples"] == never["samples"], "live at end is the never collected")
        check(all(x["lo"] < x["hi"] for x in hs["size"] + hs["lifetime"]), "histogram bins")
        # stats: the whole trace, and chunks of allocation time
        sta = srv.json("/api/stats")
        check(sta["all"]["samples"] == samples and sta["all"]["bytes"] == info["total"]["bytes"] and
              sta["all"]["sampled_objects"] == info["sampled_objects"], "stats: all")
        check(sta["sample_rate"] == info["sample_rate"] and sta["duration_s"] == info["duration"] and
              "chunks" not in sta and sta["filter"] == {}, "stats: header")
        check(sta["all"]["never_collected"]["samples"] == never["samples"], "stats: never collected")
        check(sum(x["samples"] for x in sta["all"]["size_histogram"]) == samples, "stats: size bins")
        check(sum(sta["all"]["sources"][k]["samples"] for k in ("minor", "major", "external")) == samples,
              "stats: sources")
        ch = srv.json("/api/stats?chunks=4")
        check(len(ch["chunks"]) == 4 and sum(c["samples"] for c in ch["chunks"]) == samples and
              ch["chunks"][0]["from_s"] == 0 and ch["chunks"][-1]["to_s"] == info["duration"] and
              all(a["to_s"] == b["from_s"] for a, b in zip(ch["chunks"], ch["chunks"][1:])),
              "stats?chunks=4: four chunks that split the trace")
        for a in ("/", "/index.html", "/app.js", "/style.css", "/favicon.svg"):
            st_, h, body = srv.get(a)
            check(st_ == 200 and len(body) > 0, f"asset {a}: {st_}")
        st_, h, body = srv.get("/", "HEAD")
        check(st_ == 200 and body == b"", "HEAD")
    finally:
        srv.stop()


def test_exact():
    path, truth = synth("--rate", "1", "--seed", "3")
    srv = Server(path)
    try:
        all_ = list(objs(truth))
        b, n = sums(all_)
        s = srv.json("/api/summary")
        exact(s["bytes"], b, "summary bytes")
        exact(s["objects"], n, "summary objects")
        # sites by line and by function, every figure
        for by in ("line", "function"):
            si = srv.json(f"/api/sites?n=10000&by={by}")
            want = groups(all_, lambda k: truth_key(truth["sites"][k], by))
            got = {site_key(x, by): x for x in si["sites"]}
            check(len(got) == len(si["sites"]) == si["sites_total"], f"sites by {by}: distinct rows")
            check(set(got) == set(want), f"sites by {by}: {sorted(map(str, got))} != {sorted(map(str, want))}")
            for k in set(got) & set(want):
                exact(got[k]["bytes"], want[k][0], f"site {k} bytes")
                exact(got[k]["objects"], want[k][1], f"site {k} objects")
                check((got[k]["samples"], got[k]["sampled_objects"]) == (want[k][2], want[k][3]),
                      f"site {k}: samples")
                check(abs(got[k]["bytes_percent"] - 100 * want[k][0] / b) < 1e-9, f"site {k}: percent")
            exact(si["total"]["bytes"], b, f"sites by {by}: total")
        # paths: grouped by the printed stack (two codes printing alike are one)
        p = srv.json("/api/paths?n=10000")
        want = groups(all_, lambda k: " <- ".join(truth["sites"][k]["frames"]))
        got = {" <- ".join(map(frame_text, x["frames"])): x for x in p["sites"]}
        check(len(got) == len(p["sites"]), "paths: distinct stacks")
        check(set(got) == set(want), f"paths {sorted(got)} != {sorted(want)}")
        for k in set(got) & set(want):
            exact(got[k]["bytes"], want[k][0], f"path {k[:60]} bytes")
            exact(got[k]["objects"], want[k][1], f"path {k[:60]} objects")
        check(sum(1 for k in got if k.startswith("Dup.f (dup.ml:9)")) == 1, "paths: Dup.f's codes merged")
        fl = srv.json("/api/flame?min=0")
        exact(fl["callees"]["bytes"], b, "flame root")
        exact(fl["total"]["bytes"], b, "flame total")
        names = {f["id"]: f["name"] for f in fl["functions"]}
        # every top-level frame's bytes: objects whose outermost function is it
        tops = {}
        for o in all_:
            if o["names"]:
                tops[o["names"][0]] = tops.get(o["names"][0], 0) + o["words"] * 8
        got = {}
        for c in fl["callees"]["children"]:
            got[names.get(c["fn"], "?")] = got.get(names.get(c["fn"], "?"), 0) + c["bytes"]["value"]
        check(got == tops, f"flame top frames {got} != {tops}")
        # leaks: every stack never collected, its oldest and newest allocation
        lk = srv.json("/api/leaks?n=10000")
        never = [o for o in all_ if o["free"] is None]
        nb, nn = sums(never)
        exact(lk["total"]["bytes"], nb, "leaks total bytes")
        exact(lk["total"]["objects"], nn, "leaks total objects")
        want = groups(never, lambda k: " <- ".join(truth["sites"][k]["frames"]))
        got = {" <- ".join(map(frame_text, x["frames"])): x for x in lk["stacks"]}
        check(set(got) == set(want), f"leaks {sorted(got)} != {sorted(want)}")
        for k in set(got) & set(want):
            exact(got[k]["bytes"], want[k][0], f"leak {k[:60]} bytes")
            exact(got[k]["objects"], want[k][1], f"leak {k[:60]} objects")
            check(got[k]["oldest_alloc_s"] == want[k][4] / 1e6 and got[k]["newest_alloc_s"] == want[k][5] / 1e6,
                  f"leak {k[:60]}: oldest and newest")
        # statistics and histograms
        st = srv.json("/api/stats")
        exact(st["all"]["bytes"], b, "stats bytes")
        exact(st["all"]["objects"], n, "stats objects")
        exact(st["all"]["never_collected"]["bytes"], nb, "stats never collected")
        for k, name in enumerate(("minor", "major", "external")):
            exact(st["all"]["sources"][name]["bytes"], sums([o for o in all_ if o["source"] == k])[0],
                  f"stats source {name}")
        hs = srv.json("/api/histograms")
        want = {}
        for o in all_:
            size = o["length"] * 8
            lo = 0 if size < 2 else 2 ** (size.bit_length() - 1)
            w = want.setdefault(lo, [0, 0])
            w[0] += o["words"] * 8
            w[1] += 1
        got = {x["lo"]: x for x in hs["size"]}
        check(set(got) >= set(want) and all(got[k]["sampled_objects"] == 0 for k in set(got) - set(want)),
              f"size histogram bins {sorted(got)} ⊇ {sorted(want)}")
        for k in set(got) & set(want):
            exact(got[k]["bytes"], want[k][0], f"size bin {k} bytes")
            exact(got[k]["objects"], want[k][1], f"size bin {k} objects")
        exact(hs["live_at_end"]["objects"], nn, "histograms live at end")
    finally:
        srv.stop()


def test_filters():
    path, truth = synth("--rate", "1", "--seed", "4")
    srv = Server(path)
    try:
        all_ = list(objs(truth))
        d = truth["duration_us"]
        allocs = sorted(o["alloc"] for o in all_)
        frees = sorted(o["free"] for o in all_ if o["free"] is not None)
        # times that are some object's allocation or collection: a range's ends
        # fall on events, so an end taken in or left out shows
        a1, a2 = allocs[len(allocs) // 3], allocs[2 * len(allocs) // 3]
        c1, c2 = frees[len(frees) // 4], frees[3 * len(frees) // 4]
        sec = lambda us: f"{us / 1e6:.6f}"  # noqa: E731
        alive = lambda o, t: o["alloc"] <= t and (o["free"] is None or o["free"] > t)  # noqa: E731
        life = lambda o: (d if o["free"] is None else o["free"]) - o["alloc"]  # noqa: E731
        lives = sorted(life(o) for o in all_ if o["free"] is not None)
        life1 = lives[len(lives) // 2]  # some object's lifetime: the bounds are closed
        cases = [
            ("size=64..256", lambda o: 64 <= o["length"] * 8 <= 256),
            ("size=..100", lambda o: o["length"] * 8 <= 100),
            ("size=0.5k..2k", lambda o: 512 <= o["length"] * 8 <= 2048),
            ("size=..0.0625k", lambda o: o["length"] * 8 <= 64),
            ("size=8k..", lambda o: o["length"] * 8 >= 8192),
            ("size=0.03M..", lambda o: o["length"] * 8 >= math.ceil(0.03 * 2 ** 20)),
            ("source=external", lambda o: o["source"] == 2),
            ("source=minor,major", lambda o: o["source"] in (0, 1)),
            ("live=end", lambda o: o["free"] is None),
            ("collected=never", lambda o: o["free"] is None),
            (f"collected={sec(c1)}..{sec(c2)}", lambda o: o["free"] is not None and c1 <= o["free"] < c2),
            (f"collected=..{sec(c1)}", lambda o: o["free"] is not None and o["free"] < c1),
            ("inside=Foo", lambda o: any("Foo" in x for x in o["names"])),
            ("not_inside=Bar", lambda o: not any("Bar" in x for x in o["names"])),
            ("inside=Inl.inner", lambda o: "Inl.inner" in o["names"]),
            (f"alloc=..{sec(a2)}", lambda o: o["alloc"] < a2),
            (f"alloc={sec(a1)}..", lambda o: o["alloc"] >= a1),
            (f"alloc={sec(a1)}..{sec(a2)}", lambda o: a1 <= o["alloc"] < a2),
            ("lifetime=0.001..", lambda o: life(o) >= 1000),
            (f"lifetime=..{sec(life1)}", lambda o: life(o) <= life1),
            (f"lifetime={sec(life1)}..", lambda o: life(o) >= life1),
            (f"live={sec(a1)}", lambda o: alive(o, a1)),
            (f"live={sec(c1)}", lambda o: alive(o, c1)),
            ("hide=Foo", lambda o: True),
            ("inside=&size=", lambda o: True),
            ("source=external&inside=Weird", lambda o: o["source"] == 2 and any("Weird" in x for x in o["names"])),
            (f"alloc={sec(a1)}..&size=..1k&not_inside=Dup", lambda o: o["alloc"] >= a1 and o["length"] * 8 <= 1024 and
             not any("Dup" in x for x in o["names"])),
        ]
        every = sums(all_)
        for q, pred in cases:
            sel = [o for o in all_ if pred(o)]
            b, n = sums(sel)
            if "=&" not in q and not q.startswith("hide"):
                check(0 < n < len(all_), f"{q}: selects some objects, not all ({n} of {len(all_)})")
            s = srv.json("/api/summary?" + q)
            exact(s["bytes"], b, f"summary?{q} bytes")
            exact(s["objects"], n, f"summary?{q} objects")
            check(abs(s["share"] - b / every[0]) < 1e-12, f"summary?{q} share")
            fl = srv.json("/api/flame?min=0&" + q)
            exact(fl["callees"]["bytes"], b, f"flame?{q}")
            si = srv.json("/api/sites?n=10000&" + q)
            exact(si["total"]["bytes"], b, f"sites?{q} total")
            check(sum(x["samples"] for x in si["sites"]) == si["total"]["samples"], f"sites?{q} add up")
            st = srv.json("/api/stats?" + q)
            exact(st["all"]["objects"], n, f"stats?{q} objects")
            # leaks count the objects never collected: a collection window
            # contradicts them and is refused, naming the parameter
            window = q.startswith("collected=") and q != "collected=never"
            if window:
                e = srv.json("/api/leaks?n=10000&" + q, status=400)
                check("'collected'" in e["error"] and "contradicts leaks" in e["error"],
                      f"leaks?{q}: {e}")
            else:
                lk = srv.json("/api/leaks?n=10000&" + q)
                kept = [o for o in sel if o["free"] is None]
                exact(lk["total"]["bytes"], sums(kept)[0], f"leaks?{q} total")
                check(lk["filter"].get("collected") == "never", f"leaks?{q}: filter {lk['filter']}")
            # the filtered live heap at each bin's end, exactly
            tl = srv.json("/api/timeline?bins=40&" + q)
            want = live_at_bin_ends(sel, d, 40)
            check(tl["filtered"] == want, f"timeline?{q}: {tl['filtered'][:6]}... != {want[:6]}...")
            check(tl["all"]["end"] == live_at_bin_ends(all_, d, 40), f"timeline?{q}: all.end")
            check(s["filter"] == tl["filter"] == si["filter"] and s["filter_text"] == tl["filter_text"],
                  f"{q}: the answers echo one filter")
        # the filter's echo
        f = srv.json("/api/summary?size=1.5k..2M&source=major,minor&live=peak&hide=a,b")
        check(f["filter"] == {"size_min": 1536, "size_max": 2097152, "sources": ["minor", "major"],
                              "live": "peak", "hide": "a,b"}, f"filter echo {f['filter']}")
        check("1.50 KiB" in f["filter_text"] and "peak" in f["filter_text"], f"filter text {f['filter_text']}")
    finally:
        srv.stop()


def test_errors():
    srv = Server(os.path.join(TRACES, "workload-1e-4.ctf"))
    try:
        long = "x" * 1025
        # (request, the parameter, the bad part): the message names both
        bad = [("summary?size=abc", "size", "'abc'"),
               ("summary?size=1k..x", "size", "'x' in '1k..x'"),
               ("summary?size=1.5x..", "size", "'1.5x'"),
               ("summary?size=-1..", "size", "'-1'"),
               ("summary?size=10..5", "size", "'10..5'"),
               ("summary?alloc=-1..", "alloc", "'-1'"),
               ("summary?alloc=2..1", "alloc", "'2..1'"),
               ("summary?alloc=nan..", "alloc", "'nan'"),
               ("summary?alloc=inf..", "alloc", "'inf'"),
               ("summary?live=soon", "live", "'soon'"),
               ("summary?live=-1", "live", "'-1'"),
               ("summary?source=stack", "source", "'stack'"),
               ("summary?source=minor,stack", "source", "'stack'"),
               ("summary?collected=sometime", "collected", "'sometime'"),
               ("summary?collected=3..1", "collected", "'3..1'"),
               ("summary?lifetime=..-3", "lifetime", "'-3'"),
               ("summary?lifetime=2..1", "lifetime", "'2..1'"),
               ("summary?inside=" + long, "inside", "1024 bytes"),
               ("summary?not_inside=" + long, "not_inside", "1024 bytes"),
               ("flame?hide=" + long, "hide", "1024 bytes"),
               ("summary?bogus=1", "bogus", "unknown parameter"),
               ("timeline?bins=5", "bins", "'5'"),
               ("timeline?bins=4001", "bins", "'4001'"),
               ("timeline?bins=x", "bins", "'x'"),
               ("functions?n=0", "n", "'0'"),
               ("functions?n=10001", "n", "'10001'"),
               ("functions?sort=name", "sort", "'name'"),
               ("sites?by=stack", "by", "'stack'"),
               ("stats?chunks=0", "chunks", "'0'"),
               ("stats?chunks=1001", "chunks", "'1001'"),
               ("flame?weight=x", "weight", "'x'"),
               ("flame?min=2", "min", "'2'"),
               ("flame?focus=abc", "focus", "'abc'"),
               ("flame?focus=99999999", "focus", "'99999999'"),
               ("info?live=peak", "live", "takes no filter"),
               ("status?size=1..2", "size", "takes no filter"),
               ("summary?n=3", "n", "unknown parameter"),
               ("sites?bins=10", "bins", "unknown parameter"),
               ("paths?by=line", "by", "unknown parameter"),
               ("histograms?chunks=2", "chunks", "unknown parameter")]
        for q, param, part in bad:
            j = srv.json("/api/" + q, status=400)
            msg = j.get("error")
            check(isinstance(msg, str) and f"'{param}'" in msg and part in msg,
                  f"{q[:60]}: the message names '{param}' and {part}: {msg!r:.300}")
        j = srv.json("/api/summary?size=1k..x", status=400)
        check(j["error"] == "bad value for 'size': 'x' in '1k..x' is not a size in bytes "
                           "(a number, with an optional k, M, G or T suffix)", f"size message {j}")
        for q in ["summary?size=", "summary?live=", "timeline?bins=10", "timeline?bins=4000",
                  "functions?n=10000", "summary?inside=" + "x" * 1024, "summary?hide=" + "a," * 512,
                  "sites?by=function", "sites?by=", "stats?chunks=1000", "summary?size=1.5k..2M"]:
            srv.json("/api/" + q)
        srv.json("/api/nope", status=404)
        for m in ("POST", "PUT", "DELETE"):
            st, h, _ = srv.get("/api/info", m)
            check(st == 405, f"{m}: {st}")
    finally:
        srv.stop()
    # a trace that fails to load: a message and exit 1
    broken = os.path.join(TMP, "broken.ctf")
    with open(broken, "wb") as f:
        f.write(b"this is not a trace at all" * 10)
    p = subprocess.run([MEMTRACE, "view", "--port", str(free_port()), broken], capture_output=True,
                       text=True, timeout=30)
    check(p.returncode == 1 and broken in p.stderr, f"broken trace: {p.returncode} {p.stderr!r}")
    p = subprocess.run([MEMTRACE, "view", os.path.join(TMP, "missing.ctf")], capture_output=True,
                       text=True, timeout=30)
    check(p.returncode == 1 and "missing.ctf" in p.stderr, f"missing trace: {p.stderr!r}")


def test_preview():
    """A long trace is shown in previews while it loads: its first part,
    as if the trace ended there (state "partial", said on the page), then
    the whole, whose answers are those of a load without previews."""
    path, truth = synth("--rate", "1", "--seed", "7", "--scale", "40")  # ~10 MB
    os.environ["MEMTRACE_VIEW_PREVIEW_BYTES"] = "1000000"  # previews of 1 and 4 MB
    os.environ["MEMTRACE_VIEW_TEST_DELAY"] = "4"  # the whole load starts late
    try:
        srv = Server(path)
    finally:
        del os.environ["MEMTRACE_VIEW_PREVIEW_BYTES"], os.environ["MEMTRACE_VIEW_TEST_DELAY"]
    ref = Server(path)  # under 256 MB: no preview
    try:
        deadline, st = time.time() + 30, {}
        while st.get("state") != "partial" and time.time() < deadline:
            st = srv.json("/api/status")
            time.sleep(0.02)
        check(st.get("state") == "partial" and "showing the first" in st.get("message", ""),
              f"a preview while loading: {st}")
        # answers of one preview (a later one may replace it between two requests)
        for _ in range(20):
            info = srv.json("/api/info")
            never = srv.json("/api/summary?collected=never")["objects"]["value"]
            again = srv.json("/api/info")
            if again["generation"] == info["generation"]:
                break
        check(info["generation"] == again["generation"], "two answers of one preview")
        d = round(info["duration"] * 1e6)
        allocs = [o["alloc"] for o in objs(truth)]
        lo, hi = sum(a < d for a in allocs), sum(a <= d for a in allocs)
        check(0 < info["duration"] < truth["duration_us"] / 1e6 and lo <= info["sampled_objects"] <= hi,
              f"the preview is the trace's first {d} us: {info['sampled_objects']} objects, want {lo}..{hi}")
        # as if the trace ended there: whatever is not freed by then is live
        live = [o for o in objs(truth) if o["alloc"] <= d and (o["free"] is None or o["free"] >= d)]
        sure = sum(1 for o in live if o["alloc"] < d and (o["free"] is None or o["free"] > d))
        check(sure <= never <= len(live), f"live at the preview's end: {never}, want {sure}..{len(live)}")
        for ep in ("/api/flame", "/api/timeline", "/api/sites?n=5", "/api/leaks"):
            check(srv.get(ep)[0] == 200, f"{ep} answered on the preview")
        gen = st["generation"]
        st = srv.wait_ready()
        check(st["state"] == "ready" and st["generation"] > gen and "message" not in st,
              f"the whole trace after the preview: {st}")
        ref.wait_ready()
        for ep in ("/api/info", "/api/summary?collected=never", "/api/flame", "/api/timeline?bins=50",
                   "/api/sites?n=20", "/api/leaks", "/api/histograms"):
            a, b = srv.json(ep), ref.json(ep)
            for doc in (a, b):
                doc.pop("generation", None)
            check(a == b, f"{ep}: the whole trace after previews differs from a plain load")
    finally:
        srv.stop()
        ref.stop()


def test_loading():
    """The server answers while the trace loads: status says loading, data
    requests wait for the load and then answer; the answer cache keeps one
    snapshot's answers (equal answers for equal queries, parameters in any
    order) and a new generation (--follow) never sees the old ones."""
    path, truth = synth("--rate", "1", "--seed", "7")
    os.environ["MEMTRACE_VIEW_TEST_DELAY"] = "1.5"
    try:
        t0 = time.time()
        srv = Server(path)
    finally:
        del os.environ["MEMTRACE_VIEW_TEST_DELAY"]
    try:
        check(time.time() - t0 < 1.2, "the URL line comes before the load")
        st = srv.json("/api/status")
        check(st["state"] == "loading" and st["generation"] == 0 and st["objects"] == 0,
              f"status while loading: {st}")
        info = srv.json("/api/info")  # waits for the load
        check(time.time() - t0 >= 1.4, "info waited for the load")
        check(info["sampled_objects"] == len(truth["objects"]), "info after the load")
        st = srv.json("/api/status")
        check(st["state"] == "ready" and st["generation"] == 1, f"status after: {st}")
        b, _ = sums(list(objs(truth)))
        a = srv.get("/api/flame?min=0.01&alloc=..1e9&weight=bytes")[2]
        c = srv.get("/api/flame?weight=bytes&alloc=..1e9&min=0.01&size=")[2]
        check(a == c and json.loads(a)["callees"]["bytes"]["value"] == b, "cached flame equal")
        small = srv.json("/api/flame?min=0.01&alloc=..1e9&size=..8")
        check(small["callees"]["bytes"]["value"] < b, "a different query is not the cached one")
        f1 = srv.json("/api/flame")
        f2 = srv.json("/api/flame")
        check(f1 == f2 and f1["callees"]["bytes"]["value"] == b, "unfiltered flame (precomputed)")
    finally:
        srv.stop()
    # a new generation: the cache of the old snapshot is not used
    live = os.path.join(TMP, "grow.ctf")
    shutil.copy(path, live)
    srv = Server("--follow", live)
    try:
        deadline = time.time() + 30
        st = srv.wait_ready()
        b1 = srv.json("/api/flame?min=0.01")["callees"]["bytes"]["value"]
        check(b1 == b, f"first generation flame {b1} != {b}")
        path2, truth2 = synth("--rate", "1", "--seed", "8", "--scale", "2")
        shutil.copy(path2, live + ".tmp")
        os.replace(live + ".tmp", live)
        while srv.json("/api/status")["generation"] == st["generation"] and time.time() < deadline:
            time.sleep(0.1)
        b2, _ = sums(list(objs(truth2)))
        got = srv.json("/api/flame?min=0.01")["callees"]["bytes"]["value"]
        check(got == b2 and b2 != b, f"new generation: flame {got}, want {b2} (old {b})")
    finally:
        srv.stop()


def test_security():
    srv = Server(os.path.join(TRACES, "workload-1e-4.ctf"))
    try:
        for path in ["/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/etc/passwd",
                     "//etc/passwd", "/assets/app.js", "/index.html/../../etc/passwd",
                     "/%2fetc%2fpasswd", "/api/../etc/passwd", "/app.js%00.txt", "/CMakeLists.txt",
                     "/api", "/api/info/../../etc/passwd"]:
            # sent raw: urllib would not normalize, but make sure with a socket
            s = socket.create_connection((srv.url.split("//")[1].split(":")[0],
                                          int(srv.url.rsplit(":", 1)[1])), timeout=10)
            s.sendall(f"GET {path} HTTP/1.0\r\n\r\n".encode())
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            s.close()
            status = data.split(b" ", 2)[1]
            check(status == b"404", f"{path}: status {status!r}")
            check(b"root:" not in data, f"{path}: served a file")
    finally:
        srv.stop()


def test_focus_hide():
    path, truth = synth("--rate", "1", "--seed", "5")
    srv = Server(path)
    try:
        fl = srv.json("/api/flame?min=0")
        ids = {f["name"]: f["id"] for f in fl["functions"]}
        for name in ("Foo.parse", "Dup.f", "Inl.inner", "main"):
            if not check(name in ids, f"{name} in functions"):
                continue
            want = srv.json("/api/summary?inside=" + name)["bytes"]["value"]
            f = srv.json(f"/api/flame?min=0&focus={ids[name]}")
            check(f["callees"]["fn"] == ids[name] and f["callers"]["fn"] == ids[name], f"focus {name} roots")
            check(f["callees"]["bytes"]["value"] == want == f["callers"]["bytes"]["value"],
                  f"focus {name}: {f['callees']['bytes']} {f['callers']['bytes']} != {want}")
            check_tree(f["callees"], f"callees of {name}")
            check_tree(f["callers"], f"callers of {name}")
        # hide: Foo.* frames vanish, the total stays
        h = srv.json("/api/flame?min=0&hide=Foo")
        names = {f["id"]: f["name"] for f in h["functions"]}
        check(not any("Foo" in names[n["fn"]] for n in walk(h["callees"]) if n["fn"] >= 0), "hide=Foo")
        check(h["callees"]["bytes"]["value"] == fl["callees"]["bytes"]["value"], "hide keeps the total")
        hidden = lambda x, words: any(w in fr.get("function", "") for fr in x["frames"] for w in words)  # noqa
        plain = srv.json("/api/paths?n=1000")
        check(any(hidden(x, ("Foo",)) for x in plain["sites"]) and
              any(hidden(x, ("Inl",)) for x in plain["sites"]), "paths show Foo and Inl frames")
        # (Bar.alloc <- Foo.parse <- main:1 and Foo.parse <- main:1 become one)
        p = srv.json("/api/paths?n=1000&hide=Foo,Inl,Bar")
        check(p["sites"] and not any(hidden(x, ("Foo", "Inl", "Bar")) for x in p["sites"]), "paths hide")
        check(p["total"] == plain["total"] and p["sites_total"] < plain["sites_total"],
              "paths hide: the same objects over fewer stacks")
        # sites and statistics keep their groups: hide changes stacks only
        si, si_h = srv.json("/api/sites?n=1000"), srv.json("/api/sites?n=1000&hide=Bar,Foo")
        check(si["sites"] == si_h["sites"] and any(x.get("function") == "Bar.alloc" for x in si_h["sites"]),
              "sites hide nothing")
        check(srv.json("/api/stats")["all"] == srv.json("/api/stats?hide=Bar")["all"], "stats hide nothing")
        lk = srv.json("/api/leaks?n=1000&hide=main")
        check(lk["stacks"] and not any(hidden(x, ("main",)) for x in lk["stacks"]), "leaks hide")
        fn = srv.json("/api/functions?n=1000&hide=Foo")
        check(not any("Foo" in f["name"] for f in fn["functions"]), "functions hide")
        # min cuts small nodes into their parent's self
        c = srv.json("/api/flame?min=0.2")
        top = c["callees"]["bytes"]["value"]
        check(all(n["bytes"]["value"] >= 0.2 * top for n in walk(c["callees"])), "min cut")
        check_tree(c["callees"], "cut tree")
        o = srv.json("/api/flame?weight=objects&min=0")
        exact(o["callees"]["objects"], len(truth["objects"]), "weight=objects root")
    finally:
        srv.stop()


def test_report():
    path, truth = synth("--rate", "1", "--seed", "6")
    out = os.path.join(TMP, "r.html")
    p = subprocess.run([MEMTRACE, "report", "-o", out, "--title", "T<&>", path], capture_output=True,
                       text=True, timeout=60)
    check(p.returncode == 0, f"report: {p.returncode} {p.stderr}")
    html = open(out, encoding="utf-8").read()
    start = html.index('<script type="application/json" id="memtrace-data">')
    body = html[start:].split(">", 1)[1].split("</script>", 1)[0]
    data = json.loads(body)
    keys = ("info", "summary", "timeline", "flame", "functions", "paths", "sites", "leaks", "histograms",
            "stats")
    check(sorted(data) == sorted(keys), f"report data: {sorted(data)}")
    b, n = sums(list(objs(truth)))
    exact(data["summary"]["bytes"], b, "report summary")
    # the unfiltered answers of the API, as the server gives them
    srv = Server(path)
    try:
        for k in keys:
            want = srv.json(f"/api/{k}" + ("?min=0.0005" if k == "flame" else ""))
            if k == "info":
                want["live"] = False
            check(data[k] == want, f"report {k} is /api/{k}'s")
    finally:
        srv.stop()
    check("</" not in body, "report data escapes </")
    check('src="app.js"' not in html and 'href="style.css"' not in html, "report has no external refs")
    check("T&lt;&amp;&gt;" in html, "report title escaped")
    # the names with quotes and escapes survive
    check(any("quoted" in f["name"] for f in data["flame"]["functions"]), "escaped names in report")
    p = subprocess.run([MEMTRACE, "report", "-o", out, os.path.join(TMP, "none.ctf")],
                       capture_output=True, text=True)
    check(p.returncode == 1 and "none.ctf" in p.stderr, "report of a missing trace")


def wait_for(srv, pred, what, timeout=30):
    end = time.time() + timeout
    st = None
    while time.time() < end:
        st = srv.json("/api/status")
        if pred(st):
            return st
        time.sleep(0.1)
    check(False, f"{what}: last status {st}")
    return st


def test_follow():
    src = os.path.join(TRACES, "workload-1e-3.ctf")
    data = open(src, "rb").read()
    path = os.path.join(TMP, "grow.ctf")
    with open(path, "wb") as f:
        f.write(data[: len(data) // 3])
    srv = Server("--follow", path)
    try:
        st = wait_for(srv, lambda s: s["state"] == "ready", "first load")
        check(st["live"] is True, "live flag")
        g1, n1 = st["generation"], st["objects"]
        info = srv.json("/api/info")
        # a packet not yet whole is still being written: no truncation
        check(info["live"] is True and not info.get("warning"), f"a growing trace does not warn: {info}")
        full = subprocess.run([MEMTRACE, "info", src], capture_output=True, text=True)
        # an OCaml trace's table, or a native one's line
        total = int(re.search(r"^(?:total|allocations:)\s+(\d+)", full.stdout, re.M).group(1))
        with open(path, "ab") as f:
            f.write(data[len(data) // 3:])
        # every allocation of the whole trace, once a reload has seen it all
        st = wait_for(srv, lambda s: s["generation"] > g1 and s["objects"] == total,
                      "reload after growth to the whole trace")
        check(n1 < total, f"the first third holds fewer objects ({n1}) than the whole ({total})")
        srv.json("/api/flame")
        s = srv.json("/api/summary")
        check(s["sampled_objects"] == st["objects"], "summary after reload")
    finally:
        srv.stop()
    # --follow on a file that is not a trace: the page shows the error, no exit
    bad = os.path.join(TMP, "bad.ctf")
    with open(bad, "wb") as f:
        f.write(b"x" * 1000)
    srv = Server("--follow", bad)
    try:
        st = wait_for(srv, lambda s: s["state"] == "error", "error state")
        check("bad.ctf" in st.get("error", ""), f"error message {st}")
        srv.json("/api/summary", status=503)
    finally:
        srv.stop()


STEP_ENDPOINTS = ("/api/summary", "/api/summary?collected=never", "/api/flame", "/api/flame?size=100..",
                  "/api/timeline?bins=50", "/api/sites?n=20", "/api/leaks", "/api/histograms",
                  "/api/functions?n=20", "/api/stats")


def same_answers(srv, ref, what, info=True):
    """Every endpoint of srv answers as ref does (their generations and
    live flags aside; info's warning aside unless `info`)."""
    for ep in (("/api/info",) if info else ()) + STEP_ENDPOINTS:
        a, b = srv.json(ep), ref.json(ep)
        for doc in (a, b):
            doc.pop("generation", None)
            doc.pop("live", None)
            doc.pop("trace", None)  # the file names differ
        check(a == b, f"{what}: {ep} differs from a load of the same bytes:\n{json.dumps(a)[:800]}\n{json.dumps(b)[:800]}")


def test_follow_steps():
    """--follow over a file written in steps, cut anywhere (inside packets
    and their headers): each update answers as a load of the file as it
    then is, packet by packet, and the last as a load of the whole trace."""
    src = os.path.join(TRACES, "workload-1e-3.ctf")
    data = open(src, "rb").read()
    path, cut = os.path.join(TMP, "steps.ctf"), os.path.join(TMP, "steps_cut.ctf")
    cuts = [30, 5000, 70001, 400017, 1100000, 1100013, 1900003, len(data)]
    open(path, "wb").close()
    srv = Server("--follow", path)
    # a reader all along, so that answers run while the loader adds steps
    busy = {"stop": False, "bad": []}

    def hammer():
        eps = ("/api/flame", "/api/sites?n=5&size=100..", "/api/timeline?bins=50", "/api/leaks")
        k = 0
        while not busy["stop"]:
            code = srv.get(eps[k % len(eps)])[0]
            if code not in (200, 503):
                busy["bad"].append(code)
            k += 1

    reader = threading.Thread(target=hammer, daemon=True)
    reader.start()
    try:
        gen, last = 0, -1
        for at in cuts:
            with open(path, "r+b") as f:
                f.seek(0, 2)
                f.write(data[f.tell():at])
            with open(cut, "wb") as f:
                f.write(data[:at])
            if at < 100:  # not a whole first packet: said, and retried
                st = wait_for(srv, lambda s: s["state"] == "error", "a trace not yet whole")
                check("steps.ctf" in st.get("error", ""), f"the error names the file: {st}")
                continue
            ref = Server(cut)
            try:
                ref.wait_ready()
                want = ref.json("/api/status")["objects"]
                # a cut inside the packet after the last one brings nothing new
                st = wait_for(srv, lambda s: s["state"] == "ready" and s["objects"] == want
                              and (s["generation"] > gen or want == last), f"the update at byte {at}")
                last = want
                gen = st["generation"]
                same_answers(srv, ref, f"at byte {at}", info=at == len(data))
            finally:
                ref.stop()
        # the trace written over by another: followed from its start
        other, _ = synth("--rate", "1", "--seed", "11")
        with open(path, "wb") as f:
            f.write(open(other, "rb").read())
        ref = Server(other)
        try:
            ref.wait_ready()
            want = ref.json("/api/status")["objects"]
            wait_for(srv, lambda s: s["generation"] > gen and s["objects"] == want, "a trace written over")
            same_answers(srv, ref, "a trace written over")
        finally:
            ref.stop()
    finally:
        busy["stop"] = True
        reader.join()
        srv.stop()
    check(not busy["bad"], f"answers while following: {busy['bad'][:5]}")


def test_listen():
    port = free_port()
    out = os.path.join(TMP, "listened.ctf")
    srv = Server("--listen", f"127.0.0.1:{port}", "-o", out)
    try:
        st = srv.json("/api/status")
        check(st["state"] == "waiting" and f"127.0.0.1:{port}" in st.get("message", ""), f"waiting: {st}")
        srv.json("/api/info", status=503)
        env = dict(os.environ, LD_PRELOAD=PRELOAD, MEMTRACE=f"tcp:127.0.0.1:{port}", MEMTRACE_RATE="1e-3")
        prog = subprocess.Popen([LIVE_PROG, "3"], env=env, stdout=subprocess.PIPE)
        st = wait_for(srv, lambda s: s["state"] == "ready" and s["objects"] > 0, "first data")
        g1 = st["generation"]
        wait_for(srv, lambda s: s["generation"] > g1, "updates while the program runs", timeout=20)
        prog.wait(timeout=30)
        time.sleep(1)
        st = srv.json("/api/status")
        sites = srv.json("/api/sites?n=100")
        names = {x.get("function") for x in sites["sites"]}
        check({"live_alpha", "live_beta", "live_gamma"} <= names, f"live sites {names}")
    finally:
        srv.stop()
    check(os.path.getsize(out) > 0, "-o keeps the trace")


def test_attach():
    """memtrace view --attach PID: the live view of a running process that
    memtrace attach traces into the viewer; at the end (the viewer's stop),
    the process is detached and runs on to its normal end."""
    prog_path = os.path.join(os.path.dirname(MEMTRACE), "prog_steady")
    if not os.path.exists(prog_path):
        raise SystemExit(77)
    plain = subprocess.run([prog_path, "0.2"], capture_output=True, text=True, check=True).stdout
    prog = subprocess.Popen([prog_path, "6"], stdout=subprocess.PIPE, text=True)
    out = os.path.join(TMP, "attached.ctf")
    srv = Server("--attach", str(prog.pid), "--rate", "1e-3", "-o", out)
    try:
        st = wait_for(srv, lambda s: s["state"] == "ready" and s["objects"] > 0, "first data")
        check(st.get("live") is True, f"a live view: {st}")
        g1 = st["generation"]
        wait_for(srv, lambda s: s["generation"] > g1, "updates while the process runs", timeout=20)
        info = srv.json("/api/info")
        check(info["pid"] == prog.pid and "attached" in info["runtime_params"], f"the attached process: {info}")
        names = {x.get("function") for x in srv.json("/api/sites?n=100")["sites"]}
        check("steady_site" in names, f"its sites: {names}")
    finally:
        srv.stop()
    check(prog.wait(timeout=30) == 0, "the process runs on after the viewer stops")
    check(prog.stdout.read() == plain, "its output as without the attach")
    check(os.path.getsize(out) > 0, "-o keeps the trace")
    bad = subprocess.run([MEMTRACE, "view", "--attach", "abc"], capture_output=True, text=True)
    check(bad.returncode == 2 and "--attach takes a process id, not 'abc'" in bad.stderr, bad.stderr)
    bad = subprocess.run([MEMTRACE, "view", "--rate", "1e-3", "x.ctf"], capture_output=True, text=True)
    check(bad.returncode == 2 and "--rate goes with --attach" in bad.stderr, bad.stderr)


def test_native():
    """A native program's trace (every block external): /api/info says it
    has no runtime heaps, which the page reads to speak of freed objects and
    to offer no source filter."""
    path = os.path.join(TMP, "native.ctf")
    env = dict(os.environ, LD_PRELOAD=PRELOAD, MEMTRACE=path, MEMTRACE_RATE="1e-3")
    subprocess.run([LIVE_PROG, "0.2"], env=env, stdout=subprocess.DEVNULL, check=True)
    srv = Server(path)
    try:
        info = srv.json("/api/info")
        check(info["runtime_heaps"] is False and info["sampled_objects"] > 0,
              f"a native trace has no runtime heaps: {info.get('runtime_heaps')}")
        check(info["mappings"] is False, "a trace without mappings says so")
    finally:
        srv.stop()
    # anonymous mappings (tests/profiler/prog_maps.c at rate 1, which prints
    # each site's objects and bytes): /api/info says there are some, which
    # the page reads to offer the heap and mapping filters, and the two
    # kinds split the trace's objects
    prog = os.path.join(os.path.dirname(MEMTRACE), "prog_maps")
    if not os.path.exists(prog):
        return
    path = os.path.join(TMP, "maps.ctf")
    env = dict(os.environ, LD_PRELOAD=PRELOAD, MEMTRACE=path, MEMTRACE_RATE="1")
    out = subprocess.run([prog], env=env, capture_output=True, text=True, check=True).stdout
    truth = {w[0]: int(w[2]) for w in map(str.split, out.splitlines())}
    srv = Server(path)
    try:
        info = srv.json("/api/info")
        check(info["mappings"] is True, "a trace with mappings says so")
        maps = srv.json("/api/sites?n=1000&by=function&source=mapping")
        heap = srv.json("/api/sites?n=1000&by=function&source=heap")
        got = {x["function"]: round(x["bytes"]["value"]) for x in maps["sites"]}
        check(got == truth, f"mapping sites {got}, the program's {truth}")
        check(maps["total"]["samples"] + heap["total"]["samples"] == info["total"]["samples"],
              "heap and mappings add up to the trace")
        check(maps["filter"] == {"sources": ["mapping"]}, f"the filter echoed: {maps['filter']}")
    finally:
        srv.stop()


def test_golden():
    for t in ("ocamlopt.ctf", "workload-1e-3.ctf", "workload-1e-4.ctf"):
        p = os.path.join(TRACES, t)
        if not os.path.exists(p):
            raise SystemExit(77)
        srv = Server(p)
        try:
            info = srv.json("/api/info")
            check(info["runtime_heaps"] is True, f"{t}: an OCaml trace has runtime heaps")
            fl = srv.json("/api/flame?min=0")
            check(fl["callees"]["bytes"]["value"] == info["total"]["bytes"]["value"], f"{t}: flame total")
            # the flame's top-level functions against memtrace's folded stacks
            folded = os.path.join(TRACES, t.replace(".ctf", ".folded.txt"))
            if os.path.exists(folded):
                tops = {}
                for line in open(folded, encoding="utf-8"):
                    stack, n = line.rsplit(" ", 1)
                    top = stack.split(";")[0]
                    tops[top] = tops.get(top, 0) + int(n)
                names = {f["id"]: f["name"] for f in fl["functions"]}
                got = {names[c["fn"]]: c for c in fl["callees"]["children"]}
                best = max(tops, key=tops.get)
                check(best in got, f"{t}: top frame {best} in flame")
            srv.json("/api/flame?live=peak&inside=a")
            srv.json("/api/functions?hide=Stdlib")
        finally:
            srv.stop()


if __name__ == "__main__":
    fn = globals().get("test_" + TEST)
    if not fn:
        raise SystemExit(f"no test {TEST}")
    try:
        fn()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failure(s)", file=sys.stderr)
        sys.exit(1)
    print("ok")
