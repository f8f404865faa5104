#!/usr/bin/env bash
# Golden checks of the memtrace command against memtrace's own outputs on
# real traces (../shared/traces). Usage: golden.sh CHECK MEMTRACE TRACES NAME
#   dump     memtrace dump == memtrace's dump_trace output, byte for byte
#   compact  memtrace dump --compact == the same events, derived from it
#   copy     memtrace copy reproduces the trace byte for byte
#   v3       a v3 copy dumps the same events (and copies back to v2 identically)
#   babeltrace  babeltrace2 reads our v2 and v3 copies with the reference TSDL,
#            and sees the same number of each kind of event as our reader
set -euo pipefail
check=$1 memtrace=$2 traces=$3 name=$4
trace="$traces/$name.ctf"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL [$check $name]: $*" >&2; exit 1; }

case "$check" in
dump)
  "$memtrace" dump "$trace" > "$tmp/ours"
  xz -dc "$traces/$name.dump.txt.xz" > "$tmp/theirs"
  cmp "$tmp/ours" "$tmp/theirs" || {
    diff "$tmp/ours" "$tmp/theirs" | head -5 >&2
    fail "dump differs from memtrace's dump_trace"
  }
  echo "ok: $(wc -l < "$tmp/ours") lines identical"
  ;;
compact)
  "$memtrace" dump --compact "$trace" > "$tmp/ours"
  # The compact form, derived independently from memtrace's own dump.
  xz -dc "$traces/$name.dump.txt.xz" | awk '
    $3 == "alloc"       { sub("len=", "", $5); print $1, $2, "a", $5; next }
    $3 == "alloc_major" { sub("len=", "", $5); print $1, $2, "A", $5; next }
    $3 == "alloc_ext"   { sub("len=", "", $5); print $1, $2, "AE", $5; next }
    $3 == "promote"     { print $1, $2, "P"; next }
    $3 == "collect"     { print $1, $2, "C"; next }
    { print "unexpected line: " $0; exit 1 }' > "$tmp/theirs"
  cmp "$tmp/ours" "$tmp/theirs" || fail "compact dump differs"
  echo "ok: $(wc -l < "$tmp/ours") lines identical"
  ;;
copy)
  "$memtrace" copy "$trace" "$tmp/copy.ctf"
  cmp "$trace" "$tmp/copy.ctf" || fail "copy is not byte-identical"
  echo "ok: $(stat -c %s "$trace") bytes identical"
  ;;
v3)
  "$memtrace" copy --format-version 3 "$trace" "$tmp/v3.ctf"
  [ "$(head -c 30 "$tmp/v3.ctf" | od -An -tu2 -j28 -N2 | tr -d ' ')" = 3 ] ||
    fail "copy --format-version 3 did not write version 3"
  "$memtrace" dump "$trace" > "$tmp/a"
  "$memtrace" dump "$tmp/v3.ctf" > "$tmp/b"
  cmp "$tmp/a" "$tmp/b" || fail "v3 copy dumps differently"
  "$memtrace" copy "$tmp/v3.ctf" "$tmp/v2.ctf"
  cmp "$trace" "$tmp/v2.ctf" || fail "v3 -> v2 copy is not the original"
  echo "ok: v3 copy equivalent, and copies back to the original"
  ;;
babeltrace)
  command -v babeltrace2 >/dev/null || fail "babeltrace2 is not installed"
  ref=$(dirname "$0")/../../../shared/reference
  [ -d "$ref" ] || ref="$traces/../reference"
  "$memtrace" dump --compact "$trace" | awk '{print $3}' | sed 's/^a$/alloc/;s/^A$/alloc/;s/^AE$/alloc/;s/^P$/promote/;s/^C$/collect/' |
    sort | uniq -c > "$tmp/ours"
  for v in 2 3; do
    mkdir -p "$tmp/bt$v"
    cp "$ref/memtrace-v$v.tsdl" "$tmp/bt$v/metadata"
    if [ $v = 2 ]; then "$memtrace" copy "$trace" "$tmp/bt$v/stream"
    else "$memtrace" copy --format-version 3 "$trace" "$tmp/bt$v/stream"; fi
    babeltrace2 "$tmp/bt$v" > "$tmp/bt$v.txt" 2> "$tmp/bt$v.err" ||
      { cat "$tmp/bt$v.err" >&2; fail "babeltrace2 rejected our v$v trace"; }
    # Event names: alloc, alloc01..alloc16 -> alloc; location and trace_info are
    # not events of our reader.
    sed -E 's/^\[[^]]*\] \([^)]*\) ([a-z_0-9]+): .*/\1/' "$tmp/bt$v.txt" |
      sed -E 's/^alloc[0-9]+$/alloc/' | grep -Ev '^(location|trace_info)$' |
      sort | uniq -c > "$tmp/theirs$v"
    diff "$tmp/ours" "$tmp/theirs$v" >&2 || fail "babeltrace2 sees other events in v$v"
  done
  echo "ok: babeltrace2 reads v2 and v3 copies: $(tr -s ' ' < "$tmp/ours" | tr '\n' ' ')"
  ;;
*) fail "unknown check" ;;
esac
