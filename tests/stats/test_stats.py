#!/usr/bin/env python3
"""Tests of `memtrace stats` and `memtrace timeline`.

    test_stats.py CASE MEMTRACE GEN WORKDIR TRACES_DIR

gen_stats_trace writes a trace and a truth file (every object of the
population, the events in trace order). The expected figures are computed
here from the truth, independently of the C code, following the estimators
`memtrace stats --help` documents:

  P(w)   = 1 - (1 - rate)^w, w = length + 1 (minor, major) or length (external)
  allocations = sum 1/P, variance sum (1-P)/P^2, 95% interval +-1.96 sd
  bytes  = samples / rate x 8
  moments: sampled unweighted (variance / n), estimated 1/P-weighted.

At rate 1 everything is exact; at rate 0.01 the true population figures
must lie within the printed intervals (most of them within the 95% ones, all
of them within intervals 1.7 times as wide).
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

CASE, MEMTRACE, GEN, WORK, TRACES = sys.argv[1:6]
SVG_NS = "{http://www.w3.org/2000/svg}"
Z = 1.959963984540054
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def check(cond, msg):
    if not cond:
        fail(msg)
    return cond


def close(got, want, what, rel=1e-9, abs_=1e-9):
    ok = got is not None and want is not None and math.isclose(got, want, rel_tol=rel, abs_tol=abs_)
    if got is None and want is None:
        ok = True
    return check(ok, "%s: got %r, want %r" % (what, got, want))


def run(args, status=0, env=None, stdin=None):
    e = dict(os.environ)
    e.pop("COLUMNS", None)
    if env:
        e.update(env)
    p = subprocess.run([MEMTRACE] + args, capture_output=True, env=e)
    if status is not None and p.returncode != status:
        fail("memtrace %s: exit %d (want %d): %s" % (" ".join(args), p.returncode, status,
                                                      p.stderr.decode(errors="replace")))
    return p


def gen(scenario, seed=None):
    trace = os.path.join(WORK, scenario + ".ctf")
    truth = os.path.join(WORK, scenario + ".json")
    args = [GEN, scenario, trace, truth] + ([str(seed)] if seed is not None else [])
    subprocess.run(args, check=True)
    with open(truth) as f:
        return trace, json.load(f)


# ---- the oracle --------------------------------------------------------------

class Obj:
    __slots__ = ("alloc", "free", "length", "source", "ns", "promote", "stack", "written",
                 "funcs")

    def __init__(self, row, stacks):
        (self.alloc, free, self.length, self.source, self.ns, promote, self.stack,
         self.written) = row
        self.free = None if free < 0 else free
        self.promote = None if promote < 0 else promote
        self.funcs = stacks[self.stack]

    def words(self):
        return self.length + (1 if self.source != 2 else 0)


def objects(truth):
    return [Obj(r, truth["stacks"]) for r in truth["objects"]]


def duration(truth):
    return max(e[0] for e in truth["events"]) if truth["events"] else 0


def weight(rate, w):
    if w == 0 or rate >= 1:
        return 1.0, 0.0
    p = -math.expm1(w * math.log1p(-rate))
    return 1.0 / p, (1.0 - p) / (p * p)


SIZE_MAX = [32, 256, 10000, None]


def size_bin(length):
    for b, m in enumerate(SIZE_MAX):
        if m is None or length <= m:
            return b


def life_bin(life):
    return len(str(life)) if life > 0 else 0


class Tally:
    def __init__(self):
        self.samples = 0
        self.objects = 0
        self.ht = 0.0
        self.var = 0.0
        self.wmax = 0.0

    def add(self, o, rate):
        w, v = weight(rate, o.words())
        self.samples += o.ns
        self.objects += 1
        self.ht += w
        self.var += v
        self.wmax = max(self.wmax, w)


def expect_group(objs, rate, D, lo, hi):
    """The figures of one group of sampled objects, as stats --json gives them."""
    g = {"all": Tally(), "size": [Tally() for _ in range(4)],
         "life": [Tally() for _ in range(1 + life_bin(D))], "never": Tally(),
         "src": [Tally() for _ in range(3)], "promoted": Tally()}
    xs, ws = [], []
    for o in objs:
        g["all"].add(o, rate)
        g["size"][size_bin(o.length)].add(o, rate)
        if o.free is None:
            g["never"].add(o, rate)
        else:
            g["life"][life_bin(o.free - o.alloc)].add(o, rate)
        g["src"][o.source].add(o, rate)
        if o.source == 0 and o.promote is not None:
            g["promoted"].add(o, rate)
        xs.append(o.length)
        ws.append(weight(rate, o.words())[0])
    n = len(xs)
    mean = sum(xs) / n if n else 0.0
    var = sum((x - mean) ** 2 for x in xs) / n if n else 0.0
    W = sum(ws)
    wmean = sum(w * x for w, x in zip(ws, xs)) / W if W else 0.0
    wvar = sum(w * (x - wmean) ** 2 for w, x in zip(ws, xs)) / W if W else 0.0
    g["sampled"] = {"count": n, "mean": mean, "variance": var, "stddev": math.sqrt(var),
                    "max": max(xs) if xs else 0}
    g["estimated"] = {"count": W, "mean": wmean, "variance": wvar, "stddev": math.sqrt(wvar),
                      "max": max(xs) if xs else 0}
    g["from"], g["to"] = lo, hi
    return g


def chi2_quantile(z, k):
    """Wilson-Hilferty, as the library computes it."""
    h = 2.0 / (9.0 * k)
    c = 1.0 - h + z * math.sqrt(h)
    return k * c ** 3 if c > 0 else 0.0


def objects_interval(t, rate):
    """Fay and Feuer's gamma interval on the Horvitz-Thompson count
    (docs/estimators.md)."""
    if t.objects == 0:
        return 0.0, (-math.log(0.025) / -math.expm1(math.log1p(-rate)) if rate < 1 else 0.0)
    y, v = t.ht, t.var
    if v <= 0:
        return y, y
    lo = max(t.objects, chi2_quantile(-Z, 2 * y * y / v) / 2 * v / y)
    yu, vu = y + t.wmax, v + t.wmax ** 2
    hi = max(y, chi2_quantile(Z, 2 * yu * yu / vu) / 2 * vu / yu)
    return lo, hi


def check_tally(got, t, rate, what, whole=None):
    check(got["sampled_objects"] == t.objects, "%s sampled_objects %r != %r"
          % (what, got["sampled_objects"], t.objects))
    check(got["samples"] == t.samples, "%s samples %r != %r" % (what, got["samples"], t.samples))
    close(got["objects"]["value"], t.ht, what + " objects")
    lo, hi = objects_interval(t, rate)
    close(got["objects"]["lo"], lo, what + " objects.lo", rel=1e-6)
    close(got["objects"]["hi"], hi, what + " objects.hi", rel=1e-6)
    close(got["bytes"]["value"], t.samples / rate * 8, what + " bytes")
    if rate >= 1:
        close(got["bytes"]["lo"], t.samples * 8, what + " bytes.lo (exact at rate 1)")
        close(got["bytes"]["hi"], t.samples * 8, what + " bytes.hi (exact at rate 1)")
    else:
        check(got["bytes"]["lo"] <= got["bytes"]["value"] <= got["bytes"]["hi"],
              what + " bytes interval holds its value")
    if whole is not None:
        close(got["objects_share"], t.ht / whole.ht if whole.ht else 0, what + " objects_share")
        close(got["bytes_share"], t.samples / whole.samples if whole.samples else 0,
              what + " bytes_share")


def check_group(got, g, rate, what):
    close(got["from_s"], g["from"] / 1e6, what + " from_s")
    close(got["to_s"], g["to"] / 1e6, what + " to_s")
    check_tally(got, g["all"], rate, what)
    sh = got["size_histogram"]
    check(len(sh) == 4, what + " 4 size bins")
    for b, (lo, hi) in enumerate([(0, 32), (33, 256), (257, 10000), (10001, None)]):
        check(sh[b]["min_words"] == lo and sh[b]["max_words"] == hi, "%s size bin %d bounds" % (what, b))
        check_tally(sh[b], g["size"][b], rate, "%s size bin %d" % (what, b), g["all"])
    big = Tally()
    for b in (2, 3):
        t = g["size"][b]
        big.samples += t.samples
        big.objects += t.objects
        big.ht += t.ht
        big.var += t.var
        big.wmax = max(big.wmax, t.wmax)
    check_tally(got["over_256_words"], big, rate, what + " over 256 words", g["all"])
    for k in ("sampled", "estimated"):
        for f in ("count", "mean", "variance", "stddev", "max"):
            close(got["size_words"][k][f], g[k][f], "%s size_words.%s.%s" % (what, k, f), rel=1e-7)
    lh = got["lifetime_histogram"]
    check(len(lh) == len(g["life"]), "%s lifetime bins: %d, want %d" % (what, len(lh), len(g["life"])))
    for k, t in enumerate(g["life"][:len(lh)]):
        want_from = 0 if k == 0 else 10 ** (k - 1)
        check(lh[k]["from_us"] == want_from and lh[k]["to_us"] == 10 ** k,
              "%s lifetime bin %d bounds" % (what, k))
        check_tally(lh[k], t, rate, "%s lifetime bin %d" % (what, k), g["all"])
    check_tally(got["never_collected"], g["never"], rate, what + " never collected", g["all"])
    for s, name in enumerate(["minor", "major", "external"]):
        check_tally(got["sources"][name], g["src"][s], rate, "%s source %s" % (what, name), g["all"])
    mi, pr = g["src"][0], g["promoted"]
    check_tally(got["promotion"], pr, rate, what + " promoted")
    close(got["promotion"]["rate"], pr.ht / mi.ht if mi.objects else None, what + " promotion rate")
    close(got["promotion"]["rate_bytes"], pr.samples / mi.samples if mi.objects else None,
          what + " promotion rate_bytes")
    close(got["promotion"]["rate_sampled"], pr.objects / mi.objects if mi.objects else None,
          what + " promotion rate_sampled")


def stats_json(trace, *args):
    p = run(["stats", "--json"] + list(args) + [trace])
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        fail("stats --json %s: not JSON: %s" % (" ".join(args), e))
        return None


def check_stats(trace, truth, args=(), keep=lambda o: True, lo=0, hi=None):
    rate = truth["rate"]
    D = duration(truth)
    objs = [o for o in objects(truth) if o.written and keep(o)]
    got = stats_json(trace, *args)
    if got is None:
        return None
    close(got["sample_rate"], rate, "sample_rate")
    close(got["duration_s"], D / 1e6, "duration_s")
    check(got["filters"] == list(args), "filters recorded: %r" % got["filters"])
    hi = D if hi is None else min(hi, D)
    check_group(got["all"], expect_group(objs, rate, D, lo, hi), rate, "all")
    return got


# ---- cases: stats -------------------------------------------------------------

def case_stats_exact():
    trace, truth = gen("exact")
    got = check_stats(trace, truth)
    if not got:
        return
    a = got["all"]
    # Worked out by hand from the nine objects of gen_stats_trace's exact scenario.
    check([b["sampled_objects"] for b in a["size_histogram"]] == [4, 2, 2, 1], "hand: size counts")
    check([b["bytes"]["value"] for b in a["size_histogram"]] == [8 * 42, 8 * 290, 8 * 10302, 8 * 20000],
          "hand: size bytes")
    close(a["over_256_words"]["objects_share"], 3 / 9, "hand: share over 256 words")
    close(a["size_words"]["sampled"]["mean"], 30627 / 9, "hand: mean size")
    check(a["size_words"]["sampled"]["max"] == 20000, "hand: max size")
    check([b["sampled_objects"] for b in a["lifetime_histogram"]] == [1, 1, 0, 1, 2, 0, 2, 0],
          "hand: lifetime decades %r" % [b["sampled_objects"] for b in a["lifetime_histogram"]])
    check(a["never_collected"]["sampled_objects"] == 2, "hand: never collected")
    close(a["promotion"]["rate"], 1 / 5, "hand: promotion rate")
    check(a["sources"]["external"]["bytes"]["value"] == 8 * 20033, "hand: external bytes")
    # The terminal report carries the same figures.
    out = run(["stats", trace]).stdout.decode()
    check("Promotion: 20.00% of minor allocations were promoted" in out, "terminal: promotion line")
    check(re.search(r"never collected .* 2 allocs", out) is not None, "terminal: never collected row")


def case_stats_native():
    """A native program's trace (every block external) in native words:
    sizes in bytes by powers of two, "never freed", no heaps, no promotion;
    its JSON keeps the same keys as an OCaml trace's."""
    trace, truth = gen("native")
    out = run(["stats", "--chunks", "2", trace]).stdout.decode()
    for word in ("minor", "major", "Promotion", "Over 256 words", "never collected", " w ",
                 "Sizes (words)", ">256w"):
        check(word not in out, "native terminal: %r in:\n%s" % (word, out))
    for row in (r"32 B-64 B .* 3 ", r"4 KiB-8 KiB .* 2 ", r"1 MiB-2 MiB .* 1 ",
                r"never freed .* 1 allocs", r"Sizes \(bytes\)", r"max +1048576 ",
                r"estimated sizes in bytes"):
        check(re.search(row, out) is not None, "native terminal: no %r in:\n%s" % (row, out))
    mean = (3 * 40 + 2 * 4096 + 1048576 + 8) / 7
    check(re.search(r"mean +%.2f " % mean, out) is not None, "native mean %.2f bytes:\n%s" % (mean, out))
    doc = stats_json(trace)
    ocaml = stats_json(gen("exact")[0])
    if doc and ocaml:
        check(sorted(doc["all"]) == sorted(ocaml["all"]), "native JSON keys: %r" % sorted(doc["all"]))
    out = run(["leaks", trace]).stdout.decode()
    check(out.startswith("Objects of %s never freed" % trace) and "filter: never freed" in out and
          "collected" not in out, "native leaks: %s" % out[:300])
    out = run(["top", "--collected", "0..0.5", trace]).stdout.decode()
    check("filter: freed in [0 s, 0.5 s)" in out, "native top's filter: %s" % out[:300])
    out = run(["info", trace]).stdout.decode()
    for word in ("minor", "major", "promotions", "collections", "collected", "sampled words"):
        check(word not in out, "native info: %r in:\n%s" % (word, out))
    check(re.search(r"allocations: +7 sampled \(\d+ samples, .* in the sampled blocks\)", out) is not None and
          re.search(r"frees: +6 \(1 sampled block never freed\)", out) is not None,
          "native info:\n%s" % out)
    # an OCaml trace keeps OCaml's words
    check(run(["leaks", gen("random")[0]]).stdout.decode().split("\n")[0].find("never collected") > 0,
          "OCaml leaks header")
    out = run(["info", gen("random")[0]]).stdout.decode()
    check(re.search(r"^minor +\d+", out, re.M) is not None and "promotions:" in out and
          "never collected" in out, "OCaml info:\n%s" % out)
    out = run(["stats", gen("random")[0]]).stdout.decode()
    for word in ("0-32 w", "Over 256 words", "never collected", "Promotion", "Sizes (words)"):
        check(word in out, "OCaml terminal: no %r" % word)


