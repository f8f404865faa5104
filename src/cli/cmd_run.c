/* memtrace run: profile an unmodified program through LD_PRELOAD, then say
 * where the trace is and which sites allocated most. */
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
#include <unistd.h>

#include "analysis_cli.h"
#include "tables.h"
#include "trace_file.h"
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
    "\n"
    "The interposer is found beside the memtrace binary, or at $MEMTRACE_PRELOAD.\n";

static const char *value(int argc, char **argv, int *i) {
  const char *o = argv[*i], *eq = strchr(o, '=');
  if (o[1] == '-' && eq) return eq + 1;
  if (*i + 1 >= argc) mt_cli_usage_error(&mt_cmd_run, "%s needs a value", o);
  return argv[++*i];
}

static int opt_is(const char *a, const char *name) {
  size_t n = strlen(name);
  return strncmp(a, name, n) == 0 && (a[n] == 0 || a[n] == '=');
}

static int find_preload(char *out, size_t n) {
  const char *env = getenv("MEMTRACE_PRELOAD");
  if (env && *env) {
    snprintf(out, n, "%s", env);
    return access(out, R_OK);
  }
  return mt_cli_find_companion("libmemtrace_preload.so", out, n);
}


/* Whether the program's trace can be written where `pattern` says: a file
 * in a directory that exists and can be written in (not a directory of
 * that name). The interposer creates the file, in the program's process,
 * and on failure says so and lets the program run untraced, as it must
 * for a program started with MEMTRACE set; from `memtrace run`, a mistyped
 * -o would cost a whole run for nothing, so it is checked before. Sockets
 * (tcp:, listen:) and a directory part holding %p are left to the
 * interposer. 0, or -1 with the reason in why. */
static int is_socket(const char *pattern) {
  return strncmp(pattern, "tcp:", 4) == 0 || strncmp(pattern, "listen:", 7) == 0;
}

static int check_destination(const char *pattern, char *why, size_t n) {
  if (is_socket(pattern)) return 0;
  char path[PATH_MAX], dir[PATH_MAX];
  mt__trace_path_expand(pattern, (long)getpid(), path, sizeof path);
  snprintf(dir, sizeof dir, "%s", pattern);
  const char *d = dirname(dir);
  if (strchr(d, '%')) return 0;
  struct stat st;
  int exists = stat(path, &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) {
    snprintf(why, n, "%s is a directory", pattern);
    return -1;
  }
  /* a trace another traced process is writing: the program would run
   * untraced */
  if (exists && mt__trace_file_busy(path)) {
    snprintf(why, n, "%s is being written by another traced process", path);
    return -1;
  }
  if (access(d, W_OK | X_OK) != 0) {
    snprintf(why, n, "cannot create %s: %s: %s", pattern, d, strerror(errno));
    return -1;
  }
  return 0;
}

typedef struct site {
  uint64_t key; /* function << 32 | line */
  uint32_t stack;
  mt_tally t;
} site;

/* ---- A site's main callers ----
 *
 * The innermost frame is often an allocator's wrapper (xmalloc, a
 * language runtime's, a library's: Perl_safesysmalloc, _PyObject_Malloc),
 * which says little on its own. So under each site the summary follows the
 * heaviest caller, then that caller's heaviest caller, CALLERS levels out,
 * with the share of the site's samples that came that way. */
#define CALLERS 3
#define UNDESCRIBED (UINT64_C(1) << 63) /* a key's flag: a code id, not a function */

/* The functions calling out from stack s's site, innermost first, as keys
 * (a function id, or UNDESCRIBED | code id for code the trace never named):
 * up to `max` of them, a function repeated next to itself counted once.
 * The site is found as mt_analysis_stack_site finds it: the innermost
 * location of the last code that has one, past at most two undescribed
 * codes. */
static size_t callers_of(const mt_analysis *a, uint32_t s, uint64_t *out, size_t max) {
  size_t n = 0, undescribed = 0;
  uint64_t last = UINT64_MAX; /* the site's function, then the last caller's */
  for (; s != 0 && n < max; s = mt_analysis_stack_parent(a, s)) {
    uint32_t code = mt_analysis_stack_code(a, s);
    size_t nf;
    const mt_frame *fr = mt_analysis_code_frames(a, code, &nf);
    if (last == UINT64_MAX) {
      if (nf == 0) {
        if (++undescribed > 2) return 0;
        continue;
      }
      last = fr[--nf].function;
    } else if (nf == 0) {
      out[n++] = last = UNDESCRIBED | code;
      continue;
    }
    /* a function calling itself, or inlined into a function of its name,
     * shows once */
    for (; nf > 0 && n < max; nf--)
      if (fr[nf - 1].function != last) out[n++] = last = fr[nf - 1].function;
  }
  return n;
}

