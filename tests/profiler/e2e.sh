#!/usr/bin/env bash
# End-to-end tests of the profiler: real programs run under the interposer,
# traces read back and compared with what the programs know they did.
# Usage: e2e.sh TEST BINDIR (BINDIR holds memtrace, the preload library,
# the test programs and check_trace). Each TEST is its own ctest test.
set -uo pipefail
test=$1 bin=$(cd "$2" && pwd)
memtrace=$bin/memtrace
preload=$bin/libmemtrace_preload.so
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp"
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { echo "FAIL [$test]: $*" >&2; failed=$((failed + 1)); }
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit; }
traced() { env LD_PRELOAD="$preload" "$@"; }

# compare_exact TRUTH SITES: at rate 1, every site's count, bytes and live
# objects equal the program's own account. A name may hold spaces (C++'s
# and Rust's "<T as Trait>"): TRUTH's lines end in 3 numbers, SITES' in 6.
compare_exact() {
  while IFS= read -r tline; do
    name=${tline% * * *}
    read -r count bytes live <<< "${tline##"$name" }"
    line=$(awk -v n="$name" 'substr($0, 1, length(n) + 1) == n " " && NF == split(n, w, " ") + 6' "$2" |
      head -1)
    [ -n "$line" ] || { bad "site $name missing from the trace"; continue; }
    read -r objs est _ _ _ nlive <<< "${line##"$name" }"
    if [ "$objs" = "$count" ] && [ "$est" = "$bytes" ] && [ "$nlive" = "$live" ]; then ok
    else bad "$name: trace says $objs objects, $est bytes, $nlive live; program says $count, $bytes, $live"; fi
  done < "$1"
}

# check_bands LABEL TRUTH SITES [UNSAMPLED_MAX]: at a rate below 1, each
# site's true bytes (TRUTH: "SITE count bytes live") lie within the
# estimate's band (SITES, as check_trace prints it); a site never sampled is
# a failure from UNSAMPLED_MAX bytes up (default 2 MB; 0: always).
check_bands() {
  local label=$1 max=${4:-2000000} site count bytes live line est lo hi
  while read -r site count bytes live; do
    line=$(grep "^$site " "$3") || { [ "$bytes" -lt "$max" ] && ok || bad "$label: $site ($bytes bytes) never sampled"; continue; }
    read -r _ _ est lo hi _ _ <<< "$line"
    awk -v t="$bytes" -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(t >= lo && t <= hi) }' && ok ||
      bad "$label: $site: true $bytes bytes outside [$lo, $hi] (estimate $est)"
  done < "$2"
}

# free_port: a port nothing listens on now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

case "$test" in
toggle)
  # a signal starts and ends tracing periods, each a complete trace; the
  # program runs on unharmed, and the signal is taken only when asked for
  toggle_run() { # toggle_run N CMD...: CMD in the background, N signals 0.4 s apart
    local n=$1
    shift
    "$@" > out.txt 2> err.txt &
    local pid=$! i
    sleep 0.5
    local prog
    prog=$(pgrep -n prog_slow)
    for i in $(seq "$n"); do kill -USR2 "$prog"; sleep 0.4; done
    wait "$pid"
  }
  toggle_run 3 "$memtrace" run --rate 1e-3 --paused --toggle-signal USR2 -o s.ctf -- "$bin/prog_slow" 2.5 ||
    bad "run --toggle-signal: exit $?: $(cat err.txt)"
  grep -q "^slow done" out.txt && ok || bad "the program's output: $(cat out.txt)"
  [ -s s.1.ctf ] && [ -s s.2.ctf ] && [ ! -e s.3.ctf ] && [ ! -e s.ctf ] && ok ||
    bad "periods: $(ls s*.ctf 2>&1) $(cat err.txt)"
  for f in s.1.ctf s.2.ctf; do
    "$memtrace" info "$f" > info.txt 2>&1 && grep -q "^allocations: *[1-9][0-9]* sampled" info.txt && ! grep -q warning info.txt && ok ||
      bad "$f is not a whole trace: $(cat info.txt)"
  done
  grep -q "memtrace: 2 tracing periods: s.1.ctf s.2.ctf" err.txt && ok || bad "the report: $(cat err.txt)"
  # with LD_PRELOAD: tracing from the start, %n in the name
  rm -f t.*.ctf
  MEMTRACE='t.%n.ctf' MEMTRACE_RATE=1e-3 MEMTRACE_SIGNAL=SIGUSR2 toggle_run 2 traced "$bin/prog_slow" 2 ||
    bad "LD_PRELOAD with MEMTRACE_SIGNAL: exit $?"
  [ -s t.1.ctf ] && [ -s t.2.ctf ] && grep -q "^slow done" out.txt && ok ||
    bad "MEMTRACE_SIGNAL periods: $(ls t.*.ctf 2>&1) $(cat err.txt)"
  # not asked for: the signal is the program's (here: its default, the end)
  "$memtrace" run --rate 1e-3 -o n.ctf -- "$bin/prog_slow" 2 > out.txt 2> err.txt &
  pid=$!
  sleep 0.5
  kill -USR2 "$(pgrep -n prog_slow)"
  wait "$pid"
  st=$?
  [ "$st" = $((128 + $(kill -l USR2))) ] && ok || bad "SIGUSR2 not asked for: exit $st, want death by it"
  # a signal that cannot toggle: said, and the program runs untraced
  MEMTRACE=u.ctf MEMTRACE_SIGNAL=FOO traced "$bin/prog_slow" 0.1 > out.txt 2> err.txt
  grep -q "MEMTRACE_SIGNAL=FOO is not a signal to toggle tracing" err.txt && [ ! -e u.ctf ] &&
    grep -q "^slow done" out.txt && ok || bad "a bad MEMTRACE_SIGNAL: $(cat err.txt)"
  "$memtrace" run --paused -- true > /dev/null 2> err.txt
  [ $? = 2 ] && grep -q "paused goes with --toggle-signal" err.txt && ok || bad "--paused alone: $(cat err.txt)"
  ;;
rss)
  # memtrace run records the program's resident memory beside its trace,
  # every ~50 ms: it grows as the program touches 100 MiB, and timeline
  # draws it (a column of its CSV)
  "$memtrace" run -o t.ctf -- "$bin/prog_touch" 100 > /dev/null 2> err.txt || bad "run failed: $(cat err.txt)"
  [ -f t.ctf.rss ] && [ "$(stat -c %a t.ctf.rss)" = 600 ] && head -1 t.ctf.rss | grep -q "^# memtrace-c resident memory" &&
    ok || bad "no private t.ctf.rss: $(ls -l t.ctf* 2>&1)"
  grep -Eq "^memtrace: resident memory at most (9[0-9]|1[0-9][0-9])(\.[0-9])? MiB" err.txt && ok ||
    bad "the report's resident memory: $(grep resident err.txt)"
  pid=$(sed -n 2p t.ctf.rss | cut -d' ' -f2)
  most=$(awk -v p="$pid" '$2 == p && $3 > m { m = $3 } END { print m + 0 }' t.ctf.rss)
  first=$(awk -v p="$pid" '$2 == p { print $3; exit }' t.ctf.rss)
  [ "$most" -gt 90000 ] && [ "$first" -lt 30000 ] && [ "$(grep -vc '^#' t.ctf.rss)" -ge 8 ] && ok ||
    bad "RssAnon from ${first} KiB to at most ${most} KiB (want under 30000, then over 90000): $(head -3 t.ctf.rss)"
  "$memtrace" timeline --csv --bins 20 t.ctf > tl.csv || bad "timeline failed"
  head -1 tl.csv | grep -q ",rss_anon_bytes,rss_file_bytes,rss_bytes$" && ok || bad "no rss columns: $(head -1 tl.csv)"
  peak_rss=$(awk -F, 'NR > 1 && $NF > m { m = $NF } END { printf "%d", m }' tl.csv)
  [ "$peak_rss" -gt 94371840 ] && ok || bad "timeline's resident memory at most $peak_rss bytes (want over 90 MiB)"
  "$memtrace" timeline t.ctf | grep -q "resident memory (recorded beside the trace): at most" && ok ||
    bad "the chart says nothing of the resident memory"
  # a stream has no file to sit beside; a program that cannot be traced, none either
  port=$(free_port)
  "$memtrace" run -o "tcp:127.0.0.1:$port" -- "$bin/prog_touch" 10 > /dev/null 2>&1
  ls ./*.rss 2>/dev/null | grep -vq "t.ctf.rss" && bad "a .rss beside a stream" || ok
  "$memtrace" run -o s.ctf -- "$bin/prog_static" 0.1 > /dev/null 2>&1
  [ ! -e s.ctf.rss ] && ok || bad "a .rss left beside no trace"
  ;;
sites-exact)
  MEMTRACE=t.ctf MEMTRACE_RATE=1 traced "$bin/prog_sites" > truth.txt || bad "program failed"
  "$bin/check_trace" t.ctf sites > sites.txt || bad "trace unreadable"
  compare_exact truth.txt sites.txt
  # the profiler changes nothing the program prints
  "$bin/prog_sites" > plain.txt
  cmp -s plain.txt truth.txt && ok || bad "output differs under the profiler"
  ;;
mappings)
  # Anonymous mappings at rate 1: each site's objects, bytes and mappings
  # never unmapped as the program counts them, through partial unmaps
  # (pieces), MAP_FIXED over a mapping, mremap and 4 threads mapping at
  # once; file, PROT_NONE and malloc's own mappings not counted.
  MEMTRACE=t.ctf MEMTRACE_RATE=1 traced "$bin/prog_maps" > truth.txt || bad "program failed"
  "$bin/prog_maps" > plain.txt
  cmp -s plain.txt truth.txt && ok || bad "output differs under the profiler"
  "$bin/check_trace" t.ctf mappings > maps.txt || bad "trace unreadable"
  compare_exact truth.txt maps.txt
  [ "$(wc -l < maps.txt)" = "$(wc -l < truth.txt)" ] && ok || bad "mapping sites beyond the program's: $(cat maps.txt)"
  # malloc's 16 MiB block is the heap's, once
  "$bin/check_trace" t.ctf sites > sites.txt
  grep -q "^uncounted 1 16777216 .* 0$" sites.txt && ok || bad "malloc's large block: $(grep uncounted sites.txt)"
  # a mapping's stack starts with a frame of its own, then its caller
  "$memtrace" leaks --source mapping t.ctf > leaks.txt 2>&1
  grep -A1 "^      mmap (\[anonymous mapping\]:0)" leaks.txt | grep -q "site_leak (" && ok ||
    bad "leaks of mappings: $(head -20 leaks.txt)"
  # --source splits external objects into mappings and the heap
  m=$("$memtrace" top --source mapping --format json t.ctf | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"]["bytes"]["value"])')
  h=$("$memtrace" top --source heap --format json t.ctf | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"]["bytes"]["value"])')
  all=$("$memtrace" top --format json t.ctf | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"]["bytes"]["value"])')
  want=$(awk '{ s += $3 } END { print s }' truth.txt)
  [ "${m%.*}" = "$want" ] && [ "$(( ${m%.*} + ${h%.*} ))" = "${all%.*}" ] && ok ||
    bad "top --source mapping $m + heap $h, all $all; the program mapped $want"
  # MEMTRACE_MAPPINGS=0 (run --no-mappings): the heap alone
  MEMTRACE=off.ctf MEMTRACE_RATE=1 MEMTRACE_MAPPINGS=0 traced "$bin/prog_maps" > /dev/null || bad "program failed (MEMTRACE_MAPPINGS=0)"
  [ -z "$("$bin/check_trace" off.ctf mappings)" ] && "$bin/check_trace" off.ctf sites | grep -q "^uncounted 1 " &&
    ok || bad "MEMTRACE_MAPPINGS=0 traced mappings, or not the heap"
  "$memtrace" run -q --rate 1 --no-mappings -o nm.ctf -- "$bin/prog_maps" > /dev/null || bad "run --no-mappings failed"
  [ -s nm.ctf ] && [ -z "$("$bin/check_trace" nm.ctf mappings)" ] && ok || bad "run --no-mappings traced mappings"
  # a forked child: its own mappings in its own trace; unmapping one it
  # inherited is no event of its trace
  MEMTRACE='f.%p.ctf' MEMTRACE_RATE=1 traced "$bin/prog_maps" 1 fork > truth.txt || bad "program failed (fork)"
  parent=$(ls f.*.ctf | while read -r f; do "$bin/check_trace" "$f" summary | grep -q "^allocations [0-9][0-9][0-9]" && echo "$f"; done)
  child=$(ls f.*.ctf | grep -v "^$parent$" | head -1)
  "$bin/check_trace" "$parent" mappings > maps.txt
  compare_exact truth.txt maps.txt
  [ "$("$bin/check_trace" "$child" mappings | awk '{ print $1, $2, $3, $7 }')" = "site_leak 2 73728 2" ] &&
    "$bin/check_trace" "$child" summary | grep -q "^collections 0$" && ok ||
    bad "the child's trace: $("$bin/check_trace" "$child" mappings)"
  # at 1e-3, each site's true bytes within the estimate's 4-sigma band
  for seed in 1 2; do
    MEMTRACE=s$seed.ctf MEMTRACE_RATE=1e-3 MEMTRACE_SEED=$seed traced "$bin/prog_maps" 10 > truth.txt
    "$bin/check_trace" s$seed.ctf mappings > maps.txt || bad "trace unreadable"
    check_bands "seed $seed" truth.txt maps.txt 0
  done
  ;;
next-allocator)
  # Another allocator between the interposer and the C library (jemalloc):
  # the word before its blocks may be unmapped, so headers are never placed
  # on a page boundary; the sites are exact all the same.
  je=$(ls /usr/lib/*/libjemalloc.so.2 2>/dev/null | head -1)
  [ -n "$je" ] || { echo "libjemalloc.so.2 not installed (apt-get install libjemalloc2): skipped"; exit 77; }
  MEMTRACE=t.ctf MEMTRACE_RATE=1 env LD_PRELOAD="$preload:$je" "$bin/prog_sites" 1 no-pvalloc > truth.txt ||
    bad "program failed: $(grep ERROR truth.txt | head -3)"
  "$bin/check_trace" t.ctf sites > sites.txt || bad "trace unreadable"
  compare_exact truth.txt sites.txt
  "$memtrace" info t.ctf | grep -q "blocks=header-off-page," && ok || bad "not in off-page mode: $("$memtrace" info t.ctf | grep runtime)"
  # and the C library next: headers
  MEMTRACE=h.ctf MEMTRACE_RATE=1 traced "$bin/prog_sites" > /dev/null || bad "program failed (headers)"
  "$memtrace" info h.ctf | grep -q "blocks=header," && ok || bad "not in header mode: $("$memtrace" info h.ctf | grep runtime)"
  # malloc's and free's jumps to the C library made direct (src/preload/jumps.c)
  "$memtrace" info h.ctf | grep -q "jumps=direct$" && ok ||
    bad "jumps not made direct (the system refused writable code?): $("$memtrace" info h.ctf | grep runtime)"
  ;;
loads)
  # What the interposer loads into every program it runs: the C library
  # alone. No libm (the engine's functions are its own,
  # src/engine/mathlib.h), which cost each process 0.4 ms of CPU to load; no
  # libunwind (with liblzma: 0.65 ms), which only a session that may use it
  # opens (unwlib.c), as libdw (dwlib.c).
  needed=$(readelf -d "$preload" | awk '/NEEDED/ {print $NF}')
  [ "$(echo $needed)" = "[libc.so.6]" ] && ok || bad "the interposer needs more than libc: $needed"
  maps=$(MEMTRACE=t.ctf traced cat /proc/self/maps 2> cat.err) || bad "cat failed under the interposer"
  echo "$maps" | grep -q "libmemtrace_preload" && ok || bad "the interposer is not in the process"
  echo "$maps" | grep -q "/libm[.-]" && bad "libm mapped: $(echo "$maps" | grep "/libm[.-]" | head -1)" || ok
  echo "$maps" | grep -q "/libunwind\." && ok ||
    bad "tracing with AUTO: libunwind not loaded (stderr: $(cat cat.err); trace: $(ls -l t.ctf 2>&1))"
  maps=$(LD_PRELOAD="$preload" cat /proc/self/maps) || bad "cat failed under the idle interposer"
  echo "$maps" | grep -q "libmemtrace_preload" && ok || bad "the idle interposer is not in the process"
  echo "$maps" | grep -q "/libunwind\.\|/libdw[.-]" && bad "not tracing, yet loaded: $(echo "$maps" | grep "/libunwind\.\|/libdw[.-]" | head -1)" || ok
  maps=$(MEMTRACE=t.ctf MEMTRACE_UNWIND=fp traced cat /proc/self/maps) || bad "cat failed (fp)"
  echo "$maps" | grep -q "/libunwind\." && bad "tracing with fp: libunwind loaded" || ok
  # the LIBUNWIND mode's samples are libunwind's walks
  MEMTRACE=u.ctf MEMTRACE_UNWIND=libunwind MEMTRACE_RATE=1 traced "$bin/prog_sites" > truth.txt ||
    bad "libunwind mode: program failed"
  "$bin/check_trace" u.ctf sites > sites.txt || bad "libunwind mode: trace unreadable"
  compare_exact truth.txt sites.txt
  # without libunwind at run time (hidden in a mount namespace, where one can
  # be made): the LIBUNWIND mode says so and does not trace, AUTO traces
  lu=$(ldconfig -p | awk '/libunwind\.so\.8 / { print $NF; exit }')
  if [ -n "$lu" ] && unshare -m true 2> /dev/null; then
    unshare -m sh -c "mount --bind /dev/null '$lu' &&
      MEMTRACE=nl.ctf MEMTRACE_UNWIND=libunwind LD_PRELOAD='$preload' '$bin/prog_sites' > /dev/null 2> nl.err &&
      MEMTRACE=na.ctf MEMTRACE_RATE=1 LD_PRELOAD='$preload' '$bin/prog_sites' > truth.txt" ||
      bad "without libunwind: a program failed"
    grep -q "not tracing: cannot load libunwind.so.8" nl.err && [ ! -e nl.ctf ] && ok ||
      bad "without libunwind, the libunwind mode: $(cat nl.err)"
    "$bin/check_trace" na.ctf sites > sites.txt || bad "without libunwind, AUTO: trace unreadable"
    compare_exact truth.txt sites.txt
  else
    echo "loads: no mount namespace here: libunwind's absence not tested" >&2
  fi
  ;;
