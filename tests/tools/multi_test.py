#!/usr/bin/env python3
"""memtrace top, leaks, flamegraph, timeline, stats and diff on several traces (a process tree, a fleet): the
sites (stacks) of each matched by name and their figures added, exactly at
rate 1; a directory as its .ctf files; --by-process; what cannot be ranked
together.

usage: multi_test.py MEMTRACE MT_TOOLS_SYNTH
"""
import json
import math
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


def timeline(*args):
    p = subprocess.run([MEMTRACE, "timeline", "--format", "json", *args], capture_output=True,
                       text=True, timeout=120)
    check(p.returncode == 0, f"timeline {args}: exit {p.returncode}: {p.stderr}")
    return json.loads(p.stdout)


def check_timeline(paths):
    """A trace twice is its own live heap doubled; several are lined up by
    their starts, each holding nothing past its end."""
    one = timeline("--bins", "50", paths[0])
    two = timeline("--bins", "50", paths[0], paths[0])
    for k in ("min", "max", "end"):
        check(all(abs(b - 2 * a) <= 1 for a, b in zip(one["all"][k], two["all"][k])) and
              len(two["all"][k]) == 50, f"timeline: a trace twice, {k} doubled")
    check("exact" not in two["peak"] and two["peak"]["time"] == one["peak"]["time"] and
          abs(two["peak"]["bytes"]["value"] - 2 * one["peak"]["bytes"]["value"]) <= 1,
          "timeline: one rate, read as one: the exact peak, doubled")
    many = timeline("--bins", "64", *paths)
    starts = [t["start_us"] for t in many["traces"]]
    singles = [timeline("--bins", "64", p) for p in paths]
    ends = [s + round(single["to"] * 1e6) for s, single in zip(starts, singles)]
    check(many["start_us"] == min(starts), "timeline: time 0 is the earliest start")
    check(abs(many["to"] * 1e6 - (max(ends) - min(starts))) <= 1,
          "timeline: to the latest end")
    last = sum(single["all"]["end"][-1] for single, e in zip(singles, ends) if e == max(ends))
    check(abs(many["all"]["end"][-1] - last) <= len(paths),
          f"timeline: at the end, only the traces still running: {many['all']['end'][-1]} "
          f"against {last}")


def bin_at(t, width):
    """The first bin whose end is at or after t: timeline.c's rule."""
    x = t / width
    return 0 if x <= 1 else math.ceil(x) - 1


def check_timeline_rates(tmp):
    """Traces of two rates: each trace's live heap at its own rate, added
    (the same program sampled twice, so the bins line up)."""
    paths = []
    for rate in ("1", "1e-2"):
        p = os.path.join(tmp, f"rate-{rate}.ctf")
        subprocess.run([SYNTH, p, p + ".json", "--rate", rate, "--seed", "11"], check=True)
        paths.append(p)
    each = [timeline("--bins", "40", p) for p in paths]
    both = timeline("--bins", "40", *paths)
    check(each[0]["to"] == each[1]["to"] == both["to"], "timeline, two rates: one span")
    check(all(abs(b - x - y) <= 1 for b, x, y in zip(both["all"]["end"], each[0]["all"]["end"],
                                                     each[1]["all"]["end"])),
          "timeline, two rates: the live heaps added")
    check(both["peak"]["exact"] is False, "timeline, two rates: the peak at bin ends")


