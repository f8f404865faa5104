#!/usr/bin/env bash
# memtrace flamegraph's own options, checked against figures derived from
# memtrace's own dump of the same trace. Usage: flamegraph_options.sh MEMTRACE TRACES NAME
set -uo pipefail
memtrace=$1 traces=$2 name=$3
trace=$traces/$name.ctf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { echo "FAIL [$name]: $*" >&2; failed=$((failed + 1)); }
sum() { awk '{s += $NF} END {print s + 0}' "$1"; }
xz -dc "$traces/$name.dump.txt.xz" > "$tmp/dump"

# --weight samples through the query path is memtrace's flamegraph exactly
"$memtrace" flamegraph --weight samples "$trace" > "$tmp/samples"
cmp -s "$tmp/samples" "$traces/$name.folded.txt" && ok || bad "--weight samples differs from memtrace's"

# bytes = samples / rate x 8, per line (rounding aside)
rate=$("$memtrace" identify "$trace" | sed -n 's/.*sample rate \([0-9.e+-]*\).*/\1/p')
"$memtrace" flamegraph --weight bytes "$trace" > "$tmp/bytes"
paste -d' ' <(sed 's/ [0-9]*$//' "$tmp/samples") <(awk '{print $NF}' "$tmp/samples") \
  <(awk '{print $NF}' "$tmp/bytes") |
  awk -v r="$rate" '{ want = $(NF-1) / r * 8; if ($NF < want - 1 || $NF > want + 1) bad++ } END { exit bad > 0 }' &&
  ok || bad "--weight bytes is not samples / $rate x 8"

# --live-at-end: the samples of objects the dump never collects
awk '$3 ~ /^alloc/ {s[$2] = $4} $3 == "collect" {delete s[$2]} END {t = 0; for (k in s) t += s[k]; print t}' \
  "$tmp/dump" > "$tmp/want_live"
"$memtrace" flamegraph --live-at-end "$trace" > "$tmp/live"
[ "$(sum "$tmp/live")" = "$(cat "$tmp/want_live")" ] && ok ||
  bad "--live-at-end sums to $(sum "$tmp/live"), the dump says $(cat "$tmp/want_live")"

# --time: the samples of objects allocated in [0.05 s, 0.1 s)
awk '$3 ~ /^alloc/ && $1 + 0 >= 50000 && $1 + 0 < 100000 {t += $4} END {print t + 0}' "$tmp/dump" > "$tmp/want_time"
"$memtrace" flamegraph --time 0.05..0.1 "$trace" > "$tmp/time"
[ "$(sum "$tmp/time")" = "$(cat "$tmp/want_time")" ] && ok ||
  bad "--time sums to $(sum "$tmp/time"), the dump says $(cat "$tmp/want_time")"

# --inverted: the same stacks, callee first
"$memtrace" flamegraph --inverted "$trace" |
  awk '{w = $NF; $NF = ""; sub(/ $/, ""); n = split($0, f, ";"); s = f[n]; for (i = n - 1; i >= 1; i--) s = s ";" f[i]; print s, w}' |
  sort > "$tmp/uninverted"
sort "$tmp/samples" > "$tmp/sorted"
cmp -s "$tmp/uninverted" "$tmp/sorted" && ok || bad "--inverted is not the reversed stacks"

"$memtrace" flamegraph --weight tons "$trace" > /dev/null 2> "$tmp/err"
[ $? = 2 ] && grep -q "takes samples, bytes or objects" "$tmp/err" && ok || bad "bad --weight: $(cat "$tmp/err")"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
