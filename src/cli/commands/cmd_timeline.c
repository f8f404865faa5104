/* memtrace timeline: the estimated live heap over time, its exact peak, and
 * (with filters) the live heap of the objects passing them beside it:
 * mt_timeline_compute (memtrace/stats.h), rendered as a terminal chart,
 * CSV, JSON, or an SVG line chart. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/human.h"
#include "cli.h"
#include "memtrace/stats.h"
#include "output.h"
#include "svg.h"

static const char usage[] =
    "usage: memtrace timeline [OPTIONS] [FILTERS] TRACE...\n"
    "\n"
    "The estimated live heap (bytes) over the trace: a chart with the peak\n"
    "marked, or a CSV table, or an SVG line chart. With filters, the live heap\n"
    "of the objects passing them is drawn beside the whole heap's.\n"
    "\n"
    "Options:\n"
    "  --bins N       time bins (default: the chart's width for the terminal,\n"
    "                 400 for --csv and --svg)\n"
    "  --format table|csv|json\n"
    "                 the chart (default), the bins as CSV, or JSON (docs/json.md)\n"
    "  --csv          --format csv: time_s (the\n"
    "                 bin's end, seconds since the trace start), live_bytes (live\n"
    "                 at that time), min_bytes and max_bytes (the least and most\n"
    "                 live within the bin, whole heap; where bins are finer than\n"
    "                 the trace's stored envelope of 4096 intervals these bound\n"
    "                 the truth), and filtered_bytes with filters\n"
    "  --svg FILE     also write the chart as an SVG line chart to FILE\n"
    "  --height N     rows of the terminal chart (default 12)\n"
    "  --ascii        draw with '#', ':' and '^' instead of Unicode blocks\n"
    "  -h, --help     this help\n"
    "\n" MT_FILTER_OPTIONS_HELP
    "\n"
    "When memtrace run recorded the program's resident memory beside the\n"
    "trace (TRACE.rss), it is drawn too (a line of dots; columns rss_anon_bytes,\n"
    "rss_file_bytes and rss_bytes in CSV): the gap between the estimated heap\n"
    "and what the process holds.\n"
    "\n"
    "Live bytes are live samples / rate x word size. The peak is exact: the\n"
    "most samples ever live at once, and when that was first reached. The\n"
    "terminal width is $COLUMNS (default 80).\n"
    "\n"
    "Several traces (files, or directories of .ctf files: a process tree, a\n"
    "fleet) are lined up by their wall-clock starts and their live heaps\n"
    "added: time 0 is the earliest start, a trace holds nothing outside its\n"
    "span, and the peak is the highest bin end.\n";

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) mt_cli_nomem(&mt_cmd_timeline);
  return p;
}

/* ---- terminal chart ---- */

#define LABEL_WIDTH 10

static void put_at(char *line, size_t cap, size_t at, const char *text) {
  size_t n = strlen(text);
  if (at + n >= cap) return;
  memcpy(line + at, text, n);
}

/* The lines above the chart: what it shows, the peak, the end. */
static void header(mt_out *o, const char *path, const mt_timeline *s, int filtered) {
  char b1[48], b2[48];
  uint64_t dur = s->duration;
  mt_out_printf(o, "memtrace timeline: %s\n", path);
  if (s->ntraces > 1)
    mt_out_printf(o, "  live bytes of %zu traces lined up by their starts, over %s,\n",
                  s->ntraces, mt_human_duration(b2, sizeof b2, (double)dur));
  else
    mt_out_printf(o, "  live bytes (live samples / rate x %g B) over %s,\n",
                  s->sampling.word_bytes, mt_human_duration(b2, sizeof b2, (double)dur));
  mt_out_printf(o, "  %zu bins of %s\n", s->nbins,
                mt_human_duration(b1, sizeof b1, (double)(dur ? dur : 1) / (double)s->nbins));
  mt_out_printf(o, "  peak %s at %.6f s (%s)\n", mt_human_bytes(b1, sizeof b1, s->peak_bytes.value),
                (double)s->peak_time / 1e6, s->peak_exact ? "exact" : "at bin ends");
  mt_out_printf(o, "  at the end: %s\n",
                mt_human_bytes(b2, sizeof b2, s->nbins ? s->live[s->nbins - 1] : 0));
  if (filtered) {
    size_t best = 0;
    for (size_t j = 1; j < s->nbins; j++)
      if (s->filtered[j] > s->filtered[best]) best = j;
    mt_out_printf(o, "  filtered: most %s at %.6f s (at bin ends)\n",
                  mt_human_bytes(b1, sizeof b1, s->filtered[best]), s->end[best] / 1e6);
    mt_out_printf(o, "  filtered at the end: %s\n",
                  mt_human_bytes(b2, sizeof b2, s->filtered[s->nbins - 1]));
  }
  mt_out_char(o, '\n');
}

