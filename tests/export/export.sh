#!/usr/bin/env bash
# Tests of `memtrace export --format pprof`. The profile is decoded with
# protoc against pprof's own profile.proto, then read back by pprof_text.awk,
# which resolves every id and checks the references pprof checks.
#
#   export.sh known   MEMTRACE GEN_KNOWN REFERENCE_DIR
#   export.sh golden  MEMTRACE TRACES_DIR NAME REFERENCE_DIR
#   export.sh errors  MEMTRACE TRACES_DIR REFERENCE_DIR
#   export.sh reread  MEMTRACE GEN_TRACE REFERENCE_DIR
#
# known: a trace written by the library at sample rate 1 (gen_known.c), where
# every value is known exactly: samples, locations, inlined lines, header.
# golden: memtrace's reference traces, against memtrace's own outputs: the
# dump (per stack and source: objects, bytes, in use at the end and at a
# time) and the flamegraph's folded stacks.
# errors: usage errors exit 2, bad input and unwritable output exit 1 naming
# the file, and no partial file is ever left behind.
set -uo pipefail
check=$1 memtrace=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0

ok() { passed=$((passed + 1)); }
fail() { echo "FAIL $*" >&2; failed=$((failed + 1)); }

# decode FILE.pb.gz: the profile as protoc's text, into FILE.txt.
decode() {
  if ! gzip -t "$1" 2>/dev/null; then fail "$1 is not gzip"; return 1; fi
  if ! zcat "$1" | protoc --decode=perftools.profiles.Profile -I "$refdir" profile.proto \
      > "${1%.pb.gz}.txt" 2> "$tmp/protoc.err"; then
    fail "protoc cannot decode $1: $(cat "$tmp/protoc.err")"
    return 1
  fi
}

# view WHAT FILE.pb.gz: pprof_text.awk's view of an exported profile.
view() {
  decode "$2" || return 1
  awk -v what="$1" -f "$here/pprof_text.awk" "${2%.pb.gz}.txt"
}

# same NAME EXPECTED ACTUAL: compares two texts, line order ignored.
same() {
  if diff <(LC_ALL=C sort <<< "$2") <(LC_ALL=C sort <<< "$3") > "$tmp/diff"; then
    ok
  else
    fail "$1:"
    sed 's/^/  /' "$tmp/diff" >&2
  fi
}

# export NAME ARGS...: runs the export into $tmp/NAME.pb.gz; 1 if it failed.
export_to() {
  local name=$1
  shift
  if ! "$memtrace" export "$@" -o "$tmp/$name.pb.gz" 2> "$tmp/$name.err"; then
    fail "export $name: $(cat "$tmp/$name.err")"
    return 1
  fi
}

known() {
  local gen=$1
  refdir=$2
  "$gen" "$tmp/known.ctf" || { fail "gen_known"; return; }
  local t=$tmp/known.ctf tab=$'\t'

  export_to default --format pprof "$t" || return
  same "known: samples" "$(sed "s/ *|/$tab/g" <<'EOF'
source=minor    |main;parse;lex;alloc_node    |2 80 1 40
source=minor    |(no backtrace)               |1 16 1 16
source=minor    |main;helper;helper           |1 32 0 0
source=major    |main;$16384                  |1 24 0 0
source=major    |main;helper                  |1 72 1 72
source=external |main;parse;lex;alloc_node    |1 800 1 800
EOF
)" "$(view samples "$tmp/default.pb.gz")"
  # Samples come one backtrace at a time (a backtrace's sources together,
  # minor, major, external): the two samples of main;parse;lex;alloc_node
  # are neighbours.
  [ "$(view samples "$tmp/default.pb.gz" | cut -f2 | uniq -c | awk '$2 == "main;parse;lex;alloc_node" {print $1}')" = 2 ] &&
    ok || fail "known: a backtrace's samples are not together"

  same "known: header" "$(cat <<'EOF'
