/* memtrace export: a trace as a pprof heap profile, for pprof and the
 * continuous-profiling services that take pprof (Pyroscope, Parca,
 * Grafana), so that traces of many machines can be aggregated. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "memtrace/profile.h"
#include "gzip_out.h"
#include "pprof.h"

static const char usage[] =
    "usage: memtrace export [--format pprof] [OPTIONS] TRACE... -o FILE\n"
    "\n"
    "Writes the trace as a gzip-compressed pprof heap profile (FILE.pb.gz),\n"
    "readable by `pprof` and by profiling services that accept pprof. Each\n"
    "sample is one allocation stack (and source), with four values, estimated\n"
    "for the whole program from the trace's sample (docs/estimators.md) and\n"
    "rounded to integers:\n"
    "  alloc_objects/count  allocations made at the stack\n"
    "  alloc_space/bytes    bytes they allocated (the default sample type)\n"
    "  inuse_objects/count  of those, the ones still alive at the snapshot\n"
    "  inuse_space/bytes    and their bytes\n"
    "The snapshot is the end of the trace (objects never collected), or the\n"
    "time --live-at T or --live-at-peak names; then, as in a heap profile\n"
    "taken at that time, alloc_* count only allocations made up to it, and\n"
    "duration_nanos ends there. The period is the mean number of bytes\n"
    "between samples (word size / sample rate). Locations are the trace's\n"
    "location codes (address = the code), with one line per inlined function,\n"
    "innermost first; an allocation with no backtrace gets the location\n"
    "\"(no backtrace)\". Comments give the executable, host, pid, sample rate\n"
    "and snapshot.\n"
    "\n"
    "Several traces (files, or directories of .ctf files: a process tree, a\n"
    "fleet) make one profile, as pprof's own merge of their profiles would:\n"
    "each trace's samples carry its estimates (each at its own rate) and the\n"
    "labels pid and executable; each trace has its own mapping, and the\n"
    "period is the largest of theirs.\n"
    "\n"
    "Without filters, a trace of nearly all distinct stacks (about a sample\n"
    "per allocation) is read twice rather than held in memory: it must not\n"
    "change while the export runs.\n"
    "\n"
    "Options:\n"
    "  --format FORMAT        pprof (the only format, and the default)\n"
    "  -o, --output FILE      where to write; '-' for standard output. The file\n"
    "                         is written as FILE.tmp and renamed when complete\n"
    "  --merge-sources        one sample per stack; by default allocations of\n"
    "                         each source are separate samples labelled\n"
    "                         source=minor|major|external\n"
    "\n" MT_FILTER_OPTIONS_HELP
    "The filters choose the objects counted; --live-at, --live-at-peak and\n"
    "--live-at-end choose the snapshot for inuse_* rather than filtering alloc_*.\n";

static const char *const source_names[] = {"minor", "major", "external"};

/* The export of one or several traces into one profile. Each trace has
 * its own ranges of location and function ids (its codes and functions
 * numbered from its base, then its stand-in for an empty backtrace), and
 * its own mapping, which names its executable. */
typedef struct exporter {
  pprof *p;
  const mt_analysis *a; /* the trace being written */
  uint8_t *code_used;   /* per code of a: some sample goes through it */
  int empty_used;       /* a sample of a has no backtrace */
  uint64_t loc_base, fn_base, mapping;
  int64_t label_key, label_str[3];
  pprof_label process[2]; /* the trace's pid and executable, or none */
  size_t nprocess;
  int label_set[4]; /* the trace's samples' labels by source + 1, or NO_SET */
} exporter;

enum { NO_SET = -2 }; /* a label set not made yet (-1: no labels) */

/* Location id of a code of the current trace (code ids follow first
 * appearance in the trace, so the outer frames every stack shares get the
 * shortest varints), and of its stand-in for an empty backtrace. */
static uint64_t code_loc(const exporter *e, uint32_t code) { return e->loc_base + code + 1; }
static uint64_t empty_loc(const exporter *e) {
  return e->loc_base + mt_analysis_code_count(e->a) + 1;
}