sites-sampled)
  # Rate 1e-3 (one sample per 8 KB): each site's true bytes lie within the
  # estimate's 4-sigma band, for several seeds.
  for seed in 1 2 3; do
    MEMTRACE=t$seed.ctf MEMTRACE_RATE=1e-3 MEMTRACE_SEED=$seed traced "$bin/prog_sites" 60 > truth.txt
    "$bin/check_trace" t$seed.ctf sites > sites.txt || bad "trace unreadable"
    check_bands "seed $seed" truth.txt sites.txt
  done
  ;;
cxx)
  MEMTRACE=t.ctf MEMTRACE_RATE=1 traced "$bin/prog_cxx" > out.txt || bad "program failed"
  "$bin/check_trace" t.ctf sites > sites.txt || bad "trace unreadable"
  # operator new frames are hidden: a site is the code that called new
  # (for containers, the standard allocator). Names hold spaces: the
  # numbers are the last six fields.
  for want in "site_new()|1000 16000" "site_aligned()|200 51200" "site_nothrow()|300 38400" \
              "std::__new_allocator<long>::allocate(unsigned long, void const*)|100 409600"; do
    name=${want%|*} nums=${want#*|}
    line=$(grep -F "$name " sites.txt | head -1)
    [ -n "$line" ] || { bad "no site '$name' in: $(cat sites.txt)"; continue; }
    got=$(awk '{print $(NF-5), $(NF-4)}' <<< "$line")
    [ "$got" = "$nums" ] && ok || bad "$name: got '$got', want '$nums'"
  done
  "$bin/check_trace" t.ctf frames | grep -qF "site_vector(std::vector<long, std::allocator<long> >&)" &&
    ok || bad "the caller site_vector is not in the stacks"
  ;;
cxx-plugin)
  # the C++ runtime loaded out of the global scope, after tracing started
  # (prog_cxx_plugin) and before (prog_cxx_early: a library's constructor
  # opened it): every allocation's site is the library's function,
  # demangled (none is operator new, in any unwinder), and no name stays
  # mangled
  for run in "auto prog_cxx_plugin" "libunwind prog_cxx_plugin" "auto prog_cxx_early" \
    "libunwind prog_cxx_early"; do
    read -r mode prog <<< "$run"
    unwind="$mode ($prog)" # as the messages name the run
    MEMTRACE=p.ctf MEMTRACE_RATE=1 MEMTRACE_UNWIND=$mode MT_TEST_PLUGIN="$bin/libmt_cxx_plugin.so" \
      traced "$bin/$prog" "$bin/libmt_cxx_plugin.so" > out.txt || bad "program failed ($unwind)"
    grep -q "plugin done" out.txt || bad "program output ($unwind)"
    "$bin/check_trace" p.ctf sites > sites.txt || bad "trace unreadable ($unwind)"
    line=$(grep -F "plugin::site(int) " sites.txt | head -1)
    got=$(awk '{print $(NF-5), $(NF-4)}' <<< "$line")
    [ "$got" = "300 240000" ] && ok || bad "$unwind: plugin::site(int): got '$got', want '300 240000' in: $(cat sites.txt)"
    grep -q "^operator new" sites.txt && bad "$unwind: operator new is a site: $(grep '^operator new' sites.txt)" || ok
    "$bin/check_trace" p.ctf frames | grep -q "^_Z" && bad "$unwind: mangled names: $("$bin/check_trace" p.ctf frames | grep '^_Z' | head -3)" || ok
  done
  # a library that allocates with malloc only, as Java's libjvm: no code of
  # the C++ runtime on any sampled stack (the seeds' samples miss its own
  # allocations), and its names stayed mangled ("_ZN6plugin3rawEi")
  premise=0
  for seed in 1 2 3 4 5 6; do
    MEMTRACE=r.ctf MEMTRACE_RATE=1e-5 MEMTRACE_SEED=$seed traced "$bin/prog_cxx_plugin" \
      "$bin/libmt_cxx_plugin.so" raw > out.txt || bad "program failed (raw, seed $seed)"
    "$bin/check_trace" r.ctf frames > frames.txt || bad "trace unreadable (raw, seed $seed)"
    grep -q "libstdc++" frames.txt && continue
    premise=1
    grep -qx "plugin::raw(int)" frames.txt && ! grep -q "^_Z" frames.txt && ok ||
      bad "malloc-only C++ library (seed $seed): $(grep -i "raw\|^_Z" frames.txt | head -3)"
    break
  done
  [ $premise = 1 ] || bad "every seed sampled the C++ runtime's own code: the case is not tested"
  ;;
threads)
  MEMTRACE=t.ctf MEMTRACE_RATE=1e-2 traced "$bin/prog_threads" > out.txt || bad "program failed"
  grep -q "threads done" out.txt && ok || bad "program output"
  "$bin/check_trace" t.ctf sites > sites.txt || bad "trace unreadable"
  # every block the threads allocate is freed (the C library keeps a few of
  # its own, e.g. stdout's buffer): each sampled one has its collection
  read -r objs live <<< "$(awk '$1 == "work" {print $2, $7}' sites.txt)"
  [ "${objs:-0}" -gt 10000 ] && [ "$live" = 0 ] && ok || bad "work: $objs sampled, $live never freed"
  # at rate 1 every block is sampled: events queued per thread, blocks
  # freed by another thread while their alloc event is still queued; the
  # counts are exact (8 threads x (200000 + 2062 handed over))
  MEMTRACE=t1.ctf MEMTRACE_RATE=1 traced "$bin/prog_threads" > out.txt || bad "program failed"
  "$bin/check_trace" t1.ctf sites > sites1.txt || bad "rate-1 trace unreadable"
  read -r objs live <<< "$(awk '$1 == "work" {print $2, $7}' sites1.txt)"
  [ "${objs:-0}" = 1616496 ] && [ "$live" = 0 ] && ok || bad "work at rate 1: $objs sampled, $live never freed"
  ;;
small-stack)
  # Threads with small stacks (32 KiB, and the least the system allows)
  # taking samples, whose codes are named (libdw, ~150 KiB of stack) on
  # that thread: the naming runs on the tracer's own stack. One site is
  # called back from qsort, whose frames have no records: libunwind walks
  # them, on the tracer's stack when the thread's is short (the thread has
  # used 4 KiB of it there). At rate 1 the counts are exact, in every
  # unwinding mode, and the callback's stacks go on through qsort to the
  # thread's function; at the default rate the program just runs as it
  # does plain.
  for kib in 32 0; do
    for unwind in auto fp libunwind; do
      MEMTRACE=s.ctf MEMTRACE_RATE=1 MEMTRACE_UNWIND=$unwind traced "$bin/prog_small_stack" $kib \
        > truth.txt 2> err.txt || { bad "program failed ($kib KiB, $unwind): $? $(head -3 err.txt)"; continue; }
      "$bin/check_trace" s.ctf sites > sites.txt || { bad "trace unreadable ($kib KiB, $unwind)"; continue; }
      compare_exact truth.txt sites.txt
      [ $unwind = fp ] && continue # frame records only: qsort's frames end the walk
      "$memtrace" dump s.ctf > dump.txt 2>&1 || { bad "dump failed ($kib KiB, $unwind)"; continue; }
      read -r calls whole <<< "$(awk '/small_d@/ {n++; if (/qsort/ && /sort_deep@/ && / work@/) w++}
        END {print n + 0, w + 0}' dump.txt)"
      [ "$calls" -gt 0 ] && [ "$calls" = "$whole" ] && ok ||
        bad "$kib KiB, $unwind: $whole of $calls stacks from qsort's callback reach the thread's function"
    done
    MEMTRACE=d.ctf traced "$bin/prog_small_stack" $kib > out.txt 2> err.txt && ok ||
      bad "program failed at the default rate ($kib KiB): $(head -3 err.txt)"
  done
  "$bin/prog_small_stack" 0 > plain.txt && cmp -s plain.txt truth.txt && ok ||
    bad "output differs under the profiler"
  # A sample takes a bounded part of its thread's stack: the interposer's
  # thread-local variables and the frames down to where its deeper work
  # moves to the tracer's own stack, MT_STACK_BOUND bytes at most (1 KiB;
  # more for a library built at -O0: docs/decisions.md). The most of a
  # 16 KiB thread's stack the program can use before the qsort whose
  # callback allocates and frees, plain (to 16 bytes: the frame's
  # alignment); traced at rate 1 with the bound less used, it must run in
  # every mode. (qsort is bound before the threads start: the callback's
  # calls are the threads' deepest.)
  bound=${MT_STACK_BOUND:-1024}
  lo=4096 hi=16384 # lo runs plain, hi cannot
  if ("$bin/prog_small_stack" 16 $lo > /dev/null; exit $?) 2> /dev/null; then
    while [ $((hi - lo)) -gt 16 ]; do
      mid=$(((lo + hi) / 32 * 16))
      # (the subshell hides the crash message)
      if ("$bin/prog_small_stack" 16 $mid > /dev/null; exit $?) 2> /dev/null; then
        lo=$mid
      else
        hi=$mid
      fi
    done
    used=$((lo - bound))
    for unwind in auto fp libunwind; do
      MEMTRACE=u.ctf MEMTRACE_RATE=1 MEMTRACE_UNWIND=$unwind \
        traced "$bin/prog_small_stack" 16 $used > /dev/null 2> err.txt && ok ||
        bad "16 KiB thread with $used bytes used ($lo run plain): $unwind traced failed: $? $(head -3 err.txt)"
    done
  else
    bad "prog_small_stack fails plain with 4 KiB of a 16 KiB stack used"
  fi
  ;;
stacks)
  # Stacks the profiler finds from the kernel's map, not the C library
  # (prog_stacks.c). At rate 1 every allocation is a sample: the thread
  # that asks pthread_getattr_np for its stack takes its first sample in
  # there, holding its own lock, and must not hang. In every mode the
  # counts are exact; the main thread's deep stacks (its stack grew after
  # its first sample) reach main, and the qsort callback's, on the stack
  # the program allocated itself, reach the thread's function (no guard
  # under that stack: libunwind runs on the tracer's).
  for unwind in auto fp libunwind; do
    MEMTRACE=s.ctf MEMTRACE_RATE=1 MEMTRACE_UNWIND=$unwind timeout 60 env LD_PRELOAD="$preload" \
      "$bin/prog_stacks" > truth.txt 2> err.txt
    rc=$?
    [ $rc = 124 ] && { bad "$unwind: hung (60 s)"; continue; }
    [ $rc = 0 ] || { bad "program failed ($unwind): $rc $(head -3 err.txt)"; continue; }
    "$bin/check_trace" s.ctf sites > sites.txt || { bad "trace unreadable ($unwind)"; continue; }
    # fp: the walks from the stack not known last find nothing
    [ $unwind = fp ] && grep -v "^stacks_coroutine \|^stacks_switch " truth.txt > t.txt && mv t.txt truth.txt
    compare_exact truth.txt sites.txt
    "$memtrace" dump s.ctf > dump.txt 2>&1 || { bad "dump failed ($unwind)"; continue; }
    read -r deep whole <<< "$(awk '/stacks_deep@/ {n++; if (/ main@/) w++} END {print n + 0, w + 0}' dump.txt)"
    [ "$deep" -gt 0 ] && [ "$deep" = "$whole" ] && ok ||
      bad "$unwind: $whole of $deep stacks from deep in the main thread reach main"
    [ $unwind = fp ] && continue # frame records only: qsort's frames end the walk
    read -r calls whole <<< "$(awk '/stacks_sorted@/ {n++; if (/qsort/ && / own@/) w++}
      END {print n + 0, w + 0}' dump.txt)"
    [ "$calls" -gt 0 ] && [ "$calls" = "$whole" ] && ok ||
      bad "$unwind: $whole of $calls stacks from qsort's callback reach the thread's function"
  done
  "$bin/prog_stacks" > plain.txt && MEMTRACE=d.ctf traced "$bin/prog_stacks" > out.txt && cmp -s plain.txt out.txt && ok ||
    bad "output differs under the profiler"
  ;;
rust-names)
  # Rust's names (prog_rust_names.c: symbols with Rust's manglings) in the
  # trace as a Rust user reads them, from debug info and from the symbol
  # table alone; at rate 1 the counts are exact. Rust's allocation layer is
  # in no stack: neither its inlined frames nor its functions (in every
  # unwinding mode; with -g0, an inlined frame is its caller's code).
  for prog in prog_rust_names prog_rust_names_nodebug; do
    for unwind in auto fp libunwind; do
      MEMTRACE=r.ctf MEMTRACE_RATE=1 MEMTRACE_UNWIND=$unwind traced "$bin/$prog" > truth.txt ||
        { bad "$prog failed ($unwind)"; continue; }
      "$bin/check_trace" r.ctf sites > sites.txt || { bad "trace unreadable ($prog, $unwind)"; continue; }
      compare_exact truth.txt sites.txt
      "$bin/check_trace" r.ctf frames > frames.txt || { bad "frames unreadable ($prog, $unwind)"; continue; }
      layer=$(grep -E "^(alloc::alloc::|__rustc::|__rdl_)" frames.txt | tr '\n' ' ')
      [ -z "$layer" ] && ok || bad "$prog, $unwind: the allocation layer in stacks: $layer"
    done
  done
  ;;
loader)
  # Allocating and freeing in dl_iterate_phdr callbacks, under the loader's
  # lock, while another thread dlopens and dlcloses (prog_loader.c): at
  # rate 1, no hang, the callbacks' own allocations unsampled, the blocks
  # they free seen freed, the other thread's counts exact. Without the
  # interposed dl_iterate_phdr, the libunwind runs hung about one in two
  # (a sample in a callback waiting for libunwind's lock, whose holder
  # waited for the loader's); without libdw's thread-locals touched at
  # load, the first run (a thread in dlopen waiting for the first naming,
  # which waited for the loader's TLS lock).
  for run in 1 2 3; do
    for unwind in auto libunwind; do
      MEMTRACE=l.ctf MEMTRACE_RATE=1 MEMTRACE_UNWIND=$unwind timeout 60 env LD_PRELOAD="$preload" \
        "$bin/prog_loader" "$bin/libmt_dl_test.so" > truth.txt 2> err.txt
      rc=$?
      [ $rc = 124 ] && { bad "run $run, $unwind: hung (60 s)"; continue; }
      [ $rc = 0 ] ||
        { bad "run $run, $unwind: failed: $rc $(head -3 err.txt) $(grep ERROR truth.txt)"; continue; }
      "$bin/check_trace" l.ctf sites > sites.txt || { bad "trace unreadable (run $run, $unwind)"; continue; }
      compare_exact truth.txt sites.txt
      grep -q "^loader_listed " sites.txt && bad "run $run, $unwind: a callback's allocation was sampled" || ok
    done
  done
  ;;
cancel)
  # Workers cancelled between runs of malloc and free (prog_cancel.c): with
  # cancellation held off in the profiler's work they are cancelled at
  # their own pthread_testcancel, as plain, and the program ends (it hung
  # every run: a worker cancelled in the trace's write left the tracer's
  # lock held). The main thread's site is exact at rate 1.
  for unwind in auto libunwind; do
    MEMTRACE=c.ctf MEMTRACE_RATE=1 MEMTRACE_UNWIND=$unwind timeout 60 env LD_PRELOAD="$preload" \
      "$bin/prog_cancel" > out.txt 2> err.txt
    rc=$?
    [ $rc = 124 ] && { bad "$unwind: hung (60 s)"; continue; }
    [ $rc = 0 ] || { bad "$unwind: failed: $rc $(head -3 err.txt)"; continue; }
    grep -q "^cancelled 120$" out.txt && ok || bad "$unwind: $(head -1 out.txt) of 120 workers"
    grep -v "^cancelled" out.txt > truth.txt
    "$bin/check_trace" c.ctf sites > sites.txt || { bad "trace unreadable ($unwind)"; continue; }
    compare_exact truth.txt sites.txt
  done
  ;;
