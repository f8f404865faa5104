#!/usr/bin/env python3
"""Tests of memtrace top, leaks and diff.

usage: tools_test.py MEMTRACE MT_TOOLS_SYNTH TRACES_DIR TEST

Synthetic traces come from mt_tools_synth, which writes the trace and its
truth (every allocation, sampled or not). At sample rate 1 every estimate is
exact, so the tools' figures are compared for equality with the truth; at
lower rates the truth must lie within the printed 95% intervals, and the
intervals' coverage over many seeds is measured. Figures are read from the
CSV and JSON outputs (parsed with the csv and json modules, so quoting and
escaping are checked too).
"""
import concurrent.futures
import csv
import io
import itertools
import json
import re
import os
import subprocess
import sys
import tempfile

MEMTRACE, SYNTH, TRACES, TEST = sys.argv[1:5]
SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests
TMP = tempfile.mkdtemp(prefix="mt_tools_")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


def run(*args, status=0):
    p = subprocess.run([MEMTRACE, *args], capture_output=True)
    out = p.stdout.decode("utf-8")
    if p.returncode != status:
        print(p.stderr.decode("utf-8", "replace"), file=sys.stderr)
        raise SystemExit(f"FAIL: memtrace {' '.join(args)}: exit {p.returncode}, want {status}")
    return out


def run_csv(*args):
    return list(csv.DictReader(io.StringIO(run(*args, "--format", "csv"))))


def run_json(*args):
    return json.loads(run(*args, "--format", "json"))


_synth_ids = itertools.count(1)


def synth(*opts):
    """Writes a synthetic trace; returns its path and its truth."""
    n = next(_synth_ids)  # atomic under the GIL: safe from the coverage threads
    path = os.path.join(TMP, f"s{n}.ctf")
    truth = os.path.join(TMP, f"s{n}.json")
    subprocess.run([SYNTH, path, truth, *map(str, opts)], check=True)
    with open(truth, encoding="utf-8") as f:
        return path, Truth(json.load(f))


class Truth:
    def __init__(self, j):
        self.rate = j["rate"]
        self.duration = j["duration_us"]
        self.sites = j["sites"]
        self.totals = j["totals"]
        self.objects = [
            dict(site=o[0], words=o[1], length=o[2], nsamples=o[3], source=o[4], alloc=o[5],
                 free=None if o[6] < 0 else o[6])
            for o in j.get("objects", [])
        ]

    def peak_time(self):
        """When the live samples first reached their maximum."""
        ev = []
        for o in self.objects:
            if o["nsamples"]:
                ev.append((o["alloc"], o["nsamples"]))
                if o["free"] is not None:
                    ev.append((o["free"], -o["nsamples"]))
        ev.sort()
        live = peak = 0
        when = 0
        for t, d in ev:
            live += d
            if live > peak:
                peak, when = live, t
        return when

    def select(self, flt):
        """The objects passing a filter given as a dict of conditions (the
        semantics of mt_filter, times in microseconds)."""
        out = []
        live_at = self.peak_time() if flt.get("live") == "peak" else flt.get("live_at")
        for o in self.objects:
            a, fr = o["alloc"], o["free"]
            s = self.sites[o["site"]]
            if not (flt.get("alloc_from", 0) <= a < flt.get("alloc_to", float("inf"))):
                continue
            if flt.get("live") == "end" and fr is not None:
                continue
            if flt.get("live") in ("at", "peak") and not (a <= live_at and (fr is None or fr > live_at)):
                continue
            if flt.get("never") and fr is not None:
                continue
            if "size" in flt and not (flt["size"][0] <= o["length"] * 8 <= flt["size"][1]):
                continue
            if "lifetime" in flt:
                life = (self.duration if fr is None else fr) - a
                if not (flt["lifetime"][0] <= life <= flt["lifetime"][1]):
                    continue
            if "sources" in flt and o["source"] not in flt["sources"]:
                continue
            if "inside" in flt and not any(flt["inside"] in n for n in s["names"]):
                continue
            if "not_inside" in flt and any(flt["not_inside"] in n for n in s["names"]):
                continue
            out.append(o)
        return out

    def site_name(self, site, by):
        s = self.sites[site]
        if by == "stack":
            return " <- ".join(s["frames"])
        if "function" not in s:
            return s["site"]
        if by == "line":
            return f"{s['function']} ({s['file']}:{s['line']})"
        return f"{s['function']} ({s['file']})"

    def groups(self, objs, by):
        """Expected per group: bytes, objects, samples, sampled objects,
        oldest and newest allocation."""
        g = {}
        for o in objs:
            k = self.site_name(o["site"], by)
            e = g.setdefault(k, dict(bytes=0, objects=0, samples=0, sampled=0,
                                     oldest=float("inf"), newest=0))
            e["bytes"] += o["words"] * 8
            e["objects"] += 1
            e["samples"] += o["nsamples"]
            e["sampled"] += o["nsamples"] > 0
            e["oldest"] = min(e["oldest"], o["alloc"])
            e["newest"] = max(e["newest"], o["alloc"])
        return g


