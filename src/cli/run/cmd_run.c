/* memtrace run: profile an unmodified program through LD_PRELOAD, then say
 * where the trace is and which sites allocated most (run_report.c). */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/private_file.h"
#include "check.h"
#include "destination.h"
#include "cli.h"
#include "rss_sampler.h"
#include "run_report.h"
#include "format/trace_file.h"
#include "untraceable.h"

static const char usage[] =
    "usage: memtrace run [OPTIONS] [--] COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND with the memtrace-c malloc interposer (LD_PRELOAD) and writes a\n"
    "trace of its heap; at exit prints where the trace is and the top allocation\n"
    "sites. The exit status is COMMAND's (killed by a signal, memtrace ends by the\n"
    "same signal after its report); 1, without running it, if the trace cannot be\n"
    "created (no such directory, or a directory of that name).\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE     the trace (default memtrace.COMMAND.PID.ctf; %p in FILE\n"
    "                        becomes the pid, and then forked children write their\n"
    "                        own traces, of what they exec too: a whole build\n"
    "                        with -o 'build.%p.ctf' -- make); or tcp:HOST:PORT,\n"
    "                        listen:[HOST:]PORT to stream it (memtrace listen,\n"
    "                        memtrace view --listen)\n"
    "  --rate R              sampling rate per 8-byte word, in (0, 1] (default 1e-5:\n"
    "                        one sample per 800 KB allocated on average)\n"
    "  --unwind MODE         auto (default): frame pointers through functions that\n"
    "                        keep them, their DWARF call-frame information through\n"
    "                        the others; libunwind: always libunwind's DWARF\n"
    "                        unwinding; fp: frame pointers only (fastest, needs\n"
    "                        -fno-omit-frame-pointer code)\n"
    "  --depth N             frames kept per backtrace (default 256)\n"
    "  --format 2|3          trace format version (default 2)\n"
    "  --context TEXT        free text stored in the trace\n"
    "  --debuginfo           also read separate debug-info files (-dbg packages) for\n"
    "                        line numbers inside system libraries (~0.1 s per process)\n"
    "  --no-follow-exec      trace COMMAND's own program only: by default, when it\n"
    "                        replaces itself with another program (exec without\n"
    "                        fork: a wrapper script's `exec prog`, a version\n"
    "                        manager's shim), that program is traced instead, into\n"
    "                        the same file\n"
    "  -q, --quiet           print nothing after the run (memtrace execs the program\n"
    "                        instead of starting and waiting for it)\n"
    "  --toggle-signal SIG   SIG (USR1, USR2, HUP, URG, WINCH, PWR, TTIN, TTOU, or\n"
    "                        a real-time signal's number) sent to the program\n"
    "                        ends the tracing period and starts the next: each\n"
    "                        period is a complete trace, FILE.1.ctf, FILE.2.ctf...\n"
    "                        (%n in FILE: the period's number). The program must\n"
    "                        not use SIG itself\n"
    "  --paused              with --toggle-signal: no tracing until the first SIG\n"
    "  --no-mappings         the heap alone: by default the program's anonymous\n"
    "                        mappings (mmap) are sampled too (--source mapping)\n"
    "\n"
    "Limits, checked on the program's trace after the run, as memtrace check does\n"
    "(a CI gate): when COMMAND succeeded and a limit is broken, the exit status\n"
    "is 1; COMMAND's own failure comes first.\n"
    "  --check-allocated SIZE, --check-peak SIZE, --check-leaked SIZE\n"
    "                        bytes allocated, the live heap's peak, bytes never\n"
    "                        freed (k, M, G, T suffixes)\n"
    "  --check-base OLD.ctf --check-growth PCT\n"
    "                        bytes allocated grow by at most PCT% over OLD.ctf's\n"
    "                        (OLD may be a directory of traces, read as one)\n"
    "  --check-strict        an estimate over its limit breaks it (by default the\n"
    "                        whole 95% interval must be: memtrace help check)\n"
    "\n"
    "The interposer is found beside the memtrace binary, or at $MEMTRACE_PRELOAD.\n";

/* The settings the interposer reads are given to the program in its own
 * environment (built here) rather than set in ours: this process goes on to
 * read the trace, and must not carry them. */
