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
 * not yet collected. A trace among several sits at `off` on the common
 * clock, and its objects never collected go at its end (`gone`, the first
 * instant past it, on that clock); alone, they stay to the last bin. */
typedef struct series {
  const mt_analysis *a;
  double width, off, gone; /* gone < 0: never */
  size_t nbins;
  double *diff; /* nbins + 1 */
} series;

/* The first bin whose end is at or after time x (on the common clock). */
static size_t bin_at(const series *s, double t) { return mt__timeline_bin(s->width, s->off, t); }

static int series_visit(void *ctx, size_t i, const uint32_t *codes, size_t n) {
  (void)codes;
  (void)n;
  series *s = ctx;
  const mt_analysis *a = s->a;
  double ns = (double)mt__obj_samples(a, i);
  size_t j0 = bin_at(s, (double)mt__obj_alloc_time(a, i));
  if (j0 >= s->nbins) return 0;
  size_t j1 = s->nbins;
  /* alive at a bin's end b iff freed after b: the first end >= the free
   * time is past it */
  uint64_t gone = mt__obj_gone_time(a, i);
  if (gone != MT_NEVER) j1 = bin_at(s, (double)gone);
  else if (s->gone >= 0) j1 = bin_at(s, s->gone - s->off);
  if (j1 > s->nbins) j1 = s->nbins;
  if (j1 <= j0) return 0;
  s->diff[j0] += ns;
  s->diff[j1] -= ns;
  return 0;
}

typedef struct series_part {
  series s;
  const mt__query *q;
  size_t from, to;
} series_part;

static void series_of_part(void *p) {
  series_part *h = p;
  mt__scan(h->q, h->from, h->to, series_visit, &h->s);
}

static int live_series(const mt_analysis *a, const mt_filter *f, const series *shape,
                       double *out) {
  mt__query q;
  series_part h[2] = {{*shape, &q, 0, 0}, {*shape, &q, 0, 0}};
  h[0].s.a = h[1].s.a = a;
  /* the halves' differences are whole sample counts: their sum is exact in
   * any order */
  h[0].s.diff = calloc(2 * (shape->nbins + 1), sizeof(double));
  h[1].s.diff = h[0].s.diff ? h[0].s.diff + shape->nbins + 1 : NULL;
  int qrc = !h[0].s.diff ? MT_ERR_NOMEM : mt__query_init(&q, a, f);
  if (qrc != MT_OK) {
    free(h[0].s.diff);
    return qrc;
  }
  size_t lo = q.lo, hi = q.hi, mid = lo + (hi - lo) / 2;
  h[0].from = lo;
  h[0].to = h[1].from = mid;
  h[1].to = hi;
  mt__run_pair(series_of_part, &h[0], &h[1], hi - lo >= MT__PAIR_MIN);
  mt__query_free(&q);
  double run = 0;
  for (size_t j = 0; j < shape->nbins; j++) out[j] = run += h[0].s.diff[j] + h[1].s.diff[j];
  free(h[0].s.diff);
  return MT_OK;
}

/* Every object's live series on a trace's own grid (bins from 0, the
 * objects never collected live to the end): the first one made is kept
 * (a page asks it of each filter, at its width), of an analysis of nobj
 * objects over `duration`. */
typedef struct mt__live_cache {
  size_t nbins, nobj;
  uint64_t duration;
  double v[];
} mt__live_cache;