def row_name(row, by):
    return row["stack"] if by == "stack" else row["site"]


def check_top_exact(path, truth, by, args=(), flt=None, sort="bytes"):
    """top at rate 1: every figure equals the truth."""
    what = f"top --by {by} {' '.join(args)}"
    objs = truth.select(flt or {})
    want = truth.groups(objs, by)
    rows = run_csv("top", path, "--by", by, "-n", "0", "--depth", "0", "--sort", sort, *args)
    got = {row_name(r, by): r for r in rows}
    check(set(got) == set(want), f"{what}: sites {sorted(got)} != {sorted(want)}")
    total_b = sum(w["bytes"] for w in want.values())
    total_o = sum(w["objects"] for w in want.values())
    for k in set(got) & set(want):
        r, w = got[k], want[k]
        for col, exp in (("bytes", w["bytes"]), ("bytes_lo", w["bytes"]), ("bytes_hi", w["bytes"]),
                         ("objects", w["objects"]), ("objects_lo", w["objects"]),
                         ("objects_hi", w["objects"]), ("samples", w["samples"]),
                         ("sampled_objects", w["sampled"])):
            check(float(r[col]) == exp, f"{what}: {k}: {col} {r[col]} != {exp}")
        check(abs(float(r["bytes_percent"]) - 100 * w["bytes"] / total_b) < 1e-9,
              f"{what}: {k}: bytes_percent {r['bytes_percent']}")
        check(abs(float(r["objects_percent"]) - 100 * w["objects"] / total_o) < 1e-9,
              f"{what}: {k}: objects_percent {r['objects_percent']}")
    key = "objects" if sort == "objects" else "bytes"
    vals = [float(r[key]) for r in rows]
    check(vals == sorted(vals, reverse=True), f"{what}: not ranked by {key}: {vals}")
    check([int(r["rank"]) for r in rows] == list(range(1, len(rows) + 1)), f"{what}: ranks")
    # The JSON output: same figures, and the totals.
    j = run_json("top", path, "--by", by, "-n", "0", "--depth", "0", "--sort", sort, *args)
    check(j["total"]["bytes"]["value"] == total_b, f"{what}: json total bytes {j['total']['bytes']}")
    check(j["total"]["objects"]["value"] == total_o, f"{what}: json total objects")
    check(j["sites_total"] == len(want) and j["shown"] == len(want), f"{what}: json counts")
    for s in j["sites"]:
        k = " <- ".join(
            f"{f['function']} ({f['file']}:{f['line']})" if "function" in f else "#" + f["code"]
            for f in s["frames"]) if by == "stack" else s["site"]
        w = want.get(k)
        if check(w is not None, f"{what}: json site {k!r} unexpected"):
            check(s["bytes"]["value"] == w["bytes"] and s["objects"]["value"] == w["objects"],
                  f"{what}: json {k}: {s['bytes']} {s['objects']} != {w}")
    return rows


# ---- tests ---------------------------------------------------------------------------

def test_top_exact():
    path, truth = synth("--rate", "1", "--seed", "7")
    check_top_exact(path, truth, "function")
    # the table: a header with the totals, one row per site
    out = run("top", path, "-n", "0")
    check("Total: " in out and "exact" in out and "filter: none" in out, "top table header")
    n = len(truth.groups(truth.objects, "function"))
    check(f"Showing {n} of {n} sites." in out, "top table count line")
    check(sum(1 for line in out.splitlines() if line[:4].strip().isdigit()) == n, "top table rows")
    # format version 3 traces give the same figures
    path3, truth3 = synth("--rate", "1", "--seed", "7", "--version", "3")
    check_top_exact(path3, truth3, "function")


def test_top_by_line():
    path, truth = synth("--rate", "1", "--seed", "8")
    rows = check_top_exact(path, truth, "line")
    # stacks 0 and 1 share the site line Bar.alloc (bar.ml:5): one row
    check(sum(1 for r in rows if r["site"] == "Bar.alloc (bar.ml:5)") == 1, "line grouping")
    check(any(r["site"] == "Foo.parse (foo.ml:11)" for r in rows) and
          any(r["site"] == "Foo.parse (foo.ml:12)" for r in rows), "two lines of Foo.parse")


