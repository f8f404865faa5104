"""Filters as keyword arguments: the command line's filter language.

Each keyword becomes one parameter of the library's filter language
(include/memtrace/filter.h), so a keyword means exactly what the matching
`memtrace` option means:

    keyword      value                                 option
    alloc        (from, to) seconds                    --time FROM..TO
    live_at      seconds, "peak" or "end"              --live-at, --live-at-peak, --live-at-end
    collected    (from, to) seconds, or "never"        --collected, --never-collected
    size         (min, max) bytes (ints, or "1k"...)   --size MIN..MAX
    lifetime     (min, max) seconds                    --lifetime MIN..MAX
    source       "minor", "major", "external", or of the   --source S[,S...]
                 external "mapping" (anonymous mappings)
                 or "heap" (the others), or a list of them
    inside       a function name's substring           --inside
    not_inside   a function name's substring           --not-inside
    hide         a substring or a list of them         --hide

Either side of a range may be None (open). Time ranges are half-open
[from, to); size and lifetime ranges are closed. A name of inside,
not_inside or hide that no function of the trace has in its name is warned
of (UserWarning), as the command line warns of it.
"""

import math
import numbers

# keyword -> the filter language's parameter
PARAMETERS = {
    "alloc": "alloc",
    "live_at": "live",
    "collected": "collected",
    "size": "size",
    "lifetime": "lifetime",
    "source": "source",
    "inside": "inside",
    "not_inside": "not_inside",
    "hide": "hide",
}


def _number(keyword, x):
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise ValueError(f"{keyword}: {x!r} is not a number")
    x = float(x) if not isinstance(x, numbers.Integral) else int(x)
    if isinstance(x, float) and not math.isfinite(x):
        raise ValueError(f"{keyword}: {x!r} is not a finite number")
    return repr(x)


def _bound(keyword, x, sizes):
    if x is None:
        return ""
    if sizes and isinstance(x, str):
        return x  # "1k", "2M": the language's own suffixes
    return _number(keyword, x)


def _range(keyword, value, sizes=False):
    if isinstance(value, str) and ".." in value:
        return value  # the language's own spelling, "1k..4k"
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"{keyword}: give a pair (from, to), either side None; got {value!r}")
    return _bound(keyword, value[0], sizes) + ".." + _bound(keyword, value[1], sizes)


def _names(keyword, value):
    items = [value] if isinstance(value, str) else list(value)
    if not items:
        raise ValueError(f"{keyword}: an empty list (leave the keyword out, or give None)")
    for s in items:
        if not isinstance(s, str) or not s:
            raise ValueError(f"{keyword}: {s!r} is not a non-empty string")
        if "," in s:
            raise ValueError(f"{keyword}: {s!r} contains a comma; give a list instead")
    return ",".join(items)


def _text(keyword, value):
    if keyword in ("alloc", "lifetime"):
        return _range(keyword, value)
    if keyword == "size":
        return _range(keyword, value, sizes=True)
    if keyword == "live_at":
        return value if isinstance(value, str) else _number(keyword, value)
    if keyword == "collected":
        return value if isinstance(value, str) else _range(keyword, value)
    if keyword in ("source", "hide"):
        return _names(keyword, value)
    if not isinstance(value, str):
        raise ValueError(f"{keyword}: {value!r} is not a string")
    return value


def spec(filters):
    """The (keyword, parameter, text) triples the extension takes; conditions
    given as None are left out. Raises ValueError naming a bad keyword."""
    out = []
    for keyword, value in filters.items():
        if keyword not in PARAMETERS:
            known = ", ".join(PARAMETERS)
            raise ValueError(f"{keyword}: no such filter (filters: {known})")
        if value is None:
            continue
        out.append((keyword, PARAMETERS[keyword], _text(keyword, value)))
    return out
