"""Bad input raises Python exceptions that name what and where, never a
crash: missing, unreadable, corrupt and truncated traces (TraceError with
the path and the byte offset), bad filters and arguments (ValueError naming
the keyword), and the reader's fuzz corpus replayed through every call;
several traces opened as one, at the lowest of their rates."""
import glob
import os
import shutil

import pytest

import memtrace_c as mt
from conftest import SOURCE, shared


def test_missing_file(tmp_path):
    path = str(tmp_path / "nope.ctf")
    with pytest.raises(mt.TraceError) as e:
        mt.open(path)
    assert path in str(e.value) and "No such file" in str(e.value)
    assert e.value.path == path and e.value.offset is None


def test_directory(tmp_path):
    with pytest.raises(mt.TraceError) as e:
        mt.open(tmp_path)  # a path-like
    assert str(tmp_path) in str(e.value)


def test_not_a_trace(tmp_path):
    p = tmp_path / "text.ctf"
    p.write_bytes(b"hello, this is not a trace at all" * 10)
    with pytest.raises(mt.TraceError) as e:
        mt.open(str(p))
    assert e.value.offset == 0 and "byte 0" in str(e.value) and str(p) in str(e.value)
    assert e.value.status == "corrupt trace"


def test_corrupt_packet(tmp_path):
    data = bytearray(open(shared("ocamlopt.ctf"), "rb").read())
    # where the second packet starts: where a trace cut inside it is cut
    p = tmp_path / "short.ctf"
    p.write_bytes(bytes(data[:1000]))
    with pytest.raises(mt.TraceError) as e:
        mt.open(str(p))
    first = e.value.offset
    assert 0 < first < 1000
    data[first:first + 4] = b"\0\0\0\0"  # its magic
    p = tmp_path / "corrupt.ctf"
    p.write_bytes(bytes(data))
    with pytest.raises(mt.TraceError) as e:
        mt.open(str(p))
    assert e.value.offset == first, str(e.value)
    assert f"byte {first}" in str(e.value)


def test_truncated(tmp_path):
    data = open(shared("ocamlopt.ctf"), "rb").read()
    p = tmp_path / "cut.ctf"
    p.write_bytes(data[: len(data) - 1000])
    with pytest.raises(mt.TraceError) as e:
        mt.open(str(p))
    assert "truncated" in str(e.value) and e.value.offset is not None
    assert f"byte {e.value.offset}" in str(e.value) and "allow_truncated" in str(e.value)
    t = mt.open(str(p), allow_truncated=True)
    assert "truncated" in t.warning
    assert 0 < len(t.objects()) < len(mt.open(shared("ocamlopt.ctf")).objects())


@pytest.fixture(scope="module")
def trace():
    return mt.open(shared("workload-1e-4.ctf"))


@pytest.mark.parametrize("kw, words", [
    ({"size": "big"}, ["size", "pair"]),
    ({"size": ("1x", None)}, ["size", "1x"]),
    ({"size": (10, 5)}, ["size", "empty"]),
    ({"alloc": (1,)}, ["alloc", "pair"]),
    ({"alloc": ("a", 2)}, ["alloc", "'a'"]),
    ({"alloc": (float("nan"), None)}, ["alloc", "finite"]),
    ({"live_at": "noon"}, ["live_at", "noon"]),
    ({"live_at": True}, ["live_at"]),
    ({"collected": "sometimes"}, ["collected", "sometimes"]),
    ({"lifetime": (-1, None)}, ["lifetime"]),
    ({"source": "stack"}, ["source", "stack"]),
    ({"source": []}, ["source"]),
    ({"hide": ["a,b"]}, ["hide", "comma"]),
    ({"hide": [""]}, ["hide"]),
    ({"inside": 3}, ["inside", "string"]),
    ({"sizes": (1, 2)}, ["sizes", "no such filter"]),
])
def test_bad_filter(trace, kw, words):
    for call in (trace.objects, trace.top, trace.leaks, trace.timeline, trace.stats):
        with pytest.raises(ValueError) as e:
            call(**kw)
        for w in words:
            assert w in str(e.value), (call.__name__, kw, str(e.value))


def test_unmatched_names_warn(trace):
    """A name of inside, not_inside or hide that no function of the trace
    has is warned of (one UserWarning each, pointing at the caller), by
    every call taking filters; names found are not."""
    import warnings
    for call in (trace.objects, trace.top, trace.leaks, trace.timeline, trace.stats):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            call(inside="Nowhere", not_inside="Map", hide=["bal", "Zilch"])
        texts = [str(w.message) for w in got]
        assert texts == ["inside='Nowhere': no function of the trace has it in its name",
                         "hide='Zilch': no function of the trace has it in its name"], texts
        assert all(w.filename == __file__ for w in got), [w.filename for w in got]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            call(inside="Map", hide="bal")


def test_bad_arguments(trace):
    with pytest.raises(ValueError, match="by"):
        trace.top(by="file")
    with pytest.raises(ValueError, match="sort"):
        trace.top(sort="age")
    with pytest.raises(ValueError, match="n"):
        trace.top(n=-1)
    with pytest.raises(ValueError, match="bins"):
        trace.timeline(bins=0)
    with pytest.raises(ValueError, match="chunks"):
        trace.stats(chunks=0)
    with pytest.raises(IndexError, match="backtrace"):
        trace.backtrace(trace.info["backtraces"])
    with pytest.raises(ValueError, match="backtrace"):
        trace.backtrace(-1)


