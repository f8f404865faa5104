"""A trace, loaded once, and its answers as pandas DataFrames.

Every figure comes from libmemtrace's analysis (the same calls as the
`memtrace` command and its viewer): this module only names the columns.
Times are seconds since the trace's start, sizes bytes unless a name says
words, and every estimate comes with its 95% interval (`_lo`, `_hi`).
"""

import datetime
import json
import sys
import warnings

import numpy as np
import pandas as pd

from . import _core
from . import filters as _filters

SOURCES = ["minor", "major", "external"]
_BY = {"function": 0, "line": 1, "stack": 2}
_SORT = {"bytes": 0, "objects": 1}


def _choice(keyword, value, table):
    if value not in table:
        raise ValueError(f"{keyword}: {value!r} is not one of {', '.join(map(repr, table))}")
    return table[value]


def _count(keyword, value, least=0):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ValueError(f"{keyword}: {value!r} is not a whole number of at least {least}")
    return int(value)


class _Progress:
    """The load's progress on standard error (in a notebook, under the cell)."""

    def __init__(self, path):
        self.path, self.shown = path, -1

    def __call__(self, done, total):
        pct = int(100 * done / total) if total else -1
        if pct != self.shown:
            self.shown = pct
            what = f"{pct}%" if total else f"{done >> 20} MiB"
            print(f"\rloading {self.path}: {what}", end="", file=sys.stderr, flush=True)

    def finish(self):
        if self.shown != -1:
            print(file=sys.stderr, flush=True)


def open(path, progress=False, allow_truncated=False):  # noqa: A001 (the module's verb)
    """Loads the trace at `path` (str or path-like) into the analysis tables;
    a list of paths (a process tree, a fleet, of one sample rate) loads them
    as one trace, lined up by their wall-clock starts (mt_analysis_load_many).

    progress: True shows the load's progress on standard error; a callable
    is called now and then with (bytes read, total bytes or 0). The load
    stops at Ctrl-C or at an exception of the callable, which is raised.
    allow_truncated: a trace whose last packet is cut short (the program was
    killed while tracing) raises TraceError unless this is True; then its
    complete packets are read and Trace.warning says what was left out.
    Raises TraceError (with .path, .offset, .status) for a trace that cannot
    be read.
    """
    shown = _Progress(path) if progress is True else None
    callback = shown if shown else (progress or None)
    try:
        core = _core.load(list(path) if isinstance(path, (list, tuple)) else path, callback,
                          bool(allow_truncated))
    finally:
        if shown:
            shown.finish()
    return Trace(core)


def follow(path):
    """Reads the trace at `path` (str or path-like) while a program is still
    writing it (a `memtrace run -o FILE`, `memtrace listen -o FILE`): the
    Trace holds what was written so far, and Trace.update() adds what was
    written since, reading each packet once. A packet not yet whole waits
    for its end. Raises TraceError for a file that is not (yet) a trace.
    """
    return Trace(_core.follow(path))


def _estimates(d, name):
    return {name: d[name], name + "_lo": d[name + "_lo"], name + "_hi": d[name + "_hi"]}