signal-exit)
  # exit() from a signal handler that interrupted the profiler, maybe in its
  # lock (the exit handler waited for that lock for ever: 9 runs in 30
  # hung): every run ends, with a readable trace
  hung=0 broken=0 what=""
  for i in $(seq 1 30); do
    timeout 5 env MEMTRACE=s.ctf MEMTRACE_RATE=1 LD_PRELOAD="$preload" "$bin/prog_signal_exit" \
      $((2000 + i * 1371)) > out.txt 2> err.txt
    rc=$?
    [ $rc = 124 ] && hung=$((hung + 1))
    "$bin/check_trace" s.ctf summary > ct.txt 2>&1
    ct=$?
    if [ $rc != 0 ] || ! grep -q "^pairs [1-9]" out.txt || [ $ct != 0 ]; then
      broken=$((broken + 1)) # what went wrong, said of the first such run
      [ -n "$what" ] || what="run $i: status $rc, output '$(cat out.txt)', stderr '$(cat err.txt)', check_trace $ct: $(head -c 300 ct.txt)"
    fi
  done
  [ $hung = 0 ] && ok || bad "$hung runs of 30 hung"
  [ $broken = 0 ] && ok || bad "$broken failures in 30 runs (status, output or trace): $what"
  # ends that run no exit handler: the events before them are written
  for how in abort assert quick_exit; do
    MEMTRACE=e.ctf MEMTRACE_RATE=1 traced "$bin/prog_signal_exit" end $how > /dev/null 2> err.txt
    rc=$?
    n=$("$bin/check_trace" e.ctf sites 2> /dev/null | awk '$1 == "churn" {print $2}')
    [ "$n" = 1000 ] && ok || bad "$how (status $rc): ${n:-no} allocations of 1000 in the trace"
  done
  # fork from a signal handler that interrupted the profiler (fork is
  # async-signal-safe; its handler waited for the tracer's lock for ever):
  # the program ends, and its trace has every allocation
  for i in 1 2 3; do
    timeout 20 env MEMTRACE=f.ctf MEMTRACE_RATE=1 LD_PRELOAD="$preload" "$bin/prog_signal_exit" fork 300000 \
      > out.txt 2> err.txt
    rc=$?
    n=$("$bin/check_trace" f.ctf sites 2> /dev/null | awk '$1 == "churn" {print $2}')
    [ $rc = 0 ] && grep -q "^pairs 300000 forks [1-9]" out.txt && [ "$n" = 300000 ] && ok ||
      bad "fork from a signal handler: status $rc, $(cat out.txt), $n allocations traced at churn"
  done
  ;;
churn)
  # threads that exit and are replaced: at rate 1 every block is counted
  # once, and every one freed has its collection (the pool's last blocks
  # are freed by main)
  for unwind in auto fp; do
    MEMTRACE=c.ctf MEMTRACE_RATE=1 MEMTRACE_UNWIND=$unwind traced "$bin/prog_churn" > out.txt ||
      bad "program failed ($unwind)"
    want=$(awk '/^churn/ {print $2}' out.txt)
    "$bin/check_trace" c.ctf sites > sites.txt || bad "trace unreadable ($unwind)"
    read -r objs live <<< "$(awk '$1 == "churn_site" {print $2, $7}' sites.txt)"
    [ -n "$want" ] && [ "${objs:-0}" = "$want" ] && [ "$live" = 0 ] && ok ||
      bad "churn_site ($unwind): $objs sampled of $want, $live never freed"
  done
  ;;
fork)
  # without %p: the forked child stops tracing, the exec'd child never starts
  # and does not even load the interposer (another preloaded library stays)
  MEMTRACE=t.ctf MEMTRACE_RATE=1 LD_PRELOAD="$preload libm.so.6" "$bin/prog_fork" > out.txt ||
    bad "program failed"
  grep -q "exec-child MEMTRACE=(unset)" out.txt && ok || bad "MEMTRACE leaked into exec'd child: $(cat out.txt)"
  grep -qx "exec-child LD_PRELOAD=libm.so.6" out.txt && ok ||
    bad "the interposer leaked into exec'd child: $(cat out.txt)"
  # MEMTRACE_KEEP_ENV=1: the exec'd child inherits both, and traces
  MEMTRACE='k.%p.ctf' MEMTRACE_KEEP_ENV=1 MEMTRACE_RATE=1 traced "$bin/prog_fork" > keep.txt ||
    bad "program failed"
  grep -qx "exec-child MEMTRACE=k.%p.ctf" keep.txt && grep -qx "exec-child LD_PRELOAD=$preload" keep.txt &&
    ok || bad "MEMTRACE_KEEP_ENV=1: $(cat keep.txt)"
  rm -f k.*.ctf
  # ... and without %p, it finds the parent writing that file and runs
  # untraced, saying so: the parent's trace is whole (both processes wrote
  # it, each emptying it under the other, and neither trace was readable)
  MEMTRACE=s.ctf MEMTRACE_KEEP_ENV=1 MEMTRACE_RATE=1 traced "$bin/prog_fork" > shared.txt 2> shared.err ||
    bad "program failed"
  grep -q "^memtrace: not tracing: .*/s.ctf is being written by another traced process" shared.err &&
    ok || bad "shared file, the exec'd child's message: $(cat shared.err)"
  "$bin/check_trace" s.ctf sites > sites.txt 2> check.err && [ ! -s check.err ] ||
    bad "shared file: trace unreadable or mixed: $(cat check.err)"
  grep -q "^parent_site 1000 " sites.txt && ok || bad "shared file, parent sites: $(cat sites.txt)"
  "$bin/check_trace" t.ctf sites > sites.txt || bad "trace unreadable"
  grep -q "^parent_site 1000 " sites.txt && ok || bad "parent sites: $(cat sites.txt)"
  grep -q "^child_site" sites.txt && bad "child events in the parent's trace" || ok
  # bash defines its own getenv/setenv/unsetenv, which the tracer must not
  # go through (before bash's main they changed nothing, bash exported
  # MEMTRACE to every child, and each truncated the trace)
  if command -v bash > /dev/null; then
    MEMTRACE=b.ctf MEMTRACE_RATE=1 traced bash -c \
      'for i in $(seq 3); do x=$(echo $i); done; export -p | grep -c "MEMTRACE=\|LD_PRELOAD=" || true' > bash.txt
    [ "$(cat bash.txt)" = 0 ] && ok || bad "bash exports the tracing settings: $(cat bash.txt)"
    "$bin/check_trace" b.ctf summary > /dev/null && "$memtrace" info b.ctf | grep -q "^executable: .*/bash$" &&
      ok || bad "bash's trace: $("$memtrace" info b.ctf 2>&1 | head -3)"
  fi
  # with %p: the forked child traces to its own file
  MEMTRACE='t.%p.ctf' MEMTRACE_RATE=1 traced "$bin/prog_fork" > out2.txt || bad "program failed"
  ppid=$(awk '/^parent pid/ {print $3}' out2.txt)
  "$bin/check_trace" "t.$ppid.ctf" sites | grep -q "^parent_site 1000 " && ok || bad "parent trace"
  n=0
  for f in t.*.ctf; do
    [ "$f" = "t.$ppid.ctf" ] && continue
    n=$((n + 1))
    "$bin/check_trace" "$f" sites > child.txt || bad "child trace $f unreadable"
    grep -q "^child_site 700 " child.txt && ok || bad "child trace: $(cat child.txt)"
  done
  [ "$n" = 1 ] && ok || bad "expected 1 child trace, found $n"
  # a forked child that gives up root before its first allocation (a
  # server's worker): its trace opens while it may still create it, in a
  # directory the unprivileged user cannot write
  if [ "$(id -u)" = 0 ]; then
    mkdir -m 700 priv
    (cd priv && MEMTRACE='d.%p.ctf' MEMTRACE_RATE=1 traced "$bin/prog_fork" drop > out.txt 2> err.txt)
    ppid=$(awk '/^parent pid/ {print $3}' priv/out.txt)
    grep -q "child status 0$" priv/out.txt && [ ! -s priv/err.txt ] && ok ||
      bad "privilege-dropping child: $(cat priv/out.txt priv/err.txt)"
    n=0
    for f in priv/d.*.ctf; do
      [ "$f" = "priv/d.$ppid.ctf" ] && continue
      n=$((n + 1))
      "$bin/check_trace" "$f" sites | grep -q "^child_site 700 " && ok ||
        bad "privilege-dropping child's trace $f: $("$bin/check_trace" "$f" sites 2>&1 | head -3)"
    done
    [ "$n" = 1 ] && ok || bad "privilege-dropping child: expected 1 child trace, found $n"
  fi
  ;;
exec)
  # exec runs no exit handlers: what the program allocated before its exec
  # is written first. MEMTRACE_FOLLOW_EXEC=1: the new image traces into the
  # same file instead (it replaces the old trace). Every exec function.
  export PATH="$bin:$PATH" # execvp and execlp search it for prog_exec
  for v in execve execv execvp execvpe execl execlp execle fexecve execveat; do
    MEMTRACE=t.ctf MEMTRACE_RATE=1 traced "$bin/prog_exec" "$v" > out.txt || bad "$v: program failed: $(cat out.txt)"
    grep -qx "child MEMTRACE=(unset)" out.txt && ok || bad "$v: MEMTRACE reached the new image: $(cat out.txt)"
    "$bin/check_trace" t.ctf sites > sites.txt || bad "$v: trace unreadable"
    grep -q "^before_exec_site 300 " sites.txt && ok || bad "$v: events before the exec: $(cat sites.txt)"
    grep -q "^after_exec_site" sites.txt && bad "$v: the untraced image's events in the trace" || ok
    MEMTRACE=f.ctf MEMTRACE_FOLLOW_EXEC=1 MEMTRACE_RATE=1 traced "$bin/prog_exec" "$v" > out.txt ||
      bad "$v (following): program failed: $(cat out.txt)"
    "$bin/check_trace" f.ctf sites > sites.txt || bad "$v (following): trace unreadable"
    # (the new image traced: its tracer took the settings out of its environment again)
    grep -q "^after_exec_site 200 " sites.txt && ok || bad "$v (following): $(cat sites.txt)"
    grep -q "^before_exec_site" sites.txt && bad "$v (following): the old image's events remain" || ok
  done
  # other preloaded libraries stay, after the interposer
  MEMTRACE=m.ctf MEMTRACE_FOLLOW_EXEC=1 MEMTRACE_RATE=1 LD_PRELOAD="$preload libm.so.6" "$bin/prog_exec" execv > out.txt ||
    bad "other preloads: program failed: $(cat out.txt)"
  grep -qx "child LD_PRELOAD=libm.so.6" out.txt && "$bin/check_trace" m.ctf sites | grep -q "^after_exec_site 200 " &&
    ok || bad "other preloads: $(cat out.txt)"
  # an environment that names MEMTRACE itself is the caller's (a nested
  # memtrace run): the program traces into its own file, the caller's trace
  # is left as it was
  "$memtrace" run -q -o outer.ctf -- sh -c \
    "MEMTRACE=inner.ctf MEMTRACE_RATE=1 LD_PRELOAD='$preload' exec '$bin/prog_sites'" > truth.txt ||
    bad "nested: program failed"
  "$memtrace" info outer.ctf | grep -q "^executable: .*/sh$\|^executable: .*/dash$\|^executable: .*/bash$" && ok ||
    bad "nested: the outer trace: $("$memtrace" info outer.ctf 2>&1 | grep executable)"
  "$bin/check_trace" inner.ctf sites > sites.txt || bad "nested: inner trace unreadable"
  compare_exact truth.txt sites.txt
  # a failed exec returns as it should, and tracing goes on
  for follow in 0 1; do
    MEMTRACE=x.ctf MEMTRACE_FOLLOW_EXEC=$follow MEMTRACE_RATE=1 traced "$bin/prog_exec" fail > out.txt ||
      bad "failed execs (following: $follow): $(cat out.txt)"
    "$bin/check_trace" x.ctf sites > sites.txt || bad "failed execs: trace unreadable"
    grep -q "^before_exec_site 300 " sites.txt && grep -q "^after_return_site 100 " sites.txt && ok ||
      bad "failed execs (following: $follow): $(cat sites.txt)"
  done
  # a vfork child's exec touches nothing of the parent's; without %p it is
  # not followed, with %p the program it execs traces to its own file
  MEMTRACE=v.ctf MEMTRACE_FOLLOW_EXEC=1 MEMTRACE_RATE=1 traced "$bin/prog_exec" vfork > out.txt ||
    bad "vfork: program failed: $(cat out.txt)"
  grep -qx "child MEMTRACE=(unset)" out.txt && ok || bad "vfork: the child was followed: $(cat out.txt)"
  "$bin/check_trace" v.ctf sites > sites.txt || bad "vfork: trace unreadable"
  grep -q "^before_exec_site 300 " sites.txt && grep -q "^after_return_site 100 " sites.txt &&
    ! grep -q "^after_exec_site" sites.txt && ok || bad "vfork: $(cat sites.txt)"
  # child_and_parent MODE: prog_exec MODE under memtrace run with %p leaves
  # the child's trace (its site only) and the parent's (its two)
  child_and_parent() {
    "$memtrace" run -q --rate 1 -o "$1.%p.ctf" -- "$bin/prog_exec" "$1" > out.txt || bad "$1 %p: program failed"
    local n=0 p=0 f
    for f in "$1".*.ctf; do
      "$bin/check_trace" "$f" sites > sites.txt || bad "$1 %p: $f unreadable"
      grep -q "^after_exec_site 200 " sites.txt && n=$((n + 1))
      grep -q "^before_exec_site 300 " sites.txt && grep -q "^after_return_site 100 " sites.txt && p=$((p + 1))
    done
    [ "$n:$p" = 1:1 ] && ok || bad "$1 with %p: $n child and $p parent traces"
  }
  child_and_parent vfork
  # posix_spawn'd children: with %p each traces to its own file, without
  # they run untraced (as forked children do)
  child_and_parent spawn
  "$memtrace" run -q --rate 1 -o s.ctf -- "$bin/prog_exec" spawn > out.txt || bad "spawn: program failed"
  "$bin/check_trace" s.ctf sites > sites.txt || bad "spawn without %p: trace unreadable"
  grep -q "^before_exec_site 300 " sites.txt && grep -q "^after_return_site 100 " sites.txt &&
    ! grep -q "^after_exec_site" sites.txt && [ "$(ls s.*ctf)" = s.ctf ] && ok ||
    bad "spawn without %p: $(cat sites.txt)"
  # memtrace run follows by default: a shell that execs the program
  "$memtrace" run -q --rate 1 -o r.ctf -- sh -c "exec '$bin/prog_sites'" > truth.txt || bad "run: program failed"
  "$memtrace" info r.ctf | grep -q "^executable: .*/prog_sites$" && ok ||
    bad "run: not the exec'd program's trace: $("$memtrace" info r.ctf | grep executable)"
  "$bin/check_trace" r.ctf sites > sites.txt || bad "run: trace unreadable"
  compare_exact truth.txt sites.txt
  # with %p every forked process of the tree traces to its own file: forked
  # children, theirs (a command substitution's pipeline), and what they exec
  # (bash: it forks where dash may vfork, whose children are not followed)
  "$memtrace" run -q --rate 1 -o 'w.%p.ctf' -- bash -c "'$bin/prog_exec' child > /dev/null;
    x=\$('$bin/prog_exec' child | cat); '$bin/prog_exec' child | cat > /dev/null" || bad "tree: program failed"
  n=0
  for f in w.*.ctf; do
    "$memtrace" info "$f" | grep -q "^executable: .*/prog_exec$" || continue
    "$bin/check_trace" "$f" sites | grep -q "^after_exec_site 200 " && n=$((n + 1))
  done
  [ "$n" = 3 ] && ok || bad "tree: $n of the 3 exec'd programs traced ($(ls w.*.ctf | wc -l) traces)"
  "$memtrace" run -q --no-follow-exec --rate 1 -o n.ctf -- sh -c "exec '$bin/prog_sites'" > /dev/null ||
    bad "run --no-follow-exec: program failed"
  "$memtrace" info n.ctf | grep "^executable:" | grep -q "prog_sites" &&
    bad "--no-follow-exec followed the exec" || ok
  ;;
dlopen)
  MEMTRACE=t.ctf MEMTRACE_RATE=1 traced "$bin/prog_dlopen" "$bin/libmt_dl_test.so" > out.txt || bad "program failed"
  "$bin/check_trace" t.ctf sites > sites.txt || bad "trace unreadable (a code described twice?)"
  grep -q "^dl_site 900 900000 " sites.txt && ok || bad "dl_site: $(cat sites.txt)"
  grep -q "^main 300 153600 " sites.txt && ok || bad "main: $(cat sites.txt)"
  # each dlclose writes the queued events in the order they came: the
  # peak exceeds what is never freed by one 1000-byte block (125 words) at
  # most, not by the 300 a dlclose writing the allocations first showed
  read -r _ peak _ end < <("$bin/check_trace" t.ctf peak)
  [ $((peak - end)) -le 125 ] && ok || bad "peak $peak words, $end at the end"
  ;;
modules)
  # A program that loads libraries as it goes (CPython importing extension
  # modules): each code is named in the module that holds it. A name made
  # of a module and an offset ("libsqlite3.so.0.8.6+0x1234": code without a
  # symbol) must point inside that module's file. With the modules listed
  # from /proc/self/maps alone (and listed again for a library loaded
  # since), some codes were named after another module, past its end (with pyenv's CPython, 1 to 23 names
  # of 80-100 with seeds 1 to 5, 7 and 8; with Debian's, 52 of 444 with
  # seed 2).
  command -v python3 > /dev/null || { echo "no python3"; exit 77; }
  for seed in 1 2 3 4; do
    MEMTRACE_SEED=$seed "$memtrace" run -q --rate 1e-3 -o m$seed.ctf -- python3 -c '
import json, decimal, datetime, hashlib, ssl, sqlite3, csv, array, math, random, socket, select
import struct, zlib, bz2, lzma, pickle, unicodedata, heapq, bisect, _asyncio
x = [str(i) * 5 for i in range(20000)]' || bad "python3 failed (seed $seed)"
    "$memtrace" dump m$seed.ctf > dump$seed.txt || bad "trace unreadable (seed $seed)"
  done
  python3 - dump*.txt > modules.txt << 'PY' && ok || bad "$(cat modules.txt)"
