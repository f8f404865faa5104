"""Trace.objects against the synthetic trace's truth (every object of the
simulated program: tests/tools/synth.c), and against the rankings' totals
under every filter."""
import math
import os
import subprocess

import numpy as np
import pytest

import memtrace_c as mt
from conftest import MEMTRACE, shared
from test_vs_cli import TRACES, filters

SOURCES = ["minor", "major", "external"]


def test_columns_are_the_truth(synth):
    path, truth = synth
    t = mt.open(path)
    df = t.objects()
    sampled = [o for o in truth["objects"] if o[3] > 0]
    sampled.sort(key=lambda o: o[5])
    assert len(df) == len(sampled) == t.info["sampled_objects"]
    assert list(df.columns) == ["alloc_time", "promote_time", "free_time", "size", "words",
                                "nsamples", "source", "mapping", "backtrace"]
    site, words, length, nsamples, source, alloc_us, free_us = map(list, zip(*sampled))
    assert list(df["alloc_time"]) == [a / 1e6 for a in alloc_us]
    free = [math.nan if f < 0 else f / 1e6 for f in free_us]
    assert np.array_equal(df["free_time"].to_numpy(), np.array(free), equal_nan=True)
    assert list(df["words"]) == length
    assert list(df["size"]) == [n * 8 for n in length]
    assert list(df["nsamples"]) == nsamples
    assert list(df["source"]) == [SOURCES[s] for s in source]
    # promotion: minor objects only, between allocation and collection
    promoted = df[df["promote_time"].notna()]
    assert len(promoted) > 0 and (promoted["source"] == "minor").all()
    assert (promoted["promote_time"] > promoted["alloc_time"]).all()
    assert not (promoted["promote_time"] > promoted["free_time"]).any()
    # each object's backtrace prints as its site's frames
    sites = truth["sites"]
    seen = {}
    for bt, s in zip(df["backtrace"], site):
        if bt in seen:
            assert seen[bt] == s or sites[seen[bt]]["frames"] == sites[s]["frames"]
            continue
        seen[bt] = s
        frames = t.backtrace(bt)
        text = [f"#{c}" if f is None else f"{f} ({fl}:{ln})"
                for f, fl, ln, c in zip(frames["function"], frames["file"], frames["line"],
                                        frames["code"])]
        assert text == sites[s]["frames"], (bt, s)
    assert len(seen) >= len({s for s in site}) - 1


def test_columns_are_arrays(workload):
    df = mt.open(workload).objects()
    assert [str(d) for d in df.dtypes] == ["float64", "float64", "float64", "uint64", "uint64",
                                           "uint64", "category", "bool", "uint32"]
    # bytes a row: six 8-byte columns, the source's code, mapping, the backtrace
    raw = 8 * 6 + 1 + 1 + 4
    assert df.memory_usage(deep=True, index=False).sum() <= 1.05 * raw * len(df) + 4096
    assert (np.diff(df["alloc_time"].to_numpy()) >= 0).all()  # allocation order


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_columns_own_their_memory():
    """The columns' blocks (malloc'd in C, freed through each array's base)
    outlive the trace, are ordinary writeable arrays, and are freed with
    the DataFrame: calls made and dropped in a loop leave the process no
    bigger than a few DataFrames."""
    t = mt.open(shared("workload-1e-3.ctf"))
    df = t.objects()
    want = df["alloc_time"].sum(), df["backtrace"].sum()
    del t
    assert (df["alloc_time"].sum(), df["backtrace"].sum()) == want
    for c in ["alloc_time", "free_time", "size", "backtrace"]:
        a = df[c].to_numpy()
        assert a.flags.c_contiguous and a.flags.aligned and a.flags.writeable
    size = df.memory_usage(deep=True, index=False).sum()
    assert size > 1 << 20  # a leak of 40 would show
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        return  # ASan's quarantine keeps freed blocks from reuse: RSS grows by design
    t = mt.open(shared("workload-1e-3.ctf"))
    t.objects()
    before = rss_bytes()
    for _ in range(40):
        t.objects()
    assert rss_bytes() - before < 8 * size, (rss_bytes() - before, size)