/* The chart's columns: column c gathers bins [c n / ncol, (c+1) n / ncol):
 * the whole heap's most within them (so the peak's column reaches the
 * top) and the filtered heap's most at their ends, in eighths of a row;
 * the resident memory's row + 1 (0: none). */
typedef struct columns {
  int *full, *part, *res;
} columns;

static columns chart_columns(const mt_timeline *s, int filtered, size_t ncol, double top,
                             int height) {
  columns k = {xcalloc(ncol, sizeof(int)), xcalloc(ncol, sizeof(int)), xcalloc(ncol, sizeof(int))};
  int levels = height * 8;
  for (size_t c = 0; c < ncol; c++) {
    size_t j0 = c * s->nbins / ncol, j1 = (c + 1) * s->nbins / ncol;
    double vf = 0, vp = 0, vr = 0;
    for (size_t j = j0; j < j1; j++) {
      vf = fmax(vf, s->max[j]);
      if (filtered) vp = fmax(vp, s->filtered[j]);
      if (s->rss_total) vr = fmax(vr, s->rss_total[j]);
    }
    if (vr > 0) k.res[c] = (int)fmin(height - 1, floor(vr / top * height - 1e-9)) + 1;
    k.full[c] = (int)lround(vf / top * levels);
    k.part[c] = (int)lround(vp / top * levels);
    if (k.full[c] == 0 && vf > 0) k.full[c] = 1;
    if (filtered && k.part[c] == 0 && vp > 0) k.part[c] = 1;
  }
  return k;
}

/* The axis line with ticks at nice times, and their labels. */
static void time_axis(mt_out *o, const mt_timeline *s, size_t ncol, int lw, int ascii) {
  uint64_t dur = s->duration;
  double dur_s = (double)(dur ? dur : 1) / 1e6;
  const char *uname;
  double unit = mt_axis_unit(MT_AXIS_SECONDS, dur_s, &uname);
  double step = mt_nice_step(dur_s / unit, (int)(ncol / 12 > 1 ? ncol / 12 : 1)) * unit;
  size_t cap = ncol + 64;
  char *labels = xcalloc(cap, 1), *ticks = xcalloc(ncol, 1);
  memset(labels, ' ', cap - 1);
  size_t next_free = 0;
  for (double t = 0; t <= dur_s * (1 + 1e-9); t += step) {
    size_t c = (size_t)lround(t / dur_s * (double)ncol);
    if (c >= ncol) c = ncol - 1;
    char lab[32];
    mt_axis_label(lab, sizeof lab, t, unit, uname);
    size_t at = c, len = strlen(lab);
    /* Labels stay within the chart: the last ones end at its edge. */
    if (at + len > ncol) at = len < ncol ? ncol - len : 0;
    if (at < next_free && c != 0) continue;
    ticks[c] = 1;
    put_at(labels, cap, at, lab);
    next_free = at + len + 2;
  }
  mt_out_printf(o, "%*s %s", lw, "0 B", ascii ? "+" : "\u2514");
  for (size_t c = 0; c < ncol; c++)
    mt_out_str(o, ticks[c] ? (ascii ? "+" : "\u252c") : (ascii ? "-" : "\u2500"));
  mt_out_char(o, '\n');
  size_t end = cap - 1;
  while (end > 0 && labels[end - 1] == ' ') end--;
  labels[end] = 0;
  mt_out_printf(o, "%*s  %s\n", lw, "", labels);
  free(labels);
  free(ticks);
}

