#!/usr/bin/env bash
# memtrace's own analysis tools, reproduced as memtrace subcommands, checked
# against memtrace's outputs on real traces (../shared/traces) and on traces
# made for their corners (data/, see data/README.md).
# Usage: compat.sh CHECK MEMTRACE TRACES [NAME]
#   hotspots    memtrace hotspots NAME.ctf == NAME.hotspots.txt, byte for byte
#   flamegraph  memtrace flamegraph NAME.ctf == NAME.folded.txt, byte for byte
#   identify    memtrace identify NAME.ctf, run in TRACES == NAME.identify.txt
#   subsample   FACTOR 1 keeps every event: the output is the input, its
#               rate being the input's (in version 3: the input's version 3
#               copy, as memtrace's later subsample writes it); FACTOR 10
#               keeps a subsequence of the allocations, about a tenth of the
#               samples, with the rate / 10; time windows; seeds
#   strip-names the same events without backtraces; info/identify anonymous;
#               the analysis commands accept the stripped trace
#   strip-exact (5th argument EXPECTED) memtrace strip-names NAME.ctf ==
#               EXPECTED, the output of memtrace's (HEAD) strip_names
#   hotspots-gen (5th argument on: a generator and its options) hotspots of
#               the trace the generator writes (to a temporary NAME.ctf, too
#               large to keep) == NAME.hotspots.txt in TRACES
#   errors      (no NAME) usage errors exit 2, bad input exits 1 naming the
#               file, --help, no progress output when stderr is not a TTY
set -euo pipefail
check=$1 memtrace=$2 traces=$3 name=${4:-} expected=${5:-}
trace="$traces/$name.ctf"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "$check" = hotspots-gen ]; then
  trace="$tmp/$name.ctf"
  "${@:5}" "$trace" > /dev/null || { echo "FAIL [$check $name]: ${*:5} failed" >&2; exit 1; }
fi

fail() { echo "FAIL [$check $name]: $*" >&2; exit 1; }
[ -z "$name" ] || [ -f "$trace" ] || fail "no trace $trace"
[ -x "$memtrace" ] || fail "no memtrace command at $memtrace"

# The dump of a trace's allocations as NSAMPLES|TIME SOURCE len=N BACKTRACE
# (without object ids and common-prefix lengths).
alloc_lines() {
  awk '$3 ~ /^alloc/ { i = index($0, ":"); print $4 "|" $1 " " $3 " " $5 substr($0, i + 1) }' "$1"
}

case "$check" in
hotspots | hotspots-gen)
  "$memtrace" hotspots "$trace" > "$tmp/ours" 2> "$tmp/err"
  [ ! -s "$tmp/err" ] || { cat "$tmp/err" >&2; fail "wrote to stderr"; }
  cmp "$tmp/ours" "$traces/$name.hotspots.txt" || {
    diff "$tmp/ours" "$traces/$name.hotspots.txt" | head -20 >&2
    fail "hotspots differs from memtrace's"
  }
  echo "ok: $(wc -l < "$tmp/ours") lines identical"
  ;;
flamegraph)
  "$memtrace" flamegraph "$trace" > "$tmp/ours" 2> "$tmp/err"
  [ ! -s "$tmp/err" ] || { cat "$tmp/err" >&2; fail "wrote to stderr"; }
  cmp "$tmp/ours" "$traces/$name.folded.txt" || {
    diff "$tmp/ours" "$traces/$name.folded.txt" | head -20 >&2
    fail "flamegraph differs from memtrace's"
  }
  echo "ok: $(wc -l < "$tmp/ours") lines identical"
  ;;
identify)
  (cd "$traces" && "$memtrace" identify "$name.ctf") > "$tmp/ours"
  cmp "$tmp/ours" "$traces/$name.identify.txt" || {
    diff "$tmp/ours" "$traces/$name.identify.txt" >&2
    fail "identify differs from memtrace's"
  }
  echo "ok: $(wc -l < "$tmp/ours") lines identical"
  ;;