class Trace:
    """A loaded trace. Its methods take the filters of memtrace_c.filters as
    keywords, e.g. t.top(by="line", size=(1024, None), live_at="peak")."""

    def __init__(self, core):
        self._core = core
        self._describe()

    def update(self, end=False):
        """A trace opened with memtrace_c.follow: reads what the program has
        written since, so that every answer from then on covers it; returns
        the number of events read. end=True says the writer is done: the
        rest of the file is read as the trace's end (a last packet cut short
        is then a truncation, in Trace.warning). Raises ValueError for a
        trace loaded whole, TraceError for a corrupt packet."""
        n = self._core.update(bool(end))
        self._describe()
        return n

    def _describe(self):
        core = self._core
        raw = core.info()
        self._raw = raw
        start = datetime.datetime.fromtimestamp(raw["start_time_us"] / 1e6, datetime.timezone.utc)
        self.info = {
            "executable": raw["executable"],
            "pid": raw["pid"],
            "host": raw["host"],
            "start_time": start,
            "sample_rate": raw["sample_rate"],
            "word_size": raw["word_size"],
            "context": raw["context"],
            "duration": raw["duration_us"] / 1e6,
            "runtime_params": raw["runtime_params"],
            "sampled_objects": raw["sampled_objects"],
            "backtraces": raw["backtraces"],
            "peak_time": raw["peak_time_us"] / 1e6,
            "path": raw["path"],
        }

    def __repr__(self):
        i = self.info
        return (f"<memtrace_c.Trace {i['path']!r}: {i['executable']} (pid {i['pid']}), "
                f"{i['duration']:.6g} s, {i['sampled_objects']} sampled objects>")

    @property
    def path(self):
        return self.info["path"]

    @property
    def warning(self):
        """What loading left out (a truncated last packet...), or None."""
        return self._raw["warning"]

    # ---- objects -------------------------------------------------------------

    def _spec(self, filters):
        """The filters for the extension; warns (UserWarning) of each name of
        inside, not_inside or hide that no function of the trace has in its
        name: such a condition selects or hides nothing, most likely a
        misspelling."""
        spec = _filters.spec(filters)
        if any(p in ("inside", "not_inside", "hide") for _, p, _ in spec):
            for param, name in self._core.unmatched(spec):
                warnings.warn(f"{param}={name!r}: no function of the trace has it in its name",
                              stacklevel=3)
        return spec

    def objects(self, **filters):
        """One row per sampled allocation passing the filters, in allocation
        order (so the row number is an allocation clock).

        Columns: alloc_time, promote_time, free_time (seconds since the
        start; NaN when it never happened), size (bytes), words, nsamples,
        source (categorical: minor, major, external), mapping (True for an
        anonymous mapping: an external object whose stack starts with the
        "mmap ([anonymous mapping])" frame), backtrace (an id for
        Trace.backtrace)."""
        cols = self._core.objects(self._spec(filters))
        cols["source"] = pd.Categorical.from_codes(cols["source"], categories=SOURCES)
        return pd.DataFrame(cols, copy=False)

    # ---- rankings ------------------------------------------------------------

    def _ranking(self, d, columns):
        df = pd.DataFrame({c: d[c] for c in columns}, copy=False)
        df.index = pd.RangeIndex(1, len(df) + 1, name="rank")
        for key in ("groups", "total", "trace_total", "filter_text"):
            df.attrs[key] = d[key]
        return df

    def top(self, by="function", n=20, sort="bytes", depth=0, **filters):
        """Allocation sites (by="function" or "line") or stacks (by="stack")
        ranked by estimated bytes or objects (sort), the first n (0: all), as
        `memtrace top`.

        Columns: function, file, line (by line and stack), code (the site's
        code in hex when the trace has no location for it), bytes, objects
        (each with _lo and _hi), samples, sampled_objects; by stack also
        stack (its frames, innermost first, at most `depth` of them; 0: all),
        frames_total and backtrace (one of the group's ids). df.attrs holds
        the totals: groups, total, trace_total, filter_text."""
        by_code = _choice("by", by, _BY)
        order = _choice("sort", sort, _SORT)
        d = self._core.top(by_code, order, _count("n", n), _count("depth", depth),
                           self._spec(filters))
        cols = ["function", "file"] + (["line"] if by != "function" else []) + ["code"]
        cols += list(_estimates(d, "bytes")) + list(_estimates(d, "objects"))
        cols += ["samples", "sampled_objects"]
        if by == "stack":
            cols += ["stack", "frames_total", "backtrace"]
        return self._ranking(d, cols)

    def leaks(self, n=20, depth=0, sort="bytes", **filters):
        """Objects never freed (collected), grouped by stack, most bytes first
        (sort="objects": most objects; "oldest": oldest allocation), as
        `memtrace leaks`.

        Columns: function, file, line, code (the stack's allocation site),
        bytes, objects (with _lo, _hi), samples, sampled_objects,
        oldest_alloc, newest_alloc, age (seconds from the oldest allocation
        to the trace's end), stack, frames_total, backtrace."""
        order = _choice("sort", sort, {"bytes": 0, "objects": 1, "oldest": 2})
        d = self._core.leaks(order, _count("n", n), _count("depth", depth), self._spec(filters))
        cols = ["function", "file", "line", "code"]
        cols += list(_estimates(d, "bytes")) + list(_estimates(d, "objects"))
        cols += ["samples", "sampled_objects", "oldest_alloc", "newest_alloc", "age",
                 "stack", "frames_total", "backtrace"]
        return self._ranking(d, cols)

    # ---- the live heap, statistics ------------------------------------------

    def timeline(self, bins=200, **filters):
        """The live heap at the end of each of `bins` equal bins over the trace,
        as `memtrace timeline`.

        Columns: time (the bin's end, seconds), live_bytes (of the objects
        passing the filters) with live_bytes_lo and live_bytes_hi, all_bytes
        (every object), all_min and all_max (the least and most live bytes
        of every object within the bin). df.attrs: peak_time and peak_bytes
        (value, lo, hi): the exact peak of the whole heap."""
        d = self._core.timeline(_count("bins", bins, 1), self._spec(filters))
        cols = ["time", "live_bytes", "live_bytes_lo", "live_bytes_hi", "all_bytes",
                "all_min", "all_max"]
        df = pd.DataFrame({c: d[c] for c in cols}, copy=False)
        df.attrs["peak_time"] = d["peak_time"]
        df.attrs["peak_bytes"] = d["peak_bytes"]
        return df

    def stats(self, chunks=1, **filters):
        """The statistics of `memtrace stats`: size and lifetime histograms,
        size moments, sources, promotion, for all objects passing the filters
        and (chunks > 1) for each of `chunks` equal spans of allocation time.
        Returns a Stats (its DataFrames: summary, sizes, lifetimes, sources,
        size_log2, lifetime_fine; the whole document as .document)."""
        from .stats import Stats

        text = self._core.stats(_count("chunks", chunks, 1), self._spec(filters))
        return Stats(json.loads(text))

    # ---- backtraces ----------------------------------------------------------

    def backtrace(self, bt_id):
        """The frames of backtrace `bt_id` (a value of objects().backtrace),
        innermost first: function, file, line, inlined (its function was
        inlined into the next frame's), code (the location code, hex).
        A code the trace never described is one row with function None."""
        d = self._core.backtrace(_count("backtrace", bt_id))
        d["line"] = pd.array(d["line"], dtype="Int64")
        return pd.DataFrame(d)

    # ---- plots (matplotlib, imported when used) ------------------------------

    def plot_timeline(self, ax=None, bins=400, **filters):
        """The live heap over time, with its peak; returns the Axes."""
        from . import plot

        return plot.timeline(self.timeline(bins, **filters), ax=ax, title=self.info["executable"])

    def plot_sizes(self, ax=None, **filters):
        """The size histogram (bytes, powers of two); returns the Axes."""
        from . import plot

        return plot.sizes(self.stats(**filters), ax=ax)

    def plot_lifetimes(self, ax=None, **filters):
        """The lifetime histogram (thirds of decades); returns the Axes."""
        from . import plot

        return plot.lifetimes(self.stats(**filters), ax=ax)
