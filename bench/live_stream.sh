#!/usr/bin/env bash
# bench/live_stream.sh: a live stream fed to `memtrace view --listen` at a
# steady rate (bench/live_stream.py): each snapshot's lag behind the stream,
# the time between snapshots, and the viewer's memory and CPU as the trace
# grows. The stream is an ordinary trace (mt_gen_trace --stacks 3000) of
# EVENTS events (default 100M, about 1 GB), generated into a scratch folder
# (never kept: TRACES_DIR, default a temporary one) and sent at RATE events
# a second (default 500k: 200 s for 100M).
# Environment: EVENTS, RATE, SETTLE (seconds allowed after the stream's
# end, default 300), BUILD_DIR, TRACES_DIR.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD_DIR:-$root/build}
events=${EVENTS:-100000000}
[ -x "$build/memtrace" ] && [ -x "$build/mt_gen_trace" ] ||
  { echo "live_stream.sh: build first (make build)" >&2; exit 1; }
dir=${TRACES_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/memtrace-live.XXXXXX")}
mkdir -p "$dir"
[ -n "${TRACES_DIR:-}" ] || trap 'rm -rf "$dir"' EXIT
trace=$dir/live-e$events.ctf
[ -e "$trace" ] || "$build/mt_gen_trace" "$trace" --events "$events" --stacks 3000 --seed 1 > /dev/null
python=$(command -v /usr/bin/python3 || command -v python3)
"$python" "$here/live_stream.py" "$build/memtrace" "$trace" "$events" "${RATE:-500000}" "${SETTLE:-300}"