def test_top_by_stack():
    path, truth = synth("--rate", "1", "--seed", "9")
    rows = check_top_exact(path, truth, "stack")
    # two codes printing alike (Dup.f line 9) are one stack, and so are an
    # inlined code and the same two locations as separate codes
    check(sum(1 for r in rows if r["stack"].startswith("Dup.f")) == 1, "printed stacks merged")
    check(sum(1 for r in rows if r["stack"].startswith("Inl.inner")) == 1, "inlined merged")
    # names of 3000 characters differing at the end stay apart
    check(sum(1 for r in rows if r["function"].startswith("xxxxxxxx")) == 2, "long names")
    # the table prints each stack's frames on their own lines
    out = run("top", path, "--by", "stack", "-n", "0", "--depth", "2")
    check("... 1 more frame\n" in out, "top --by stack depth note")


def test_top_stack_passes():
    """top --by stack ranks in bounded memory: with more distinct backtraces
    than its budget holds it splits them into passes (and keeps no
    fingerprint per backtrace id). A tiny budget forces that on small traces:
    the output must be the same as in one pass, printed-alike stacks still
    merged, ties still broken by name."""
    env = dict(os.environ, MEMTRACE_STACK_RANK_BUDGET="4096")
    traces = [synth("--rate", "1", "--seed", "9")[0], synth("--rate", "1e-2", "--seed", "13")[0]]
    traces += reference_traces()
    cases = [[], ["--sort", "objects", "-n", "0"], ["-n", "5", "--depth", "0"],
             ["--inside", "a", "-n", "0"], ["--not-inside", "e", "--sort", "objects"],
             ["--live-at-end", "-n", "3"]]
    for t in traces:
        for args in cases:
            for fmt in ("table", "csv", "json"):
                cmd = ["top", t, "--by", "stack", "--format", fmt, *args]
                want = run(*cmd)
                p = subprocess.run([MEMTRACE, *cmd], capture_output=True, env=env)
                check(p.returncode == 0 and p.stdout.decode("utf-8") == want,
                      f"{' '.join(cmd)}: differs with a small budget")
    # the merged stacks of test_top_by_stack are merged across passes too
    rows = list(csv.DictReader(io.StringIO(subprocess.run(
        [MEMTRACE, "top", traces[0], "--by", "stack", "-n", "0", "--format", "csv"],
        capture_output=True, env=env, check=True).stdout.decode("utf-8"))))
    check(sum(1 for r in rows if r["stack"].startswith("Dup.f")) == 1, "merged with passes")
    check(sum(1 for r in rows if r["stack"].startswith("Inl.inner")) == 1, "inlined with passes")


def test_top_sort_objects():
    path, truth = synth("--rate", "1", "--seed", "10")
    check_top_exact(path, truth, "function", sort="objects")
    check_top_exact(path, truth, "line", sort="objects")


def test_top_filters():
    path, truth = synth("--rate", "1", "--seed", "11")
    cases = [
        (["--source", "external"], {"sources": [2]}),
        (["--source", "minor,major"], {"sources": [0, 1]}),
        (["--size", "100..1000"], {"size": (100, 1000)}),
        (["--size", "1k.."], {"size": (1024, float("inf"))}),
        (["--live-at-end"], {"live": "end"}),
        (["--never-collected"], {"never": True}),
        (["--inside", "Foo"], {"inside": "Foo"}),
        (["--inside", "inner"], {"inside": "inner"}),  # an inlined frame counts
        (["--not-inside", "Foo"], {"not_inside": "Foo"}),
        (["--time", "0.1..0.3"], {"alloc_from": 100000, "alloc_to": 300000}),
        (["--time", "..0.05"], {"alloc_to": 50000}),
        (["--lifetime", "..0.0005"], {"lifetime": (0, 500)}),
        (["--live-at", "0.2"], {"live": "at", "live_at": 200000}),
        (["--live-at-peak"], {"live": "peak"}),
        (["--source", "minor", "--size", "..40", "--not-inside", "Dup"],
         {"sources": [0], "size": (0, 40), "not_inside": "Dup"}),
    ]
    for args, flt in cases:
        for by in ("function", "stack"):
            check_top_exact(path, truth, by, args, flt)
    # the header names the filter and the share of the trace
    out = run("top", path, "--source", "external")
    check("filter: source external" in out and "of the trace's bytes" in out, "filter header")
    # a filter that keeps nothing
    out = run("top", path, "--size", "1G..")
    check("No allocations match the filter." in out, "empty result message")
    check(run_csv("top", path, "--size", "1G..") == [], "empty csv")
    j = run_json("top", path, "--size", "1G..")
    check(j["sites"] == [] and j["total"]["bytes"]["value"] == 0, "empty json")


