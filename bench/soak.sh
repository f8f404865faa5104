#!/usr/bin/env bash
# bench/soak.sh: Debian's servers under `memtrace run`, under load.
#
# nginx (a master and two workers), redis-server (two I/O threads) and
# CPython's http.server, each from a private configuration in a temporary
# directory (no system service) on a free port of 127.0.0.1, loaded with ab
# (apache2-utils) or redis-benchmark (redis-tools): plain and under
# `memtrace run --rate 1e-3 -o DIR/NAME.%p.ctf`, SOAK_ROUNDS rounds (the
# order within a round alternating, so that neither always runs first).
# nginx-default is nginx again, traced at `memtrace run`'s default rate
# (1e-5). Run as root, nginx's master forks workers that drop their
# privileges to nobody; a worker opens its trace at its first sample. At
# 1e-3 that sample mostly comes in initgroups(), between the worker's
# setgid() and setuid(), while it is still root; at 1e-5 it comes after it
# became nobody. The traces go to a directory made by mkdir, as an ordinary
# `-o` directory is, writable by the user who started the script only: a
# worker that cannot create its trace there is a failure of the profiler.
# A failure is any of:
#   - a server that did not answer: ab with a request incomplete, failed or
#     not 2xx; redis-benchmark without a figure for a test, or no PING
#     answered after it;
#   - a server that did not stop cleanly when asked (status 0 within 30 s),
#     or whose log says a process crashed (nginx: a worker exited on a
#     signal, an alert; redis: a bug report);
#   - a process of the traced server's tree without its trace: the tree is
#     listed every 0.2 s while the server runs (nginx: the master and each
#     worker; a worker the master replaced counts too);
#   - a trace that `memtrace info` or `memtrace top` cannot read, or that
#     holds no sample;
#   - traced throughput (requests per second) under SOAK_MIN_RATIO of plain,
#     the median of the rounds' ratios.
# The load generator shares the machine's CPUs with the server, as on any
# one-machine benchmark: the ratios are of the whole machine's throughput,
# and on a machine shared with other work they move by tens of percent from
# round to round.
# Prints a table, writes bench/out/soak/soak.txt (the logs, the traces and
# the process lists of each run beside it) and exits 1 on any failure.
# Environment: SOAK_REQUESTS (nginx's requests a run, 100000),
# SOAK_REDIS_REQUESTS (redis-benchmark's per test, 50000), SOAK_PY_REQUESTS
# (5000), SOAK_CONCURRENCY (ab's and redis-benchmark's clients, 32),
# SOAK_PY_CONCURRENCY (4), SOAK_ROUNDS (3), SOAK_RATE (1e-3),
# SOAK_MIN_RATIO (0.5), SOAK_CASES ("nginx nginx-default redis python"),
# SOAK_TIMEOUT (seconds a load may take, 300), BUILD_DIR.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD_DIR:-$root/build}
out=$here/out/soak
requests=${SOAK_REQUESTS:-100000}
redis_requests=${SOAK_REDIS_REQUESTS:-50000}
py_requests=${SOAK_PY_REQUESTS:-5000}
concurrency=${SOAK_CONCURRENCY:-32}
py_concurrency=${SOAK_PY_CONCURRENCY:-4}
rounds=${SOAK_ROUNDS:-3}
rate=${SOAK_RATE:-1e-3}
min_ratio=${SOAK_MIN_RATIO:-0.5}
cases=${SOAK_CASES:-nginx nginx-default redis python}
limit=${SOAK_TIMEOUT:-300}
redis_tests=set,get,lpush,lrange_100
log() { echo "soak.sh: $*" >&2; }
start_time=$(date +%s)

# /usr/sbin is not on every user's PATH
PATH=$PATH:/usr/sbin:/sbin
# Debian's python3, not a version manager's shim on PATH (pyenv's is a
# shell script: its helpers would be traced as well)
py=/usr/bin/python3
need=(ab "$py" timeout ps)
for c in $cases; do
  case $c in
    nginx | nginx-default) need+=(nginx) ;;
    redis) need+=(redis-server redis-cli redis-benchmark) ;;
    python) ;;
    *) log "unknown case '$c' in SOAK_CASES (nginx, nginx-default, redis, python)"; exit 2 ;;
  esac
