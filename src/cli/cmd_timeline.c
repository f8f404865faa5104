/* memtrace timeline: the estimated live heap over time, its exact peak, and
 * (with filters) the live heap of the objects passing them beside it.
 *
 * Values at the end of each bin come from mt_analysis_live_series (exact
 * for the sampled objects: allocated at or before the bin's end and not yet
 * collected). The least and most within each bin come from the library's
 * envelope of the whole trace, which keeps at most 1024 bins: where our bins
 * are finer, they take the least and most of the envelope bins they
 * overlap, so they bound the truth rather than equal it. The peak is the
 * library's exact one, in event order. Bytes are live samples / rate x
 * word size, memtrace's estimator. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_cli.h"
#include "output.h"
#include "svg.h"

static const char usage[] =
    "usage: memtrace timeline [OPTIONS] [FILTERS] TRACE\n"
    "\n"
    "The estimated live heap (bytes) over the trace: a chart with the peak\n"
    "marked, or a CSV table, or an SVG line chart. With filters, the live heap\n"
    "of the objects passing them is drawn beside the whole heap's.\n"
    "\n"
    "Options:\n"
    "  --bins N       time bins (default: the chart's width for the terminal,\n"
    "                 400 for --csv and --svg)\n"
    "  --csv          print the bins as CSV instead of the chart: time_s (the\n"
    "                 bin's end, seconds since the trace start), live_bytes (live\n"
    "                 at that time), min_bytes and max_bytes (the least and most\n"
    "                 live within the bin, whole heap; where bins are finer than\n"
    "                 the trace's stored envelope of 1024 intervals these bound\n"
    "                 the truth), and filtered_bytes with filters\n"
    "  --svg FILE     also write the chart as an SVG line chart to FILE\n"
    "  --height N     rows of the terminal chart (default 12)\n"
    "  --ascii        draw with '#', ':' and '^' instead of Unicode blocks\n"
    "  -h, --help     this help\n"
    "\n" MT_CLI_FILTER_HELP
    "\n"
    "Live bytes are live samples / rate x word size. The peak is exact: the\n"
    "most samples ever live at once, and when that was first reached. The\n"
    "terminal width is $COLUMNS (default 80).\n";

typedef struct series {
  size_t n;
  double *t;        /* bin ends, seconds */
  double *live;     /* whole heap at the bin end, bytes */
  double *min, *max; /* whole heap within the bin (envelope), bytes */
  double *filt;     /* filtered objects at the bin end, or NULL */
} series;

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) {
    fprintf(stderr, "memtrace timeline: out of memory\n");
    exit(1);
  }
  return p;
}

/* The envelope bin holding integer time t: envelope bin k covers
 * [T(k-1), T(k)) where T(k) = pts[k].time, the last one also the trace's
 * last instant. */