sample_type alloc_objects count
sample_type alloc_space bytes
sample_type inuse_objects count
sample_type inuse_space bytes
period_type space bytes
period 8
default_sample_type alloc_space
time_nanos 1700000000000000000
duration_nanos 300000
mapping /usr/bin/known-program has_functions has_filenames has_line_numbers has_inline_frames
EOF
)" "$(view header "$tmp/default.pb.gz" | grep -v '^comment')"
  local comments
  comments=$(view header "$tmp/default.pb.gz" | grep '^comment')
  for want in "executable: /usr/bin/known-program" "host: testhost" "pid: 4242" \
      "sample rate: 1 per word (one sample per 8 bytes)" "inuse: never collected"; do
    grep -qF "comment $want" <<< "$comments" && ok || fail "known: no comment '$want' in: $comments"
  done

  # One location per code, its lines innermost first: lex was inlined into
  # parse, so lex comes first (columns are memtrace's start_char + 1). The
  # code with no locations keeps its address; the empty backtrace has a
  # stand-in location with no address.
  same "known: locations" "$(cat <<'EOF'
location 4096 main:10:3
location 8192 lex:5:1 parse:20:5
location 12288 alloc_node:30:7
location 16384
location 20480 helper:40:3
location 0 (no backtrace):0:0
EOF
)" "$(view locations "$tmp/default.pb.gz")"
  # Functions once each (the table checks ids and strings are unique).
  same "known: functions" "$(cat <<'EOF'
function main main main.c
function lex lex lex.c
function parse parse parse.c
function alloc_node alloc_node tree.c
function helper helper main.c
function (no backtrace) (no backtrace) 
EOF
)" "$(view functions "$tmp/default.pb.gz")"
  # The string table starts with "" (pprof_text.awk fails otherwise) and
  # is checked at the byte level too: the first field-6 entry is empty.
  grep -m1 '^string_table:' "$tmp/default.txt" | grep -qx 'string_table: ""' && ok ||
    fail "known: string_table[0] is not empty"

  export_to merged --merge-sources "$t" || return
  same "known: --merge-sources" "$(sed "s/ *|/$tab/g" <<'EOF'
-               |main;parse;lex;alloc_node    |3 880 2 840
-               |main;$16384                  |1 24 0 0
-               |(no backtrace)               |1 16 1 16
-               |main;helper;helper           |1 32 0 0
-               |main;helper                  |1 72 1 72
EOF
)" "$(view samples "$tmp/merged.pb.gz")"

  # A snapshot at 45 us: alloc_* count what was allocated by then (A-D),
  # inuse_* what was alive then (all four: A dies at 100, D at 200).
  export_to at45 --live-at 0.000045 "$t" || return
  same "known: --live-at" "$(sed "s/ *|/$tab/g" <<'EOF'
source=minor    |main;parse;lex;alloc_node    |2 80 2 80
source=major    |main;$16384                  |1 24 1 24
source=external |main;parse;lex;alloc_node    |1 800 1 800
EOF
)" "$(view samples "$tmp/at45.pb.gz")"
  view header "$tmp/at45.pb.gz" | grep -qx 'duration_nanos 45000' && ok ||
    fail "known: --live-at duration"

  # At 150 us, A is dead and D, F are still alive.
  export_to at150 --live-at 0.00015 --merge-sources "$t" || return
  same "known: --live-at 150us" "$(sed "s/ *|/$tab/g" <<'EOF'
-               |main;parse;lex;alloc_node    |3 880 2 840
-               |main;$16384                  |1 24 1 24
-               |(no backtrace)               |1 16 1 16
-               |main;helper;helper           |1 32 1 32
-               |main;helper                  |1 72 1 72
EOF
)" "$(view samples "$tmp/at150.pb.gz")"

  # The peak is at 70 us, when every object is alive.
  export_to peak --live-at-peak --merge-sources "$t" || return
  same "known: --live-at-peak" "$(sed "s/ *|/$tab/g" <<'EOF'
-               |main;parse;lex;alloc_node    |3 880 3 880
-               |main;$16384                  |1 24 1 24
-               |(no backtrace)               |1 16 1 16
-               |main;helper;helper           |1 32 1 32
-               |main;helper                  |1 72 1 72
EOF
)" "$(view samples "$tmp/peak.pb.gz")"
  view header "$tmp/peak.pb.gz" | grep -qx 'duration_nanos 70000' && ok ||
    fail "known: --live-at-peak duration"

  # The common filters choose the objects.
  export_to major --source major "$t" || return
  same "known: --source major" "$(sed "s/ *|/$tab/g" <<'EOF'
source=major    |main;$16384                  |1 24 0 0
source=major    |main;helper                  |1 72 1 72
EOF
)" "$(view samples "$tmp/major.pb.gz")"
  export_to inside --inside lex --size ..100 "$t" || return
  same "known: --inside --size" "$(sed "s/ *|/$tab/g" <<'EOF'
