/* memtrace stats: the allocation statistics of Jane Street's ocaml-alloc-stats
 * notebook (size histogram, share of large blocks, size moments), and more
 * (lifetimes, sources, promotion, time chunks): mt_stats_compute
 * (memtrace/stats.h says how each is estimated), rendered as charts on the
 * terminal, JSON, or SVG files. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/human.h"
#include "cli.h"
#include "memtrace/stats.h"
#include "output.h"
#include "svg.h"

static const char usage[] =
    "usage: memtrace stats [OPTIONS] [FILTERS] TRACE...\n"
    "\n"
    "Allocation statistics of the sampled objects passing the filters, as\n"
    "estimates for every allocation of the program they stand for:\n"
    "  - allocation sizes in the bins 0-32, 33-256, 257-10000 and >10000 words\n"
    "    (OCaml allocates blocks of up to 256 words on the minor heap), by\n"
    "    estimated allocations and by estimated bytes, and the share over 256\n"
    "    words;\n"
    "  - count, mean, variance, standard deviation and maximum of the sizes\n"
    "    in words (the header word excluded), both over the sampled objects\n"
    "    and for the estimated population (weights 1/P; see below);\n"
    "  - lifetimes (collection minus allocation time) by decade from 1 us to\n"
    "    the trace's length, objects never collected apart;\n"
    "  - minor, major and external allocations, and the promotion rate (the\n"
    "    share of minor allocations that survived into the major heap);\n"
    "  - with --chunks N, the same for N equal spans of allocation time.\n"
    "\n"
    "Several traces (files, or directories of .ctf files: a process tree, a\n"
    "fleet) are read as one, lined up by their wall-clock starts: one\n"
    "population, and --chunks splits their common span. Traces of different\n"
    "rates are read at the lowest (the others' samples thinned to it).\n"
    "\n"
    "Options:\n"
    "  --chunks N     also split by allocation time into N chunks (default 1:\n"
    "                 the whole trace, or the --time span, only)\n"
    "  --format table|json\n"
    "                 charts on the terminal (default), or every figure as\n"
    "                 JSON (docs/json.md); --json is --format json\n"
    "  --svg DIR      also write the charts as SVG files into DIR (created if\n"
    "                 missing): sizes-count.svg, sizes-bytes.svg, lifetimes.svg,\n"
    "                 sources.svg, and chunks.svg with --chunks N > 1\n"
    "  --ascii        draw bars with '#' instead of Unicode blocks\n"
    "  -h, --help     this help\n"
    "\n" MT_FILTER_OPTIONS_HELP
    "\n"
    "Estimates. A word is sampled with probability `rate`, so an allocation of\n"
    "w words appears in the trace with probability P = 1 - (1 - rate)^w, where\n"
    "w includes the header word for minor and major blocks and not for external\n"
    "ones. Allocations are estimated as the sum of 1/P (Horvitz-Thompson), bytes\n"
    "as samples / rate x word size (header words included). For a size x in\n"
    "words (header excluded), the population moments weight each sampled object\n"
    "by 1/P: mean = sum(x/P) / sum(1/P), variance = sum((x - mean)^2 / P) /\n"
    "sum(1/P); the sampled moments weight each object by 1 (variance divided by\n"
    "the count, not count - 1). The largest size is the largest sampled one.\n"
    "At rate 1 all of these are exact. \"+-\" is the wider side of the 95%\n"
    "interval. The terminal width is $COLUMNS (default 80).\n";

#define NSIZE MT_STATS_SIZE_BINS
#define NLIFE MT_STATS_LIFE_BINS
static const char *const size_label[NSIZE] = {"0-32 w", "33-256 w", "257-10k w", ">10k w"};
static const char *const source_name[3] = {"minor", "major", "external"};

/* ---- formatting ---- */

/* "+-2.1%": the wider side of the interval, relative; "" when exact. */
static const char *fmt_pm(char *buf, size_t n, mt_estimate e) {
  double d = fmax(e.hi - e.value, e.value - e.lo);
  if (!(e.value > 0) || !(d > 0)) snprintf(buf, n, "%s", "");
  else if (d / e.value >= 9.995) snprintf(buf, n, "+-%.0fx", d / e.value);
  else snprintf(buf, n, "+-%.*f%%", d / e.value < 0.1 ? 1 : 0, 100 * d / e.value);
  return buf;
}

