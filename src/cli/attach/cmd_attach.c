/* memtrace attach PID: trace a process that is already running, for a
 * while, then leave it running untraced; at the end, memtrace run's report.
 *
 * The profiler is loaded into the process by a call of the C library's
 * dlopen made through ptrace (inject.h), then started there
 * (src/preload/preload_attach.c): it prepares the redirection of the
 * process's allocator to its wrappers, and this command writes the jumps
 * over the allocator's first bytes with every thread stopped. Detaching
 * stops tracing; the jumps stay (docs/decisions.md). */
#include <errno.h>
#include <fcntl.h>
#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "cli.h"
#include "destination.h"
#include "elf_symbols.h"
#include "format/trace_file.h"
#include "inject.h"
#include "preload/attach_abi.h"
#include "run_report.h"
#include "safe_point.h"
#include "target.h"

static const char usage[] =
    "usage: memtrace attach [OPTIONS] PID\n"
    "\n"
    "Starts tracing the heap of process PID, which runs on: for --duration\n"
    "seconds, until Ctrl-C, or until the process exits; then leaves it running\n"
    "untraced and prints where the trace is and the top allocation sites, as\n"
    "memtrace run does. The process can be attached again later.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE     the trace (default memtrace.NAME.PID.ctf), written by\n"
    "                        the process itself (as its user); or tcp:HOST:PORT,\n"
    "                        listen:[HOST:]PORT to stream it\n"
    "  --rate R              sampling rate per 8-byte word, in (0, 1] (default 1e-5)\n"
    "  --duration SECONDS    detach after this long (default: at Ctrl-C, or when\n"
    "                        the process exits)\n"
    "  --unwind MODE         auto (default), libunwind or fp, as for memtrace run\n"
    "  --depth N             frames kept per backtrace (default 256)\n"
    "  --format 2|3          trace format version (default 2)\n"
    "  --context TEXT        free text stored in the trace\n"
    "  -q, --quiet           print no report at the end\n"
    "\n"
    "memtrace attach needs to ptrace the process: as its user with\n"
    "kernel.yama.ptrace_scope 0, or as root (CAP_SYS_PTRACE). The process stops\n"
    "for the moment the profiler takes (the figure is printed). The profiler is\n"
    "loaded by a thread taken where it holds none of the C library's, the\n"
    "loader's or the allocator's locks; a process none of whose threads comes\n"
    "to such a point within 5 seconds is not attached. Its allocator\n"
    "(the C library's, or one linked into it) is redirected to the profiler's\n"
    "wrappers, which stay in place, forwarding only, after the detach.\n"
    "The profiler is found beside the memtrace binary, or at $MEMTRACE_PRELOAD.\n";

static volatile sig_atomic_t interrupted;
static void on_signal(int sig) { interrupted = sig; }

typedef struct settings {
  const char *output, *rate, *duration, *unwind, *depth, *format, *context;
  int quiet;
  pid_t pid;
} settings;

static const mt_command *const cmd = &mt_cmd_attach;

static void parse(int argc, char **argv, settings *s) {
  int unwind = -1, format = -1;
  static const char *const unwinds[] = {"auto", "libunwind", "fp"}, *const formats[] = {"2", "3"};
  const mt_option options[] = {
      {"-o", "--output", MT_OPT_TEXT, &s->output, NULL, 0, 0, 0},
      {"--rate", NULL, MT_OPT_TEXT, &s->rate, NULL, 0, 0, 0},
      {"--duration", NULL, MT_OPT_TEXT, &s->duration, NULL, 0, 0, 0},
      {"--unwind", NULL, MT_OPT_CHOICE, &unwind, "auto|libunwind|fp", 0, 0, 0},
      {"--depth", NULL, MT_OPT_TEXT, &s->depth, NULL, 0, 0, 0},
      {"--format", NULL, MT_OPT_CHOICE, &format, "2|3", 0, 0, 0},
      {"--context", NULL, MT_OPT_TEXT, &s->context, NULL, 0, 0, 0},
      {"-q", "--quiet", MT_OPT_FLAG, &s->quiet, NULL, 1, 0, 0},
      {NULL, NULL, 0, NULL, NULL, 0, 0, 0}};
  const char *pid = NULL;
  mt_cli_spec spec = {options, NULL, &pid, 1, 1, "PID", 0, 0, NULL};
  mt_cli_parse(cmd, argc, argv, &spec);
  s->unwind = unwind < 0 ? "" : unwinds[unwind];
  s->format = format < 0 ? "" : formats[format];
  char *end;
  long p = strtol(pid, &end, 10);
  if (*end || p <= 0 || p > INT32_MAX) mt_cli_usage_error(cmd, "PID must be a process id, not '%s'", pid);
  s->pid = (pid_t)p;
  mt_cli_check_rate_depth(cmd, s->rate, s->depth);
  if (s->duration) {
    double d = strtod(s->duration, &end);
    if (*end || !(d > 0)) mt_cli_usage_error(cmd, "--duration must be a number of seconds above 0, not '%s'", s->duration);
  }
}