done
for tool in "${need[@]}"; do
  command -v "$tool" > /dev/null ||
    { log "$tool is missing (make soak installs nginx, redis-server, redis-tools, apache2-utils)"; exit 2; }
done

if [ ! -x "$build/memtrace" ] || [ ! -x "$build/memtrace-tools" ] ||
  [ ! -f "$build/libmemtrace_preload.so" ]; then
  log "building into $build"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
  cmake --build "$build" -j"$(nproc)" --target memtrace_cli memtrace_tools memtrace_preload > /dev/null
fi
memtrace=$build/memtrace

rm -rf "$out"
mkdir -p "$out"
results=$out/results.txt # case test mode round rps
traces=$out/traces.txt   # case round pid user comm samples verdict
fails=$out/failures.txt
: > "$results"
: > "$traces"
: > "$fails"
fail() {
  echo "$*" >> "$fails"
  log "FAILURE: $*"
}

# The servers' files: nginx's prefix and the page every server serves.
# nginx's workers (nobody, under root) read the page, so the directory is
# theirs to enter; the traces are not written here.
tmp=$(mktemp -d)
chmod 755 "$tmp"
mkdir -p "$tmp/html" "$tmp/nginx" "$tmp/redis"
head -c 3000 /dev/urandom | base64 > "$tmp/html/index.html"

srv= # the running server's job (memtrace run's pid when traced)
cleanup() {
  if [ -n "$srv" ] && kill -0 "$srv" 2> /dev/null; then
    for p in $(tree "$srv" | awk '{print $1}') "$srv"; do kill -TERM "$p" 2> /dev/null || true; done
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
# so that Ctrl-C or a kill stops the server too
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
  "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# tree PID: PID's descendants, "pid user command parent" a line.
tree() {
  local c
  for c in $(ps -o pid= --ppid "$1" || true); do
    ps -o pid=,user=,comm=,ppid= -p "$c" || true
    tree "$c"
  done
}

# watch PID FILE: PID's descendants into FILE every 0.2 s while PID lives.
# A process that lives less than that can be missed; the servers' processes
# live from start to stop.
watch_tree() {
  while kill -0 "$1" 2> /dev/null; do
    tree "$1" >> "$2"
    sleep 0.2
  done
}

# main_pid MODE: the server's own process (memtrace run's child when traced).
main_pid() {
  if [ "$1" = plain ]; then echo "$srv"; else { ps -o pid= --ppid "$srv" || true; } | head -n 1 | tr -d ' '; fi
}

# ready MODE PORT: waits until the server accepts connections on PORT (20 s).
ready() {
  local _
  for _ in $(seq 200); do
    kill -0 "$srv" 2> /dev/null || return 1
    if (: < "/dev/tcp/127.0.0.1/$2") 2> /dev/null; then
      [ -n "$(main_pid "$1")" ] && return 0
    fi
    sleep 0.1
  done
  return 1
}

# start CASE MODE DIR PORT: the server, plain or traced, in the background.
# SIGINT is restored for it: a non-interactive shell's background jobs
# ignore it, and http.server stops on it.
start() {
  local c=$1 mode=$2 dir=$3 port=$4 pre=()
  if [ "$mode" = traced ]; then
    pre=("$memtrace" run -o "$dir/$c.%p.ctf")
    [ "$c" = nginx-default ] || pre+=(--rate "$rate")
    pre+=(--)
  fi
  case $c in
    nginx | nginx-default)
      # master_process with two workers: the master forks them, and under
      # root they drop to nginx's default user, nobody. The temporary
      # paths are the prefix's: the compiled-in ones are under /var/lib.
      cat > "$tmp/nginx/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 2;
pid nginx.pid;
error_log $dir/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path body;
  proxy_temp_path proxy;
  fastcgi_temp_path fastcgi;
  uwsgi_temp_path uwsgi;
  scgi_temp_path scgi;
  server { listen 127.0.0.1:$port; root $tmp/html; }
}
EOF
      "${pre[@]}" nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx/" > "$dir/run.log" 2>&1 &
      ;;
    redis)
      "${pre[@]}" redis-server --port "$port" --bind 127.0.0.1 --io-threads 2 --save '' \
        --appendonly no --daemonize no --dir "$tmp/redis" --logfile "$dir/redis.log" > "$dir/run.log" 2>&1 &
      ;;
    python)
      # PYTHONMALLOC=malloc in both runs: CPython's own allocator would
      # hide its small objects from the interposer
      (
        trap - INT
        PYTHONMALLOC=malloc exec "${pre[@]}" "$py" -m http.server --bind 127.0.0.1 \
          --directory "$tmp/html" "$port"
      ) > "$dir/run.log" 2>&1 &
      ;;
  esac
  srv=$!
}

