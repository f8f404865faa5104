/* Memory limits on a trace (check.h). */
#include "check.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/human.h"
#include "cli.h"
#include "memtrace/rank.h"
#include "memtrace/stats.h"

/* ---- parsing ----------------------------------------------------------------- */

/* A size as the filter language reads one ("1.5G"): the same suffixes. */
static int parse_size(const char *text, uint64_t *out, char *why, size_t n) {
  mt_filter f;
  mt_filter_init(&f);
  char range[128];
  snprintf(range, sizeof range, "%s..", text);
  if (strchr(text, '.') == text || strstr(text, "..") ||
      mt_filter_set(&f, "size", range, why, n) != MT_OK) {
    snprintf(why, n, "'%s' is not a size in bytes (a number, with an optional k, M, G or T suffix)",
             text);
    return -1;
  }
  *out = f.size_min;
  return 0;
}

int mt_cli_limits_parse(const mt_cli_limit_texts *t, const char *const names[5],
                        mt_cli_limits *out, char *err, size_t n) {
  *out = (mt_cli_limits){MT_CLI_NO_LIMIT, MT_CLI_NO_LIMIT, MT_CLI_NO_LIMIT, t->base, NULL, 0, -1,
                         t->strict};
  const char *texts[3] = {t->allocated, t->peak, t->leaked};
  uint64_t *dest[3] = {&out->allocated, &out->peak, &out->leaked};
  char why[256];
  for (int k = 0; k < 3; k++)
    if (texts[k] && parse_size(texts[k], dest[k], why, sizeof why) != 0) {
      snprintf(err, n, "%s: %s", names[k], why);
      return -1;
    }
  if (t->growth) {
    char *end;
    out->growth = strtod(t->growth, &end);
    if (*end == '%') end++;
    if (end == t->growth || *end || !(out->growth >= 0) || !isfinite(out->growth)) {
      snprintf(err, n, "%s: '%s' is not a percentage (10, 10%%, 2.5)", names[4], t->growth);
      return -1;
    }
  }
  if ((out->growth >= 0) != (t->base != NULL)) {
    snprintf(err, n, "%s and %s go together: growth is measured against a base trace", names[3],
             names[4]);
    return -1;
  }
  return 0;
}

int mt_cli_limits_any(const mt_cli_limits *l) {
  return l->allocated != MT_CLI_NO_LIMIT || l->peak != MT_CLI_NO_LIMIT ||
         l->leaked != MT_CLI_NO_LIMIT || l->growth >= 0;
}

/* ---- verdicts ---------------------------------------------------------------- */

enum { MET, AT_RISK, BROKEN };

typedef struct tally_of_verdicts {
  int broken, at_risk;
} tally_of_verdicts;

static int verdict(mt_estimate e, double limit, int strict) {
  if (!(e.value > limit)) return MET;
  return e.lo > limit || strict ? BROKEN : AT_RISK;
}

static const char *verdict_text(int v) {
  return v == MET ? "ok" : v == BROKEN ? "BROKEN" : "at risk";
}

/* "  allocated  1.23 GiB [1.20 GiB, 1.26 GiB]  limit 1.00 GiB: BROKEN" */
static int say_limit(FILE *out, const char *what, mt_estimate e, uint64_t limit, int strict,
                     const char *when, tally_of_verdicts *t) {
  char v[32], iv[96], lim[32];
  int verd = verdict(e, (double)limit, strict);
  fprintf(out, "  %-10s %9s %s%s  limit %s: %s\n", what, mt_human_bytes(v, sizeof v, e.value),
          mt_human_interval(iv, sizeof iv, e.value, e.lo, e.hi, 1), when,
          mt_human_bytes(lim, sizeof lim, (double)limit), verdict_text(verd));
  t->broken += verd == BROKEN;
  t->at_risk += verd == AT_RISK;
  return verd;
}

