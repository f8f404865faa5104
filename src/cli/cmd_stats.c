/* memtrace stats: the allocation statistics of Jane Street's ocaml-alloc-stats
 * notebook (size histogram, share of large blocks, size moments), and more
 * (lifetimes, sources, promotion, time chunks), estimated for the whole
 * program from the sampled objects of a trace.
 *
 * Estimators (each object is one sampled allocation):
 *  - P, the chance that an allocation of w words was sampled at all, is
 *    1 - (1 - rate)^w, where w counts the OCaml header word for minor and
 *    major blocks (the sampler draws over it too) and not for external ones;
 *  - allocations: Horvitz-Thompson, the sum of 1/P over the sampled objects,
 *    with the variance estimate sum of (1-P)/P^2 (the library's tallies);
 *  - bytes: samples / rate x word bytes (memtrace's own estimator; it counts
 *    OCaml header words);
 *  - population size moments, for sizes x in words (header excluded): the
 *    same 1/P weights, as ratio (Hajek) estimates: mean = sum(x/P) /
 *    sum(1/P), variance = sum((x-mean)^2/P) / sum(1/P); the largest size is
 *    the largest sampled one (a lower bound).
 * At rate 1 every allocation is sampled, P = 1, and all of these are exact. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis_cli.h"
#include "output.h"
#include "svg.h"

static const char usage[] =
    "usage: memtrace stats [OPTIONS] [FILTERS] TRACE\n"
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
    "Options:\n"
    "  --chunks N     also split by allocation time into N chunks (default 1:\n"
    "                 the whole trace, or the --time span, only)\n"
    "  --json         print every figure as JSON instead of charts\n"
    "  --svg DIR      also write the charts as SVG files into DIR (created if\n"
    "                 missing): sizes-count.svg, sizes-bytes.svg, lifetimes.svg,\n"
    "                 sources.svg, and chunks.svg with --chunks N > 1\n"
    "  --ascii        draw bars with '#' instead of Unicode blocks\n"
    "  -h, --help     this help\n"
    "\n" MT_CLI_FILTER_HELP
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

/* Size bins, in words, inclusive upper bounds (the last is open). */
#define NSIZE 4
static const uint64_t size_max[NSIZE] = {32, 256, 10000, UINT64_MAX};
static const char *const size_label[NSIZE] = {"0-32 w", "33-256 w", "257-10k w", ">10k w"};
static const char *const size_key[NSIZE] = {"0-32", "33-256", "257-10000", ">10000"};

/* Lifetime decades: bin 0 holds lifetimes under 1 us, bin k >= 1 those in
 * [10^(k-1), 10^k) us; a uint64_t of us has at most 20 digits. */
#define NLIFE 21
static const char *const source_name[3] = {"minor", "major", "external"};

typedef struct moments {
  /* Welford's running mean and sum of squared deviations: stable where
   * sum(x^2) - n mean^2 would cancel. The weighted form is West's. */
  double n, mean, m2;
  uint64_t max;
} moments;

typedef struct group {
  uint64_t from, to; /* allocation times covered, us */
  mt_tally all, size[NSIZE], life[NLIFE], never, src[3], promoted;
  moments sampled, population;
} group;

static void moments_add(moments *m, double x, double w) {
  m->n += w;
  double d = x - m->mean;
  m->mean += d * (w / m->n);
  m->m2 += w * d * (x - m->mean);
}

static int size_bin(uint64_t len) {
  int b = 0;
  while (len > size_max[b]) b++;
  return b;
}

static int life_bin(uint64_t life) {
  int k = 0;
  while (life > 0) life /= 10, k++; /* k = number of decimal digits */
  return k;
}

/* ---- the pass ---- */

typedef struct weights {
  double log1m_rate;
  double w[4096], v[4096]; /* 1/P and (1-P)/P^2 for small sizes */
} weights;

static void weights_init(weights *wt, double rate) {
  wt->log1m_rate = log1p(-rate);
  for (size_t i = 0; i < 4096; i++) {
    double p = i ? -expm1((double)i * wt->log1m_rate) : 1.0;
    wt->w[i] = 1.0 / p;
    wt->v[i] = (1.0 - p) / (p * p);
  }
}

static void weight(const weights *wt, uint64_t w, double *inv_p, double *var) {
  if (w < 4096) {
    *inv_p = wt->w[w];
    *var = wt->v[w];
  } else {
    double p = -expm1((double)w * wt->log1m_rate);
    *inv_p = 1.0 / p;
    *var = (1.0 - p) / (p * p);
  }
}