typedef struct caller_path {
  uint64_t key[CALLERS];
  double share[CALLERS]; /* of the site's samples */
  size_t n;
} caller_path;

typedef struct way {
  uint64_t key[CALLERS]; /* callers_of */
  size_t n;
  double samples;
} way;

/* Site's heaviest caller path, from its stacks (ns of them): at each level,
 * among the stacks that came the way chosen so far, the caller with the
 * most samples. */
static caller_path main_callers(const mt_analysis *a, const mt_tally *per, const uint32_t *stacks,
                                size_t ns) {
  caller_path p = {.n = 0};
  way *w = malloc(ns * sizeof *w);
  double *sums = malloc(ns * sizeof *sums), site = 0;
  if (!w || !sums) goto out;
  for (size_t i = 0; i < ns; i++) {
    w[i].n = callers_of(a, stacks[i], w[i].key, CALLERS);
    site += w[i].samples = (double)per[stacks[i]].samples;
  }
  size_t live = ns; /* w[0..live): the stacks on the path so far */
  for (size_t level = 0; level < CALLERS && site > 0; level++) {
    mt__u64map index = {0};
    uint64_t best = 0;
    double best_w = 0;
    size_t nsums = 0;
    for (size_t i = 0; i < live; i++) {
      if (w[i].n <= level) continue;
      int fresh;
      uint32_t ix = mt__u64map_intern(&index, w[i].key[level], (uint32_t)nsums, &fresh);
      if (ix == UINT32_MAX) break;
      if (fresh) sums[nsums++] = 0;
      double sum = sums[ix] += w[i].samples;
      if (sum > best_w || (sum == best_w && w[i].key[level] < best))
        best = w[i].key[level], best_w = sum;
    }
    mt__u64map_free(&index);
    if (best_w <= 0) break;
    size_t kept = 0; /* the stacks through `best` move to the front */
    for (size_t i = 0; i < live; i++)
      if (w[i].n > level && w[i].key[level] == best) {
        way t = w[i];
        w[i] = w[kept];
        w[kept++] = t;
      }
    live = kept;
    p.key[p.n] = best;
    p.share[p.n++] = best_w / site;
  }
out:
  free(w);
  free(sums);
  return p;
}

/* A caller's name, shortened to `room` characters (C++ names run long). */
static void print_caller(const mt_analysis *a, uint64_t key, size_t room) {
  if (key & UNDESCRIBED) { /* as mt_cli_site names it */
    fprintf(stderr, "#%llx", (unsigned long long)mt_analysis_code_value(a, (uint32_t)key));
    return;
  }
  const char *name = mt_analysis_function_name(a, (uint32_t)key);
  if (!name || !*name) name = "??";
  size_t len = strlen(name);
  if (len <= room) fputs(name, stderr);
  else fprintf(stderr, "%.*s...", (int)(room - 3), name);
}

static void print_callers(const mt_analysis *a, const caller_path *p) {
  if (!p->n) return;
  fprintf(stderr, "              from ");
  for (size_t i = 0; i < p->n; i++) {
    if (i) fputs(" <- ", stderr);
    print_caller(a, p->key[i], 48);
    if (p->share[i] < 0.995) fprintf(stderr, " (%.0f%%)", 100 * p->share[i]);
  }
  fputc('\n', stderr);
}

static int by_bytes(const void *x, const void *y) {
  const site *a = x, *b = y;
  if (a->t.samples != b->t.samples) return a->t.samples < b->t.samples ? 1 : -1;
  return a->key < b->key ? -1 : a->key > b->key;
}

/* The live heap's peak, and what was never freed (a C program need not
 * free at exit, so not all of it is a leak). `per` is scratch space. */
