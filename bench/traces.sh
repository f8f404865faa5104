#!/usr/bin/env bash
# bench/traces.sh: several traces read for one answer, on every core
# against one core.
#
# `memtrace top` of 4 bench-size traces (the ordinary trace of
# bench/tools.sh, 12M events, generated if missing, under 4 names) loads
# them on as many threads as there are cores. The baseline is the same
# command held to one core (taskset -c 0): the traces read one after
# another. Prints the wall time of each, best of REPEAT, and their ratio.
# Target: at most 0.6x on 2 cores. Environment: REPEAT (3), EVENTS
# (12000000), NTRACES (4), BUILD_DIR.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=$here/out
build=${BUILD_DIR:-$root/build}
repeat=${REPEAT:-3}
events=${EVENTS:-12000000}
ntraces=${NTRACES:-4}
mkdir -p "$out"
log() { echo "traces.sh: $*" >&2; }

if [ ! -x "$build/memtrace" ] || [ ! -x "$build/mt_gen_trace" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
  cmake --build "$build" -j"$(nproc)" --target memtrace_cli mt_gen_trace > /dev/null
fi
command -v taskset > /dev/null || { log "needs taskset (util-linux)"; exit 1; }
[ -x /usr/bin/time ] || { log "needs GNU time (apt-get install time)"; exit 1; }
ordinary=$out/ordinary-v2-e$events-s1-k3000.ctf
if [ ! -f "$ordinary" ]; then
  log "generating $ordinary"
  "$build/mt_gen_trace" "$ordinary" --events "$events" --seed 1 --stacks 3000 > /dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
traces=()
for i in $(seq 1 "$ntraces"); do
  ln -s "$ordinary" "$tmp/process-$i.ctf"
  traces+=("$tmp/process-$i.ctf")
done
cat "$ordinary" > /dev/null # in the page cache for both

# best_wall CMD...: the least wall time of REPEAT runs, in best (seconds)
best_wall() {
  best=
  for _ in $(seq 1 "$repeat"); do
    /usr/bin/time -f "%e %M" -o "$tmp/t" "$@" > /dev/null
    read -r w rss < "$tmp/t"
    if [ -z "$best" ] || awk -v a="$w" -v b="$best" 'BEGIN { exit !(a < b) }'; then
      best=$w
      best_rss=$rss
    fi
  done
}

best_wall taskset -c 0 "$build/memtrace" top "${traces[@]}"
one=$best one_rss=$best_rss
best_wall "$build/memtrace" top "${traces[@]}"
all=$best all_rss=$best_rss
cores=$(nproc)
printf '%-34s %8s %10s\n' "memtrace top of $ntraces traces" "wall s" "peak MB"
printf '%-34s %8.2f %10d\n' "one core (one after another)" "$one" $((one_rss / 1024))
printf '%-34s %8.2f %10d\n' "$cores cores" "$all" $((all_rss / 1024))
awk -v a="$all" -v b="$one" 'BEGIN { printf "ratio: %.2fx (target: at most 0.6x on 2 cores)\n", a / b }'
