#!/usr/bin/env bash
# bench/interleave.sh: CPU time of commands run in turn, round after round.
#
#   bench/interleave.sh ROUNDS 'COMMAND A' 'COMMAND B' ...
#
# Each round runs every command once, in the order given; a command's CPU
# time is user + sys (/usr/bin/time), its output discarded. Prints, for each
# command, the least and the median over the rounds, then each command's
# median ratio to the first one's, round by round (the ratio of two runs
# made a few seconds apart). On a machine shared with other jobs, where the
# same command's time drifts by tens of percent over minutes, this ratio is
# steadier than ratios of the best of separate series (bench/tools.sh).
set -euo pipefail
if [ $# -lt 2 ] || ! [[ $1 =~ ^[0-9]+$ ]] || [ "$1" -lt 1 ]; then
  echo "usage: bench/interleave.sh ROUNDS 'COMMAND' ['COMMAND'...]" >&2
  exit 2
fi
rounds=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((r = 0; r < rounds; r++)); do
  for ((c = 1; c <= $#; c++)); do
    if ! /usr/bin/time -o "$tmp/t" -f "%U %S" bash -c "${!c}" > /dev/null 2> "$tmp/err"; then
      echo "interleave.sh: failed: ${!c}" >&2
      sed 's/^/  /' "$tmp/err" >&2
      exit 1
    fi
    awk '{ printf "%.3f\n", $1 + $2 }' "$tmp/t" >> "$tmp/cmd$c"
  done
done
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for ((c = 1; c <= $#; c++)); do
  printf "least %6.3f s  median %6.3f s  %s\n" "$(sort -n "$tmp/cmd$c" | head -1)" \
    "$(median "$tmp/cmd$c")" "${!c}"
done
for ((c = 2; c <= $#; c++)); do
  paste "$tmp/cmd$c" "$tmp/cmd1" | awk '$2 > 0 { printf "%.4f\n", $1 / $2 }' > "$tmp/ratio$c"
  printf "median ratio to the first, round by round: %.2fx  %s\n" "$(median "$tmp/ratio$c")" "${!c}"
done
