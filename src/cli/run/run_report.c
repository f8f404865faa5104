/* memtrace run's closing report (run_report.h): where the trace went, the
 * run's other processes, the top allocation sites with their main callers
 * (and the program's own function, under a language runtime), the live
 * heap's peak. */
#include "run_report.h"

#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "anonymous.h"
#include "base/human.h"
#include "cli.h"
#include "format/trace_file.h"
#include "memtrace/rank.h"
#include "memtrace/stats.h"
#include "run_tree.h"

/* The part of a path after its last '/' (the whole path if it has none,
 * or ends in one). */
static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash && slash[1] ? slash + 1 : path;
}

/* A caller's name, shortened to `room` characters (C++ names run long). */
static void print_name(const char *name, uint64_t code, size_t room) {
  if (!name) { /* a code the trace never named */
    fprintf(stderr, "#%llx", (unsigned long long)code);
    return;
  }
  if (!*name) name = "??";
  size_t len = strlen(name);
  if (len <= room) fputs(name, stderr);
  else fprintf(stderr, "%.*s...", (int)(room - 3), name);
}

/* Under a site: its main callers, and the program's own function under a
 * language runtime. */
static void print_callers(const mt_site_callers *c) {
  if (c->ncallers) {
    fprintf(stderr, "              from ");
    for (size_t i = 0; i < c->ncallers; i++) {
      if (i) fputs(" <- ", stderr);
      print_name(c->callers[i].function, c->callers[i].code, 48);
      if (c->callers[i].share < 0.995) fprintf(stderr, " (%.0f%%)", 100 * c->callers[i].share);
    }
    fputc('\n', stderr);
  }
  if (c->program_function) {
    fprintf(stderr, "              in ");
    print_name(c->program_function, 0, 48);
    if (c->program_file && *c->program_file) fprintf(stderr, " [%s]", base_name(c->program_file));
    if (c->program_share < 0.995) fprintf(stderr, " (%.0f%%)", 100 * c->program_share);
    fputc('\n', stderr);
  }
}

/* A runtime that can name the program's functions for profilers, but
 * named none in this trace (no stack went through one): how to ask it,
 * for the interpreters whose names the report reads. The executable's
 * base name tells which (python3.12, node). */
static void runtime_hint(const mt_analysis *a, const mt_ranking *r) {
  const char *exe = mt_analysis_info(a)->executable_name;
  if (!exe) return;
  exe = base_name(exe);
  int python = strncmp(exe, "python3", 7) == 0,
      node = strcmp(exe, "node") == 0 || strcmp(exe, "nodejs") == 0;
  if (!python && !node) return;
  for (size_t i = 0; i < r->nrows; i++)
    if (r->rows[i].callers && r->rows[i].callers->program_function) return;
  if (node) {
    fprintf(stderr, "memtrace: no JavaScript function is named in this trace: node names them "
                    "for profilers with --perf-basic-prof\n");
    return;
  }
  const char *malloc_env = getenv("PYTHONMALLOC");
  fprintf(stderr, "memtrace: no Python function is named in this trace: CPython 3.12+ names "
                  "them for profilers with -X perf%s\n",
          malloc_env && strcmp(malloc_env, "malloc") == 0
              ? ""
              : "; PYTHONMALLOC=malloc also shows the small objects its own allocator serves");
}

/* A process that stopped tracing before its end (a write failed: a full
 * disk, a file size limit), from its note: when, and why. */
typedef struct stop {
  long pid;
  unsigned long long us; /* since the epoch */
  char why[512];
} stop;

/* Nothing sampled: why (a sample falls about every 1 / rate words), and
 * the rates above it that would see a short run. */