extern char **environ;

/* environ with each sets[k][0] replaced by sets[k][1] (as setenv would do);
 * a NULL value leaves the name as inherited. The strings from *own on are
 * allocated here (free_env). NULL when out of memory. */
static char **child_env(const char *const sets[][2], size_t nsets, size_t *own) {
  size_t n = 0;
  while (environ[n]) n++;
  char **envp = malloc((n + nsets + 1) * sizeof *envp);
  if (!envp) return NULL;
  size_t o = 0;
  for (size_t k = 0; k < n; k++) {
    int replaced = 0;
    for (size_t s = 0; s < nsets && !replaced; s++) {
      size_t len = strlen(sets[s][0]);
      replaced = sets[s][1] && strncmp(environ[k], sets[s][0], len) == 0 &&
                 environ[k][len] == '=';
    }
    if (!replaced) envp[o++] = environ[k];
  }
  *own = o;
  for (size_t s = 0; s < nsets; s++) {
    if (!sets[s][1]) continue;
    size_t len = strlen(sets[s][0]) + strlen(sets[s][1]) + 2;
    envp[o] = malloc(len);
    if (!envp[o]) {
      while (o > *own) free(envp[--o]);
      free(envp);
      return NULL;
    }
    snprintf(envp[o++], len, "%s=%s", sets[s][0], sets[s][1]);
  }
  envp[o] = NULL;
  return envp;
}

static void free_env(char **envp, size_t own) {
  for (char **e = envp + own; *e; e++) free(*e);
  free(envp);
}

/* Starts argv[0] (searched in PATH, as execvp does) with envp; 0 or an
 * errno. posix_spawn rather than fork+exec: fork copies this process's page
 * tables and takes copy-on-write faults before the exec, CPU that the
 * profiler benchmark counts against the CLI. The signals in `dfl`, which
 * we ignore or relay, are set back to default in the program, and it
 * starts with signal mask `mask`. */
static int spawn(pid_t *pid, char **argv, char **envp, const sigset_t *dfl,
                 const sigset_t *mask) {
  posix_spawnattr_t attr;
  int err = posix_spawnattr_init(&attr);
  if (err) return err;
  err = posix_spawnattr_setsigdefault(&attr, dfl);
  if (!err) err = posix_spawnattr_setsigmask(&attr, mask);
  if (!err) err = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  if (!err) err = posix_spawnp(pid, argv[0], NULL, &attr, argv, envp);
  if (err == ENOEXEC) {
    /* An executable file that is no binary and has no #!: execvp ran it with
     * /bin/sh, glibc's posix_spawnp does not. sh finds it in PATH again and,
     * its exec failing the same way, runs it as a script (POSIX). */
    size_t n = 0;
    while (argv[n]) n++;
    char **sh = malloc((n + 4) * sizeof *sh);
    if (!sh) err = ENOMEM;
    else {
      sh[0] = "sh";
      sh[1] = "-c";
      sh[2] = "exec \"$0\" \"$@\"";
      memcpy(sh + 3, argv, (n + 1) * sizeof *sh);
      err = posix_spawn(pid, "/bin/sh", NULL, &attr, sh, envp);
      free(sh);
    }
  }
  posix_spawnattr_destroy(&attr);
  return err;
}

/* ---- signals while the program runs ----
 *
 * Ctrl-C and Ctrl-\ reach the program from the terminal (it signals the
 * whole foreground group): we ignore them and stay to report. SIGTERM and
 * SIGHUP sent to memtrace run alone (`kill PID`, a service manager
 * stopping its main process) would have killed us and left the program
 * running, orphaned, with no report: they are relayed to the program,
 * which ends as it would have (or not), and we report and end as it did.
 * Not relayed: a hangup the kernel sends (it signals the whole group, the
 * program included), the program's own signals, and a second one of a
 * kind, so that a signal sent to the whole group (`timeout`, kill -PGID)
 * reaches the program at most twice. */
static const int relayed[] = {SIGTERM, SIGHUP};
enum { NRELAYED = sizeof relayed / sizeof *relayed };
static volatile sig_atomic_t relay_pid, relay_done[NRELAYED];

