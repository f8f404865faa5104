#!/usr/bin/env bash
# bench/profiler.sh: the profiler's cost on a malloc-heavy program.
#
# Runs bench/alloc_workload.c (sizes 16 B to 64 KiB, stacks 5 to 15 deep, some
# objects kept live) with 1 and 4 threads: plain, under `memtrace run` at the
# default rate (1e-5 per word) and at 1e-3, and under heaptrack when it is
# installed. Twice: as it is (a program that allocates and does nothing
# else: it writes one byte of each block), and built with -DTOUCH, writing
# every 64-byte line of each block as a program initializing its memory
# would (*-touch rows). The *-late rows: the workload built with
# -DLATE_FRAMES, whose functions set up their frame records after a first
# instruction (the unwinder learns that they have them), 1 thread at 1e-3.
# Two rows take the default rate's cost apart (1 thread): interposer-idle,
# the library preloaded without tracing (every malloc and free through its
# wrappers: 13 instructions a pair), and memtrace-nosample, `memtrace run`
# at rate 1e-12 (that, plus the CLI's exec and a trace's start and end).
# Two more make a ladder of rates with the default one, 2e-5 and 4e-5: a
# sample costs more the further apart samples come (its lines, and the
# program's, leave the caches in between), which the per-sample
# instruction count below does not show.
# The configurations
# run in turn, REPEAT rounds; the figure kept is each one's median CPU time
# (user + sys; on a shared machine it is steadier than wall time), reported
# as a ratio to plain measured in the same rounds, with a distribution-free
# 95% interval for that median ratio (REPEAT=9 or more makes it narrower
# than the whole range).
# Also:
#   - instructions added to an unsampled malloc+free pair (callgrind, by
#     difference between two run lengths, so start-up costs cancel out);
#   - instructions per sample at 1e-3 (callgrind, by difference with a plain
#     run, symbolization excluded);
#   - trace bytes per sampled allocation, and the profiler's own memory
#     (peak RSS traced minus plain);
#   - the CPU time of a C++ program with one big unit of DWARF, traced at
#     rate 1 (bench/cxx_symbols.cpp): naming its codes.
# Prints a table and writes bench/out/profiler-bench.txt.
# heaptrack records every allocation and its interpreter grows super-linearly
# (2M allocations here: 280 s of CPU and 19 GB, then std::bad_alloc), so it
# runs on HT_MILLIONS allocations per thread, beside a plain run of that size.
# The *-long rows run 1 thread at the default rate on LONG_MILLIONS
# allocations, where a traced process's fixed cost (loading libdw, starting
# and ending the trace, naming the codes: ~9 ms) weighs a quarter as much;
# the *-tiny rows (1,000 allocations, 2.4 MB: two to four samples at the
# default rate, so the run's codes are named) measure that fixed cost.
# Environment: REPEAT (5), MILLIONS (allocations per thread, 4), LONG_MILLIONS
# (4 x MILLIONS), HT_MILLIONS (0.1), BUILD_DIR.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=$here/out
build=${BUILD_DIR:-$root/build}
repeat=${REPEAT:-5}
millions=${MILLIONS:-4}
long_millions=${LONG_MILLIONS:-$(awk -v m="$millions" 'BEGIN { print 4 * m }')}
ht_millions=${HT_MILLIONS:-0.1}
report=$out/profiler-bench.txt
mkdir -p "$out"
log() { echo "profiler.sh: $*" >&2; }

if [ ! -x "$build/memtrace" ] || [ ! -f "$build/libmemtrace_preload.so" ]; then
  log "building into $build"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" -j"$(nproc)" --target memtrace_cli memtrace_preload >/dev/null
fi

