"""memtrace_c's answers against the command line's JSON (docs/json.md) for
the same trace and filter: every figure equal, to the last digit.

A table of filters, each spelled as keywords and as `memtrace` options, is
crossed with the answers (top by function, line and stack, leaks, stats
with and without chunks, timeline) on memtrace's own traces and a
synthetic one."""
import math
import subprocess

import pytest

import memtrace_c as mt
from conftest import MEMTRACE, cli_json, shared


def filters(d, inside, inside2, hide):
    """(name, keywords, command-line options) for a trace of d seconds."""
    t = lambda f: round(d * f, 6)  # noqa: E731
    return [
        ("none", {}, []),
        ("alloc window", {"alloc": (t(.25), t(.6))}, ["--time", f"{t(.25)}..{t(.6)}"]),
        ("alloc before", {"alloc": (None, t(.5))}, ["--time", f"..{t(.5)}"]),
        ("alloc after", {"alloc": (t(.7), None)}, ["--time", f"{t(.7)}.."]),
        ("live at T", {"live_at": t(.5)}, ["--live-at", f"{t(.5)}"]),
        ("live at peak", {"live_at": "peak"}, ["--live-at-peak"]),
        ("live at end", {"live_at": "end"}, ["--live-at-end"]),
        ("collected window", {"collected": (t(.3), t(.8))}, ["--collected", f"{t(.3)}..{t(.8)}"]),
        ("never collected", {"collected": "never"}, ["--never-collected"]),
        ("size bytes", {"size": (512, 2048)}, ["--size", "512..2048"]),
        ("size suffixes", {"size": ("0.5k", "2k")}, ["--size", "0.5k..2k"]),
        ("size up to", {"size": (None, 64)}, ["--size", "..64"]),
        ("lifetime", {"lifetime": (None, t(.02))}, ["--lifetime", f"..{t(.02)}"]),
        ("source external", {"source": "external"}, ["--source", "external"]),
        ("source list", {"source": ["minor", "major"]}, ["--source", "minor,major"]),
        ("inside", {"inside": inside}, ["--inside", inside]),
        ("not inside", {"not_inside": inside}, ["--not-inside", inside]),
        ("hide", {"hide": [hide]}, ["--hide", hide]),
        ("hide two", {"hide": [hide, inside2]}, ["--hide", f"{hide},{inside2}"]),
        ("alloc, size, not inside",
         {"alloc": (t(.1), t(.9)), "size": (None, "4k"), "not_inside": inside},
         ["--time", f"{t(.1)}..{t(.9)}", "--size", "..4k", "--not-inside", inside]),
        ("peak, source, hide", {"live_at": "peak", "source": ["minor", "external"], "hide": hide},
         ["--live-at-peak", "--source", "minor,external", "--hide", hide]),
    ]


# each trace's functions for the filters: inside, a second one, hidden
TRACES = {
    "workload": ("big_arrays", "Workload", "Memprof_tracer"),
    "workload-1e-3": ("big_arrays", "Workload", "Memprof_tracer"),
    "ocamlopt": ("Coloring.allocate_registers", "Stdlib__list.iter", "Misc.try_finally"),
    "synth": ("Foo", "main", "Inl"),
}
PATHS = {"workload": "workload-1e-4.ctf", "workload-1e-3": "workload-1e-3.ctf",
         "ocamlopt": "ocamlopt.ctf"}
# rows of stacks compared (0: all): the larger traces' first ones, for time
STACKS = {"workload-1e-3": 60, "ocamlopt": 60}


def stack_rows(path):
    return next((n for k, n in STACKS.items() if path.endswith(PATHS[k])), 0)


# the other traces cross a part of the filters, for time (each row runs
# the command once; under the sanitizers, seconds)
SOME = {"none", "alloc window", "live at peak", "never collected", "size bytes", "inside",
        "hide two", "peak, source, hide"}


@pytest.fixture(scope="module", params=sorted(TRACES))
def case(request, synth):
    path = synth[0] if request.param == "synth" else shared(PATHS[request.param])
    return path, mt.open(path), TRACES[request.param]


def case_filters(case):
    path, t, names = case
    every = path.endswith(PATHS["workload"]) or not any(path.endswith(p) for p in PATHS.values())
    return [x for x in filters(t.info["duration"], *names) if every or x[0] in SOME]