static double share(double part, double whole) { return whole > 0 ? part / whole : 0; }

/* A chart of horizontal bars: label, bar, then text. Bars are scaled to the
 * largest value. */
typedef struct row {
  char label[40];
  double v;
  char text[128];
  int gap; /* a blank line before this row */
} row;

static void draw_rows(mt_out *o, const row *rows, size_t n, int cols, int ascii) {
  size_t lw = 0, tw = 0;
  double max = 0;
  for (size_t i = 0; i < n; i++) {
    if (strlen(rows[i].label) > lw) lw = strlen(rows[i].label);
    if (strlen(rows[i].text) > tw) tw = strlen(rows[i].text);
    if (rows[i].v > max) max = rows[i].v;
  }
  int bw = cols - 2 - (int)lw - 1 - 1 - (int)tw;
  if (bw < 4) bw = 4;
  for (size_t i = 0; i < n; i++) {
    if (rows[i].gap) mt_out_char(o, '\n');
    mt_out_printf(o, "  %-*s ", (int)lw, rows[i].label);
    mt_term_hbar(o, max > 0 ? rows[i].v / max : 0, bw, ascii);
    mt_out_printf(o, " %s\n", rows[i].text);
  }
}

static void est_text(char *buf, size_t n, const char *what, mt_estimate e, double sh, int bytes) {
  char v[32], pm[16];
  if (bytes) mt_human_bytes(v, sizeof v, e.value);
  else mt_human_count(v, sizeof v, e.value);
  fmt_pm(pm, sizeof pm, e);
  snprintf(buf, n, "%9s %-6s %5.1f%%%s%s", v, pm, 100 * sh, what[0] ? " " : "", what);
}

/* ---- output: terminal ---- */

typedef struct ctx {
  const mt_stats *s;
  const char *path;
  int nlife; /* lifetime bins in use: 1 + digits of the duration */
  int filtered;
  int cols, ascii;
  size_t nchunks;
  uint64_t span; /* allocation times the chunks split, us */
  /* A native program's trace (every object external): sizes in bytes by
   * powers of two, "freed", no heaps or promotion. An OCaml trace keeps
   * OCaml's words. */
  int native;
  const char *never; /* "never freed" or "never collected" */
} ctx;

/* A power of two of bytes, short: "16 B", "4 KiB", "2 MiB". */
static const char *pow2_text(char *buf, size_t n, double v) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (v >= 1024 && u < 6) v /= 1024, u++;
  snprintf(buf, n, "%.0f %s", v, units[u]);
  return buf;
}

/* "Sizes, by estimated bytes (1.2 GiB +-2%)", or by allocations. */
static void sizes_heading(mt_out *o, int by_bytes, mt_estimate t) {
  char b1[48], b2[48];
  fmt_pm(b2, sizeof b2, t);
  mt_out_printf(o, "\nSizes, by estimated %s (%s%s%s)\n", by_bytes ? "bytes" : "allocations",
                by_bytes ? mt_human_bytes(b1, sizeof b1, t.value)
                         : mt_human_count(b1, sizeof b1, t.value),
                b2[0] ? " " : "", b2);
}

/* The size histograms of an OCaml trace: its four bins in words, and the
 * share allocated directly on the major heap. */
static void sizes_in_words(mt_out *o, const ctx *c, const mt_stats_group *g, row *rows) {
  const mt_sampling *sp = &c->s->sampling;
  mt_estimate eo = mt_sampling_objects(sp, &g->all), eb = mt_sampling_bytes(sp, &g->all);
  for (int by_bytes = 0; by_bytes < 2; by_bytes++) {
    sizes_heading(o, by_bytes, by_bytes ? eb : eo);
    for (int b = 0; b < NSIZE; b++) {
      mt_estimate e = by_bytes ? mt_sampling_bytes(sp, &g->size[b])
                               : mt_sampling_objects(sp, &g->size[b]);
      snprintf(rows[b].label, sizeof rows[b].label, "%s", size_label[b]);
      rows[b].v = e.value;
      rows[b].gap = 0;
      est_text(rows[b].text, sizeof rows[b].text, "", e,
               by_bytes ? share((double)g->size[b].samples, (double)g->all.samples)
                        : share(e.value, eo.value),
               by_bytes);
    }
    draw_rows(o, rows, NSIZE, c->cols, c->ascii);
  }
  double big_o = 0, big_s = 0;
  for (int b = 2; b < NSIZE; b++) big_o += mt_tally_ht(&g->size[b]), big_s += (double)g->size[b].samples;
  mt_out_printf(o,
                "\nOver 256 words (allocated directly on the major heap):\n"
                "  %.2f%% of allocations, %.2f%% of bytes\n",
                100 * share(big_o, mt_tally_ht(&g->all)), 100 * share(big_s, (double)g->all.samples));
}

