#!/usr/bin/env bash
# bench/ab.sh: configurations of one command, side by side.
#
#   bench/ab.sh [-r ROUNDS] [-c NAME=PREFIX]... -- CMD [ARGS...]
#
# Each -c names a configuration and the words put before CMD (split at
# white space, no quoting): variable assignments (NAME=VALUE, given to CMD's
# environment by bench/cputime, not by env(1)) and/or a wrapper command. The
# first configuration is the baseline; an empty PREFIX runs CMD as it is:
#
#   lib=build/libmemtrace_preload.so
#   bench/ab.sh -r 30 -c plain= -c idle="LD_PRELOAD=$lib" \
#     -c traced="LD_PRELOAD=$lib MEMTRACE=/tmp/ab-%p.ctf" \
#     -c run="build/memtrace run -q -o /tmp/ab-run.ctf --" \
#     -- bench/out/alloc_workload 1 4
#
# Two builds compare as two configurations preloading each one's library.
#
# Why this way (the profiler's costs are a few percent of a run; this
# machine's speed moves by more than that from minute to minute):
#   - round-robin: every round runs every configuration once, and the figure
#     kept is the median over rounds of each configuration's ratio to the
#     baseline's run in the same round, with the quartiles of those ratios;
#   - the order within a round rotates from round to round: the run after a
#     pause, or after another program, is not always the same configuration's;
#   - each round runs on one CPU (taskset), the rounds taking the CPUs in
#     turn: on this machine's VM one vCPU ran at half the other's speed for
#     minutes at a time;
#   - CPU time (user + system, to the microsecond, bench/cputime.c), not
#     wall time;
#   - no env(1) in front of any configuration: its exec cost ~1.7 ms here,
#     0.7% of a 0.24 s run, which a baseline run through env(1) and traced
#     runs without would have taken off their ratios;
#   - before each run, the trace the configuration names (MEMTRACE=PATH,
#     %p matching any pid, or `-o PATH`) is removed, so that no run pays
#     for the last one's blocks (opening a 27 MB trace with O_TRUNC took
#     15 ms here): give each configuration a file of its own.
# Prints, per configuration: median CPU ms, the median ratio to the baseline
# and its quartiles, and the difference of the medians in ms.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
rounds=20
names=()
prefixes=()
while [ $# -gt 0 ]; do
  case $1 in
    -r) rounds=${2:?-r needs a count}; shift 2 ;;
    -c)
      spec=${2:?-c needs NAME=PREFIX}
      [[ $spec == *=* ]] || { echo "ab.sh: -c $spec: not NAME=PREFIX" >&2; exit 2; }
      names+=("${spec%%=*}"); prefixes+=("${spec#*=}"); shift 2 ;;
    --) shift; break ;;
    *) echo "ab.sh: unknown argument '$1' (usage: ab.sh [-r N] -c NAME=PREFIX... -- CMD ARGS...)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "ab.sh: no command after --" >&2; exit 2; }
[ ${#names[@]} -ge 2 ] || { echo "ab.sh: give at least two configurations (-c)" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "ab.sh: -r $rounds: not a count" >&2; exit 2; }

mkdir -p "$here/out"
cputime=$here/out/cputime
[ "$cputime" -nt "$here/cputime.c" ] || cc -O2 "$here/cputime.c" -o "$cputime"
. "$here/cpus.sh"
allowed_cpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The trace a configuration writes (MEMTRACE=PATH or -o PATH), to remove.
trace_of() {
  local prev= w ws
  read -ra ws <<< "$1"
  for w in "${ws[@]}"; do
    case $w in MEMTRACE=*) echo "${w#MEMTRACE=}" | sed "s/%p/*/g"; return ;; esac
    [ "$prev" = -o ] && { echo "$w"; return; }
    prev=$w
  done
}

nc=${#names[@]}
: > "$tmp/runs"
for ((r = 0; r < rounds; r++)); do
  pin=()
  [ ${#cpus[@]} -gt 0 ] && pin=(taskset -c "${cpus[r % ${#cpus[@]}]}")
  for ((k = 0; k < nc; k++)); do
    i=$(((k + r) % nc))
    t=$(trace_of "${prefixes[i]}")
    [ -n "$t" ] && rm -f $t
    read -ra words <<< "${prefixes[i]}"
    rc=0
    "${pin[@]}" "$cputime" "$tmp/t" "${words[@]}" "$@" > /dev/null 2> "$tmp/err" || rc=$?
    if [ "$rc" != 0 ]; then
      echo "ab.sh: configuration ${names[i]} (round $((r + 1))) exited with status $rc: $(tail -3 "$tmp/err")" >&2
      exit 1
    fi
    echo "$r ${names[i]} $(cut -d' ' -f1 "$tmp/t")" >> "$tmp/runs"
  done
  printf 'ab.sh: round %d of %d\r' $((r + 1)) "$rounds" >&2
done
echo >&2

awk -v base="${names[0]}" -v order="${names[*]}" '
  function sort(a, n,    i, j, t) {
    for (i = 2; i <= n; i++) { t = a[i]; j = i - 1; while (j >= 1 && a[j] > t) { a[j + 1] = a[j]; j-- } a[j + 1] = t }
  }
  function q(a, n, f,    x, i) { x = 1 + f * (n - 1); i = int(x); return i >= n ? a[n] : a[i] + (x - i) * (a[i + 1] - a[i]) }
  { cpu[$2, $1] = $3; rs[$1] = 1 }
  END {
    nn = split(order, names, " ")
    for (k = 1; k <= nn; k++) {
      c = names[k]; m = 0; nr = 0
      split("", v); split("", ra)
      for (r in rs) {
        if (!((c, r) in cpu)) continue
        v[++m] = cpu[c, r]
        if (cpu[base, r] > 0) ra[++nr] = cpu[c, r] / cpu[base, r]
      }
      sort(v, m); sort(ra, nr)
      if (k == 1) bmed = q(v, m, 0.5)
      printf "%-16s %9.2f ms  x%.4f [%.4f-%.4f]  %+7.2f ms\n", c, 1000 * q(v, m, 0.5), \
        q(ra, nr, 0.5), q(ra, nr, 0.25), q(ra, nr, 0.75), 1000 * (q(v, m, 0.5) - bmed)
    }
  }' "$tmp/runs"
