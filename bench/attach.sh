#!/usr/bin/env bash
# bench/attach.sh: memtrace attach's pause and its overhead.
#
# The pause: bench/attach_load THREADS 0 (THREADS threads allocating a
# little and sleeping) is attached to and detached from ROUNDS times for
# each THREADS in 1 10 50; printed, the medians of what memtrace attach
# reports: how long every thread was stopped at the attach, how long the
# one thread that loads the profiler was, and how long it was at the
# detach. Target: under 100 ms with 50 threads.
#
# The overhead: bench/attach_load 1 PAIRS does its work (PAIRS malloc/free
# pairs) plain, under `memtrace run --rate R`, and attached at rate R
# before the work starts; printed, the median CPU time of the work and its
# ratio to plain, and the attached run's ratio to the run under memtrace
# run of the same round. Target: attached as memtrace run.
# Environment: ROUNDS (7), PAIRS (4000000), RATE (1e-4), BUILD_DIR.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD_DIR:-$root/build}
rounds=${ROUNDS:-7} pairs=${PAIRS:-4000000} rate=${RATE:-1e-4}
[ -x "$build/memtrace" ] || { echo "attach.sh: build first (make build)" >&2; exit 1; }
out=$here/out
mkdir -p "$out"
cc -O2 -g -fno-omit-frame-pointer "$here/attach_load.c" -o "$out/attach_load" -lpthread
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2> /dev/null; rm -rf "$tmp"' EXIT

wait_ready() { for _ in $(seq 400); do grep -q "^${2:-ready}" "$1" 2> /dev/null && return 0; sleep 0.025; done; return 1; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

echo "== the pause (median of $rounds attaches and detaches)"
printf '%8s %18s %22s %12s\n' threads "all stopped (ms)" "loading thread (ms)" "detach (ms)"
for n in 1 10 50; do
  "$out/attach_load" "$n" 0 > "$tmp/load.out" &
  pid=$!
  wait_ready "$tmp/load.out"
  sleep 0.3
  : > "$tmp/pauses"
  for _ in $(seq "$rounds"); do
    "$build/memtrace" attach -q --duration 0.1 -o "$tmp/p.ctf" "$pid" 2> "$tmp/err"
    a=$(sed -n 's/.*its threads were stopped for \([0-9.]*\) ms (one of them for \([0-9.]*\) ms).*/\1 \2/p' "$tmp/err")
    d=$(sed -n 's/.*one of its threads was stopped for \([0-9.]*\) ms.*/\1/p' "$tmp/err")
    echo "$a $d" >> "$tmp/pauses"
  done
  kill -USR2 "$pid"
  wait "$pid"
  printf '%8d %18s %22s %12s\n' "$n" "$(cut -d' ' -f1 "$tmp/pauses" | median)" \
    "$(cut -d' ' -f2 "$tmp/pauses" | median)" "$(cut -d' ' -f3 "$tmp/pauses" | median)"
done

echo "== the overhead: $pairs pairs on 1 thread at rate $rate (median of $rounds runs)"
run_one() { # run_one MODE: prints the work's CPU ms
  local mode=$1 pid
  case $mode in
    plain) "$out/attach_load" 1 "$pairs" > "$tmp/w.out" & ;;
    run) "$build/memtrace" run -q --rate "$rate" -o "$tmp/r.ctf" -- "$out/attach_load" 1 "$pairs" > "$tmp/w.out" & ;;
    attached) "$out/attach_load" 1 "$pairs" > "$tmp/w.out" & ;;
  esac
  wait_ready "$tmp/w.out"
  pid=$(pgrep -n -f "attach_load 1 $pairs")
  local at=
  if [ "$mode" = attached ]; then
    "$build/memtrace" attach -q --rate "$rate" -o "$tmp/a.ctf" "$pid" 2> /dev/null &
    at=$!
    sleep 0.5
  fi
  kill -USR1 "$pid"
  wait_ready "$tmp/w.out" work-cpu-ms
  [ -n "$at" ] && { kill -INT "$at"; wait "$at" || true; }
  kill -USR2 "$pid"
  wait
  sed -n 's/^work-cpu-ms //p' "$tmp/w.out"
}
for mode in plain run attached; do
  : > "$tmp/$mode"
done
for _ in $(seq "$rounds"); do
  for mode in plain run attached; do run_one "$mode" >> "$tmp/$mode"; done
done
base=$(median < "$tmp/plain")
for mode in plain run attached; do
  m=$(median < "$tmp/$mode")
  awk -v m="$m" -v b="$base" -v k="$mode" 'BEGIN { printf "%-10s %10.1f ms  x%.3f\n", k, m, m / b }'
done
# The machine's speed drifts between rounds more than the two differ, so
# each round's attached run is compared with the run made just before it:
# the median of those ratios, and their middle half.
paste "$tmp/attached" "$tmp/run" | awk '{ print $1 / $2 }' | sort -g > "$tmp/ratios"
awk '{ v[NR] = $1 } END { q = int((NR + 3) / 4); printf "attached / run, round by round: median %.3f, middle half %.3f-%.3f\n", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[q], v[NR + 1 - q] }' "$tmp/ratios"