static int on_sample(void *ctx, const uint32_t *codes, size_t n, size_t shared, int source,
                     const int64_t values[MT_PROFILE_VALUES]) {
  exporter *e = ctx;
  uint32_t empty = (uint32_t)mt_analysis_code_count(e->a);
  if (n == 0) { /* the stand-in location: empty_loc, as a code past the last */
    codes = &empty;
    n = 1;
    shared = 0;
    e->empty_used = 1;
  }
  int *set = &e->label_set[source + 1];
  if (*set == NO_SET) {
    pprof_label labels[3];
    size_t nl = 0;
    if (source >= 0) {
      /* interned at the first sample of a source, so a source with none
       * adds no string */
      if (!e->label_key) e->label_key = pprof_string(e->p, "source");
      if (!e->label_str[source]) e->label_str[source] = pprof_string(e->p, source_names[source]);
      labels[nl++] = (pprof_label){e->label_key, e->label_str[source], 0, 0};
    }
    for (size_t i = 0; i < e->nprocess; i++) labels[nl++] = e->process[i];
    *set = nl ? pprof_label_set(e->p, labels, nl) : -1;
  }
  /* the frames it shares with the last sample were marked with it */
  shared = pprof_sample(e->p, codes, n, shared, code_loc(e, 0), values, MT_PROFILE_VALUES, *set);
  for (size_t i = shared; i < n; i++)
    if (codes[i] < empty) e->code_used[codes[i]] = 1;
  return 0;
}

/* Locations and functions for every code (and function) the current
 * trace's samples use, and its mapping. */
static void emit_locations(exporter *e) {
  const mt_analysis *a = e->a;
  size_t ncodes = mt_analysis_code_count(a), nfn = mt_analysis_function_count(a);
  uint8_t *fn_used = calloc(nfn + 1, 1);
  pprof_line *lines = NULL;
  size_t lines_cap = 0;
  if (!fn_used) mt_cli_nomem(&mt_cmd_export);
  /* One mapping standing for the program: it names the executable, and its
   * has_* flags tell pprof the locations are already symbolized, so it does
   * not go looking for the binary. It covers every address. */
  pprof_mapping m = {e->mapping, 0, UINT64_MAX, 0,
                     pprof_string(e->p, mt_analysis_info(a)->executable_name), 0, 1, 1, 1, 1};
  pprof_mapping_add(e->p, &m);
  for (size_t c = 0; c < ncodes; c++) {
    if (!e->code_used[c]) continue;
    size_t nf;
    const mt_frame *fr = mt_analysis_code_frames(a, (uint32_t)c, &nf);
    if (nf > lines_cap) {
      lines_cap = nf * 2;
      lines = mt_cli_xrealloc(&mt_cmd_export, lines, lines_cap * sizeof *lines);
    }
    /* The analysis lists a code's locations caller first; profile.proto
     * wants the innermost inlined function first and the caller last. */
    for (size_t i = 0; i < nf; i++) {
      const mt_frame *f = &fr[nf - 1 - i];
      fn_used[f->function] = 1;
      /* memtrace's start_char counts from 0; pprof's columns from 1, with 0
       * meaning unknown. */
      lines[i] = (pprof_line){e->fn_base + f->function + 1, f->line, (int64_t)f->start_char + 1};
    }
    /* A code the trace never described keeps its address alone: pprof
     * shows it as such, as memtrace shows it as $CODE. */
    pprof_location(e->p, code_loc(e, (uint32_t)c), e->mapping,
                   mt_analysis_code_value(a, (uint32_t)c), lines, nf);
  }
  if (e->empty_used) {
    pprof_line l = {e->fn_base + nfn + 1, 0, 0};
    pprof_location(e->p, empty_loc(e), e->mapping, 0, &l, 1);
    pprof_function(e->p, e->fn_base + nfn + 1, "(no backtrace)", "(no backtrace)", "", 0);
  }
  for (size_t f = 0; f < nfn; f++) {
    if (!fn_used[f]) continue;
    const char *name = mt_analysis_function_name(a, (uint32_t)f);
    pprof_function(e->p, e->fn_base + f + 1, name, name,
                   mt_analysis_function_file(a, (uint32_t)f), 0);
  }
  free(fn_used);
  free(lines);
}