static void relay(int sig, siginfo_t *si, void *ctx) {
  (void)ctx;
  pid_t pid = (pid_t)relay_pid;
  if (pid <= 0 || (si->si_code != SI_USER && si->si_code != SI_QUEUE) || si->si_pid == pid)
    return;
  for (int k = 0; k < NRELAYED; k++)
    if (relayed[k] == sig && !relay_done[k]) {
      relay_done[k] = 1;
      int e = errno;
      kill(pid, sig);
      errno = e;
    }
}

typedef struct run_signals {
  struct sigaction old_int, old_quit, old_relayed[NRELAYED];
  sigset_t old_mask;
} run_signals;

/* Before the spawn: INT and QUIT ignored, TERM and HUP held (a signal
 * before the program's pid is known is relayed once it is); dfl receives
 * what the program gets back as default. Signals ignored when we started
 * stay ignored, in the program too. */
static void signals_hold(run_signals *s, sigset_t *dfl) {
  struct sigaction ign = {.sa_handler = SIG_IGN};
  sigaction(SIGINT, &ign, &s->old_int);
  sigaction(SIGQUIT, &ign, &s->old_quit);
  sigemptyset(dfl);
  if (s->old_int.sa_handler != SIG_IGN) sigaddset(dfl, SIGINT);
  if (s->old_quit.sa_handler != SIG_IGN) sigaddset(dfl, SIGQUIT);
  sigset_t hold;
  sigemptyset(&hold);
  for (int k = 0; k < NRELAYED; k++) sigaddset(&hold, relayed[k]);
  sigprocmask(SIG_BLOCK, &hold, &s->old_mask);
  struct sigaction act = {.sa_sigaction = relay, .sa_flags = SA_SIGINFO | SA_RESTART};
  sigfillset(&act.sa_mask);
  for (int k = 0; k < NRELAYED; k++) {
    relay_done[k] = 0;
    sigaction(relayed[k], NULL, &s->old_relayed[k]);
    if (s->old_relayed[k].sa_handler == SIG_IGN) continue;
    sigaddset(dfl, relayed[k]);
    sigaction(relayed[k], &act, NULL);
  }
}

/* With the program started (pid, or 0 if it was not): relaying on. */
static void signals_relay(run_signals *s, pid_t pid) {
  relay_pid = pid;
  sigprocmask(SIG_SETMASK, &s->old_mask, NULL);
}

/* The program is gone: our signals as they were (Ctrl-C may cut the
 * report short, as may SIGTERM). */
static void signals_restore(run_signals *s) {
  sigset_t hold;
  sigemptyset(&hold);
  for (int k = 0; k < NRELAYED; k++) sigaddset(&hold, relayed[k]);
  sigprocmask(SIG_BLOCK, &hold, NULL);
  relay_pid = 0;
  sigaction(SIGINT, &s->old_int, NULL);
  sigaction(SIGQUIT, &s->old_quit, NULL);
  for (int k = 0; k < NRELAYED; k++) sigaction(relayed[k], &s->old_relayed[k], NULL);
  sigprocmask(SIG_SETMASK, &s->old_mask, NULL);
}

/* A file of our own the traced processes write their notes into
 * (MT__RUN_NOTES_ENV): a memfd, which they open as /proc/OURS/fd/N. -1 if
 * there is none (the report then says nothing of children). */
static int notes_file(char *path, size_t n) {
  int fd = memfd_create("memtrace-run-notes", MFD_CLOEXEC);
  if (fd < 0) return -1;
  snprintf(path, n, "/proc/%ld/fd/%d", (long)getpid(), fd);
  return fd;
}

/* Ends this process as the program ended: its exit status, or death by
 * the same signal. A shell running a script stops it when a command dies
 * of SIGINT (Ctrl-C), not when one exits with 130: a loop of `memtrace run`
 * commands must stop at Ctrl-C as a loop of the programs would. No core
 * file: the program's crash is not ours. */
static int end_as(int status) {
  if (!WIFSIGNALED(status)) return WEXITSTATUS(status);
  int sig = WTERMSIG(status);
  fflush(NULL);
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  sigprocmask(SIG_UNBLOCK, &one, NULL);
  raise(sig);
  return 128 + sig; /* a signal that does not end a process by default */
}

