#!/usr/bin/env bash
# memtrace_c (the Python package) against the C library it wraps, on the
# 12M-event bench trace (bench/tools.sh's ordinary trace; made the same way
# when missing): mt.open + t.objects() against mt_analysis_load alone, in
# CPU time (REPEAT rounds, the two sides interleaved), and the
# DataFrame's memory against its columns' raw size.
#
# Targets: open + objects within 1.5x of the library's load; the DataFrame
# within 2x of its columns' raw size.
#
# Usage: bench/python.sh [TRACE]. Environment: REPEAT (5), BUILD (build),
# PYTHON (the interpreter the build found: BUILD/python/interpreter).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
repeat=${REPEAT:-5}
out=bench/out
mkdir -p "$out"
cmake --build "$build" -j"$(nproc)" --target mt_bench_load mt_python_core mt_gen_trace > /dev/null
python=${PYTHON:-$(cat "$build/python/interpreter")}
trace=${1:-$out/ordinary-v2-e12000000-s1-k3000.ctf}
if [ ! -f "$trace" ]; then
  echo "making $trace (mt_gen_trace --events 12000000 --seed 1 --stacks 3000)"
  "$build/mt_gen_trace" "$trace" --events 12000000 --seed 1 --stacks 3000 > /dev/null
fi
echo "trace: $trace ($(du -m "$trace" | cut -f1) MB); python: $python; $repeat rounds"

# Each round runs both sides back to back; the ratio is the median of the
# rounds' ratios (this machine's speed drifts between minutes, not within a
# round).
ratios=(); c_line=; py_line=
for _ in $(seq "$repeat"); do
  c_line=$("$build/mt_bench_load" "$trace")
  py_line=$(PYTHONPATH=$build/python "$python" bench/python_load.py "$trace")
  ratios+=("$(awk -v c="${c_line%% *}" -v p="${py_line%% *}" 'BEGIN { printf "%.4f", p / c }')")
done
read -r c_s c_kib _ <<< "$c_line"
read -r py_s df_bytes raw_bytes growth_kib rows <<< "$py_line"
printf '%s\n' "${ratios[@]}" | sort -n | awk -v c="$c_s" -v p="$py_s" -v ck="$c_kib" \
    -v df="$df_bytes" -v raw="$raw_bytes" -v g="$growth_kib" -v rows="$rows" '
  { r[NR] = $1 }
  END {
    med = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
    printf "C library: mt_analysis_load        %.3f s CPU, peak RSS %.0f MB (last round)\n", c, ck / 1024
    printf "Python:    mt.open + t.objects()   %.3f s CPU (last round)\n", p
    printf "ratio: median %.2fx of %d rounds (%.2fx-%.2fx) (target 1.5x: %s)\n", med, NR, r[1], r[NR], med <= 1.5 ? "met" : "missed"
    printf "DataFrame: %d rows, %.1f MB; columns raw %.1f MB = %.2fx (target 2x: %s)\n", rows, df / 1e6, raw / 1e6, df / raw, df / raw <= 2 ? "met" : "missed"
    printf "peak RSS grew by %.1f MB during objects() = %.2fx the raw columns\n", g * 1024 / 1e6, g * 1024 / raw
  }'