/* The output: FILE.tmp renamed over FILE once complete, so a failure never
 * leaves a partial profile; devices and pipes (/dev/stdout, a FIFO) are
 * written in place, since renaming over them would replace them. */
typedef struct output {
  const char *path;
  char *tmp; /* NULL when writing in place */
  int fd;
} output;

/* FILE.tmp while it exists, for the signal handler: an interrupted export
 * (^C, a kill) removes it too. */
static const char *volatile tmp_to_remove;

static void remove_tmp_and_die(int sig) {
  const char *t = tmp_to_remove;
  if (t) unlink(t); /* async-signal-safe */
  signal(sig, SIG_DFL);
  raise(sig);
}

static void guard_tmp(const char *tmp) {
  tmp_to_remove = tmp;
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
    struct sigaction old, sa;
    /* A signal ignored by whoever started us (nohup) stays ignored. */
    if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN) continue;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = tmp ? remove_tmp_and_die : SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(sigs[i], &sa, NULL);
  }
}

static void out_open(output *o, const char *path) {
  o->path = path;
  o->tmp = NULL;
  if (strcmp(path, "-") == 0) {
    o->fd = STDOUT_FILENO;
    return;
  }
  struct stat st;
  int in_place = stat(path, &st) == 0 && !S_ISREG(st.st_mode);
  const char *target = path;
  if (!in_place) {
    size_t n = strlen(path);
    if (!(o->tmp = malloc(n + 5))) {
      fprintf(stderr, "memtrace export: out of memory\n");
      exit(1);
    }
    memcpy(o->tmp, path, n);
    memcpy(o->tmp + n, ".tmp", 5);
    target = o->tmp;
  }
  if (o->tmp) guard_tmp(o->tmp);
  o->fd = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (o->fd < 0) {
    guard_tmp(NULL);
    fprintf(stderr, "memtrace: %s: cannot create: %s\n", path, strerror(errno));
    free(o->tmp);
    exit(1);
  }
}

/* Completes the output, or removes it and exits 1 naming the file, or
 * saying `why` (the profile failed before it was written). */
static void out_end(output *o, int err, const char *why) {
  if (!err && o->tmp && fsync(o->fd) != 0 && errno != EINVAL) err = errno;
  if (o->fd != STDOUT_FILENO && close(o->fd) != 0 && !err) err = errno;
  if (!err && o->tmp) {
    guard_tmp(NULL); /* from here on FILE.tmp may be FILE */
    if (rename(o->tmp, o->path) != 0) err = errno;
  }
  if (err && o->tmp) unlink(o->tmp);
  guard_tmp(NULL);
  free(o->tmp);
  if (!err) return;
  if (why)
    fprintf(stderr, "memtrace export: %s\n", why);
  else
    fprintf(stderr, "memtrace: %s: writing the profile failed: %s\n",
            strcmp(o->path, "-") ? o->path : "standard output", strerror(err));
  exit(1);
}

static void out_close(output *o, int err) { out_end(o, err, NULL); }

static const char *inuse_text(char *buf, size_t n, const mt_profile_info *pi, int many) {
  if (pi->snapshot_kind == MT_LIVE_AT_PEAK && many)
    snprintf(buf, n, "inuse: alive at each trace's live heap's peak");
  else if (pi->snapshot_kind == MT_LIVE_AT_PEAK)
    snprintf(buf, n, "inuse: alive at the live heap's peak, %.6f s", (double)pi->snapshot / 1e6);
  else if (pi->snapshot_kind == MT_LIVE_AT)
    snprintf(buf, n, "inuse: alive at %.6f s%s", (double)pi->snapshot / 1e6,
             many ? " into each trace" : "");
  else if (many)
    snprintf(buf, n, "inuse: never collected (alive at each trace's end)");
  else
    snprintf(buf, n, "inuse: never collected (alive at the trace's end, %.6f s)",
             (double)pi->snapshot / 1e6);
  return buf;
}