static double now_ms(void) { return mt_monotonic_seconds() * 1e3; }

/* Where the calls go in the process: the C library's dlopen and dlerror
 * (their addresses), and the library's entry points (their offsets, until
 * it is loaded). Read from the files before any thread is stopped. */
typedef struct entries {
  uint64_t dlopen, dlerror;
  uint64_t area, begin, end;
} entries;

/* 0, -1 with why, or 1 when its map shows no C library (or cannot be
 * read: another user's process, where ptrace's refusal says why). */
static int find_entries(pid_t pid, const char *lib, entries *e, char *why, size_t n) {
  uint64_t base, v[3];
  char mapped[PATH_MAX], path[PATH_MAX + 32];
  static const char *const libc_names[2] = {"dlopen", "dlerror"};
  static const char *const names[3] = {"mt__attach_area", "mt__attach_begin", "mt__attach_end"};
  if (mt_maps_object(pid, "libc.so.6", &base, mapped, sizeof mapped) != 0) return 1;
  snprintf(path, sizeof path, "/proc/%d/root%s", (int)pid, mapped); /* as the process sees it */
  if (mt_elf_dynsyms(path, libc_names, 2, v) != 0 && mt_elf_dynsyms(mapped, libc_names, 2, v) != 0) {
    snprintf(why, n, "its C library has no dlopen (glibc 2.34 or later is needed)");
    return -1;
  }
  e->dlopen = base + v[0];
  e->dlerror = base + v[1];
  if (mt_elf_dynsyms(lib, names, 3, v) != 0) {
    snprintf(why, n, "%s lacks memtrace attach's entry points (a library of another version?)", lib);
    return -1;
  }
  e->area = v[0], e->begin = v[1], e->end = v[2];
  return 0;
}

/* Loads the library into the process, unless it is there, and makes the
 * entry points' offsets addresses: 0, or -1. */
static int load_library(mt_inject *in, const char *lib, entries *e, char *why, size_t n) {
  uint64_t base, handle, text;
  char mapped[PATH_MAX];
  if (mt_maps_object(in->pid, lib, &base, mapped, sizeof mapped) != 0) { /* not attached before */
    uint64_t at = mt_inject_scratch(in, strlen(lib) + 1);
    if (mt_inject_write(in, at, lib, strlen(lib) + 1) != 0) {
      snprintf(why, n, "cannot write into its memory");
      return -1;
    }
    uint64_t args[2] = {at, RTLD_NOW};
    if (mt_inject_call(in, e->dlopen, args, 2, &handle, 30000) != 0) {
      snprintf(why, n, "dlopen in the process failed: %s", in->err);
      return -1;
    }
    if (!handle) {
      char msg[256] = "";
      if (mt_inject_call(in, e->dlerror, NULL, 0, &text, 5000) == 0 && text)
        mt_inject_read(in, text, msg, sizeof msg - 1);
      msg[sizeof msg - 1] = 0;
      snprintf(why, n, "it could not load %s: %s", lib, msg[0] ? msg : "(no reason given)");
      return -1;
    }
    if (mt_maps_object(in->pid, lib, &base, mapped, sizeof mapped) != 0) {
      snprintf(why, n, "%s is not mapped in it after loading", lib);
      return -1;
    }
  }
  e->area += base, e->begin += base, e->end += base;
  return 0;
}

/* PLT slots that still hold what the library saw, bound to the wrappers
 * (src/preload/plt_slots.c): after the jumps, with every thread still
 * stopped. A slot that cannot be written keeps the jump. */
static void write_slots(mt_inject *in, const mt__slot_list *sl) {
  for (uint32_t k = 0; k < sl->n && k < MT__ATTACH_MAX_SLOTS; k++) {
    uint64_t now;
    if (mt_inject_read(in, sl->slots[k].at, &now, sizeof now) == 0 && now == sl->slots[k].was)
      (void)mt_inject_write_code(in, sl->slots[k].at, &sl->slots[k].to, sizeof sl->slots[k].to);
  }
}