/* The rows of a ranking as the sites that make a figure. */
static void say_rows(FILE *out, const mt_ranking *r, int stacks) {
  for (size_t i = 0; i < r->nrows; i++) {
    const mt_rank_row *row = &r->rows[i];
    char v[32], iv[96], site[512];
    if (stacks && row->nframes) {
      const mt_stack_frame *f = &row->frames[0];
      if (f->function) snprintf(site, sizeof site, "%s (%s:%" PRIu32 ")", f->function, f->file, f->line);
      else snprintf(site, sizeof site, "#%" PRIx64, f->code);
      if (row->nframes > 1 && row->frames[1].function) {
        size_t len = strlen(site);
        snprintf(site + len, sizeof site - len, " <- %s", row->frames[1].function);
      }
    } else {
      mt_site_text(&row->site, 1, site, sizeof site);
    }
    fprintf(out, "      %9s %s  %s\n", mt_human_bytes(v, sizeof v, row->bytes.value),
            mt_human_interval(iv, sizeof iv, row->bytes.value, row->bytes.lo, row->bytes.hi, 1),
            site);
  }
}

static void top_sites(FILE *out, const mt_analysis *a, const mt_filter *f) {
  mt_rank_spec spec = {MT_BY_LINE, MT_ORDER_BYTES, 5, 0};
  mt_ranking *r;
  if (mt_rank(a, f, &spec, &r) != MT_OK) return;
  say_rows(out, r, 0);
  mt_ranking_free(r);
}

/* ---- the limits --------------------------------------------------------------- */

static void check_allocated(FILE *out, const mt_analysis *a, const mt_filter *f,
                            const mt_cli_limits *l, tally_of_verdicts *t) {
  mt_tally tally;
  if (mt_analysis_tally(a, f, &tally) != MT_OK) return;
  if (say_limit(out, "allocated", mt_estimate_bytes(a, &tally), l->allocated, l->strict, "", t) != MET)
    top_sites(out, a, f);
}

/* The peak of the live heap of the objects passing f: exact for the whole
 * heap; under a filter, the most at the ends of 4096 equal bins (a peak
 * between two ends is missed by at most what changed within a bin). */
static void check_peak(FILE *out, const mt_analysis *a, const mt_filter *f,
                       const mt_cli_limits *l, tally_of_verdicts *t) {
  mt_sampling s = mt_analysis_sampling(a);
  mt_tally peak = {0};
  uint64_t when;
  if (mt_filter_selects_all(f)) {
    mt_analysis_peak(a, &when, &peak.samples);
  } else {
    mt_timeline *tl;
    if (mt_timeline_compute(a, f, 4096, &tl) != MT_OK) return;
    size_t best = 0;
    for (size_t i = 1; i < tl->nbins; i++)
      if (tl->filtered[i] > tl->filtered[best]) best = i;
    peak.samples = (uint64_t)llround(tl->filtered[best] * s.rate / s.word_bytes);
    when = (uint64_t)tl->end[best];
    mt_timeline_free(tl);
  }
  char at[48];
  snprintf(at, sizeof at, " at %.3f s", (double)when / 1e6);
  if (say_limit(out, "peak", mt_sampling_bytes(&s, &peak), l->peak, l->strict, at, t) == MET) return;
  mt_filter live = *f;
  live.live = MT_LIVE_AT;
  live.live_at = when;
  top_sites(out, a, &live);
}

static void check_leaked(FILE *out, const mt_analysis *a, const mt_filter *f,
                         const mt_cli_limits *l, tally_of_verdicts *t) {
  mt_ranking *r;
  if (mt_leaks(a, f, MT_ORDER_BYTES, 5, 2, &r) != MT_OK) {
    fprintf(out, "  %-10s cannot be checked with a window of collection times\n", "leaked");
    return;
  }
  if (say_limit(out, "leaked", r->total_bytes, l->leaked, l->strict, "", t) != MET) say_rows(out, r, 1);
  mt_ranking_free(r);
}

/* Growth of the bytes allocated against the base trace, both filtered
 * alike; the sites that grew significantly. -1 when the base cannot be
 * read. */