def est(doc, name):
    return (doc[name]["value"], doc[name]["lo"], doc[name]["hi"])


def row_est(row, name):
    return (row[name], row[name + "_lo"], row[name + "_hi"])


def frame_text(f):
    return f"#{f['code']}" if "code" in f else f"{f['function']} ({f['file']}:{f['line']})"


def check_rows(df, doc, rows_key, by):
    assert df.attrs["groups"] == doc[rows_key.replace("sites", "sites_total").replace(
        "stacks", "stacks_total")]
    t = doc["total"]
    assert df.attrs["total"]["bytes"] == est(t, "bytes")
    assert df.attrs["total"]["objects"] == est(t, "objects")
    assert df.attrs["total"]["samples"] == t["samples"]
    assert df.attrs["total"]["sampled_objects"] == t["sampled_objects"]
    assert df.attrs["filter_text"] == doc["filter_text"]
    rows = doc[rows_key]
    assert len(df) == len(rows)
    for (rank, r), j in zip(df.iterrows(), rows):
        assert rank == j["rank"]
        assert row_est(r, "bytes") == est(j, "bytes"), (rank, j)
        assert row_est(r, "objects") == est(j, "objects"), (rank, j)
        assert (r["samples"], r["sampled_objects"]) == (j["samples"], j["sampled_objects"])
        if by == "stack":
            assert r["frames_total"] == j["frames_total"]
            assert list(r["stack"]) == [frame_text(f) for f in j["frames"]], rank
        else:
            assert r["function"] == j.get("function") and r["file"] == j.get("file")
            assert r["code"] == j.get("code")
            if by == "line" and "function" in j:
                assert r["line"] == j["line"]


@pytest.mark.parametrize("by", ["function", "line", "stack"])
@pytest.mark.parametrize("sort", ["bytes", "objects"])
def test_top(case, by, sort):
    path, t, names = case
    external = (t.objects()["source"] == "external").any()  # none in ocamlopt's
    for name, kw, opts in case_filters(case):
        n = stack_rows(path) if by == "stack" else 0
        df = t.top(by=by, n=n, sort=sort, **kw)
        doc = cli_json(path, "top", "--by", by, "--sort", sort, "-n", str(n), "--depth", "0", *opts)
        assert df.attrs["total"]["samples"] > 0 or (kw.get("source") == "external" and not external), name
        check_rows(df, doc, "sites", by)


def test_top_limits(case):
    path, t, _ = case
    df = t.top(by="stack", n=3, depth=2)
    doc = cli_json(path, "top", "--by", "stack", "-n", "3", "--depth", "2")
    check_rows(df, doc, "sites", "stack")
    assert len(df) == 3 and all(len(s) <= 2 for s in df["stack"])
    assert "line" not in t.top(by="function").columns
    assert list(t.top(n=5).index) == [1, 2, 3, 4, 5]


def test_leaks(case):
    path, t, names = case
    for name, kw, opts in case_filters(case):
        if "collected" in kw and kw["collected"] != "never":
            with pytest.raises(ValueError, match="collected"):
                t.leaks(**kw)
            continue
        n = stack_rows(path)
        df = t.leaks(n=n, **kw)
        doc = cli_json(path, "leaks", "-n", str(n), "--depth", "0", *opts)
        check_rows(df, doc, "stacks", "stack")
        for (_, r), j in zip(df.iterrows(), doc["stacks"]):
            assert (r["oldest_alloc"], r["newest_alloc"]) == (j["oldest_alloc_s"],
                                                            j["newest_alloc_s"])
            assert r["age"] == j["age_s"]
    for sort in ("objects", "oldest"):
        n = stack_rows(path)
        df = t.leaks(n=n, sort=sort)
        doc = cli_json(path, "leaks", "-n", str(n), "--depth", "0", "--sort", sort)
        check_rows(df, doc, "stacks", "stack")