static void terminal(mt_out *o, const char *path, const mt_timeline *s, int filtered, int height,
                     int ascii) {
  uint64_t ptime = s->peak_time, dur = s->duration;
  double peak = s->peak_bytes.value;
  char b1[48], b3[48];
  header(o, path, s, filtered);
  /* y labels: the top (the peak), the middle, and 0 on the axis line. */
  double top = peak, rss_top = 0;
  for (size_t j = 0; j < s->nbins; j++) top = fmax(top, s->max[j]);
  for (size_t j = 0; s->rss_total && j < s->nbins; j++) rss_top = fmax(rss_top, s->rss_total[j]);
  if (rss_top > 0)
    mt_out_printf(o, "  resident memory (recorded beside the trace): at most %s\n",
                  mt_human_bytes(b3, sizeof b3, rss_top));
  top = fmax(top, rss_top);
  if (!(top > 0)) {
    mt_out_printf(o, "  (no sampled object was ever live: nothing to draw)\n");
    return;
  }
  char ytop[32], ymid[32];
  mt_human_bytes(ytop, sizeof ytop, top);
  mt_human_bytes(ymid, sizeof ymid, top / 2);
  /* A fixed label width, the longest mt_cli_bytes gives ("1023.9 KiB"), so
   * that the default bin count (run's) is exactly the chart's width. */
  int lw = LABEL_WIDTH;
  int width = mt_term_columns() - lw - 2;
  if (width < 10) width = 10;
  size_t ncol = s->nbins < (size_t)width ? s->nbins : (size_t)width;
  columns k = chart_columns(s, filtered, ncol, top, height);
  for (int r = height - 1; r >= 0; r--) {
    const char *lab = r == height - 1 ? ytop : r == (height - 1) / 2 && height > 2 ? ymid : "";
    mt_out_printf(o, "%*s %s", lw, lab, ascii ? "|" : "\u2502");
    for (size_t c = 0; c < ncol; c++) {
      int fe = k.full[c] - r * 8, pe = k.part[c] - r * 8;
      if (k.res[c] == r + 1) mt_out_str(o, ascii ? "*" : "\u2022"); /* resident memory */
      else if (!filtered) mt_term_vcell(o, fe, ascii);
      else if (pe > 0) mt_term_vcell(o, pe, ascii);
      else if (fe >= 4 || (fe > 0 && k.full[c] < 8)) mt_out_str(o, ascii ? ":" : "\u2591");
      else mt_out_char(o, ' ');
    }
    mt_out_char(o, '\n');
  }
  time_axis(o, s, ncol, lw, ascii);
  /* The peak's column: bin ends are (c+1) dur / ncol, and the peak at t
   * belongs to the first column ending at or after it. */
  double pc = ceil((double)ptime / (double)(dur ? dur : 1) * (double)ncol) - 1;
  size_t pcol = pc < 0 ? 0 : pc >= (double)ncol ? ncol - 1 : (size_t)pc;
  char text[96];
  snprintf(text, sizeof text, "peak %s at %.3f s", mt_human_bytes(b1, sizeof b1, peak),
           (double)ptime / 1e6);
  const char *mark = ascii ? "^" : "\u25b2";
  if (pcol + 2 + strlen(text) <= (size_t)width)
    mt_out_printf(o, "%*s  %*s%s %s\n", lw, "", (int)pcol, "", mark, text);
  else
    mt_out_printf(o, "%*s  %*s%s %s\n", lw, "",
                  (int)(pcol > strlen(text) + 1 ? pcol - strlen(text) - 1 : 0), "", text, mark);
  if (filtered)
    mt_out_printf(o, "%*s  %s filtered (at bin ends)  %s all (most within)\n",
                  lw, "", ascii ? "#" : "\u2588", ascii ? ":" : "\u2591");
  if (rss_top > 0)
    mt_out_printf(o, "%*s  %s resident memory (RssAnon + RssFile + RssShmem)\n", lw, "",
                  ascii ? "*" : "\u2022");
  free(k.res);
  free(k.full);
  free(k.part);
}

/* ---- CSV, SVG ---- */

static void csv(mt_out *o, const mt_timeline *s, int filtered) {
  char b[40];
  mt_out_str(o, "time_s,live_bytes,min_bytes,max_bytes");
  if (filtered) mt_out_str(o, ",filtered_bytes");
  if (s->rss_total) mt_out_str(o, ",rss_anon_bytes,rss_file_bytes,rss_bytes");
  mt_out_char(o, '\n');
  for (size_t j = 0; j < s->nbins; j++) {
    mt_out_printf(o, "%.6f,", s->end[j] / 1e6);
    mt_out_str(o, mt_fmt_double(b, sizeof b, s->live[j]));
    mt_out_char(o, ',');
    mt_out_str(o, mt_fmt_double(b, sizeof b, s->min[j]));
    mt_out_char(o, ',');
    mt_out_str(o, mt_fmt_double(b, sizeof b, s->max[j]));
    if (filtered) {
      mt_out_char(o, ',');
      mt_out_str(o, mt_fmt_double(b, sizeof b, s->filtered[j]));
    }
    for (int k = 0; s->rss_total && k < 3; k++) {
      const double *v = k == 0 ? s->rss_anon : k == 1 ? s->rss_file : s->rss_total;
      mt_out_char(o, ',');
      mt_out_str(o, mt_fmt_double(b, sizeof b, v[j]));
    }
    mt_out_char(o, '\n');
  }
}

