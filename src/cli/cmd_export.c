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

#include "analysis_cli.h"
#include "pprof.h"

static const char usage[] =
    "usage: memtrace export [--format pprof] [OPTIONS] TRACE -o FILE\n"
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
    "Options:\n"
    "  --format FORMAT        pprof (the only format, and the default)\n"
    "  -o, --output FILE      where to write; '-' for standard output. The file\n"
    "                         is written as FILE.tmp and renamed when complete\n"
    "  --merge-sources        one sample per stack; by default allocations of\n"
    "                         each source are separate samples labelled\n"
    "                         source=minor|major|external\n"
    "\n" MT_CLI_FILTER_HELP
    "The filters choose the objects counted; --live-at, --live-at-peak and\n"
    "--live-at-end choose the snapshot for inuse_* rather than filtering alloc_*.\n";

static const char *const source_names[] = {"minor", "major", "external"};

typedef struct exporter {
  const mt_analysis *a;
  pprof *p;
  mt_tally *alloc, *inuse; /* per stack, one source (or all) at a time */
  uint8_t *stack_used;     /* stacks some sample goes through           */
  uint64_t *locs;          /* one sample's location ids                 */
  int empty_used;           /* a sample has no backtrace                 */
} exporter;

static int64_t round_est(double v) {
  /* Estimates are finite and non-negative; clamp rather than overflow. */
  if (!(v > 0)) return 0;
  if (v >= 9.2e18) return INT64_MAX;
  return (int64_t)llround(v);
}

/* Location id of a code, and of the stand-in for an empty backtrace. */
static uint64_t code_loc(uint32_t code) { return (uint64_t)code + 1; }
static uint64_t empty_loc(const mt_analysis *a) { return mt_analysis_code_count(a) + 1; }

/* Emits one sample per stack allocated at (by the tallies filled in). */
static void emit_samples(exporter *e, int source) {
  const mt_analysis *a = e->a;
  size_t nstacks = mt_analysis_stack_count(a);
  pprof_label label = {0, 0, 0, 0};
  for (size_t s = 0; s < nstacks; s++) {
    if (!e->alloc[s].objects) continue;
    /* Interned at the first sample, so a source with none adds no string. */
    if (source >= 0 && !label.key) {
      label.key = pprof_string(e->p, "source");
      label.str = pprof_string(e->p, source_names[source]);
    }
    size_t n = 0;
    /* Walking up from the stack gives the leaf first, pprof's order. */
    for (uint32_t x = (uint32_t)s; x; x = mt_analysis_stack_parent(a, x))
      e->locs[n++] = code_loc(mt_analysis_stack_code(a, x));
    if (n == 0) {
      e->locs[n++] = empty_loc(a);
      e->empty_used = 1;
    }
    int64_t v[4] = {
        round_est(mt_estimate_objects(a, &e->alloc[s]).value),
        round_est(mt_estimate_bytes(a, &e->alloc[s]).value),
        e->inuse[s].objects ? round_est(mt_estimate_objects(a, &e->inuse[s]).value) : 0,
        e->inuse[s].objects ? round_est(mt_estimate_bytes(a, &e->inuse[s]).value) : 0};
    pprof_sample(e->p, e->locs, n, v, 4, &label, source >= 0);
    e->stack_used[s] = 1;
  }
}