def test_stats(case):
    path, t, names = case
    for name, kw, opts in case_filters(case):
        for chunks in (1, 4):
            s = t.stats(chunks=chunks, **kw)
            doc = cli_json(path, "stats", "--chunks", str(chunks), *opts)
            mine = {k: v for k, v in s.document.items() if k != "histograms"}
            theirs = {k: v for k, v in doc.items()
                      if k not in ("command", "trace", "filters")}
            assert mine == theirs, (name, chunks)
            groups = [doc["all"]] + doc.get("chunks", [])
            assert len(s.summary) == len(groups)
            for (_, row), g in zip(s.summary.iterrows(), groups):
                assert row["sampled_objects"] == g["sampled_objects"]
                assert row_est(row, "bytes") == est(g, "bytes")
                assert row["size_words_stddev"] == g["size_words"]["estimated"]["stddev"]
                assert row["over_256_objects_share"] == g["over_256_words"]["objects_share"]
            hist = s.sizes.loc["all"]
            assert list(hist.index) == [b["bin"] for b in doc["all"]["size_histogram"]]
            assert list(hist["sampled_objects"]) == [
                b["sampled_objects"] for b in doc["all"]["size_histogram"]]
            assert s.lifetimes.loc["all"]["samples"].sum() + \
                s.summary.loc["all", "never_collected_samples"] == doc["all"]["samples"]


def test_timeline(case):
    path, t, names = case
    for name, kw, opts in case_filters(case):
        df = t.timeline(bins=64, **kw)
        doc = cli_json(path, "timeline", "--bins", "64", *opts)
        assert list(df["time"]) == doc["time"]
        assert [round(x) for x in df["live_bytes"]] == doc["filtered"], name
        assert [round(x) for x in df["all_bytes"]] == doc["all"]["end"]
        assert [round(x) for x in df["all_min"]] == doc["all"]["min"]
        assert [round(x) for x in df["all_max"]] == doc["all"]["max"]
        assert df.attrs["peak_time"] == doc["peak"]["time"]
        assert tuple(df.attrs["peak_bytes"]) == est(doc["peak"], "bytes")
        assert (df["live_bytes_lo"] <= df["live_bytes"]).all()
        assert (df["live_bytes"] <= df["live_bytes_hi"]).all()


def test_backtrace_frames(case):
    """A stack's frames (top --by stack) are its backtrace's, innermost
    first, with inlined locations."""
    path, t, _ = case
    top = t.top(by="stack", n=10)
    for _, row in top.iterrows():
        bt = t.backtrace(row["backtrace"])
        text = [f"#{c}" if f is None else f"{f} ({fl}:{ln})"
                for f, fl, ln, c in zip(bt["function"], bt["file"], bt["line"], bt["code"])]
        assert text == list(row["stack"])
        assert row["frames_total"] == len(bt)
        assert not math.isnan(len(bt))
        check_inlined(bt)


def check_inlined(bt):
    """A code of n locations gives n frames, innermost first: the first
    n - 1 inlined into the next, the last not. A run of one code's frames
    (a code, or a function calling itself) is whole blocks of one shape."""
    codes, inl, fns = list(bt["code"]), list(bt["inlined"]), list(bt["function"])
    k = 0
    while k < len(codes):
        end = k
        while end < len(codes) and codes[end] == codes[k]:
            end += 1
        n = inl[k:end].index(False) + 1  # the first block's length
        assert (end - k) % n == 0, (k, codes)
        for b in range(k, end, n):
            assert inl[b:b + n] == [True] * (n - 1) + [False], (b, inl)
            assert fns[b:b + n] == fns[k:k + n]
        k = end


def test_backtrace_inlined_frames():
    """ocamlopt's trace has codes of several locations: their frames say so."""
    t = mt.open(shared("ocamlopt.ctf"))
    seen = 0
    for bt_id in t.objects()["backtrace"].unique()[:400]:
        bt = t.backtrace(bt_id)
        check_inlined(bt)
        seen += int(bt["inlined"].sum())
    assert seen > 0


def test_info_as_memtrace_info(case):
    """t.info's header fields are memtrace info's."""
    path, t, _ = case
    p = subprocess.run([MEMTRACE, "info", path], capture_output=True, text=True, check=True)
    text = dict(line.split(":", 1) for line in p.stdout.splitlines() if ":" in line)
    i = t.info
    assert text["executable"].strip() == i["executable"]
    assert text["host"].strip() == i["host"]
    assert int(text["pid"]) == i["pid"]
    assert text["word size"].strip() == f"{i['word_size']} bits"
    assert text["started"].strip() == i["start_time"].strftime("%Y-%m-%d %H:%M:%S UTC")
    assert float(text["sample rate"].split()[0]) == i["sample_rate"]
    assert text["duration"].strip() == f"{i['duration']:.3f} s"
