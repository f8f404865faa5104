#!/usr/bin/env python3
"""The command line's JSON against the viewer's API (docs/json.md): for one
trace and one filter, `memtrace top|leaks|stats|timeline --format json` and
the matching endpoint of `memtrace view` give the same document.

usage: cli_vs_api.py MEMTRACE MT_TOOLS_SYNTH TRACES_DIR TRACE

TRACE is `workload` (TRACES_DIR/workload-1e-4.ctf; 77 when it is missing)
or `synth` (a synthetic trace of mt_tools_synth at rate 1e-2). A table of
filters, each spelled as the command line's options and as the API's query
parameters, is crossed with the answers:

    memtrace top --by line -n 0            /api/sites?by=line&n=10000
    memtrace top --by function -n 0        /api/sites?by=function&n=10000
    memtrace top --by stack -n 0 --depth 0 /api/paths?n=10000
    memtrace leaks -n 0 --depth 0          /api/leaks?n=10000
    memtrace stats [--chunks 4]            /api/stats[?chunks=4]
    memtrace timeline --bins 64            /api/timeline?bins=64

Every member of the API's document must be in the command line's, equal
(numbers exactly); the command line's own members ("command", "trace",
"sample_rate" where the API has none, "filters") are left out. Each filter
must select some of the trace's objects (and, but for `hide`, not all of
them), so that a parameter the API ignored or read differently shows.
`memtrace leaks` and /api/leaks refuse a collection window (--collected
FROM..TO, collected=FROM..TO: leaks are the objects never collected); that
pair is checked for the refusal.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

import viewer_server
from viewer_server import check, failures

MEMTRACE, SYNTH, TRACES, WHICH = sys.argv[1:5]
CLI_ONLY = ("command", "trace", "sample_rate", "filters")
ALL = 10000  # the API's largest n: every row of these traces


class Server(viewer_server.Server):
    def __init__(self, trace):
        super().__init__(MEMTRACE, trace)

    def json(self, path, params, status=200):
        """The answer at path?params; exits unless its status is `status`."""
        q = urllib.parse.urlencode(params)
        got, _, body = self.get(path + ("?" + q if q else ""), timeout=120)
        if got != status:
            raise SystemExit(f"FAIL: {path}?{q}: {got}, want {status}: {body[:300]!r}")
        return json.loads(body)


def cli(trace, args):
    p = subprocess.run([MEMTRACE, *args, "--format", "json", trace], capture_output=True,
                       text=True, timeout=120)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: memtrace {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return json.loads(p.stdout)


def first_difference(a, b, path="$"):
    """Where two JSON values differ (a path and both sides), or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: {'missing' if k not in a else a[k]!r:.80} vs " \
                       f"{'missing' if k not in b else b[k]!r:.80}"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    # bool is an int in Python: keep true apart from 1
    if a != b or (type(a) is bool) != (type(b) is bool):
        return f"{path}: {a!r:.80} vs {b!r:.80}"
    return None


def filters(d, inside, inside2, hide):
    """(name, command-line options, API parameters) for a trace of d seconds,
    two strings of its function names and one to hide."""
    t = lambda f: f"{d * f:.6f}"  # noqa: E731
    return [
        ("none", [], {}),
        ("alloc window", ["--time", f"{t(.25)}..{t(.6)}"], {"alloc": f"{t(.25)}..{t(.6)}"}),
        ("alloc before", ["--time", f"..{t(.5)}"], {"alloc": f"..{t(.5)}"}),
        ("alloc after", ["--time", f"{t(.7)}.."], {"alloc": f"{t(.7)}.."}),
        ("live at T", ["--live-at", t(.5)], {"live": t(.5)}),
        ("live at peak", ["--live-at-peak"], {"live": "peak"}),
        ("live at end", ["--live-at-end"], {"live": "end"}),
        ("collected window", ["--collected", f"{t(.3)}..{t(.8)}"], {"collected": f"{t(.3)}..{t(.8)}"}),
        ("never collected", ["--never-collected"], {"collected": "never"}),
        ("size k..k", ["--size", "0.5k..2k"], {"size": "0.5k..2k"}),
        ("size up to", ["--size", "..0.0625k"], {"size": "..0.0625k"}),
        ("size from", ["--size", "1.5k.."], {"size": "1.5k.."}),
        ("lifetime", ["--lifetime", f"..{t(.02)}"], {"lifetime": f"..{t(.02)}"}),
        ("source external", ["--source", "external"], {"source": "external"}),
        ("source minor,major", ["--source", "minor,major"], {"source": "minor,major"}),
        ("inside", ["--inside", inside], {"inside": inside}),
        ("not inside", ["--not-inside", inside], {"not_inside": inside}),
        ("hide", ["--hide", hide], {"hide": hide}),
        ("alloc, size, not inside",
         ["--time", f"{t(.1)}..{t(.9)}", "--size", "..4k", "--not-inside", inside],
         {"alloc": f"{t(.1)}..{t(.9)}", "size": "..4k", "not_inside": inside}),
        ("peak, source, hide", ["--live-at-peak", "--source", "minor,external", "--hide", hide],
         {"live": "peak", "source": "minor,external", "hide": hide}),
        ("collected, lifetime, inside",
         ["--collected", f"..{t(.9)}", "--lifetime", f"{t(.001)}..", "--inside", inside2],
         {"collected": f"..{t(.9)}", "lifetime": f"{t(.001)}..", "inside": inside2}),
    ]


