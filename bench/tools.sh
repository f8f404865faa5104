#!/usr/bin/env bash
# bench/tools.sh: the analysis tools on two large traces.
#
# Uses the trace bench/run.sh generates (>= 100 MB, 12M events, nearly every
# stack distinct: adversarial for tools that work per stack; generated here
# the same way if missing) and an ordinary one (mt_gen_trace --stacks 3000:
# the same program allocating from 3000 distinct stacks, the k-th most
# popular with weight 1/k; generated if missing), and, when it exists, a
# real OCaml trace that memtrace 0.2.3 itself wrote (OCAML_TRACE, by default
# bench/out/ocaml-real.ctf, which bench/ocaml/make_trace.sh makes: lists,
# maps, arrays of up to 6,700 words, recursion 2,000 deep, rate 0.05,
# about 118 MB), and on each times `memtrace hotspots`, `top`
# (by function, by line), `stats`, `timeline`, `flamegraph` (memtrace's
# output, and --live-at-end), `leaks`, `diff` (the trace against itself) and
# `export` (pprof): CPU time (user + sys; steadier than wall time on a shared
# machine), wall time and peak RSS, best of REPEAT runs. When
# MEMTRACE_OCAML_BIN names a folder holding memtrace's own OCaml tools built
# as oc_hotspots / oc_dump (e.g. by hand from the memtrace repository), they
# run side by side on the same trace and the ratios of CPU time and of peak
# RSS are printed (bench/ocaml/make_trace.sh builds them).
# Targets: hotspots >= 10x faster than memtrace's (peak RSS at most 4x its
# own on the OCaml trace); every tool < 2 s and < 256 MB; export at most 1.5x
# top's CPU time and under 256 MB. Prints a table and writes bench/out/tools-bench.txt.
# Environment: REPEAT (3), EVENTS (12000000), STACKS (3000: the ordinary
# trace's), BUILD_DIR, MEMTRACE_OCAML_BIN, OCAML_TRACE.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=$here/out
build=${BUILD_DIR:-$root/build}
repeat=${REPEAT:-3}
events=${EVENTS:-12000000}
stacks=${STACKS:-3000}
report=$out/tools-bench.txt
mkdir -p "$out"
log() { echo "tools.sh: $*" >&2; }

if [ ! -x "$build/memtrace" ] || [ ! -x "$build/mt_gen_trace" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
  cmake --build "$build" -j"$(nproc)" --target memtrace_cli mt_gen_trace > /dev/null
fi
[ -x /usr/bin/time ] || { log "needs GNU time (apt-get install time)"; exit 1; }
trace=$(ls "$out"/bench-v2-e"$events"-s1-*.ctf 2> /dev/null | head -1 || true)
if [ -z "$trace" ]; then
  trace=$out/bench-v2-e$events-s1-tools.ctf
  log "generating $trace"
  "$build/mt_gen_trace" "$trace" --events "$events" --seed 1 > /dev/null
fi
ordinary=$out/ordinary-v2-e$events-s1-k$stacks.ctf
ocaml_trace=${OCAML_TRACE:-$out/ocaml-real.ctf}
if [ ! -f "$ordinary" ]; then
  log "generating $ordinary"
  "$build/mt_gen_trace" "$ordinary" --events "$events" --seed 1 --stacks "$stacks" > /dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# best NAME CMD...: the run with the least CPU time (its wall time beside
# it) and the largest peak RSS (MB); leaves them in best_cpu and best_rss
# (KB) too.
best_cpu="" best_rss=0
best() {
  local name=$1
  shift
  best_cpu="" best_rss=0
  local cpu="" wall="" rss=0 u s e kb c
  for _ in $(seq "$repeat"); do
    /usr/bin/time -f "%U %S %e %M" -o "$tmp/t" "$@" > /dev/null 2> "$tmp/err" ||
      { log "$name failed: $(tail -2 "$tmp/err")"; return 0; }
    read -r u s e kb < "$tmp/t"
    c=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
    if [ -z "$cpu" ] || awk -v a="$c" -v b="$cpu" 'BEGIN { exit !(a < b) }'; then cpu=$c wall=$e; fi
    [ "$kb" -gt "$rss" ] && rss=$kb
  done
  best_cpu=$cpu best_rss=$rss
  printf "%-28s %8s %8s %9.1f\n" "$name" "$cpu" "$wall" "$(awk -v m="$rss" 'BEGIN { print m / 1024 }')"
}

mt=$build/memtrace
# tools TRACE [WHAT]: every tool on one trace (WHAT: its events, or what
# it is).
tools() {
  local trace=$1 what=${2:-$events events}
  local cpu rss
  echo "# trace: $(basename "$trace"), $(stat -c %s "$trace") bytes, $what; best of $repeat"
  printf "%-28s %8s %8s %9s\n" tool "cpu s" "wall s" "RSS MB"
  best "hotspots" "$mt" hotspots "$trace"
  cpu=$best_cpu rss=$best_rss
  best "top (by function)" "$mt" top "$trace"
  local top_cpu=$best_cpu
  best "top --by line" "$mt" top --by line "$trace"
  best "top --by stack" "$mt" top --by stack "$trace"
  best "stats" "$mt" stats "$trace"
  best "timeline" "$mt" timeline "$trace"
  best "leaks" "$mt" leaks "$trace"
  best "diff (itself)" "$mt" diff "$trace" "$trace"
  best "flamegraph" "$mt" flamegraph "$trace"
  best "flamegraph --live-at-end" "$mt" flamegraph --live-at-end --weight bytes "$trace"
  best "export --format pprof" "$mt" export --format pprof "$trace" -o "$tmp/p.pb.gz"
  if [ -n "$top_cpu" ] && [ -n "$best_cpu" ]; then
    printf "export against top: %.2fx its CPU time, %.0f MB peak RSS\n" \
      "$(awk -v a="$best_cpu" -v b="$top_cpu" 'BEGIN { print (b > 0 ? a / b : 0) }')" \
      "$(awk -v m="$best_rss" 'BEGIN { print m / 1024 }')"
  fi
  if [ -n "${MEMTRACE_OCAML_BIN:-}" ] && [ -x "$MEMTRACE_OCAML_BIN/oc_hotspots" ]; then
    best "memtrace's OCaml hotspots" "$MEMTRACE_OCAML_BIN/oc_hotspots" "$trace"
    if [ -n "$cpu" ] && [ -n "$best_cpu" ]; then
      printf "hotspots against memtrace's: %.1fx faster (CPU time), %.1fx its peak RSS\n" \
        "$(awk -v a="$cpu" -v b="$best_cpu" 'BEGIN { print (a > 0 ? b / a : 0) }')" \
        "$(awk -v a="$rss" -v b="$best_rss" 'BEGIN { print (b > 0 ? a / b : 0) }')"
    fi
  fi
}
{
  echo "# memtrace-c analysis tools ($(date -u +%Y-%m-%d), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
  tools "$trace"
  tools "$ordinary"
  if [ -f "$ocaml_trace" ]; then
    tools "$ocaml_trace" "written by memtrace 0.2.3 from an OCaml program"
  else
    log "no $ocaml_trace: bench/ocaml/make_trace.sh makes it"
  fi
  echo "targets: every tool < 2 s and < 256 MB; hotspots >= 10x faster than memtrace's" \
    "(with at most 4x its peak RSS on the OCaml trace); export at most 1.5x top's CPU time" \
    "and under 256 MB"
} | tee "$report"