# stop CASE MODE DIR PORT: asks the server to stop, waits for it (30 s).
stop() {
  local c=$1 mode=$2 dir=$3 port=$4 main st=0 label="$1 $2 round $round"
  main=$(main_pid "$mode")
  case $c in
    nginx | nginx-default) kill -QUIT "$main" 2> /dev/null || true ;; # graceful: workers finish, then exit
    redis) redis-cli -h 127.0.0.1 -p "$port" shutdown nosave > /dev/null 2>&1 || true ;;
    python) kill -INT "$main" 2> /dev/null || true ;;
  esac
  for _ in $(seq 300); do
    kill -0 "$srv" 2> /dev/null || break
    sleep 0.1
  done
  if kill -0 "$srv" 2> /dev/null; then
    fail "$label: the server did not stop within 30 s of being asked; killed"
    for p in $(tree "$srv" | awk '{print $1}') "$srv"; do kill -KILL "$p" 2> /dev/null || true; done
  fi
  wait "$srv" || st=$?
  srv=
  [ "$st" = 0 ] || fail "$label: exited with status $st ($(tail -n 1 "$dir/run.log"))"
  case $c in
    nginx | nginx-default)
      if grep -E 'exited on signal|\[(alert|emerg|crit)\]' "$dir/error.log" > "$dir/errors" 2> /dev/null; then
        fail "$label: nginx's error log: $(head -n 1 "$dir/errors")"
      fi
      ;;
    redis)
      if grep -q 'REDIS BUG REPORT' "$dir/redis.log" 2> /dev/null; then
        fail "$label: redis-server crashed (bug report in $dir/redis.log)"
      fi
      ;;
  esac
}