static void group_add(group *g, const mt_object *o, const mt_tally *t) {
  mt_tally_add(&g->all, t);
  mt_tally_add(&g->size[size_bin(o->length)], t);
  if (o->free_time == MT_NEVER) mt_tally_add(&g->never, t);
  else {
    uint64_t life = o->free_time > o->alloc_time ? o->free_time - o->alloc_time : 0;
    mt_tally_add(&g->life[life_bin(life)], t);
  }
  mt_tally_add(&g->src[o->source], t);
  if (o->source == MT_SOURCE_MINOR && o->promote_time != MT_NEVER) mt_tally_add(&g->promoted, t);
  moments_add(&g->sampled, (double)o->length, 1.0);
  moments_add(&g->population, (double)o->length, t->ht);
  if (o->length > g->sampled.max) g->sampled.max = o->length;
}

/* Which stacks pass --inside / --not-inside, worked out once per stack.
 * mt_analysis_matches recomputes this for every object it is asked about
 * (O(stacks) each), and the library has no bulk per-object query, so the
 * name conditions are evaluated here and the rest of the filter is left to
 * mt_analysis_matches. NULL when there is no name condition. */
static uint8_t *stack_pass(const mt_analysis *a, const mt_filter *f) {
  int in = f->inside && f->inside[0], out = f->not_inside && f->not_inside[0];
  if (!in && !out) return NULL;
  size_t ncodes = mt_analysis_code_count(a), nst = mt_analysis_stack_count(a);
  uint8_t *code = malloc(ncodes + 1), *has = malloc(nst + 1);
  if (!code || !has) {
    fprintf(stderr, "memtrace stats: out of memory\n");
    exit(1);
  }
  for (size_t c = 0; c < ncodes; c++) {
    size_t n;
    const mt_frame *fr = mt_analysis_code_frames(a, (uint32_t)c, &n);
    uint8_t bits = 0;
    for (size_t k = 0; k < n; k++) {
      const char *name = mt_analysis_function_name(a, fr[k].function);
      if (in && strstr(name, f->inside)) bits |= 1;
      if (out && strstr(name, f->not_inside)) bits |= 2;
    }
    code[c] = bits;
  }
  /* bit 0: some frame matches --inside; bit 1: some matches --not-inside.
   * A stack's bits are its parent's plus its last frame's. The library
   * numbers a parent before its children, so one pass in id order does;
   * should that ever change, the slower walk below still gives the answer
   * (memory: one byte per stack, the bound a 10M-event trace needs). */
  has[0] = 0;
  for (size_t s = 1; s < nst; s++) {
    uint32_t p = mt_analysis_stack_parent(a, (uint32_t)s);
    uint8_t up = 0;
    if (p < s) up = has[p];
    else /* the frames from the root: a walk, each step one frame up */
      for (uint32_t x = p; x != 0; x = mt_analysis_stack_parent(a, x))
        up |= code[mt_analysis_stack_code(a, x)];
    has[s] = up | code[mt_analysis_stack_code(a, (uint32_t)s)];
  }
  for (size_t s = 0; s < nst; s++)
    has[s] = (uint8_t)((!in || (has[s] & 1)) && (!out || !(has[s] & 2)));
  free(code);
  return has;
}

/* ---- formatting ---- */

static const char *fmt_count(char *buf, size_t n, double v) {
  if (v < 9999.5) snprintf(buf, n, "%.0f", v);
  else if (v < 999.5e3) snprintf(buf, n, "%.3gk", v / 1e3);
  else if (v < 999.5e6) snprintf(buf, n, "%.3gM", v / 1e6);
  else snprintf(buf, n, "%.3gG", v / 1e9);
  return buf;
}

/* "+-2.1%": the wider side of the interval, relative; "" when exact. */
static const char *fmt_pm(char *buf, size_t n, mt_estimate e) {
  double d = fmax(e.hi - e.value, e.value - e.lo);
  if (!(e.value > 0) || !(d > 0)) snprintf(buf, n, "%s", "");
  else if (d / e.value >= 9.995) snprintf(buf, n, "+-%.0fx", d / e.value);
  else snprintf(buf, n, "+-%.*f%%", d / e.value < 0.1 ? 1 : 0, 100 * d / e.value);
  return buf;
}

static double share(double part, double whole) { return whole > 0 ? part / whole : 0; }

static void life_label(char *buf, size_t n, int k) {
  static const char *const dec[] = {"1", "10", "100"};
  static const char *const unit[] = {"us", "ms", "s", "ks", "Ms", "Gs", "Ts"};
  if (k == 0) {
    snprintf(buf, n, "<1 us");
    return;
  }
  /* [10^(k-1), 10^k) us: "1-10 us", "10-100 us", "0.1-1 ms", ... */
  int lo = k - 1, u = lo / 3, r = lo % 3;
  if (r < 2) snprintf(buf, n, "%s-%s %s", dec[r], dec[r + 1], unit[u]);
  else snprintf(buf, n, "0.1-1 %s", unit[u + 1]);
}

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
  if (bytes) mt_cli_bytes(v, sizeof v, e.value);
  else fmt_count(v, sizeof v, e.value);
  fmt_pm(pm, sizeof pm, e);
  snprintf(buf, n, "%9s %-6s %5.1f%%%s%s", v, pm, 100 * sh, what[0] ? " " : "", what);
}

