#!/usr/bin/env bash
# bench/redirect.sh: what tracing costs a program whose allocator is linked
# in (Debian's libjemalloc.a), whose malloc family the interposer redirects
# (docs/decisions.md).
#
# bench/pairs N (malloc and free of 32 bytes, N times) and
# bench/alloc_workload (blocks of mixed sizes kept for a while, 1 thread),
# each linked with libjemalloc.a, run by bench/ab.sh: plain, under `memtrace
# run` at the default rate, and with MEMTRACE_REDIRECT=0 (the allocator
# left alone: the interposer's idle cost). For comparison, the same
# programs linked dynamically with jemalloc preloaded after the interposer
# (the next allocator, reached through the GOT) under `memtrace run`.
# Prints the median CPU-time ratios to plain. Environment: PAIRS
# (20000000), ROUNDS (11), BUILD_DIR.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD_DIR:-$root/build}
pairs=${PAIRS:-20000000} rounds=${ROUNDS:-11}
[ -x "$build/memtrace" ] || { echo "redirect.sh: build first (make build)" >&2; exit 1; }
je=$(ls /usr/lib/*/libjemalloc.a 2>/dev/null | head -1)
[ -n "$je" ] || { echo "redirect.sh: needs libjemalloc.a (apt-get install libjemalloc-dev)" >&2; exit 1; }
jeso=$(ls /usr/lib/*/libjemalloc.so.2 2>/dev/null | head -1)
out=$here/out
mkdir -p "$out"
cc -O2 "$here/pairs.c" -o "$out/pairs_je" "$je" -lpthread -ldl -lm -lstdc++
cc -O2 -g -fno-omit-frame-pointer "$here/alloc_workload.c" -o "$out/workload_je" "$je" -lpthread -ldl -lm -lstdc++
cc -O2 "$here/pairs.c" -o "$out/pairs"
cc -O2 -g -fno-omit-frame-pointer "$here/alloc_workload.c" -o "$out/alloc_workload" -lpthread
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for load in "pairs $pairs" "workload 1 1"; do
  read -r prog args <<< "$load"
  # shellcheck disable=SC2086 # args: words
  echo "== $prog, jemalloc linked in: plain, traced (redirected), left alone"
  "$here/ab.sh" -r "$rounds" -c plain= \
    -c traced="$build/memtrace run -q -o $tmp/t.ctf --" \
    -c left-alone="MEMTRACE_REDIRECT=0 $build/memtrace run -q -o $tmp/l.ctf --" \
    -- "$out/${prog}_je" $args
  if [ -n "$jeso" ]; then
    dyn=$out/$prog
    [ "$prog" = workload ] && dyn=$out/alloc_workload
    echo "== $prog, jemalloc as the next allocator (preloaded after the interposer)"
    "$here/ab.sh" -r "$rounds" -c plain="LD_PRELOAD=$jeso" \
      -c traced="LD_PRELOAD=$jeso $build/memtrace run -q -o $tmp/n.ctf --" \
      -- "$dyn" $args
  fi
done
