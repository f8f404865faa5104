#!/usr/bin/env bash
# bench/unwind.sh: the CPU time of the profiler's stack walks, by unwinder.
#
# Builds tests/profiler/unwind_cases.c twice (-O2, with and without frame
# pointers: in the second no function keeps a frame record, so AUTO steps
# through every frame by its call-frame information) and bench/unwind_walks.c
# against the build's static profiler library, then times 20,000 walks per
# unwinder: AUTO (frame records, CFI steps, libunwind as a last resort), the
# LIBUNWIND mode (libunwind's cached walk) and fp (frame records only: wrong
# without them, shown as the floor). Prints microseconds per walk and the
# ratio to libunwind's in the same run. Environment: BUILD_DIR.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD_DIR:-$root/build}
out=$here/out
mkdir -p "$out"
lib=$build/libmemtrace_profiler_static.a
[ -f "$lib" ] || { echo "unwind.sh: no $lib: run make build first" >&2; exit 1; }
cc -O2 -fPIC -shared -fno-omit-frame-pointer "$root/tests/profiler/unwind_cases.c" -o "$out/unwind_cases_fp.so"
cc -O2 -fPIC -shared -fomit-frame-pointer "$root/tests/profiler/unwind_cases.c" -o "$out/unwind_cases_nofp.so"
cc -O2 -fno-omit-frame-pointer -I"$root/src" -I"$root/tests/profiler" "$here/unwind_walks.c" "$lib" -ldl -lpthread -lm \
  -o "$out/unwind_walks"
for variant in fp nofp; do
  echo "call chains built $([ $variant = fp ] && echo with || echo without) frame pointers:"
  "$out/unwind_walks" "$out/unwind_cases_$variant.so" libunwind auto fp |
    awk '{ t[NR] = $2; line[NR] = $0 } END {
           for (i = 1; i <= NR; i++) printf "  %s  x%.2f\n", line[i], t[i] / t[1] }'
done
echo "call chains built with frame pointers, through CPython's perf trampolines (as CPython 3.12+ -X perf"
echo "runs Python functions; fp: the trampolines' callers skipped, libunwind: stopped or skipping):"
"$out/unwind_walks" -t "$out/unwind_cases_fp.so" libunwind auto fp |
  awk '{ t[NR] = $2; line[NR] = $0 } END {
         for (i = 1; i <= NR; i++) printf "  %s  x%.2f\n", line[i], t[i] / t[1] }'