static void no_samples_hint(const mt_analysis *a) {
  mt_sampling s = mt_analysis_sampling(a);
  char every[32], every_at_1e3[32];
  if (!(s.rate > 0 && s.rate < 1)) {
    fputc('\n', stderr);
    return;
  }
  fprintf(stderr, ": at rate %g a sample falls about every %s allocated; for a short run, try ",
          s.rate, mt_human_bytes(every, sizeof every, s.word_bytes / s.rate));
  if (s.rate < 1e-3)
    fprintf(stderr, "--rate 1e-3 (every %s) or ",
            mt_human_bytes(every_at_1e3, sizeof every_at_1e3, s.word_bytes / 1e-3));
  fprintf(stderr, "--rate 1 (every allocation)\n");
}

/* A site the symbolizer could only name "module+0xOFFSET": its program or
 * library has no symbols. Said once, with where names come from. */
static void names_hint(const mt_ranking *r) {
  for (size_t i = 0; i < r->nrows; i++) {
    const mt_site *s = &r->rows[i].site;
    if (s->kind == MT_SITE_CODE || (s->kind == MT_SITE_LOCATION && mt_cli_anonymous_name(s->function, NULL))) {
      const char *urls = getenv("DEBUGINFOD_URLS");
      fprintf(stderr,
              "memtrace: sites named like %s have no symbols: install the program's and "
              "libraries' debug symbols (Debian: their -dbgsym packages), and add --debuginfo "
              "for line numbers in system libraries; %s\n",
              s->kind == MT_SITE_CODE ? "#hex" : s->function,
              urls && urls[0] ? "the debuginfod servers of DEBUGINFOD_URLS had none for them"
                              : "or set DEBUGINFOD_URLS (e.g. https://debuginfod.debian.net) "
                                "for names from a debuginfod server, fetched after the run "
                                "(memtrace symbolize does it for a trace)");
      return;
    }
  }
}

/* The live heap's peak, and what was never freed (a C program need not
 * free at exit, so not all of it is a leak); in a trace that stopped
 * early, what was live then. */
static void heap_line(const mt_analysis *a, const char *path, int stopped) {
  uint64_t time, samples;
  mt_analysis_peak(a, &time, &samples);
  mt_tally peak = {.samples = samples}, left;
  mt_filter f;
  mt_filter_init(&f);
  f.live = MT_LIVE_AT_END;
  if (mt_analysis_tally(a, &f, &left) != MT_OK) return;
  char b1[32], b2[32];
  fprintf(stderr, "memtrace: live heap at its peak %s (%.2f s in); %s %s (memtrace leaks %s)\n",
          mt_human_bytes(b1, sizeof b1, mt_estimate_bytes(a, &peak).value), (double)time / 1e6,
          stopped ? "live when tracing stopped" : "never freed",
          mt_human_bytes(b2, sizeof b2, mt_estimate_bytes(a, &left).value), path);
  /* beside it, what the processes held (the .rss memtrace run recorded) */
  mt_rss *r;
  if (mt_rss_load(path, &r) != MT_OK) return;
  double most = 0, anon = 0;
  for (size_t i = 0; i < r->n; i++) {
    double total = r->anon[i] + r->file[i] + r->shmem[i];
    if (total > most) most = total, anon = r->anon[i];
  }
  mt_rss_free(r);
  fprintf(stderr, "memtrace: resident memory at most %s (%s of it anonymous; memtrace timeline %s "
                  "draws both)\n",
          mt_human_bytes(b1, sizeof b1, most), mt_human_bytes(b2, sizeof b2, anon), path);
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
    if (exe) snprintf(exe, n, "%s", base_name(in->executable_name ? in->executable_name : ""));
  }
  mt_reader_close(r);
  return pid;
}

static uint64_t trace_pid(const char *path) { return trace_owner(path, NULL, 0); }

/* What the figures below cover: a trace that ends early says where, with
 * the tracer's reason (st: its note, or NULL), and a trace the reader could
 * not read whole says what it left out. end_us: when the program ended. */