struct settings;
static int check_run(const struct settings *s, const char *pattern, pid_t pid);

/* What `memtrace run` was asked for: its options, then the command. */
typedef struct settings {
  const char *output, *rate, *unwind, *depth, *format, *context, *toggle;
  int quiet, debuginfo, no_follow, paused, no_mappings;
  char **command;
  mt_cli_limit_texts check_texts; /* --check-*: limits on the run's trace */
  mt_cli_limits limits;
} settings;

static void parse(int argc, char **argv, settings *s) {
  const mt_command *cmd = &mt_cmd_run;
  int unwind = -1, format = -1;
  static const char *const unwinds[] = {"auto", "libunwind", "fp"}, *const formats[] = {"2", "3"};
  const mt_option options[] = {
      {"-o", "--output", MT_OPT_TEXT, &s->output, NULL, 0, 0, 0},
      {"--rate", NULL, MT_OPT_TEXT, &s->rate, NULL, 0, 0, 0},
      {"--unwind", NULL, MT_OPT_CHOICE, &unwind, "auto|libunwind|fp", 0, 0, 0},
      {"--depth", NULL, MT_OPT_TEXT, &s->depth, NULL, 0, 0, 0},
      {"--format", NULL, MT_OPT_CHOICE, &format, "2|3", 0, 0, 0},
      {"--context", NULL, MT_OPT_TEXT, &s->context, NULL, 0, 0, 0},
      {"-q", "--quiet", MT_OPT_FLAG, &s->quiet, NULL, 1, 0, 0},
      {"--debuginfo", NULL, MT_OPT_FLAG, &s->debuginfo, NULL, 1, 0, 0},
      {"--no-follow-exec", NULL, MT_OPT_FLAG, &s->no_follow, NULL, 1, 0, 0},
      {"--toggle-signal", NULL, MT_OPT_TEXT, &s->toggle, NULL, 0, 0, 0},
      {"--paused", NULL, MT_OPT_FLAG, &s->paused, NULL, 1, 0, 0},
      {"--no-mappings", NULL, MT_OPT_FLAG, &s->no_mappings, NULL, 1, 0, 0},
      {"--check-allocated", NULL, MT_OPT_TEXT, &s->check_texts.allocated, NULL, 0, 0, 0},
      {"--check-peak", NULL, MT_OPT_TEXT, &s->check_texts.peak, NULL, 0, 0, 0},
      {"--check-leaked", NULL, MT_OPT_TEXT, &s->check_texts.leaked, NULL, 0, 0, 0},
      {"--check-base", NULL, MT_OPT_TEXT, &s->check_texts.base, NULL, 0, 0, 0},
      {"--check-growth", NULL, MT_OPT_TEXT, &s->check_texts.growth, NULL, 0, 0, 0},
      {"--check-strict", NULL, MT_OPT_FLAG, &s->check_texts.strict, NULL, 1, 0, 0},
      {NULL, NULL, 0, NULL, NULL, 0, 0, 0}};
  const char *first;
  mt_cli_spec spec = {options, NULL, &first, 1, 1, "COMMAND", 0, 0, NULL};
  spec.command = 1; /* the first argument that is no option starts the command */
  mt_cli_parse(cmd, argc, argv, &spec);
  s->command = (char **)spec.rest;
  s->unwind = unwind < 0 ? NULL : unwinds[unwind];
  s->format = format < 0 ? NULL : formats[format];
  mt_cli_check_rate_depth(cmd, s->rate, s->depth);
  static const char *const names[5] = {"--check-allocated", "--check-peak", "--check-leaked",
                                       "--check-base", "--check-growth"};
  char err[512];
  if (mt_cli_limits_parse(&s->check_texts, names, &s->limits, err, sizeof err) != 0)
    mt_cli_usage_error(cmd, "%s", err);
  if (mt_cli_limits_any(&s->limits) && s->quiet)
    mt_cli_usage_error(cmd, "--check-* reads the trace after the run: not with -q");
  if (s->paused && !s->toggle) mt_cli_usage_error(cmd, "--paused goes with --toggle-signal");
  if (s->toggle && mt_cli_limits_any(&s->limits))
    mt_cli_usage_error(cmd, "--check-* checks one trace: not with --toggle-signal's periods");
  if (s->toggle && s->output && mt__trace_dest_is_socket(s->output))
    mt_cli_usage_error(cmd, "--toggle-signal writes a file a period: not to a tcp: or listen: "
                            "destination");
  if (mt_cli_limits_any(&s->limits) && s->output && mt__trace_dest_is_socket(s->output))
    mt_cli_usage_error(cmd, "--check-* reads the trace after the run: not with a tcp: or listen: "
                            "destination");
}

