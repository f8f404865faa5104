#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang and runs each for a
# bounded time on a copy of its seed corpus (the fuzzers write new inputs
# there, never into the repository), as many at once as there are cores
# (FUZZ_JOBS), each one's report printed when it ends. Exits non-zero if a
# fuzzer finds a crash, a leak, a timeout or an out-of-memory, printing the
# reproducer's path: copy it to tests/fuzz/crashes/ (reader),
# tests/fuzz/crashes/roundtrip/ (roundtrip), tests/fuzz/crashes/viewer_api/
# (viewer_api), tests/fuzz/crashes/analysis/ (analysis),
# tests/fuzz/crashes/dwline/ (dwline), tests/fuzz/crashes/cfi/ (cfi),
# tests/fuzz/crashes/rustdemangle/ (rustdemangle), tests/fuzz/crashes/perfmap/
# (perfmap), tests/fuzz/crashes/insn/ (insn) or tests/fuzz/crashes/http_head/
# (http_head) so that the replay test keeps checking it.
#
# Environment:
#   FUZZ_SECONDS    seconds per target (default 60)
#   FUZZ_BUILD_DIR  build directory (default: build-fuzz in the repository)
#   FUZZ_JOBS       fuzzers run at once (default: the number of cores)
#   CC              the compiler (default clang); needs libFuzzer and the
#                   sanitizer runtimes (Debian: clang, libclang-rt-14-dev)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${FUZZ_SECONDS:-60}
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
jobs=${FUZZ_JOBS:-$(nproc)}

# The tests are left out: the fuzz targets need nothing of them (nor cmocka).
CC=${CC:-clang} cmake -S "$root" -B "$build" -DMT_FUZZ=ON -DMT_SANITIZE=ON -DMT_TESTS=OFF
cmake --build "$build" -j"$(nproc)" --target fuzz_reader fuzz_roundtrip fuzz_rustdemangle \
  fuzz_viewer_api fuzz_analysis fuzz_dwline fuzz_cfi fuzz_perfmap fuzz_insn fuzz_http_head

work=$(mktemp -d "${TMPDIR:-/tmp}/memtrace-fuzz.XXXXXX")
failed=0

# fuzz TARGET CORPUS [libFuzzer flags...]: runs it, then prints its report
# in one piece (fuzzers run side by side); fails if the fuzzer failed.
fuzz() {
  local target=$1 corpus=$2
  shift 2
  local dir=$work/$target ok=1
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp -R "$corpus"/. "$dir/corpus/"
  "$build/tests/fuzz/$target" -max_total_time="$seconds" -max_len=65536 \
    -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/" "$@" "$dir/corpus" >"$dir/log.txt" 2>&1 || ok=0
  {
    echo "== $target: ${seconds} s"
    if [ "$ok" -eq 1 ]; then
      grep -E '^#[0-9]+[[:space:]]+DONE|^stat::' "$dir/log.txt" || true
    else
      tail -n 80 "$dir/log.txt"
      echo "== $target FAILED (log: $dir/log.txt)"
      for f in "$dir/artifacts"/*; do
        if [ -e "$f" ]; then echo "reproducer: $f"; fi
      done
    fi
  } >"$dir/report.txt"
  cat "$dir/report.txt"
  [ "$ok" -eq 1 ]
}

# run TARGET CORPUS [flags...]: fuzz in the background, once fewer than
# `jobs` fuzzers run; a fuzzer that ended failing sets `failed`.
running=0
reap() {
  if ! wait -n; then failed=1; fi
  running=$((running - 1))
}
run() {
  while [ "$running" -ge "$jobs" ]; do reap; done
  fuzz "$@" &
  running=$((running + 1))
}

run fuzz_reader "$root/tests/fuzz/corpus" -dict="$root/tests/fuzz/fuzz_reader.dict"
run fuzz_roundtrip "$root/tests/fuzz/corpus_roundtrip"
run fuzz_rustdemangle "$root/tests/fuzz/corpus_rustdemangle"
run fuzz_viewer_api "$root/tests/fuzz/corpus_viewer_api" -dict="$root/tests/fuzz/fuzz_viewer_api.dict"
run fuzz_analysis "$root/tests/fuzz/corpus" -dict="$root/tests/fuzz/fuzz_reader.dict"
run fuzz_dwline "$root/tests/fuzz/corpus_dwline"
run fuzz_cfi "$root/tests/fuzz/corpus_cfi" -dict="$root/tests/fuzz/fuzz_cfi.dict"
run fuzz_perfmap "$root/tests/fuzz/corpus_perfmap"
run fuzz_insn "$root/tests/fuzz/corpus_insn"
run fuzz_http_head "$root/tests/fuzz/corpus_http_head"
while [ "$running" -gt 0 ]; do reap; done

if [ "$failed" -ne 0 ]; then
  echo "fuzzing found failures; inputs and logs kept in $work"
  exit 1
fi
rm -rf "$work"
echo "fuzzing: no failures"