/* ---- output: terminal ---- */

typedef struct ctx {
  const mt_analysis *a;
  const char *path;
  int nlife; /* lifetime bins in use: 1 + digits of the duration */
  int filtered;
  int cols, ascii;
  size_t nchunks;
  uint64_t span; /* allocation times the chunks split, us */
} ctx;

static void terminal_group(mt_out *o, const ctx *c, const group *g) {
  const mt_analysis *a = c->a;
  mt_estimate eo = mt_estimate_objects(a, &g->all), eb = mt_estimate_bytes(a, &g->all);
  char b1[48], b2[48], b3[48], b4[48];
  row rows[NLIFE + 1];

  fmt_pm(b2, sizeof b2, eo);
  mt_out_printf(o, "\nSizes, by estimated allocations (%s%s%s)\n",
                fmt_count(b1, sizeof b1, eo.value), b2[0] ? " " : "", b2);
  for (int b = 0; b < NSIZE; b++) {
    mt_estimate e = mt_estimate_objects(a, &g->size[b]);
    snprintf(rows[b].label, sizeof rows[b].label, "%s", size_label[b]);
    rows[b].v = e.value;
    rows[b].gap = 0;
    est_text(rows[b].text, sizeof rows[b].text, "", e, share(e.value, eo.value), 0);
  }
  draw_rows(o, rows, NSIZE, c->cols, c->ascii);

  fmt_pm(b2, sizeof b2, eb);
  mt_out_printf(o, "\nSizes, by estimated bytes (%s%s%s)\n",
                mt_cli_bytes(b1, sizeof b1, eb.value), b2[0] ? " " : "", b2);
  for (int b = 0; b < NSIZE; b++) {
    mt_estimate e = mt_estimate_bytes(a, &g->size[b]);
    snprintf(rows[b].label, sizeof rows[b].label, "%s", size_label[b]);
    rows[b].v = e.value;
    rows[b].gap = 0;
    est_text(rows[b].text, sizeof rows[b].text, "",
             e, share((double)g->size[b].samples, (double)g->all.samples), 1);
  }
  draw_rows(o, rows, NSIZE, c->cols, c->ascii);

  double big_o = 0, big_s = 0;
  for (int b = 2; b < NSIZE; b++) big_o += g->size[b].ht, big_s += (double)g->size[b].samples;
  mt_out_printf(o,
                "\nOver 256 words (allocated directly on the major heap):\n"
                "  %.2f%% of allocations, %.2f%% of bytes\n",
                100 * share(big_o, g->all.ht), 100 * share(big_s, (double)g->all.samples));

  /* One column per set of weights, so that it fits any width. */
  double var_s = g->sampled.n > 0 ? fmax(g->sampled.m2 / g->sampled.n, 0) : 0;
  double var_p = g->population.n > 0 ? fmax(g->population.m2 / g->population.n, 0) : 0;
  mt_out_printf(o, "\n%-16s %16s %16s\n", "Sizes (words)", "sampled objects", "estimated (1/P)");
  mt_out_printf(o, "  %-14s %16s %16s\n", "count", fmt_count(b1, sizeof b1, g->sampled.n),
                fmt_count(b2, sizeof b2, g->population.n));
  mt_out_printf(o, "  %-14s %16.2f %16.2f\n", "mean", g->sampled.mean, g->population.mean);
  mt_out_printf(o, "  %-14s %16.2f %16.2f\n", "variance", var_s, var_p);
  mt_out_printf(o, "  %-14s %16.2f %16.2f\n", "std dev", sqrt(var_s), sqrt(var_p));
  mt_out_printf(o, "  %-14s %16llu %16s\n", "max", (unsigned long long)g->sampled.max,
                "(the same)");

  mt_out_printf(o, "\nLifetimes, by estimated bytes\n");
  int n = 0;
  for (int k = 0; k < c->nlife; k++, n++) {
    mt_estimate e = mt_estimate_bytes(a, &g->life[k]), ob = mt_estimate_objects(a, &g->life[k]);
    life_label(rows[n].label, sizeof rows[n].label, k);
    rows[n].v = e.value;
    rows[n].gap = 0;
    snprintf(b3, sizeof b3, "%s allocs", fmt_count(b4, sizeof b4, ob.value));
    est_text(rows[n].text, sizeof rows[n].text, b3, e,
             share((double)g->life[k].samples, (double)g->all.samples), 1);
  }
  {
    mt_estimate e = mt_estimate_bytes(a, &g->never), ob = mt_estimate_objects(a, &g->never);
    snprintf(rows[n].label, sizeof rows[n].label, "never collected");
    rows[n].v = e.value;
    rows[n].gap = 1;
    snprintf(b3, sizeof b3, "%s allocs", fmt_count(b4, sizeof b4, ob.value));
    est_text(rows[n].text, sizeof rows[n].text, b3, e,
             share((double)g->never.samples, (double)g->all.samples), 1);
    n++;
  }
  draw_rows(o, rows, (size_t)n, c->cols, c->ascii);

  mt_out_printf(o, "\nSources, by estimated bytes\n");
  for (int s = 0; s < 3; s++) {
    mt_estimate e = mt_estimate_bytes(a, &g->src[s]), ob = mt_estimate_objects(a, &g->src[s]);
    snprintf(rows[s].label, sizeof rows[s].label, "%s", source_name[s]);
    rows[s].v = e.value;
    rows[s].gap = 0;
    snprintf(b3, sizeof b3, "%s allocs", fmt_count(b4, sizeof b4, ob.value));
    est_text(rows[s].text, sizeof rows[s].text, b3, e,
             share((double)g->src[s].samples, (double)g->all.samples), 1);
  }
  draw_rows(o, rows, 3, c->cols, c->ascii);

  const mt_tally *mi = &g->src[MT_SOURCE_MINOR], *pr = &g->promoted;
  if (mi->objects)
    mt_out_printf(o,
                  "\nPromotion: %.2f%% of minor allocations were promoted\n"
                  "  (%.2f%% of minor bytes; %llu of %llu sampled)\n",
                  100 * share(pr->ht, mi->ht), 100 * share((double)pr->samples, (double)mi->samples),
                  (unsigned long long)pr->objects, (unsigned long long)mi->objects);
  else mt_out_printf(o, "\nPromotion: no minor allocations\n");
}