static void say_coverage(const mt_analysis *a, const stop *st, unsigned long long end_us) {
  const char *w = mt_analysis_warning(a);
  if (w) fprintf(stderr, "memtrace: warning: %s\n", w);
  if (!st) return;
  uint64_t start = mt_analysis_info(a)->start_time;
  double at = st->us > start ? (double)(st->us - start) / 1e6 : 0;
  double ran = end_us > start ? (double)(end_us - start) / 1e6 : 0;
  fprintf(stderr,
          "memtrace: the trace ends early: tracing stopped %.3f s into the program's %.3f s "
          "(%s); the figures below cover that part only\n",
          at, ran, st->why);
}

/* The trace's largest allocation sites, by estimated bytes, each with its
 * main callers. 0 when it holds no sampled allocation (said so), 1 else. */
static int report(const char *path, int top, const stop *st, unsigned long long end_us) {
  int sampled = 1;
  mt_analysis *a;
  if (mt_analysis_load(&a, path, NULL, NULL) != MT_OK) {
    fprintf(stderr, "memtrace: cannot read the trace: %s\n", mt_analysis_error(a));
    mt_analysis_free(a);
    return 1;
  }
  say_coverage(a, st, end_us);
  mt_filter f;
  mt_filter_init(&f);
  mt_rank_spec spec = {MT_BY_LINE, MT_ORDER_BYTES, (size_t)top, 0};
  mt_ranking *r = NULL;
  if (mt_rank(a, &f, &spec, &r) != MT_OK || mt_rank_callers(a, &f, r, MT_CALLERS_MAX) != MT_OK) {
    fprintf(stderr, "memtrace: out of memory\n");
    goto out;
  }
  char b1[32], b2[32];
  const char *exe = mt_analysis_info(a)->executable_name;
  if (!exe || !*exe) exe = "the program";
  if (!r->total.objects) {
    fprintf(stderr, "memtrace: no allocation of %s was sampled", exe);
    no_samples_hint(a);
    sampled = 0;
    goto out;
  }
  fprintf(stderr, "memtrace: %s allocated %s in %llu sampled allocation%s; top sites:\n", exe,
          mt_human_bytes(b1, sizeof b1, r->total_bytes.value), (unsigned long long)r->total.objects,
          mt_human_plural(r->total.objects));
  for (size_t i = 0; i < r->nrows; i++) {
    const mt_rank_row *row = &r->rows[i];
    const mt_estimate *e = &row->bytes;
    size_t need = strlen(row->site.function) + strlen(row->site.file) + 48;
    char *where = malloc(need);
    fprintf(stderr, "  %10s  %5.1f%%  (+-%s)  %s\n", mt_human_bytes(b1, sizeof b1, e->value),
            r->total_bytes.value > 0 ? 100 * e->value / r->total_bytes.value : 0,
            mt_human_bytes(b2, sizeof b2, (e->hi - e->lo) / 2),
            where ? mt_site_text(&row->site, 1, where, need) : "?");
    free(where);
    if (row->callers) print_callers(row->callers);
  }
  runtime_hint(a, r);
  names_hint(r);
  heap_line(a, path, st != NULL);
  fprintf(stderr, "memtrace: explore it with: memtrace view %s (or hotspots, flamegraph, top)\n",
          path);
out:
  mt_ranking_free(r);
  mt_analysis_free(a);
  return sampled;
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
 * a vfork child is told at each exec it tries, a traced one may tell of
 * itself too), sorted by pid. A process is known as traced from its own
 * "s" line as well: one started where no fork handler or wrapper sees it
 * (the C library's system() and popen(), with MEMTRACE_KEEP_ENV=1). */
typedef struct notes {
  int started;
  child *kids;
  size_t nkids, untold; /* untold: untraced children of pid unknown */
  stop *stops;          /* processes that stopped tracing early */
  size_t nstops;
} notes;

static const stop *stopped(const notes *nt, long pid) {
  for (size_t i = 0; i < nt->nstops; i++)
    if (nt->stops[i].pid == pid) return &nt->stops[i];
  return NULL;
}

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
  out->stops = calloc(nlines + 1, sizeof *out->stops);
  for (char *line = text, *next; *line && out->kids && out->stops; line = next) {
    next = line + strcspn(line, "\n");
    if (*next) *next++ = 0;
    if (line[0] == 'x' && line[1] == ' ') {
      stop *s = &out->stops[out->nstops];
      int used = 0;
      if (sscanf(line + 2, "%ld %llu %n", &s->pid, &s->us, &used) >= 2 && used > 0) {
        snprintf(s->why, sizeof s->why, "%s", line + 2 + used);
        out->nstops++;
      }
      continue;
    }
    int known = (line[0] == 's' || line[0] == 't' || line[0] == 'u') && line[1] == ' ';
    long pid = known ? strtol(line + 2, NULL, 10) : -1;
    if (line[0] == 's' && pid == main_pid) out->started = 1;
    else if (pid == 0 && line[0] == 'u') out->untold++;
    else if (pid > 0 && pid != main_pid) /* "s": a traced process no parent told of */
      out->kids[out->nkids++] = (child){pid, line[0] != 'u'};
  }
  free(text);
  if (out->kids) qsort(out->kids, out->nkids, sizeof *out->kids, by_pid);
}

