#!/usr/bin/env bash
# The memtrace command's contract on bad input: usage errors exit 2, bad or
# unreadable input exits 1, each with a message naming the file (and, for
# corrupt data, the byte offset); a truncated trace yields every complete
# packet and a warning; output failures are reported, never silent.
set -uo pipefail
memtrace=$1 traces=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0

# expect NAME STATUS PATTERN -- CMD...: runs CMD, checks its exit status and
# that stderr matches the extended regex PATTERN.
expect() {
  local name=$1 status=$2 pattern=$3
  shift 4
  "$@" > "$tmp/out" 2> "$tmp/err"
  local got=$?
  if [ "$got" -ne "$status" ] || { [ -n "$pattern" ] && ! grep -Eq -- "$pattern" "$tmp/err"; }; then
    echo "FAIL $name: exit $got (want $status), stderr:" >&2
    sed 's/^/  /' "$tmp/err" >&2
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
}

t=$traces/ocamlopt.ctf
expect no-args 2 "usage: memtrace" -- "$memtrace"
expect unknown-cmd 2 "no command 'frobnicate'" -- "$memtrace" frobnicate
# a near miss gets the command meant, and no page of usage
expect near-cmd 2 "^memtrace: no command 'lekas'; did you mean 'leaks'\?$" -- "$memtrace" lekas
expect near-cmd-lines 2 "" -- "$memtrace" tpo
[ "$(wc -l < "$tmp/err")" = 2 ] && grep -q "did you mean 'top'" "$tmp/err" && passed=$((passed + 1)) ||
  { echo "FAIL near-cmd-lines: $(cat "$tmp/err")" >&2; failed=$((failed + 1)); }
expect near-help 2 "did you mean 'stats'" -- "$memtrace" help stast
expect near-opt 2 "unknown option '--bye'; did you mean '--by'\?" -- "$memtrace" top --bye "$t"
expect near-filter-opt 2 "unknown option '--live-at-pek'; did you mean '--live-at-peak'\?" -- "$memtrace" leaks --live-at-pek "$t"
expect near-opt-value 2 "unknown option '--sizee=1k'; did you mean '--size'\?" -- "$memtrace" top --sizee=1k "$t"
expect near-run-opt 2 "unknown option '--rat'; did you mean '--rate'\?" -- "$memtrace" run --rat 1 -- true
expect dump-missing 2 "missing TRACE" -- "$memtrace" dump
expect dump-bad-opt 2 "unknown option '--bogus'" -- "$memtrace" dump --bogus "$t"
expect dump-extra 2 "unexpected argument" -- "$memtrace" dump "$t" "$t"
expect copy-one-arg 2 "missing IN and OUT" -- "$memtrace" copy "$t"
expect copy-bad-version 2 "--format-version takes 2 or 3, not '4'" -- "$memtrace" copy --format-version 4 "$t" "$tmp/x"
expect info-missing 2 "missing TRACE" -- "$memtrace" info
expect help 0 "" -- "$memtrace" --help
expect help-cmd 0 "" -- "$memtrace" help dump
grep -q "usage: memtrace dump" "$tmp/out" || { echo "FAIL help-cmd: no usage" >&2; failed=$((failed + 1)); }
expect version 0 "" -- "$memtrace" --version
grep -Eq "^memtrace \(memtrace-c\) [0-9]+\.[0-9]+\.[0-9]+" "$tmp/out" || { echo "FAIL version output" >&2; failed=$((failed + 1)); }

expect no-file 1 "/nonexistent/trace.ctf: cannot open: No such file" -- "$memtrace" dump /nonexistent/trace.ctf
: > "$tmp/empty.ctf"
expect empty 1 "empty.ctf: corrupt trace at byte 0: empty file" -- "$memtrace" dump "$tmp/empty.ctf"
printf 'this is not a trace at all, just text\n' > "$tmp/text.ctf"
expect not-a-trace 1 "text.ctf: corrupt trace at byte 0: bad packet magic" -- "$memtrace" info "$tmp/text.ctf"

# Version field (offset 28) of the second packet set to 9.
first=$(( $(od -An -tu4 -j4 -N4 "$t") / 8 ))
cp "$t" "$tmp/badver.ctf"
printf '\x09' | dd of="$tmp/badver.ctf" bs=1 seek=$((first + 28)) conv=notrunc status=none
expect bad-version 1 "badver.ctf: at byte $((first + 28)): unsupported trace format version 9" -- "$memtrace" dump "$tmp/badver.ctf"