static void terminal(mt_out *o, const ctx *c, const group *all, const group *chunks) {
  const mt_analysis *a = c->a;
  const mt_trace_info *in = mt_analysis_info(a);
  char b1[48], b2[48];
  mt_out_printf(o, "memtrace stats: %s\n", c->path);
  mt_out_printf(o, "  sample rate %g per word (one sample per %s)\n", in->sample_rate,
                mt_cli_bytes(b1, sizeof b1, mt_analysis_word_bytes(a) / in->sample_rate));
  mt_out_printf(o, "  duration %s; %llu sampled objects%s\n",
                mt_cli_duration(b2, sizeof b2, (double)mt_analysis_duration(a)),
                (unsigned long long)all->all.objects, c->filtered ? " pass the filters" : "");
  mt_out_printf(o,
                "  Estimates for all allocations: count = sum of 1/P,\n"
                "  bytes = samples / rate x word size; +- is the wider\n"
                "  side of the 95%% interval.\n");
  terminal_group(o, c, all);
  if (c->nchunks <= 1) return;

  mt_out_printf(o, "\nBy allocation time, %zu chunks (estimated sizes in words)\n", c->nchunks);
  char head[256];
  /* Narrow terminals drop the std dev and max columns. */
  int wide = c->cols >= 80;
  int hl = wide ? snprintf(head, sizeof head, "  %-15s %7s %10s %8s %8s %7s %6s %6s", "time (s)",
                           "allocs", "bytes", "mean", "std dev", "max", ">256w", "bytes")
                : snprintf(head, sizeof head, "  %-15s %7s %10s %8s %6s %6s", "time (s)",
                           "allocs", "bytes", "mean", ">256w", "bytes");
  mt_out_printf(o, "%s\n", head);
  double maxb = 0;
  for (size_t k = 0; k < c->nchunks; k++)
    if ((double)chunks[k].all.samples > maxb) maxb = (double)chunks[k].all.samples;
  int bw = c->cols - hl - 2;
  for (size_t k = 0; k < c->nchunks; k++) {
    const group *g = &chunks[k];
    mt_estimate eo = mt_estimate_objects(a, &g->all), eb = mt_estimate_bytes(a, &g->all);
    double big_o = 0, big_s = 0;
    for (int b = 2; b < NSIZE; b++) big_o += g->size[b].ht, big_s += (double)g->size[b].samples;
    double var = g->population.n > 0 ? fmax(g->population.m2 / g->population.n, 0) : 0;
    char range[40], c1[24], c2[24], mx[24];
    /* Milliseconds show, unless chunks are shorter. */
    int prec = c->span / c->nchunks < 1000 ? 6 : 3;
    snprintf(range, sizeof range, "%.*f-%.*f", prec, (double)g->from / 1e6, prec,
             (double)g->to / 1e6);
    fmt_count(mx, sizeof mx, (double)g->sampled.max);
    if (wide)
      mt_out_printf(o, "  %-15s %7s %10s %8.1f %8.1f %7s %5.1f%% %5.1f%%", range,
                    fmt_count(c1, sizeof c1, eo.value), mt_cli_bytes(c2, sizeof c2, eb.value),
                    g->population.mean, sqrt(var), mx, 100 * share(big_o, g->all.ht),
                    100 * share(big_s, (double)g->all.samples));
    else
      mt_out_printf(o, "  %-15s %7s %10s %8.1f %5.1f%% %5.1f%%", range,
                    fmt_count(c1, sizeof c1, eo.value), mt_cli_bytes(c2, sizeof c2, eb.value),
                    g->population.mean, 100 * share(big_o, g->all.ht),
                    100 * share(big_s, (double)g->all.samples));
    if (bw >= 4) {
      mt_out_str(o, "  ");
      mt_term_hbar(o, maxb > 0 ? (double)g->all.samples / maxb : 0, bw, c->ascii);
    }
    mt_out_char(o, '\n');
  }
  mt_out_printf(o, "  (%s: estimated, in words; >256w: the\n"
                   "  share of allocations over 256 words, then of bytes)\n",
                wide ? "mean, std dev" : "mean");
}