static void heap_line(const mt_analysis *a, mt_tally *per, const char *path) {
  uint64_t time, samples;
  mt_analysis_peak(a, &time, &samples);
  mt_tally peak = {.samples = samples}, left;
  mt_filter f;
  mt_filter_init(&f);
  f.live = MT_LIVE_AT_END;
  if (mt_analysis_tally_stacks(a, &f, per, &left) != MT_OK) return;
  char b1[32], b2[32];
  fprintf(stderr, "memtrace: live heap at its peak %s (%.2f s in); never freed %s (memtrace leaks %s)\n",
          mt_cli_bytes(b1, sizeof b1, mt_estimate_bytes(a, &peak).value), (double)time / 1e6,
          mt_cli_bytes(b2, sizeof b2, mt_estimate_bytes(a, &left).value), path);
}

static uint64_t site_key(const mt_analysis *a, uint32_t s) {
  mt_frame fr;
  return mt_analysis_stack_site(a, s, &fr) == 0 ? (uint64_t)fr.function << 32 | fr.line
                                                : UINT64_MAX - s; /* no location: its own site */
}

/* The pid the trace at path names in its trace_info; 0 if it cannot be
 * read (report says why). */
/* The pid in the trace at path (0 if none can be read), and, when exe is
 * not NULL, the base name of its executable. */
static uint64_t trace_owner(const char *path, char *exe, size_t n) {
  mt_reader *r = NULL;
  uint64_t pid = 0;
  if (exe) exe[0] = 0;
  if (mt_reader_open(&r, path) == MT_OK) {
    const mt_trace_info *in = mt_reader_info(r);
    pid = in->pid;
    const char *name = in->executable_name ? in->executable_name : "";
    const char *slash = strrchr(name, '/');
    if (exe) snprintf(exe, n, "%s", slash ? slash + 1 : name);
  }
  mt_reader_close(r);
  return pid;
}

static uint64_t trace_pid(const char *path) { return trace_owner(path, NULL, 0); }

/* The trace's largest allocation sites, by estimated bytes, each with its
 * main callers. */