/* The programs the run's other processes ran, each once with its count:
 * "bash x18, readlink". */
enum { PROGRAMS = 6 };
typedef struct programs {
  char name[PROGRAMS][64];
  size_t count[PROGRAMS], n, others;
} programs;

static void programs_add(programs *p, const char *exe) {
  for (size_t i = 0; i < p->n; i++)
    if (strcmp(p->name[i], exe) == 0) {
      p->count[i]++;
      return;
    }
  if (p->n == PROGRAMS) {
    p->others++;
    return;
  }
  snprintf(p->name[p->n], sizeof p->name[p->n], "%s", exe[0] ? exe : "?");
  p->count[p->n++] = 1;
}

static void programs_print(const programs *p) {
  for (size_t i = 0; i < p->n; i++) {
    fprintf(stderr, "%s%s", i ? ", " : "", p->name[i]);
    if (p->count[i] > 1) fprintf(stderr, " x%zu", p->count[i]);
  }
  if (p->others) fprintf(stderr, ", %zu others", p->others);
}

/* The paths of the run's traces (each to free). */
typedef struct trace_list {
  char **path;
  size_t n;
} trace_list;

static void list_add(trace_list *l, const char *path) {
  char **grown = realloc(l->path, (l->n + 1) * sizeof *grown);
  char *copy = strdup(path);
  if (!grown || !copy) { /* the whole run's report goes without it */
    free(copy);
    if (grown) l->path = grown;
    return;
  }
  l->path = grown;
  l->path[l->n++] = copy;
}

static void list_free(trace_list *l) {
  for (size_t i = 0; i < l->n; i++) free(l->path[i]);
  free(l->path);
}

/* Says which other processes of the run wrote traces (their files found
 * by `pattern`, added to `traces`), and how many ran untraced. */
static void report_children(const notes *nt, const char *pattern, trace_list *traces_out) {
  enum { NAMED = 5 };
  char names[NAMED][PATH_MAX + 80];
  programs progs = {0};
  size_t traces = 0, untraced = nt->untold;
  for (size_t i = 0, next; i < nt->nkids; i = next) {
    long pid = nt->kids[i].pid;
    int traced = 0; /* told untraced by its parent, it may have traced itself */
    for (next = i; next < nt->nkids && nt->kids[next].pid == pid; next++)
      traced |= nt->kids[next].traced;
    if (!traced) {
      untraced++;
      continue;
    }
    char path[PATH_MAX], exe[64];
    mt__trace_path_expand(pattern, pid, path, sizeof path);
    struct stat ts; /* a child that allocated nothing opened no file */
    if (stat(path, &ts) != 0 || ts.st_size == 0 ||
        trace_owner(path, exe, sizeof exe) != (uint64_t)pid)
      continue;
    if (traces < NAMED) snprintf(names[traces], sizeof names[traces], "%s (%s)", path, exe);
    programs_add(&progs, exe);
    list_add(traces_out, path);
    traces++;
  }
  if (traces) {
    fprintf(stderr, "memtrace: %zu other process%s of the run wrote %s:", traces,
            traces == 1 ? "" : "es", traces == 1 ? "its trace" : "traces");
    for (size_t i = 0; i < traces && i < NAMED; i++)
      fprintf(stderr, "%s %s", i ? "," : "", names[i]);
    if (traces > NAMED) {
      /* past the names, what ran: "bash x13, readlink x5" */
      fprintf(stderr, " and %zu more (", traces - NAMED);
      programs_print(&progs);
      fputc(')', stderr);
    }
    fputc('\n', stderr);
  }
  if (untraced)
    fprintf(stderr, "memtrace: %zu other process%s of the run ran untraced (with -o 'NAME.%%p.ctf' "
                    "each writes a trace of its own)\n",
            untraced, untraced == 1 ? "" : "es");
}