/* ---- output: JSON ---- */

static void jnum(mt_out *o, double v) {
  char buf[40];
  mt_out_str(o, mt_fmt_double(buf, sizeof buf, v));
}

static void jstr(mt_out *o, const char *s) {
  mt_out_char(o, '"');
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') {
      mt_out_char(o, '\\');
      mt_out_char(o, (char)ch);
    } else if (ch < 0x20) {
      mt_out_printf(o, "\\u%04x", ch);
    } else {
      mt_out_char(o, (char)ch);
    }
  }
  mt_out_char(o, '"');
}

static void jest(mt_out *o, const char *key, mt_estimate e) {
  mt_out_printf(o, "\"%s\": {\"value\": ", key);
  jnum(o, e.value);
  mt_out_str(o, ", \"lo\": ");
  jnum(o, e.lo);
  mt_out_str(o, ", \"hi\": ");
  jnum(o, e.hi);
  mt_out_str(o, "}");
}

/* The figures of one tally, as members of an open object. */
static void jtally(mt_out *o, const mt_analysis *a, const mt_tally *t, const mt_tally *whole) {
  mt_out_printf(o, "\"sampled_objects\": %llu, \"samples\": %llu, ",
                (unsigned long long)t->objects, (unsigned long long)t->samples);
  jest(o, "objects", mt_estimate_objects(a, t));
  mt_out_str(o, ", ");
  jest(o, "bytes", mt_estimate_bytes(a, t));
  if (whole) {
    mt_out_str(o, ", \"objects_share\": ");
    jnum(o, share(t->ht, whole->ht));
    mt_out_str(o, ", \"bytes_share\": ");
    jnum(o, share((double)t->samples, (double)whole->samples));
  }
}

static void jmoments(mt_out *o, const char *key, const moments *m, uint64_t max) {
  double var = m->n > 0 ? fmax(m->m2 / m->n, 0) : 0;
  mt_out_printf(o, "\"%s\": {\"count\": ", key);
  jnum(o, m->n);
  mt_out_str(o, ", \"mean\": ");
  jnum(o, m->mean);
  mt_out_str(o, ", \"variance\": ");
  jnum(o, var);
  mt_out_str(o, ", \"stddev\": ");
  jnum(o, sqrt(var));
  mt_out_printf(o, ", \"max\": %llu}", (unsigned long long)max);
}