def test_top_limit():
    path, truth = synth("--rate", "1", "--seed", "12")
    all_rows = run_csv("top", path, "-n", "0")
    check(run_csv("top", path, "-n", "3") == all_rows[:3], "-n 3 is the first 3")
    check(run_csv("top", path, "-n3") == all_rows[:3], "-n3")
    check(len(run_csv("top", path)) == min(20, len(all_rows)), "default -n 20")
    rows = run_csv("top", path, "--by", "stack", "--depth", "1", "-n", "0")
    inl = [r for r in rows if r["stack"].startswith("Inl.inner")]
    check(len(inl) == 1 and inl[0]["stack"] == "Inl.inner (inl.ml:8) <- ... 2 more frames",
          f"--depth 1: {inl}")
    # with many ties (a sampled trace: figures are multiples of one sample),
    # the first k of a selection are the first k of the full ranking
    path2, _ = synth("--rate", "1e-2", "--seed", "13")
    for by in ("function", "stack"):
        for sort in ("bytes", "objects"):
            full = run_csv("top", path2, "--by", by, "--sort", sort, "-n", "0")
            for k in range(1, len(full) + 1):
                check(run_csv("top", path2, "--by", by, "--sort", sort, "-n", str(k)) == full[:k],
                      f"-n {k} --by {by} --sort {sort}: not the first {k}")
    # deterministic: the same output twice
    check(run("top", path, "--by", "stack", "-n", "0") == run("top", path, "--by", "stack", "-n", "0"),
          "deterministic")


def coverage(rate, scale, seeds):
    """Fraction of (seed, site) pairs, and of seeds for the total, whose true
    bytes / objects lie within the printed 95% intervals. Seeds run in
    parallel (each is a generator run and a top run)."""

    def one(seed):
        path, truth = synth("--rate", rate, "--scale", scale, "--seed", seed, "--summary")
        j = run_json("top", path, "-n", "0")
        os.unlink(path)
        os.unlink(path[:-4] + ".json")
        want = {}
        for i, (words, count, _, _) in enumerate(truth.totals):
            e = want.setdefault(truth.site_name(i, "function"), [0, 0])
            e[0] += words * 8
            e[1] += count
        r = {"n": 0, "bytes": 0, "objects": 0}
        for s in j["sites"]:
            w = want[s["site"]]
            r["n"] += 1
            r["bytes"] += s["bytes"]["lo"] <= w[0] <= s["bytes"]["hi"]
            r["objects"] += s["objects"]["lo"] <= w[1] <= s["objects"]["hi"]
        r["unsampled"] = len(want) - r["n"]
        tb = sum(w[0] for w in want.values())
        to = sum(w[1] for w in want.values())
        t = j["total"]
        r["total_bytes"] = t["bytes"]["lo"] <= tb <= t["bytes"]["hi"]
        r["total_objects"] = t["objects"]["lo"] <= to <= t["objects"]["hi"]
        return r

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(one, range(1, seeds + 1)))
    n = sum(r["n"] for r in results)
    unsampled = sum(r["unsampled"] for r in results)
    cov = {k: sum(r[k] for r in results) / (seeds if k.startswith("total") else n)
           for k in ("bytes", "objects", "total_bytes", "total_objects")}
    print(f"rate {rate} scale {scale}, {seeds} seeds, {n} site intervals "
          f"({unsampled} site-seeds unsampled): coverage bytes {cov['bytes']:.3f}, "
          f"objects {cov['objects']:.3f}, total bytes {cov['total_bytes']:.3f}, "
          f"total objects {cov['total_objects']:.3f}")
    return cov