def check_aligned(tmp):
    """Traces started at different wall-clock times, against the truth the
    synthesizer wrote (rate 1: every word sampled): at each bin's end, the
    bytes of every object allocated by then and not yet freed, each trace
    holding nothing past its end."""
    offsets = (0, 150000, 400000)
    paths, truths = [], []
    for i, off in enumerate(offsets):
        p = os.path.join(tmp, f"shift{i}.ctf")
        subprocess.run([SYNTH, p, p + ".json", "--rate", "1", "--seed", str(7 + i),
                        "--start", str(off)], check=True)
        paths.append(p)
        with open(p + ".json") as f:
            truths.append(json.load(f))
    nbins = 97
    got = timeline("--bins", str(nbins), *paths)
    starts = [t["start_us"] - got["start_us"] for t in got["traces"]]
    check(starts == list(offsets), f"timeline: the traces' starts {starts}")
    span = max(off + t["duration_us"] for off, t in zip(offsets, truths))
    width = span / nbins
    want = [0.0] * (nbins + 1)
    for off, t in zip(offsets, truths):
        for site, words, length, nsamples, source, alloc, free in t["objects"]:
            j0 = bin_at(alloc + off, width)
            gone = free + off if free >= 0 else off + t["duration_us"] + 1
            j1 = min(bin_at(gone, width), nbins)
            if j0 < j1:
                want[j0] += nsamples * 8
                want[j1] -= nsamples * 8
    live, run = [], 0.0
    for j in range(nbins):
        run += want[j]
        live.append(run)
    bad = [j for j in range(nbins) if abs(got["all"]["end"][j] - live[j]) > 0.5]
    check(not bad, f"timeline: lined-up live bytes differ from the truth at bins {bad[:5]}: "
          f"{[(got['all']['end'][j], live[j]) for j in bad[:3]]}")
    check(all(lo <= e <= hi for lo, e, hi in zip(got["all"]["min"], got["all"]["end"],
                                                  got["all"]["max"])),
          "timeline: each bin's end within its least and most")


def check_mixed(exact, sampled):
    """Traces of different rates: each site's estimates are the sums of
    each trace's, the exact trace's part certain."""
    each = [top("--by", "line", p) for p in (exact, sampled)]
    both = top("--by", "line", exact, sampled)
    want = {}
    for doc in each:
        for row in doc["sites"]:
            w = want.setdefault(key(row), [0.0, 0.0])
            w[0] += row["bytes"]["value"]
            w[1] += row["objects"]["value"]
    got = {key(r): r for r in both["sites"]}
    check(set(got) == set(want), "mixed rates: the sites of both")
    for k in set(got) & set(want):
        b, o = got[k]["bytes"], got[k]["objects"]
        check(abs(b["value"] - want[k][0]) <= 1e-9 * want[k][0] + 1e-6 and
              abs(o["value"] - want[k][1]) <= 1e-9 * want[k][1] + 1e-6,
              f"mixed rates: {k}: {b['value']}, {o['value']} against the sums {want[k]}")
        check(b["lo"] <= b["value"] <= b["hi"] and o["lo"] <= o["value"] <= o["hi"],
              f"mixed rates: {k}: the intervals hold the estimates")
    exact_total = each[0]["total"]["bytes"]["value"]
    check(both["total"]["bytes"]["lo"] >= exact_total, "mixed rates: the exact trace's bytes are certain")
    lk = leaks(exact, sampled)
    check(abs(lk["total"]["bytes"]["value"] - sum(leaks(p)["total"]["bytes"]["value"]
                                                 for p in (exact, sampled))) < 1e-3,
          "mixed rates: leaks' total is the sum")
    text = subprocess.run([MEMTRACE, "top", exact, sampled], capture_output=True, text=True).stdout
    check("Sample rates: 0.01 to 1" in text, "mixed rates: the table says so: " + text[:200])


def check_coverage(tmp):
    """Pairs of traces at rates 1e-2 and 3e-3, against the synthesizer's
    truth: each site's 95% bytes interval (a weighted Poisson sum) holds the
    true bytes for about 95% of the sites."""
    misses = checks = 0
    for seed in range(20):
        paths, truth = [], {}
        for i, rate in enumerate(("1e-2", "3e-3")):
            p = os.path.join(tmp, f"cov{i}.ctf")
            subprocess.run([SYNTH, p, p + ".json", "--rate", rate, "--seed", str(100 + 2 * seed + i)],
                           check=True, stdout=subprocess.DEVNULL)
            with open(p + ".json") as f:
                t = json.load(f)
            for site, tot in zip(t["sites"], t["totals"]):
                if "function" in site:
                    k = (site["function"], site["file"], site["line"])
                    truth[k] = truth.get(k, 0) + tot[0] * 8
            paths.append(p)
        for row in top("--by", "line", *paths)["sites"]:
            k = (row.get("function"), row.get("file"), row.get("line"))
            if k in truth:
                checks += 1
                misses += not (row["bytes"]["lo"] <= truth[k] <= row["bytes"]["hi"])
    check(checks >= 150 and misses <= 0.12 * checks,
          f"mixed rates: {misses} of {checks} intervals miss the truth (95% wanted)")