/* Comments: the trace (its executable, host, pid, rate), or each trace of
 * several on a line of its own; then the snapshot. */
static void comments(pprof *p, const mt_cli_trace_set *t, const mt_profile_info *pi) {
  char buf[1024];
  if (t->n == 1) {
    const mt_trace_info *info = mt_analysis_info(t->as[0]);
    snprintf(buf, sizeof buf, "memtrace trace %s, exported by memtrace-c %s", t->paths[0],
             mt_version());
    pprof_comment(p, buf);
    snprintf(buf, sizeof buf, "executable: %s", info->executable_name);
    pprof_comment(p, buf);
    snprintf(buf, sizeof buf, "host: %s", info->host_name);
    pprof_comment(p, buf);
    snprintf(buf, sizeof buf, "pid: %" PRIu64, info->pid);
    pprof_comment(p, buf);
    snprintf(buf, sizeof buf, "sample rate: %g per word (one sample per %.0f bytes)",
             info->sample_rate, pi->period);
    pprof_comment(p, buf);
  } else {
    snprintf(buf, sizeof buf, "memtrace traces (%zu), exported by memtrace-c %s", t->n,
             mt_version());
    pprof_comment(p, buf);
    for (size_t k = 0; k < t->n; k++) {
      const mt_trace_info *info = mt_analysis_info(t->as[k]);
      snprintf(buf, sizeof buf,
               "trace %s: executable %s, host %s, pid %" PRIu64 ", sample rate %g per word",
               t->paths[k], info->executable_name, info->host_name, info->pid,
               info->sample_rate);
      pprof_comment(p, buf);
    }
  }
  pprof_comment(p, inuse_text(buf, sizeof buf, pi, t->n > 1));
}

/* The profile's time span over every trace: from the earliest start to
 * the latest snapshot (wall clock); the period the largest of theirs, as
 * pprof's own merge takes it. */
typedef struct span {
  uint64_t start, end; /* microseconds since the epoch */
  double period;
} span;

static void header(pprof *p, const span *sp) {
  pprof_sample_type(p, "alloc_objects", "count");
  pprof_sample_type(p, "alloc_space", "bytes");
  pprof_sample_type(p, "inuse_objects", "count");
  pprof_sample_type(p, "inuse_space", "bytes");
  pprof_scalar(p, PPROF_DEFAULT_SAMPLE_TYPE, pprof_string(p, "alloc_space"));
  pprof_period_type(p, "space", "bytes");
  pprof_scalar(p, PPROF_PERIOD, (int64_t)llround(sp->period));
  pprof_scalar(p, PPROF_TIME_NANOS, (int64_t)(sp->start * 1000));
  pprof_scalar(p, PPROF_DURATION_NANOS, (int64_t)((sp->end - sp->start) * 1000));
}

/* Trace k's samples, locations and functions; widens the span. */
static int export_trace(exporter *e, const mt_cli_trace_set *t, size_t k, const mt_filter *f,
                        int merge, mt_profile_info *pi, span *sp) {
  const mt_analysis *a = t->as[k];
  const mt_trace_info *info = mt_analysis_info(a);
  e->a = a;
  e->empty_used = 0;
  e->mapping = k + 1;
  e->code_used = calloc(mt_analysis_code_count(a) + 1, 1);
  if (!e->code_used) return MT_ERR_NOMEM;
  for (size_t s = 0; s < sizeof e->label_set / sizeof *e->label_set; s++) e->label_set[s] = NO_SET;
  if (t->n > 1) {
    e->process[0] = (pprof_label){pprof_string(e->p, "pid"), 0, (int64_t)info->pid, 0};
    e->process[1] = (pprof_label){pprof_string(e->p, "executable"),
                                  pprof_string(e->p, info->executable_name), 0, 0};
    e->nprocess = 2;
  }
  int rc = mt_profile(a, f, merge, pi, on_sample, e);
  if (rc == MT_OK) emit_locations(e);
  free(e->code_used);
  e->code_used = NULL;
  e->loc_base += mt_analysis_code_count(a) + 1;
  e->fn_base += mt_analysis_function_count(a) + 1;
  uint64_t start = info->start_time, end = start + pi->covered;
  if (k == 0 || start < sp->start) sp->start = start;
  if (k == 0 || end > sp->end) sp->end = end;
  if (pi->period > sp->period) sp->period = pi->period;
  return rc;
}