subsample)
  "$memtrace" dump "$trace" > "$tmp/in.txt"
  # FACTOR 1: every sample is kept and the rate is unchanged, so the output
  # is the input re-encoded: same events, same ids, same bytes.
  "$memtrace" subsample "$trace" "$tmp/s1.ctf" 1
  "$memtrace" dump "$tmp/s1.ctf" > "$tmp/s1.txt"
  cmp "$tmp/s1.txt" "$tmp/in.txt" || fail "FACTOR 1 changed the events"
  cmp "$tmp/s1.ctf" "$trace" || fail "FACTOR 1 is not the input re-encoded"
  # In format version 3 (memtrace's later subsample): a version 3 copy.
  "$memtrace" subsample --format-version 3 "$trace" "$tmp/s13.ctf" 1
  "$memtrace" copy --format-version 3 "$trace" "$tmp/c3.ctf"
  cmp "$tmp/s13.ctf" "$tmp/c3.ctf" || fail "FACTOR 1 in version 3 is not a version 3 copy"

  # FACTOR 10, fixed seed.
  "$memtrace" subsample --seed 7 "$trace" "$tmp/s10.ctf" 10
  "$memtrace" dump "$tmp/s10.ctf" > "$tmp/s10.txt"
  rate_in=$("$memtrace" info "$trace" | awk '/^sample rate:/ {print $3}')
  rate_out=$("$memtrace" info "$tmp/s10.ctf" | awk '/^sample rate:/ {print $3}')
  awk -v a="$rate_in" -v b="$rate_out" 'BEGIN { r = a / b; exit !(r > 9.9999 && r < 10.0001) }' ||
    fail "sample rate $rate_in became $rate_out, not a tenth"
  # Samples: binomial(n, 1/10); accept the mean +- 6 standard deviations.
  n_in=$(awk '$3 ~ /^alloc/ {s += $4} END {print s}' "$tmp/in.txt")
  n_out=$(awk '$3 ~ /^alloc/ {s += $4} END {print s + 0}' "$tmp/s10.txt")
  awk -v n="$n_in" -v k="$n_out" 'BEGIN {
        m = n / 10; sd = sqrt(n * 0.09); exit !(k >= m - 6 * sd && k <= m + 6 * sd) }' ||
    fail "kept $n_out of $n_in samples with FACTOR 10"
  # Kept allocations: a subsequence of the input's (same time, source, size
  # and backtrace), each with no more samples than it had.
  alloc_lines "$tmp/in.txt" > "$tmp/in.allocs"
  alloc_lines "$tmp/s10.txt" > "$tmp/out.allocs"
  awk -F'|' 'NR == FNR { ns[NR] = $1; key[NR] = $2; n = NR; next }
       { ok = 0
         while (i < n) { i++; if (key[i] == $2 && $1 + 0 <= ns[i] + 0) { ok = 1; break } }
         if (!ok || $1 + 0 < 1) { print "output allocation " FNR " unmatched"; exit 1 } }' \
    "$tmp/in.allocs" "$tmp/out.allocs" || fail "kept allocations are not the input's"
  # Ids: the kept objects are renumbered densely; promotions and collections
  # name kept objects only (memtrace dump would have failed otherwise).
  awk '$3 ~ /^alloc/ { if ($2 + 0 != k++) exit 1 }' "$tmp/s10.txt" ||
    fail "object ids are not renumbered densely"
  # The same seed gives the same trace; another seed another one.
  "$memtrace" subsample --seed 7 "$trace" "$tmp/s10b.ctf" 10
  cmp -s "$tmp/s10.ctf" "$tmp/s10b.ctf" || fail "the same seed gave different traces"
  "$memtrace" subsample --seed 8 "$trace" "$tmp/s10c.ctf" 10
  ! cmp -s "$tmp/s10.ctf" "$tmp/s10c.ctf" || fail "seeds 7 and 8 gave the same trace"

  # Time windows, in whole seconds since the start (every trace here lasts
  # less than a second): [0, 1) keeps everything, [1, 2) nothing.
  "$memtrace" subsample "$trace" "$tmp/w01.ctf" 1 0 1
  "$memtrace" dump "$tmp/w01.ctf" | cmp - "$tmp/in.txt" || fail "window [0,1) lost events"
  "$memtrace" subsample "$trace" "$tmp/w12.ctf" 1 1 2
  [ "$("$memtrace" dump "$tmp/w12.ctf" | wc -l)" -eq 0 ] || fail "window [1,2) kept events"
  "$memtrace" subsample "$trace" "$tmp/wneg.ctf" 1 -5 0
  [ "$("$memtrace" dump "$tmp/wneg.ctf" | wc -l)" -eq 0 ] || fail "window [-5,0) kept events"
  echo "ok: FACTOR 1 identical; FACTOR 10 kept $n_out of $n_in samples, rate $rate_in -> $rate_out"
  ;;