/* The size histograms of a native trace: powers of two of bytes, from the
 * smallest bin used to the largest. */
static void sizes_in_bytes(mt_out *o, const ctx *c, const mt_stats_group *g) {
  const mt_sampling *sp = &c->s->sampling;
  const mt_tally *h = c->s->size_log2;
  int first = -1, last = -1;
  for (int b = 0; b < MT_STATS_SIZE_LOG2_BINS; b++)
    if (h[b].objects) last = b, first = first < 0 ? b : first;
  if (first < 0) return;
  row rows[MT_STATS_SIZE_LOG2_BINS];
  mt_estimate eo = mt_sampling_objects(sp, &g->all), eb = mt_sampling_bytes(sp, &g->all);
  char lo[16], hi[16];
  for (int by_bytes = 0; by_bytes < 2; by_bytes++) {
    sizes_heading(o, by_bytes, by_bytes ? eb : eo);
    int n = 0;
    for (int b = first; b <= last; b++, n++) {
      double blo, bhi;
      mt_stats_size_log2_bin(b, &blo, &bhi);
      mt_estimate e = by_bytes ? mt_sampling_bytes(sp, &h[b]) : mt_sampling_objects(sp, &h[b]);
      snprintf(rows[n].label, sizeof rows[n].label, "%s-%s", pow2_text(lo, sizeof lo, blo),
               pow2_text(hi, sizeof hi, bhi));
      rows[n].v = e.value;
      rows[n].gap = 0;
      est_text(rows[n].text, sizeof rows[n].text, "", e,
               by_bytes ? share((double)h[b].samples, (double)g->all.samples)
                        : share(e.value, eo.value),
               by_bytes);
    }
    draw_rows(o, rows, (size_t)n, c->cols, c->ascii);
  }
  mt_out_str(o, "  (a bin holds the sizes from its first bound up to its second)\n");
}

/* Size moments, sampled and estimated: words for OCaml, bytes for native. */
static void moments(mt_out *o, const ctx *c, const mt_stats_group *g) {
  double k = c->native ? c->s->sampling.word_bytes : 1;
  double var_s = g->sampled.n > 0 ? fmax(g->sampled.m2 / g->sampled.n, 0) : 0;
  double var_p = g->population.n > 0 ? fmax(g->population.m2 / g->population.n, 0) : 0;
  char b1[48], b2[48];
  mt_out_printf(o, "\n%-16s %16s %16s\n", c->native ? "Sizes (bytes)" : "Sizes (words)",
                "sampled objects", "estimated (1/P)");
  mt_out_printf(o, "  %-14s %16s %16s\n", "count", mt_human_count(b1, sizeof b1, g->sampled.n),
                mt_human_count(b2, sizeof b2, g->population.n));
  mt_out_printf(o, "  %-14s %16.2f %16.2f\n", "mean", k * g->sampled.mean, k * g->population.mean);
  mt_out_printf(o, "  %-14s %16.2f %16.2f\n", "variance", k * k * var_s, k * k * var_p);
  mt_out_printf(o, "  %-14s %16.2f %16.2f\n", "std dev", k * sqrt(var_s), k * sqrt(var_p));
  mt_out_printf(o, "  %-14s %16.0f %16s\n", "max", k * (double)g->sampled.max, "(the same)");
}

