"""memtrace_c: memory traces in Python, at C speed.

Reads the traces of memtrace-c and of OCaml's memtrace (the same format)
with libmemtrace's analysis, the code behind the `memtrace` command and its
viewer, so that the figures here equal theirs to the last digit:

    import memtrace_c as mt
    t = mt.open("trace.ctf")
    t.info                          # executable, pid, host, start_time, ...
    t.objects(size=(1024, None))    # one row per sampled allocation
    t.top(by="line", n=20, live_at="peak")
    t.leaks(); t.timeline(); t.stats(chunks=10)
    t.backtrace(bt_id)
    live = mt.follow("app.ctf")     # a trace still being written
    live.update()                   # reads what was written since

Filters are keywords (memtrace_c.filters). Bad traces raise TraceError,
bad filters ValueError.
"""

from ._core import TraceError, library_version
from .trace import SOURCES, Trace, follow, open

__version__ = library_version
__all__ = ["open", "follow", "Trace", "TraceError", "SOURCES", "__version__"]