static int every_series(const mt_analysis *ca, const series *shape, double *out) {
  mt__live_cache *c = __atomic_load_n(&ca->live_cache, __ATOMIC_ACQUIRE);
  int own_grid = shape->off == 0 && shape->gone < 0;
  if (own_grid && c && c->nbins == shape->nbins && c->nobj == ca->nobj &&
      c->duration == ca->duration) {
    memcpy(out, c->v, c->nbins * sizeof *out);
    return MT_OK;
  }
  mt_filter none;
  mt_filter_init(&none);
  int rc = live_series(ca, &none, shape, out);
  if (rc != MT_OK || !own_grid || c) return rc;
  mt__live_cache *n = malloc(sizeof *n + shape->nbins * sizeof *n->v);
  if (!n) return MT_OK; /* kept another time */
  *n = (mt__live_cache){shape->nbins, ca->nobj, ca->duration};
  memcpy(n->v, out, shape->nbins * sizeof *out);
  mt_analysis *a = (mt_analysis *)ca; /* the cache only, installed atomically */
  mt__live_cache *expected = NULL;
  if (!__atomic_compare_exchange_n(&a->live_cache, &expected, n, 0, __ATOMIC_RELEASE,
                                   __ATOMIC_RELAXED))
    free(n);
  return MT_OK;
}

void mt__live_cache_drop(mt_analysis *a) {
  free(a->live_cache);
  a->live_cache = NULL;
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
  free(t->rss_anon);
  free(t->rss_file);
  free(t->rss_total);
  free(t);
}

static mt_timeline *timeline_new(size_t nbins) {
  mt_timeline *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->nbins = nbins;
  t->end = calloc(nbins, sizeof *t->end);
  t->live = calloc(nbins, sizeof *t->live);
  t->min = calloc(nbins, sizeof *t->min);
  t->max = calloc(nbins, sizeof *t->max);
  t->filtered = calloc(nbins, sizeof *t->filtered);
  if (!t->end || !t->live || !t->min || !t->max || !t->filtered) {
    mt_timeline_free(t);
    return NULL;
  }
  return t;
}

/* Adds trace a's bins (bytes) to t's, on the grid `shape` gives: live and
 * filtered at each bin's end (live and filt: the live samples of every
 * object and of those passing the filter; NULL: computed here), least and
 * most within each bin. Where a bin reaches past the trace's span (several
 * traces), the trace holds nothing there, and its least is 0. */
static int add_trace(mt_timeline *t, const mt_analysis *a, const mt_filter *f,
                     const series *shape, mt_live_point *pts, const double *given_live,
                     const double *given_filt) {
  size_t nbins = t->nbins;
  const double *live = given_live, *filt = given_filt;
  double *own = NULL; /* the series computed here: live, then filt */
  if (!live) {
    if (!(own = malloc(2 * nbins * sizeof *own))) return MT_ERR_NOMEM;
    int rc = every_series(a, shape, own);
    if (rc == MT_OK && t->filter_selects_all) memcpy(own + nbins, own, nbins * sizeof *own);
    else if (rc == MT_OK) rc = live_series(a, f, shape, own + nbins);
    if (rc != MT_OK) {
      free(own);
      return rc;
    }
    live = own;
    filt = own + nbins;
  }
  double scale = a->word_bytes / a->info.sample_rate, width = shape->width;
  double span_from = shape->off, span_to = shape->gone >= 0 ? shape->gone : INFINITY;
  size_t np = mt_analysis_live_envelope(a, pts, MT__ENVELOPE_BINS);
  for (size_t j = 0; j < nbins; j++) {
    double end = (double)(j + 1) * width, start = (double)j * width;
    double lo = live[j], hi = live[j];
    /* Event times in the bin are the integers in (start, end]; the first
     * bin also holds time 0. In the trace's own time: */
    double first = (j == 0 ? 0 : floor(start) + 1) - shape->off, last = floor(end) - shape->off;
    if (start < span_from || end >= span_to) lo = 0;
    if (first < 0) first = 0;
    int outside = shape->gone >= 0 && (last < 0 || first > (double)a->duration);
    if (np > 0 && !outside) {
      if (first > last) first = last;
      size_t k0 = env_bin(pts, np, first), k1 = env_bin(pts, np, last);
      for (size_t k = k0; k <= k1; k++) {
        lo = fmin(lo, pts[k].min_samples);
        hi = fmax(hi, pts[k].max_samples);
      }
    }
    t->end[j] = end;
    t->live[j] += live[j] * scale;
    t->filtered[j] += filt[j] * scale;
    t->min[j] += lo * scale;
    t->max[j] += hi * scale;
  }
  free(own);
  return MT_OK;
}