static void report(const char *path, int top) {
  mt_analysis *a;
  if (mt_analysis_load(&a, path, NULL, NULL) != MT_OK) {
    fprintf(stderr, "memtrace: cannot read the trace: %s\n", mt_analysis_error(a));
    mt_analysis_free(a);
    return;
  }
  size_t ns = mt_analysis_stack_count(a);
  mt_tally *per = malloc(ns * sizeof *per), total;
  site *sites = calloc(ns, sizeof *sites);
  uint32_t *stacks = malloc(ns * sizeof *stacks);
  uint64_t *keys = malloc(ns * sizeof *keys); /* each stack's site_key */
  mt_filter f;
  mt_filter_init(&f);
  if (!per || !sites || !stacks || !keys || mt_analysis_tally_stacks(a, &f, per, &total) != MT_OK) {
    fprintf(stderr, "memtrace: out of memory\n");
    goto out;
  }
  mt__u64map index = {0};
  size_t nsites = 0, keyed = ns; /* keys[0..keyed) are set */
  for (uint32_t s = 0; s < ns; s++) {
    if (!per[s].objects) continue;
    uint64_t key = keys[s] = site_key(a, s);
    uint32_t *ix = mt__u64map_get(&index, key);
    if (!ix) {
      if (mt__u64map_put(&index, key, (uint32_t)nsites)) {
        keyed = s; /* out of memory: the sites so far */
        break;
      }
      sites[nsites] = (site){key, s, {0}};
      ix = mt__u64map_get(&index, key);
      nsites++;
    }
    mt_tally_add(&sites[*ix - 1].t, &per[s]);
  }
  mt__u64map_free(&index);
  qsort(sites, nsites, sizeof *sites, by_bytes);
  char b1[32], b2[32], where[512];
  mt_estimate all = mt_estimate_bytes(a, &total);
  const char *exe = mt_analysis_info(a)->executable_name;
  if (!exe || !*exe) exe = "the program";
  if (!total.objects) {
    fprintf(stderr, "memtrace: no allocation of %s was sampled\n", exe);
    goto out;
  }
  fprintf(stderr, "memtrace: %s allocated %s in %llu sampled allocations; top sites:\n", exe,
          mt_cli_bytes(b1, sizeof b1, all.value), (unsigned long long)total.objects);
  for (size_t i = 0; i < nsites && i < (size_t)top; i++) {
    mt_estimate e = mt_estimate_bytes(a, &sites[i].t);
    fprintf(stderr, "  %10s  %5.1f%%  (+-%s)  %s\n", mt_cli_bytes(b1, sizeof b1, e.value),
            all.value > 0 ? 100 * e.value / all.value : 0,
            mt_cli_bytes(b2, sizeof b2, (e.hi - e.lo) / 2),
            mt_cli_site(a, sites[i].stack, where, sizeof where));
    size_t n = 0; /* the site's stacks, into `stacks` */
    for (uint32_t s = 0; s < keyed; s++)
      if (per[s].objects && keys[s] == sites[i].key) stacks[n++] = s;
    caller_path p = main_callers(a, per, stacks, n);
    print_callers(a, &p);
  }
  heap_line(a, per, path);
  fprintf(stderr, "memtrace: explore it with: memtrace view %s (or hotspots, flamegraph, top)\n",
          path);
out:
  free(per);
  free(sites);
  free(stacks);
  free(keys);
  mt_analysis_free(a);
}

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
 * tables and takes copy-on-write faults before the exec, ~3 ms of the ~16 ms
 * that `memtrace run -q /bin/true` cost (the profiler benchmark counts the
 * CLI's CPU). SIGINT and SIGQUIT, which we ignore, are set back to default
 * in the program unless they were already ignored when we started. */
static int spawn(pid_t *pid, char **argv, char **envp, int dfl_int, int dfl_quit) {
  posix_spawnattr_t attr;
  int err = posix_spawnattr_init(&attr);
  if (err) return err;
  sigset_t dfl;
  sigemptyset(&dfl);
  if (dfl_int) sigaddset(&dfl, SIGINT);
  if (dfl_quit) sigaddset(&dfl, SIGQUIT);
  err = posix_spawnattr_setsigdefault(&attr, &dfl);
  if (!err) err = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
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

/* A file of our own the traced processes write their notes into
 * (MT__RUN_NOTES_ENV): a memfd, which they open as /proc/OURS/fd/N. -1 if
 * there is none (the report then says nothing of children). */
static int notes_file(char *path, size_t n) {
  int fd = memfd_create("memtrace-run-notes", MFD_CLOEXEC);
  if (fd < 0) return -1;
  snprintf(path, n, "/proc/%ld/fd/%d", (long)getpid(), fd);
  return fd;
}

typedef struct child {
  long pid;
  int traced;
} child;

static int by_pid(const void *a, const void *b) {
  long x = ((const child *)a)->pid, y = ((const child *)b)->pid;
  return (x > y) - (x < y);
}

/* What the run's traced processes wrote to the notes file: whether the
 * program's process started tracing, and its other processes (each once:
 * a vfork child is told at each exec it tries), sorted by pid. */
typedef struct notes {
  int started;
  child *kids;
  size_t nkids, untold; /* untold: untraced children of pid unknown */
} notes;

static void read_notes(int fd, pid_t main_pid, notes *out) {
  *out = (notes){0};
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) return;
  size_t size = (size_t)st.st_size;
  char *text = malloc(size + 1);
  if (!text) return;
  ssize_t got = pread(fd, text, size, 0);
  text[got > 0 ? (size_t)got : 0] = 0;
  size_t nlines = 0;
  for (const char *c = text; *c; c++) nlines += *c == '\n';
  out->kids = calloc(nlines + 1, sizeof *out->kids);
  for (char *line = text, *next; *line && out->kids; line = next) {
    next = line + strcspn(line, "\n");
    if (*next) *next++ = 0;
    int known = (line[0] == 's' || line[0] == 't' || line[0] == 'u') && line[1] == ' ';
    long pid = known ? strtol(line + 2, NULL, 10) : -1;
    if (line[0] == 's' && pid == main_pid) out->started = 1;
    else if (pid == 0 && line[0] == 'u') out->untold++;
    else if (pid > 0 && pid != main_pid && line[0] != 's')
      out->kids[out->nkids++] = (child){pid, line[0] == 't'};
  }
  free(text);
  if (out->kids) qsort(out->kids, out->nkids, sizeof *out->kids, by_pid);
}

/* Says which other processes of the run wrote traces (their files found
 * by `pattern`), and how many ran untraced. */
static void report_children(const notes *nt, const char *pattern) {
  enum { NAMED = 5 };
  char names[NAMED][PATH_MAX + 80];
  size_t traces = 0, untraced = nt->untold;
  for (size_t i = 0; i < nt->nkids; i++) {
    const child *k = &nt->kids[i];
    if (i && k->pid == nt->kids[i - 1].pid) continue;
    if (!k->traced) {
      untraced++;
      continue;
    }
    char path[PATH_MAX], exe[64];
    mt__trace_path_expand(pattern, k->pid, path, sizeof path);
    struct stat ts; /* a child that allocated nothing opened no file */
    if (stat(path, &ts) != 0 || ts.st_size == 0 ||
        trace_owner(path, exe, sizeof exe) != (uint64_t)k->pid)
      continue;
    if (traces < NAMED) snprintf(names[traces], sizeof names[traces], "%s (%s)", path, exe);
    traces++;
  }
  if (traces) {
    fprintf(stderr, "memtrace: %zu other process%s of the run wrote %s:", traces,
            traces == 1 ? "" : "es", traces == 1 ? "its trace" : "traces");
    for (size_t i = 0; i < traces && i < NAMED; i++)
      fprintf(stderr, "%s %s", i ? "," : "", names[i]);
    if (traces > NAMED) fprintf(stderr, " and %zu more", traces - NAMED);
    fputc('\n', stderr);
  }
  if (untraced)
    fprintf(stderr, "memtrace: %zu other process%s of the run ran untraced (with -o 'NAME.%%p.ctf' "
                    "each writes a trace of its own)\n",
            untraced, untraced == 1 ? "" : "es");
}

/* The report: where the trace went, the run's other processes, the top
 * sites. */
static void say_where(const notes *nt, const char *pattern, pid_t pid) {
  if (is_socket(pattern)) { /* no file to read; if not tracing, the tracer said why */
    int served = strncmp(pattern, "listen:", 7) == 0;
    if (nt->started)
      fprintf(stderr, "memtrace: the trace %s %s (no report: it is the %s's)\n",
              served ? "was served on" : "went to", pattern, served ? "client" : "listener");
    return;
  }
  char path[PATH_MAX];
  mt__trace_path_expand(pattern, (long)pid, path, sizeof path);
  struct stat st;
  if (stat(path, &st) != 0 || st.st_size == 0) {
    fprintf(stderr, "memtrace: no trace was written to %s\n", path);
    return;
  }
  /* Not the program's trace: a file left there before, the program not
   * traced (a static one), or taken by another traced process meanwhile. */
  uint64_t other = trace_pid(path);
  if (other && other != (uint64_t)pid) {
    fprintf(stderr, "memtrace: no trace was written to %s (it holds process %llu's, not %ld's)\n",
            path, (unsigned long long)other, (long)pid);
    return;
  }
  fprintf(stderr, "memtrace: trace written to %s (%lld bytes)\n", path, (long long)st.st_size);
  report_children(nt, pattern);
  report(path, 5);
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

static int run(int argc, char **argv) {
  const char *output = NULL, *rate = NULL, *unwind = NULL, *depth = NULL, *format = NULL,
             *context = NULL;
  int quiet = 0, debuginfo = 0, follow = 1, i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (mt_cli_is_help(a)) return mt_cli_help(&mt_cmd_run);
    if (strcmp(a, "-o") == 0 || opt_is(a, "--output")) output = value(argc, argv, &i);
    else if (opt_is(a, "--rate")) rate = value(argc, argv, &i);
    else if (opt_is(a, "--unwind")) unwind = value(argc, argv, &i);
    else if (opt_is(a, "--depth")) depth = value(argc, argv, &i);
    else if (opt_is(a, "--format")) format = value(argc, argv, &i);
    else if (opt_is(a, "--context")) context = value(argc, argv, &i);
    else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) quiet = 1;
    else if (strcmp(a, "--debuginfo") == 0) debuginfo = 1;
    else if (strcmp(a, "--no-follow-exec") == 0) follow = 0;
    else mt_cli_usage_error(&mt_cmd_run, "unknown option '%s'", a);
  }
  if (i >= argc) mt_cli_usage_error(&mt_cmd_run, "missing COMMAND");
  char *end;
  if (rate) {
    double r = strtod(rate, &end);
    if (*end || !(r > 0 && r <= 1))
      mt_cli_usage_error(&mt_cmd_run, "--rate must be a number in (0, 1], not '%s'", rate);
  }
  if (unwind && strcmp(unwind, "auto") && strcmp(unwind, "fp") && strcmp(unwind, "libunwind"))
    mt_cli_usage_error(&mt_cmd_run, "--unwind must be auto, libunwind or fp, not '%s'",
                       unwind);
  if (depth) {
    long d = strtol(depth, &end, 10);
    if (*end || d < 1 || d > 4096)
      mt_cli_usage_error(&mt_cmd_run, "--depth must be 1 to 4096, not '%s'", depth);
  }
  if (format && strcmp(format, "2") && strcmp(format, "3"))
    mt_cli_usage_error(&mt_cmd_run, "--format must be 2 or 3, not '%s'", format);

  char preload[PATH_MAX];
  if (find_preload(preload, sizeof preload) != 0) {
    fprintf(stderr, "memtrace run: cannot find libmemtrace_preload.so (looked beside the "
                    "memtrace binary; set MEMTRACE_PRELOAD)\n");
    return 1;
  }
  char why[2 * PATH_MAX];
  if (mt_cli_untraceable(argv[i], why, sizeof why))
    fprintf(stderr, "memtrace run: warning: %s\n", why);
  char pattern[PATH_MAX];
  if (output) snprintf(pattern, sizeof pattern, "%s", output);
  else {
    char cmd[PATH_MAX];
    snprintf(cmd, sizeof cmd, "%s", argv[i]);
    snprintf(pattern, sizeof pattern, "memtrace.%s.%%p.ctf", basename(cmd));
  }

  char where[2 * PATH_MAX + 64];
  if (check_destination(pattern, where, sizeof where) != 0) {
    fprintf(stderr, "memtrace run: %s (the program was not run)\n", where);
    return 1;
  }

  /* Told by the traced processes that they trace, and of the children they
   * start (-q: no report to tell). */
  char notes_path[64];
  int notes_fd = quiet ? -1 : notes_file(notes_path, sizeof notes_path);

  /* The program's environment: ours plus the interposer's settings. */
  const char *prev = getenv("LD_PRELOAD");
  char ld[2 * PATH_MAX + 2];
  snprintf(ld, sizeof ld, "%s%s%s", preload, prev && *prev ? ":" : "", prev ? prev : "");
  const char *const sets[][2] = {
      {"LD_PRELOAD", ld},        {"MEMTRACE", pattern},         {"MEMTRACE_RATE", rate},
      {"MEMTRACE_UNWIND", unwind}, {"MEMTRACE_DEPTH", depth},     {"MEMTRACE_FORMAT", format},
      {"MEMTRACE_CONTEXT", context}, {"MEMTRACE_DEBUGINFO", debuginfo ? "1" : NULL},
      {"MEMTRACE_FOLLOW_EXEC", follow ? "1" : "0"},
      /* "": not an outer run's, which would hear of this run's processes */
      {MT__RUN_NOTES_ENV, notes_fd >= 0 ? notes_path : ""}};
  size_t own;
  char **envp = child_env(sets, sizeof sets / sizeof *sets, &own);
  if (!envp) {
    fprintf(stderr, "memtrace run: out of memory\n");
    return 1;
  }

  if (quiet) {
    /* Nothing to do after the program: become it. One process and one exec
     * fewer (about 3 ms of CPU here), and its exit status, or its death by
     * a signal, are its own. execvpe searches PATH and runs a script
     * without #! with /bin/sh, as posix_spawnp plus our fallback do. */
    execvpe(argv[i], argv + i, envp);
    int err = errno;
    free_env(envp, own);
    fprintf(stderr, "memtrace run: cannot run %s: %s\n", argv[i], strerror(err));
    return 127;
  }

  /* Ctrl-C goes to the program; we stay to report on its trace. */
  struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_quit;
  sigaction(SIGINT, &ign, &old_int);
  sigaction(SIGQUIT, &ign, &old_quit);
  pid_t pid;
  int err = spawn(&pid, argv + i, envp, old_int.sa_handler != SIG_IGN,
                  old_quit.sa_handler != SIG_IGN);
  free_env(envp, own);
  if (err) {
    fprintf(stderr, "memtrace run: cannot run %s: %s\n", argv[i], strerror(err));
    return 127;
  }
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  /* the program is gone: Ctrl-C may cut the report short */
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGQUIT, &old_quit, NULL);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    return 127; /* command not found (sh fallback) */

  notes nt;
  read_notes(notes_fd, pid, &nt);
  say_where(&nt, pattern, pid);
  free(nt.kids);
  return end_as(status);
}

const mt_command mt_cmd_run = {"run", "profile a program's heap (LD_PRELOAD): memtrace run -- CMD",
                               usage, run};
