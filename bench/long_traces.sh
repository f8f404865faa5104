#!/usr/bin/env bash
# bench/long_traces.sh: the tools' CPU time and peak memory as a trace
# grows. Ordinary traces (mt_gen_trace --stacks 3000: a program allocating
# from 3,000 distinct stacks) of each size in SIZES (events; default 12M
# and 120M, about 122 MB and 1.2 GB) are generated into a scratch folder
# (never kept: TRACES_DIR, default a temporary one). On each, `leaks`,
# `top` (three ways), `flamegraph --weight bytes` and `timeline` run
# ROUNDS times (default 1) as they are, and as many with every object
# loaded (MEMTRACE_LOAD=whole: the same output), alternately: the least
# CPU seconds (user + sys) and peak RSS of each way, and the CPU ratio.
# The target for traces of any length: each tool under 256 MB at 120M
# events, at no more CPU than with every object loaded.
# Environment: SIZES, BUILD_DIR, TRACES_DIR, ROUNDS.
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

rounds=${ROUNDS:-1}
run() { # run CMD...: "cpu peak_kb" of one run
  /usr/bin/time -f "%U %S %M" -o "$dir/time.txt" "$@" > /dev/null
  awk '{ printf "%.2f %d\n", $1 + $2, $3 }' "$dir/time.txt"
}
measure() { # measure LABEL CMD...: the least CPU and the peak of each way, alternately
  local label=$1 r kept whole kc= kp wc= wp c p
  shift
  for ((r = 0; r < rounds; r++)); do
    read -r c p < <(run "$@")
    if [ -z "$kc" ] || awk -v a="$c" -v b="$kc" 'BEGIN { exit !(a < b) }'; then kc=$c; fi
    kp=$p
    read -r c p < <(MEMTRACE_LOAD=whole run "$@")
    if [ -z "$wc" ] || awk -v a="$c" -v b="$wc" 'BEGIN { exit !(a < b) }'; then wc=$c; fi
    wp=$p
  done
  awk -v l="$label" -v kc="$kc" -v kp="$kp" -v wc="$wc" -v wp="$wp" 'BEGIN {
    printf "  %-28s %8.2f s %9.1f MB   every object: %8.2f s %9.1f MB   CPU %5.2fx\n",
      l, kc, kp / 1024, wc, wp / 1024, kc / wc }'
}

for n in $sizes; do
  t=$dir/ordinary-$n.ctf
  [ -s "$t" ] || "$build/mt_gen_trace" "$t" --events "$n" --stacks 3000 > /dev/null
  echo "== $n events ($(($(stat -L -c %s "$t") / 1000000)) MB)"
  measure "leaks" "$build/memtrace" leaks -n 10 "$t"
  measure "top --never-collected" "$build/memtrace" top --never-collected -n 10 "$t"
  measure "top" "$build/memtrace" top -n 10 "$t"
  measure "top --by line --size 1k.." "$build/memtrace" top --by line --size 1k.. -n 10 "$t"
  measure "flamegraph --weight bytes" "$build/memtrace" flamegraph --weight bytes "$t"
  measure "timeline" "$build/memtrace" timeline "$t"
done