/* Whether the trace at path names a frame only "MODULE+0xOFFSET" (a code
 * in no symbol: a stripped program's). */
static int has_anonymous_frames(const char *path) {
  mt_analysis *a;
  int found = 0;
  if (mt_analysis_load(&a, path, NULL, NULL) == MT_OK)
    for (uint32_t f = 0; f < mt_analysis_function_count(a) && !found; f++) {
      const char *file = mt_analysis_function_file(a, f);
      found = file && file[0] == '/' && mt_cli_anonymous_name(mt_analysis_function_name(a, f), NULL);
    }
  mt_analysis_free(a);
  return found;
}

/* With DEBUGINFOD_URLS set, the anonymous frames of the trace at path get
 * names from debuginfod, now that the program has ended (it never waited
 * for a server): memtrace symbolize, run as a child of its own. */
static void name_frames(const char *path) {
  const char *urls = getenv("DEBUGINFOD_URLS");
  char tools[PATH_MAX];
  if (!urls || !*urls || !has_anonymous_frames(path) ||
      mt_cli_find_companion("memtrace-tools", tools, sizeof tools) != 0)
    return;
  fprintf(stderr, "memtrace: naming frames from debuginfod (%s)...\n", urls);
  char *argv[] = {tools, "symbolize", (char *)path, NULL};
  pid_t pid;
  int status;
  extern char **environ;
  if (posix_spawn(&pid, tools, NULL, NULL, argv, environ) == 0)
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
}

/* The report: where the trace went, the run's other processes, the top
 * sites. */
static void say_where(const notes *nt, const char *pattern, pid_t pid,
                      unsigned long long end_us, const char *command) {
  if (mt__trace_dest_is_socket(pattern)) { /* no file to read; if not tracing, the tracer said why */
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
  /* A wrapper that became the program by exec (a version manager's shim,
   * a launcher script): the trace is the program's, said plainly. */
  char became[64];
  trace_owner(path, became, sizeof became);
  if (command && became[0] && strcmp(became, base_name(command)) != 0)
    fprintf(stderr, "memtrace: %s ran as %s (it replaced itself by exec, as a wrapper script or "
                    "a version manager's shim does): the trace is %s's\n",
            base_name(command), became, became);
  trace_list tree = {0};
  report_children(nt, pattern, &tree);
  name_frames(path);
  for (size_t i = 0; i < tree.n; i++) name_frames(tree.path[i]);
  report(path, 5, stopped(nt, pid), end_us);
  /* A process tree: every process's trace ranked as one, the answer for
   * a wrapper (time, a shell running the program as a child, make) that
   * allocated nothing itself as much as for a server and its workers. */
  if (tree.n) {
    list_add(&tree, path);
    mt_cli_run_tree_report(tree.path, tree.n, pattern, 5);
  }
  list_free(&tree);
}

void mt_cli_run_report(int notes_fd, const char *pattern, pid_t pid, unsigned long long end_us,
                       const char *command) {
  notes nt;
  read_notes(notes_fd, pid, &nt);
  say_where(&nt, pattern, pid, end_us, command);
  free(nt.kids);
  free(nt.stops);
}
