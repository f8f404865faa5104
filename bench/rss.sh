#!/usr/bin/env bash
# bench/rss.sh: what memtrace run's resident-memory sampler costs.
#
# Runs `memtrace run -o TRACE -- sleep SECONDS+2` and measures the CPU time
# of memtrace run's own process (the sampler's thread; the program is
# another process) over SECONDS with `perf stat -e task-clock -p` (the
# scheduler's exact accounting, not the tick-sampled one of getrusage),
# as a share of one CPU. Target: at most 0.5%. Environment: SECONDS (10),
# BUILD_DIR.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD_DIR:-$root/build}
seconds=${SECONDS_TO_RUN:-10}
command -v perf > /dev/null || { echo "rss.sh: needs perf (linux-perf)" >&2; exit 1; }
[ -x "$build/memtrace" ] || { echo "rss.sh: build first (make build)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/memtrace" run -o "$tmp/t.ctf" -- sleep $((seconds + 2)) > /dev/null 2>&1 &
sleep 1
run=$(pgrep -f "memtrace run -o $tmp/t.ctf" | head -1)
ms=$(perf stat -x, -e task-clock -p "$run" -- sleep "$seconds" 2>&1 | awk -F, '/task-clock/ { print $1 }')
wait
samples=$(grep -vc '^#' "$tmp/t.ctf.rss")
awk -v ms="$ms" -v s="$seconds" -v n="$samples" 'BEGIN {
  printf "resident-memory sampler: %.1f ms of CPU in %d s, %.2f%% of one CPU (target: at most 0.5%%); %d samples\n",
         ms, s, ms / (s * 1000) * 100, n }'