source=minor    |main;parse;lex;alloc_node    |2 80 1 40
EOF
)" "$(view samples "$tmp/inside.pb.gz")"
  # Locations and functions only for what the samples use.
  same "known: --inside locations" "$(cat <<'EOF'
location 4096 main:10:3
location 8192 lex:5:1 parse:20:5
location 12288 alloc_node:30:7
EOF
)" "$(view locations "$tmp/inside.pb.gz")"
  export_to none --time 1..2 "$t" || return
  same "known: no objects" "" "$(view samples "$tmp/none.pb.gz")"

  # Standard output.
  if "$memtrace" export "$t" -o - > "$tmp/stdout.pb.gz" 2> "$tmp/err" &&
      cmp -s "$tmp/stdout.pb.gz" "$tmp/default.pb.gz"; then ok; else fail "known: -o -"; fi
}

golden() {
  local traces=$1 name=$2
  refdir=$3
  local t=$traces/$name.ctf
  export_to "$name" "$t" || return
  local rate period
  rate=$("$memtrace" info "$t" | awk '/^sample rate:/ {print $3}')
  view header "$tmp/$name.pb.gz" > "$tmp/$name.header" || { fail "$name: bad profile"; return; }
  period=$(awk '$1 == "period" {print $2}' "$tmp/$name.header")
  view samples "$tmp/$name.pb.gz" > "$tmp/$name.samples" || { fail "$name: bad profile"; return; }
  xzcat "$traces/$name.dump.txt.xz" > "$tmp/dump.txt"

  # compare LABEL EXPECTED ACTUAL: bytes exactly, object counts within the
  # rounding of each sample merged into a line (stacks of distinct codes can
  # print alike).
  compare() {
    if awk -F'\t' -v what="$1" '
        FNR == NR { want[$1 "\t" $2] = $3; next }
        { k = $1 "\t" $2; n[k]++; split($3, v, " ")
          for (i = 1; i <= 4; i++) got[k, i] += v[i] }
        END {
          bad = 0
          for (k in want) if (!(k in n)) { print what ": missing " k; bad++ }
          for (k in n) {
            if (!(k in want)) { print what ": unexpected " k; bad++; continue }
            split(want[k], w, " ")
            for (i = 1; i <= 4; i++) {
              d = got[k, i] - w[i]; if (d < 0) d = -d
              if ((i % 2 == 0 && d != 0) || (i % 2 == 1 && d > n[k] * 0.5 + 0.01)) {
                print what ": " k ": value " i " is " got[k, i] ", want " w[i]; bad++; break
              }
            }
          }
          exit bad > 0
        }' "$2" "$3" > "$tmp/cmp"; then
      ok
    else
      fail "$name: $1 differs from memtrace's dump:"
      head -20 "$tmp/cmp" >&2
    fi
  }

  awk -v rate="$rate" -v period="$period" -v at=-1 -v merge=0 -f "$here/dump_expect.awk" \
      "$tmp/dump.txt" > "$tmp/want"
  compare "samples" "$tmp/want" "$tmp/$name.samples"

  # A snapshot in the middle of the trace.
  local dur mid
  dur=$(awk '$1 == "duration_nanos" {print $2}' "$tmp/$name.header")
  mid=$((dur / 2000))
  export_to "$name.mid" --live-at "$(awk -v us="$mid" 'BEGIN {printf "%.6f", us / 1e6}')" \
      --merge-sources "$t" || return
  awk -v rate="$rate" -v period="$period" -v at="$mid" -v merge=1 -f "$here/dump_expect.awk" \
      "$tmp/dump.txt" > "$tmp/want.mid"
  view samples "$tmp/$name.mid.pb.gz" > "$tmp/$name.mid.samples"
  compare "--live-at $mid us" "$tmp/want.mid" "$tmp/$name.mid.samples"

  # memtrace's flamegraph: samples (bytes / period) per stack of function
  # names, leaving out codes with no locations and any function already
  # on the stack (memtrace's folding).
  awk -F'\t' -v period="$period" '
      { n = split($2, f, ";"); s = ""; delete seen
        for (i = 1; i <= n; i++) {
          if (f[i] ~ /^\$/ || (f[i] in seen)) continue
          seen[f[i]] = 1; s = s (s == "" ? "" : ";") f[i]
        }
        split($3, v, " "); agg[s] += v[2] / period }
      END { for (k in agg) printf "%s %d\n", k, agg[k] }' "$tmp/$name.samples" \
    | LC_ALL=C sort > "$tmp/folded"
  if LC_ALL=C sort "$traces/$name.folded.txt" | cmp -s - "$tmp/folded"; then
    ok
  else
    fail "$name: folded stacks differ from memtrace's flamegraph:"
    LC_ALL=C sort "$traces/$name.folded.txt" | diff - "$tmp/folded" | head -10 >&2
  fi

  # Every sample has 4 values and a location; the header is as documented.
  awk -F'\t' 'split($3, v, " ") != 4 || $2 == "" {bad = 1} END {exit bad}' \
      "$tmp/$name.samples" && ok || fail "$name: a sample without 4 values or a stack"
  head -5 "$tmp/$name.header" | tr '\n' ' ' | grep -qx \
    'sample_type alloc_objects count sample_type alloc_space bytes sample_type inuse_objects count sample_type inuse_space bytes period_type space bytes ' &&
    ok || fail "$name: sample types"
  grep -qx 'default_sample_type alloc_space' "$tmp/$name.header" && ok ||
    fail "$name: default sample type"
}

