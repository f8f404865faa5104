#!/usr/bin/env bash
# The commands that load less than every object (leaks, top, diff,
# flamegraph by bytes or samples, timeline) print what they print with
# every object loaded (MEMTRACE_LOAD=whole), byte for byte, under filters
# of each kind.
# Usage: keep_less.sh MEMTRACE TRACES NAME
set -uo pipefail
memtrace=$1 traces=$2 name=$3
trace=$traces/$name.ctf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
filters=("" "--size 64..4k" "--time 0.01..0.1" "--source major" "--never-collected"
  "--lifetime ..0.01" "--collected 0.05.." "--live-at 0.05" "--inside Stdlib" "--hide Stdlib__Map")
commands=("leaks -n 0 --format json" "top -n 0 --format json" "top --by line -n 0 --format csv"
  "top --sort objects -n 5" "flamegraph --weight bytes" "flamegraph --weight samples"
  "timeline --bins 57 --format json" "timeline --bins 400 --format csv"
  "diff -n 0 --format json $traces/workload-1e-3.ctf" "diff --by line --format csv $traces/ocamlopt.ctf")
for c in "${commands[@]}"; do
  for f in "${filters[@]}"; do
    # leaks name what is never collected: a condition on collection contradicts them
    [[ $c == leaks* && $f == --collected* ]] && continue
    # shellcheck disable=SC2086
    "$memtrace" $c $f "$trace" > "$tmp/kept" 2> "$tmp/kept.err"
    kept=$?
    # shellcheck disable=SC2086
    MEMTRACE_LOAD=whole "$memtrace" $c $f "$trace" > "$tmp/whole" 2> "$tmp/whole.err"
    whole=$?
    if [ "$kept" -eq 0 ] && [ "$whole" -eq 0 ] && cmp -s "$tmp/kept" "$tmp/whole" &&
      [ -s "$tmp/kept" ]; then
      passed=$((passed + 1))
    else
      echo "FAIL [$name] memtrace $c $f: exit $kept/$whole, outputs differ or are empty" >&2
      diff "$tmp/kept" "$tmp/whole" | head -5 >&2
      head -3 "$tmp/kept.err" >&2
      failed=$((failed + 1))
    fi
  done
done
echo "keep_less [$name]: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