static int check_growth(FILE *out, const mt_analysis *a, const mt_filter *f,
                        const mt_cli_limits *l, tally_of_verdicts *t) {
  mt_analysis *base;
  char **dir = NULL; /* a base that is a directory: its traces (memtrace run --check-base) */
  long listed = l->nbase ? 0 : mt_cli_trace_dir(l->base, &dir);
  size_t ndir = listed > 0 ? (size_t)listed : 0;
  const char *const *paths = &l->base;
  size_t npaths = 1;
  if (l->nbase) paths = l->base_paths, npaths = l->nbase;
  else if (ndir) paths = (const char *const *)dir, npaths = ndir;
  int loaded = mt_analysis_load_many(&base, paths, npaths, NULL, NULL);
  for (size_t i = 0; i < ndir; i++) free(dir[i]);
  free(dir);
  if (loaded != MT_OK) {
    fprintf(stderr, "memtrace: %s\n", mt_analysis_error(base));
    mt_analysis_free(base);
    return -1;
  }
  mt_diff *d;
  int rc = mt_diff_new(MT_BY_LINE, &d);
  if (rc == MT_OK) rc = mt_diff_add(d, MT_DIFF_BASE, base, f);
  if (rc == MT_OK) rc = mt_diff_add(d, MT_DIFF_NEW, a, f);
  if (rc == MT_OK) rc = mt_diff_finish(d);
  mt_analysis_free(base);
  if (rc != MT_OK) {
    mt_diff_free(d);
    return 0;
  }
  double b = d->total_bytes[MT_DIFF_BASE].value, n = d->total_bytes[MT_DIFF_NEW].value;
  double pct = b > 0 ? 100 * (n - b) / b : n > 0 ? INFINITY : 0;
  int over = pct > l->growth;
  int verd = !over ? MET : d->total_significant || l->strict ? BROKEN : AT_RISK;
  char v1[32], v2[32];
  fprintf(out, "  %-10s %+8.1f%% (%s -> %s, %s)  limit +%g%%: %s\n", "growth", pct,
          mt_human_bytes(v1, sizeof v1, b), mt_human_bytes(v2, sizeof v2, n),
          d->total_significant ? "significant" : "within sampling noise", l->growth,
          verdict_text(verd));
  t->broken += verd == BROKEN;
  t->at_risk += verd == AT_RISK;
  for (size_t i = 0, shown = 0; verd != MET && i < d->nrows && shown < 5; i++) {
    const mt_diff_row *row = &d->rows[i];
    double grew = row->side[1].bytes.value - row->side[0].bytes.value;
    if (!row->significant || grew <= 0) continue;
    char site[512], v3[32];
    mt_site_text(&row->site, 1, site, sizeof site);
    fprintf(out, "      +%s (%s -> %s)  %s\n", mt_human_bytes(v1, sizeof v1, grew),
            mt_human_bytes(v2, sizeof v2, row->side[0].bytes.value),
            mt_human_bytes(v3, sizeof v3, row->side[1].bytes.value), site);
    shown++;
  }
  mt_diff_free(d);
  return 0;
}

int mt_cli_check(FILE *out, const char *path, const mt_analysis *a, const mt_filter *f,
                 const mt_cli_limits *l) {
  char ftext[512];
  mt_filter_describe(f, ftext, sizeof ftext);
  fprintf(out, "memtrace check: %s (filter: %s)\n", path, ftext);
  tally_of_verdicts t = {0, 0};
  if (l->allocated != MT_CLI_NO_LIMIT) check_allocated(out, a, f, l, &t);
  if (l->peak != MT_CLI_NO_LIMIT) check_peak(out, a, f, l, &t);
  if (l->leaked != MT_CLI_NO_LIMIT) check_leaked(out, a, f, l, &t);
  if (l->growth >= 0 && check_growth(out, a, f, l, &t) != 0) return -1;
  fprintf(out, "memtrace check: %d limit%s broken, %d at risk (%s)\n", t.broken,
          t.broken == 1 ? "" : "s", t.at_risk,
          l->strict ? "strict: an estimate over its limit breaks it"
                    : "broken: the whole 95% interval is over the limit; at risk: only the "
                      "estimate is, which sampling may explain");
  return t.broken ? 1 : 0;
}