/* The scratch freed, and t handed out (rc MT_OK) or freed. */
static int finish(mt_timeline *t, mt_live_point *pts, int rc, mt_timeline **out) {
  free(pts);
  if (rc == MT_OK) *out = t;
  else mt_timeline_free(t);
  return rc;
}

int mt_timeline_compute(const mt_analysis *a, const mt_filter *f, size_t nbins,
                        mt_timeline **out) {
  return mt__timeline_of_series(a, f, nbins, NULL, NULL, out);
}

int mt__timeline_of_series(const mt_analysis *a, const mt_filter *f, size_t nbins,
                           const double *live, const double *filt, mt_timeline **out) {
  *out = NULL;
  if (nbins == 0) return MT_ERR_INVALID;
  mt_timeline *t = timeline_new(nbins);
  mt_live_point *pts = malloc(MT__ENVELOPE_BINS * sizeof *pts);
  if (!t || !pts) goto nomem;
  series shape = {NULL, mt__timeline_width(a->duration, nbins), 0, -1, nbins, NULL};
  t->filter_selects_all = mt_filter_selects_all(f);
  if (add_trace(t, a, f, &shape, pts, live, filt) != MT_OK) goto nomem;
  t->sampling = mt_analysis_sampling(a);
  t->duration = a->duration;
  t->start = a->info.start_time;
  t->ntraces = a->ntraces ? a->ntraces : 1;
  t->peak_exact = 1;
  t->peak_time = a->peak_time;
  mt_tally peak = {0};
  peak.samples = a->peak_samples;
  t->peak_bytes = mt_estimate_bytes(a, &peak);
  return finish(t, pts, MT_OK, out);
nomem:
  return finish(t, pts, MT_ERR_NOMEM, out);
}

int mt_timeline_traces(const mt_analysis *const *as, size_t n, const mt_filter *f,
                       size_t nbins, mt_timeline **out) {
  *out = NULL;
  if (nbins == 0 || n == 0) return MT_ERR_INVALID;
  if (n == 1) return mt_timeline_compute(as[0], f, nbins, out);
  uint64_t from = UINT64_MAX, to = 0;
  for (size_t k = 0; k < n; k++) {
    const mt_analysis *a = as[k];
    if (a->info.start_time < from) from = a->info.start_time;
    if (a->info.start_time + a->duration > to) to = a->info.start_time + a->duration;
  }
  mt_timeline *t = timeline_new(nbins);
  mt_live_point *pts = malloc(MT__ENVELOPE_BINS * sizeof *pts);
  if (!t || !pts) goto nomem;
  double width = (double)(to > from ? to - from : 1) / (double)nbins;
  t->filter_selects_all = mt_filter_selects_all(f);
  for (size_t k = 0; k < n; k++) {
    double off = (double)(as[k]->info.start_time - from);
    series shape = {NULL, width, off, off + (double)as[k]->duration + 1, nbins, NULL};
    if (add_trace(t, as[k], f, &shape, pts, NULL, NULL) != MT_OK) goto nomem;
  }
  /* the highest bin end: no exact peak without merging every event */
  size_t best = 0;
  for (size_t j = 1; j < nbins; j++)
    if (t->live[j] > t->live[best]) best = j;
  t->sampling = mt_analysis_sampling(as[0]);
  t->duration = to - from;
  t->start = from;
  t->ntraces = n;
  t->peak_time = (uint64_t)llround(t->end[best]);
  t->peak_bytes = (mt_estimate){t->live[best], t->live[best], t->live[best]};
  return finish(t, pts, MT_OK, out);
nomem:
  return finish(t, pts, MT_ERR_NOMEM, out);
}