static void lifetimes(mt_out *o, const ctx *c, const mt_stats_group *g, row *rows) {
  const mt_sampling *sp = &c->s->sampling;
  char b3[48], b4[48];
  mt_out_printf(o, "\nLifetimes, by estimated bytes\n");
  int n = 0;
  for (int k = 0; k <= c->nlife; k++, n++) {
    const mt_tally *t = k < c->nlife ? &g->life[k] : &g->never;
    mt_estimate e = mt_sampling_bytes(sp, t), ob = mt_sampling_objects(sp, t);
    if (k < c->nlife) mt_stats_life_name(k, rows[n].label, sizeof rows[n].label);
    else snprintf(rows[n].label, sizeof rows[n].label, "%s", c->never);
    rows[n].v = e.value;
    rows[n].gap = k == c->nlife;
    snprintf(b3, sizeof b3, "%s allocs", mt_human_count(b4, sizeof b4, ob.value));
    est_text(rows[n].text, sizeof rows[n].text, b3, e,
             share((double)t->samples, (double)g->all.samples), 1);
  }
  draw_rows(o, rows, (size_t)n, c->cols, c->ascii);
}

/* Where blocks were allocated, and how many minor ones were promoted: an
 * OCaml trace's. */
static void sources(mt_out *o, const ctx *c, const mt_stats_group *g, row *rows) {
  const mt_sampling *sp = &c->s->sampling;
  char b3[48], b4[48];
  mt_out_printf(o, "\nSources, by estimated bytes\n");
  for (int s = 0; s < 3; s++) {
    mt_estimate e = mt_sampling_bytes(sp, &g->source[s]), ob = mt_sampling_objects(sp, &g->source[s]);
    snprintf(rows[s].label, sizeof rows[s].label, "%s", source_name[s]);
    rows[s].v = e.value;
    rows[s].gap = 0;
    snprintf(b3, sizeof b3, "%s allocs", mt_human_count(b4, sizeof b4, ob.value));
    est_text(rows[s].text, sizeof rows[s].text, b3, e,
             share((double)g->source[s].samples, (double)g->all.samples), 1);
  }
  draw_rows(o, rows, 3, c->cols, c->ascii);
  const mt_tally *mi = &g->source[MT_SOURCE_MINOR], *pr = &g->promoted;
  if (mi->objects)
    mt_out_printf(o,
                  "\nPromotion: %.2f%% of minor allocations were promoted\n"
                  "  (%.2f%% of minor bytes; %llu of %llu sampled)\n",
                  100 * share(mt_tally_ht(pr), mt_tally_ht(mi)), 100 * share((double)pr->samples, (double)mi->samples),
                  (unsigned long long)pr->objects, (unsigned long long)mi->objects);
  else mt_out_printf(o, "\nPromotion: no minor allocations\n");
}

static void terminal_group(mt_out *o, const ctx *c, const mt_stats_group *g) {
  row rows[NLIFE + 1];
  if (c->native) sizes_in_bytes(o, c, g);
  else sizes_in_words(o, c, g, rows);
  moments(o, c, g);
  lifetimes(o, c, g, rows);
  if (!c->native) sources(o, c, g, rows);
}

/* The chunks' table: estimated sizes in words (OCaml) or bytes (native),
 * and for OCaml the share over 256 words. */