static void svg(const char *file, const char *path, const mt_timeline *s, int filtered,
                const mt_filter *f) {
  char sub[600], mlabel[96], b1[48], fname[300];
  if (s->ntraces > 1)
    snprintf(sub, sizeof sub, "%s, lined up by their starts; band: least and most within each "
             "interval", path);
  else
    snprintf(sub, sizeof sub, "%s: live samples / rate x %g B, rate %g; band: least and most "
             "within each interval", path, s->sampling.word_bytes, s->sampling.rate);
  snprintf(mlabel, sizeof mlabel, "peak %s at %.3f s",
           mt_human_bytes(b1, sizeof b1, s->peak_bytes.value), (double)s->peak_time / 1e6);
  char *ftext = mt_cli_filter_text(f);
  snprintf(fname, sizeof fname, "filtered (%s)", ftext);
  free(ftext);
  double *t = mt_cli_xrealloc(&mt_cmd_timeline, NULL, (s->nbins + 1) * sizeof *t);
  for (size_t j = 0; j < s->nbins; j++) t[j] = s->end[j] / 1e6;
  mt_svg_series ser[3] = {
      {"all objects", t, s->live, s->min, s->max, s->nbins},
      {fname, t, s->filtered, NULL, NULL, s->nbins},
      {"resident memory (RssAnon + RssFile + RssShmem)", t, s->rss_total, NULL, NULL, s->nbins},
  };
  if (s->rss_total && !filtered) ser[1] = ser[2]; /* the series drawn: the first n */
  mt_svg_line_chart ch = {"Live heap over time", sub,
                          s->ntraces > 1 ? "time since the earliest start" : "time since the trace start",
                          "estimated live bytes", MT_AXIS_SECONDS, MT_AXIS_BYTES, ser,
                          (filtered ? 2 : 1) + (s->rss_total != NULL), 1,
                          (double)s->peak_time / 1e6,
                          s->peak_bytes.value, mlabel};
  int rc = mt_svg_write_line_chart(file, &ch);
  free(t);
  if (rc != 0) {
    fprintf(stderr, "memtrace timeline: %s: cannot write: %s\n", file, strerror(errno));
    exit(1);
  }
}

enum { FORMAT_TABLE, FORMAT_CSV, FORMAT_JSON };

/* The traces: one analysis of them all when they share their rate (the
 * viewer's reading, with an exact peak), else each its own. */
typedef struct traces {
  mt_cli_trace_set set; /* several rates */
  mt_analysis *one;     /* one rate */
} traces;

/* With the resident memory memtrace run recorded beside the trace (of a
 * process tree: beside the program's, the tree's sum), when there is. */
static mt_timeline *with_rss(const traces *ts, mt_timeline *t) {
  mt_rss *r = NULL;
  for (size_t i = 0; i < ts->set.n && !r; i++)
    if (mt_rss_load(ts->set.paths[i], &r) == MT_ERR_NOMEM) mt_cli_nomem(&mt_cmd_timeline);
  if (r && mt_timeline_add_rss(t, r) != MT_OK) mt_cli_nomem(&mt_cmd_timeline);
  mt_rss_free(r);
  return t;
}

static mt_timeline *compute(const traces *ts, const mt_filter *f, size_t nbins) {
  mt_timeline *t;
  int rc = ts->one ? mt_timeline_compute(ts->one, f, nbins, &t)
                   : mt_timeline_traces((const mt_analysis *const *)ts->set.as, ts->set.n, f,
                                        nbins, &t);
  if (rc != MT_OK) mt_cli_nomem(&mt_cmd_timeline);
  return with_rss(ts, t);
}

/* One trace: its timeline made while it is read (mt_timeline_load), in
 * the memory of its live objects. */
static mt_timeline *load_one(traces *ts, const mt_filter *f, size_t nbins) {
  mt_timeline *t;
  int rc = mt_timeline_load(&ts->one, &t, ts->set.paths[0], f, nbins, NULL, NULL);
  if (rc != MT_OK && ts->one && mt_analysis_error(ts->one)[0]) {
    fprintf(stderr, "memtrace: %s\n", mt_analysis_error(ts->one));
    exit(1);
  }
  if (rc != MT_OK) mt_cli_nomem(&mt_cmd_timeline);
  const char *w = mt_analysis_warning(ts->one);
  if (w) fprintf(stderr, "memtrace: warning: %s\n", w);
  return with_rss(ts, t);
}