static size_t env_bin(const mt_live_point *pts, size_t n, double t) {
  size_t lo = 0, hi = n - 1;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if ((double)pts[mid].time > t) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

static void compute(const mt_analysis *a, const mt_filter *f, int filtered, size_t nbins,
                    series *s) {
  uint64_t to = mt_analysis_duration(a);
  if (to == 0) to = 1; /* a trace of one instant still gets its bins */
  double scale = mt_analysis_word_bytes(a) / mt_analysis_info(a)->sample_rate;
  s->n = nbins;
  s->t = xcalloc(nbins, sizeof *s->t);
  s->live = xcalloc(nbins, sizeof *s->live);
  s->min = xcalloc(nbins, sizeof *s->min);
  s->max = xcalloc(nbins, sizeof *s->max);
  s->filt = filtered ? xcalloc(nbins, sizeof *s->filt) : NULL;
  mt_filter none;
  mt_filter_init(&none);
  if (mt_analysis_live_series(a, &none, 0, to, nbins, s->live) != MT_OK ||
      (filtered && mt_analysis_live_series(a, f, 0, to, nbins, s->filt) != MT_OK)) {
    fprintf(stderr, "memtrace timeline: out of memory\n");
    exit(1);
  }
  mt_live_point pts[1024];
  size_t np = mt_analysis_live_envelope(a, pts, 1024);
  /* The same arithmetic as the library's bin ends: (j + 1) x width. */
  double width = (double)to / (double)nbins;
  for (size_t j = 0; j < nbins; j++) {
    double end = (double)(j + 1) * width, start = (double)j * width;
    s->t[j] = end / 1e6;
    s->live[j] *= scale;
    if (filtered) s->filt[j] *= scale;
    double lo = s->live[j], hi = s->live[j];
    if (np > 0) {
      /* Event times in the bin are the integers in (start, end]; the first
       * bin also holds time 0. */
      double first = j == 0 ? 0 : floor(start) + 1, last = floor(end);
      if (first > last) first = last;
      size_t k0 = env_bin(pts, np, first), k1 = env_bin(pts, np, last);
      for (size_t k = k0; k <= k1; k++) {
        lo = fmin(lo, pts[k].min_samples * scale);
        hi = fmax(hi, pts[k].max_samples * scale);
      }
    }
    s->min[j] = lo;
    s->max[j] = hi;
  }
}

static void series_free(series *s) {
  free(s->t);
  free(s->live);
  free(s->min);
  free(s->max);
  free(s->filt);
}

/* ---- terminal chart ---- */

#define LABEL_WIDTH 10

static void put_at(char *line, size_t cap, size_t at, const char *text) {
  size_t n = strlen(text);
  if (at + n >= cap) return;
  memcpy(line + at, text, n);
}

static void terminal(mt_out *o, const mt_analysis *a, const char *path, const series *s,
                     int filtered, int height, int ascii) {
  double scale = mt_analysis_word_bytes(a) / mt_analysis_info(a)->sample_rate;
  uint64_t ptime, psamples;
  mt_analysis_peak(a, &ptime, &psamples);
  double peak = (double)psamples * scale;
  uint64_t dur = mt_analysis_duration(a);
  char b1[48], b2[48], b3[48];

  mt_out_printf(o, "memtrace timeline: %s\n", path);
  mt_out_printf(o, "  live bytes (live samples / rate x %g B) over %s,\n",
                mt_analysis_word_bytes(a), mt_cli_duration(b2, sizeof b2, (double)dur));
  mt_out_printf(o, "  %zu bins of %s\n", s->n,
                mt_cli_duration(b1, sizeof b1, (double)(dur ? dur : 1) / (double)s->n));
  mt_out_printf(o, "  peak %s at %.6f s (exact)\n", mt_cli_bytes(b1, sizeof b1, peak),
                (double)ptime / 1e6);
  mt_out_printf(o, "  at the end: %s\n", mt_cli_bytes(b2, sizeof b2, s->n ? s->live[s->n - 1] : 0));
  if (filtered) {
    size_t best = 0;
    for (size_t j = 1; j < s->n; j++)
      if (s->filt[j] > s->filt[best]) best = j;
    mt_out_printf(o, "  filtered: most %s at %.6f s (at bin ends)\n",
                  mt_cli_bytes(b1, sizeof b1, s->filt[best]), s->t[best]);
    mt_out_printf(o, "  filtered at the end: %s\n", mt_cli_bytes(b3, sizeof b3, s->filt[s->n - 1]));
  }
  mt_out_char(o, '\n');

  /* y labels: the top (the peak), the middle, and 0 on the axis line. */
  double top = peak;
  for (size_t j = 0; j < s->n; j++) top = fmax(top, s->max[j]);
  if (!(top > 0)) {
    mt_out_printf(o, "  (no sampled object was ever live: nothing to draw)\n");
    return;
  }
  char ytop[32], ymid[32];
  mt_cli_bytes(ytop, sizeof ytop, top);
  mt_cli_bytes(ymid, sizeof ymid, top / 2);
  /* A fixed label width, the longest mt_cli_bytes gives ("1023.9 KiB"), so
   * that the default bin count (run's) is exactly the chart's width. */
  int lw = LABEL_WIDTH;
  int cols = mt_term_columns();
  int width = cols - lw - 2;
  if (width < 10) width = 10;
  size_t ncol = s->n < (size_t)width ? s->n : (size_t)width;

  /* Column c gathers bins [c n / ncol, (c+1) n / ncol): the whole heap's
   * most within them (so the peak's column reaches the top), the filtered
   * heap's most at their ends. */
  int *full = xcalloc(ncol, sizeof *full), *part = xcalloc(ncol, sizeof *part);
  int levels = height * 8;
  for (size_t c = 0; c < ncol; c++) {
    size_t j0 = c * s->n / ncol, j1 = (c + 1) * s->n / ncol;
    double vf = 0, vp = 0;
    for (size_t j = j0; j < j1; j++) {
      vf = fmax(vf, s->max[j]);
      if (filtered) vp = fmax(vp, s->filt[j]);
    }
    full[c] = (int)lround(vf / top * levels);
    part[c] = (int)lround(vp / top * levels);
    if (full[c] == 0 && vf > 0) full[c] = 1;
    if (filtered && part[c] == 0 && vp > 0) part[c] = 1;
  }
  for (int r = height - 1; r >= 0; r--) {
    const char *lab = r == height - 1 ? ytop : r == (height - 1) / 2 && height > 2 ? ymid : "";
    mt_out_printf(o, "%*s %s", lw, lab, ascii ? "|" : "\u2502");
    for (size_t c = 0; c < ncol; c++) {
      int fe = full[c] - r * 8, pe = part[c] - r * 8;
      if (!filtered) mt_term_vcell(o, fe, ascii);
      else if (pe > 0) mt_term_vcell(o, pe, ascii);
      else if (fe >= 4 || (fe > 0 && full[c] < 8)) mt_out_str(o, ascii ? ":" : "\u2591");
      else mt_out_char(o, ' ');
    }
    mt_out_char(o, '\n');
  }

  /* The axis line with ticks at nice times, their labels, then the peak. */
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

  /* The peak's column: bin ends are (c+1) dur / ncol, and the peak at t
   * belongs to the first column ending at or after it. */
  double pc = ceil((double)ptime / (double)(dur ? dur : 1) * (double)ncol) - 1;
  size_t pcol = pc < 0 ? 0 : pc >= (double)ncol ? ncol - 1 : (size_t)pc;
  char text[96];
  snprintf(text, sizeof text, "peak %s at %.3f s", mt_cli_bytes(b1, sizeof b1, peak),
           (double)ptime / 1e6);
  const char *mark = ascii ? "^" : "\u25b2";
  if (pcol + 2 + strlen(text) <= (size_t)width)
    mt_out_printf(o, "%*s  %*s%s %s\n", lw, "", (int)pcol, "", mark, text);
  else
    mt_out_printf(o, "%*s  %*s%s %s\n", lw, "", (int)(pcol > strlen(text) + 1 ? pcol - strlen(text) - 1 : 0),
                  "", text, mark);
  if (filtered)
    mt_out_printf(o, "%*s  %s filtered (at bin ends)  %s all (most within)\n",
                  lw, "", ascii ? "#" : "\u2588", ascii ? ":" : "\u2591");
  free(full);
  free(part);
  free(labels);
  free(ticks);
}

/* ---- CSV, SVG ---- */

static void csv(mt_out *o, const series *s, int filtered) {
  char b[40];
  mt_out_str(o, filtered ? "time_s,live_bytes,min_bytes,max_bytes,filtered_bytes\n"
                         : "time_s,live_bytes,min_bytes,max_bytes\n");
  for (size_t j = 0; j < s->n; j++) {
    mt_out_printf(o, "%.6f,", s->t[j]);
    mt_out_str(o, mt_fmt_double(b, sizeof b, s->live[j]));
    mt_out_char(o, ',');
    mt_out_str(o, mt_fmt_double(b, sizeof b, s->min[j]));
    mt_out_char(o, ',');
    mt_out_str(o, mt_fmt_double(b, sizeof b, s->max[j]));
    if (filtered) {
      mt_out_char(o, ',');
      mt_out_str(o, mt_fmt_double(b, sizeof b, s->filt[j]));
    }
    mt_out_char(o, '\n');
  }
}

static void svg(const char *file, const mt_analysis *a, const char *path, const series *s,
                int filtered, const char *filter_desc) {
  double scale = mt_analysis_word_bytes(a) / mt_analysis_info(a)->sample_rate;
  uint64_t ptime, psamples;
  mt_analysis_peak(a, &ptime, &psamples);
  char sub[600], mlabel[96], b1[48];
  snprintf(sub, sizeof sub, "%s: live samples / rate x %g B, rate %g; band: least and most "
           "within each interval", path, mt_analysis_word_bytes(a),
           mt_analysis_info(a)->sample_rate);
  snprintf(mlabel, sizeof mlabel, "peak %s at %.3f s",
           mt_cli_bytes(b1, sizeof b1, (double)psamples * scale), (double)ptime / 1e6);
  char fname[300];
  snprintf(fname, sizeof fname, "filtered (%s)", filter_desc);
  mt_svg_series ser[2] = {
      {"all objects", s->t, s->live, s->min, s->max, s->n},
      {fname, s->t, s->filt, NULL, NULL, s->n},
  };
  mt_svg_line_chart ch = {"Live heap over time", sub, "time since the trace start",
                          "estimated live bytes", MT_AXIS_SECONDS, MT_AXIS_BYTES, ser,
                          filtered ? 2 : 1, 1, (double)ptime / 1e6,
                          (double)psamples * scale, mlabel};
  if (mt_svg_write_line_chart(file, &ch) != 0) {
    fprintf(stderr, "memtrace timeline: %s: cannot write: %s\n", file, strerror(errno));
    exit(1);
  }
}

static size_t parse_count(const mt_command *cmd, const char *opt, const char *v, size_t max) {
  char *end;
  errno = 0;
  unsigned long long n = v ? strtoull(v, &end, 10) : 0;
  if (!v || !*v || *end || errno || v[0] == '-' || n < 1 || n > max)
    mt_cli_usage_error(cmd, "%s wants a number from 1 to %zu, not '%s'", opt, max, v ? v : "");
  return (size_t)n;
}

static int run(int argc, char **argv) {
  const mt_command *cmd = &mt_cmd_timeline;
  const char *path = NULL, *svg_file = NULL;
  int as_csv = 0, ascii = 0, height = 12;
  size_t nbins = 0;
  mt_filter f;
  mt_filter_init(&f);
  char desc[256] = "";
  int filtered = 0;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    if (mt_cli_is_help(o)) return mt_cli_help(cmd);
    int start = i;
    if (mt_cli_filter_option(cmd, argc, argv, &i, &f)) {
      filtered = 1;
      /* The filter as given, to name the filtered line. */
      for (int k = start; k <= i; k++) {
        size_t l = strlen(desc);
        snprintf(desc + l, sizeof desc - l, "%s%s", l ? " " : "", argv[k]);
      }
    } else if (strcmp(o, "--csv") == 0) as_csv = 1;
    else if (strcmp(o, "--ascii") == 0) ascii = 1;
    else if (strcmp(o, "--svg") == 0 || strncmp(o, "--svg=", 6) == 0) {
      svg_file = o[5] == '=' ? o + 6 : i + 1 < argc ? argv[++i] : NULL;
      if (!svg_file || !*svg_file) mt_cli_usage_error(cmd, "--svg needs a file name");
    } else if (strcmp(o, "--bins") == 0 || strncmp(o, "--bins=", 7) == 0) {
      const char *v = o[6] == '=' ? o + 7 : i + 1 < argc ? argv[++i] : NULL;
      nbins = parse_count(cmd, "--bins", v, 1000000);
    } else if (strcmp(o, "--height") == 0 || strncmp(o, "--height=", 9) == 0) {
      const char *v = o[8] == '=' ? o + 9 : i + 1 < argc ? argv[++i] : NULL;
      height = (int)parse_count(cmd, "--height", v, 200);
    } else if (o[0] == '-' && o[1]) mt_cli_usage_error(cmd, "unknown option '%s'", o);
    else if (path) mt_cli_usage_error(cmd, "unexpected argument '%s'", o);
    else path = o;
  }
  if (!path) mt_cli_usage_error(cmd, "missing TRACE");

  mt_analysis *a = mt_cli_load(path); /* the reader checks the rate is in (0, 1] */
  mt_out o;
  mt_out_init(&o, 1);
  series s;
  if (as_csv) {
    compute(a, &f, filtered, nbins ? nbins : 400, &s);
    csv(&o, &s, filtered);
  } else {
    /* The terminal's width decides the default: one bin per column. */
    size_t cols = (size_t)(mt_term_columns() - LABEL_WIDTH - 2);
    compute(a, &f, filtered, nbins ? nbins : cols, &s);
    terminal(&o, a, path, &s, filtered, height, ascii);
  }
  mt_out_flush(&o);
  mt_out_free(&o);
  if (svg_file) {
    if (s.n != (nbins ? nbins : 400)) {
      series_free(&s);
      compute(a, &f, filtered, nbins ? nbins : 400, &s);
    }
    svg(svg_file, a, path, &s, filtered, desc);
  }
  series_free(&s);
  mt_analysis_free(a);
  return 0;
}

const mt_command mt_cmd_timeline = {
    "timeline", "the estimated live heap over time, its peak; chart, CSV or SVG", usage, run};