static void json_group(mt_out *o, const ctx *c, const group *g, const char *ind) {
  const mt_analysis *a = c->a;
  mt_out_printf(o, "%s\"from_s\": ", ind);
  jnum(o, (double)g->from / 1e6);
  mt_out_str(o, ", \"to_s\": ");
  jnum(o, (double)g->to / 1e6);
  mt_out_printf(o, ",\n%s", ind);
  jtally(o, a, &g->all, NULL);
  mt_out_printf(o, ",\n%s\"size_histogram\": [\n", ind);
  for (int b = 0; b < NSIZE; b++) {
    mt_out_printf(o, "%s  {\"bin\": \"%s\", \"min_words\": %llu, \"max_words\": ", ind,
                  size_key[b], (unsigned long long)(b ? size_max[b - 1] + 1 : 0));
    if (size_max[b] == UINT64_MAX) mt_out_str(o, "null");
    else mt_out_printf(o, "%llu", (unsigned long long)size_max[b]);
    mt_out_str(o, ", ");
    jtally(o, a, &g->size[b], &g->all);
    mt_out_printf(o, "}%s\n", b + 1 < NSIZE ? "," : "");
  }
  mt_tally big = g->size[2];
  mt_tally_add(&big, &g->size[3]);
  mt_out_printf(o, "%s],\n%s\"over_256_words\": {", ind, ind);
  jtally(o, a, &big, &g->all);
  mt_out_printf(o, "},\n%s\"size_words\": {", ind);
  jmoments(o, "sampled", &g->sampled, g->sampled.max);
  mt_out_str(o, ", ");
  jmoments(o, "estimated", &g->population, g->sampled.max);
  mt_out_printf(o, "},\n%s\"lifetime_histogram\": [\n", ind);
  for (int k = 0; k < c->nlife; k++) {
    char lab[32];
    life_label(lab, sizeof lab, k);
    uint64_t lo = 0, hi = 1;
    for (int j = 1; j < k; j++) hi *= 10;
    if (k > 0) lo = hi, hi = (k < 20) ? hi * 10 : UINT64_MAX;
    mt_out_printf(o, "%s  {\"bin\": \"%s\", \"from_us\": %llu, \"to_us\": ", ind, lab,
                  (unsigned long long)lo);
    if (hi == UINT64_MAX) mt_out_str(o, "null");
    else mt_out_printf(o, "%llu", (unsigned long long)hi);
    mt_out_str(o, ", ");
    jtally(o, a, &g->life[k], &g->all);
    mt_out_printf(o, "}%s\n", k + 1 < c->nlife ? "," : "");
  }
  mt_out_printf(o, "%s],\n%s\"never_collected\": {", ind, ind);
  jtally(o, a, &g->never, &g->all);
  mt_out_printf(o, "},\n%s\"sources\": {\n", ind);
  for (int s = 0; s < 3; s++) {
    mt_out_printf(o, "%s  \"%s\": {", ind, source_name[s]);
    jtally(o, a, &g->src[s], &g->all);
    mt_out_printf(o, "}%s\n", s < 2 ? "," : "");
  }
  const mt_tally *mi = &g->src[MT_SOURCE_MINOR], *pr = &g->promoted;
  mt_out_printf(o, "%s},\n%s\"promotion\": {", ind, ind);
  jtally(o, a, pr, NULL);
  mt_out_str(o, ", \"rate\": ");
  jnum(o, mi->objects ? share(pr->ht, mi->ht) : NAN);
  mt_out_str(o, ", \"rate_bytes\": ");
  jnum(o, mi->objects ? share((double)pr->samples, (double)mi->samples) : NAN);
  mt_out_str(o, ", \"rate_sampled\": ");
  jnum(o, mi->objects ? share((double)pr->objects, (double)mi->objects) : NAN);
  mt_out_str(o, "}\n");
}

static void json(mt_out *o, const ctx *c, const group *all, const group *chunks,
                 char **filters, int nfilters) {
  const mt_analysis *a = c->a;
  const mt_trace_info *in = mt_analysis_info(a);
  mt_out_str(o, "{\n  \"trace\": ");
  jstr(o, c->path);
  mt_out_str(o, ",\n  \"sample_rate\": ");
  jnum(o, in->sample_rate);
  mt_out_str(o, ",\n  \"word_bytes\": ");
  jnum(o, mt_analysis_word_bytes(a));
  mt_out_str(o, ",\n  \"duration_s\": ");
  jnum(o, (double)mt_analysis_duration(a) / 1e6);
  mt_out_str(o, ",\n  \"filters\": [");
  for (int i = 0; i < nfilters; i++) {
    if (i) mt_out_str(o, ", ");
    jstr(o, filters[i]);
  }
  mt_out_str(o, "],\n  \"estimators\": {\"objects\": \"Horvitz-Thompson: sum of 1/P, "
                "P = 1-(1-rate)^w, w = length+1 (minor, major) or length (external)\", "
                "\"bytes\": \"samples / rate x word_bytes\", \"size_words.estimated\": "
                "\"1/P-weighted mean and variance (divided by the sum of weights); max is "
                "the largest sampled\", \"size_words.sampled\": \"unweighted over sampled "
                "objects (variance divided by the count)\", \"intervals\": \"95%\"},\n");
  mt_out_str(o, "  \"all\": {\n");
  json_group(o, c, all, "    ");
  mt_out_str(o, "  }");
  if (c->nchunks > 1) {
    mt_out_str(o, ",\n  \"chunks\": [\n");
    for (size_t k = 0; k < c->nchunks; k++) {
      mt_out_str(o, "    {\n");
      json_group(o, c, &chunks[k], "      ");
      mt_out_printf(o, "    }%s\n", k + 1 < c->nchunks ? "," : "");
    }
    mt_out_str(o, "  ]");
  }
  mt_out_str(o, "\n}\n");
}