def test_top_coverage():
    # the truth within the printed intervals of one trace: the total's, and
    # the sites' but for the few misses 95% intervals allow (expected: 5%)
    path, truth = synth("--rate", "1e-3", "--scale", "10", "--seed", "1")
    j = run_json("top", path, "-n", "0")
    want = truth.groups(truth.objects, "function")
    tb = sum(w["bytes"] for w in want.values())
    to = sum(w["objects"] for w in want.values())
    check(j["total"]["bytes"]["lo"] <= tb <= j["total"]["bytes"]["hi"], f"total bytes {tb}")
    check(j["total"]["objects"]["lo"] <= to <= j["total"]["objects"]["hi"], f"total objects {to}")
    misses = [s["site"][:40] for s in j["sites"]
              if not s["bytes"]["lo"] <= want[s["site"]]["bytes"] <= s["bytes"]["hi"]]
    print(f"seed 1: {len(j['sites'])} sites, bytes outside the interval: {misses}")
    check(len(misses) <= 2, f"seed 1: {len(misses)} sites' bytes outside their intervals")
    # coverage over many seeds
    for rate, scale in (("1e-2", "1"), ("1e-3", "10")):
        cov = coverage(rate, scale, 200)
        for k, v in cov.items():
            check(v >= 0.90, f"rate {rate}: {k} coverage {v:.3f} < 0.90")


def check_leaks(path, truth, args=(), flt=None):
    what = f"leaks {' '.join(args)}"
    flt = dict(flt or {}, never=True)
    want = truth.groups(truth.select(flt), "stack")
    j = run_json("leaks", path, "-n", "0", "--depth", "0", *args)
    got = {}
    for s in j["stacks"]:
        k = " <- ".join(
            f"{f['function']} ({f['file']}:{f['line']})" if "function" in f else "#" + f["code"]
            for f in s["frames"])
        got[k] = s
    check(set(got) == set(want), f"{what}: stacks {sorted(got)} != {sorted(want)}")
    for k in set(got) & set(want):
        s, w = got[k], want[k]
        check(s["bytes"] == {"value": w["bytes"], "lo": w["bytes"], "hi": w["bytes"]},
              f"{what}: {k}: bytes {s['bytes']} != {w['bytes']}")
        check(s["objects"]["value"] == w["objects"], f"{what}: {k}: objects")
        check(abs(s["oldest_alloc_s"] - w["oldest"] / 1e6) < 1e-9, f"{what}: {k}: oldest")
        check(abs(s["newest_alloc_s"] - w["newest"] / 1e6) < 1e-9, f"{what}: {k}: newest")
        check(abs(s["age_s"] - (truth.duration - w["oldest"]) / 1e6) < 1e-9, f"{what}: {k}: age")
    sizes = [s["bytes"]["value"] for s in j["stacks"]]
    check(sizes == sorted(sizes, reverse=True), f"{what}: not most bytes first")
    old = run_json("leaks", path, "-n", "0", "--depth", "0", "--sort", "oldest", *args)
    order = [(s["oldest_alloc_s"], -s["bytes"]["value"]) for s in old["stacks"]]
    check(order == sorted(order) and len(old["stacks"]) == len(j["stacks"]),
          f"{what} --sort oldest: not oldest first")
    check(j["total"]["bytes"]["value"] == sum(w["bytes"] for w in want.values()), f"{what}: total")
    return j


def test_leaks_exact():
    path, truth = synth("--rate", "1", "--seed", "21")
    j = check_leaks(path, truth)
    check(len(j["stacks"]) >= 5, "leaks: several stacks")
    out = run("leaks", path)
    check("never collected (still live at the end of the trace" in out, "leaks header")
    check("most bytes first" in out and re.search(r"allocated at [0-9.]+ (us|ms|s)[ ,;]", out) and
          "before the end" in out and "Leaky.keep (leaky.ml:30)" in out, "leaks table")
    # --live-at-end (what leaks means anyway) changes nothing
    check(run("leaks", path, "--live-at-end") == out, "leaks --live-at-end")
    # depth and count limits
    out = run("leaks", path, "-n", "1", "--depth", "1", "--sort", "oldest")
    check(out.count("\n#") == 1 and "more frames" in out, "leaks -n 1 --depth 1")


def test_leaks_filters():
    path, truth = synth("--rate", "1", "--seed", "22")
    check_leaks(path, truth, ["--size", "100..1000"], {"size": (100, 1000)})
    check_leaks(path, truth, ["--inside", "Foo"], {"inside": "Foo"})
    check_leaks(path, truth, ["--not-inside", "main"], {"not_inside": "main"})
    check_leaks(path, truth, ["--not-inside", "Keep", "--inside", "a"],
                {"not_inside": "Keep", "inside": "a"})
    check_leaks(path, truth, ["--source", "external"], {"sources": [2]})
    check_leaks(path, truth, ["--live-at-peak"], {"live": "peak"})
    check_leaks(path, truth, ["--time", "0.2.."], {"alloc_from": 200000})


def diff_rows(*args):
    return run_csv("diff", *args, "-n", "0")