work=$out/alloc_workload
late=$out/alloc_workload_late
touchw=$out/alloc_workload_touch
pairs=$out/pairs
cc -O2 -g -fno-omit-frame-pointer "$here/alloc_workload.c" -o "$work" -lpthread
cc -O2 -g -fno-omit-frame-pointer -DLATE_FRAMES "$here/alloc_workload.c" -o "$late" -lpthread
cc -O2 -g -fno-omit-frame-pointer -DTOUCH "$here/alloc_workload.c" -o "$touchw" -lpthread
cc -O2 "$here/pairs.c" -o "$pairs"
cputime=$out/cputime # CPU time to the microsecond (GNU time: hundredths)
cc -O2 "$here/cputime.c" -o "$cputime"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# once NAME CMD...: one run; appends "NAME cpu-seconds peak-RSS-KB" to $runs.
runs=$tmp/runs
: > "$runs"
# Each run writes a new trace: the last run's is removed first, outside the
# timing. Opening an existing trace with O_TRUNC charges the run for
# deleting the last one's blocks (on this VM's ext4: 15 ms for 27 MB, 2.5% of
# the 1-thread plain run, and a writeback started at close), a cost of the
# harness reusing the name, not of profiling.
once() {
  local name=$1
  shift
  rm -f "$tmp"/*.ctf
  $pin "$cputime" "$tmp/t" "$@" > /dev/null 2> "$tmp/err" ||
    { log "$name failed: $(tail -3 "$tmp/err")"; return 1; }
  read -r cpu m < "$tmp/t"
  echo "$name $cpu $m" >> "$runs"
}

# Everyday programs at the default rate, 1 thread, where installed: each
# row a command line (eval'd into words); their plain rows are named
# plain-NAME. Perl building a hash of arrays and sorting its keys, SQLite
# filling and indexing a table in memory, CPython building a dict and going
# through JSON, sort(1) on 2M numbers.
declare -A real=()
seq 1 2000000 | shuf --random-source=<(yes) > "$tmp/nums.txt"
command -v perl > /dev/null && real[perl]="perl -e 'my %h; for my \$i (1..300000) { \$h{\"k\$i\"} = [\$i, \"x\" x (\$i % 100)] } my @s = sort keys %h'"
command -v sqlite3 > /dev/null && real[sqlite3]="sqlite3 :memory: 'create table t(a,b); with recursive c(x) as (select 1 union all select x+1 from c limit 300000) insert into t select x, hex(randomblob(50)) from c; create index i on t(b); select count(*) from t group by a % 7;'"
command -v python3 > /dev/null && real[python3]="python3 -c 'import json; d = {str(i): [i, str(i) * 3, {\"k\": i}] for i in range(200000)}; json.loads(json.dumps(d))'"
command -v sort > /dev/null && real[sort]="sort -n -o $tmp/sorted.txt $tmp/nums.txt"

# The configurations run round-robin, REPEAT rounds: a change of the
# machine's load during the benchmark then weighs on every configuration
# alike, and the ratios compare runs made side by side.
#
# A round's 1-thread runs (but heaptrack's) run on one CPU, the rounds taking the CPUs
# in turn. On this benchmark's VM one vCPU ran the same program at half
# the speed of the other for minutes at a time (bench/pairs 2e7: 0.24 s
# against 0.13 s; its host core busy with another tenant, presumably), so
# unpinned, a round's plain and traced runs could run at speeds a factor 2
# apart. Every CPU takes its share of rounds: none is picked for being
# fast.
have_ht=0
command -v heaptrack > /dev/null && have_ht=1
. "$here/cpus.sh"
allowed_cpus
ncpu=${#cpus[@]}
for round in $(seq "$repeat"); do
  log "round $round of $repeat"
  for threads in 1 4; do
    pin=
    if [ "$threads" = 1 ] && [ "$ncpu" -gt 0 ]; then pin="taskset -c ${cpus[(round - 1) % ncpu]}"; fi
    args=("$work" "$threads" "$millions")
    once "plain-$threads" "${args[@]}"
    once "memtrace-1e-5-$threads" "$build/memtrace" run -q -o "$tmp/t5.ctf" -- "${args[@]}"
    once "memtrace-1e-3-$threads" "$build/memtrace" run -q --rate 1e-3 -o "$tmp/t3.ctf" -- "${args[@]}"
    targs=("$touchw" "$threads" "$millions")
    once "plain-touch-$threads" "${targs[@]}"
    once "memtrace-1e-5-touch-$threads" "$build/memtrace" run -q -o "$tmp/t5.ctf" -- "${targs[@]}"
    once "memtrace-1e-3-touch-$threads" "$build/memtrace" run -q --rate 1e-3 -o "$tmp/t3.ctf" -- "${targs[@]}"
    if [ "$threads" = 1 ]; then
      # the default rate's cost taken apart (see the top of the file)
      once "interposer-idle-1" LD_PRELOAD="$build/libmemtrace_preload.so" "${args[@]}"
      once "memtrace-nosample-1" "$build/memtrace" run -q --rate 1e-12 -o "$tmp/t0.ctf" -- "${args[@]}"
      # a ladder of rates: what a sample costs by how far apart samples are
      once "memtrace-2e-5-1" "$build/memtrace" run -q --rate 2e-5 -o "$tmp/t5.ctf" -- "${args[@]}"
      once "memtrace-4e-5-1" "$build/memtrace" run -q --rate 4e-5 -o "$tmp/t5.ctf" -- "${args[@]}"
      once "plain-late-1" "$late" 1 "$millions"
      once "memtrace-1e-3-late-1" "$build/memtrace" run -q --rate 1e-3 -o "$tmp/tl.ctf" -- "$late" 1 "$millions"
      once "plain-long-1" "$work" 1 "$long_millions"
      once "memtrace-1e-5-long-1" "$build/memtrace" run -q -o "$tmp/t5.ctf" -- "$work" 1 "$long_millions"
      # a few ms each, with a spread of their size: ten of each a round
      for _ in $(seq 10); do
        once "plain-tiny-1" "$work" 1 0.001
        once "memtrace-1e-5-tiny-1" "$build/memtrace" run -q -o "$tmp/t5.ctf" -- "$work" 1 0.001
      done
      # programs that do more than allocate, those installed (see real[])
      for prog in "${!real[@]}"; do
        eval "cmd=(${real[$prog]})"
        once "plain-$prog" "${cmd[@]}"
        once "memtrace-1e-5-$prog" "$build/memtrace" run -q -o "$tmp/t5.ctf" -- "${cmd[@]}"
      done
    fi
    if [ "$have_ht" = 1 ]; then
      pin= # heaptrack's interpreter runs beside the program: on one CPU they take turns
      once "plain-small-$threads" "$work" "$threads" "$ht_millions"
      once "heaptrack-small-$threads" heaptrack -o "$tmp/ht" "$work" "$threads" "$ht_millions" ||
        log "heaptrack failed: its rows are missing"
      rm -f "$tmp"/ht*
      once "plain-small-touch-$threads" "$touchw" "$threads" "$ht_millions"
      once "heaptrack-small-touch-$threads" heaptrack -o "$tmp/ht" "$touchw" "$threads" "$ht_millions" ||
        log "heaptrack failed: its rows are missing"
      rm -f "$tmp"/ht*
    fi
  done
done
# name, median CPU s, peak RSS KB, median ratio to plain (in the order first
# run). The ratio is the median of each round's ratio to the plain run of
# the same round and thread count: this machine's speed drifts by several
# percent between rounds, which a ratio of medians would carry.
results=$out/profiler-results.txt
awk '
  function median(arr, m,    a, b, t) {
    for (a = 2; a <= m; a++) { t = arr[a]; b = a - 1; while (b >= 1 && arr[b] > t) { arr[b + 1] = arr[b]; b-- } arr[b + 1] = t }
    return arr[int((m + 1) / 2)]
  }
  !($1 in seen) { seen[$1] = 1; order[++k] = $1 }
  { n[$1]++; v[$1, n[$1]] = $2; if ($3 > rss[$1]) rss[$1] = $3 }
  END {
    for (i = 1; i <= k; i++) {
      c = order[i]; m = n[c]; t = c; sub(/.*-/, "", t)
      base = "plain-" (c ~ /small/ ? "small-" : "") (c ~ /touch/ ? "touch-" : "") \
             (c ~ /late/ ? "late-" : c ~ /long/ ? "long-" : c ~ /tiny/ ? "tiny-" : "") t
      split("", x); split("", r); split("", d); nr = 0
      for (a = 1; a <= m; a++) {
        x[a] = v[c, a]
        if ((base, a) in v && v[base, a] > 0) { r[++nr] = v[c, a] / v[base, a]; d[nr] = v[c, a] - v[base, a] }
      }
      # the median ratio and a distribution-free 95% interval for it:
      # the order statistics lo and nr+1-lo, lo the largest rank with
      # P(Binomial(nr, 1/2) < lo) <= 2.5% (whole range when nr < 9)
      med = nr ? median(r, nr) : 0
      lo = 1; cum = 0; pb = 0.5 ^ nr
      for (q = 0; q < nr; q++) {
        cum += pb; if (cum > 0.025) break
        lo = q + 1; pb = pb * (nr - q) / (q + 1)
      }
      if (lo > (nr + 1) / 2) lo = 1
      printf "%s %.4f %d %.4f %.4f %.4f %.4f\n", c, median(x, m), rss[c], med,
        nr ? r[lo] : 0, nr ? r[nr + 1 - lo] : 0, nr ? median(d, nr) : 0
    }
  }' "$runs" > "$results"

# Trace size per sample, at both rates (1 thread); the ladder's sample counts.
"$build/memtrace" run -q -o "$tmp/s5.ctf" -- "$work" 1 "$millions" > /dev/null
"$build/memtrace" run -q --rate 1e-3 -o "$tmp/s3.ctf" -- "$work" 1 "$millions" > /dev/null
"$build/memtrace" run -q --rate 2e-5 -o "$tmp/s2.ctf" -- "$work" 1 "$millions" > /dev/null
"$build/memtrace" run -q --rate 4e-5 -o "$tmp/s4.ctf" -- "$work" 1 "$millions" > /dev/null
per_sample() {
  local allocs
  allocs=$("$build/memtrace" dump --compact "$1" | awk '$3 ~ /^A?E?a?$|^AE$/ {n++} END {print n + 0}')
  awk -v b="$(stat -c %s "$1")" -v n="$allocs" 'BEGIN { printf "%d %.1f", n, n ? b / n : 0 }'
}
read -r n5 b5 <<< "$(per_sample "$tmp/s5.ctf")"
read -r n3 b3 <<< "$(per_sample "$tmp/s3.ctf")"
read -r ladder2 _ <<< "$(per_sample "$tmp/s2.ctf")"
read -r ladder4 _ <<< "$(per_sample "$tmp/s4.ctf")"

# Instructions per unsampled malloc+free pair (tracing on, rate 1e-9: no
# sample is ever taken, every call goes through the interposer).
ir() {
  valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$tmp/cg.%p" "$@" \
    > /dev/null 2> "$tmp/cg.err"
  grep Collected "$tmp/cg.err" | tail -1 | awk '{print $4}'
  rm -f "$tmp"/cg.[0-9]*
}
extra="n/a"
if command -v valgrind > /dev/null; then
  # MEMTRACE_KEEP_ENV: `env` runs under valgrind with the library preloaded
  # and traces itself; without it, it would drop MEMTRACE and the library
  # from the environment it execs pairs with.
  pre=(env LD_PRELOAD="$build/libmemtrace_preload.so" MEMTRACE="$tmp/z.ctf" MEMTRACE_RATE=1e-9
    MEMTRACE_KEEP_ENV=1)
  b1=$(ir "$pairs" 100000); b2=$(ir "$pairs" 200000)
  p1=$(ir "${pre[@]}" "$pairs" 100000); p2=$(ir "${pre[@]}" "$pairs" 200000)
  plain_pair=$(( (b2 - b1) / 100000 ))
  extra=$(( ((p2 - p1) - (b2 - b1)) / 100000 ))
  # the last trace written must be pairs' own: else the interposer was not in it
  if ! "$build/memtrace" info "$tmp/z.ctf" 2> /dev/null | grep -q "^executable: .*/pairs$"; then
    log "the traced pairs run was not traced: no pair figure"
    extra="n/a"
  fi
fi

# Instructions per sample at 1e-3 (callgrind, 1 thread, fixed seed), by
# difference between two run lengths, 0.3M and 0.6M allocations: traced
# minus plain, over the samples the longer run adds. What a process does
# once (start-up, naming its codes) cancels out, as the interposer's 13
# instructions per unsampled pair do not. Steadier than CPU time on a
# shared machine: changes of 1-2% show. (An earlier version subtracted the
# naming function's inclusive count; since naming runs on a stack of its
# own, callgrind no longer attributes it, and the figure took in the naming.)
per_sample_ir="n/a"
if command -v valgrind > /dev/null; then
  total_ir() { grep Collected "$1" | tail -1 | awk '{print $4}'; }
  samples_in() { "$build/memtrace" dump --compact "$1" | awk '$3 ~ /^A?E?a?$|^AE$/ {n++} END {print n + 0}'; }
  for m in 0.3 0.6; do
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cgp.out" "$work" 1 $m > /dev/null 2> "$tmp/cgp$m.err"
    MEMTRACE="$tmp/cgs$m.ctf" MEMTRACE_KEEP_ENV=1 MEMTRACE_RATE=1e-3 MEMTRACE_SEED=7 \
      LD_PRELOAD="$build/libmemtrace_preload.so" \
      valgrind --tool=callgrind --callgrind-out-file="$tmp/cgs.out" "$work" 1 $m > /dev/null 2> "$tmp/cgs$m.err"
  done
  p1=$(total_ir "$tmp/cgp0.3.err"); p2=$(total_ir "$tmp/cgp0.6.err")
  t1=$(total_ir "$tmp/cgs0.3.err"); t2=$(total_ir "$tmp/cgs0.6.err")
  n1=$(samples_in "$tmp/cgs0.3.ctf"); n2=$(samples_in "$tmp/cgs0.6.ctf")
  [ -n "$p1" ] && [ -n "$p2" ] && [ -n "$t1" ] && [ -n "$t2" ] && [ "$n2" -gt "$n1" ] &&
    per_sample_ir=$(( ((t2 - t1) - (p2 - p1)) / (n2 - n1) ))
fi

# Naming codes in a big C++ unit (bench/cxx_symbols.cpp, ~1 MB of DWARF):
# traced at rate 1, every allocation a sample, the run is mostly naming its
# ~70 codes.
cxx_line="n/a (no g++)"
if command -v g++ > /dev/null; then
  g++ -O1 -g "$here/cxx_symbols.cpp" -o "$out/cxx_symbols"
  hex=$(readelf -SW "$out/cxx_symbols" | awk '{for (i = 1; i < NF; i++) if ($i == ".debug_info") print $(i + 4)}')
  dwarf_kb=$(( 16#${hex:-0} / 1024 ))
  "$cputime" "$tmp/xp" "$out/cxx_symbols" 2000 > /dev/null
  "$cputime" "$tmp/xt" "$build/memtrace" run -q --rate 1 -o "$tmp/x.ctf" -- "$out/cxx_symbols" 2000 > /dev/null
  xsamples=$("$build/memtrace" info "$tmp/x.ctf" | awk '$1 == "total" {print $2}')
  cxx_line=$(awk -v p="$(cut -d' ' -f1 "$tmp/xp")" -v t="$(cut -d' ' -f1 "$tmp/xt")" -v kb="$dwarf_kb" -v n="$xsamples" \
    'BEGIN { printf "%.3f s of CPU traced at rate 1 (%d samples), %.3f s plain (%d KB of DWARF in its unit)", t, n, p, kb }')
fi

{
  # the host's processor: this VM has come up on AMD and Intel hosts, whose
  # ratios differ (a sample's cost and plain malloc's do not scale alike)
  cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
  echo "# memtrace-c profiler benchmark ($(date -u +%Y-%m-%d), $(nproc) cores of ${cpu:-an unknown processor}, load $(cut -d' ' -f1 /proc/loadavg))"
  echo "# workload: $millions M allocations per thread ($ht_millions M for the *-small rows), 16 B - 64 KiB, stacks 5-15 deep; median CPU time of $repeat rounds, configurations interleaved, a round's 1-thread runs on one CPU (CPUs in turn); x plain: median of the rounds' ratios"
  echo "# *-touch rows: the program writes every 64-byte line of each block it allocates (the others: its first byte); *-long rows: $long_millions M allocations; *-tiny rows: 1,000, ten runs a round (their difference is the fixed cost of a traced process)"
  echo "# interposer-idle-1: the interposer preloaded, not tracing; memtrace-nosample-1: memtrace run at rate 1e-12 (tracing, nothing sampled); memtrace-2e-5-1, memtrace-4e-5-1: the same workload at those rates"
  printf "%-24s %10s %10s %15s %12s\n" configuration "cpu s" "x plain" "95% interval" "peak RSS MB"
  awk '$1 !~ /tiny/ { printf "%-24s %10.3f %10.3f %7.3f-%-7.3f %12.1f\n", $1, $2, $4, $5, $6, $3 / 1024 }' "$results"
  echo
  awk '$1 == "memtrace-1e-5-tiny-1" { printf "fixed cost of a traced process (memtrace run, 1,000 allocations, traced - plain CPU): %.1f ms\n", $7 * 1000 }' "$results"
  echo "unsampled malloc+free pair: $plain_pair instructions plain, +$extra with the interposer (target <= 15)"
  echo "a sample at 1e-3: $per_sample_ir instructions (callgrind, 0.6M allocations less 0.3M: naming and start-up excluded)"
  echo "trace bytes per sampled allocation: $b5 at 1e-5 ($n5 samples), $b3 at 1e-3 ($n3 samples)"
  # from the rows' median differences to plain: rate 1e-12 to 1e-5 (the
  # naming of the run's codes included), and 2e-5 to 4e-5 (samples added
  # closer together)
  awk -v n5="$n5" -v n2="$ladder2" -v n4="$ladder4" '{d[$1] = $7} END {
    if (n5 > 0 && n4 > n2)
      printf "CPU a sample (rate ladder, 1 thread): %.2f us from rate 1e-12 to 1e-5 (%d samples, naming included), %.2f us added from 2e-5 to 4e-5 (%d to %d samples)\n",
        (d["memtrace-1e-5-1"] - d["memtrace-nosample-1"]) / n5 * 1e6, n5,
        (d["memtrace-4e-5-1"] - d["memtrace-2e-5-1"]) / (n4 - n2) * 1e6, n2, n4 }' "$results"
  echo "naming codes in a big C++ unit (bench/cxx_symbols.cpp): $cxx_line"
  awk '{cpu[$1] = $2; rss[$1] = $3} END {
    printf "profiler memory (peak RSS traced - plain, 1 thread): %.1f MB at 1e-5, %.1f MB at 1e-3\n",
      (rss["memtrace-1e-5-1"] - rss["plain-1"]) / 1024, (rss["memtrace-1e-3-1"] - rss["plain-1"]) / 1024 }' "$results"
  # The targets are set on "a malloc-heavy program" where heaptrack costs
  # about 13x: each load's verdict, with heaptrack's ratio on it, so that
  # the load they name can be told from the denser ones.
  echo "targets: <= 1.05x plain at the default rate, <= 1.5x at 1e-3, on a load where heaptrack costs about 13x; by load:"
  awk '{x[$1] = $4} END {
    n = split("touch-4 4 touch-1 1", loads, " ")
    for (i = 1; i <= n; i++) {
      l = loads[i]; t = l ~ /touch/ ? "-touch" : ""; th = substr(l, length(l))
      d = x["memtrace-1e-5" t "-" th]; r = x["memtrace-1e-3" t "-" th]
      h = x["heaptrack-small" t "-" th]
      if (d == "" || r == "") continue
      printf "  %s thread%s%s: heaptrack %s, default rate %.3fx (%s), 1e-3 %.3fx (%s)
",
        th, th == 1 ? "" : "s", t == "" ? ", one byte of each block written" : ", touch",
        h == "" ? "not run" : sprintf("%.1fx", h), d, d <= 1.05 ? "met" : "missed", r, r <= 1.5 ? "met" : "missed"
    }
  }' "$results"
} | tee "$report"