# load_ab CASE MODE DIR URL N C: ab's requests per second into $results.
load_ab() {
  local c=$1 mode=$2 dir=$3 url=$4 n=$5 conc=$6 rps
  if ! timeout "$limit" ab -q -n "$n" -c "$conc" "$url" > "$dir/load.log" 2>&1; then
    fail "$c $mode round $round: ab failed: $(tail -n 1 "$dir/load.log")"
    return
  fi
  rps=$(awk -v n="$n" '
    /^Complete requests:/ { c = $3 } /^Failed requests:/ { f = $3 }
    /^Non-2xx responses:/ { x = $3 } /^Requests per second:/ { r = $4 }
    END { if (c == n && f == 0 && x == 0 && r > 0) print r }' "$dir/load.log")
  if [ -z "$rps" ]; then
    fail "$c $mode round $round: not every request answered: $(grep -E '^(Complete|Failed|Non-2xx)' "$dir/load.log" | tr -s ' \n' ' ')"
    return
  fi
  echo "$c GET $mode $round $rps" >> "$results"
}

# load_redis MODE DIR PORT: redis-benchmark's figure of each test into $results.
load_redis() {
  local mode=$1 dir=$2 port=$3 t got
  if ! timeout "$limit" redis-benchmark -h 127.0.0.1 -p "$port" -n "$redis_requests" -c "$concurrency" \
    -t "$redis_tests" --csv > "$dir/load.log" 2>&1; then
    fail "redis $mode round $round: redis-benchmark failed: $(tail -n 1 "$dir/load.log")"
    return
  fi
  # lines "TEST","RPS",...; LPUSH's second run only fills LRANGE's list
  for t in $(echo "$redis_tests" | tr a-z, A-Z' '); do
    got=$(awk -F'"' -v t="$t" '($2 == t || $2 ~ "^" t " \\(first") && $4 > 0 { print $4 }' "$dir/load.log")
    if [ -n "$got" ]; then
      echo "redis $t $mode $round $got" >> "$results"
    else
      fail "redis $mode round $round: no figure for $t: $(tail -n 1 "$dir/load.log")"
    fi
  done
  [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2> /dev/null)" = PONG ] ||
    fail "redis $mode round $round: no answer to PING after the load"
}

# check_traces CASE DIR: a trace for every process seen, each one readable.
check_traces() {
  local c=$1 dir=$2 pid user comm parent t n st why
  # a pid's last line: between fork and exec its command is its parent's
  awk '{ last[$1] = $0 } END { for (p in last) print last[p] }' "$dir/pids.seen" | sort -n > "$dir/pids"
  while read -r pid user comm _; do
    t=$dir/$c.$pid.ctf
    if [ ! -f "$t" ]; then
      why=$(grep -F "$c.$pid.ctf" "$dir/run.log" | head -n 1 || true)
      fail "$c round $round: no trace from pid $pid ($comm, user $user)${why:+: $why}"
      echo "$c $round $pid $user $comm 0 missing" >> "$traces"
    fi
  done < "$dir/pids"
  for t in "$dir/$c".*.ctf; do
    [ -e "$t" ] || continue
    pid=${t%.ctf}
    pid=${pid##*.}
    read -r user comm parent < <(awk -v p="$pid" '$1 == p { print $2, $3, $4 }' "$dir/pids") || true
    st=ok
    if ! "$memtrace" info "$t" > "$t.info" 2>&1; then
      st=unreadable
      fail "$c round $round: memtrace info $t: $(tail -n 1 "$t.info")"
    elif ! "$memtrace" top "$t" > "$t.top" 2>&1; then
      st=unreadable
      fail "$c round $round: memtrace top $t: $(tail -n 1 "$t.top")"
    fi
    n=$(awk '$1 == "total" { print $3 }' "$t.info")
    # nginx's master allocates ~270 KB before it forks, 0.3 samples on
    # average at the default rate: its trace may rightly hold none
    if [ "$st" = ok ] && [ "${n:-0}" -le 0 ] &&
      ! { [ "$c" = nginx-default ] && [ "${parent:-}" = "$(cat "$dir/run.pid")" ]; }; then
      st=empty
      fail "$c round $round: $t has no samples"
    fi
    echo "$c $round $pid ${user:-?} ${comm:-?} ${n:-0} $st" >> "$traces"
  done
}

# one CASE MODE: one run, started, loaded, stopped and (traced) checked.
one() {
  local c=$1 mode=$2 dir=$out/$1-$2-$round port watcher=
  mkdir -p "$dir"
  port=$(free_port)
  log "$c $mode round $round (port $port)"
  start "$c" "$mode" "$dir" "$port"
  echo "$srv" > "$dir/run.pid"
  if [ "$mode" = traced ]; then
    watch_tree "$srv" "$dir/pids.seen" &
    watcher=$!
  fi
  if ! ready "$mode" "$port"; then
    fail "$c $mode round $round: the server did not start: $(tail -n 2 "$dir/run.log" | tr '\n' ' ')"
  else
    case $c in
      nginx | nginx-default) load_ab "$c" "$mode" "$dir" "http://127.0.0.1:$port/index.html" "$requests" "$concurrency" ;;
      redis) load_redis "$mode" "$dir" "$port" ;;
      python) load_ab python "$mode" "$dir" "http://127.0.0.1:$port/index.html" "$py_requests" "$py_concurrency" ;;
    esac
  fi
  if [ -n "$srv" ] && kill -0 "$srv" 2> /dev/null; then
    stop "$c" "$mode" "$dir" "$port"
  else
    wait "$srv" 2> /dev/null || true
    srv=
  fi
  if [ -n "$watcher" ]; then
    wait "$watcher" || true
    check_traces "$c" "$dir"
  fi
}

