#!/usr/bin/env bash
# The documentation: README.md is a user guide of at most 20 KiB (20,480 bytes);
# every relative link in README.md and docs/*.md leads to a file of the
# checkout; no page speaks of the project's history ("session", "until
# now"); every `memtrace COMMAND` in the README's code blocks is one of the
# command's commands. Usage: readme.sh SOURCE_DIR MEMTRACE
set -uo pipefail
source=$1 memtrace=$2
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { echo "FAIL: $*" >&2; failed=$((failed + 1)); }
readme=$source/README.md
pages=("$readme" "$source"/docs/*.md)

# Size: the README is read top down; past this it is a reference again.
size=$(wc -c < "$readme")
[ "$size" -le 20480 ] && ok || bad "README.md is $size bytes (at most 20480)"

# A page's text outside its fenced code blocks, inline code spans removed.
prose() { awk '/^[[:space:]]*```/ { code = !code; next } !code' "$1" | sed 's/`[^`]*`//g'; }
# The lines inside a page's fenced code blocks.
code_blocks() { awk '/^[[:space:]]*```/ { code = !code; next } code' "$1"; }

# Links: [text](target) and ![alt](target); targets with a scheme or only
# an anchor are not files.
for page in "${pages[@]}"; do
  dir=$(dirname "$page")
  while IFS= read -r target; do
    case $target in
      http://* | https://* | mailto:* | '#'*) continue ;;
    esac
    path=${target%%#*}
    [ -e "$dir/$path" ] && ok || bad "${page#"$source"/}: link to '$target': no such file"
  done < <(prose "$page" | grep -o '\]([^)[:space:]]*)' | sed 's/^](//; s/)$//')
done

# History: the documentation describes the product as it is. The source
# file names src/tracer/session.[ch] are names, not words of the text.
for page in "${pages[@]}"; do
  hits=$(sed -E 's/[A-Za-z_/]*session\.[ch]\b//g' "$page" | grep -n -i -w -E 'session|until now')
  [ -z "$hits" ] && ok || bad "${page#"$source"/} speaks of history: $(echo "$hits" | head -3)"
done

# Commands named in the README's code blocks, against `memtrace --help`
# (its list, and `help`, which it names).
commands=$("$memtrace" --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
[ -n "$commands" ] && ok || bad "no command list in memtrace --help"
named=$(code_blocks "$readme" | grep -o -E '(^|[^[:alnum:]_.-])memtrace[[:space:]]+[a-z][a-z-]*' |
  awk '{ print $NF }' | sort -u)
[ -n "$named" ] && ok || bad "no memtrace command found in the README's code blocks"
for cmd in $named; do
  if [ "$cmd" = help ] || grep -qx -- "$cmd" <<< "$commands"; then ok; else
    bad "README.md names 'memtrace $cmd', which is not a command"
  fi
done

echo "docs.readme: $passed passed, $failed failed"
[ "$failed" = 0 ]