import os, re, struct, sys
def span(path):  # where the module's highest PT_LOAD segment ends
    with open(path, 'rb') as f:
        h = f.read(64)
        if h[:4] != b'\x7fELF' or h[4] != 2:
            return None
        phoff, = struct.unpack_from('<Q', h, 32)
        phentsize, phnum = struct.unpack_from('<HH', h, 54)
        f.seek(phoff)
        ph = f.read(phentsize * phnum)
    end = 0
    for i in range(phnum):
        ptype, = struct.unpack_from('<I', ph, i * phentsize)
        vaddr, = struct.unpack_from('<Q', ph, i * phentsize + 16)
        memsz, = struct.unpack_from('<Q', ph, i * phentsize + 40)
        if ptype == 1:
            end = max(end, vaddr + memsz)
    return end
names, bad = set(), []
for fn in sys.argv[1:]:
    names |= set(re.findall(r'(\S+)\+0x([0-9a-f]+)@([^:\s]+)', open(fn).read()))
for base, off, path in sorted(names):
    s = span(path) if os.path.exists(path) else None
    if s is None or base != os.path.basename(path)[:40] or int(off, 16) >= s:
        bad.append('%s+0x%s in %s (its segments end at %s)' % (base, off, path, hex(s) if s else '?'))
if not names:
    print('no module+offset names: nothing checked')
    sys.exit(1)
if bad:
    print('%d of %d names past their module: %s' % (len(bad), len(names), '; '.join(bad[:3])))
    sys.exit(1)
print(len(names), 'names checked')
PY
  ;;
no-aranges)
  # A program whose DWARF has no .debug_aranges (clang and rustc emit none
  # by default; here prog_callers with the section removed): libdwfl finds
  # no unit for its addresses, and the profiler once named its code by ELF
  # symbols alone, without files, lines or inlined frames. Its trace must
  # name every code as the same program's with the section does.
  command -v objcopy > /dev/null || { echo "no objcopy"; exit 77; }
  objcopy --remove-section .debug_aranges "$bin/prog_callers" prog_callers_na ||
    bad "objcopy failed"
  # (readelf's output whole first: under pipefail, a grep -q that stops
  # reading early would fail the pipe by readelf's SIGPIPE)
  sections=$(readelf -S prog_callers_na)
  [[ $sections != *debug_aranges* && $sections == *debug_info* ]] && ok ||
    bad "prog_callers_na still has .debug_aranges, or lost its DWARF"
  MEMTRACE_SEED=3 "$memtrace" run -q --rate 1 -o with.ctf -- "$bin/prog_callers" > /dev/null || bad "run failed"
  MEMTRACE_SEED=3 "$memtrace" run -q --rate 1 -o without.ctf -- ./prog_callers_na > /dev/null || bad "run failed"
  # every location (function, file, line, column) the same, but the
  # executable's path in those named by symbol alone (none expected)
  "$memtrace" dump with.ctf | grep -o '[^ ]*@[^ ]*' | sort -u > with.txt
  "$memtrace" dump without.ctf | grep -o '[^ ]*@[^ ]*' | sed 's|@[^ ]*/prog_callers_na:|@'"$bin"'/prog_callers:|' |
    sort -u > without.txt
  grep -q '@.*prog_callers\.c:[1-9]' with.txt && ok || bad "no source positions with .debug_aranges: $(head -3 with.txt)"
  diff with.txt without.txt > names.diff && ok || bad "names differ without .debug_aranges: $(head -5 names.diff)"
  # The section listing some units only (objects of two compilers, Rust's
  # standard library): prog_callers.c's unit unlisted, between two listed
  # ones, whose ranges libdwfl stretches over it (it gives a gap between
  # its ranges to the unit before). Built here as CMake builds it.
  command -v cc > /dev/null || { echo "no cc"; exit 77; }
  src=$(cd "$(dirname "$0")" && pwd)
  flags="-g -O1 -fno-omit-frame-pointer"
  echo 'int gap_before(int x) { return x * 3; }' > before.c
  echo 'int gap_after(int x) { return x * 5; }' > after.c
  cc $flags -c before.c && cc $flags -c after.c && cc $flags -c "$src/prog_callers.c" -o callers.o &&
    objcopy --remove-section .debug_aranges callers.o &&
    cc $flags before.o callers.o after.o -o prog_callers_partial || bad "cannot build the partial program"
  aranges=$(readelf --debug-dump=aranges prog_callers_partial)
  [ "$(grep -c 'Offset into' <<< "$aranges")" = 2 ] && ok ||
    bad "not two units in .debug_aranges: $(head -20 <<< "$aranges")"
  cc $flags "$src/prog_callers.c" -o prog_callers_whole || bad "cannot build prog_callers"
  MEMTRACE_SEED=3 "$memtrace" run -q --rate 1 -o whole.ctf -- ./prog_callers_whole > /dev/null || bad "run failed"
  MEMTRACE_SEED=3 "$memtrace" run -q --rate 1 -o partial.ctf -- ./prog_callers_partial > /dev/null || bad "run failed"
  "$memtrace" dump whole.ctf | grep -o '[^ ]*prog_callers\.c:[^ ]*' | sort -u > whole.txt
  "$memtrace" dump partial.ctf | grep -o '[^ ]*prog_callers\.c:[^ ]*' | sort -u > partial.txt
  [ -s whole.txt ] && diff whole.txt partial.txt > partial.diff && ok ||
    bad "prog_callers.c's names differ when its unit is not in .debug_aranges: $(head -5 partial.diff)"
  ;;