declare -A took=()
for c in $cases; do
  case_start=$(date +%s)
  for round in $(seq "$rounds"); do
    if [ $((round % 2)) = 1 ]; then
      one "$c" plain
      one "$c" traced
    else
      one "$c" traced
      one "$c" plain
    fi
  done
  took[$c]=$(($(date +%s) - case_start))
done

# case test plain-rps traced-rps ratio: medians of the rounds ("-": none)
summary=$out/summary.txt
awk '
  function median(arr, m,    a, b, t) {
    for (a = 2; a <= m; a++) { t = arr[a]; b = a - 1; while (b >= 1 && arr[b] > t) { arr[b + 1] = arr[b]; b-- } arr[b + 1] = t }
    return m % 2 ? arr[(m + 1) / 2] : (arr[m / 2] + arr[m / 2 + 1]) / 2
  }
  { k = $1 " " $2; if (!(k in seen)) { seen[k] = 1; order[++nk] = k } v[k, $3, $4] = $5; if ($4 > last) last = $4 }
  END {
    for (i = 1; i <= nk; i++) {
      k = order[i]; split("", p); split("", t); split("", r); np = nt = nr = 0
      for (q = 1; q <= last; q++) {
        if ((k, "plain", q) in v) p[++np] = v[k, "plain", q]
        if ((k, "traced", q) in v) t[++nt] = v[k, "traced", q]
        if ((k, "plain", q) in v && (k, "traced", q) in v) r[++nr] = v[k, "traced", q] / v[k, "plain", q]
      }
      printf "%s %s %s %s\n", k, np ? sprintf("%.0f", median(p, np)) : "-",
        nt ? sprintf("%.0f", median(t, nt)) : "-", nr ? sprintf("%.3f", median(r, nr)) : "-"
    }
  }' "$results" > "$summary"
while read -r c t _ _ r; do
  if [ "$r" != - ] && awk -v r="$r" -v m="$min_ratio" 'BEGIN { exit !(r < m) }'; then
    fail "$c $t: traced throughput ${r}x plain, under ${min_ratio}x"
  fi
done < "$summary"

elapsed=$(($(date +%s) - start_time))
report=$out/soak.txt
{
  cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
  echo "# memtrace-c soak ($(date -u +%Y-%m-%d), $(nproc) cores of ${cpu:-an unknown processor}, run as $(id -un))"
  echo "# rate $rate (nginx-default: memtrace run's default), $rounds rounds; nginx: ab -n $requests -c $concurrency; redis: redis-benchmark -n $redis_requests -c $concurrency -t $redis_tests; python: ab -n $py_requests -c $py_concurrency"
  echo "# requests per second: median of the rounds; traced/plain: median of the rounds' ratios"
  printf "%-14s %-12s %12s %12s %13s\n" case test "plain rps" "traced rps" "traced/plain"
  awk '{ printf "%-14s %-12s %12s %12s %13s\n", $1, $2, $3, $4, $5 }' "$summary"
  echo
  echo "# traced rounds: processes seen running or that wrote a trace; traces; traces that memtrace info and top read, with samples (nginx-default's master may have none); samples"
  printf "%-14s %10s %8s %10s %12s  %s\n" case processes traces readable samples "processes (user command x count)"
  for c in $cases; do
    awk -v c="$c" '
      $1 == c { n++; if ($7 != "missing") { tr++; s += $6 } if ($7 == "ok") ok++; who[$4 " " $5]++ }
      END {
        w = ""; for (k in who) w = w (w == "" ? "" : ", ") k " x" who[k]
        printf "%-14s %10d %8d %10d %12d  %s\n", c, n, tr, ok, s, w
      }' "$traces"
  done
  echo
  if [ -s "$fails" ]; then
    echo "FAILURES ($(wc -l < "$fails")):"
    sed 's/^/  /' "$fails"
  else
    echo "no failures"
  fi
  times=
  for c in $cases; do times+="${times:+, }$c ${took[$c]} s"; done
  echo "soak: $elapsed s ($times); logs and traces in $out"
} | tee "$report"
[ ! -s "$fails" ]
