#!/usr/bin/env bash
# bench/viewer.sh: memtrace view on the large benchmark trace.
#
# Measures the time from start to usable (/api/info, unfiltered /api/flame
# and /api/timeline answered), the latency of filter changes (time range,
# live=peak, size range, inside=, source=, focus, hide), and the server's
# peak RSS (VmHWM). The server listens at once and loads in the background
# (/api/info waits for the load, or for the first preview of a trace of
# 256 MB or more: docs/viewer.md, "Command lines"). MEMTRACE_VIEW_DEBUG=1 in the environment
# prints the stage timings (load, call tree, precomputed flame, requests).
# Targets (docs/benchmarks.md): usable <= 3 s, each filter change <= 0.5 s,
# RSS <= 1 GB. Uses the trace bench/run.sh / bench/tools.sh
# generate (12M events), generating it if missing, and also any
# bench/out/ordinary-*.ctf trace (mt_gen_trace --stacks, written by bench/tools.sh) present.
# Environment: BUILD_DIR, EVENTS (12000000), PORT (18600).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=$here/out
build=${BUILD_DIR:-$root/build}
events=${EVENTS:-12000000}
port=${PORT:-18600}
mkdir -p "$out"
if [ ! -x "$build/memtrace" ] || [ ! -x "$build/mt_gen_trace" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
  cmake --build "$build" -j"$(nproc)" --target memtrace_cli mt_gen_trace > /dev/null
fi
trace=$(ls "$out"/bench-v2-e"$events"-s1-*.ctf 2> /dev/null | head -1 || true)
if [ -z "$trace" ]; then
  trace=$out/bench-v2-e$events-s1-tools.ctf
  "$build/mt_gen_trace" "$trace" --events "$events" --seed 1 > /dev/null
fi
traces=("$trace")
for t in "$out"/ordinary-*.ctf; do [ -e "$t" ] && traces+=("$t"); done

now() { date +%s.%N; }
get() { curl -sf -o /dev/null -w '%{time_total}' "http://127.0.0.1:$port$1"; }

for t in "${traces[@]}"; do
  echo "trace: $(basename "$t") ($(stat -c %s "$t") bytes), load $(cut -d' ' -f1 /proc/loadavg)"
  start=$(now)
  "$build/memtrace" view --port "$port" "$t" > "$out/viewer.url" 2> "$out/viewer.log" &
  pid=$!
  until grep -q serving "$out/viewer.url" 2> /dev/null; do
    kill -0 $pid 2> /dev/null || { echo "memtrace view failed"; exit 1; }
    sleep 0.05
  done
  port_used=$(sed 's/.*:\([0-9]*\)\/$/\1/' "$out/viewer.url")
  port=$port_used
  serving=$(now)
  get /api/info > /dev/null # waits for the load
  info=$(now)
  get /api/flame > /dev/null
  get "/api/timeline?bins=600" > /dev/null
  usable=$(now)
  printf "  %-34s %6.2f s (listening after %.2f s, info after %.2f s)\n" "start to usable" \
    "$(echo "$usable - $start" | bc)" "$(echo "$serving - $start" | bc)" "$(echo "$info - $start" | bc)"
  # a long trace is usable on a preview (its first part) first: the filters
  # below are timed on the whole trace
  until curl -sf "http://127.0.0.1:$port/api/status" | grep -q '"state":"ready"'; do sleep 0.1; done
  printf "  %-34s %6.2f s\n" "start to the whole trace shown" "$(echo "$(now) - $start" | bc)"
  # the page then reloads its first view for the new generation
  t0=$(now)
  get /api/info > /dev/null
  get /api/flame > /dev/null
  get "/api/timeline?bins=600" > /dev/null
  printf "  %-34s %6.2f s\n" "its first view" "$(echo "$(now) - $t0" | bc)"
  focus=$(curl -s "http://127.0.0.1:$port/api/functions?n=1" | sed 's/.*"id":\([0-9]*\).*/\1/' | head -c 20)
  for q in "summary?alloc=10..60" "flame?alloc=10..60" "flame?live=peak" "timeline?live=peak&bins=600" \
           "flame?size=100..10000" "flame?inside=parse" "flame?source=external" \
           "functions?alloc=10..60" "sites?live=peak" "paths?live=peak" "leaks" "histograms" \
           "stats?live=peak" \
           "flame?focus=$focus" "flame?hide=std"; do
    printf "  %-34s %6.3f s\n" "$q" "$(get "/api/$q")"
  done
  printf "  %-34s %6.0f MB\n" "peak RSS (VmHWM)" "$(awk '/VmHWM/ { print $2 / 1024 }' /proc/$pid/status)"
  kill -INT $pid
  wait $pid || true
  port=$((port + 1))
done