static int run(int argc, char **argv) {
  const mt_command *cmd = &mt_cmd_timeline;
  static const char *args[MT_CLI_MAX_TRACES];
  const char *svg_file = NULL;
  int as_csv = 0, ascii = 0, format = FORMAT_TABLE;
  size_t nbins = 0, height = 12;
  mt_filter f;
  mt_filter_init(&f);
  const mt_option options[] = {
      {"--format", NULL, MT_OPT_CHOICE, &format, "table|csv|json", 0, 0, 0},
      {"--csv", NULL, MT_OPT_FLAG, &as_csv, NULL, 1, 0, 0},
      {"--ascii", NULL, MT_OPT_FLAG, &ascii, NULL, 1, 0, 0},
      {"--svg", NULL, MT_OPT_TEXT, &svg_file, NULL, 0, 0, 0},
      {"--bins", NULL, MT_OPT_COUNT, &nbins, NULL, 0, 1, 1000000},
      {"--height", NULL, MT_OPT_COUNT, &height, NULL, 0, 1, 200},
      {NULL, NULL, 0, NULL, NULL, 0, 0, 0}};
  mt_cli_spec spec = {options, &f, args, 1, MT_CLI_MAX_TRACES, "TRACE", 0, 0, NULL};
  size_t nargs = mt_cli_parse(cmd, argc, argv, &spec);
  if (as_csv) format = FORMAT_CSV;
  int filtered = !mt_filter_selects_all(&f);

  traces ts = {{0}, NULL}; /* the reader checks each rate is in (0, 1] */
  char **paths;
  size_t n = mt_cli_traces(cmd, args, nargs, &paths);
  /* The terminal's width decides its default: one bin per column. */
  size_t cols = (size_t)(mt_term_columns() - LABEL_WIDTH - 2);
  size_t shown = nbins ? nbins : format == FORMAT_TABLE ? cols : 400;
  size_t drawn = nbins ? nbins : 400;
  mt_timeline *t = NULL;
  if (n == 1 && (!svg_file || shown == drawn) && !mt_cli_load_whole()) { /* while reading */
    ts.set.paths = paths;
    ts.set.n = n;
    t = load_one(&ts, &f, shown);
  } else if (mt_cli_same_rate((const char *const *)paths, n)) {
    ts.one = mt_cli_load_many(cmd, (const char *const *)paths, n);
    ts.set.paths = paths;
    ts.set.n = n;
  } else {
    for (size_t i = 0; i < n; i++) free(paths[i]);
    free(paths);
    mt_cli_load_set(cmd, args, nargs, MT_KEEP_ALL, NULL, &ts.set);
  }
  if (ts.one) mt_cli_warn_unmatched(cmd, &f, (const mt_analysis *const *)&ts.one, 1);
  else mt_cli_warn_unmatched(cmd, &f, (const mt_analysis *const *)ts.set.as, ts.set.n);
  char many[128];
  snprintf(many, sizeof many, "%zu traces (%s ...)", n, ts.set.paths[0]);
  const char *path = n == 1 ? ts.set.paths[0] : many;
  if (!t) t = compute(&ts, &f, shown);
  if (format == FORMAT_JSON) {
    mt_json j;
    mt_cli_json_begin(&j, cmd, n == 1 ? path : NULL, n == 1 ? ts.one : NULL);
    if (n > 1) mt_cli_json_traces(&j, (const char *const *)ts.set.paths, n);
    mt_json_timeline(&j, t, &f);
    mt_cli_json_end(&j, cmd);
  } else {
    mt_out o;
    mt_out_init(&o, 1);
    if (format == FORMAT_CSV) csv(&o, t, filtered);
    else terminal(&o, path, t, filtered, (int)height, ascii);
    mt_out_flush(&o);
    mt_out_free(&o);
  }
  if (svg_file) {
    if (t->nbins != drawn) {
      mt_timeline_free(t);
      t = compute(&ts, &f, drawn);
    }
    svg(svg_file, path, t, filtered, &f);
  }
  mt_timeline_free(t);
  if (ts.one) {
    mt_analysis_free(ts.one);
    for (size_t i = 0; i < n; i++) free(ts.set.paths[i]);
    free(ts.set.paths);
  } else {
    mt_cli_free_set(&ts.set);
  }
  return 0;
}

const mt_command mt_cmd_timeline = {
    "timeline", "the estimated live heap over time, its peak; chart, CSV, JSON or SVG", usage,
    run};