/* ---- output: SVG ---- */

static void svg_or_die(int rc, const char *path) {
  if (rc != 0) {
    fprintf(stderr, "memtrace stats: %s: cannot write: %s\n", path, strerror(errno));
    exit(1);
  }
}

static void svgs(const ctx *c, const char *dir, const group *g, const group *chunks) {
  const mt_analysis *a = c->a;
  char path[4096], sub[512], notes[NLIFE + 1][24], labels[NLIFE + 1][40];
  mt_svg_bar bars[NLIFE + 1];
  snprintf(sub, sizeof sub, "%s: %llu sampled objects%s, rate %g; whiskers: 95%% intervals",
           c->path, (unsigned long long)g->all.objects, c->filtered ? " (filtered)" : "",
           mt_analysis_info(a)->sample_rate);

  for (int by_bytes = 0; by_bytes < 2; by_bytes++) {
    for (int b = 0; b < NSIZE; b++) {
      mt_estimate e = by_bytes ? mt_estimate_bytes(a, &g->size[b])
                               : mt_estimate_objects(a, &g->size[b]);
      double sh = by_bytes ? share((double)g->size[b].samples, (double)g->all.samples)
                           : share(g->size[b].ht, g->all.ht);
      snprintf(notes[b], sizeof notes[b], "%.1f%%", 100 * sh);
      bars[b] = (mt_svg_bar){size_key[b], e.value, e.lo, e.hi, notes[b], 0};
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
    mt_estimate e = mt_estimate_bytes(a, &g->life[k]);
    life_label(labels[n], sizeof labels[n], k);
    snprintf(notes[n], sizeof notes[n], "%.1f%%",
             100 * share((double)g->life[k].samples, (double)g->all.samples));
    bars[n] = (mt_svg_bar){labels[n], e.value, e.lo, e.hi, notes[n], 0};
  }
  {
    mt_estimate e = mt_estimate_bytes(a, &g->never);
    snprintf(notes[n], sizeof notes[n], "%.1f%%",
             100 * share((double)g->never.samples, (double)g->all.samples));
    bars[n] = (mt_svg_bar){"never collected", e.value, e.lo, e.hi, notes[n], 1};
    n++;
  }
  mt_svg_bar_chart lc = {"Lifetimes by estimated bytes", sub, "lifetime (collection - allocation)",
                         "estimated bytes allocated", MT_AXIS_BYTES, bars, (size_t)n};
  snprintf(path, sizeof path, "%s/lifetimes.svg", dir);
  svg_or_die(mt_svg_write_bar_chart(path, &lc), path);

  for (int s = 0; s < 3; s++) {
    mt_estimate e = mt_estimate_bytes(a, &g->src[s]);
    snprintf(notes[s], sizeof notes[s], "%.1f%%",
             100 * share((double)g->src[s].samples, (double)g->all.samples));
    bars[s] = (mt_svg_bar){source_name[s], e.value, e.lo, e.hi, notes[s], 0};
  }
  mt_svg_bar_chart sc = {"Sources by estimated bytes", sub, "source", "estimated bytes allocated",
                         MT_AXIS_BYTES, bars, 3};
  snprintf(path, sizeof path, "%s/sources.svg", dir);
  svg_or_die(mt_svg_write_bar_chart(path, &sc), path);

  if (c->nchunks > 1) {
    mt_svg_bar *cb = malloc(c->nchunks * sizeof *cb);
    char (*cl)[48] = malloc(c->nchunks * sizeof *cl);
    if (!cb || !cl) {
      fprintf(stderr, "memtrace stats: out of memory\n");
      exit(1);
    }
    for (size_t k = 0; k < c->nchunks; k++) {
      mt_estimate e = mt_estimate_bytes(a, &chunks[k].all);
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

static int run(int argc, char **argv) {
  const mt_command *cmd = &mt_cmd_stats;
  const char *path = NULL, *svg_dir = NULL;
  int as_json = 0, ascii = 0;
  unsigned long nchunks = 1;
  mt_filter f;
  mt_filter_init(&f);
  char **filters = calloc((size_t)argc + 1, sizeof *filters);
  int nfilters = 0;
  if (!filters) return 1;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    if (mt_cli_is_help(o)) {
      free(filters);
      return mt_cli_help(cmd);
    }
    int start = i;
    if (mt_cli_filter_option(cmd, argc, argv, &i, &f)) {
      /* Kept as given, for the JSON's record of what was asked. */
      for (int k = start; k <= i; k++) filters[nfilters++] = argv[k];
    } else if (strcmp(o, "--json") == 0) as_json = 1;
    else if (strcmp(o, "--ascii") == 0) ascii = 1;
    else if (strcmp(o, "--svg") == 0 || strncmp(o, "--svg=", 6) == 0) {
      if (o[5] == '=') svg_dir = o + 6;
      else if (i + 1 < argc) svg_dir = argv[++i];
      else mt_cli_usage_error(cmd, "--svg needs a directory");
      if (!*svg_dir) mt_cli_usage_error(cmd, "--svg needs a directory");
    } else if (strcmp(o, "--chunks") == 0 || strncmp(o, "--chunks=", 9) == 0) {
      const char *v = o[8] == '=' ? o + 9 : i + 1 < argc ? argv[++i] : NULL;
      if (!v) mt_cli_usage_error(cmd, "--chunks needs a number");
      char *end;
      errno = 0;
      nchunks = strtoul(v, &end, 10);
      if (!*v || *end || errno || v[0] == '-' || nchunks < 1 || nchunks > 100000)
        mt_cli_usage_error(cmd, "--chunks wants a number from 1 to 100000, not '%s'", v);
    } else if (o[0] == '-' && o[1]) mt_cli_usage_error(cmd, "unknown option '%s'", o);
    else if (path) mt_cli_usage_error(cmd, "unexpected argument '%s'", o);
    else path = o;
  }
  if (!path) mt_cli_usage_error(cmd, "missing TRACE");

  mt_analysis *a = mt_cli_load(path); /* the reader checks the rate is in (0, 1] */
  double rate = mt_analysis_info(a)->sample_rate;
  uint64_t duration = mt_analysis_duration(a);

  ctx c = {a, path, life_bin(duration) + 1, nfilters > 0, mt_term_columns(), ascii, nchunks, 0};
  /* Chunks split the allocation times the filter allows, within the trace. */
  uint64_t lo = f.alloc_from, hi = f.alloc_to < duration ? f.alloc_to : duration;
  if (hi < lo) hi = lo;
  c.span = hi - lo;
  group all;
  memset(&all, 0, sizeof all);
  all.from = lo;
  all.to = hi;
  group *chunks = calloc(nchunks, sizeof *chunks);
  weights *wt = malloc(sizeof *wt);
  if (!chunks || !wt) {
    fprintf(stderr, "memtrace stats: out of memory\n");
    return 1;
  }
  /* Chunk k starts at the first whole microsecond at or after
   * lo + k (hi - lo) / N, so that its integer bounds agree with the index
   * floor((t - lo) N / (hi - lo)) the pass files each object under. */
  for (size_t k = 0; k < nchunks; k++) {
    unsigned __int128 span = hi - lo;
    chunks[k].from = lo + (uint64_t)((span * k + nchunks - 1) / nchunks);
    chunks[k].to = lo + (uint64_t)((span * (k + 1) + nchunks - 1) / nchunks);
  }
  weights_init(wt, rate);

  uint8_t *stack_ok = stack_pass(a, &f);
  mt_filter rest = f;
  rest.inside = rest.not_inside = NULL;
  size_t nobj = mt_analysis_object_count(a);
  for (size_t i = 0; i < nobj; i++) {
    mt_object ob = mt_analysis_object(a, i);
    if (stack_ok && !stack_ok[ob.stack]) continue;
    if (!mt_analysis_matches(a, &rest, i)) continue;
    mt_tally t = {ob.nsamples, 1, 0, 0, 0};
    weight(wt, ob.length + (ob.source != MT_SOURCE_EXTERNAL), &t.ht, &t.ht_var);
    t.w_max = t.ht;
    group_add(&all, &ob, &t);
    if (nchunks > 1) {
      /* Chunk k holds times in [lo + k(hi-lo)/N, lo + (k+1)(hi-lo)/N), in
       * exact integer arithmetic; the trace's last instant joins the last. */
      size_t k = hi > lo && ob.alloc_time > lo
                     ? (size_t)((unsigned __int128)(ob.alloc_time - lo) * nchunks / (hi - lo))
                     : 0;
      if (k >= nchunks) k = nchunks - 1;
      group_add(&chunks[k], &ob, &t);
    }
  }
  free(stack_ok);
  free(wt);

  /* The SVG directory first: a failure there should not follow a report. */
  if (svg_dir && mkdir(svg_dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "memtrace stats: %s: cannot create: %s\n", svg_dir, strerror(errno));
    exit(1);
  }
  mt_out o;
  mt_out_init(&o, 1);
  if (as_json) json(&o, &c, &all, chunks, filters, nfilters);
  else terminal(&o, &c, &all, chunks);
  mt_out_flush(&o);
  mt_out_free(&o);
  if (svg_dir) svgs(&c, svg_dir, &all, chunks);
  free(chunks);
  free(filters);
  mt_analysis_free(a);
  return 0;
}

const mt_command mt_cmd_stats = {
    "stats", "allocation statistics: sizes, lifetimes, sources, estimated", usage, run};