# (name, command line, endpoint, parameters)
ANSWERS = [
    ("top --by line", ["top", "--by", "line", "-n", "0"], "/api/sites", {"by": "line", "n": ALL}),
    ("top --by function", ["top", "--by", "function", "-n", "0"], "/api/sites",
     {"by": "function", "n": ALL}),
    ("top --by stack", ["top", "--by", "stack", "-n", "0", "--depth", "0"], "/api/paths", {"n": ALL}),
    ("leaks", ["leaks", "-n", "0", "--depth", "0"], "/api/leaks", {"n": ALL}),
    ("stats", ["stats"], "/api/stats", {}),
    ("stats --chunks 4", ["stats", "--chunks", "4"], "/api/stats", {"chunks": 4}),
    ("timeline --bins 64", ["timeline", "--bins", "64"], "/api/timeline", {"bins": 64}),
]


def compare(trace, srv, name, cli_args, params, answer):
    aname, cmd, endpoint, extra = answer
    c = cli(trace, cmd + cli_args)
    a = srv.json(endpoint, {**params, **extra})
    for k in CLI_ONLY:
        if k not in a:
            c.pop(k, None)
    # the figures first, then the filter's echo (which would hide them)
    figures = lambda x: {k: v for k, v in x.items() if k not in ("filter", "filter_text")}  # noqa
    d = first_difference(figures(c), figures(a)) or first_difference(c, a)
    check(d is None, f"filter {name!r} x {aname} vs {endpoint}: {d} (command line vs API)")
    return c, a


def main():
    tmp = tempfile.mkdtemp(prefix="mt_cli_vs_api_")
    try:
        if WHICH == "workload":
            trace = os.path.join(TRACES, "workload-1e-4.ctf")
            if not os.path.exists(trace):
                print(f"SKIP: {trace} is missing")
                raise SystemExit(77)
            names = ("big_arrays", "Workload", "Memprof_tracer")
        elif WHICH == "synth":
            trace = os.path.join(tmp, "synth.ctf")
            subprocess.run([SYNTH, trace, trace + ".json", "--rate", "1e-2", "--seed", "11",
                            "--scale", "4"], check=True)
            names = ("Foo", "main", "Inl")
        else:
            raise SystemExit(f"no trace {WHICH}")
        srv = Server(trace)
        try:
            info = srv.json("/api/info", {})
            every = info["total"]["samples"]
            d = info["duration"]
            check(every > 0 and d > 0, f"{WHICH}: a trace with samples ({every}) and a duration ({d})")
            rows = 0
            table = filters(d, *names)
            for name, cli_args, params in table:
                seen = {}
                for answer in ANSWERS:
                    if answer[0] == "leaks" and "--collected" in cli_args:
                        # leaks are the objects never collected: both refuse a
                        # collection window, naming it (usage error 2; 400)
                        p = subprocess.run([MEMTRACE, *answer[1], *cli_args, trace],
                                           capture_output=True, text=True, timeout=120)
                        check(p.returncode == 2 and "--collected" in p.stderr,
                              f"leaks {' '.join(cli_args)}: exit {p.returncode}, want 2 "
                              f"naming --collected: {p.stderr.strip()!r}")
                        e = srv.json("/api/leaks", params, status=400)
                        check("'collected'" in e.get("error", ""),
                              f"/api/leaks {params}: want 400 naming collected: {e}")
                        continue
                    c, a = compare(trace, srv, name, cli_args, params, answer)
                    seen[answer[0]] = a
                # the filter selects some objects, not all of them (hide selects none
                # away: it changes stacks, so the stacks' answer must differ)
                total = seen["top --by line"]["total"]["samples"]
                check(total > 0, f"filter {name!r}: selects some samples")
                if name == "none":
                    check(total == every, f"no filter: every sample ({total} of {every})")
                elif name == "hide":
                    check(total == every, f"hide selects every sample ({total} of {every})")
                    plain = srv.json("/api/paths", {"n": ALL})
                    check(plain["sites"] != seen["top --by stack"]["sites"],
                          f"hide={names[2]} changes the stacks of /api/paths")
                else:
                    check(total < every, f"filter {name!r}: selects fewer than all samples "
                                         f"({total} of {every})")
                check(seen["stats"]["all"]["samples"] == total ==
                      seen["top --by stack"]["total"]["samples"],
                      f"filter {name!r}: stats, sites and paths count the same samples")
                rows += sum(len(seen[k].get("sites", seen[k].get("stacks", []))) for k in seen)
            # a row limit: -n N and n=N keep the same first rows
            for aname, cmd, endpoint, extra in (
                    ("top --by line -n 3", ["top", "--by", "line", "-n", "3"], "/api/sites",
                     {"by": "line", "n": 3}),
                    ("top --by stack -n 3", ["top", "--by", "stack", "-n", "3", "--depth", "0"],
                     "/api/paths", {"n": 3}),
                    ("leaks -n 3", ["leaks", "-n", "3", "--depth", "0"], "/api/leaks", {"n": 3})):
                c, a = compare(trace, srv, "none", [], {}, (aname, cmd, endpoint, extra))
                check(a["shown"] == 3, f"{aname}: 3 rows shown ({a['shown']})")
            print(f"{WHICH}: {len(table)} filters x {len(ANSWERS)} answers, {rows} rows compared")
        finally:
            srv.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failure(s)", file=sys.stderr)
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