def test_diff_identical():
    for rate in ("1", "1e-3"):
        a, _ = synth("--rate", rate, "--seed", "31", "--scale", "2")
        b, _ = synth("--rate", rate, "--seed", "31", "--scale", "2")
        for args in ((a, a), (a, b), (a, b, "--by", "line"), (a, b, "--live-at-end")):
            rows = diff_rows(*args)
            check(rows and all(r["significant"] == "0" for r in rows), f"diff {args}: significant")
            check(all(float(r["change_bytes"]) == 0 and float(r["change_objects"]) == 0
                      for r in rows), f"diff {args}: changes")
        j = run_json("diff", a, b)
        check(j["significant"] == 0 and not j["change"]["significant"], "diff json identical")
        out = run("diff", a, b)
        check("0 with a significant change" in out, "diff table identical")


def test_long_trace():
    """A trace of hours: under a condition on allocation times, top and diff
    fall back from sums made while reading (whose times would coarsen as the
    trace passes 71 minutes) to a whole load, and print what a whole load
    prints; without one, the sums stand."""
    a, truth = synth("--rate", "1e-2", "--seed", "37", "--gap", "2000000")
    b, _ = synth("--rate", "1e-2", "--seed", "38", "--gap", "2000000")
    check(truth.duration > 3 * 3600 * 1e6, f"the trace spans {truth.duration / 3.6e9:.1f} hours")
    whole = dict(os.environ, MEMTRACE_LOAD="whole")
    for args in (("top", "--time", "600..5000", "--format", "json", a),
                 ("top", "--by", "line", "--format", "csv", a),
                 ("diff", "--time", "600..5000", "--format", "json", a, b),
                 ("diff", "--by", "line", "--format", "csv", a, b)):
        kept = run(*args)
        p = subprocess.run([MEMTRACE, *args], capture_output=True, env=whole)
        check(p.returncode == 0 and kept == p.stdout.decode("utf-8") and kept,
              f"memtrace {' '.join(args[:-1])}: as a whole load")


def test_diff_doubled():
    a, ta = synth("--rate", "1", "--seed", "41")
    b, tb = synth("--rate", "1", "--seed", "41", "--double", "4")
    # filters apply to both traces
    rows = diff_rows(a, b, "--inside", "Foo", "--by", "line")
    for r in rows:
        for side, tr in (("base", ta), ("new", tb)):
            w = tr.groups(tr.select({"inside": "Foo"}), "line").get(r["site"], {"bytes": 0})
            check(float(r[f"{side}_bytes"]) == w["bytes"], f"diff --inside: {r['site']} {side}")
    rows = diff_rows(a, b)
    sig = [r for r in rows if r["significant"] == "1"]
    check([r["site"] for r in sig] == ["Bar.alloc (baz.ml)"], f"diff doubled: {sig}")
    check(rows[0]["site"] == "Bar.alloc (baz.ml)", "the significant change first")
    wa = ta.groups(ta.objects, "function")["Bar.alloc (baz.ml)"]
    wb = tb.groups(tb.objects, "function")["Bar.alloc (baz.ml)"]
    r = rows[0]
    check(float(r["base_bytes"]) == wa["bytes"] and float(r["new_bytes"]) == wb["bytes"] and
          float(r["change_bytes"]) == wb["bytes"] - wa["bytes"], f"diff doubled figures: {r}")
    check(float(r["change_objects"]) == wa["objects"], "objects doubled")
    check(all(float(x["change_bytes"]) == 0 for x in rows[1:]), "other sites unchanged")


def test_diff_doubled_sampled():
    a, _ = synth("--rate", "1e-3", "--scale", "10", "--seed", "51")
    b, _ = synth("--rate", "1e-3", "--scale", "10", "--seed", "52", "--double", "4")
    for by in ("function", "line"):
        rows = diff_rows(a, b, "--by", by)
        site = "Bar.alloc (baz.ml)" if by == "function" else "Bar.alloc (baz.ml:5)"
        doubled = [r for r in rows if r["site"] == site][0]
        check(doubled["significant"] == "1", f"--by {by}: doubled site not significant: {doubled}")
        others = [r["site"] for r in rows if r["significant"] == "1" and r["site"] != site]
        print(f"--by {by}: doubled site change {float(doubled['change_percent']):+.1f}%, "
              f"other sites flagged: {others}")
        check(len(others) <= 1, f"--by {by}: unchanged sites flagged: {others}")
        check(rows[0]["significant"] == "1", "significant first")
    # a site present in one trace only, sampled enough, is a significant change
    j = run_json("diff", a, b, "--inside", "Bar.alloc")
    check(j["sites_total"] >= 1, "diff --inside")