/* The jumps, then the slots, written with every thread stopped and none
 * inside the bytes the jumps cover (a thread there is let run a moment,
 * then stopped again). */
static int write_jumps(mt_inject *in, const mt__jump_list *j, const mt__slot_list *sl, char *why,
                       size_t n) {
  for (int tries = 0;; tries++) {
    if (mt_inject_stop_all(in) != 0) {
      snprintf(why, n, "%s", in->err);
      return -1;
    }
    int busy = 0;
    for (uint32_t k = 0; k < j->n && !busy; k++)
      busy = mt_inject_any_pc_in(in, j->jumps[k].at + 1, j->jumps[k].at + j->jumps[k].len);
    if (!busy) break;
    mt_inject_release_all(in);
    if (tries == 100) {
      snprintf(why, n, "a thread stays inside the allocator's first instructions");
      return -1;
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  for (uint32_t k = 0; k < j->n; k++) {
    uint8_t now[20];
    if (mt_inject_read(in, j->jumps[k].at, now, j->jumps[k].len) == 0 &&
        memcmp(now, j->jumps[k].bytes, j->jumps[k].len) == 0)
      continue; /* written by an earlier attach */
    if (mt_inject_write_code(in, j->jumps[k].at, j->jumps[k].bytes, j->jumps[k].len) != 0) {
      mt_inject_release_all(in);
      snprintf(why, n, "cannot write its code: %s", strerror(errno));
      return -1;
    }
  }
  write_slots(in, sl);
  mt_inject_release_all(in);
  return 0;
}

typedef struct pauses {
  double all_ms, worker_ms;
} pauses;

/* How long a thread may take to come to a safe point (safe_point.h). */
#define SAFE_POINT_WAIT_MS 5000

/* Takes a thread of the process aside at a safe point: 0, or -1 with why. */
static int take_worker(mt_inject *in, pid_t pid, const char *lib, char *why, size_t n) {
  mt_safe_points sp;
  if (mt_safe_points_load(&sp, pid, lib) != 0) { /* as ptrace would be refused */
    int e = errno == EACCES ? EPERM : errno == ENOENT ? ESRCH : errno;
    mt_attach_explain_ptrace(pid, e, strerror(e), why, n);
    return -1;
  }
  int rc = mt_inject_begin(in, pid, &sp, SAFE_POINT_WAIT_MS);
  mt_safe_points_free(&sp);
  if (rc != 0) mt_attach_explain_ptrace(pid, errno, in->err, why, n);
  return rc;
}

static int start(const settings *s, const char *lib, const char *dest, entries *e, pauses *p,
                 char *why, size_t n) {
  mt_inject in;
  int missing = find_entries(s->pid, lib, e, why, n);
  if (missing < 0) return -1;
  if (take_worker(&in, s->pid, lib, why, n) != 0) return -1; /* an unreadable map: why */
  double t0 = now_ms();
  if (missing) {
    snprintf(why, n, "its C library cannot be found in its memory map");
    mt_inject_end(&in);
    return -1;
  }
  mt__attach_args a;
  memset(&a, 0, sizeof a);
  a.version = MT__ATTACH_VERSION;
  snprintf(a.destination, sizeof a.destination, "%s", dest);
  snprintf(a.rate, sizeof a.rate, "%s", s->rate ? s->rate : "");
  snprintf(a.unwind, sizeof a.unwind, "%s", s->unwind);
  snprintf(a.depth, sizeof a.depth, "%s", s->depth ? s->depth : "");
  snprintf(a.format, sizeof a.format, "%s", s->format);
  snprintf(a.context, sizeof a.context, "%s", s->context ? s->context : "");
  uint64_t rc;
  int ok = load_library(&in, lib, e, why, n) == 0;
  if (ok && (mt_inject_write(&in, e->area, &a, sizeof a) != 0 ||
             mt_inject_call(&in, e->begin, NULL, 0, &rc, 30000) != 0 ||
             mt_inject_read(&in, e->area, &a, sizeof a) != 0)) {
    snprintf(why, n, "starting the profiler in it failed: %s", in.err);
    ok = 0;
  }
  if (ok && a.status != 0) {
    a.error[sizeof a.error - 1] = 0;
    snprintf(why, n, "%s", a.error);
    ok = 0;
  }
  double t1 = now_ms();
  if (ok && write_jumps(&in, &a.jumps, &a.slots, why, n) != 0) {
    uint64_t ignored; /* tracing stops: nothing reaches it */
    mt_inject_call(&in, e->end, NULL, 0, &ignored, 30000);
    ok = 0;
  }
  double t2 = now_ms();
  mt_inject_end(&in);
  p->all_ms = t2 - t1;
  p->worker_ms = now_ms() - t0;
  return ok ? 0 : -1;
}

/* Stops tracing in the process: 0, or -1 (it is gone, or refused). */
static int stop(const settings *s, const char *lib, const entries *e, double *paused_ms, char *why,
                size_t n) {
  mt_inject in;
  if (take_worker(&in, s->pid, lib, why, n) != 0) return -1;
  double t0 = now_ms();
  uint64_t rc;
  int ok = mt_inject_call(&in, e->end, NULL, 0, &rc, 30000) == 0;
  if (!ok) snprintf(why, n, "%s", in.err);
  mt_inject_end(&in);
  *paused_ms = now_ms() - t0;
  return ok ? 0 : -1;
}

static int gone(pid_t pid) {
  char st = mt_attach_proc_state(pid);
  return st == 0 || st == 'Z' || st == 'X';
}

static int attach(int argc, char **argv) {
  settings s = {0};
  parse(argc, argv, &s);
  char why[PATH_MAX + 512], name[256];
  if (mt_attach_check_target(s.pid, name, sizeof name, why, sizeof why) != 0) {
    fprintf(stderr, "memtrace attach: %s\n", why);
    return 1;
  }
  char lib[PATH_MAX], found[PATH_MAX];
  if (mt_cli_find_preload(found, sizeof found) != 0 || !realpath(found, lib)) {
    fprintf(stderr, "memtrace attach: cannot find libmemtrace_preload.so (looked beside the "
                    "memtrace binary; set MEMTRACE_PRELOAD)\n");
    return 1;
  }
  /* the process writes the file from its own directory: an absolute path */
  char dest[PATH_MAX], cwd[PATH_MAX];
  if (!s.output) snprintf(dest, sizeof dest, "memtrace.%s.%d.ctf", name, (int)s.pid);
  else snprintf(dest, sizeof dest, "%s", s.output);
  if (!mt__trace_dest_is_socket(dest) && dest[0] != '/' && getcwd(cwd, sizeof cwd)) {
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s", dest);
    if ((size_t)snprintf(dest, sizeof dest, "%s/%s", cwd, rel) >= sizeof dest) {
      fprintf(stderr, "memtrace attach: the trace's path is too long\n");
      return 1;
    }
  }
  if (mt_cli_check_destination(dest, why, sizeof why) != 0) {
    fprintf(stderr, "memtrace attach: %s (not attached)\n", why);
    return 1;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  entries e;
  pauses p;
  if (start(&s, lib, dest, &e, &p, why, sizeof why) != 0) {
    fprintf(stderr, "memtrace attach: process %d (%s): %s\n", (int)s.pid, name, why);
    return 1;
  }
  char shown[PATH_MAX];
  mt__trace_path_expand(dest, (long)s.pid, shown, sizeof shown);
  fprintf(stderr,
          "memtrace attach: tracing process %d (%s) into %s; its threads were stopped for "
          "%.2f ms (one of them for %.1f ms)\n",
          (int)s.pid, name, shown, p.all_ms, p.worker_ms);
  double until = s.duration ? now_ms() + strtod(s.duration, NULL) * 1e3 : 0;
  int exited = 0;
  while (!interrupted && !(exited = gone(s.pid)) && (!until || now_ms() < until)) {
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
  }
  struct timespec end;
  clock_gettime(CLOCK_REALTIME, &end);
  int status = 0;
  if (exited) {
    fprintf(stderr, "memtrace attach: process %d exited; its trace ends there\n", (int)s.pid);
  } else {
    double paused;
    if (stop(&s, lib, &e, &paused, why, sizeof why) != 0) {
      if (gone(s.pid)) {
        fprintf(stderr, "memtrace attach: process %d exited; its trace ends there\n", (int)s.pid);
      } else {
        fprintf(stderr, "memtrace attach: could not stop tracing in process %d: %s\n", (int)s.pid, why);
        status = 1;
      }
    } else {
      fprintf(stderr, "memtrace attach: detached from process %d; one of its threads was stopped for %.1f ms\n",
              (int)s.pid, paused);
    }
  }
  if (!s.quiet)
    mt_cli_run_report(-1, dest, s.pid,
                      (unsigned long long)end.tv_sec * 1000000 + (unsigned long long)end.tv_nsec / 1000, name);
  return status;
}

const mt_command mt_cmd_attach = {"attach", "trace a running process for a while: memtrace attach PID",
                                  usage, attach};
