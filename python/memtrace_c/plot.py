"""Plots of a trace's answers with matplotlib (imported here, when a plot is
drawn, never by `import memtrace_c`)."""

import matplotlib.pyplot as plt
import numpy as np

_UNITS = [(1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"), (1, "B")]


def _unit(peak):
    for scale, name in _UNITS:
        if peak >= scale:
            return scale, name
    return 1, "B"


def _axes(ax):
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 3.5), layout="constrained")
    return ax


def timeline(df, ax=None, title=None):
    """The live heap over time (a Trace.timeline DataFrame): every object's
    range within each bin, the filtered objects with their 95% interval, and
    the peak. Returns the Axes."""
    ax = _axes(ax)
    peak = df.attrs.get("peak_bytes", (df["all_max"].max(),))[0]
    scale, unit = _unit(max(peak, df["all_max"].max(), 1))
    t = df["time"]
    ax.fill_between(t, df["all_min"] / scale, df["all_max"] / scale, step="pre",
                    color="0.85", label="all objects: least to most in the bin")
    ax.fill_between(t, df["live_bytes_lo"] / scale, df["live_bytes_hi"] / scale, step="pre",
                    alpha=0.3, color="C0")
    ax.step(t, df["live_bytes"] / scale, where="pre", color="C0", label="live (95% interval)")
    if "peak_time" in df.attrs:
        ax.axvline(df.attrs["peak_time"], color="C3", linestyle=":", label="peak")
    ax.set_xlabel("time (s)")
    ax.set_ylabel(f"live heap ({unit})")
    if title:
        ax.set_title(title)
    ax.legend(loc="upper left", fontsize="small")
    return ax


def _hist(ax, lo, hi, values, err_lo, err_hi, xlabel, ylabel):
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    keep = np.asarray(values) > 0
    ax.bar(lo[keep], np.asarray(values)[keep], width=(hi - lo)[keep], align="edge",
           edgecolor="white", color="C0")
    mid = np.sqrt(lo[keep] * hi[keep]) if (lo[keep] > 0).all() else (lo[keep] + hi[keep]) / 2
    v = np.asarray(values)[keep]
    ax.errorbar(mid, v, yerr=[v - np.asarray(err_lo)[keep], np.asarray(err_hi)[keep] - v],
                fmt="none", ecolor="0.3", capsize=2)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return ax


def sizes(stats, ax=None, weight="objects"):
    """Allocations (weight="objects") or bytes by size, powers of two of
    bytes, with 95% intervals (a Trace.stats result). Returns the Axes."""
    h = stats.size_log2
    h = h[h["lo"] >= 1]
    return _hist(_axes(ax), h["lo"], h["hi"], h[weight], h[weight + "_lo"], h[weight + "_hi"],
                 "size (bytes)", f"estimated {weight}")


def lifetimes(stats, ax=None, weight="objects"):
    """Allocations (or bytes) by lifetime, thirds of decades of seconds,
    collected objects only (a Trace.stats result). Returns the Axes."""
    h = stats.lifetime_fine
    h = h[h["lo"] > 0]
    ax = _hist(_axes(ax), h["lo"], h["hi"], h[weight], h[weight + "_lo"], h[weight + "_hi"],
               "lifetime (s)", f"estimated {weight}")
    ax.set_title(f"never collected: {stats.live_at_end[weight]:.4g} {weight}", fontsize="small")
    return ax
