"""python_load.py TRACE: mt.open(TRACE) and t.objects(), as a notebook's
first cell does; prints "seconds df_bytes raw_bytes peak_growth_kib rows":
their CPU time, the DataFrame's memory (pandas' own count, deep), its
columns' raw size (rows x bytes of each column's element), and how much
the process's peak RSS grew during objects(). The other side of
bench/python.sh."""
import resource
import sys
import time

import memtrace_c as mt


def peak_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


t0 = time.process_time()
t = mt.open(sys.argv[1])
before = peak_kib()
df = t.objects()
t1 = time.process_time()
raw = sum(df[c].cat.codes.dtype.itemsize if df[c].dtype == "category" else df[c].dtype.itemsize
          for c in df.columns) * len(df)
print(f"{t1 - t0:.6f} {int(df.memory_usage(deep=True).sum())} {raw} {peak_kib() - before} "
      f"{len(df)}")