/* Locations and functions for every code (and function) some sample uses. */
static void emit_locations(exporter *e, const char *exe) {
  const mt_analysis *a = e->a;
  size_t nstacks = mt_analysis_stack_count(a), ncodes = mt_analysis_code_count(a),
         nfn = mt_analysis_function_count(a);
  uint8_t *code_used = calloc(ncodes + 1, 1), *fn_used = calloc(nfn + 1, 1);
  pprof_line *lines = NULL;
  size_t lines_cap = 0;
  if (!code_used || !fn_used) goto nomem;
  /* A parent's id is smaller than its children's: one downward sweep marks
   * every stack on the path of a used one. */
  for (size_t s = nstacks; s-- > 1;) {
    if (!e->stack_used[s]) continue;
    e->stack_used[mt_analysis_stack_parent(a, (uint32_t)s)] = 1;
    code_used[mt_analysis_stack_code(a, (uint32_t)s)] = 1;
  }

  /* One mapping standing for the program: it names the executable, and its
   * has_* flags tell pprof the locations are already symbolized, so it does
   * not go looking for the binary. It covers every address. */
  pprof_mapping m = {1, 0, UINT64_MAX, 0, pprof_string(e->p, exe), 0, 1, 1, 1, 1};
  pprof_mapping_add(e->p, &m);

  for (size_t c = 0; c < ncodes; c++) {
    if (!code_used[c]) continue;
    size_t nf;
    const mt_frame *fr = mt_analysis_code_frames(a, (uint32_t)c, &nf);
    if (nf > lines_cap) {
      free(lines);
      lines_cap = nf * 2;
      if (!(lines = malloc(lines_cap * sizeof *lines))) goto nomem;
    }
    /* The analysis lists a code's locations caller first; profile.proto
     * wants the innermost inlined function first and the caller last. */
    for (size_t i = 0; i < nf; i++) {
      const mt_frame *f = &fr[nf - 1 - i];
      fn_used[f->function] = 1;
      /* memtrace's start_char counts from 0; pprof's columns from 1, with 0
       * meaning unknown. */
      lines[i] = (pprof_line){(uint64_t)f->function + 1, f->line, (int64_t)f->start_char + 1};
    }
    /* A code the trace never described keeps its address alone: pprof
     * shows it as such, as memtrace shows it as $CODE. */
    pprof_location(e->p, code_loc((uint32_t)c), 1, mt_analysis_code_value(a, (uint32_t)c),
                   lines, nf);
  }
  if (e->empty_used) {
    pprof_line l = {nfn + 1, 0, 0};
    pprof_location(e->p, empty_loc(a), 1, 0, &l, 1);
    pprof_function(e->p, nfn + 1, "(no backtrace)", "(no backtrace)", "", 0);
  }
  for (size_t f = 0; f < nfn; f++) {
    if (!fn_used[f]) continue;
    const char *name = mt_analysis_function_name(a, (uint32_t)f);
    pprof_function(e->p, f + 1, name, name, mt_analysis_function_file(a, (uint32_t)f), 0);
  }
  free(code_used);
  free(fn_used);
  free(lines);
  return;
nomem:
  free(code_used);
  free(fn_used);
  free(lines);
  fprintf(stderr, "memtrace export: out of memory\n");
  exit(1);
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

/* Completes the output, or removes it and exits 1 naming the file. */
static void out_close(output *o, int err) {
  if (!err && o->tmp && fsync(o->fd) != 0 && errno != EINVAL) err = errno;
  if (o->fd != STDOUT_FILENO && close(o->fd) != 0 && !err) err = errno;
  if (!err && o->tmp) {
    guard_tmp(NULL); /* from here on FILE.tmp may be FILE */
    if (rename(o->tmp, o->path) != 0) err = errno;
  }
  if (err && o->tmp) unlink(o->tmp);
  guard_tmp(NULL);
  if (err) {
    fprintf(stderr, "memtrace: %s: writing the profile failed: %s\n",
            strcmp(o->path, "-") ? o->path : "standard output", strerror(err));
    free(o->tmp);
    exit(1);
  }
  free(o->tmp);
}

static int run(int argc, char **argv) {
  const mt_command *cmd = &mt_cmd_export;
  const char *path = NULL, *outpath = NULL;
  int merge = 0;
  mt_filter f;
  mt_filter_init(&f);
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    if (mt_cli_is_help(o)) return mt_cli_help(cmd);
    if (mt_cli_filter_option(cmd, argc, argv, &i, &f)) continue;
    if (strcmp(o, "--format") == 0 || strncmp(o, "--format=", 9) == 0) {
      const char *v = o[8] == '=' ? o + 9 : NULL;
      if (!v && ++i >= argc) mt_cli_usage_error(cmd, "--format needs a value");
      if (!v) v = argv[i];
      if (strcmp(v, "pprof") != 0)
        mt_cli_usage_error(cmd, "unknown format '%s' (the one format is pprof)", v);
    } else if (strcmp(o, "-o") == 0 || strcmp(o, "--output") == 0) {
      if (++i >= argc) mt_cli_usage_error(cmd, "%s needs a FILE", o);
      outpath = argv[i];
    } else if (strncmp(o, "--output=", 9) == 0) {
      outpath = o + 9;
    } else if (strcmp(o, "--merge-sources") == 0) {
      merge = 1;
    } else if (o[0] == '-' && o[1]) {
      mt_cli_usage_error(cmd, "unknown option '%s'", o);
    } else if (path) {
      mt_cli_usage_error(cmd, "unexpected argument '%s'", o);
    } else {
      path = o;
    }
  }
  if (!path) mt_cli_usage_error(cmd, "missing TRACE");
  if (!outpath || !outpath[0]) mt_cli_usage_error(cmd, "missing -o FILE");
  if (strcmp(outpath, "-") == 0 && isatty(STDOUT_FILENO))
    mt_cli_usage_error(cmd, "not writing a gzip'd profile to a terminal; use -o FILE");
  struct stat sin, sout;
  if (stat(path, &sin) == 0 && stat(outpath, &sout) == 0 && sin.st_dev == sout.st_dev &&
      sin.st_ino == sout.st_ino)
    mt_cli_usage_error(cmd, "the output '%s' is the trace itself", outpath);

  /* The input is read whole before the output is created: a bad trace
   * leaves no file behind. */
  mt_analysis *a = mt_cli_load(path);
  const mt_trace_info *info = mt_analysis_info(a);

  /* alloc_* counts every object the filters keep (up to the snapshot);
   * inuse_* those of them alive at the snapshot. */
  mt_filter fa = f, fi = f;
  uint64_t snapshot = mt_analysis_duration(a);
  fa.live = MT_LIVE_ANY;
  if (f.live == MT_LIVE_AT || f.live == MT_LIVE_AT_PEAK) {
    if (f.live == MT_LIVE_AT_PEAK) mt_analysis_peak(a, &snapshot, NULL);
    else snapshot = f.live_at;
    /* Allocated at or before the snapshot: [.., snapshot + 1). */
    if (snapshot < UINT64_MAX && fa.alloc_to > snapshot + 1) fa.alloc_to = snapshot + 1;
  } else {
    fi.live = MT_LIVE_AT_END;
  }

  char why[512];
  if (pprof_load_zlib(why, sizeof why) != 0) {
    fprintf(stderr, "memtrace export: %s\n", why);
    return 1;
  }
  exporter e = {0};
  e.a = a;
  size_t nstacks = mt_analysis_stack_count(a);
  size_t depth = 1;
  for (size_t s = 0; s < nstacks; s++)
    if (mt_analysis_stack_depth(a, (uint32_t)s) > depth)
      depth = mt_analysis_stack_depth(a, (uint32_t)s);
  e.alloc = malloc(nstacks * sizeof *e.alloc);
  e.inuse = malloc(nstacks * sizeof *e.inuse);
  e.stack_used = calloc(nstacks, 1);
  e.locs = malloc(depth * sizeof *e.locs);
  if (!e.alloc || !e.inuse || !e.stack_used || !e.locs) {
    fprintf(stderr, "memtrace export: out of memory\n");
    return 1;
  }

  output out;
  out_open(&out, outpath);
  e.p = pprof_open(out.fd, -1);
  if (!e.p) out_close(&out, ENOMEM);

  pprof_sample_type(e.p, "alloc_objects", "count");
  pprof_sample_type(e.p, "alloc_space", "bytes");
  pprof_sample_type(e.p, "inuse_objects", "count");
  pprof_sample_type(e.p, "inuse_space", "bytes");
  pprof_scalar(e.p, PPROF_DEFAULT_SAMPLE_TYPE, pprof_string(e.p, "alloc_space"));
  pprof_period_type(e.p, "space", "bytes");
  double word_bytes = mt_analysis_word_bytes(a);
  pprof_scalar(e.p, PPROF_PERIOD, round_est(word_bytes / info->sample_rate));
  pprof_scalar(e.p, PPROF_TIME_NANOS, (int64_t)(info->start_time * 1000));
  /* A snapshot past the end sees what the end sees: the profile ends with
   * the trace. */
  uint64_t covered = snapshot < mt_analysis_duration(a) ? snapshot : mt_analysis_duration(a);
  pprof_scalar(e.p, PPROF_DURATION_NANOS, (int64_t)(covered * 1000));

  /* One pass per source (or one for all) so each sample has one source. */
  unsigned sources = f.sources ? f.sources : 7u;
  for (int s = merge ? -1 : 0; s < (merge ? 0 : 3); s++) {
    if (s >= 0 && !(sources & (1u << s))) continue;
    if (s >= 0) fa.sources = fi.sources = 1u << s;
    if (mt_analysis_tally_stacks(a, &fa, e.alloc, NULL) != MT_OK ||
        mt_analysis_tally_stacks(a, &fi, e.inuse, NULL) != MT_OK) {
      pprof_free(e.p);
      out_close(&out, ENOMEM);
    }
    emit_samples(&e, s);
  }
  emit_locations(&e, info->executable_name);

  char buf[512];
  snprintf(buf, sizeof buf, "memtrace trace %s, exported by memtrace-c %s", path, mt_version());
  pprof_comment(e.p, buf);
  snprintf(buf, sizeof buf, "executable: %s", info->executable_name);
  pprof_comment(e.p, buf);
  snprintf(buf, sizeof buf, "host: %s", info->host_name);
  pprof_comment(e.p, buf);
  snprintf(buf, sizeof buf, "pid: %" PRIu64, info->pid);
  pprof_comment(e.p, buf);
  snprintf(buf, sizeof buf, "sample rate: %g per word (one sample per %.0f bytes)",
           info->sample_rate, word_bytes / info->sample_rate);
  pprof_comment(e.p, buf);
  if (f.live == MT_LIVE_AT_PEAK)
    snprintf(buf, sizeof buf, "inuse: alive at the live heap's peak, %.6f s", (double)snapshot / 1e6);
  else if (f.live == MT_LIVE_AT)
    snprintf(buf, sizeof buf, "inuse: alive at %.6f s", (double)snapshot / 1e6);
  else
    snprintf(buf, sizeof buf, "inuse: never collected (alive at the trace's end, %.6f s)",
             (double)snapshot / 1e6);
  pprof_comment(e.p, buf);

  int err = pprof_finish(e.p);
  pprof_free(e.p);
  out_close(&out, err);
  free(e.alloc);
  free(e.inuse);
  free(e.stack_used);
  free(e.locs);
  mt_analysis_free(a);
  return 0;
}

const mt_command mt_cmd_export = {"export", "write a trace as a pprof heap profile (.pb.gz)",
                                  usage, run};