# An event code no version defines, in the first event of the second packet.
cp "$t" "$tmp/badcode.ctf"
# byte 3 of the event header: 7 code bits, then the timestamp's top bit (kept)
top=$(od -An -tu1 -j$((first + 66 + 3)) -N1 "$t")
printf "\\x$(printf %02x $(( 0xfe | (top & 1) )))" | dd of="$tmp/badcode.ctf" bs=1 seek=$((first + 66 + 3)) conv=notrunc status=none
expect bad-event 1 "badcode.ctf: corrupt trace at byte $((first + 66)): unknown event code 127" -- "$memtrace" dump "$tmp/badcode.ctf"

# Cut inside a packet: every complete packet is dumped, then a warning.
head -c 50000 "$t" > "$tmp/cut.ctf"
expect truncated 0 "warning: .*cut.ctf: trace truncated: the packet at byte [0-9]+ needs" -- "$memtrace" dump "$tmp/cut.ctf"
n=$(wc -l < "$tmp/out")
cp "$tmp/out" "$tmp/cut.txt"
"$memtrace" dump "$t" > "$tmp/full.txt"
head -n "$n" "$tmp/full.txt" | cmp -s - "$tmp/cut.txt" && [ "$n" -gt 100 ] ||
  { echo "FAIL truncated: output is not a prefix of the full dump ($n lines)" >&2; failed=$((failed + 1)); }

expect copy-unwritable 1 "/nonexistent/dir/out.ctf: cannot create" -- "$memtrace" copy "$t" /nonexistent/dir/out.ctf
if [ -w /dev/full ]; then
  expect copy-full-disk 1 "/dev/full: writing the trace failed: No space left on device" -- "$memtrace" copy "$t" /dev/full
  expect dump-full-disk 1 "writing to standard output failed: No space left on device" -- sh -c "\"$memtrace\" dump \"$t\" > /dev/full"
fi
# a file size limit (ulimit -f, KiB) the output reaches: a message, not SIGXFSZ
expect copy-file-size-limit 1 "out.ctf: writing the trace failed: File too large" -- \
  sh -c "ulimit -f 16 && exec \"$memtrace\" copy \"$t\" \"$tmp/out.ctf\""
expect dump-file-size-limit 1 "writing to standard output failed: File too large" -- \
  sh -c "ulimit -f 16 && exec \"$memtrace\" dump \"$t\" > \"$tmp/dump.txt\""

# a port another process listens on: said plainly, with what to do
python3 -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
open("'"$tmp"'/port", "w").write(str(s.getsockname()[1])); time.sleep(10)' &
busy=$!
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
expect busy-port 1 "cannot listen on 127.0.0.1:[0-9]+: Address already in use \(another process listens there: choose another port, or 0 for any free one\)" -- \
  "$memtrace" listen "127.0.0.1:$(cat "$tmp/port")" -o "$tmp/busy.ctf"
# memtrace view on a busy port says it, and where it serves instead
timeout 5 "$memtrace" view --port "$(cat "$tmp/port")" "$t" > "$tmp/view.out" 2> "$tmp/view.err"
grep -Eq "port $(cat "$tmp/port") is taken \(another process listens there\): serving on [0-9]+" "$tmp/view.err" &&
  grep -q "serving .* at http://127.0.0.1:" "$tmp/view.out" && passed=$((passed + 1)) ||
  { echo "FAIL view-busy-port: $(cat "$tmp/view.err" "$tmp/view.out")" >&2; failed=$((failed + 1)); }
kill $busy 2> /dev/null
# memtrace view on a trace it cannot read says so before serving anything
expect view-missing 1 "memtrace view: /nonexistent/t.ctf: cannot open: No such file or directory" -- \
  "$memtrace" view --port 0 /nonexistent/t.ctf
grep -q serving "$tmp/out" && { echo "FAIL view-missing: served: $(cat "$tmp/out")" >&2; failed=$((failed + 1)); }
printf 'not a trace' > "$tmp/bad.ctf"
expect view-corrupt 1 "corrupt trace at byte 0" -- "$memtrace" view --port 0 "$tmp/bad.ctf"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