def case_stats_random():
    trace, truth = gen("random", 7)
    check_stats(trace, truth)


def case_stats_sampled():
    trace, truth = gen("sampled", 3)
    got = check_stats(trace, truth)  # the estimators' arithmetic, on the sampled objects
    if not got:
        return
    # Then the estimates against the truth: the whole population.
    rate = truth["rate"]
    pop = objects(truth)
    D = duration(truth)
    a = got["all"]
    checks = []

    def truth_in(est, true, what):
        v, lo, hi = est["value"], est["lo"], est["hi"]
        wide = (v - 1.7 * (v - lo), v + 1.7 * (hi - v))
        checks.append(lo <= true <= hi)
        check(wide[0] <= true <= wide[1], "%s: truth %g outside %r (95%%: [%g, %g])"
              % (what, true, wide, lo, hi))

    def pop_tally(sel):
        objs = [o for o in pop if sel(o)]
        return len(objs), sum(o.words() for o in objs) * 8

    n, b = pop_tally(lambda o: True)
    truth_in(a["objects"], n, "allocations")
    truth_in(a["bytes"], b, "bytes")
    for k, bin_ in enumerate(a["size_histogram"]):
        n, b = pop_tally(lambda o, k=k: size_bin(o.length) == k)
        truth_in(bin_["objects"], n, "size bin %d allocations" % k)
        truth_in(bin_["bytes"], b, "size bin %d bytes" % k)
    for s, name in enumerate(["minor", "major", "external"]):
        n, b = pop_tally(lambda o, s=s: o.source == s)
        truth_in(a["sources"][name]["objects"], n, name + " allocations")
        truth_in(a["sources"][name]["bytes"], b, name + " bytes")
    n, b = pop_tally(lambda o: o.free is None)
    truth_in(a["never_collected"]["bytes"], b, "never collected bytes")
    for k, bin_ in enumerate(a["lifetime_histogram"]):
        n, b = pop_tally(lambda o, k=k: o.free is not None and life_bin(o.free - o.alloc) == k)
        if b > 1e6:  # decades with enough in them to be estimated at all
            truth_in(bin_["bytes"], b, "lifetime bin %d bytes" % k)
    covered = sum(checks) / len(checks)
    check(covered >= 0.8, "95%% intervals hold the truth in %.0f%% of %d cases"
          % (100 * covered, len(checks)))
    # Population moments: ratio estimates, within a few percent of the truth.
    xs = [o.length for o in pop]
    mean = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs))
    est = a["size_words"]["estimated"]
    close(est["mean"], mean, "estimated mean size vs the population's", rel=0.05)
    close(est["stddev"], sd, "estimated size std dev vs the population's", rel=0.1)
    close(est["count"], len(xs), "estimated count vs the population's", rel=0.05)
    # The sampled mean is biased towards big blocks: the weights matter.
    check(a["size_words"]["sampled"]["mean"] > 2 * mean, "sampled mean is size-biased")
    mi = [o for o in pop if o.source == 0]
    close(a["promotion"]["rate"], sum(o.promote is not None for o in mi) / len(mi),
          "promotion rate vs the population's", rel=0.15)
    print("sampled: %d of %d allocations written; %d interval checks, %.0f%% in the 95%% ones"
          % (sum(o.written for o in pop), len(pop), len(checks), 100 * covered))