# expect NAME STATUS PATTERN -- CMD...: runs CMD, checks its exit status and
# that stderr matches the extended regex PATTERN.
expect() {
  local name=$1 status=$2 pattern=$3
  shift 4
  "$@" > "$tmp/out" 2> "$tmp/err"
  local got=$?
  if [ "$got" -ne "$status" ] || { [ -n "$pattern" ] && ! grep -Eq -- "$pattern" "$tmp/err"; }; then
    fail "$name: exit $got (want $status), stderr: $(cat "$tmp/err")"
  else
    ok
  fi
}

# no_output NAME FILE: neither FILE nor FILE.tmp exists.
no_output() {
  [ ! -e "$2" ] && [ ! -e "$2.tmp" ] && ok || fail "$1: left $(ls "$2"* 2>/dev/null)"
}

errors() {
  local traces=$1
  refdir=$2
  local t=$traces/ocamlopt.ctf o=$tmp/out.pb.gz
  expect no-output 2 "missing -o FILE" -- "$memtrace" export "$t"
  expect no-trace 2 "missing TRACE" -- "$memtrace" export -o "$o"
  expect bad-format 2 "--format takes pprof, not 'json'" -- "$memtrace" export --format json "$t" -o "$o"
  expect format-no-value 2 "--format needs a value" -- "$memtrace" export "$t" -o "$o" --format
  expect o-no-value 2 "-o needs a value" -- "$memtrace" export "$t" -o
  expect bad-option 2 "unknown option '--bogus'" -- "$memtrace" export --bogus "$t" -o "$o"
  expect bad-filter 2 "--source: 'stack' is not a source \\(minor, major, external, mapping or heap\\)" -- \
    "$memtrace" export --source stack "$t" -o "$o"
  cp "$t" "$tmp/self.ctf"
  expect output-is-input 2 "the output '.*self.ctf' is the trace itself" -- \
    "$memtrace" export "$tmp/self.ctf" -o "$tmp/self.ctf"
  cmp -s "$t" "$tmp/self.ctf" && ok || fail "output-is-input: the trace changed"
  expect help 0 "" -- "$memtrace" export --help
  grep -q "usage: memtrace export" "$tmp/out" && ok || fail "help: no usage"
  no_output usage "$o"

  expect no-file 1 "/nonexistent/trace.ctf: cannot open" -- \
    "$memtrace" export /nonexistent/trace.ctf -o "$o"
  no_output no-file "$o"
  expect second-no-file 1 "/nonexistent/second.ctf: cannot open" -- \
    "$memtrace" export "$t" /nonexistent/second.ctf -o "$o"
  no_output second-no-file "$o"
  printf 'this is not a trace at all, just text\n' > "$tmp/text.ctf"
  expect not-a-trace 1 "text.ctf: corrupt trace at byte 0" -- \
    "$memtrace" export "$tmp/text.ctf" -o "$o"
  no_output not-a-trace "$o"
  expect unwritable 1 "/nonexistent/dir/out.pb.gz: cannot create" -- \
    "$memtrace" export "$t" -o /nonexistent/dir/out.pb.gz
  if [ -w /dev/full ]; then
    expect full-disk 1 "/dev/full: writing the profile failed: No space left on device" -- \
      "$memtrace" export "$t" -o /dev/full
  fi

  # A failure while writing (the file size limit, with SIGXFSZ ignored so
  # write() fails with EFBIG) leaves the previous file untouched and no
  # FILE.tmp behind.
  echo previous > "$o"
  expect too-large 1 "out.pb.gz: writing the profile failed: File too large" -- \
    bash -c 'trap "" XFSZ; ulimit -f 8; exec "$@"' _ "$memtrace" export "$t" -o "$o"
  [ "$(cat "$o")" = previous ] && [ ! -e "$o.tmp" ] && ok || fail "too-large: output changed"
  # A bad trace leaves the previous file untouched too.
  expect bad-trace-keeps 1 "text.ctf" -- "$memtrace" export "$tmp/text.ctf" -o "$o"
  [ "$(cat "$o")" = previous ] && [ ! -e "$o.tmp" ] && ok || fail "bad-trace-keeps: output changed"

  # A truncated trace exports its complete packets, with a warning.
  head -c 50000 "$t" > "$tmp/cut.ctf"
  expect truncated 0 "warning: .*cut.ctf: trace truncated" -- \
    "$memtrace" export "$tmp/cut.ctf" -o "$tmp/cut.pb.gz"
  view samples "$tmp/cut.pb.gz" > "$tmp/cut.samples" && [ -s "$tmp/cut.samples" ] && ok ||
    fail "truncated: no samples"
  # Success replaces the previous file and leaves no FILE.tmp.
  expect replaces 0 "" -- "$memtrace" export "$t" -o "$o"
  gzip -t "$o" && [ ! -e "$o.tmp" ] && ok || fail "replaces: $o"
  # Output to a terminal is refused rather than spraying binary.
  if command -v script > /dev/null; then
    script -qec "\"$memtrace\" export \"$t\" -o -" /dev/null > "$tmp/tty" 2>&1
    grep -q "not writing a gzip'd profile to a terminal" "$tmp/tty" && ok || fail "tty: $(head -c 200 "$tmp/tty")"
  fi
}

