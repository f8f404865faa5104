#!/usr/bin/env python3
"""memtrace check and memtrace run --check-*: the CI gate's exit codes on
both sides of each limit, on synthetic traces whose figures are known
(mt_tools_synth: at rate 1 every figure is exact), the "at risk" band of a
sampled trace, growth against a base trace, several traces checked as one,
and run's precedence rules.

usage: check_test.py MEMTRACE MT_TOOLS_SYNTH DEMO_APP TEST
"""
import json
import os
import re
import subprocess
import sys
import tempfile

MEMTRACE, SYNTH, DEMO_APP, TEST = sys.argv[1:5]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)


def run(*args):
    p = subprocess.run([MEMTRACE, *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


def synth(tmp, name, *opts):
    trace, truth = os.path.join(tmp, name + ".ctf"), os.path.join(tmp, name + ".json")
    subprocess.run([SYNTH, trace, truth, "--seed", "5", *opts], check=True)
    with open(truth) as f:
        return trace, json.load(f)


def truth_figures(truth):
    """Bytes allocated, never freed, and the live heap's peak, of the
    sampled objects at rate 1 (samples x 8)."""
    objs = [o for o in truth["objects"] if o[3] > 0]
    allocated = 8 * sum(o[3] for o in objs)
    leaked = 8 * sum(o[3] for o in objs if o[6] < 0)
    events = sorted([(o[5], 8 * o[3]) for o in objs] + [(o[6], -8 * o[3]) for o in objs if o[6] >= 0])
    live = peak = 0
    for _, d in events:
        live += d
        peak = max(peak, live)
    return allocated, leaked, peak


def verdict(out, what):
    m = re.search(r"^  %s .*: (ok|BROKEN|at risk)$" % what, out, re.M)
    return m.group(1) if m else None


def test_exact(tmp):
    trace, truth = synth(tmp, "exact", "--rate", "1")
    allocated, leaked, peak = truth_figures(truth)
    for opt, figure, what in (("--max-allocated", allocated, "allocated"),
                              ("--max-leaked", leaked, "leaked"), ("--max-peak", peak, "peak")):
        rc, out = run("check", opt, str(figure), trace)
        check(rc == 0 and verdict(out, what) == "ok", "%s at the exact figure %d: %d %s" % (opt, figure, rc, out))
        rc, out = run("check", opt, str(figure - 1), trace)
        check(rc == 1 and verdict(out, what) == "BROKEN",
              "%s one byte under %d: %d %s" % (opt, figure, rc, out))
        check(re.search(r"^      +[0-9.]+ [KMG]?i?B ", out, re.M) is not None,
              "%s broken: the sites that break it: %s" % (opt, out))
    # several limits: broken when any is, each said
    rc, out = run("check", "--max-allocated", str(allocated), "--max-leaked", str(leaked - 1),
                  "--max-peak", "1T", trace)
    check(rc == 1 and "1 limit broken" in out, "one of three broken: %s" % out)
    # a filter applies to every limit
    rc, out = run("check", "--max-allocated", str(allocated - 1), "--source", "minor", trace)
    check(rc == 0, "filtered below the limit: %s" % out)


def test_sampled(tmp):
    trace, _ = synth(tmp, "sampled", "--rate", "1e-2", "--scale", "4")
    doc = json.loads(subprocess.run([MEMTRACE, "top", "--format", "json", trace], capture_output=True,
                                    text=True, check=True).stdout)
    est = doc["total"]["bytes"]
    value, lo, hi = est["value"], est["lo"], est["hi"]
    check(lo < value < hi, "a sampled estimate has an interval: %r" % est)
    between = int((lo + value) / 2)
    rc, out = run("check", "--max-allocated", str(between), trace)
    check(rc == 0 and verdict(out, "allocated") == "at risk" and "0 limits broken, 1 at risk" in out,
          "limit between lo and the estimate: at risk, exit 0: %d %s" % (rc, out))
    rc, out = run("check", "--strict", "--max-allocated", str(between), trace)
    check(rc == 1 and verdict(out, "allocated") == "BROKEN", "--strict: broken: %d %s" % (rc, out))
    rc, out = run("check", "--max-allocated", str(int(lo) - 1), trace)
    check(rc == 1 and verdict(out, "allocated") == "BROKEN", "under lo: broken: %d %s" % (rc, out))
    rc, out = run("check", "--max-allocated", str(int(hi) + 1), trace)
    check(rc == 0 and verdict(out, "allocated") == "ok", "over hi: ok: %d %s" % (rc, out))


def test_growth(tmp):
    base, _ = synth(tmp, "base", "--rate", "1")
    new, _ = synth(tmp, "new", "--rate", "1", "--double", "0")
    rc, out = run("check", "--base", base, "--max-growth", "0", base)
    check(rc == 0 and verdict(out, "growth") == "ok", "no growth against itself: %d %s" % (rc, out))
    rc, out = run("check", "--base", base, "--max-growth", "1%", new)
    m = re.search(r"growth +\+([0-9.]+)%", out)
    check(rc == 1 and verdict(out, "growth") == "BROKEN" and m, "a doubled site over 1%%: %d %s" % (rc, out))
    if m:
        pct = float(m.group(1))
        rc, out = run("check", "--base", base, "--max-growth", str(pct + 0.1), new)
        check(rc == 0, "growth under its limit: %d %s" % (rc, out))
        check(re.search(r"^      \+", run("check", "--base", base, "--max-growth", "0", new)[1], re.M),
              "the sites that grew are listed")


def test_several(tmp):
    """A process tree checked as one: its figures are the sums; a base of
    several traces (a directory, or --base repeated) is read as one too."""
    one, t1 = synth(tmp, "one", "--rate", "1")
    two, t2 = synth(tmp, "two", "--rate", "1", "--double", "1")
    a1, a2 = truth_figures(t1)[0], truth_figures(t2)[0]
    both = a1 + a2
    rc, out = run("check", "--max-allocated", str(both), one, two)
    check(rc == 0 and verdict(out, "allocated") == "ok", "two traces at their sum: %d %s" % (rc, out))
    rc, out = run("check", "--max-allocated", str(both - 1), one, two)
    check(rc == 1 and verdict(out, "allocated") == "BROKEN",
          "two traces one byte under their sum: %d %s" % (rc, out))
    rc, out = run("check", "--max-allocated", str(max(a1, a2)), one)
    check(rc == 0, "one of them alone is within: %d %s" % (rc, out))
    base = os.path.join(tmp, "base-dir")
    os.mkdir(base)
    for p in (one, two):
        os.link(p, os.path.join(base, os.path.basename(p)))
    for opts in (["--base", base], ["--base", one, "--base", two]):
        rc, out = run("check", *opts, "--max-growth", "0", one, two)
        m = re.search(r"growth +([-+][0-9.]+)%", out)
        check(rc == 0 and m and float(m.group(1)) == 0,
              "%s: the same traces, no growth: %d %s" % (opts, rc, out))
        rc, out = run("check", *opts, "--max-growth", "0", one)
        m = re.search(r"growth +([-+][0-9.]+)%", out)
        want = 100 * (a1 - both) / both
        check(rc == 0 and m and abs(float(m.group(1)) - want) < 0.1,
              "%s: one trace against both: %s%% want %.1f%%: %s" % (opts, m and m.group(1), want, out))


def test_usage(tmp):
    trace, _ = synth(tmp, "u", "--rate", "1")
    for args, words in ((["check", trace], "no limit given"),
                        (["check", "--max-peak", "12x", trace], "--max-peak: '12x' is not a size"),
                        (["check", "--max-growth", "5", trace], "--base and --max-growth go together"),
                        (["check", "--base", trace, "--max-growth", "much", trace], "not a percentage"),
                        (["run", "-q", "--check-leaked", "1k", "--", "true"], "not with -q"),
                        (["run", "--check-peak", "1k", "-o", "tcp:127.0.0.1:9", "--", "true"],
                         "not with a tcp:")):
        rc, out = run(*args)
        check(rc == 2 and words in out, "%s: exit %d, want 2 and %r: %s" % (args, rc, words, out))
    rc, out = run("check", "--base", "/nonexistent.ctf", "--max-growth", "5", trace)
    check(rc == 1 and "/nonexistent.ctf" in out, "a missing base: %d %s" % (rc, out))


def test_run(tmp):
    os.chdir(tmp)
    rc, out = run("run", "--rate", "1e-3", "--check-leaked", "1k", "--", DEMO_APP)
    check(rc == 1 and verdict(out, "leaked") == "BROKEN" and "trace written to" in out,
          "run: a broken limit exits 1 after the report: %d %s" % (rc, out[-600:]))
    rc, out = run("run", "--rate", "1e-3", "--check-allocated", "100G", "--", DEMO_APP)
    check(rc == 0 and verdict(out, "allocated") == "ok", "run: a met limit: %d %s" % (rc, out[-400:]))
    # --check-base: a trace, or a directory of traces read as one
    base = os.path.join(tmp, "run-base")
    os.mkdir(base)
    rc, out = run("run", "--rate", "1e-3", "-o", os.path.join(base, "b.%p.ctf"), "--", DEMO_APP)
    check(rc == 0 and len(os.listdir(base)) >= 1, "run: a base trace in a directory: %d %s" % (rc, out[-300:]))
    rc, out = run("run", "--rate", "1e-3", "--check-base", base, "--check-growth", "1000", "--", DEMO_APP)
    check(rc == 0 and verdict(out, "growth") == "ok", "run: --check-base a directory: %d %s" % (rc, out[-400:]))
    # the program's own failure comes first, and the limits are not checked
    rc, out = run("run", "--rate", "1", "--check-allocated", "1", "--", "sh", "-c", "exit 3")
    check(rc == 3 and "memtrace check" not in out, "run: the program's status first: %d %s" % (rc, out))


TESTS = {"exact": test_exact, "sampled": test_sampled, "growth": test_growth, "usage": test_usage,
         "run": test_run, "several": test_several}

with tempfile.TemporaryDirectory(prefix="mt_check_") as tmp:
    TESTS[TEST](tmp)
print("%s: %d failures" % (TEST, len(failures)))
sys.exit(1 if failures else 0)