static void chunk_table(mt_out *o, const ctx *c, const mt_stats_group *chunks) {
  const mt_sampling *sp = &c->s->sampling;
  double k = c->native ? sp->word_bytes : 1;
  mt_out_printf(o, "\nBy allocation time, %zu chunks (estimated sizes in %s)\n", c->nchunks,
                c->native ? "bytes" : "words");
  char head[256];
  /* Narrow terminals drop the std dev and max columns. */
  int wide = c->cols >= 80, big = !c->native;
  int hl = snprintf(head, sizeof head, "  %-15s %7s %10s %8s", "time (s)", "allocs", "bytes", "mean");
  if (wide) hl += snprintf(head + hl, sizeof head - (size_t)hl, " %8s %7s", "std dev", "max");
  if (big) hl += snprintf(head + hl, sizeof head - (size_t)hl, " %6s %6s", ">256w", "bytes");
  mt_out_printf(o, "%s\n", head);
  double maxb = 0;
  for (size_t i = 0; i < c->nchunks; i++)
    if ((double)chunks[i].all.samples > maxb) maxb = (double)chunks[i].all.samples;
  int bw = c->cols - hl - 2;
  for (size_t i = 0; i < c->nchunks; i++) {
    const mt_stats_group *g = &chunks[i];
    mt_estimate eo = mt_sampling_objects(sp, &g->all), eb = mt_sampling_bytes(sp, &g->all);
    double var = g->population.n > 0 ? fmax(g->population.m2 / g->population.n, 0) : 0;
    char range[40], c1[24], c2[24], mx[24];
    /* Milliseconds show, unless chunks are shorter. */
    int prec = c->span / c->nchunks < 1000 ? 6 : 3;
    snprintf(range, sizeof range, "%.*f-%.*f", prec, (double)g->from / 1e6, prec,
             (double)g->to / 1e6);
    mt_out_printf(o, "  %-15s %7s %10s %8.1f", range, mt_human_count(c1, sizeof c1, eo.value),
                  mt_human_bytes(c2, sizeof c2, eb.value), k * g->population.mean);
    if (wide)
      mt_out_printf(o, " %8.1f %7s", k * sqrt(var),
                    mt_human_count(mx, sizeof mx, k * (double)g->sampled.max));
    if (big) {
      double big_o = 0, big_s = 0;
      for (int b = 2; b < NSIZE; b++) big_o += mt_tally_ht(&g->size[b]), big_s += (double)g->size[b].samples;
      mt_out_printf(o, " %5.1f%% %5.1f%%", 100 * share(big_o, mt_tally_ht(&g->all)),
                    100 * share(big_s, (double)g->all.samples));
    }
    if (bw >= 4) {
      mt_out_str(o, "  ");
      mt_term_hbar(o, maxb > 0 ? (double)g->all.samples / maxb : 0, bw, c->ascii);
    }
    mt_out_char(o, '\n');
  }
  mt_out_printf(o, "  (%s: estimated, in %s%s)\n", wide ? "mean, std dev" : "mean",
                c->native ? "bytes" : "words",
                big ? "; >256w: the\n  share of allocations over 256 words, then of bytes" : "");
}

static void terminal(mt_out *o, const ctx *c, const mt_stats_group *all, const mt_stats_group *chunks) {
  const mt_sampling *sp = &c->s->sampling;
  char b1[48], b2[48];
  mt_out_printf(o, "memtrace stats: %s\n", c->path);
  if (c->native)
    mt_out_printf(o, "  sample rate %g per %g-byte word (one sample per %s)\n", sp->rate,
                  sp->word_bytes, mt_human_bytes(b1, sizeof b1, sp->word_bytes / sp->rate));
  else
    mt_out_printf(o, "  sample rate %g per word (one sample per %s)\n", sp->rate,
                  mt_human_bytes(b1, sizeof b1, sp->word_bytes / sp->rate));
  mt_out_printf(o, "  duration %s; %llu sampled objects%s\n",
                mt_human_duration(b2, sizeof b2, (double)c->s->duration),
                (unsigned long long)all->all.objects, c->filtered ? " pass the filters" : "");
  mt_out_printf(o,
                "  Estimates for all allocations: count = sum of 1/P,\n"
                "  bytes = samples / rate x word size; +- is the wider\n"
                "  side of the 95%% interval.\n");
  terminal_group(o, c, all);
  if (c->nchunks > 1) chunk_table(o, c, chunks);
}

/* ---- output: SVG ---- */

static void svg_or_die(int rc, const char *path) {
  if (rc != 0) {
    fprintf(stderr, "memtrace stats: %s: cannot write: %s\n", path, strerror(errno));
    exit(1);
  }
}

