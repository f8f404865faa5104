#!/usr/bin/env bash
# bench/long_traces.sh: the tools' CPU time and peak memory as a trace
# grows. Ordinary traces (mt_gen_trace --stacks 3000: a program allocating
# from 3,000 distinct stacks) of each size in SIZES (events; default 12M
# and 120M, about 122 MB and 1.2 GB) are generated into a scratch folder
# (never kept: TRACES_DIR, default a temporary one), and on each `leaks`,
# `top`, `flamegraph --weight bytes` and `timeline` run once: CPU seconds
# (user + sys) and peak RSS. The target for traces of any length: each of
# these under 256 MB at 120M events, at no more CPU than a whole load.
# Environment: SIZES, BUILD_DIR, TRACES_DIR.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD_DIR:-$root/build}
sizes=${SIZES:-12000000 120000000}
[ -x "$build/memtrace" ] && [ -x "$build/mt_gen_trace" ] ||
  { echo "long_traces.sh: build first (make build)" >&2; exit 1; }
dir=${TRACES_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/memtrace-long.XXXXXX")}
mkdir -p "$dir"
[ -n "${TRACES_DIR:-}" ] || trap 'rm -rf "$dir"' EXIT

measure() { # measure LABEL CMD...: prints "CPU s  peak MB"
  local label=$1
  shift
  /usr/bin/time -f "%U %S %M" -o "$dir/time.txt" "$@" > /dev/null
  awk -v l="$label" '{ printf "  %-34s %8.2f s %9.1f MB\n", l, $1 + $2, $3 / 1024 }' "$dir/time.txt"
}

for n in $sizes; do
  t=$dir/ordinary-$n.ctf
  [ -s "$t" ] || "$build/mt_gen_trace" "$t" --events "$n" --stacks 3000 > /dev/null
  echo "== $n events ($(($(stat -L -c %s "$t") / 1000000)) MB)"
  measure "leaks" "$build/memtrace" leaks -n 10 "$t"
  measure "top --never-collected" "$build/memtrace" top --never-collected -n 10 "$t"
  measure "top" "$build/memtrace" top -n 10 "$t"
  measure "flamegraph --weight bytes" "$build/memtrace" flamegraph --weight bytes "$t"
  measure "timeline" "$build/memtrace" timeline "$t"
done