split-dwarf)
  # Programs built with -gsplit-dwarf: the executable keeps skeleton units
  # and the line tables, the functions and inlined calls are in a .dwo file
  # beside it (libdw finds it by the skeleton's name for it). Their traces
  # must name every code as the same program built without does: functions,
  # inlined frames, files, lines, columns. gcc's DWARF 5 and 4 forms, and
  # clang's (which writes no .debug_aranges either). A .dwo gone: named by
  # the skeleton's lines and the ELF symbols, no crash.
  command -v g++ > /dev/null || { echo "no g++"; exit 77; }
  src=$(cd "$(dirname "$0")" && pwd)
  build() { # DIR COMPILER FLAGS...: prog_cxx.cpp as DIR/prog, traced into DIR/t.ctf
    local dir=$1 cxx=$2
    shift 2
    mkdir -p "$dir" && (cd "$dir" && "$cxx" -O2 -g -fno-omit-frame-pointer "$@" "$src/prog_cxx.cpp" -o prog) ||
      { bad "cannot build $dir ($cxx $*)"; return 1; }
    MEMTRACE_SEED=3 "$memtrace" run -q --rate 1 -o "$dir/t.ctf" -- "./$dir/prog" > /dev/null ||
      bad "$dir: run failed"
    "$memtrace" dump "$dir/t.ctf" | grep -o '[^ ]*@[^ ]*' | sed "s|$tmp/$dir/prog|PROG|" | sort -u > "$dir.txt"
  }
  same_names() { # WHOLE SPLIT
    diff "$1.txt" "$2.txt" > "$2.diff" && ok || bad "$2's names differ from $1's: $(head -6 "$2.diff")"
  }
  build whole g++ && build split5 g++ -gsplit-dwarf && build split4 g++ -gdwarf-4 -gsplit-dwarf
  ls split5/*.dwo > /dev/null 2>&1 && ok || bad "no .dwo beside split5/prog"
  # inlined frames from the headers, and the program's own sites, named
  grep -q '@/usr/include/c++/.*\.h:[1-9][0-9]*:[1-9]' whole.txt && grep -q '@.*prog_cxx\.cpp:14:' whole.txt &&
    ok || bad "whole build: no inlined header frames or no sites: $(head -5 whole.txt)"
  same_names whole split5
  same_names whole split4
  if command -v clang++ > /dev/null; then
    build cwhole clang++ && build csplit clang++ -gsplit-dwarf && same_names cwhole csplit
  fi
  rm split5/*.dwo
  # (the dump whole first: a grep -q stopping early would fail the pipe)
  MEMTRACE_SEED=3 "$memtrace" run -q --rate 1 -o nodwo.ctf -- ./split5/prog > /dev/null &&
    "$memtrace" dump nodwo.ctf > nodwo.txt && grep -q 'main@.*prog_cxx\.cpp:19:53' nodwo.txt && ok ||
    bad "without its .dwo: a failed run or no source lines: $(grep -m1 main nodwo.txt)"
  ;;
attach)
  # memtrace attach on a running program (src/cli/attach): a window of a
  # multithreaded program traced exactly at rate 1; blocks from before the
  # window freed and reallocated in it without event or harm; blocks of the
  # window freed after the detach; the main thread blocked in sigwait as it
  # is taken aside.
  wait_line() { # wait_line FILE TEXT: until FILE has a line TEXT (10 s)
    for _ in $(seq 200); do grep -qx "$2" "$1" 2> /dev/null && return 0; sleep 0.05; done
    return 1
  }
  "$bin/prog_attach" "$bin/libmt_dl_test.so" > pa.out 2>&1 &
  prog=$!
  wait_line pa.out ready || bad "prog_attach did not start"
  "$memtrace" attach --rate 1 -o a.ctf "$prog" > at.out 2> at.err &
  at=$!
  for _ in $(seq 200); do grep -q "^memtrace attach: tracing process $prog " at.err && break; sleep 0.05; done
  grep -q "^memtrace attach: tracing process $prog (prog_attach) into $PWD/a.ctf; its threads were stopped for [0-9.]* ms" at.err &&
    ok || bad "attach did not say it traces: $(cat at.err)"
  kill -USR1 "$prog"
  wait_line pa.out "window done" || bad "the window did not end: $(cat pa.out)"
  kill -INT "$at"
  wait "$at" || bad "attach exited $?: $(cat at.err)"
  grep -q "^memtrace attach: detached from process $prog" at.err && grep -q "^memtrace: trace written to .*a.ctf" at.err &&
    ok || bad "no detach or report: $(cat at.err)"
  kill -USR2 "$prog"
  wait "$prog" || bad "prog_attach failed after the detach: $(cat pa.out)"
  grep -q "^done, 0 errors$" pa.out && ok || bad "prog_attach: $(tail -1 pa.out)"
  # the program's PLT slots reach the wrappers straight once attached:
  # those bound to the C library before (malloc, free), and one still
  # unbound at the attach under lazy binding (valloc, first called after)
  grep "^plt " pa.out | tr '\n' ' ' |
    grep -Eqx "plt malloc libc.so.6 plt free libc.so.6 plt valloc (prog_attach|libc.so.6) plt malloc libmemtrace_preload.so plt free libmemtrace_preload.so plt valloc libmemtrace_preload.so " &&
    ok || bad "the PLT slots before and in the window: $(grep "^plt " pa.out)"
  grep -E "^(window_|dl_site)" pa.out > truth.txt
  # the C library's own mappings (malloc's, thread stacks) are not the program's
  [ "$("$bin/check_trace" a.ctf mappings | cut -d' ' -f1)" = window_map ] && ok ||
    bad "the mappings of the window: $("$bin/check_trace" a.ctf mappings)"
  "$bin/check_trace" a.ctf sites > sites.txt || bad "trace unreadable"
  compare_exact truth.txt sites.txt
  ! grep -q "^before_alloc " sites.txt && ok || bad "blocks from before the window in the trace: $(grep before_alloc sites.txt)"
  # malloc's and free's sites hold the C library's trampolines (jumps.c)
  "$memtrace" info a.ctf | grep -q "jumps=inline, allocator=redirected, attached" && ok || bad "runtime parameters: $("$memtrace" info a.ctf | grep runtime)"
  # a C++ program: operator new and delete through the wrapped malloc
  "$bin/prog_attach_cxx" > cx.out 2>&1 &
  prog=$!
  wait_line cx.out ready || bad "prog_attach_cxx did not start"
  "$memtrace" attach -q --rate 1 -o cx.ctf "$prog" 2> cx.err &
  at=$!
  for _ in $(seq 200); do grep -q "^memtrace attach: tracing" cx.err && break; sleep 0.05; done
  kill -USR1 "$prog"
  wait_line cx.out "window done" || bad "prog_attach_cxx's window did not end"
  kill -INT "$at"
  wait "$at" || bad "attach to prog_attach_cxx: $(cat cx.err)"
  kill -USR2 "$prog"
  wait "$prog" || bad "prog_attach_cxx failed: $(cat cx.out)"
  grep "^cxx_site " cx.out > truth.txt
  "$bin/check_trace" cx.ctf sites > sites.txt || bad "prog_attach_cxx's trace unreadable"
  compare_exact truth.txt sites.txt
  # 20 attach and detach cycles on one run: its output as without them,
  # and each cycle a whole trace. Its main thread is nearly always inside
  # malloc or free: the calls are made by a thread at a safe point.
  "$bin/prog_steady" 0.5 main > plain.txt
  "$bin/prog_steady" 10 main > steady.txt 2>&1 &
  prog=$!
  sleep 0.2
  for i in $(seq 20); do
    "$memtrace" attach -q --rate 1e-3 --duration 0.1 -o "c$i.ctf" "$prog" 2> "c$i.err" || bad "cycle $i: exit $?: $(cat "c$i.err")"
  done
  wait "$prog" || bad "prog_steady failed under the cycles"
  cmp -s plain.txt steady.txt && ok || bad "prog_steady's output changed: $(cat steady.txt) (plain: $(cat plain.txt))"
  for i in $(seq 20); do
    "$bin/check_trace" "c$i.ctf" sites 2> /dev/null | grep -q "^steady_site " && ok || bad "cycle $i: no trace of steady_site"
  done
  # a program ending with _exit (no exit handler) while attached: its last
  # events are in the trace; detached before, it ends as it would have
  "$bin/prog_steady" 1 _exit > ex.txt &
  prog=$!
  sleep 0.2
  "$memtrace" attach -q --rate 1e-2 -o ex.ctf "$prog" 2> ex.err || bad "attach to a program ending with _exit: $(cat ex.err)"
  wait "$prog" && grep -q "^steady done" ex.txt && ok || bad "prog_steady _exit attached: exit $?, $(cat ex.txt)"
  "$bin/check_trace" ex.ctf sites 2> /dev/null | grep -q "^last_site " && ok ||
    bad "the events just before _exit are not in the trace"
  "$bin/prog_steady" 1 _exit > ex2.txt &
  prog=$!
  sleep 0.2
  "$memtrace" attach -q --duration 0.2 -o ex2.ctf "$prog" 2> ex2.err || bad "a short attach: $(cat ex2.err)"
  wait "$prog" && grep -q "^steady done" ex2.txt && ok || bad "prog_steady _exit after the detach: exit $?, $(cat ex2.txt)"
  # the errors, each said, with exit status 1 (2 for a bad argument)
  expect_fail() { # expect_fail STATUS TEXT CMD...
    local want=$1 text=$2
    shift 2
    "$@" > /dev/null 2> err.txt
    local st=$?
    [ "$st" = "$want" ] && grep -q -- "$text" err.txt && ok || bad "$*: exit $st (want $want), said: $(cat err.txt) (want: $text)"
  }
  expect_fail 1 "memtrace attach: no process 4194304" "$memtrace" attach 4194304
  # a process whose one thread stays in the C library where it may hold a
  # lock (blocked writing to a full pipe): refused, and left unharmed
  mkfifo full
  sleep 30 < full > /dev/null 2>&1 &
  reader=$!
  yes > full 2> /dev/null &
  writer=$!
  sleep 0.3
  expect_fail 1 "none of its threads came, within 5.0 s, to a point where it can make the profiler's calls" \
    "$memtrace" attach -o never.ctf "$writer"
  [ "$(cut -d' ' -f3 "/proc/$writer/stat")" = S ] && ! grep -q memtrace_preload "/proc/$writer/maps" && ok ||
    bad "the refused process: state $(cut -d' ' -f3 "/proc/$writer/stat"), $(grep -c memtrace "/proc/$writer/maps") mappings of the profiler"
  kill "$writer" "$reader"; wait "$writer" "$reader" 2> /dev/null
  expect_fail 2 "PID must be a process id, not 'abc'" "$memtrace" attach abc
  "$bin/prog_static" 3 > /dev/null &
  st_pid=$!
  sleep 0.2
  expect_fail 1 "does not use the C library's shared object" "$memtrace" attach "$st_pid"
  kill "$st_pid"; wait "$st_pid" 2> /dev/null
  # a 32-bit program (i386, static, made here: it only waits for a signal)
  printf '.globl _start\n_start: movl $29, %%eax\n int $0x80\n jmp _start\n' > p32.s
  if as --32 -o p32.o p32.s 2> /dev/null && ld -m elf_i386 -o p32 p32.o 2> /dev/null && timeout 0.2 ./p32; [ $? = 124 ]; then
    ./p32 &
    p32=$!
    sleep 0.1
    expect_fail 1 "process $p32 (p32) is a 32-bit program: memtrace attach traces 64-bit x86-64 ones" "$memtrace" attach "$p32"
    kill "$p32"; wait "$p32" 2> /dev/null
  else
    echo "no i386 assembler, linker or kernel support here: a 32-bit program not tried"
  fi
  "$bin/prog_steady" 5 > steady.txt & # long enough for the refusals below on a loaded machine
  prog=$!
  sleep 0.2
  tid=$(ls "/proc/$prog/task" | grep -v "^$prog$" | head -1)
  expect_fail 1 "$tid is a thread of process $prog: attach to $prog" "$memtrace" attach "$tid"
  # traced by another tracer (a debugger's ptrace)
  python3 -c '
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
pid = int(sys.argv[1])
if libc.ptrace(16, pid, None, None) != 0: sys.exit(1)  # PTRACE_ATTACH
os.waitpid(pid, 0)
libc.ptrace(7, pid, None, None)  # PTRACE_CONT
print("attached", flush=True)
time.sleep(1.5)
' "$prog" > dbg.out &
  dbg=$!
  for _ in $(seq 100); do grep -q attached dbg.out && break; sleep 0.02; done
  expect_fail 1 "is being traced by process $dbg (python[0-9.]*), a debugger or tracer" "$memtrace" attach "$prog"
  wait "$dbg"
  # attached twice at once: the second is refused, the first goes on
  "$memtrace" attach -q --duration 1.5 -o twice.ctf "$prog" 2> first.err &
  first=$!
  sleep 0.5
  expect_fail 1 "it is being traced by memtrace already" "$memtrace" attach -o second.ctf "$prog"
  wait "$first" || bad "the first attach failed: $(cat first.err)"
  wait "$prog"
  grep -q "^steady done" steady.txt && ok || bad "prog_steady after the refusals: $(cat steady.txt)"
  # another user's process
  if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups "$memtrace" --version > /dev/null 2>&1; then
    sleep 3 &
    sl=$!
    expect_fail 1 "not permitted: it belongs to user 0 and memtrace runs as user 65534" \
      setpriv --reuid=65534 --regid=65534 --clear-groups "$memtrace" attach -o "/tmp/mt-nobody-$$.ctf" "$sl"
    kill "$sl"; wait "$sl" 2> /dev/null
  else
    echo "not root, or the build is not reachable by user 65534: another user's process not tried"
  fi
  # a process in another PID namespace
  if unshare --pid --fork --mount-proc true 2> /dev/null; then
    unshare --pid --fork --mount-proc sleep 3 &
    us=$!
    sleep 0.3
    inner=$(pgrep -P "$us" sleep || pgrep -n -x sleep)
    expect_fail 1 "runs in another PID namespace" "$memtrace" attach "$inner"
    kill "$us" 2> /dev/null; wait "$us" 2> /dev/null
  else
    echo "unshare --pid not permitted here: another PID namespace not tried"
  fi
  # a real server under load: redis-server (its I/O and background
  # threads) attached for a second while redis-benchmark runs; every
  # request answered, and it serves on after the detach
  if command -v redis-server > /dev/null && command -v redis-benchmark > /dev/null && command -v redis-cli > /dev/null; then
    port=$(free_port)
    redis-server --port "$port" --save "" --appendonly no --io-threads 2 > redis.log 2>&1 &
    rs=$!
    for _ in $(seq 100); do redis-cli -p "$port" ping 2> /dev/null | grep -q PONG && break; sleep 0.05; done
    redis-benchmark -p "$port" -n 60000 -t set,get -q > bench.txt 2>&1 &
    rb=$!
    sleep 0.3
    "$memtrace" attach -q --rate 1e-3 --duration 1 -o redis.ctf "$rs" 2> redis.err || bad "attach to redis-server: $(cat redis.err)"
    wait "$rb" || bad "redis-benchmark failed: $(cat bench.txt)"
    [ "$(grep -c "requests per second" bench.txt)" = 2 ] && ok || bad "redis-benchmark's results: $(cat bench.txt)"
    [ "$(redis-cli -p "$port" set k v)" = OK ] && [ "$(redis-cli -p "$port" get k)" = v ] && ok ||
      bad "redis-server after the detach"
    [ "$("$bin/check_trace" redis.ctf summary | awk '/^allocations/ { print $2 }')" -gt 10 ] && ok ||
      bad "redis-server's trace: $("$bin/check_trace" redis.ctf summary)"
    redis-cli -p "$port" shutdown nosave > /dev/null 2>&1
    wait "$rs" 2> /dev/null
  else
    echo "redis-server, redis-benchmark or redis-cli not installed (make deps): a real server not tried"
  fi
  # the thread taken aside in the middle of vector and x87 work finds its
  # registers and control words as they were after each of the calls
  "$bin/prog_attach_regs" 3 > rg.out &
  prog=$!
  wait_line rg.out ready || bad "prog_attach_regs did not start"
  "$memtrace" attach -q --rate 1e-3 --duration 0.5 -o rg.ctf "$prog" 2> rg.err || bad "attach to prog_attach_regs: $(cat rg.err)"
  wait "$prog" && grep -q "^regs: [1-9][0-9]* blocks, 0 changed$" rg.out && ok || bad "prog_attach_regs: $(cat rg.out)"
  # a thread on a small stack is not taken aside, though it runs its own
  # code: the attach waits for the main thread to leave its lock's wait
  "$bin/prog_attach_stack" > st.out &
  prog=$!
  wait_line st.out ready || bad "prog_attach_stack did not start"
  "$memtrace" attach -q --rate 1e-3 --duration 0.5 -o st.ctf "$prog" 2> st.err && ok ||
    bad "attach to prog_attach_stack: $(cat st.err)"
  wait "$prog" && grep -qx done st.out && ok || bad "prog_attach_stack: $(cat st.out)"
  # CPython running a workload: its output unchanged, its allocations traced
  py=$(command -v python3)
  # attached once it says so: before, $py may still be a shim about to
  # exec the interpreter, or the interpreter starting
  "$py" -c '
import time
print("ready", flush=True)
t, n = time.time() + 3, 0
while time.time() < t:
    n += len([str(i) * 3 for i in range(2000)])
print("python done", n > 0)
' > py.out &
  prog=$!
  wait_line py.out ready || bad "CPython did not start: $(cat py.out)"
  "$memtrace" attach -q --rate 1e-3 --duration 1 -o py.ctf "$prog" 2> py.err || bad "attach to CPython: $(cat py.err)"
  wait "$prog"
  grep -q "^python done True$" py.out && ok || bad "CPython's output: $(cat py.out)"
  [ "$("$bin/check_trace" py.ctf summary | awk '/^allocations/ { print $2 }')" -gt 50 ] && ok ||
    bad "CPython's trace: $("$bin/check_trace" py.ctf summary)"
  ;;
own-malloc)
  # An allocator bound ahead of the interposer's (linked into the program,
  # or preloaded before it) gets its functions redirected to the
  # interposer's wrappers (src/preload/preload_redirect.c): its allocations
  # are traced, exactly at rate 1, and the runtime parameters say so.
  "$memtrace" run -q --rate 1 -o own.ctf -- "$bin/prog_own_malloc" > own.out 2> own.err || bad "run failed"
  grep -q "own malloc done" own.out && ok || bad "the program did not run: $(cat own.out own.err)"
  ! grep -q "is defined by" own.err && ok || bad "said of a redirected allocator: $(cat own.err)"
  "$memtrace" info own.ctf | grep -q "blocks=header-off-page, .*allocator=redirected" && ok ||
    bad "not redirected: $("$memtrace" info own.ctf | grep runtime)"
  [ "$("$bin/check_trace" own.ctf sites | awk '$1 == "main" { print $2, $3 }')" = "1000 1000000" ] && ok ||
    bad "prog_own_malloc's 1000 blocks of 1000 bytes: $("$bin/check_trace" own.ctf sites)"
  # every allocation function through the program's own allocator, exact
  MEMTRACE=so.ctf MEMTRACE_RATE=1 traced "$bin/prog_sites_own" > truth.txt ||
    bad "prog_sites_own failed: $(grep ERROR truth.txt | head -3)"
  "$bin/check_trace" so.ctf sites > sites.txt || bad "trace unreadable"
  compare_exact truth.txt sites.txt
  "$bin/prog_sites_own" > plain.txt
  cmp -s plain.txt truth.txt && ok || bad "prog_sites_own's output differs under the profiler"
  # MEMTRACE_REDIRECT=0: left alone, and said
  MEMTRACE_REDIRECT=0 "$memtrace" run -q --rate 1 -o off.ctf -- "$bin/prog_own_malloc" > /dev/null 2> off.err ||
    bad "run failed (MEMTRACE_REDIRECT=0)"
  grep -q "memtrace: malloc is defined by .*prog_own_malloc, ahead of the interposer, and is not redirected (MEMTRACE_REDIRECT=0)" off.err &&
    ok || bad "MEMTRACE_REDIRECT=0: $(cat off.err)"
  # an allocator it cannot redirect (no malloc_usable_size): said why
  MEMTRACE=min.ctf LD_PRELOAD="$bin/libmt_own_alloc_min.so:$preload" "$bin/prog_callers" > /dev/null 2> min.err ||
    bad "prog_callers failed under an allocator left alone"
  grep -q "libmt_own_alloc_min\.so, ahead of the interposer, and is not redirected (it does not define all of malloc, free, calloc, realloc, malloc_usable_size)" min.err &&
    ok || bad "no word of the allocator left alone: $(cat min.err)"
  "$memtrace" run -q --rate 1 -o plain.ctf -- "$bin/prog_callers" > /dev/null 2> plain.err || bad "run failed"
  ! grep -q "is defined by" plain.err && ok || bad "said of a program without its own malloc: $(cat plain.err)"
  # Built without PIE, taking malloc's address: the loader's lookup of
  # malloc answers with the program's PLT entry (node, as Debian builds
  # it, was told it had its own malloc). Not said, and both kinds of call
  # traced, 100 each.
  "$memtrace" run -q --rate 1 -o nopie.ctf -- "$bin/prog_nopie_malloc" > nopie.out 2> nopie.err || bad "run failed"
  grep -q "no-pie malloc done" nopie.out && ok || bad "the program did not run: $(cat nopie.out nopie.err)"
  ! grep -q "is defined by" nopie.err && ok || bad "said of a program without PIE: $(cat nopie.err)"
  "$memtrace" dump nopie.ctf > nopie.txt || bad "dump failed"
  for line in 15 16; do
    n=$(grep -c "main@[^ ]*prog_nopie_malloc\.c:$line:" nopie.txt)
    [ "$n" = 100 ] && ok || bad "not 100 allocations from line $line ($n)"
  done
  # An allocator preloaded ahead of the interposer: redirected under a PIE
  # program; under the one without PIE, whose malloc symbol is its PLT
  # entry, left alone and said.
  MEMTRACE=ahead.ctf MEMTRACE_RATE=1 LD_PRELOAD="$bin/libmt_own_alloc.so:$preload" "$bin/prog_sites" > truth.txt 2> ahead.err ||
    bad "prog_sites failed under an allocator preloaded ahead: $(cat ahead.err)"
  "$bin/check_trace" ahead.ctf sites > sites.txt || bad "trace unreadable"
  compare_exact truth.txt sites.txt
  MEMTRACE=ahead2.ctf LD_PRELOAD="$bin/libmt_own_alloc.so:$preload" "$bin/prog_nopie_malloc" > /dev/null 2> ahead.err ||
    bad "prog_nopie_malloc failed"
  grep -q "libmt_own_alloc\.so, ahead of the interposer, and is not redirected (its malloc is a PLT entry)" ahead.err && ok ||
    bad "prog_nopie_malloc: no word of the allocator preloaded ahead: $(cat ahead.err)"
  ;;
linked-allocators)
  # Real allocators bound ahead of the interposer, redirected: Debian's
  # static jemalloc linked into the program, and jemalloc's and mimalloc's
  # shared libraries preloaded before it. At rate 1 every site exact; at
  # 1e-3 each site's true bytes within the estimate's 4-sigma band.
  run_exact() { # run_exact NAME ENV... -- PROG ARGS...
    local name=$1
    shift
    env MEMTRACE="$name.ctf" MEMTRACE_RATE=1 "$@" > truth.txt 2> "$name.err" || bad "$name failed: $(grep ERROR truth.txt | head -3) $(cat "$name.err")"
    "$memtrace" info "$name.ctf" | grep -q "allocator=redirected" && ok ||
      bad "$name: not redirected: $(cat "$name.err") $("$memtrace" info "$name.ctf" 2>&1 | grep runtime)"
    "$bin/check_trace" "$name.ctf" sites > sites.txt || bad "$name: trace unreadable"
    compare_exact truth.txt sites.txt
    # the allocator's own mappings (its arenas) are not the program's
    [ -z "$("$bin/check_trace" "$name.ctf" mappings)" ] && ok ||
      bad "$name: the allocator's mappings counted: $("$bin/check_trace" "$name.ctf" mappings)"
  }
  run_sampled() { # run_sampled NAME ENV... -- PROG ARGS...
    # A seed fixes the program's draws only up to the profiler's own
    # allocations inside the allocator, which move the countdown and differ
    # from one machine to another: a seed whose estimate lies near a band's
    # edge here may cross it elsewhere. Seeds 8 and 10 keep every site far
    # inside its band under the three allocators (the estimates are unbiased
    # over seeds: the bands are right, the draws are what a seed makes them).
    local name=$1 seed
    shift
    for seed in 8 10; do
      env MEMTRACE="$name$seed.ctf" MEMTRACE_RATE=1e-3 MEMTRACE_SEED=$seed "$@" > truth.txt 2> /dev/null
      "$bin/check_trace" "$name$seed.ctf" sites > sites.txt || bad "$name: trace unreadable"
      check_bands "$name seed $seed" truth.txt sites.txt
    done
  }
  tested=0
  if [ -x "$bin/prog_sites_jemalloc" ]; then
    run_exact je-static LD_PRELOAD="$preload" "$bin/prog_sites_jemalloc" 1 no-pvalloc
    run_sampled je-static LD_PRELOAD="$preload" "$bin/prog_sites_jemalloc" 60 no-pvalloc
    tested=1
  else
    echo "libjemalloc.a not found at build time (apt-get install libjemalloc-dev): static jemalloc skipped"
  fi
  for lib in /usr/lib/*/libjemalloc.so.2 /usr/lib/*/libmimalloc.so; do
    [ -f "$lib" ] || continue
    name=$(basename "$lib" | cut -d. -f1)
    run_exact "$name" LD_PRELOAD="$lib:$preload" "$bin/prog_sites" 1 no-pvalloc
    run_sampled "$name" LD_PRELOAD="$lib:$preload" "$bin/prog_sites" 60 no-pvalloc
    # its C++ operator new and delete go to the C++ runtime's, and so
    # through malloc: the sites are prog_cxx's, as without an allocator
    MEMTRACE="$name-cxx.ctf" MEMTRACE_RATE=1 LD_PRELOAD="$lib:$preload" "$bin/prog_cxx" > /dev/null || bad "$name: prog_cxx failed"
    "$bin/check_trace" "$name-cxx.ctf" sites > sites.txt || bad "$name: prog_cxx's trace unreadable"
    for want in "site_new()|1000 16000" "site_aligned()|200 51200" "site_nothrow()|300 38400"; do
      line=$(grep -F "${want%|*} " sites.txt | head -1)
      [ "$(awk '{print $(NF-5), $(NF-4)}' <<< "$line")" = "${want#*|}" ] && ok ||
        bad "$name: prog_cxx's ${want%|*}: '$line', want ${want#*|}"
    done
    tested=1
  done
  [ "$tested" = 1 ] || { echo "no jemalloc or mimalloc installed: skipped"; exit 77; }
  ;;
jit)
  # Generated code named by the runtime's perf map (/tmp/perf-PID.map, as
  # node --perf-basic-prof writes it): prog_jit calls malloc through a stub
  # in an anonymous executable mapping. The stack goes through the stub
  # (walked by its frame record), and the stub is named as its map line
  # says, where it was "??" before.
  # (without -q: the report on stderr, checked below)
  out=$(MEMTRACE_SEED=3 "$memtrace" run --rate 1 -o jit.ctf -- "$bin/prog_jit" 2> jr.txt) || bad "run failed"
  [[ $out =~ ^[0-9]+$ ]] && rm -f "/tmp/perf-$out.map" "/tmp/jit-$out.dump"
  "$memtrace" dump jit.ctf > jit.txt || bad "dump failed"
  n=$(grep -cE "main@[^ ]*prog_jit\.c:[0-9:-]+ jit_stub \[generated\]@/tmp/perf-$out\.map:0:0-0 alloc_from_jit@[^ ]*prog_jit\.c:" jit.txt)
  [ "$n" = 10 ] && ok || bad "not 10 allocations through the named stub ($n): $(grep -m1 alloc_from_jit jit.txt)"
  # Through CPython's perf trampolines, which keep no record (rbp holding
  # data), without and with endbr64: the stack goes on past nofp_alloc (by
  # its call-frame information), through the trampoline (by its shape) and
  # nofp_outer, to main. Every sample: the stacks used to end at the
  # trampoline, and once a walk that stopped there made nofp_alloc an entry
  # point, and the later stacks ended at it.
  for stub in "jit_bare \[generated\]@/tmp/perf-$out\.map" "py::jit_cet@/app/t\.py"; do
    n=$(grep -cE "main@[^ ]*prog_jit\.c:[0-9:-]+ nofp_outer@[^ ]*prog_jit_nofp\.S:[0-9:-]+ $stub:0:0-0 nofp_alloc@[^ ]*\$" jit.txt)
    [ "$n" = 10 ] && ok || bad "not 10 whole stacks through the trampoline $stub ($n): $(grep -m1 -F "${stub%%[ @]*}" jit.txt)"
  done
  # The same trampoline between two functions that keep records, as in a
  # CPython built with frame pointers: there the record walk meets it
  # first, and the stacks lost its caller (rec_outer) when it did.
  n=$(grep -cE "main@[^ ]*prog_jit\.c:[0-9:-]+ rec_outer@[^ ]*prog_jit\.c:[0-9:-]+ py::jit_fp@/app/t\.py:0:0-0 alloc_from_jit@" jit.txt)
  [ "$n" = 10 ] && ok || bad "not 10 whole stacks through the trampoline between records ($n): $(grep -m1 'jit_fp' jit.txt)"
  # A function of the program run from a second mapping of its file, as
  # V8 runs node's builtins: named as the function (it was "??" in node;
  # here the program's name and an offset far past its end).
  n=$(grep -cE "main@[^ ]*prog_jit\.c:[0-9:-]+ remap_caller@[^ ]*prog_jit_nofp\.S:[0-9:-]+ alloc_from_jit@" jit.txt)
  [ "$n" = 10 ] && ok || bad "not 10 stacks through the program's code mapped again ($n): $(grep -m1 -E 'prog_jit\+|remap_caller' jit.txt)"
  # Code named in the jitdump alone (found among the process's mappings):
  # its record's name.
  n=$(grep -cE "main@[^ ]*prog_jit\.c:[0-9:-]+ wasm\[0\]::function\[1\]::dumped@/tmp/jit-$out\.dump:0:0-0 alloc_from_jit@" jit.txt)
  [ "$n" = 10 ] && ok || bad "not 10 allocations through the code the jitdump names ($n): $(grep -m1 'dumped' jit.txt)"
  # memtrace run's report gives, under each site, the program's own
  # function when a language runtime runs it (the innermost code named as
  # CPython or V8 name theirs): nofp_alloc's is py::jit_cet for half its
  # samples; the sites in C alone get no such line.
  grep -A2 "  nofp_alloc (" jr.txt | grep -qx "  *in py::jit_cet \[t\.py\] (50%)" && ok ||
    bad "no 'in py::jit_cet [t.py] (50%)' under nofp_alloc: $(cat jr.txt)"
  [ "$(grep -c "^  *in " jr.txt)" = 3 ] && ok || bad "not 3 sites with the program's function: $(cat jr.txt)"
  # past the runtime's own library: alloc_from_lib is reached through the
  # script's JS:user, then node's JS:lib (node:buffer), innermost
  grep -A2 "  alloc_from_lib (" jr.txt | grep -qx "  *in JS:user \[u\.js\]" && ok ||
    bad "no 'in JS:user [u.js]' under alloc_from_lib: $(cat jr.txt)"
  # V8's line for an unnamed function of an unnamed script (new Function),
  # "JS:* :1:20": the function and the script named as V8's stack traces
  # name them, without V8's tier mark.
  n=$(grep -cE "main@[^ ]*prog_jit\.c:[0-9:-]+ JS:\(anonymous\)@<anonymous>:1:20-20 alloc_from_jit@" jit.txt)
  [ "$n" = 10 ] && ok || bad "not 10 allocations through the anonymous one ($n): $(grep -m1 'JS:' jit.txt)"
  # The same addresses given other code and a new map line: the later
  # samples named by it (a code of their own), the earlier ones not renamed.
  n=$(grep -cE "main@[^ ]*prog_jit\.c:[0-9:-]+ JS:replaced@/app/r\.js:7:3-3 alloc_from_jit@" jit.txt)
  [ "$n" = 10 ] && ok || bad "not 10 allocations through the replaced code ($n): $(grep -m1 'JS:r' jit.txt)"
  ;;
refused-lines)
  # Code whose line tables the tracer's own reader refuses (a sequence going
  # back to a lower address; DW_LNE_define_file), in units written by hand
  # (refused_lines.S): libdw reads them, in the unit found, the second one
  # unlisted in .debug_aranges. Every name as the DWARF says, the inlined
  # call's file (DW_AT_call_file) from libdw's file list too.
  MEMTRACE_SEED=3 "$memtrace" run -q --rate 1 -o refused.ctf -- "$bin/prog_refused_lines" > /dev/null ||
    bad "run failed"
  "$memtrace" dump refused.ctf > refused.txt || bad "dump failed"
  # (outermost first: each line ends with the innermost frame)
  for want in ' refused_seq_alloc@/src/refused/refused_seq.c:11:3-3 helper_a@/src/refused/helper.h:5:7-7' \
              ' refused_define_alloc@/src/refused/extra.h:7:9-9'; do
    grep -q -- "${want//./\\.}\$" refused.txt && ok || bad "no frames '$want' in: $(grep -m1 refused refused.txt)"
  done
  # both calls' sites seen 4 times each, at rate 1
  [ "$(grep -c 'refused_.*_alloc@' refused.txt)" = 8 ] && ok ||
    bad "not 8 allocations from the refused units: $(grep -c 'refused_.*_alloc@' refused.txt)"
  ;;
tcp)
  "$memtrace" listen 127.0.0.1:0 -o got.ctf 2> listen.err &
  lpid=$!
  for _ in $(seq 50); do grep -q "listening on" listen.err && break; sleep 0.1; done
  port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' listen.err)
  [ -n "$port" ] || bad "listen did not start: $(cat listen.err)"
  # a second listener into the same file is refused, the first's untouched
  "$memtrace" listen 127.0.0.1:0 -o got.ctf 2> listen2.err
  [ $? = 1 ] && grep -q "got.ctf is being written by another process" listen2.err && ok ||
    bad "second listener into one file: $(cat listen2.err)"
  MEMTRACE=tcp:127.0.0.1:$port MEMTRACE_RATE=1 traced "$bin/prog_sites" > truth.txt || bad "program failed"
  wait $lpid && ok || bad "listen failed: $(cat listen.err)"
  grep -q "events from" listen.err && ok || bad "listen summary: $(cat listen.err)"
  "$bin/check_trace" got.ctf sites > sites.txt || bad "streamed trace unreadable"
  compare_exact truth.txt sites.txt
  # memtrace run into a listener: it says where the trace went (it said
  # "no trace was written to tcp:...", taking the destination for a file);
  # nothing of the kind when the connection failed (the tracer says why)
  rm -f got.ctf listen.err
  "$memtrace" listen 127.0.0.1:0 -o got.ctf 2> listen.err &
  lpid=$!
  for _ in $(seq 50); do grep -q "listening on" listen.err && break; sleep 0.1; done
  port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' listen.err)
  "$memtrace" run -o tcp:127.0.0.1:$port --rate 1 -- "$bin/prog_sites" > truth.txt 2> err.txt
  wait $lpid
  grep -qx "memtrace: the trace went to tcp:127.0.0.1:$port (no report: it is the listener's)" err.txt &&
    ! grep -q "no trace was written" err.txt && ok || bad "run into a listener: $(cat err.txt)"
  "$bin/check_trace" got.ctf sites > sites.txt && compare_exact truth.txt sites.txt
  "$memtrace" run -o tcp:127.0.0.1:$(free_port) -- "$bin/prog_slow" 0.01 > /dev/null 2> err.txt
  grep -q "not tracing: cannot connect" err.txt && [ "$(wc -l < err.txt)" = 1 ] && ok ||
    bad "run into no listener: $(cat err.txt)"
  ;;
tcp-failures)
  # nobody listening: the program runs as usual, with one message
  port=$(free_port)
  MEMTRACE=tcp:127.0.0.1:$port MEMTRACE_RATE=1 traced "$bin/prog_sites" > out.txt 2> err.txt
  [ $? = 0 ] && "$bin/prog_sites" | cmp -s - out.txt && ok || bad "program changed without a listener"
  [ "$(grep -c memtrace err.txt)" = 1 ] && grep -q "not tracing: cannot connect" err.txt && ok ||
    bad "messages: $(cat err.txt)"
  # the listener drops the connection: tracing stops with one message
  python3 - "$port" > py.txt 2>&1 <<'EOF' &
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); print("ready", flush=True)
c, _ = s.accept(); c.recv(1000); c.close(); s.close()
EOF
  for _ in $(seq 50); do grep -q ready py.txt && break; sleep 0.1; done
  MEMTRACE=tcp:127.0.0.1:$port MEMTRACE_RATE=1 traced "$bin/prog_slow" 1.5 > out.txt 2> err.txt
  [ $? = 0 ] && grep -q "slow done" out.txt && ok || bad "program failed after the drop"
  [ "$(grep -c memtrace err.txt)" = 1 ] && grep -q "tracing stopped" err.txt && ok ||
    bad "messages after the drop: $(cat err.txt)"
  # the listener accepts, then reads nothing (stopped, or a host gone): the
  # program waited in send for ever; now tracing stops after 10 s
  port=$(free_port)
  python3 - "$port" > py.txt 2>&1 <<'EOF' &
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); print("ready", flush=True)
c, _ = s.accept(); time.sleep(40)
EOF
  stalled=$!
  for _ in $(seq 50); do grep -q ready py.txt && break; sleep 0.1; done
  start=$SECONDS
  timeout 60 env MEMTRACE=tcp:127.0.0.1:$port MEMTRACE_RATE=1 LD_PRELOAD="$preload" "$bin/prog_slow" 3 \
    > out.txt 2> err.txt
  rc=$? took=$((SECONDS - start))
  kill $stalled 2> /dev/null
  [ $rc = 0 ] && grep -q "slow done" out.txt && [ $took -le 25 ] && ok ||
    bad "stalled listener: status $rc after $took s"
  [ "$(grep -c memtrace err.txt)" = 1 ] && grep -q "tracing stopped: .*Connection timed out" err.txt && ok ||
    bad "messages with a stalled listener: $(cat err.txt)"
  ;;
listen)
  port=$(free_port)
  MEMTRACE=listen:127.0.0.1:$port MEMTRACE_RATE=1e-2 traced "$bin/prog_slow" 8 > out.txt 2> err.txt &
  ppid=$!
  python3 - "$port" <<'EOF' > client.txt 2>&1 || bad "client: $(cat client.txt)"
import socket, sys, time
port = int(sys.argv[1])
for _ in range(120):  # the program may start slowly on a loaded machine
    try:
        c = socket.create_connection(("127.0.0.1", port)); break
    except OSError: time.sleep(0.05)
time.sleep(0.3)
# a second client meanwhile is refused with a message
d = socket.create_connection(("127.0.0.1", port)); d.settimeout(3)
msg = d.recv(200); d.close()
print("second:", msg.decode().strip())
data = b""; c.settimeout(0.5); t0 = time.time()
while time.time() - t0 < 1.5:
    try:
        b = c.recv(65536)
        if not b: break
        data += b
    except socket.timeout: pass
c.close()
open("live.ctf", "wb").write(data)
print("bytes", len(data))
EOF
  wait $ppid && grep -q "slow done" out.txt && ok || bad "program failed in listen mode: $(cat err.txt)"
  grep -q "second: memtrace: already serving a client" client.txt && ok || bad "second client: $(cat client.txt)"
  "$bin/check_trace" live.ctf summary > s.txt 2> s.err || bad "live trace unreadable: $(cat s.err)"
  a=$(awk '/^allocations/ {print $2}' s.txt)
  [ "${a:-0}" -gt 0 ] && ok || bad "no events streamed: $(cat client.txt)"
  ;;
env-errors)
  MEMTRACE=t.ctf MEMTRACE_RATE=abc traced "$bin/prog_sites" > out.txt 2> err.txt
  [ $? = 0 ] && ok || bad "program failed with a bad rate"
  grep -q "MEMTRACE_RATE=abc is not a sampling rate" err.txt && ok || bad "message: $(cat err.txt)"
  [ ! -e t.ctf ] && ok || bad "a trace was written despite the bad rate"
  MEMTRACE=/nonexistent/dir/t.ctf traced "$bin/prog_sites" > out.txt 2> err.txt
  [ $? = 0 ] && grep -q "not tracing: cannot create /nonexistent/dir/t.ctf" err.txt && ok || bad "bad path: $(cat err.txt)"
  # a full disk: the program goes on, tracing stops with one message
  if [ -w /dev/full ]; then
    MEMTRACE=/dev/full MEMTRACE_RATE=1 traced "$bin/prog_sites" > out.txt 2> err.txt
    [ $? = 0 ] && "$bin/prog_sites" | cmp -s - out.txt && ok || bad "program changed on a full disk"
    [ "$(grep -c memtrace err.txt)" = 1 ] && grep -q "No space left on device" err.txt && ok ||
      bad "full disk messages: $(cat err.txt)"
  fi
  # a FIFO whose reader quits after 100 bytes: the write into the broken pipe
  # raised SIGPIPE and killed the program; now tracing stops with one message
  # (opened read-write here first, which does not block, so that the reader
  # surely has it open when the program opens it; then left to the reader)
  mkfifo fifo
  exec 3<> fifo
  head -c 100 <&3 > /dev/null &
  exec 3<&-
  MEMTRACE=fifo MEMTRACE_RATE=1 traced "$bin/prog_sites" > out.txt 2> err.txt
  [ $? = 0 ] && "$bin/prog_sites" | cmp -s - out.txt && ok || bad "program changed by a broken pipe"
  [ "$(grep -c memtrace err.txt)" = 1 ] && grep -q "Broken pipe" err.txt && ok ||
    bad "broken pipe messages: $(cat err.txt)"
  wait
  # a FIFO nobody reads: opening it blocked the program; now it runs untraced
  timeout 20 env MEMTRACE=fifo MEMTRACE_RATE=1 LD_PRELOAD="$preload" "$bin/prog_sites" > out.txt 2> err.txt
  [ $? = 0 ] && "$bin/prog_sites" | cmp -s - out.txt && ok || bad "program blocked on a FIFO nobody reads"
  grep -q "not tracing: cannot write to .*/fifo: no process is reading that FIFO" err.txt && ok ||
    bad "unread FIFO message: $(cat err.txt)"
  # a file size limit (ulimit -f, in KiB) the trace reaches: the write that
  # crossed it took SIGXFSZ and killed the program; now tracing stops with
  # one message, the program goes on, and the trace is whole up to the limit
  (ulimit -f 100 && MEMTRACE=fsize.ctf MEMTRACE_RATE=1 traced "$bin/prog_sites" > out.txt 2> err.txt)
  [ $? = 0 ] && "$bin/prog_sites" | cmp -s - out.txt && ok || bad "program changed by a file size limit"
  [ "$(grep -c memtrace err.txt)" = 1 ] && grep -q "File too large" err.txt && ok ||
    bad "file size limit messages: $(cat err.txt)"
  size=$(stat -c %s fsize.ctf)
  [ "$size" -gt 0 ] && [ "$size" -le 102400 ] && "$bin/check_trace" fsize.ctf sites > /dev/null 2> check.err &&
    [ ! -s check.err ] && ok || bad "trace under a file size limit: $size bytes, $(cat check.err)"
  # traces are the owner's alone (0600 under the usual umask), as memtrace's
  (umask 022 && MEMTRACE=mode.ctf MEMTRACE_RATE=1e-3 traced "$bin/prog_sites" > /dev/null 2>&1)
  [ "$(stat -c %a mode.ctf)" = 600 ] && ok || bad "trace mode $(stat -c %a mode.ctf), want 600"
  (umask 022 && "$memtrace" copy mode.ctf copy.ctf && "$memtrace" subsample mode.ctf sub.ctf 2) 2> /dev/null
  [ "$(stat -c %a copy.ctf sub.ctf | sort -u)" = 600 ] && ok || bad "copies' mode: $(stat -c %a copy.ctf sub.ctf)"
  # never written through a symbolic link at the trace's path: the file it
  # points to stays as it was, the program runs as ever, one message
  echo "keep me" > victim.txt
  ln -s victim.txt link.ctf
  MEMTRACE=link.ctf MEMTRACE_RATE=1 traced "$bin/prog_sites" > out.txt 2> err.txt
  [ $? = 0 ] && "$bin/prog_sites" | cmp -s - out.txt && [ "$(cat victim.txt)" = "keep me" ] && ok ||
    bad "trace through a link: victim now $(head -c 40 victim.txt | od -c | head -2)"
  grep -q "refusing to write through the symbolic link .*/link.ctf" err.txt && ok || bad "link message: $(cat err.txt)"
  "$memtrace" run -o link.ctf -- "$bin/prog_sites" > /dev/null 2> err.txt
  [ $? = 1 ] && grep -q "refusing to write the trace through the symbolic link link.ctf" err.txt &&
    [ "$(cat victim.txt)" = "keep me" ] && ok || bad "run -o link: $(cat err.txt)"
  "$memtrace" copy mode.ctf link.ctf 2> err.txt
  [ $? != 0 ] && grep -q "symbolic link" err.txt && [ "$(cat victim.txt)" = "keep me" ] && ok ||
    bad "copy to a link: $(cat err.txt)"
  # the system's own links still open what they name (/dev/stdout: a pipe)
  MEMTRACE=/dev/stdout MEMTRACE_RATE=1e-3 traced "$bin/prog_sites" 2> err.txt | cat > piped.out
  [ ! -s err.txt ] && [ "$(head -c 4 piped.out | od -An -tx1 | tr -d ' ')" = "c11ffcc1" ] && ok ||
    bad "trace to /dev/stdout: $(cat err.txt)"
  ;;