def check_diff(tmp, paths, other):
    """A directory as a side of diff: its traces' figures added."""
    base, new = os.path.join(tmp, "base"), os.path.join(tmp, "new")
    os.mkdir(base)
    os.mkdir(new)
    for p in paths[:2]:
        shutil.copy(p, base)
    shutil.copy(paths[2], new)
    p = subprocess.run([MEMTRACE, "diff", "-n", "0", "--format", "json", base, new],
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"diff of directories: exit {p.returncode}: {p.stderr}")
    d = json.loads(p.stdout) if p.returncode == 0 else {"rows": [], "base": {}, "new": {}}
    sides = [by_site(top(*paths[:2])), by_site(top(paths[2]))]
    rows = d.get("rows", d.get("sites", []))
    check(len(rows) > 3, f"diff of directories: {len(rows)} rows")
    for row in rows:
        if "function" not in row:
            continue  # the pools of sites with no location are keyed apart
        k = key(row)
        for i, name in enumerate(("base", "new")):
            want = sides[i].get(k, [0])[0]
            check(row[name]["bytes"]["value"] == want,
                  f"diff of directories: {k} {name}: {row[name]['bytes']['value']} != {want}")
    check(d["base"]["bytes"]["value"] == top(*paths[:2])["total"]["bytes"]["value"],
          "diff of directories: the base total is its traces'")
    shutil.copy(other, base)
    p = subprocess.run([MEMTRACE, "diff", base, new], capture_output=True, text=True)
    check(p.returncode == 1 and "one side's traces must share their rate" in p.stderr,
          f"diff: a side of two rates: {p.returncode} {p.stderr}")


def stats(*args, status=0):
    p = subprocess.run([MEMTRACE, "stats", "--format", "json", *args], capture_output=True,
                       text=True, timeout=120)
    check(p.returncode == status, f"stats {args}: exit {p.returncode}, want {status}: {p.stderr}")
    return json.loads(p.stdout)["all"] if p.returncode == 0 else p.stderr


def check_stats(paths, other):
    """One population: counts add, the moments are those of the union."""
    each = [stats(p) for p in paths]
    both = stats(*paths)
    for k in ("sampled_objects", "samples"):
        check(both[k] == sum(e[k] for e in each), f"stats: {k} add")
    for b in range(len(both["size_histogram"])):
        check(both["size_histogram"][b]["samples"] ==
              sum(e["size_histogram"][b]["samples"] for e in each), f"stats: size bin {b} adds")
    for name in ("minor", "major", "external"):
        check(both["sources"][name]["sampled_objects"] ==
              sum(e["sources"][name]["sampled_objects"] for e in each), f"stats: {name} adds")
    # the union's mean and variance from each trace's (exact at rate 1)
    n = sum(e["size_words"]["sampled"]["count"] for e in each)
    mean = sum(e["size_words"]["sampled"]["count"] * e["size_words"]["sampled"]["mean"]
               for e in each) / n
    m2 = sum(e["size_words"]["sampled"]["count"] * (e["size_words"]["sampled"]["variance"] +
                                                  (e["size_words"]["sampled"]["mean"] - mean) ** 2)
             for e in each)
    got = both["size_words"]["sampled"]
    check(abs(got["mean"] - mean) <= 1e-9 * mean and abs(got["variance"] - m2 / n) <= 1e-6 * m2 / n
          and got["max"] == max(e["size_words"]["sampled"]["max"] for e in each),
          f"stats: merged moments {got} against mean {mean}, variance {m2 / n}")
    p = subprocess.run([MEMTRACE, "stats", "--format", "json", "--chunks", "4", *paths],
                       capture_output=True, text=True, timeout=120)
    chunks = json.loads(p.stdout)["chunks"] if p.returncode == 0 else []
    check(len(chunks) == 4 and
          sum(c["sampled_objects"] for c in chunks) == both["sampled_objects"],
          "stats --chunks on several: the chunks split them all")
    # two rates: read at the lower, the other thinned to it (fewer sampled objects)
    mixed = stats(paths[0], other)
    check(0 < mixed["sampled_objects"] < each[0]["sampled_objects"] + stats(other)["sampled_objects"],
          "stats, two rates: the higher-rate trace thinned")


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
        check_timeline(paths)
        check_aligned(tmp)
        check_timeline_rates(tmp)
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
        check_mixed(paths[0], other)
        check_diff(tmp, paths, other)
        check_stats(paths, other)
        check_coverage(tmp)
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