def test_progress(capsys):
    seen = []
    big = shared("workload-1e-3.ctf")  # progress comes every 65,536 events
    mt.open(big, progress=lambda done, total: seen.append((done, total)))
    assert seen and all(0 < d <= t for d, t in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    mt.open(big, progress=True)
    err = capsys.readouterr().err
    assert "loading" in err and "%" in err

    class Stop(Exception):
        pass

    def stop(done, total):
        raise Stop()

    with pytest.raises(Stop):
        mt.open(big, progress=stop)


def corpus():
    files = []
    for d in ("corpus", "corpus_roundtrip"):
        files += sorted(glob.glob(os.path.join(SOURCE, "tests", "fuzz", d, "*")))
    assert len(files) > 10
    return files


def test_fuzz_corpus(tmp_path):
    """Every input of the reader's fuzz corpora (crafted traces, and traces
    cut and flipped) either loads or raises TraceError; what loads answers
    every call."""
    loaded = failed = 0
    for path in corpus():
        for variant, data in variants(open(path, "rb").read()):
            p = tmp_path / f"{os.path.basename(path)}.{variant}"
            p.write_bytes(data)
            try:
                t = mt.open(str(p), allow_truncated=True)
            except mt.TraceError as e:
                assert e.path == str(p) and str(p) in str(e)
                failed += 1
                continue
            loaded += 1
            exercise(t)
    assert loaded > 0 and failed > 0


def variants(data):
    yield "whole", data
    yield "half", data[: len(data) // 2]
    for k, at in enumerate((16, len(data) // 3, len(data) - 7)):
        if 0 <= at < len(data):
            b = bytearray(data)
            b[at] ^= 0x5A
            yield f"flip{k}", bytes(b)


def exercise(t):
    d = t.info["duration"]
    for kw in ({}, {"live_at": "peak", "hide": "a"}, {"alloc": (0, d / 2), "size": (None, "1k")}):
        objs = t.objects(**kw)
        t.top(n=0, **kw)
        t.top(by="stack", n=5, **kw)
        t.leaks(**kw)
        t.timeline(bins=7, **kw)
        t.stats(chunks=3, **kw)
        for bt in set(objs["backtrace"][:20]):
            t.backtrace(bt)
    repr(t)


def test_several_traces_read_as_one(tmp_path):
    """A list of paths is one trace, as `memtrace stats` reads several;
    traces of two rates are read at the lower one."""
    import json as _json
    import subprocess as _sp
    from conftest import MEMTRACE, SYNTH
    paths = []
    for i, start in enumerate((0, 200000)):
        p = str(tmp_path / f"proc{i}.ctf")
        _sp.run([SYNTH, p, p + ".json", "--rate", "1e-2", "--seed", str(31 + i),
                 "--start", str(start)], check=True)
        paths.append(p)
    t = mt.open(paths)
    assert t.info["path"] == paths and t.info["context"] == "2 traces read as one"
    cli = _json.loads(_sp.run([MEMTRACE, "stats", "--format", "json", *paths],
                              capture_output=True, text=True, check=True).stdout)
    assert t.info["sampled_objects"] == cli["all"]["sampled_objects"]
    assert len(t.objects()) == cli["all"]["sampled_objects"]
    other = str(tmp_path / "rate1.ctf")
    _sp.run([SYNTH, other, other + ".json", "--rate", "1", "--seed", "5"], check=True)
    mixed = mt.open([paths[0], other])  # read at the lower rate, the other thinned
    assert mixed.info["sample_rate"] == 1e-2 and "thinned" in mixed.info["context"]


def test_follow(tmp_path):
    """A trace followed as it is written in steps answers, after each
    update, as a trace opened whole from the same bytes; update(end=True)
    reads the end; a trace opened whole has no update; a file that is no
    trace yet raises TraceError."""
    data = open(shared("workload-1e-3.ctf"), "rb").read()
    p, cut = tmp_path / "growing.ctf", tmp_path / "cut.ctf"
    p.write_bytes(data[:40])
    with pytest.raises(mt.TraceError) as e:
        mt.follow(str(p))
    assert e.value.path == str(p)
    p.write_bytes(data[:300000])
    live = mt.follow(p)
    for at in (300000, 300007, 1200000, len(data) - 5, len(data)):
        with open(p, "r+b") as f:
            f.seek(0, 2)
            f.write(data[f.tell():at])
        if at != 300000:
            assert live.update() >= 0
        cut.write_bytes(data[:at])
        whole = mt.open(str(cut), allow_truncated=True)
        assert live.info["sampled_objects"] == whole.info["sampled_objects"]
        assert live.info["duration"] == whole.info["duration"]
        assert live.top(n=10).equals(whole.top(n=10))
        assert live.leaks(n=10).equals(whole.leaks(n=10))
        assert live.objects(size=(100, None)).equals(whole.objects(size=(100, None)))
        assert live.warning is None  # a packet not yet whole is no truncation
    assert live.update(end=True) == 0
    assert live.warning is None and live.update() == 0
    assert live.info["sampled_objects"] == mt.open(shared("workload-1e-3.ctf")).info["sampled_objects"]
    with pytest.raises(ValueError, match="update"):
        whole.update()
    # a writer that stopped inside a packet: the end says truncated
    p.write_bytes(data[: len(data) - 1000])
    cutoff = mt.follow(p)
    cutoff.update(end=True)
    assert "truncated" in cutoff.warning