strip-names)
  "$memtrace" strip-names "$trace" "$tmp/s.ctf"
  # memtrace's dump with every backtrace (and common prefix) emptied
  "$memtrace" dump "$trace" |
    awk '$3 ~ /^alloc/ { print $1, $2, $3, $4, $5 "    0:"; next } { print }' > "$tmp/want"
  "$memtrace" dump "$tmp/s.ctf" > "$tmp/got"
  cmp "$tmp/got" "$tmp/want" || {
    diff "$tmp/got" "$tmp/want" | head -5 >&2
    fail "stripped trace's events differ"
  }
  "$memtrace" info "$tmp/s.ctf" > "$tmp/info"
  grep -qx 'executable:      <anonymous>' "$tmp/info" || fail "executable name kept"
  grep -qx 'host:            <anonymous>' "$tmp/info" || fail "host name kept"
  grep -qx 'pid:             0' "$tmp/info" || fail "pid kept"
  grep -qx 'started:         1970-01-01 00:00:00 UTC' "$tmp/info" || fail "start time kept"
  ! grep -q '^context:' "$tmp/info" || fail "context kept"
  # What is kept: rate, word size, runtime parameters, and (identify) every
  # statistic but the file size.
  "$memtrace" info "$trace" | grep -E '^(sample rate|word size|runtime params|duration):' > "$tmp/a"
  grep -E '^(sample rate|word size|runtime params|duration):' "$tmp/info" > "$tmp/b"
  cmp "$tmp/a" "$tmp/b" || fail "rate, word size, runtime params or duration changed"
  "$memtrace" identify "$tmp/s.ctf" > "$tmp/id"
  grep -q '^   of <anonymous>$' "$tmp/id" || fail "identify: executable"
  grep -Eq '^   on host <anonymous> \([0-9]+-bit\), pid 0, ' "$tmp/id" || fail "identify: host, pid"
  sed -n '/^Trace statistics:/,$p' "$traces/$name.identify.txt" > "$tmp/a"
  sed -n '/^Trace statistics:/,$p' "$tmp/id" > "$tmp/b"
  cmp "$tmp/a" "$tmp/b" || fail "identify's statistics changed"
  # No names left in the file.
  ! grep -qa 'Stdlib' "$tmp/s.ctf" || fail "a function name is left"
  # The analyses run on a trace without backtraces (memtrace's hotspots
  # would fail on it): no stacks, every sample still counted.
  [ "$("$memtrace" flamegraph "$tmp/s.ctf" | wc -c)" -eq 0 ] || fail "flamegraph found stacks"
  "$memtrace" hotspots "$tmp/s.ctf" > "$tmp/hs"
  head -2 "$traces/$name.hotspots.txt" | sed 's/^Trace for .* \[[0-9]*\]:$/Trace for <anonymous> [0]:/' > "$tmp/a"
  head -2 "$tmp/hs" | cmp - "$tmp/a" || fail "hotspots header of the stripped trace"
  echo "ok: $(wc -l < "$tmp/got") events, anonymous"
  ;;
strip-exact)
  "$memtrace" strip-names "$trace" "$tmp/s.ctf"
  cmp "$tmp/s.ctf" "$expected" || fail "not the file memtrace's strip_names writes"
  "$memtrace" strip-names --format-version 2 "$trace" "$tmp/s2.ctf"
  "$memtrace" copy --format-version 3 "$tmp/s2.ctf" "$tmp/s3.ctf"
  cmp "$tmp/s3.ctf" "$expected" || fail "--format-version 2, copied to version 3, differs"
  echo "ok: $(stat -c %s "$expected") bytes identical"
  ;;