run)
  # SIGTERM or SIGHUP to memtrace run alone reaches the program; run reports
  # and ends as the program did (killed by it, or its own exit status), and
  # no program is left running
  for sig in TERM HUP; do
    "$memtrace" run -o sig.ctf -- "$bin/prog_slow" 3.37 > /dev/null 2> err.txt & rpid=$!
    sleep 0.5
    kill -$sig $rpid
    wait $rpid
    rc=$?
    want=$((128 + $(kill -l $sig)))
    left=$(pgrep -f "prog_slow 3.37")
    [ "$rc" = "$want" ] && [ -z "$left" ] && grep -q "trace written to sig.ctf" err.txt && ok ||
      bad "SIG$sig to memtrace run: status $rc (want $want), still running: ${left:-none}, $(head -3 err.txt)"
    [ -z "$left" ] || kill $left
  done
  "$memtrace" run -o sig.ctf -- sh -c 'trap "exit 7" TERM; echo up; while :; do sleep 0.05; done' \
    > up.txt 2> err.txt & rpid=$!
  for _ in $(seq 50); do [ -s up.txt ] && break; sleep 0.1; done
  kill -TERM $rpid
  wait $rpid
  rc=$?
  [ "$rc" = 7 ] && grep -q "trace written to sig.ctf" err.txt && ok ||
    bad "SIGTERM to memtrace run, the program exiting 7: status $rc, $(head -3 err.txt)"
  # the trace stops early (a full disk; here a file size limit, the same
  # failed write): the report says where, of the whole run, and why
  (ulimit -f 100 && "$memtrace" run -o early.ctf --rate 1 -- "$bin/prog_slow" 1 > /dev/null 2> err.txt)
  grep -q "the trace ends early: tracing stopped [0-9.]* s into the program's [0-9.]* s (writing the trace failed: File too large)" err.txt &&
    grep -q "live when tracing stopped" err.txt && ! grep -q "never freed" err.txt && ok ||
    bad "report of a trace that stopped early: $(cat err.txt)"
  at=$(sed -n "s/.*tracing stopped \([0-9.]*\) s into the program's \([0-9.]*\) s.*/\1 \2/p" err.txt)
  awk -v a="${at% *}" -v b="${at#* }" 'BEGIN { exit !(a < b && b >= 0.9) }' && ok ||
    bad "early stop at '$at' (stop, run seconds)"
  # a run too short for the rate: why nothing was sampled, and what to try
  # (seeded: the one sample of this 200 KiB run falls, or not, the same way)
  MEMTRACE_SEED=2 "$memtrace" run -o short.ctf -- "$bin/prog_slow" 0 > /dev/null 2> err.txt
  grep -q "no allocation of .*prog_slow was sampled: at rate 1e-05 a sample falls about every 781 KiB allocated; for a short run, try --rate 1e-3" err.txt &&
    ok || bad "empty run's hint: $(cat err.txt)"
  # at 1e-3 already, only the higher rate is offered
  "$memtrace" run --rate 1e-3 -o short.ctf -- true > /dev/null 2> err.txt
  grep -q "was sampled: at rate 0.001 a sample falls about every 7.81 KiB allocated; for a short run, try --rate 1 (every allocation)$" err.txt &&
    ok || bad "empty run's hint at 1e-3: $(cat err.txt)"
  # a wrapper script (a version manager's shim) that runs helpers, then
  # becomes the program: said plainly, the helpers counted by program
  printf '#!/bin/sh\nfor i in 1 2 3 4 5 6; do ls / > /dev/null; done\nexec "%s" 0\n' "$bin/prog_slow" > wrapper.sh
  chmod +x wrapper.sh
  "$memtrace" run --rate 1 -o 'w.%p.ctf' -- ./wrapper.sh > /dev/null 2> err.txt
  grep -q "wrapper.sh ran as prog_slow (it replaced itself by exec" err.txt &&
    grep -q "6 other processes of the run wrote traces: .* and 1 more (ls x6)" err.txt && ok ||
    bad "a wrapper's report: $(cat err.txt)"
  # dash starts its commands with vfork: the child, in the shell's memory
  # until it execs, writes nothing of the shell's trace (which its pid
  # would have stopped, one run in four: the program then untraced)
  stopped=0
  for _ in $(seq 12); do
    rm -f w.*.ctf
    "$memtrace" run --rate 1 -o 'w.%p.ctf' -- ./wrapper.sh > /dev/null 2> err.txt
    grep -q "tracing stopped" err.txt || ! grep -q "ran as prog_slow" err.txt && stopped=$((stopped + 1))
  done
  [ $stopped = 0 ] && ok || bad "vfork children stopped the shell's tracing in $stopped of 12 runs: $(cat err.txt)"
  # one sampled allocation is one
  MEMTRACE_SEED=1 "$memtrace" run -o one.ctf -- "$bin/prog_slow" 0 > /dev/null 2> err.txt
  grep -q " in 1 sampled allocation; top sites" err.txt && ok || bad "one allocation: $(cat err.txt)"
  # a program without symbols: its sites' names are module+offset, and the
  # report says once where names come from
  strip -o stripped_sites "$bin/prog_sites"
  env -u DEBUGINFOD_URLS "$memtrace" run -o stripped.ctf --rate 1 -- ./stripped_sites > /dev/null 2> err.txt
  [ "$(grep -c "sites named like stripped_sites+0x[0-9a-f]* have no symbols: install .*; or set DEBUGINFOD_URLS" err.txt)" = 1 ] && ok ||
    bad "no-symbols hint: $(cat err.txt)"
  # with a debuginfod server that has nothing (none listens there), the hint says so
  DEBUGINFOD_URLS=http://127.0.0.1:1 "$memtrace" run -o stripped.ctf --rate 1 -- ./stripped_sites > /dev/null 2> err.txt
  grep -q "have no symbols: .*; the debuginfod servers of DEBUGINFOD_URLS had none for them" err.txt && ok ||
    bad "no-symbols hint with DEBUGINFOD_URLS: $(cat err.txt)"
  "$memtrace" run -o r.ctf --rate 1 "$bin/prog_sites" > out.txt 2> err.txt
  [ $? = 0 ] && ok || bad "memtrace run failed: $(cat err.txt)"
  grep -q "trace written to r.ctf" err.txt && ok || bad "no trace message: $(cat err.txt)"
  [ "$(grep -c '%  (+-' err.txt)" = 5 ] && ok || bad "top 5 sites: $(cat err.txt)"
  grep -q "site_reallocarray" err.txt && ok || bad "largest site missing: $(cat err.txt)"
  "$bin/check_trace" r.ctf sites > sites.txt && compare_exact out.txt sites.txt
  grep -q "explore it with: memtrace view r.ctf" err.txt && ok || bad "no hint: $(cat err.txt)"
  # a runtime that did not name the program's functions is told how to (a
  # C program is not; PYTHONMALLOC only when not set already)
  ! grep -q "is named in this trace" err.txt && ok || bad "a runtime's hint for a C program: $(cat err.txt)"
  if command -v python3 > /dev/null; then
    hint="memtrace: no Python function is named in this trace: CPython 3.12+ names them for profilers with -X perf"
    "$memtrace" run -o py.ctf --rate 1e-3 -- python3 -c 'x = [str(i) * 50 for i in range(100000)]' 2> pyerr.txt
    grep -qxF "$hint; PYTHONMALLOC=malloc also shows the small objects its own allocator serves" pyerr.txt &&
      ok || bad "no hint for CPython: $(cat pyerr.txt)"
    PYTHONMALLOC=malloc "$memtrace" run -o py.ctf --rate 1e-3 -- python3 -c 'x = [str(i) * 50 for i in range(100000)]' 2> pyerr.txt
    grep -qxF "$hint" pyerr.txt && ok || bad "hint for CPython with PYTHONMALLOC=malloc: $(cat pyerr.txt)"
  fi
  # under each site its heaviest callers, with their shares of the site
  # (prog_callers.c gives the truth), recursion shown once, in every mode
  for mode in auto libunwind fp; do
    "$memtrace" run -o c.ctf --rate 1 --unwind $mode "$bin/prog_callers" 2> err.txt
    sed -n '/xmalloc (/{n;p}' err.txt | grep -qx ' *from leaf_a (75%) <- mid_1 (60%) <- main (60%)' &&
      sed -n '/site_deep (/{n;p}' err.txt | grep -qx ' *from rec <- main <- .*' && ok ||
      bad "callers ($mode): $(cat err.txt)"
    grep -qx 'memtrace: live heap at its peak 42.0 KiB (.* s in); never freed 40.0 KiB (memtrace leaks c.ctf)' \
      err.txt && ok || bad "heap line ($mode): $(cat err.txt)"
    # every stack has the same outermost frame (AUTO's first walks, libunwind's,
    # end where its frame-record walks do)
    roots=$("$memtrace" dump c.ctf | grep ' alloc' | sed 's/^.*len=[0-9]* *[0-9]*: //' | cut -d' ' -f1 | sort -u)
    [ "$(echo "$roots" | wc -l)" = 1 ] && ok || bad "roots ($mode): $roots"
  done
  # code in no symbol (libc's local functions) is named by module and offset
  "$memtrace" dump r.ctf > dump.txt
  grep -q 'libc\.so\.6+0x[0-9a-f]*@' dump.txt && ! grep -q ' ??@' dump.txt && ok ||
    bad "anonymous code: $(grep -o ' ??@[^ ]*' dump.txt | sort -u | head -3)"
  "$memtrace" run -q -o f.ctf -- sh -c 'exit 3'
  [ $? = 3 ] && ok || bad "exit status not passed through"
  # a death by signal shows as the shell shows it without memtrace (-q:
  # memtrace becomes the program; without: it reports 128 + the signal)
  "$memtrace" run -q -o k.ctf -- sh -c 'kill -TERM $$'
  [ $? = 143 ] && [ -s k.ctf ] && ok || bad "signal death under -q"
  "$memtrace" run -o k.ctf -- sh -c 'kill -TERM $$' 2> /dev/null
  [ $? = 143 ] && ok || bad "signal death"
  # ... and memtrace, after its report, dies of the program's signal (a
  # shell stops a script when a command dies of SIGINT, not when one exits
  # with 130); no core file of memtrace's for a program's crash
  waited='import subprocess, sys; print(subprocess.call(sys.argv[1:]))'
  for sig in INT TERM SEGV; do
    rm -f core core.*
    st=$(ulimit -c unlimited 2> /dev/null; python3 -c "$waited" "$memtrace" run -o k.ctf -- \
      sh -c "ulimit -c 0; kill -$sig \$\$" 2> err.txt)
    want=$(( - $(kill -l $sig) ))
    [ "$st" = "$want" ] && grep -q "trace written to k.ctf" err.txt &&
      grep -q "no allocation of .* was sampled" err.txt && ! ls | grep -q '^core' && ok ||
      bad "SIG$sig: wait status $st, not $want: $(cat err.txt)"
  done
  [ "$(python3 -c "$waited" "$memtrace" run -o k.ctf -- sh -c 'exit 130' 2> /dev/null)" = 130 ] &&
    ok || bad "exit 130 is no signal death"
  "$memtrace" run -q -o f.ctf -- /nonexistent/program 2> err.txt
  [ $? = 127 ] && grep -q "cannot run /nonexistent/program" err.txt && ok || bad "missing program: $(cat err.txt)"
  "$memtrace" run --rate 2 true 2> err.txt
  [ $? = 2 ] && grep -q "rate must be" err.txt && ok || bad "bad rate: $(cat err.txt)"
  # a program killed (SIGTERM, as Ctrl-C's SIGINT) after 1.3 s: what it
  # did until the last second is in the trace (its events had waited for a
  # full packet, and the trace held none)
  MEMTRACE=term.ctf MEMTRACE_RATE=1e-4 traced "$bin/prog_slow" 5 > /dev/null 2>&1 &
  victim=$!
  sleep 1.3
  kill -TERM $victim
  wait $victim
  n=$("$bin/check_trace" term.ctf sites 2> /dev/null | awk '$1 == "slow_site" {print $2}')
  [ "${n:-0}" -gt 0 ] && ok || bad "killed after 1.3 s: ${n:-no} allocations in its trace"
  # a relative path names the file in the directory where tracing started:
  # the program a shell execs after cd writes it there, and run finds it
  mkdir -p sub
  "$memtrace" run -o 'cd.%p.ctf' -- sh -c 'cd sub && exec "$0" 0.2' "$bin/prog_slow" > /dev/null 2> err.txt
  ls cd.*.ctf > /dev/null 2>&1 && ! ls sub/*.ctf > /dev/null 2>&1 &&
    grep -q "trace written to cd\.[0-9]*\.ctf" err.txt && grep -q slow_site err.txt && ok ||
    bad "trace after cd: $(ls sub) $(cat err.txt)"
  # so does a forked child that changed directory (a subshell): its file too
  rm -f cd.*.ctf
  "$memtrace" run -q -o 'cd.%p.ctf' -- sh -c '(cd sub && exec "$0" 0.1); true' "$bin/prog_slow" > /dev/null
  [ "$(ls cd.*.ctf | wc -l)" = 2 ] && ! ls sub/*.ctf > /dev/null 2>&1 && ok ||
    bad "traces of a forked child after cd: $(ls . sub)"
  # a % in the directory is not a marker once the path is anchored there
  # (50%p stays itself), and %% is one % for run as for the tracer
  mkdir -p 'dir50%p' && (cd 'dir50%p' && "$memtrace" run -o 't.%p.ctf' -- "$bin/prog_slow" 0.05 \
    > /dev/null 2> ../err.txt; "$memtrace" run -o 'a%%b.ctf' -- "$bin/prog_slow" 0.05 > /dev/null 2>> ../err.txt)
  ls 'dir50%p'/t.[0-9]*.ctf > /dev/null 2>&1 && [ -s 'dir50%p/a%b.ctf' ] &&
    [ "$(grep -c "trace written to" err.txt)" = 2 ] && ok || bad "% in paths: $(ls 'dir50%p') $(cat err.txt)"
  # the report names the traces the run's other processes wrote (%p), or
  # counts those that ran untraced: a shell's vfork'd commands (dash), its
  # forked subshell (bash), a vfork child and a posix_spawn'd one
  # (prog_exec); each once, though dash tries an exec per PATH directory
  # (0.2 s each: ~20 MB, ~25 samples; at 0.01 s, ~1 MB, a child sampled
  # nothing about one run in four, and the report on the largest trace,
  # then empty too, had no site to show)
  # The shell itself samples nothing in most runs; in about one in a hundred
  # one of its few small blocks is sampled, and the report is then rightly
  # on it: the run is made again (at most three times), so that the report
  # on the largest other trace is the one checked below.
  for attempt in 1 2 3; do
    rm -f kids.*.ctf
    PATH="/nonexistent:$bin:$PATH" "$memtrace" run -o 'kids.%p.ctf' -- \
      sh -c 'prog_slow 0.2; prog_slow 0.2; true' > /dev/null 2> err.txt
    shell=$(sed -n 's/^memtrace: trace written to \(kids\.[0-9]*\.ctf\) .*/\1/p' err.txt)
    [ -n "$shell" ] && "$memtrace" dump "$shell" > shell.txt && ! grep -q ' alloc' shell.txt && break
  done
  n=$(ls kids.*.ctf | wc -l)
  line=$(grep "other processes of the run wrote traces:" err.txt)
  named=$(echo "$line" | grep -o 'kids\.[0-9]*\.ctf (prog_slow)' | cut -d' ' -f1)
  whole=1
  for f in $named; do [ -s "$f" ] || whole=0; done
  [ "$n" = 3 ] && [ "$(echo $named | wc -w)" = 2 ] && [ $whole = 1 ] && ok ||
    bad "the children's traces ($n files): $(cat err.txt)"
  # the shell sampled nothing: the report on the whole run ranks the three
  # traces as one, and says how to read them together
  grep -q "memtrace: no allocation of .* was sampled" err.txt &&
    grep -q "memtrace: the whole run, 3 processes, allocated .* top sites of them all:" err.txt &&
    grep -q "slow_site" err.txt &&
    grep -qF "memtrace: explore them together with: memtrace top 'kids.*.ctf'" err.txt && ok ||
    bad "report on the whole run: $(cat err.txt)"
  # its figures are those of memtrace top on the traces together
  total=$("$memtrace" top --format json kids.*.ctf | sed -n 's/.*"sampled_objects": \([0-9]*\).*/\1/p' | head -1)
  grep -q "allocated .* in $total sampled allocation" err.txt && ok ||
    bad "the whole run's count ($total) against memtrace top's: $(cat err.txt)"
  PATH="/nonexistent:$bin:$PATH" "$memtrace" run -o kids.ctf -- \
    sh -c 'prog_slow 0.01; prog_slow 0.01; true' > /dev/null 2> err.txt
  grep -qx "memtrace: 2 other processes of the run ran untraced (with -o 'NAME.%p.ctf' each writes a trace of its own)" \
    err.txt && ok || bad "untraced children (dash): $(cat err.txt)"
  "$memtrace" run -o kids.ctf -- bash -c '(true); x=$(echo a); "$0" 0.01; true' "$bin/prog_slow" \
    > /dev/null 2> err.txt
  grep -q "memtrace: 3 other processes of the run ran untraced" err.txt && ok ||
    bad "untraced children (bash): $(cat err.txt)"
  for how in vfork spawn; do
    rm -f kids.*.ctf
    "$memtrace" run -o 'kids.%p.ctf' -- "$bin/prog_exec" $how > /dev/null 2> err.txt
    grep -q "memtrace: 1 other process of the run wrote its trace: kids\.[0-9]*\.ctf" err.txt && ok ||
      bad "$how child's trace: $(cat err.txt)"
    "$memtrace" run -o kids.ctf -- "$bin/prog_exec" $how > /dev/null 2> err.txt
    grep -q "memtrace: 1 other process of the run ran untraced" err.txt && ok ||
      bad "untraced $how child: $(cat err.txt)"
  done
  # system() and popen() spawn their shell inside the C library: untraced,
  # and counted so (they were not seen before), unless the environment is
  # kept (MEMTRACE_KEEP_ENV=1): then the child, tracing itself, tells run
  # so, and is not counted again as untraced
  for how in system popen; do
    rm -f kids.*.ctf
    "$memtrace" run -o 'kids.%p.ctf' -- "$bin/prog_exec" $how > out.txt 2> err.txt
    [ "$(ls kids.*.ctf | wc -l)" = 1 ] && grep -q "^child MEMTRACE=" out.txt &&
      grep -qx "memtrace: 1 other process of the run ran untraced (with -o 'NAME.%p.ctf' each writes a trace of its own)" \
      err.txt && ok || bad "$how child, environment not kept: $(cat out.txt err.txt)"
    rm -f kids.*.ctf
    MEMTRACE_KEEP_ENV=1 "$memtrace" run -o 'kids.%p.ctf' -- "$bin/prog_exec" $how > /dev/null 2> err.txt
    grep -q "memtrace: 1 other process of the run wrote its trace: kids\.[0-9]*\.ctf (prog_exec)" err.txt &&
      ! grep -q "ran untraced" err.txt && ok ||
      bad "$how child, environment kept: $(ls kids.*.ctf) $(cat err.txt)"
  done
  # a program that starts nothing: no such line
  "$memtrace" run -o kids.ctf -- "$bin/prog_slow" 0.01 > /dev/null 2> err.txt
  ! grep -q "other process" err.txt && ok || bad "children of none: $(cat err.txt)"
  # a trace another traced process is writing now: the program is not run
  MEMTRACE=busy.ctf traced "$bin/prog_slow" 1 > /dev/null 2>&1 &
  writer=$!
  for _ in $(seq 100); do [ -e busy.ctf ] && break; sleep 0.02; done
  sleep 0.1 # created, then locked
  rm -f ran
  "$memtrace" run -o busy.ctf -- sh -c 'touch ran' 2> err.txt
  [ $? = 1 ] && [ ! -e ran ] &&
    grep -qx "memtrace run: busy.ctf is being written by another traced process (the program was not run)" err.txt &&
    ok || bad "busy trace file: $(cat err.txt)"
  wait $writer
  "$bin/check_trace" busy.ctf sites > /dev/null 2> check.err && [ ! -s check.err ] && ok ||
    bad "the other process's trace: $(cat check.err)"
  # a trace that cannot be written is said before the program runs, which
  # does not run: no directory, or a directory where the file should be
  rm -f ran
  "$memtrace" run -o /nonexistent/dir/t.ctf -- touch ran 2> err.txt
  [ $? = 1 ] && [ ! -e ran ] &&
    grep -qx "memtrace run: cannot create /nonexistent/dir/t.ctf: /nonexistent/dir: No such file or directory (the program was not run)" err.txt &&
    ok || bad "output in no directory: $(cat err.txt)"
  mkdir -p adir
  "$memtrace" run -q -o adir -- touch ran 2> err.txt
  [ $? = 1 ] && [ ! -e ran ] && grep -q "adir is a directory" err.txt && ok ||
    bad "output onto a directory: $(cat err.txt)"
  # every unwinder finds the same exact sites
  for mode in auto libunwind fp; do
    "$memtrace" run -q -o u.ctf --rate 1 --unwind $mode "$bin/prog_sites" > out.txt 2> err.txt ||
      bad "--unwind $mode: $(cat err.txt)"
    "$bin/check_trace" u.ctf sites > sites.txt && compare_exact out.txt sites.txt
  done
  "$memtrace" run --unwind dwarf true 2> err.txt
  [ $? = 2 ] && grep -q "takes auto, libunwind or fp, not 'dwarf'" err.txt && ok ||
    bad "bad --unwind: $(cat err.txt)"
  # default name: memtrace.COMMAND.PID.ctf
  "$memtrace" run -q "$bin/prog_slow" 0.1 > /dev/null
  ls memtrace.prog_slow.*.ctf > /dev/null 2>&1 && ok || bad "default trace name"
  # COMMAND is searched in PATH, as execvp did before posix_spawnp
  PATH="$bin:$PATH" "$memtrace" run -q -o p.ctf prog_slow 0.01 > /dev/null 2> err.txt &&
    [ -s p.ctf ] && ok || bad "command from PATH: $(cat err.txt)"
  # an executable script without #! runs with sh, as execvp ran it
  printf 'echo script ran "$@"\n' > noshebang && chmod +x noshebang
  [ "$("$memtrace" run -q -o s.ctf ./noshebang a b 2> err.txt)" = "script ran a b" ] && ok ||
    bad "script without #!: $(cat err.txt)"
  # programs the interposer cannot reach: a warning before they run, which
  # run all the same (exit status passed through), and nothing traced
  "$memtrace" run -o st.ctf "$bin/prog_slow" 0.01 > /dev/null 2> err.txt
  ! grep -q "warning" err.txt && [ -s st.ctf ] && ok || bad "warning for a dynamic program: $(cat err.txt)"
  for p in prog_static prog_static_pie; do
    rm -f st.ctf
    out=$("$memtrace" run -o st.ctf "$bin/$p" 0.01 2> err.txt)
    [ $? = 0 ] && [ "${out%% *}" = slow ] && ok || bad "$p did not run: $out $(cat err.txt)"
    grep -q "warning: $bin/$p is statically linked: LD_PRELOAD cannot replace its malloc" err.txt &&
      grep -q "no trace was written to st.ctf" err.txt && [ ! -s st.ctf ] && ok ||
      bad "$p: no warning: $(cat err.txt)"
  done
  # a trace left there before is not the static program's: not reported
  cp r.ctf st.ctf
  "$memtrace" run -o st.ctf "$bin/prog_static" 0.01 > /dev/null 2> err.txt
  grep -q "no trace was written to st.ctf (it holds process [0-9]*'s, not [0-9]*'s)" err.txt &&
    ! grep -q "trace written to\|top sites" err.txt && ok || bad "stale trace reported: $(cat err.txt)"
  # found in PATH as the exec will find it; and with -q too
  PATH="$bin:$PATH" "$memtrace" run -q -o st.ctf prog_static 0.01 > /dev/null 2> err.txt
  grep -q "warning: $bin/prog_static is statically linked" err.txt && ok ||
    bad "static program from PATH: $(cat err.txt)"
  # a set-user-ID program of another user: the loader ignores LD_PRELOAD
  if [ "$(id -u)" = 0 ] && id nobody > /dev/null 2>&1; then
    cp "$bin/prog_slow" suid && chown nobody suid && chmod u+s suid
    "$memtrace" run -q -o su.ctf ./suid 0.01 > /dev/null 2> err.txt
    grep -q "warning: ./suid is set-user-ID or set-group-ID" err.txt && ok ||
      bad "set-user-ID program: $(cat err.txt)"
  fi
  # memtrace ignores SIGINT and SIGQUIT while it waits; the program gets them
  # as it would without memtrace (bits 1 and 2 of the SigIgn mask)
  sigign='m=$(grep SigIgn /proc/self/status | cut -f2); echo $(( 0x$m & 6 ))'
  mine=$(sh -c "$sigign")
  under=$("$memtrace" run -q -o i.ctf -- sh -c "$sigign")
  [ -n "$mine" ] && [ "$mine" = "$under" ] && ok || bad "ignored signals: $mine without, $under under memtrace"
  ;;