def reference_traces():
    """The reference traces (MT_SHARED_TRACES), or [] when absent."""
    if not os.path.isdir(TRACES):
        return []
    return [os.path.join(TRACES, t) for t in sorted(os.listdir(TRACES)) if t.endswith(".ctf")]


def test_json_valid():
    path, _ = synth("--rate", "1e-2", "--seed", "61")
    traces = [path] + reference_traces()
    cmds = []
    for t in traces:
        cmds += [["top", t], ["top", t, "--by", "stack"], ["top", t, "--by", "line", "--live-at-peak"],
                 ["leaks", t], ["leaks", t, "--depth", "0", "-n", "0"], ["diff", t, traces[0]],
                 ["top", t, "--size", "1G.."]]
    for c in cmds:
        out = run(*c, "--format", "json")
        p = subprocess.run([sys.executable, "-m", "json.tool"], input=out.encode(),
                           capture_output=True)
        check(p.returncode == 0, f"{' '.join(c)}: invalid JSON: {p.stderr.decode()}")


def test_escaping():
    path, truth = synth("--rate", "1", "--seed", "62")
    weird = [s for s in truth.sites if s.get("function", "").startswith("Weird")][0]
    for by in ("function", "line", "stack"):
        rows = run_csv("top", path, "--by", by, "-n", "0")
        r = [r for r in rows if r["function"] == weird["function"]]
        check(len(r) == 1 and r[0]["file"] == weird["file"], f"csv --by {by}: {weird['function']!r}")
        j = run_json("top", path, "--by", by, "-n", "0")
        check(any(s.get("function") == weird["function"] and s.get("file") == weird["file"]
                  for s in j["sites"]), f"json --by {by}")
    rows = run_csv("diff", path, path, "-n", "0")
    check(any(r["function"] == weird["function"] for r in rows), "diff csv escaping")
    j = run_json("leaks", path, "-n", "0", "--depth", "0")
    check(any(f.get("function") == weird["function"] for s in j["stacks"] for f in s["frames"]),
          "leaks json escaping")
    # the table keeps control characters off the terminal
    out = run("top", path, "-n", "0")
    check("\t" not in out and 'Weird, "quoted"?\\ caf\u00e9' in out, "table sanitized")


def test_smoke():
    traces = reference_traces()
    if not traces:
        print(f"no reference traces in {TRACES}: skipped")
        raise SystemExit(SKIP)
    for t in traces:
        for args in (["top", t], ["top", t, "--by", "line", "--format", "csv"],
                     ["top", t, "--by", "stack", "-n", "5"], ["top", t, "--sort", "objects"],
                     ["top", t, "--live-at-peak"], ["top", t, "--inside", "Stdlib"],
                     ["leaks", t], ["leaks", t, "--format", "json"],
                     ["diff", t, traces[0]], ["diff", traces[-1], t, "--by", "line"]):
            check(run(*args).strip() != "", f"{' '.join(args)}: empty output")
    # --inside/--not-inside are decided on backtraces by site and on the
    # analysis' stack tree by stack: the totals agree
    for t in traces:
        for cond in (["--inside", "Stdlib"], ["--not-inside", "Stdlib"],
                     ["--inside", "Map", "--not-inside", "add"]):
            a = run_json("top", t, *cond)["total"]
            b = run_json("top", t, "--by", "stack", *cond)["total"]
            # sums in another order: equal up to rounding
            same = all(abs(a[k][e] - b[k][e]) <= 1e-9 * abs(b[k][e])
                       for k in ("bytes", "objects") for e in ("value", "lo", "hi"))
            check(same and a["samples"] == b["samples"] and
                  a["sampled_objects"] == b["sampled_objects"],
                  f"{t} {cond}: by site {a} != by stack {b}")
    # the reference trace's top site matches memtrace's hotspots
    t = os.path.join(TRACES, "workload-1e-3.ctf")
    if os.path.exists(t):
        rows = run_csv("top", t, "-n", "1")
        check(rows[0]["function"] == "Memtrace__Memprof_tracer.ext_alloc_slowpath" and
              abs(float(rows[0]["bytes_percent"]) - 87.9) < 0.05, f"workload top: {rows[0]}")


