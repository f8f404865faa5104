/* The live heap over time: the exact peak and the envelope the loading
 * pass records, the live series of a filter's objects, and the timeline
 * answer (memtrace/stats.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "memtrace/stats.h"

void mt_analysis_peak(const mt_analysis *a, uint64_t *time, uint64_t *samples) {
  if (time) *time = a->peak_time;
  if (samples) *samples = a->peak_samples;
}

size_t mt_analysis_live_envelope(const mt_analysis *a, mt_live_point *out, size_t cap) {
  if (cap == 0 || a->nbins_used == 0) return 0;
  size_t group = (a->nbins_used + cap - 1) / cap, n = 0;
  for (size_t i = 0; i < a->nbins_used; i += group) {
    const mt__bin *b = &a->bins[i];
    mt_live_point p = {0, b->min, b->max, b->end};
    size_t last = i;
    for (size_t j = i + 1; j < i + group && j < a->nbins_used; j++) {
      p.min_samples = fmin(p.min_samples, a->bins[j].min);
      p.max_samples = fmax(p.max_samples, a->bins[j].max);
      p.end_samples = a->bins[j].end;
      last = j;
    }
    uint64_t end = (uint64_t)(last + 1) * a->bin_width;
    p.time = end < a->duration ? end : a->duration;
    out[n++] = p;
  }
  return n;
}


/* The live samples of the objects passing q at the end of each of nbins
 * bins of width `width` from 0: bin j ends at (j + 1) x width, and an
 * object counts at a bin's end when it was allocated at or before it and
 * not yet collected. */
typedef struct series {
  const mt_analysis *a;
  double width;
  size_t nbins;
  double *diff; /* nbins + 1 */
} series;

static int series_visit(void *ctx, size_t i, const uint32_t *codes, size_t n) {
  (void)codes;
  (void)n;
  series *s = ctx;
  const mt_analysis *a = s->a;
  double ns = (double)mt__obj_samples(a, i);
  double x = (double)mt__obj_alloc_time(a, i) / s->width;
  size_t j0 = x <= 1 ? 0 : (size_t)ceil(x) - 1;
  if (j0 >= s->nbins) return 0;
  size_t j1 = s->nbins;
  if (a->free_t[i] != MT__T_NEVER) {
    /* alive at a bin's end b iff freed after b: the first end >= the free
     * time is past it */
    double e = (double)mt__obj_free_time(a, i) / s->width;
    j1 = e <= 1 ? 0 : (size_t)ceil(e) - 1;
    if (j1 > s->nbins) j1 = s->nbins;
  }
  if (j1 <= j0) return 0;
  s->diff[j0] += ns;
  s->diff[j1] -= ns;
  return 0;
}

static int live_series(const mt_analysis *a, const mt_filter *f, double width, size_t nbins,
                       double *out) {
  mt__query q;
  series s = {a, width, nbins, calloc(nbins + 1, sizeof(double))};
  if (!s.diff || mt__query_init(&q, a, f) != MT_OK) {
    free(s.diff);
    return MT_ERR_NOMEM;
  }
  mt__scan(&q, 0, a->nobj, series_visit, &s);
  mt__query_free(&q);
  double run = 0;
  for (size_t j = 0; j < nbins; j++) out[j] = run += s.diff[j];
  free(s.diff);
  return MT_OK;
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

void mt_timeline_free(mt_timeline *t) {
  if (!t) return;
  free(t->end);
  free(t->live);
  free(t->min);
  free(t->max);
  free(t->filtered);
  free(t);
}

int mt_timeline_compute(const mt_analysis *a, const mt_filter *f, size_t nbins,
                        mt_timeline **out) {
  *out = NULL;
  if (nbins == 0) return MT_ERR_INVALID;
  mt_timeline *t = calloc(1, sizeof *t);
  mt_live_point *pts = malloc(MT__ENVELOPE_BINS * sizeof *pts);
  if (!t || !pts) goto nomem;
  t->nbins = nbins;
  t->end = malloc(nbins * sizeof *t->end);
  t->live = malloc(nbins * sizeof *t->live);
  t->min = malloc(nbins * sizeof *t->min);
  t->max = malloc(nbins * sizeof *t->max);
  t->filtered = malloc(nbins * sizeof *t->filtered);
  if (!t->end || !t->live || !t->min || !t->max || !t->filtered) goto nomem;
  uint64_t to = a->duration ? a->duration : 1; /* a trace of one instant still gets bins */
  double width = (double)to / (double)nbins, scale = a->word_bytes / a->info.sample_rate;
  mt_filter none;
  mt_filter_init(&none);
  t->filter_selects_all = mt_filter_selects_all(f);
  if (live_series(a, &none, width, nbins, t->live) != MT_OK) goto nomem;
  if (t->filter_selects_all) memcpy(t->filtered, t->live, nbins * sizeof *t->live);
  else if (live_series(a, f, width, nbins, t->filtered) != MT_OK) goto nomem;
  size_t np = mt_analysis_live_envelope(a, pts, MT__ENVELOPE_BINS);
  for (size_t j = 0; j < nbins; j++) {
    double end = (double)(j + 1) * width, start = (double)j * width;
    double lo = t->live[j], hi = t->live[j];
    if (np > 0) {
      /* Event times in the bin are the integers in (start, end]; the first
       * bin also holds time 0. */
      double first = j == 0 ? 0 : floor(start) + 1, last = floor(end);
      if (first > last) first = last;
      size_t k0 = env_bin(pts, np, first), k1 = env_bin(pts, np, last);
      for (size_t k = k0; k <= k1; k++) {
        lo = fmin(lo, pts[k].min_samples);
        hi = fmax(hi, pts[k].max_samples);
      }
    }
    t->end[j] = end;
    t->live[j] *= scale;
    t->filtered[j] *= scale;
    t->min[j] = lo * scale;
    t->max[j] = hi * scale;
  }
  t->sampling = mt_analysis_sampling(a);
  t->duration = a->duration;
  t->peak_time = a->peak_time;
  mt_tally peak = {0};
  peak.samples = a->peak_samples;
  t->peak_bytes = mt_estimate_bytes(a, &peak);
  free(pts);
  *out = t;
  return MT_OK;
nomem:
  free(pts);
  mt_timeline_free(t);
  return MT_ERR_NOMEM;
}
