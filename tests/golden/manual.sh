#!/usr/bin/env bash
# memtrace(1) and the bash completion, as the build writes them from the
# command's help texts: the page renders without a warning and holds every
# command's help; the completion completes commands, options, filter
# options and, after `run --`, programs; `cmake --install` puts both in
# place. Usage: manual.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 source=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { echo "FAIL: $*" >&2; failed=$((failed + 1)); }
memtrace=$build/memtrace

page=$build/memtrace.1
groff -man -Tutf8 -ww -z "$page" 2> "$tmp/warn"
[ ! -s "$tmp/warn" ] && ok || bad "groff warnings: $(head -5 "$tmp/warn")"
MANWIDTH=100 man -l "$page" 2> /dev/null | col -b > "$tmp/page.txt"
for cmd in $("$memtrace" --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}'); do
  # each command's help, as `memtrace help` prints it, is in the page
  first=$("$memtrace" help "$cmd" | head -1)
  grep -qF -- "$first" "$tmp/page.txt" && ok || bad "the page lacks '$first'"
done
grep -q -- "--live-at-peak" "$tmp/page.txt" && ok || bad "options' dashes lost in the page"

complete_at() { # complete_at WORD...: the completions of the last word
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _memtrace; echo "${COMPREPLY[*]}"' \
    _ "$build/memtrace.bash-completion" "$@"
}
[ "$(complete_at memtrace lea)" = leaks ] && ok || bad "command: $(complete_at memtrace lea)"
[ "$(complete_at memtrace top --si)" = --size ] && ok || bad "top's option: $(complete_at memtrace top --si)"
[ "$(complete_at memtrace leaks --live-at-p)" = --live-at-peak ] && ok ||
  bad "filter option: $(complete_at memtrace leaks --live-at-p)"
[ "$(complete_at memtrace help sta)" = stats ] && ok || bad "help's command: $(complete_at memtrace help sta)"
complete_at memtrace run --rate 1 -- ech | grep -qw echo && ok || bad "run's program: $(complete_at memtrace run -- ech)"

cmake --install "$build" --prefix "$tmp/prefix" > /dev/null 2>&1
[ -f "$tmp/prefix/share/man/man1/memtrace.1" ] && [ -f "$tmp/prefix/share/bash-completion/completions/memtrace" ] &&
  ok || bad "installed: $(cd "$tmp/prefix" && find . -name 'memtrace*' | head)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