def case_stats_chunks():
    for scen, n in (("exact", 4), ("random", 7), ("random", 1)):
        trace, truth = gen(scen, 11)
        rate, D = truth["rate"], duration(truth)
        got = stats_json(trace, "--chunks", str(n))
        if not got:
            continue
        if n == 1:
            check("chunks" not in got, "--chunks 1: the whole trace only")
            continue
        check(len(got.get("chunks", [])) == n, "%d chunks" % n)
        objs = [o for o in objects(truth) if o.written]
        for k, c in enumerate(got.get("chunks", [])):
            lo, hi = -(-k * D // n), -(-(k + 1) * D // n)  # ceil(k D / n)
            sel = [o for o in objs if min(n - 1, o.alloc * n // D) == k]
            check_group(c, expect_group(sel, rate, D, lo, hi), rate, "%s chunk %d" % (scen, k))
        total = sum(c["sampled_objects"] for c in got["chunks"])
        check(total == got["all"]["sampled_objects"], "chunks add up to the whole")
    # Chunks of a --time span split that span.
    trace, truth = gen("random", 11)
    D = duration(truth)
    got = stats_json(trace, "--time", "0.2..0.6", "--chunks", "4")
    if got:
        close(got["chunks"][0]["from_s"], 0.2, "--time chunks start at FROM")
        close(got["chunks"][3]["to_s"], min(0.6, D / 1e6), "--time chunks end at TO")
    out = run(["stats", "--chunks", "3", trace]).stdout.decode()
    check("By allocation time, 3 chunks" in out, "terminal: chunk table")


def case_stats_filters():
    trace, truth = gen("random", 5)
    D = duration(truth)
    cases = [
        (["--source", "minor,external"], lambda o: o.source in (0, 2)),
        (["--inside", "List"], lambda o: any("List" in f for f in o.funcs)),
        (["--not-inside", "Buffer"], lambda o: not any("Buffer" in f for f in o.funcs)),
        (["--live-at-end"], lambda o: o.free is None),
        (["--size", "256..2k"], lambda o: 256 <= o.length * 8 <= 2048),
        (["--lifetime", "0.001..0.1"],
         lambda o: 1000 <= ((o.free if o.free is not None else D) - o.alloc) <= 100000),
        (["--inside", "Hashtbl", "--source", "minor"],
         lambda o: o.source == 0 and any("Hashtbl" in f for f in o.funcs)),
    ]
    for args, keep in cases:
        check_stats(trace, truth, args, keep)
    check_stats(trace, truth, ["--time", "0.1..0.5"], lambda o: 100000 <= o.alloc < 500000,
                lo=100000, hi=500000)
    # A filter nothing passes: zeros, no division by zero, still JSON.
    got = stats_json(trace, "--inside", "no such function")
    if got:
        check(got["all"]["sampled_objects"] == 0, "empty filter: no objects")
        check(got["all"]["promotion"]["rate"] is None, "empty filter: no promotion rate")
    run(["stats", "--inside", "no such function", trace])


def svg_root(path, title):
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as e:
        fail("%s: not well-formed XML: %s" % (path, e))
        return None
    check(root.tag == SVG_NS + "svg", "%s: root is <svg>" % path)
    t = root.find(SVG_NS + "title")
    check(t is not None and t.text == title, "%s: <title> %r, want %r"
          % (path, t.text if t is not None else None, title))
    texts = ["".join(e.itertext()) for e in root.iter(SVG_NS + "text")]
    check(title in texts, "%s: the title is drawn" % path)
    check(root.find(SVG_NS + "g[@class='yaxis']") is not None, "%s: a y axis" % path)
    return root


def bars(root):
    return [r for r in root.iter(SVG_NS + "rect") if r.get("class") == "bar"]


def case_stats_svg():
    trace, truth = gen("random", 9)
    d = os.path.join(WORK, "svg")
    run(["stats", "--svg", d, "--chunks", "5", trace])
    expect = {"sizes-count.svg": ("Allocation sizes by estimated count", 4, "size (words)"),
              "sizes-bytes.svg": ("Allocation sizes by estimated bytes", 4, "size (words)"),
              "lifetimes.svg": ("Lifetimes by estimated bytes", 1 + life_bin(duration(truth)) + 1,
                                "lifetime (collection - allocation)"),
              "sources.svg": ("Sources by estimated bytes", 3, "source"),
              "chunks.svg": ("Estimated bytes allocated by allocation time", 5, "allocation time")}
    check(sorted(os.listdir(d)) == sorted(expect), "svg files: %r" % sorted(os.listdir(d)))
    for name, (title, nbars, xlabel) in expect.items():
        root = svg_root(os.path.join(d, name), title)
        if root is None:
            continue
        check(len(bars(root)) == nbars, "%s: %d bars, want %d" % (name, len(bars(root)), nbars))
        texts = ["".join(e.itertext()) for e in root.iter(SVG_NS + "text")]
        check(xlabel in texts, "%s: x axis label %r" % (name, xlabel))
        for r in bars(root):
            check(float(r.get("height")) >= 0 and float(r.get("width")) > 0, name + ": bar size")
    root = svg_root(os.path.join(d, "sizes-count.svg"), "Allocation sizes by estimated count")
    if root is not None:
        labels = [r.find(SVG_NS + "title").text.split(":")[0] for r in bars(root)]
        check(labels == ["0-32", "33-256", "257-10000", ">10000"], "size bar labels %r" % labels)
    lt = svg_root(os.path.join(d, "lifetimes.svg"), "Lifetimes by estimated bytes")
    if lt is not None:
        last = bars(lt)[-1].find(SVG_NS + "title").text
        check(last.startswith("never collected"), "lifetimes: never collected apart, last")
    # Unwritable destination: exit 1, naming it.
    p = run(["stats", "--svg", "/nonexistent/dir/sub", trace], status=1)
    check(b"/nonexistent/dir/sub" in p.stderr, "--svg error names the directory")


# ---- cases: timeline ------------------------------------------------------------

def live_step(truth):
    """(time, live samples after each event) in trace order."""
    objs = objects(truth)
    live, out = 0, []
    for t, kind, i in truth["events"]:
        if kind == 0:
            live += objs[i].ns
        elif kind == 2:
            live -= objs[i].ns
        out.append((t, live))
    return out


def peak(truth):
    best_t, best = 0, 0
    for t, v in live_step(truth):
        if v > best:
            best_t, best = t, v
    return best_t, best


def series(truth, nbins, keep=lambda o: True):
    """Live samples at each bin end, with the library's own arithmetic
    (mt_analysis_live_series: bins of width D / n; alive at end e iff
    allocated at or before e and not collected by e)."""
    D = duration(truth) or 1
    width = D / nbins
    diff = [0.0] * (nbins + 1)
    for o in objects(truth):
        if not o.written or not keep(o):
            continue
        s = o.alloc / width
        j0 = 0 if s <= 1 else math.ceil(s) - 1
        if j0 >= nbins:
            continue
        j1 = nbins
        if o.free is not None:
            e = o.free / width
            j1 = min(nbins, 0 if e <= 1 else math.ceil(e) - 1)
        if j1 <= j0:
            continue
        diff[j0] += o.ns
        diff[j1] -= o.ns
    out, run_ = [], 0.0
    for j in range(nbins):
        run_ += diff[j]
        out.append(run_)
    return out


def timeline_csv(trace, *args):
    p = run(["timeline", "--csv"] + list(args) + [trace])
    lines = p.stdout.decode().splitlines()
    if not lines:
        fail("timeline --csv: no output")
        return [], []
    head = lines[0].split(",")
    rows = [[float(x) for x in ln.split(",")] for ln in lines[1:]]
    return head, rows


def check_timeline(trace, truth, nbins, args=(), keep=None):
    rate = truth["rate"]
    scale = 8 / rate
    D = duration(truth) or 1
    head, rows = timeline_csv(trace, "--bins", str(nbins), *args)
    want_head = ["time_s", "live_bytes", "min_bytes", "max_bytes"] + (["filtered_bytes"] if keep else [])
    check(head == want_head, "csv header %r" % head)
    check(len(rows) == nbins, "csv rows: %d, want %d" % (len(rows), nbins))
    full = series(truth, nbins)
    filt = series(truth, nbins, keep) if keep else None
    steps = live_step(truth)
    pt, pv = peak(truth)
    width = D / nbins
    prev_end = None
    for j, r in enumerate(rows[:nbins]):
        close(r[0], (j + 1) * width / 1e6, "bin %d time_s" % j, abs_=1e-6)
        close(r[1], full[j] * scale, "bin %d live_bytes" % j)
        check(r[2] <= r[1] <= r[3], "bin %d: min <= live <= max" % j)
        if filt:
            close(r[4], filt[j] * scale, "bin %d filtered_bytes" % j)
            check(r[4] <= r[1] + 1e-9, "bin %d: filtered within the whole" % j)
        # min and max bound the live heap over the bin: every value it took
        # after an event in (start, end], and the value it entered with.
        lo_t, hi_t = j * width, (j + 1) * width
        inside = [v for t, v in steps if (lo_t < t or (j == 0 and t == 0)) and t <= hi_t]
        if prev_end is not None:
            inside.append(prev_end)
        if inside:
            check(r[2] <= min(inside) * scale + 1e-9, "bin %d: min_bytes %g above the least %g"
                  % (j, r[2], min(inside) * scale))
            check(r[3] >= max(inside) * scale - 1e-9, "bin %d: max_bytes %g below the most %g"
                  % (j, r[3], max(inside) * scale))
        prev_end = full[j]
    if rows:
        close(max(r[3] for r in rows), pv * scale, "the most of max_bytes is the peak")
    return rows, (pt, pv)


def case_timeline_exact():
    trace, truth = gen("exact")
    rows, (pt, pv) = check_timeline(trace, truth, 100)
    # By hand: the peak is 20334 samples (objects 0-3 minus 0's 3) at 200 us.
    check((pt, pv) == (200, 20334), "hand: oracle peak %r" % ((pt, pv),))
    if len(rows) == 100:
        want = {0: 10302, 19: 10302, 20: 301, 29: 305, 38: 305, 39: 301, 99: 303}
        for j, v in want.items():
            close(rows[j][1], v * 8, "hand: live bytes at the end of bin %d" % j)
    out = run(["timeline", "--bins", "100", trace]).stdout.decode()
    check("peak 159 KiB at 0.000200 s (exact)" in out, "terminal: exact peak line")
    check("\u25b2 peak 159 KiB at 0.000 s" in out, "terminal: peak marker")
    check_timeline(trace, truth, 1000)
    check_timeline(trace, truth, 7)
    check_timeline(trace, truth, 1)


def case_timeline_random():
    trace, truth = gen("random", 13)
    for n in (1, 50, 333, 2000):
        check_timeline(trace, truth, n)


def case_timeline_sampled():
    trace, truth = gen("sampled", 17)
    rows, _ = check_timeline(trace, truth, 40)
    # Against the population: the estimate follows the true live heap.
    D = duration(truth)
    pop = objects(truth)
    for j in (9, 19, 29, 39):
        e = (j + 1) * D / 40
        true = sum(o.words() for o in pop if o.alloc <= e and (o.free is None or o.free > e)) * 8
        close(rows[j][1], true, "bin %d: estimated live bytes vs the true ones" % j, rel=0.15)


def case_timeline_filters():
    trace, truth = gen("random", 19)
    check_timeline(trace, truth, 64, ["--inside", "Bytes"], lambda o: any("Bytes" in f for f in o.funcs))
    check_timeline(trace, truth, 64, ["--source", "major"], lambda o: o.source == 1)
    check_timeline(trace, truth, 64, ["--live-at-end"], lambda o: o.free is None)
    out = run(["timeline", "--source", "major", trace], env={"COLUMNS": "100"}).stdout.decode()
    check("filtered: most" in out and "filtered (at bin ends)" in out, "terminal: filtered line and legend")


def case_timeline_svg():
    trace, truth = gen("random", 23)
    for args, nlines in (([], 1), (["--inside", "List"], 2)):
        f = os.path.join(WORK, "tl%d.svg" % nlines)
        run(["timeline", "--svg", f, "--bins", "200"] + args + [trace])
        root = svg_root(f, "Live heap over time")
        if root is None:
            continue
        lines = list(root.iter(SVG_NS + "polyline"))
        check(len(lines) == nlines, "%d lines, want %d" % (len(lines), nlines))
        for pl in lines:
            pts = pl.get("points").split()
            check(len(pts) == 200, "200 points, got %d" % len(pts))
        check(len(list(root.iter(SVG_NS + "polygon"))) == 1, "one envelope band")
        check(root.find(SVG_NS + "g[@class='xaxis']") is not None, "an x axis")
        marker = root.find(SVG_NS + "g[@class='marker']")
        check(marker is not None and marker.find(SVG_NS + "circle") is not None, "the peak marked")
        label = "".join(marker.find(SVG_NS + "text").itertext()) if marker is not None else ""
        check(label.startswith("peak "), "peak label %r" % label)
        texts = ["".join(e.itertext()) for e in root.iter(SVG_NS + "text")]
        check("estimated live bytes" in texts and "time since the trace start" in texts, "axis titles")
        if nlines == 2:
            check('filtered (inside "List")' in texts, "legend names the filter")
    p = run(["timeline", "--svg", "/nonexistent/x.svg", trace], status=1)
    check(b"/nonexistent/x.svg" in p.stderr, "--svg error names the file")


# ---- cases: edges, rendering, determinism, golden traces, errors -------------

def case_edges():
    # No events at all, and everything at one instant (duration 0).
    trace, truth = gen("empty")
    got = check_stats(trace, truth)
    if got:
        check(got["all"]["sampled_objects"] == 0, "empty: no objects")
    out = run(["timeline", trace]).stdout.decode()
    check("nothing to draw" in out, "empty: timeline says there is nothing to draw")
    check_timeline(trace, truth, 5)
    run(["stats", "--chunks", "3", "--svg", os.path.join(WORK, "empty-svg"), trace])
    run(["timeline", "--svg", os.path.join(WORK, "empty.svg"), trace])
    svg_root(os.path.join(WORK, "empty.svg"), "Live heap over time")
    trace, truth = gen("instant")
    got = check_stats(trace, truth)
    if got:
        check(len(got["all"]["lifetime_histogram"]) == 1, "instant: one lifetime bin (<1 us)")
    got = stats_json(trace, "--chunks", "4")
    if got:
        check([c["sampled_objects"] for c in got["chunks"]] == [3, 0, 0, 0],
              "instant: everything in the first chunk")
    _, (pt, pv) = check_timeline(trace, truth, 3)
    check((pt, pv) == (0, 508), "instant: peak %r" % ((pt, pv),))
    run(["timeline", trace])
    run(["stats", "--svg", os.path.join(WORK, "instant-svg"), trace])



def case_render_width():
    trace, truth = gen("random", 29)
    for cols in (60, 80, 132):
        for args in (["stats", "--chunks", "4"], ["stats", "--ascii"], ["timeline"],
                     ["timeline", "--inside", "List", "--ascii"]):
            out = run(args + [trace], env={"COLUMNS": str(cols)}).stdout.decode()
            long_ = [ln for ln in out.splitlines()[1:] if len(ln) > cols]
            check(not long_, "COLUMNS=%d %s: %d lines wider, e.g. %r"
                  % (cols, " ".join(args), len(long_), long_[:1]))
            if "--ascii" in args:
                check(all(ord(ch) < 128 for ch in out), "--ascii output is ASCII")
    # timeline's default bins fill the width.
    out = run(["timeline", trace], env={"COLUMNS": "100"}).stdout.decode()
    check("  88 bins of" in out, "timeline: one bin per column")


def case_determinism():
    trace, truth = gen("random", 31)
    d1, d2 = os.path.join(WORK, "d1"), os.path.join(WORK, "d2")
    for args in (["stats", "--chunks", "3"], ["stats", "--json", "--chunks", "3"], ["timeline"],
                 ["timeline", "--csv", "--inside", "List"]):
        a, b = run(args + [trace]).stdout, run(args + [trace]).stdout
        check(a == b, "%s: same output twice" % " ".join(args))
    run(["stats", "--svg", d1, trace])
    run(["stats", "--svg", d2, trace])
    for f in os.listdir(d1):
        with open(os.path.join(d1, f), "rb") as x, open(os.path.join(d2, f), "rb") as y:
            check(x.read() == y.read(), f + ": same SVG twice")


def case_golden():
    names = sorted(f for f in os.listdir(TRACES) if f.endswith(".ctf"))
    check(names, "reference traces found in " + TRACES)
    for n in names:
        t = os.path.join(TRACES, n)
        for args in (["stats"], ["stats", "--chunks", "5", "--svg", os.path.join(WORK, n)],
                     ["stats", "--live-at-peak"], ["stats", "--source", "major", "--ascii"],
                     ["timeline"], ["timeline", "--csv", "--bins", "50"],
                     ["timeline", "--live-at-end", "--svg", os.path.join(WORK, n + ".svg")]):
            run(args + [t])
        got = stats_json(t, "--chunks", "3")
        if got:
            a = got["all"]
            check(a["sampled_objects"] == sum(b["sampled_objects"] for b in a["size_histogram"]),
                  n + ": size bins add up")
            check(a["sampled_objects"] == sum(c["sampled_objects"] for c in got["chunks"]),
                  n + ": chunks add up")
            check(a["sampled_objects"] == sum(b["sampled_objects"] for b in a["lifetime_histogram"])
                  + a["never_collected"]["sampled_objects"], n + ": lifetimes add up")


def case_errors():
    t = os.path.join(TRACES, "ocamlopt.ctf")
    for cmd in ("stats", "timeline"):
        several = []  # both take several traces
        for args, pattern in ([([], "missing TRACE"), (["--bogus", t], "unknown option '--bogus'"),
                               (["--size", "9..1", t], "--size"), (["--svg"], "--svg needs")] +
                              several):
            p = run([cmd] + args, status=2)
            check(pattern.encode() in p.stderr, "%s %s: stderr %r" % (cmd, args, p.stderr))
        p = run([cmd, "--help"])
        check(p.stdout.startswith(b"usage: memtrace " + cmd.encode()), cmd + " --help")
        p = run(["help", cmd])
        check(b"Filters" in p.stdout, "help %s lists the filters" % cmd)
        p = run([cmd, "/nonexistent/trace.ctf"], status=1)
        check(b"/nonexistent/trace.ctf" in p.stderr, cmd + ": missing file named")
        bad = os.path.join(WORK, "text.ctf")
        with open(bad, "w") as f:
            f.write("not a trace\n")
        p = run([cmd, bad], status=1)
        check(b"text.ctf" in p.stderr, cmd + ": bad file named")
        cut = os.path.join(WORK, "cut.ctf")
        with open(t, "rb") as f, open(cut, "wb") as g:
            g.write(f.read()[:50000])
        p = run([cmd, cut], status=0)
        check(b"warning" in p.stderr, cmd + ": truncated trace warns")
    for args, pattern in ((["--chunks", "0", t], "--chunks wants"), (["--chunks", "x", t], "--chunks wants"),
                          ([t, "--chunks"], "--chunks needs")):
        p = run(["stats"] + args, status=2)
        check(pattern.encode() in p.stderr, "stats %s: %r" % (args, p.stderr))
    for args in (["--bins", "0", t], ["--bins", "-3", t], ["--bins", "1x", t], ["--height", "0", t]):
        p = run(["timeline"] + args, status=2)
        check(b"wants a number" in p.stderr, "timeline %s: %r" % (args, p.stderr))
    p = run(["timeline", t, "--bins"], status=2)
    check(b"--bins needs a value" in p.stderr, "timeline --bins without a value: %r" % p.stderr)
    p = run(["stats", "--json", t], env={"COLUMNS": "abc"})
    check(p.returncode == 0, "a bad $COLUMNS is ignored")


CASES = {
    "stats.exact": case_stats_exact, "stats.random": case_stats_random,
    "stats.native": case_stats_native,
    "stats.sampled": case_stats_sampled, "stats.chunks": case_stats_chunks,
    "stats.filters": case_stats_filters, "stats.svg": case_stats_svg,
    "timeline.exact": case_timeline_exact, "timeline.random": case_timeline_random,
    "timeline.sampled": case_timeline_sampled, "timeline.filters": case_timeline_filters,
    "timeline.svg": case_timeline_svg, "edges": case_edges, "render.width": case_render_width,
    "determinism": case_determinism, "golden": case_golden, "errors": case_errors,
}

if __name__ == "__main__":
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    CASES[CASE]()
    if failures:
        print("%s: %d failures" % (CASE, len(failures)), file=sys.stderr)
        sys.exit(1)
    print("%s: ok" % CASE)