errors)
  t="$traces/ocamlopt.ctf"
  passed=0 failed=0
  # expect NAME STATUS PATTERN -- CMD...: exit status, and stderr matching
  # the extended regex PATTERN.
  expect() {
    local what=$1 status=$2 pattern=$3
    shift 4
    local got=0
    "$@" > "$tmp/out" 2> "$tmp/err" || got=$?
    if [ "$got" -ne "$status" ] || { [ -n "$pattern" ] && ! grep -Eq -- "$pattern" "$tmp/err"; }; then
      echo "FAIL $what: exit $got (want $status), stderr:" >&2
      sed 's/^/  /' "$tmp/err" >&2
      failed=$((failed + 1))
    else
      passed=$((passed + 1))
    fi
  }
  for c in hotspots flamegraph identify; do
    expect "$c-missing-arg" 2 "memtrace $c: missing TRACE" -- "$memtrace" "$c"
    # flamegraph takes several traces (one graph of them all)
    [ "$c" = flamegraph ] ||
      expect "$c-extra-arg" 2 "unexpected argument" -- "$memtrace" "$c" "$t" "$t"
    expect "$c-bad-opt" 2 "unknown option '--bogus'" -- "$memtrace" "$c" --bogus "$t"
    expect "$c-no-file" 1 "/nonexistent/x.ctf: cannot open" -- "$memtrace" "$c" /nonexistent/x.ctf
    expect "$c-help" 0 "" -- "$memtrace" "$c" --help
    grep -q "^usage: memtrace $c" "$tmp/out" || { echo "FAIL $c-help: no usage" >&2; failed=$((failed + 1)); }
  done
  expect subsample-no-args 2 "needs IN OUT FACTOR" -- "$memtrace" subsample
  expect subsample-4-args 2 "needs IN OUT FACTOR" -- "$memtrace" subsample "$t" "$tmp/o" 1 0
  for f in 0 -3 abc 1.5 '' 10x; do
    expect "subsample-factor-'$f'" 2 "FACTOR must be a positive integer, not '$f'" -- "$memtrace" subsample "$t" "$tmp/o" "$f"
  done
  expect subsample-bad-start 2 "START must be an integer" -- "$memtrace" subsample "$t" "$tmp/o" 2 x 3
  expect subsample-bad-end 2 "END must be an integer" -- "$memtrace" subsample "$t" "$tmp/o" 2 0 1e3
  expect subsample-bad-seed 2 "--seed must be an unsigned integer" -- "$memtrace" subsample --seed -1 "$t" "$tmp/o" 2
  expect subsample-no-file 1 "/nonexistent/x.ctf: cannot open" -- "$memtrace" subsample /nonexistent/x.ctf "$tmp/o" 2
  expect subsample-unwritable 1 "/nonexistent/dir/o.ctf: cannot create" -- "$memtrace" subsample "$t" /nonexistent/dir/o.ctf 2
  expect subsample-help 0 "" -- "$memtrace" help subsample
  grep -q "^usage: memtrace subsample" "$tmp/out" || { echo "FAIL subsample-help: no usage" >&2; failed=$((failed + 1)); }
  expect strip-names-one-arg 2 "missing IN and OUT" -- "$memtrace" strip-names "$t"
  expect strip-names-extra 2 "unexpected argument" -- "$memtrace" strip-names "$t" "$tmp/o" "$tmp/p"
  expect strip-names-no-file 1 "/nonexistent/x.ctf: cannot open" -- "$memtrace" strip-names /nonexistent/x.ctf "$tmp/o"
  expect strip-names-unwritable 1 "/nonexistent/dir/o.ctf: cannot create" -- "$memtrace" strip-names "$t" /nonexistent/dir/o.ctf
  expect strip-names-bad-version 2 "--format-version takes 2 or 3, not '4'" -- "$memtrace" strip-names --format-version 4 "$t" "$tmp/o"
  expect subsample-bad-version 2 "--format-version takes 2 or 3, not 'x'" -- "$memtrace" subsample --format-version=x "$t" "$tmp/o" 2
  expect strip-names-help 0 "" -- "$memtrace" strip-names -h
  grep -q "^usage: memtrace strip-names" "$tmp/out" || { echo "FAIL strip-names-help: no usage" >&2; failed=$((failed + 1)); }
  # Corrupt input: exit 1 naming the file (a trace cut inside a packet is
  # read up to the cut, with a warning).
  printf 'this is not a trace at all, just text\n' > "$tmp/text.ctf"
  for c in hotspots flamegraph identify; do
    expect "$c-not-a-trace" 1 "text.ctf: corrupt trace" -- "$memtrace" "$c" "$tmp/text.ctf"
  done
  head -c 50000 "$t" > "$tmp/cut.ctf"
  expect hotspots-truncated 0 "warning: .*cut.ctf: trace truncated" -- "$memtrace" hotspots "$tmp/cut.ctf"
  # The list of commands names them.
  "$memtrace" --help > "$tmp/out"
  for c in hotspots flamegraph identify subsample strip-names; do
    grep -q "^  $c " "$tmp/out" || { echo "FAIL --help does not list $c" >&2; failed=$((failed + 1)); }
  done
  # Progress: nothing on stderr when it is not a terminal.
  for c in hotspots flamegraph identify; do
    "$memtrace" "$c" "$traces/workload-1e-3.ctf" > /dev/null 2> "$tmp/err"
    [ ! -s "$tmp/err" ] || { echo "FAIL $c wrote to a non-terminal stderr" >&2; failed=$((failed + 1)); }
  done
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  ;;
*) fail "unknown check" ;;
esac
