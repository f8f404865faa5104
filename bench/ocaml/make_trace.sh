#!/usr/bin/env bash
# bench/ocaml/make_trace.sh: a real OCaml trace for bench/tools.sh, written
# by memtrace 0.2.3 itself from bench/ocaml/workload.ml, and memtrace's own
# tools to compare against.
#
# Usage: MEMTRACE_SRC=DIR bench/ocaml/make_trace.sh [BIN_DIR]
#   MEMTRACE_SRC  a checkout of memtrace 0.2.3 (the public janestreet/memtrace
#                 repository at tag v0.2.3); read only, never copied into
#                 this repository
#   BIN_DIR       where memtrace's hotspots, dump_trace and flamegraph go, as
#                 oc_hotspots, oc_dump and oc_flamegraph (the names
#                 bench/tools.sh looks for under MEMTRACE_OCAML_BIN); default
#                 bench/out/ocaml-bin
# Environment: ROUNDS (1130: a trace of about 118 MB), EVERY (10: rounds
# between descents into the 2,000-deep recursion; 1 gives a trace of ten
# times as many deep backtraces, most of them distinct), MEMTRACE_RATE
# (0.05), OUT (bench/out/ocaml-real.ctf), WORK (a temporary build folder,
# removed afterwards unless named).
# Needs Debian's ocaml-nox and ocaml-dune.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$(dirname "$here")")
log() { echo "make_trace.sh: $*" >&2; }

src=${MEMTRACE_SRC:?"MEMTRACE_SRC must name a memtrace 0.2.3 checkout"}
[ -f "$src/src/memtrace.ml" ] || { log "$src is not a memtrace checkout"; exit 1; }
command -v dune > /dev/null && command -v ocamlopt > /dev/null ||
  { log "needs dune and OCaml (apt-get install ocaml-nox ocaml-dune)"; exit 1; }
bin=${1:-$root/bench/out/ocaml-bin}
out=${OUT:-$root/bench/out/ocaml-real.ctf}
rounds=${ROUNDS:-1130}
every=${EVERY:-10}
rate=${MEMTRACE_RATE:-0.05}
mkdir -p "$bin" "$(dirname "$out")"

# One dune workspace: memtrace's source (copied, so that its checkout stays
# clean of _build) and the workload beside it.
if [ -n "${WORK:-}" ]; then
  work=$WORK
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
rm -rf "$work/memtrace" "$work/workload"
mkdir -p "$work/workload"
cp -r "$src" "$work/memtrace"
rm -rf "$work/memtrace/_build" "$work/memtrace/.git"
cp "$here/workload.ml" "$here/dune" "$work/workload/"
echo "(lang dune 2.3)" > "$work/dune-project"
echo "(dirs memtrace workload)" > "$work/dune"
log "building memtrace $(sed -n 's/^(version \(.*\))/\1/p' "$work/memtrace/dune-project") and the workload in $work"
(cd "$work" && dune build --root . --profile release \
  ./workload/workload.exe ./memtrace/bin/hotspots.exe ./memtrace/bin/dump_trace.exe \
  ./memtrace/bin/flamegraph.exe)
b=$work/_build/default
install -m 755 "$b/memtrace/bin/hotspots.exe" "$bin/oc_hotspots"
install -m 755 "$b/memtrace/bin/dump_trace.exe" "$bin/oc_dump"
install -m 755 "$b/memtrace/bin/flamegraph.exe" "$bin/oc_flamegraph"
log "memtrace's tools in $bin (MEMTRACE_OCAML_BIN=$bin)"

rm -f "$out"
log "tracing $rounds rounds (a descent every $every) at rate $rate into $out"
MEMTRACE=$out MEMTRACE_RATE=$rate "$b/workload/workload.exe" "$rounds" "$every" >&2
log "$out: $(stat -c %s "$out") bytes"