static int run(int argc, char **argv) {
  const mt_command *cmd = &mt_cmd_export;
  static const char *args[MT_CLI_MAX_TRACES];
  const char *outpath = NULL;
  int format = 0, merge = 0;
  mt_filter f;
  mt_filter_init(&f);
  const mt_option options[] = {
      {"--format", NULL, MT_OPT_CHOICE, &format, "pprof", 0, 0, 0},
      {"-o", "--output", MT_OPT_TEXT, &outpath, NULL, 0, 0, 0},
      {"--merge-sources", NULL, MT_OPT_FLAG, &merge, NULL, 1, 0, 0},
      {NULL, NULL, 0, NULL, NULL, 0, 0, 0}};
  mt_cli_spec spec = {options, &f, args, 1, MT_CLI_MAX_TRACES, "TRACE", 0, 0, NULL};
  size_t nargs = mt_cli_parse(cmd, argc, argv, &spec);
  if (!outpath) mt_cli_usage_error(cmd, "missing -o FILE");
  if (strcmp(outpath, "-") == 0 && isatty(STDOUT_FILENO))
    mt_cli_usage_error(cmd, "not writing a gzip'd profile to a terminal; use -o FILE");
  struct stat sin, sout;
  for (size_t i = 0; i < nargs; i++)
    if (stat(args[i], &sin) == 0 && stat(outpath, &sout) == 0 && sin.st_dev == sout.st_dev &&
        sin.st_ino == sout.st_ino)
      mt_cli_usage_error(cmd, "the output '%s' is the trace itself", outpath);

  char why[2048];
  if (gz_load(why, sizeof why) != 0) { /* said before the load's seconds */
    fprintf(stderr, "memtrace export: %s\n", why);
    return 1;
  }
  /* The input is read whole before the output is created: a bad trace
   * leaves no file behind. */
  mt_cli_trace_set t;
  /* under a filter that selects all, a trace of nearly all distinct stacks
   * is read twice rather than kept (memtrace/analysis.h, MT_KEEP_PROFILE) */
  mt_cli_load_set(cmd, args, nargs, mt_profile_rereads(&f) ? MT_KEEP_PROFILE : MT_KEEP_ALL,
                  NULL, &t);
  mt_cli_warn_unmatched(cmd, &f, (const mt_analysis *const *)t.as, t.n);
  output out;
  out_open(&out, outpath);
  exporter e = {0};
  /* the compressor's fastest level: on a trace of millions of distinct
   * stacks compressing is much of the export's time, and the default level
   * saves little of the file for much more time (docs/benchmarks.md, "The
   * pprof export's compressor") */
  e.p = pprof_open(out.fd, 1);
  if (!e.p) out_close(&out, ENOMEM);
  mt_profile_info pi;
  span sp = {0, 0, 0};
  for (size_t k = 0; k < t.n; k++) {
    if (export_trace(&e, &t, k, &f, merge, &pi, &sp) != MT_OK) {
      pprof_free(e.p);
      /* a trace read again that could not be, or out of memory */
      out_end(&out, pi.error[0] ? EIO : ENOMEM, pi.error[0] ? pi.error : NULL);
    }
  }
  header(e.p, &sp);
  comments(e.p, &t, &pi);
  int err = pprof_finish(e.p);
  pprof_free(e.p);
  out_close(&out, err);
  mt_cli_free_set(&t);
  return 0;
}

const mt_command mt_cmd_export = {"export", "write a trace as a pprof heap profile (.pb.gz)",
                                  usage, run};