static void svgs(const ctx *c, const char *dir, const mt_stats_group *g, const mt_stats_group *chunks) {
  const mt_sampling *sp = &c->s->sampling;
  char path[4096], sub[512], notes[NLIFE + 1][24], labels[NLIFE + 1][40];
  mt_svg_bar bars[NLIFE + 1];
  snprintf(sub, sizeof sub, "%s: %llu sampled objects%s, rate %g; whiskers: 95%% intervals",
           c->path, (unsigned long long)g->all.objects, c->filtered ? " (filtered)" : "",
           sp->rate);

  for (int by_bytes = 0; by_bytes < 2; by_bytes++) {
    for (int b = 0; b < NSIZE; b++) {
      mt_estimate e = by_bytes ? mt_sampling_bytes(sp, &g->size[b])
                               : mt_sampling_objects(sp, &g->size[b]);
      double sh = by_bytes ? share((double)g->size[b].samples, (double)g->all.samples)
                           : share(mt_tally_ht(&g->size[b]), mt_tally_ht(&g->all));
      snprintf(notes[b], sizeof notes[b], "%.1f%%", 100 * sh);
      bars[b] = (mt_svg_bar){mt_stats_size_name(b), e.value, e.lo, e.hi, notes[b], 0};
    }
    mt_svg_bar_chart ch = {
        by_bytes ? "Allocation sizes by estimated bytes" : "Allocation sizes by estimated count",
        sub, "size (words)", by_bytes ? "estimated bytes allocated" : "estimated allocations",
        by_bytes ? MT_AXIS_BYTES : MT_AXIS_NUMBER, bars, NSIZE};
    snprintf(path, sizeof path, "%s/%s", dir, by_bytes ? "sizes-bytes.svg" : "sizes-count.svg");
    svg_or_die(mt_svg_write_bar_chart(path, &ch), path);
  }

  int n = 0;
  for (int k = 0; k < c->nlife; k++, n++) {
    mt_estimate e = mt_sampling_bytes(sp, &g->life[k]);
    mt_stats_life_name(k, labels[n], sizeof labels[n]);
    snprintf(notes[n], sizeof notes[n], "%.1f%%",
             100 * share((double)g->life[k].samples, (double)g->all.samples));
    bars[n] = (mt_svg_bar){labels[n], e.value, e.lo, e.hi, notes[n], 0};
  }
  {
    mt_estimate e = mt_sampling_bytes(sp, &g->never);
    snprintf(notes[n], sizeof notes[n], "%.1f%%",
             100 * share((double)g->never.samples, (double)g->all.samples));
    bars[n] = (mt_svg_bar){c->never, e.value, e.lo, e.hi, notes[n], 1};
    n++;
  }
  mt_svg_bar_chart lc = {"Lifetimes by estimated bytes", sub,
                         c->native ? "lifetime (free - allocation)" : "lifetime (collection - allocation)",
                         "estimated bytes allocated", MT_AXIS_BYTES, bars, (size_t)n};
  snprintf(path, sizeof path, "%s/lifetimes.svg", dir);
  svg_or_die(mt_svg_write_bar_chart(path, &lc), path);

  for (int s = 0; s < 3 && !c->native; s++) {
    mt_estimate e = mt_sampling_bytes(sp, &g->source[s]);
    snprintf(notes[s], sizeof notes[s], "%.1f%%",
             100 * share((double)g->source[s].samples, (double)g->all.samples));
    bars[s] = (mt_svg_bar){source_name[s], e.value, e.lo, e.hi, notes[s], 0};
  }
  mt_svg_bar_chart sc = {"Sources by estimated bytes", sub, "source", "estimated bytes allocated",
                         MT_AXIS_BYTES, bars, 3};
  snprintf(path, sizeof path, "%s/sources.svg", dir);
  if (!c->native) svg_or_die(mt_svg_write_bar_chart(path, &sc), path);

  if (c->nchunks > 1) {
    mt_svg_bar *cb = malloc(c->nchunks * sizeof *cb);
    char (*cl)[48] = malloc(c->nchunks * sizeof *cl);
    if (!cb || !cl) {
      fprintf(stderr, "memtrace stats: out of memory\n");
      exit(1);
    }
    for (size_t k = 0; k < c->nchunks; k++) {
      mt_estimate e = mt_sampling_bytes(sp, &chunks[k].all);
      snprintf(cl[k], sizeof cl[k], "%.3g-%.3g s", (double)chunks[k].from / 1e6,
               (double)chunks[k].to / 1e6);
      cb[k] = (mt_svg_bar){cl[k], e.value, e.lo, e.hi, NULL, 0};
    }
    mt_svg_bar_chart kc = {"Estimated bytes allocated by allocation time", sub,
                           "allocation time", "estimated bytes allocated", MT_AXIS_BYTES, cb,
                           c->nchunks};
    snprintf(path, sizeof path, "%s/chunks.svg", dir);
    svg_or_die(mt_svg_write_bar_chart(path, &kc), path);
    free(cb);
    free(cl);
  }
}

/* ---- main ---- */