/* --toggle-signal: the program's tracing periods, each a trace of its own. */
static void report_periods(const char *pattern, pid_t pid) {
  char base[PATH_MAX], path[PATH_MAX + 32], list[1024] = "";
  mt__trace_path_expand(pattern, (long)pid, base, sizeof base);
  unsigned n = 0;
  size_t len = 0;
  for (unsigned k = 1;; k++) {
    struct stat st;
    mt__trace_period_path(base, k, path, sizeof path);
    if (stat(path, &st) != 0) break;
    n++;
    if (len + strlen(path) + 8 < sizeof list)
      len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", n > 1 ? " " : "", path);
    else if (len + 5 < sizeof list && list[len - 1] != '.')
      len += (size_t)snprintf(list + len, sizeof list - len, " ...");
  }
  if (n == 0)
    fprintf(stderr, "memtrace: nothing was traced (the toggle signal never started a period)\n");
  else
    fprintf(stderr, "memtrace: %u tracing period%s: %s\nmemtrace: each is a trace; read them "
                    "together with: memtrace top %s\n",
            n, n == 1 ? "" : "s", list, list);
}

/* Runs the program with the interposer and waits for it; reports on its
 * trace unless quiet (then it execs the program instead). Returns the
 * exit status memtrace run ends with. */
