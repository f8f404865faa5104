"""The statistics of `memtrace stats` as DataFrames.

The library computes them (include/memtrace/stats.h) and writes its one
statistics document (docs/json.md); this module lays that document out as
tables, so every figure is the command line's, to the last digit.
"""

import pandas as pd


def _est(row, name, est):
    row[name], row[name + "_lo"], row[name + "_hi"] = est["value"], est["lo"], est["hi"]


def _figs(d, prefix=""):
    """A FIGS or TALLY member as flat columns."""
    row = {prefix + "sampled_objects": d["sampled_objects"], prefix + "samples": d["samples"]}
    _est(row, prefix + "objects", d["objects"])
    _est(row, prefix + "bytes", d["bytes"])
    for share in ("objects_share", "bytes_share"):
        if share in d:
            row[prefix + share] = d[share]
    return row


def _moments(row, prefix, m):
    for k in ("count", "mean", "variance", "stddev", "max"):
        row[prefix + k] = m[k]


def _summary_row(g):
    row = {"from": g["from_s"], "to": g["to_s"]}
    row.update(_figs(g))
    row.update(_figs(g["over_256_words"], "over_256_"))
    _moments(row, "size_words_", g["size_words"]["estimated"])
    _moments(row, "sampled_size_words_", g["size_words"]["sampled"])
    row.update(_figs(g["never_collected"], "never_collected_"))
    p = g["promotion"]
    row["promoted_sampled_objects"] = p["sampled_objects"]
    _est(row, "promoted_objects", p["objects"])
    _est(row, "promoted_bytes", p["bytes"])
    for k in ("rate", "rate_bytes", "rate_sampled"):
        row["promotion_" + k] = p[k]
    return row


def _bins(groups, member, keys):
    rows, index = [], []
    for name, g in groups:
        for b in g[member]:
            row = {k: b[k] for k in keys}
            row.update(_figs(b))
            rows.append(row)
            index.append((name, b["bin"]))
    return pd.DataFrame(rows, index=pd.MultiIndex.from_tuples(index, names=["group", "bin"]))


def _fine(bins):
    rows = []
    for b in bins:
        row = {"lo": b["lo"], "hi": b["hi"]}
        row.update(_figs(b))
        rows.append(row)
    return pd.DataFrame(rows)


class Stats:
    """Statistics of the objects passing a filter (Trace.stats).

    summary: one row per group, index "all" then each chunk's number:
      from, to (allocation times covered, s), sampled_objects, samples,
      objects, bytes (estimates, with _lo and _hi), over_256_* (blocks of
      more than 256 words: figures and shares), size_words_count, _mean,
      _variance, _stddev, _max (estimated for the whole program: each object
      weighted by 1/P), sampled_size_words_* (the sampled objects alone),
      never_collected_*, promoted_* and promotion_rate (minor objects).
    sizes: the size histogram in words (0-32, 33-256, 257-10000, >10000),
      index (group, bin); lifetimes: by decade of microseconds, collected
      objects only; sources: minor, major, external.
    size_log2: all objects by powers of two of bytes (lo, hi);
      lifetime_fine: by thirds of decades of seconds; live_at_end: the
      objects never collected, a dict.
    document: the statistics document itself (docs/json.md).
    """

    def __init__(self, document):
        self.document = d = document
        groups = [("all", d["all"])] + list(enumerate(d.get("chunks", [])))
        self.summary = pd.DataFrame([_summary_row(g) for _, g in groups],
                                    index=pd.Index([n for n, _ in groups], name="group"))
        self.sizes = _bins(groups, "size_histogram", ("min_words", "max_words"))
        self.lifetimes = _bins(groups, "lifetime_histogram", ("from_us", "to_us"))
        rows, index = [], []
        for name, g in groups:
            for source, figs in g["sources"].items():
                rows.append(_figs(figs))
                index.append((name, source))
        self.sources = pd.DataFrame(rows, index=pd.MultiIndex.from_tuples(
            index, names=["group", "source"]))
        h = d["histograms"]
        self.size_log2 = _fine(h["size"])
        self.lifetime_fine = _fine(h["lifetime"])
        self.live_at_end = _figs(h["live_at_end"])
        self.sample_rate = d["sample_rate"]
        self.filter_text = d["filter_text"]

    def __repr__(self):
        return f"<memtrace_c.Stats: {len(self.summary) - 1} chunks; filter: {self.filter_text}>"
