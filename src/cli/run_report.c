/* memtrace run's closing report (run_report.h): where the trace went, the
 * run's other processes, the top allocation sites with their main callers
 * (and the program's own function, under a language runtime), the live
 * heap's peak. */
#include "run_report.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis_cli.h"
#include "tables.h"
#include "trace_file.h"

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
/* The part of a path after its last '/' (the whole path if it has none,
 * or ends in one). */
static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash && slash[1] ? slash + 1 : path;
}

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

/* The key with the most samples among those added, the lowest key among
 * equals: a tally of keys (their sums in the caller's array, one slot per
 * key). */
typedef struct heaviest {
  mt__u64map index; /* key -> its slot of sums */
  double *sums;
  size_t n;
  int full;     /* out of memory: nothing more is counted */
  uint64_t key; /* the heaviest so far... */
  double w;     /* ...and its samples (0: none yet) */
} heaviest;

static void heaviest_add(heaviest *h, uint64_t key, double w) {
  int fresh;
  uint32_t ix = h->full ? UINT32_MAX : mt__u64map_intern(&h->index, key, (uint32_t)h->n, &fresh);
  if (ix == UINT32_MAX) {
    h->full = 1;
    return;
  }
  if (fresh) h->sums[h->n++] = 0;
  double sum = h->sums[ix] += w;
  if (sum > h->w || (sum == h->w && key < h->key)) h->key = key, h->w = sum;
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
    heaviest h = {.sums = sums};
    for (size_t i = 0; i < live; i++)
      if (w[i].n > level) heaviest_add(&h, w[i].key[level], w[i].samples);
    mt__u64map_free(&h.index);
    uint64_t best = h.key;
    double best_w = h.w;
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

/* ---- The program's own function, under a language runtime ----
 *
 * A program run by an interpreter or a JIT compiler (CPython, node) has
 * every site in the runtime's C code (_PyObject_Malloc, node::Buffer), and
 * its main callers too. The program's own functions are the code the
 * runtime compiled and named in its perf map or jitdump, by its naming
 * conventions: CPython's "py::", V8's "JS:" and its older kinds. The
 * innermost of them in a stack (past those of the runtime's own library)
 * is the program's function that allocated: under each site, the
 * heaviest one, with its share of the site. */
static int compiled_by_runtime(const char *name) {
  static const char *const kinds[] = {"py::", "JS:", "LazyCompile:", "Function:", "Script:", "Eval:"};
  for (size_t i = 0; name && i < sizeof kinds / sizeof *kinds; i++)
    if (strncmp(name, kinds[i], strlen(kinds[i])) == 0) return 1;
  return 0;
}

/* Whether a function so named is the runtime's own, written in the
 * program's language: node's built-in modules ("node:buffer",
 * "node:internal/..."), CPython's frozen import machinery ("<frozen
 * importlib._bootstrap>"). The program's function is the innermost one
 * that is not, when there is one. */
static int runtime_library(const char *file) {
  return file && (strncmp(file, "node:", 5) == 0 || strncmp(file, "<frozen ", 8) == 0);
}

/* The innermost such function of stack s (past the runtime's library, if
 * the stack has another), or UINT32_MAX. */
static uint32_t program_function(const mt_analysis *a, uint32_t s) {
  uint32_t library = UINT32_MAX;
  for (; s != 0; s = mt_analysis_stack_parent(a, s)) {
    size_t nf;
    const mt_frame *fr = mt_analysis_code_frames(a, mt_analysis_stack_code(a, s), &nf);
    for (; nf > 0; nf--) {
      uint32_t f = fr[nf - 1].function;
      if (!compiled_by_runtime(mt_analysis_function_name(a, f))) continue;
      if (!runtime_library(mt_analysis_function_file(a, f))) return f;
      if (library == UINT32_MAX) library = f;
    }
  }
  return library;
}

static void print_program_function(const mt_analysis *a, const mt_tally *per,
                                   const uint32_t *stacks, size_t ns) {
  heaviest h = {.sums = malloc((ns ? ns : 1) * sizeof *h.sums)};
  double site = 0;
  for (size_t i = 0; h.sums && i < ns; i++) {
    double w = (double)per[stacks[i]].samples;
    site += w;
    uint32_t f = program_function(a, stacks[i]);
    if (f != UINT32_MAX) heaviest_add(&h, f, w);
  }
  mt__u64map_free(&h.index);
  free(h.sums);
  uint32_t best = (uint32_t)h.key;
  double best_w = h.w;
  if (best_w <= 0 || site <= 0) return;
  const char *file = mt_analysis_function_file(a, best);
  fprintf(stderr, "              in ");
  print_caller(a, best, 48);
  if (file && *file) fprintf(stderr, " [%s]", base_name(file));
  if (best_w / site < 0.995) fprintf(stderr, " (%.0f%%)", 100 * best_w / site);
  fputc('\n', stderr);
}

/* A runtime that can name the program's functions for profilers, but
 * named none in this trace (no stack went through one): how to ask it,
 * for the interpreters whose names this report reads. The executable's
 * base name tells which (python3.12, node). */
static void runtime_hint(const mt_analysis *a, const mt_tally *per, size_t ns) {
  const char *exe = mt_analysis_info(a)->executable_name;
  if (!exe) return;
  exe = base_name(exe);
  int python = strncmp(exe, "python3", 7) == 0, node = strcmp(exe, "node") == 0 ||
                                                       strcmp(exe, "nodejs") == 0;
  if (!python && !node) return;
  for (uint32_t s = 0; s < ns; s++)
    if (per[s].objects && program_function(a, s) != UINT32_MAX) return;
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
    if (exe) snprintf(exe, n, "%s", base_name(in->executable_name ? in->executable_name : ""));
  }
  mt_reader_close(r);
  return pid;
}