# reread: on traces of nearly all distinct stacks the export keeps no
# objects and reads each trace again for its samples (MT_KEEP_PROFILE): the
# same profile, byte for byte, as from a whole load (MEMTRACE_LOAD=whole),
# with sources apart or merged, for one trace and for two together.
reread() {
  local gen=$1 t2="$tmp/distinct-v2.ctf" t3="$tmp/distinct-v3.ctf"
  "$gen" "$t2" --events 1500000 --seed 3 > /dev/null || { fail "mt_gen_trace v2"; return; }
  "$gen" "$t3" --events 1500000 --seed 4 --version 3 --domains 4 > /dev/null ||
    { fail "mt_gen_trace v3"; return; }
  local name args
  for name in v2 v3 v2-merged both; do
    case $name in
      v2) args=("$t2") ;;
      v3) args=("$t3") ;;
      v2-merged) args=(--merge-sources "$t2") ;;
      both) args=("$t2" "$t3") ;;
    esac
    "$memtrace" export "${args[@]}" -o "$tmp/$name.pb.gz" 2> "$tmp/err" ||
      { fail "reread $name: $(cat "$tmp/err")"; continue; }
    MEMTRACE_LOAD=whole "$memtrace" export "${args[@]}" -o "$tmp/$name-whole.pb.gz" ||
      { fail "reread $name: the whole load's export failed"; continue; }
    if cmp -s <(zcat "$tmp/$name.pb.gz") <(zcat "$tmp/$name-whole.pb.gz"); then ok
    else fail "reread $name: not the whole load's profile"; fi
  done
  # a profile protoc reads, of about a sample per allocation
  decode "$tmp/v2.pb.gz" && [ "$(grep -c '^sample {' "$tmp/v2.txt")" -gt 500000 ] && ok ||
    fail "reread v2: not a profile of distinct stacks"
}

case $check in
  known) known "$3" "$4" ;;
  reread) refdir=$4; reread "$3" ;;
  golden) golden "$3" "$4" "$5" ;;
  errors) errors "$3" "$4" ;;
  *) echo "export.sh: unknown check '$check'" >&2; exit 2 ;;
esac
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