def test_errors():
    t, _ = synth("--rate", "1e-2", "--seed", "71")

    def expect(status, pattern, *args):
        p = subprocess.run([MEMTRACE, *args], capture_output=True)
        err = p.stderr.decode("utf-8", "replace")
        check(p.returncode == status and pattern in err,
              f"memtrace {' '.join(args)}: exit {p.returncode} (want {status}), stderr {err!r}")

    text = os.path.join(TMP, "not-a-trace.ctf")
    with open(text, "w") as f:
        f.write("this is not a trace\n")
    for cmd in ("top", "leaks"):
        expect(1, "/nonexistent/x.ctf", cmd, "/nonexistent/x.ctf")
        expect(1, "not-a-trace.ctf", cmd, text)
        expect(2, "unknown option '--bogus'", cmd, "--bogus", t)
        expect(2, "missing TRACE", cmd)
        expect(2, "-n wants a count", cmd, "-n", "x", t)
        expect(2, "--depth wants a count", cmd, "--depth", "-1", t)
        expect(2, "--size: 'abc' is not a range: write MIN..MAX", cmd, "--size", "abc", t)
        expect(2, "--size: 'x' in '1k..x' is not a size in bytes", cmd, "--size", "1k..x", t)
        expect(2, "--time: '2..1' is empty: FROM is after TO", cmd, "--time", "2..1", t)
        expect(2, "--format needs a value", cmd, t, "--format")
    expect(2, "--format takes table, csv or json, not 'xml'", "top", "--format", "xml", t)
    expect(2, "--by takes function, line or stack", "top", "--by", "file", t)
    expect(2, "--sort takes bytes or objects", "top", "--sort", "size", t)
    expect(2, "--format takes table or json, not 'csv'", "leaks", "--format", "csv", t)
    expect(2, "--collected contradicts", "leaks", "--collected", "1..2", t)
    expect(2, "unknown option '--by'", "leaks", "--by", "function", t)
    expect(2, "missing BASE and NEW traces", "diff", t)
    expect(2, "unexpected argument", "diff", t, t, t)
    expect(2, "--by takes function or line, not 'stack'", "diff", "--by", "stack", t, t)
    expect(1, "/nonexistent/y.ctf", "diff", t, "/nonexistent/y.ctf")
    expect(1, "/nonexistent/y.ctf", "diff", "/nonexistent/y.ctf", t)
    for cmd in ("top", "leaks", "diff"):
        out = run(cmd, "--help")
        check(out.startswith(f"usage: memtrace {cmd}") and "--live-at-end" in out, f"{cmd} --help")
        check(run("help", cmd) == out, f"help {cmd}")
    check("do not overlap" in run("diff", "--help"), "diff usage states the rule")


def test_unmatched_names():
    """A function name of --inside, --not-inside or --hide that no function
    of the traces has is warned of, one line each, by every command taking
    filters; names found are not, and the output is the same."""
    t, _ = synth("--rate", "1e-2", "--seed", "71")
    pb = os.path.join(TMP, "names.pb.gz")
    commands = [["top", t], ["leaks", t], ["stats", t], ["timeline", t, "--format", "csv"],
                ["flamegraph", t], ["export", "-o", pb, t], ["check", "--max-peak", "100G", t],
                ["diff", t, t], ["top", t, t]]
    for cmd in commands:
        name = cmd[0]
        several = cmd in (["diff", t, t], ["top", t, t])
        p = subprocess.run([MEMTRACE, *cmd, "--inside", "Nowhere", "--hide", "Foo,Zilch",
                            "--not-inside", "Leaky"], capture_output=True)
        err = p.stderr.decode("utf-8", "replace").splitlines()
        traces = "traces" if several else "trace"
        want = [f'memtrace {name}: warning: --inside "Nowhere": no function of the {traces} '
                f"has it in its name",
                f'memtrace {name}: warning: --hide "Zilch": no function of the {traces} '
                f"has it in its name"]
        check(p.returncode == 0 and err == want, f"{' '.join(cmd)}: exit {p.returncode}, {err}")
        p = subprocess.run([MEMTRACE, *cmd, "--inside", "Foo", "--hide", "main"],
                           capture_output=True)
        check(p.returncode == 0 and p.stderr == b"", f"{' '.join(cmd)}: {p.stderr!r}")


if __name__ == "__main__":
    fn = globals().get("test_" + TEST)
    if fn is None:
        raise SystemExit(f"no test {TEST}")
    try:
        fn()
    finally:
        for name in os.listdir(TMP):
            os.unlink(os.path.join(TMP, name))
        os.rmdir(TMP)
    if failures:
        raise SystemExit(f"{len(failures)} check(s) failed")
    print(f"{TEST}: ok")