launcher)
  # memtrace is two executables (src/launcher/launcher.c): memtrace runs
  # `run` itself and is statically linked (its start is on the profiled
  # program's path), except in the sanitizers' builds; memtrace-tools does
  # the rest
  sanitized=0
  readelf -dW "$bin/memtrace-tools" | grep -q 'NEEDED.*lib[at]san' && sanitized=1
  if [ $sanitized = 1 ]; then
    echo "(a sanitizer build: memtrace is linked dynamically, and no program embeds libmemtrace)"
  else
    ! readelf -lW "$memtrace" | grep -q INTERP && ok || bad "memtrace asks for a dynamic loader"
  fi
  # the other commands are memtrace-tools', with their arguments and exit
  # status as they are
  "$memtrace" run -q -o 'a b.ctf' --rate 1 "$bin/prog_sites" > out.txt 2> err.txt || bad "run: $(cat err.txt)"
  [ "$("$memtrace" info 'a b.ctf')" = "$("$bin/memtrace-tools" info 'a b.ctf')" ] &&
    "$memtrace" info 'a b.ctf' | grep -q "^executable: .*/prog_sites$" && ok || bad "info through memtrace"
  "$memtrace" info /nonexistent.ctf 2> err.txt
  [ $? = 1 ] && grep -q "nonexistent.ctf" err.txt && ok || bad "an error's status: $(cat err.txt)"
  [ "$("$memtrace" --version)" = "$("$bin/memtrace-tools" --version)" ] && ok || bad "--version"
  "$memtrace" help run | grep -q "^usage: memtrace run" && "$memtrace" run --help | grep -q "^usage: memtrace run" &&
    ok || bad "run's help"
  # installed (cmake --install): memtrace in bin, the others in lib/memtrace
  cmake --install "$bin" --prefix "$tmp/inst" > install.txt 2>&1 || bad "install: $(cat install.txt)"
  inst/bin/memtrace run -o i.ctf --rate 1 "$bin/prog_sites" > out.txt 2> err.txt &&
    grep -q "top sites:" err.txt && ok || bad "installed run: $(cat err.txt)"
  inst/bin/memtrace top i.ctf > /dev/null && "$bin/check_trace" i.ctf sites > sites.txt &&
    compare_exact out.txt sites.txt
  # a program embedding the profiler, built against the installed headers
  # and library: its External allocations traced at rate 1 (not in the
  # sanitizers' builds: their library needs their runtime loaded first)
  if [ $sanitized = 0 ]; then
    printf '%s\n' '#include <memtrace/engine.h>' '#include <memtrace/tracer.h>' \
      'int main(void) {' '  if (mt_trace_if_requested("embedded", 1.0) != 1) return 1;' \
      '  for (int i = 0; i < 100; i++) mt_external_free(mt_external_alloc(4096));' \
      '  return mt_trace_stop() != 0;' '}' > embed.c
    cc embed.c -o embed -I inst/include -L inst/lib -lmemtrace -Wl,-rpath,"$tmp/inst/lib" 2> err.txt ||
      bad "build against the installed library: $(cat err.txt)"
    MEMTRACE=e.ctf ./embed 2> err.txt && inst/bin/memtrace info e.ctf > info.txt &&
      grep -q "^context: *embedded" info.txt && grep -Eq "^allocations: +100 sampled" info.txt && ok ||
      bad "embedded: $(cat err.txt info.txt)"
  fi
  # alone: each missing file named
  mkdir alone && cp "$memtrace" alone/
  alone/memtrace info i.ctf 2> err.txt
  [ $? = 2 ] && grep -q "cannot find memtrace-tools" err.txt && ok || bad "no tools: $(cat err.txt)"
  MEMTRACE_PRELOAD= alone/memtrace run -o x.ctf true 2> err.txt
  [ $? = 1 ] && grep -q "cannot find libmemtrace_preload.so" err.txt && ok || bad "no interposer: $(cat err.txt)"
  ;;
