#!/usr/bin/env bash
# bench/mappings.sh: what tracing anonymous mappings costs a program that
# maps and unmaps all the time.
#
# bench/mmap_pairs makes PAIRS (1M) mappings of BYTES (4096), writes one
# byte of each and unmaps it. bench/ab.sh runs it plain, under `memtrace
# run` at the default rate, the same with MEMTRACE_MAPPINGS=0 (the heap
# alone: what the mappings add is the difference), and at 1e-3, round-robin
# on one CPU at a time, and prints the median CPU-time ratios to plain.
# Target: at most 1.05x plain at the default rate. Environment: PAIRS,
# BYTES, ROUNDS (15), BUILD_DIR.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD_DIR:-$root/build}
pairs=${PAIRS:-1000000} bytes=${BYTES:-4096} rounds=${ROUNDS:-15}
[ -x "$build/memtrace" ] || { echo "mappings.sh: build first (make build)" >&2; exit 1; }
out=$here/out
mkdir -p "$out"
cc -O2 "$here/mmap_pairs.c" -o "$out/mmap_pairs"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "mappings.sh: $pairs mmap/munmap pairs of $bytes bytes, $rounds rounds"
"$here/ab.sh" -r "$rounds" -c plain= \
  -c default="$build/memtrace run -q -o $tmp/d.ctf --" \
  -c heap-only="MEMTRACE_MAPPINGS=0 $build/memtrace run -q -o $tmp/h.ctf --" \
  -c rate-1e-3="$build/memtrace run -q --rate 1e-3 -o $tmp/r.ctf --" \
  -- "$out/mmap_pairs" "$pairs" "$bytes" | tee "$tmp/ab.txt"
awk '$1 == "default" { sub(/^x/, "", $4); printf "default rate: %.3fx plain (target: at most 1.05x): %s\n", $4, ($4 <= 1.05 ? "met" : "missed") }' "$tmp/ab.txt"