static uint64_t trace_pid(const char *path) { return trace_owner(path, NULL, 0); }

/* The trace's largest allocation sites, by estimated bytes, each with its
 * main callers. 0 when it holds no sampled allocation (said so), 1 else. */
static int report(const char *path, int top) {
  int sampled = 1;
  mt_analysis *a;
  if (mt_analysis_load(&a, path, NULL, NULL) != MT_OK) {
    fprintf(stderr, "memtrace: cannot read the trace: %s\n", mt_analysis_error(a));
    mt_analysis_free(a);
    return 1;
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
    sampled = 0;
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
    print_program_function(a, per, stacks, n);
  }
  runtime_hint(a, per, ns);
  heap_line(a, per, path);
  fprintf(stderr, "memtrace: explore it with: memtrace view %s (or hotspots, flamegraph, top)\n",
          path);
out:
  free(per);
  free(sites);
  free(stacks);
  free(keys);
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
    else if (pid > 0 && pid != main_pid) /* "s": a traced process no parent told of */
      out->kids[out->nkids++] = (child){pid, line[0] != 'u'};
  }
  free(text);
  if (out->kids) qsort(out->kids, out->nkids, sizeof *out->kids, by_pid);
}

/* Says which other processes of the run wrote traces (their files found
 * by `pattern`), and how many ran untraced. The largest of those traces
 * into largest (n bytes; "" if none), its executable's name into exe. */
static void report_children(const notes *nt, const char *pattern, char *largest, size_t n,
                            char *largest_exe, size_t exe_n) {
  enum { NAMED = 5 };
  char names[NAMED][PATH_MAX + 80];
  size_t traces = 0, untraced = nt->untold;
  off_t most = 0;
  largest[0] = 0;
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
    if (ts.st_size > most) {
      most = ts.st_size;
      snprintf(largest, n, "%s", path);
      snprintf(largest_exe, exe_n, "%s", exe);
    }
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
  char largest[PATH_MAX], exe[64];
  report_children(nt, pattern, largest, sizeof largest, exe, sizeof exe);
  /* A wrapper (time, a shell running the program as a child, make) that
   * allocated nothing sampled: the report on the run's largest trace,
   * most likely the program meant. */
  if (!report(path, 5) && largest[0]) {
    fprintf(stderr, "memtrace: the run's largest other trace, %s (%s):\n", largest, exe);
    report(largest, 5);
  }
}

void mt_cli_run_report(int notes_fd, const char *pattern, pid_t pid) {
  notes nt;
  read_notes(notes_fd, pid, &nt);
  say_where(&nt, pattern, pid);
  free(nt.kids);
}
