#!/usr/bin/env bash
# bench/stages.sh: where a sample's time goes, stage by stage.
#
# Builds the interposer four more times, each with MT_BENCH_STAGE set
# (src/engine/engine_internal.h): a sample then stops after its sampling
# decision (1), its header and the free's slow path (2), its callstack (3),
# or its events queued and drained but neither named, encoded nor written
# (4). Runs bench/alloc_workload.c (1 thread) side by side (bench/ab.sh:
# round-robin, pinned, CPU time) plain, with the interposer idle, tracing at
# rate 1e-12 (nothing sampled), each stage and the whole, at each RATE, and
# prints what each step adds: in ms, and in ns per sampled allocation (the
# count of the whole run's trace). Differences of medians of runs that
# each move by 1-2%: read the small steps with their run-to-run spread.
# Environment: ROUNDS (20), MILLIONS (allocations, 4), RATES ("1e-3 1e-5"),
# BUILD_DIR (the build whose library is the whole; built if missing).
# Writes bench/out/stages.txt.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=$here/out
build=${BUILD_DIR:-$root/build}
rounds=${ROUNDS:-20}
millions=${MILLIONS:-4}
rates=${RATES:-1e-3 1e-5}
mkdir -p "$out"
log() { echo "stages.sh: $*" >&2; }

configure() { # DIR [FLAGS]: a RelWithDebInfo build of the interposer alone
  cmake -S "$root" -B "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMT_TESTS=OFF \
    ${2:+"-DCMAKE_C_FLAGS=$2"} > /dev/null
  cmake --build "$1" -j"$(nproc)" --target memtrace_preload > /dev/null
}
if [ ! -f "$build/libmemtrace_preload.so" ] || [ ! -x "$build/memtrace" ]; then
  log "building into $build"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
  cmake --build "$build" -j"$(nproc)" --target memtrace_cli memtrace_preload > /dev/null
fi
for s in 1 2 3 4; do
  log "building the stage-$s interposer"
  configure "$out/stage$s" "-DMT_BENCH_STAGE=$s"
done

work=$out/alloc_workload
cc -O2 -g -fno-omit-frame-pointer "$here/alloc_workload.c" -o "$work" -lpthread
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

report=$out/stages.txt
{
  cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
  echo "# memtrace-c: a sample's cost by stage ($(date -u +%Y-%m-%d), ${cpu:-an unknown processor})"
  echo "# bench/alloc_workload 1 thread, $millions M allocations; $rounds rounds of bench/ab.sh; medians"
} > "$report"

lib=$build/libmemtrace_preload.so
for rate in $rates; do
  log "rate $rate: $rounds rounds"
  cfg=(-c plain=
    -c idle="LD_PRELOAD=$lib"
    -c nosample="LD_PRELOAD=$lib MEMTRACE_RATE=1e-12 MEMTRACE=$tmp/n.ctf")
  for s in 1 2 3 4; do
    cfg+=(-c "stage$s=LD_PRELOAD=$out/stage$s/libmemtrace_preload.so MEMTRACE_RATE=$rate MEMTRACE=$tmp/s$s.ctf")
  done
  cfg+=(-c "whole=LD_PRELOAD=$lib MEMTRACE_RATE=$rate MEMTRACE=$tmp/w.ctf")
  "$here/ab.sh" -r "$rounds" "${cfg[@]}" -- "$work" 1 "$millions" 2> "$tmp/ab.err" > "$tmp/ab.txt" ||
    { cat "$tmp/ab.err" >&2; exit 1; }
  n=$("$build/memtrace" info "$tmp/w.ctf" | awk '$1 == "total" {print $2}')
  [ "${n:-0}" -gt 0 ] || { log "rate $rate: no sampled allocation in the trace"; exit 1; }
  # ab.sh's lines: NAME MEDIAN ms xRATIO [Q1-Q3] +DIFF ms
  awk -v rate="$rate" -v n="$n" '
    BEGIN {
      what["idle"] = "the interposer, not tracing (every malloc and free)"
      what["nosample"] = "tracing, nothing sampled (start, end, clock resyncs)"
      what["stage1"] = "the sampling decision"
      what["stage2"] = "the header and the free slow path"
      what["stage3"] = "the callstack (unwinding)"
      what["stage4"] = "queueing the alloc and collect events, two clock readings"
      what["whole"] = "naming, encoding and writing the events"
    }
    $1 == "plain" { prev = $2; printf "\nrate %s: %d sampled allocations; plain %.2f ms\n", rate, n, $2; next }
    $1 in what {
      step = $2 - prev; prev = $2
      per = ($1 == "idle" || $1 == "nosample") ? "" : sprintf("%6.0f ns per sampled allocation", step * 1e6 / n)
      printf "  %-9s %+7.2f ms  (%s plain so far)  %s  %s\n", $1, step, $4, per, what[$1]
    }' "$tmp/ab.txt" >> "$report"
done
cat "$report"