static int trace(const settings *s, const char *pattern, char **envp, size_t own, int notes_fd) {
  char **argv = s->command;
  if (s->quiet) {
    /* Nothing to do after the program: become it. One process and one exec
     * fewer, and its exit status, or its death by a signal, are its own.
     * execvpe searches PATH and runs a script without #! with /bin/sh, as
     * posix_spawnp plus our fallback do. */
    execvpe(argv[0], argv, envp);
    int err = errno;
    free_env(envp, own);
    fprintf(stderr, "memtrace run: cannot run %s: %s\n", argv[0], strerror(err));
    return 127;
  }
  run_signals sigs;
  sigset_t dfl;
  signals_hold(&sigs, &dfl);
  pid_t pid;
  int err = spawn(&pid, argv, envp, &dfl, &sigs.old_mask);
  free_env(envp, own);
  signals_relay(&sigs, err ? 0 : pid);
  if (err) {
    signals_restore(&sigs);
    fprintf(stderr, "memtrace run: cannot run %s: %s\n", argv[0], strerror(err));
    return 127;
  }
  /* the program's resident memory beside its trace (a file's, not a
   * stream's) */
  mt_rss_sampler rss = {0};
  char trace_path[PATH_MAX];
  int sampling = !s->toggle && !mt__trace_dest_is_socket(pattern) &&
                 (mt__trace_path_expand(pattern, (long)pid, trace_path, sizeof trace_path),
                  mt_rss_start(&rss, pid, trace_path, 0) == 0);
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  struct timespec end;
  clock_gettime(CLOCK_REALTIME, &end);
  if (sampling) {
    mt_rss_stop(&rss);
    struct stat st; /* no trace (a static program): no record beside it */
    if (stat(trace_path, &st) != 0 || st.st_size == 0) {
      char side[PATH_MAX + 8];
      snprintf(side, sizeof side, "%s.rss", trace_path);
      unlink(side);
    }
  }
  signals_restore(&sigs);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    return 127; /* command not found (sh fallback) */
  if (s->toggle) { /* the periods' traces, each complete */
    report_periods(pattern, pid);
    return end_as(status);
  }
  mt_cli_run_report(notes_fd, pattern, pid,
                    (unsigned long long)end.tv_sec * 1000000 + (unsigned long long)end.tv_nsec / 1000,
                    argv[0]);
  /* The program's own failure comes first; then the limits decide. */
  if (mt_cli_limits_any(&s->limits) && WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return check_run(s, pattern, pid);
  return end_as(status);
}

/* --check-*: the limits on the program's own trace; 1 when one is broken
 * or the trace cannot be read. */
static int check_run(const settings *s, const char *pattern, pid_t pid) {
  char path[PATH_MAX];
  mt__trace_path_expand(pattern, (long)pid, path, sizeof path);
  mt_analysis *a;
  if (mt_analysis_load(&a, path, NULL, NULL) != MT_OK) {
    fprintf(stderr, "memtrace run: cannot check the limits: %s\n", mt_analysis_error(a));
    mt_analysis_free(a);
    return 1;
  }
  mt_filter f;
  mt_filter_init(&f);
  int rc = mt_cli_check(stderr, path, a, &f, &s->limits);
  mt_analysis_free(a);
  return rc != 0;
}

static int run(int argc, char **argv) {
  settings s = {0};
  parse(argc, argv, &s);
  char preload[PATH_MAX];
  if (mt_cli_find_preload(preload, sizeof preload) != 0) {
    fprintf(stderr, "memtrace run: cannot find libmemtrace_preload.so (looked beside the "
                    "memtrace binary; set MEMTRACE_PRELOAD)\n");
    return 1;
  }
  char why[2 * PATH_MAX];
  if (mt_cli_untraceable(s.command[0], why, sizeof why))
    fprintf(stderr, "memtrace run: warning: %s\n", why);
  char pattern[PATH_MAX];
  if (s.output) {
    snprintf(pattern, sizeof pattern, "%s", s.output);
  } else {
    char prog[PATH_MAX];
    snprintf(prog, sizeof prog, "%s", s.command[0]);
    snprintf(pattern, sizeof pattern, "memtrace.%s.%%p.ctf", basename(prog));
  }
  char where[2 * PATH_MAX + 64];
  if (mt_cli_check_destination(pattern, where, sizeof where) != 0) {
    fprintf(stderr, "memtrace run: %s (the program was not run)\n", where);
    return 1;
  }
  /* Told by the traced processes that they trace, and of the children they
   * start (-q: no report to tell). */
  char notes_path[64];
  int notes_fd = s.quiet ? -1 : notes_file(notes_path, sizeof notes_path);
  /* The program's environment: ours plus the interposer's settings. */
  const char *prev = getenv("LD_PRELOAD");
  char ld[2 * PATH_MAX + 2];
  snprintf(ld, sizeof ld, "%s%s%s", preload, prev && *prev ? ":" : "", prev ? prev : "");
  const char *const sets[][2] = {
      {"LD_PRELOAD", ld},          {"MEMTRACE", pattern},       {"MEMTRACE_RATE", s.rate},
      {"MEMTRACE_UNWIND", s.unwind}, {"MEMTRACE_DEPTH", s.depth}, {"MEMTRACE_FORMAT", s.format},
      {"MEMTRACE_CONTEXT", s.context}, {"MEMTRACE_DEBUGINFO", s.debuginfo ? "1" : NULL},
      {"MEMTRACE_FOLLOW_EXEC", s.no_follow ? "0" : "1"},
      {"MEMTRACE_SIGNAL", s.toggle},               {"MEMTRACE_PAUSED", s.paused ? "1" : NULL},
      {"MEMTRACE_MAPPINGS", s.no_mappings ? "0" : NULL},
      /* "": not an outer run's, which would hear of this run's processes */
      {MT__RUN_NOTES_ENV, notes_fd >= 0 ? notes_path : ""}};
  size_t own;
  char **envp = child_env(sets, sizeof sets / sizeof *sets, &own);
  if (!envp) {
    fprintf(stderr, "memtrace run: out of memory\n");
    return 1;
  }
  return trace(&s, pattern, envp, own, notes_fd);
}

const mt_command mt_cmd_run = {"run", "profile a program's heap (LD_PRELOAD): memtrace run -- CMD",
                               usage, run};