@pytest.mark.parametrize("which", ["synth", "ocamlopt.ctf", "workload-1e-3.ctf"])
def test_histograms_count_the_objects(which, synth):
    """stats' histograms behind the plots (size_log2, lifetime_fine,
    live_at_end) hold the sampled objects objects() lists there."""
    t = mt.open(synth[0] if which == "synth" else shared(which))
    df, s = t.objects(), t.stats()
    size = df["size"].to_numpy()
    for _, b in s.size_log2.iterrows():
        inside = (size >= b["lo"]) & (size < b["hi"])
        assert b["sampled_objects"] == inside.sum(), (b["lo"], b["hi"])
        assert b["samples"] == df["nsamples"][inside].sum()
    assert s.size_log2["sampled_objects"].sum() == len(df)
    freed = df[df["free_time"].notna()]
    life_us = np.rint((freed["free_time"] - freed["alloc_time"]).to_numpy() * 1e6)
    for _, b in s.lifetime_fine.iterrows():
        # bin b's edges are whole microseconds: ceil(10^((b-1)/3)) (stats.c)
        edge = lambda x: 0 if x == 0 else math.ceil(x * 1e6 - 1e-3)  # noqa: E731
        inside = (life_us >= edge(b["lo"])) & (life_us < edge(b["hi"]))
        assert b["sampled_objects"] == inside.sum(), (b["lo"], b["hi"])
    assert s.lifetime_fine["sampled_objects"].sum() == len(freed)
    assert s.live_at_end["sampled_objects"] == df["free_time"].isna().sum()
    assert s.live_at_end["samples"] == df["nsamples"][df["free_time"].isna()].sum()


def test_filters_select_what_rankings_count(synth, workload):
    for path, names in ((synth[0], TRACES["synth"]), (workload, TRACES["workload"])):
        t = mt.open(path)
        for name, kw, _ in filters(t.info["duration"], *names):
            df = t.objects(**kw)
            total = t.top(n=1, **kw).attrs["total"]
            assert len(df) == total["sampled_objects"], name
            assert int(df["nsamples"].sum()) == total["samples"], name
            if "hide" in kw and len(kw) == 1:
                assert len(df) == t.info["sampled_objects"]  # hide selects nothing away


def test_filter_semantics(synth):
    t = mt.open(synth[0])
    every = t.objects()
    d = t.info["duration"]
    a = t.objects(alloc=(d / 4, d / 2))
    assert ((a["alloc_time"] >= d / 4) & (a["alloc_time"] < d / 2)).all()
    assert len(a) == ((every["alloc_time"] >= d / 4) & (every["alloc_time"] < d / 2)).sum()
    s = t.objects(size=(100, 1000))
    assert ((s["size"] >= 100) & (s["size"] <= 1000)).all() and len(s) > 0
    n = t.objects(collected="never")
    assert n["free_time"].isna().all() and len(n) == every["free_time"].isna().sum()
    x = t.objects(source="external")
    assert (x["source"] == "external").all() and len(x) == (every["source"] == "external").sum()
    assert len(t.objects(source=["minor", "major", "external"])) == len(every)


def test_mappings(tmp_path):
    """A C program's anonymous mappings at rate 1 (tests/profiler/prog_maps.c
    prints each site's objects, bytes and live mappings): the mapping column,
    the mapping and heap sources, and the sites' bytes exact."""
    prog = os.path.join(os.path.dirname(MEMTRACE), "prog_maps")
    if not os.path.exists(prog):
        pytest.skip(f"{prog} is not built")
    trace = str(tmp_path / "m.ctf")
    # not this interpreter's LD_PRELOAD (the sanitizers' runtime, in their
    # build): the program gets the profiler's
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    p = subprocess.run([MEMTRACE, "run", "-q", "--rate", "1", "-o", trace, "--", prog],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    truth = {w[0]: [int(x) for x in w[1:]] for w in map(str.split, p.stdout.splitlines())}
    t = mt.open(trace)
    every, maps = t.objects(), t.objects(source="mapping")
    assert int(every["mapping"].sum()) == len(maps) == sum(v[0] for v in truth.values())
    assert maps["mapping"].all() and (maps["source"] == "external").all()
    heap = t.objects(source="heap")
    assert not heap["mapping"].any() and len(heap) + len(maps) == len(every)
    assert int(maps["size"].sum()) == sum(v[1] for v in truth.values())
    assert int(maps["free_time"].isna().sum()) == sum(v[2] for v in truth.values())
    top = t.top(by="function", source="mapping", n=100)
    assert dict(zip(top["function"], top["bytes"].astype(int))) == {k: v[1] for k, v in truth.items()}