static void json(const mt_command *cmd, const char *path, const mt_stats *s, const mt_filter *f,
                 char **filters, int nfilters) {
  mt_json j;
  mt_cli_json_begin(&j, cmd, NULL, NULL);
  mt_json_key(&j, "trace");
  mt_json_str(&j, path);
  /* the filter options as given, beside the filter they made */
  mt_json_key(&j, "filters");
  mt_json_arr(&j);
  for (int i = 0; i < nfilters; i++) mt_json_str(&j, filters[i]);
  mt_json_end_arr(&j);
  mt_json_stats(&j, s, f);
  mt_cli_json_end(&j, cmd);
}

/* The filter options of argv, as given. */
static int filter_args(int argc, char **argv, char **out) {
  int n = 0;
  mt_filter scratch;
  mt_filter_init(&scratch);
  char err[8];
  for (int i = 1; i < argc; i++) {
    int start = i;
    if (strcmp(argv[i], "--") == 0) break;
    if (mt_filter_option(&scratch, argc, argv, &i, err, sizeof err) > 0)
      for (int k = start; k <= i; k++) out[n++] = argv[k];
  }
  return n;
}

static int run(int argc, char **argv) {
  const mt_command *cmd = &mt_cmd_stats;
  static const char *args[MT_CLI_MAX_TRACES];
  const char *svg_dir = NULL;
  int as_json = 0, ascii = 0, format = 0;
  size_t nchunks = 1;
  mt_filter f;
  mt_filter_init(&f);
  const mt_option options[] = {
      {"--json", NULL, MT_OPT_FLAG, &as_json, NULL, 1, 0, 0},
      {"--format", NULL, MT_OPT_CHOICE, &format, "table|json", 0, 0, 0},
      {"--ascii", NULL, MT_OPT_FLAG, &ascii, NULL, 1, 0, 0},
      {"--svg", NULL, MT_OPT_TEXT, &svg_dir, NULL, 0, 0, 0},
      {"--chunks", NULL, MT_OPT_COUNT, &nchunks, NULL, 0, 1, 100000},
      {NULL, NULL, 0, NULL, NULL, 0, 0, 0}};
  mt_cli_spec spec = {options, &f, args, 1, MT_CLI_MAX_TRACES, "TRACE", 0, 0, NULL};
  size_t nargs = mt_cli_parse(cmd, argc, argv, &spec);

  /* several traces: one analysis of them all, as the viewer reads them */
  char **paths;
  size_t n = mt_cli_traces(cmd, args, nargs, &paths);
  mt_analysis *a = mt_cli_load_many(cmd, (const char *const *)paths, n);
  mt_cli_warn_unmatched(cmd, &f, (const mt_analysis *const *)&a, 1);
  char many[128];
  snprintf(many, sizeof many, "%zu traces (%s ...)", n, paths[0]);
  const char *path = n == 1 ? paths[0] : many;
  mt_stats *s;
  if (mt_stats_compute(a, &f, nchunks, &s) != MT_OK) mt_cli_nomem(cmd);
  char **filters = mt_cli_xrealloc(cmd, NULL, (size_t)argc * sizeof *filters);
  int nfilters = filter_args(argc, argv, filters);
  int native = !mt_analysis_has_runtime_heap(a);
  ctx c = {s,       path,
           s->nlife, nfilters > 0,
           mt_term_columns(), ascii,
           nchunks, s->all.to - s->all.from,
           native,  native ? "never freed" : "never collected"};
  /* The SVG directory first: a failure there should not follow a report. */
  if (svg_dir && mkdir(svg_dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "memtrace stats: %s: cannot create: %s\n", svg_dir, strerror(errno));
    exit(1);
  }
  if (as_json || format == 1) {
    json(cmd, path, s, &f, filters, nfilters);
  } else {
    mt_out o;
    mt_out_init(&o, 1);
    terminal(&o, &c, &s->all, s->chunks);
    mt_out_flush(&o);
    mt_out_free(&o);
  }
  if (svg_dir) svgs(&c, svg_dir, &s->all, s->chunks);
  free(filters);
  mt_stats_free(s);
  mt_analysis_free(a);
  for (size_t i = 0; i < n; i++) free(paths[i]);
  free(paths);
  return 0;
}

const mt_command mt_cmd_stats = {
    "stats", "allocation statistics: sizes, lifetimes, sources, estimated", usage, run};