fds)
  # The program's descriptors are its own: its first open gets the number
  # it gets plain, and whatever it does to the descriptors it did not open
  # (close them all, dup2 its file onto them), its file holds what it wrote
  # and its descriptors stay open. Tracing stops with one message, and the
  # trace up to then is readable.
  plain=$("$bin/prog_fds" first-fd)
  under=$(MEMTRACE=f.ctf traced "$bin/prog_fds" first-fd)
  [ -n "$plain" ] && [ "$under" = "$plain" ] && ok || bad "first open: $plain plain, $under traced"
  seq 0 99 | sed 's/^/line /' > want.txt
  for mode in close-all dup-over; do
    MEMTRACE=$mode.ctf MEMTRACE_RATE=1 traced "$bin/prog_fds" $mode $mode.out > out.txt 2> err.txt
    [ $? = 0 ] && ! grep -q ERROR out.txt && ok || bad "$mode: program failed: $(cat out.txt err.txt | head -5)"
    cmp -s want.txt $mode.out && ok || bad "$mode: the program's file is not what it wrote: $(head -c 300 $mode.out | od -c | head -5)"
    [ "$(grep -c "tracing stopped: the program closed the trace's file descriptor [0-9]*, or put another file at its number" err.txt)" = 1 ] &&
      [ "$(wc -l < err.txt)" = 1 ] && ok || bad "$mode: messages: $(cat err.txt)"
    "$bin/check_trace" $mode.ctf summary > sum.txt 2>&1 &&
      [ "$(awk '/^allocations/ {print $2}' sum.txt)" -gt 1000 ] && ok ||
      bad "$mode: trace up to the stop unreadable: $(head -3 sum.txt)"
  done
  grep -q "replaced [1-9]" out.txt && ok || bad "dup-over replaced nothing: $(cat out.txt)"
  # the program closes its standard error and opens a file, which gets
  # descriptor 2; tracing then stops (its first packet after that passes a
  # file size limit of 8 KiB): the message goes to the standard error the
  # program had, never into its file
  (ulimit -f 8 && MEMTRACE=e.ctf MEMTRACE_RATE=1e-3 MEMTRACE_SEED=1 traced "$bin/prog_fds" stderr-file e.out \
    > out.txt 2> err.txt)
  [ $? = 0 ] && ! grep -q ERROR out.txt && cmp -s want.txt e.out && ok ||
    bad "stderr-file: the program's file: $(cat out.txt; head -c 300 e.out)"
  [ "$(grep -c "File too large" err.txt)" = 1 ] && ok || bad "stderr-file: messages: $(cat err.txt)"
  if [ -w /dev/full ]; then
    # standard error a pipe nobody reads any more: the message raised SIGPIPE
    # (status 141); the program must run to its end
    mkfifo efifo
    (exec 3<> efifo && exec 2> efifo && exec 3<&- &&
      MEMTRACE=/dev/full MEMTRACE_RATE=1 LD_PRELOAD="$preload" exec "$bin/prog_fds" first-fd > out.txt)
    rc=$?
    [ $rc = 0 ] && grep -qx "[0-9][0-9]*" out.txt && ok || bad "stderr a broken pipe: status $rc, $(cat out.txt)"
  fi
  # listening for a client: the program closes the listening socket and
  # the listener's wake pipe; it runs to its end all the same (no hang)
  port=$(free_port)
  MEMTRACE=listen:$port timeout 60 env LD_PRELOAD="$preload" "$bin/prog_fds" close-all l.out > out.txt 2> err.txt
  [ $? = 0 ] && cmp -s want.txt l.out && ok || bad "listen mode, close-all: $? $(cat out.txt err.txt | head -3)"
  ;;
babeltrace)
  MEMTRACE=stream MEMTRACE_RATE=1e-3 traced "$bin/prog_threads" > /dev/null
  ref=$3
  mkdir bt && mv stream bt/ && cp "$ref/memtrace-v2.tsdl" bt/metadata
  babeltrace2 bt > bt.txt 2> bt.err && ok || bad "babeltrace2: $(head -3 bt.err)"
  n=$(grep -c ' alloc[0-9]*: ' bt.txt)
  a=$(MEMTRACE= "$bin/check_trace" bt/stream summary | awk '/^allocations/ {print $2}')
  [ "$n" = "$a" ] && [ "$n" -gt 0 ] && ok || bad "babeltrace2 sees $n allocations, we read $a"
  ;;
debuginfod)
  # a stripped program named from debuginfod after the run: Debian's own
  # server, on 127.0.0.1, serving the unstripped program's debug information
  command -v debuginfod > /dev/null || { echo "SKIP: no debuginfod (Debian: debuginfod)"; exit 77; }
  mkdir src && cp "$bin/prog_sites" src/ && strip -o stripped src/prog_sites
  id=$(readelf -n stripped | awk '/Build ID/ {print $3}')
  port=$(free_port)
  debuginfod -p "$port" -d db.sqlite -F src > server.log 2>&1 &
  export DEBUGINFOD_URLS=http://127.0.0.1:$port DEBUGINFOD_CACHE_PATH=$tmp/cache
  for _ in $(seq 300); do debuginfod-find debuginfo "$id" > /dev/null 2>&1 && break; sleep 0.1; done
  rm -rf "$tmp/cache"
  "$memtrace" run --rate 1 -o named.ctf -- ./stripped > /dev/null 2> err.txt
  grep -q "named [1-9][0-9]* codes of named.ctf" err.txt &&
    grep -q "site_realloc (.*prog_sites.c:[0-9]*)" err.txt && ok || bad "run with debuginfod: $(cat err.txt)"
  "$memtrace" top --by line -n 0 named.ctf | grep -q "site_errno (.*prog_sites.c:" && ok ||
    bad "the trace itself named: $("$memtrace" top --by line -n 3 named.ctf)"
  # the same by hand, into another file; the original left as it was
  DEBUGINFOD_URLS= "$memtrace" run -q --rate 1 -o anon.ctf -- ./stripped > /dev/null
  "$memtrace" symbolize -o byhand.ctf anon.ctf 2> err.txt
  "$memtrace" top -n 1 byhand.ctf | grep -q "site_realloc" &&
    "$memtrace" top -n 1 anon.ctf | grep -q "stripped+0x" && ok || bad "symbolize -o: $(cat err.txt)"
  kill %1
  # a server that accepts and never answers costs a bounded time
  python3 -c 'import socket, time, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8); print(s.getsockname()[1], flush=True)
time.sleep(60)' > silent.port &
  for _ in $(seq 50); do [ -s silent.port ] && break; sleep 0.1; done
  start=$(date +%s)
  DEBUGINFOD_URLS=http://127.0.0.1:$(cat silent.port) DEBUGINFOD_TIMEOUT=1 DEBUGINFOD_CACHE_PATH=$tmp/cache2 \
    "$memtrace" symbolize -o silent.ctf anon.ctf 2> err.txt
  rc=$? took=$(( $(date +%s) - start ))
  [ $rc = 0 ] && [ "$took" -le 20 ] && "$memtrace" top -n 1 silent.ctf > /dev/null && ok ||
    bad "a silent server: status $rc after $took s: $(cat err.txt)"
  ;;
*) bad "unknown test" ;;
esac
finish
