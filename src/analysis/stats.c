/* Allocation statistics (memtrace/stats.h): one pass over the objects a
 * filter keeps, each added to the whole's group, its chunk's, and the
 * finer histograms. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "memtrace/stats.h"

static const uint64_t size_max_words[MT_STATS_SIZE_BINS] = {32, 256, 10000, UINT64_MAX};

void mt_stats_size_bin(int k, uint64_t *min_words, uint64_t *max_words) {
  *min_words = k ? size_max_words[k - 1] + 1 : 0;
  *max_words = size_max_words[k];
}

void mt_stats_life_bin(int k, uint64_t *from_us, uint64_t *to_us) {
  uint64_t lo = 0, hi = 1;
  for (int j = 1; j < k; j++) hi *= 10;
  if (k > 0) lo = hi, hi = k < 20 ? hi * 10 : UINT64_MAX;
  *from_us = lo;
  *to_us = hi;
}

const char *mt_stats_size_name(int k) {
  static const char *const names[MT_STATS_SIZE_BINS] = {"0-32", "33-256", "257-10000", ">10000"};
  return k >= 0 && k < MT_STATS_SIZE_BINS ? names[k] : "";
}

const char *mt_stats_life_name(int k, char *buf, size_t n) {
  static const char *const dec[] = {"1", "10", "100"};
  static const char *const unit[] = {"us", "ms", "s", "ks", "Ms", "Gs", "Ts"};
  if (k == 0) {
    snprintf(buf, n, "<1 us");
    return buf;
  }
  /* [10^(k-1), 10^k) us: "1-10 us", "10-100 us", "0.1-1 ms", ... */
  int lo = k - 1, u = lo / 3, r = lo % 3;
  if (r < 2) snprintf(buf, n, "%s-%s %s", dec[r], dec[r + 1], unit[u]);
  else snprintf(buf, n, "0.1-1 %s", unit[u + 1]);
  return buf;
}

double mt_moments_variance(const mt_moments *m) {
  return m->n > 0 ? fmax(m->m2 / m->n, 0) : 0;
}

static int size_bin(uint64_t words) {
  int b = 0;
  while (words > size_max_words[b]) b++;
  return b;
}

/* The number of decimal digits (0 for 0): bin k >= 1 holds [10^(k-1),
 * 10^k). Compared with the powers of ten, not divided by ten: this runs
 * for every object a histogram counts. */
static int life_bin(uint64_t life) {
  static const uint64_t pow10[20] = {1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull,
                                     1000000ull, 10000000ull, 100000000ull, 1000000000ull,
                                     10000000000ull, 100000000000ull, 1000000000000ull,
                                     10000000000000ull, 100000000000000ull,
                                     1000000000000000ull, 10000000000000000ull,
                                     100000000000000000ull, 1000000000000000000ull,
                                     10000000000000000000ull};
  int k = 0;
  while (k < 20 && life >= pow10[k]) k++;
  return k;
}

/* Bin b >= 1 of the finer lifetimes holds [10^((b-1)/3), 10^(b/3)) us;
 * its edges are rounded up to whole microseconds once, so that binning is
 * a search over integers rather than a logarithm per object. */
static uint64_t life_edges[MT_STATS_LIFE_FINE_BINS + 2]; /* two past the end: UINT64_MAX */
/* by bit length L (1..64): the bin of 2^(L-1), where a lifetime of that
 * length starts its search */
static int life_from_bits[65];
static pthread_once_t life_once = PTHREAD_ONCE_INIT;

static int life_search(uint64_t us) {
  int lo = 0, hi = MT_STATS_LIFE_FINE_BINS - 1; /* the last edge at or below us */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (life_edges[mid] <= us) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

static void life_init(void) {
  life_edges[0] = 0;
  for (int b = 1; b < MT_STATS_LIFE_FINE_BINS; b++) {
    /* past any 64-bit lifetime from bin 59 on: the largest value, not an
     * overflowing conversion */
    double e = ceil(pow(10, (b - 1) / 3.0) - 1e-9);
    life_edges[b] = e < 18446744073709551616.0 ? (uint64_t)e : UINT64_MAX;
  }
  life_edges[MT_STATS_LIFE_FINE_BINS] = life_edges[MT_STATS_LIFE_FINE_BINS + 1] = UINT64_MAX;
  for (int L = 1; L <= 64; L++) life_from_bits[L] = life_search((uint64_t)1 << (L - 1));
}

/* life_search's answer, from the bin of us's power of two on: an edge or
 * two further at most (bins are a third of a decade, wider than a power of
 * two, and the edges near the start, 1, 3 and 5, are the only ones closer),
 * taken without a branch, where a search over all the edges mispredicts
 * at most steps; this runs for every object a histogram counts. */
static inline int life_fine_bin(uint64_t us) {
  if (us == 0) return 0;
  int b = life_from_bits[64 - __builtin_clzll(us)];
  b += life_edges[b + 1] <= us;
  b += life_edges[b + 1] <= us;
  return b < MT_STATS_LIFE_FINE_BINS ? b : MT_STATS_LIFE_FINE_BINS - 1;
}

void mt_stats_size_log2_bin(int b, double *lo, double *hi) {
  *lo = b == 0 ? 0 : ldexp(1, b);
  *hi = ldexp(1, b + 1);
}

void mt_stats_life_fine_bin(int b, double *lo, double *hi) {
  *lo = b == 0 ? 0 : pow(10, (b - 1) / 3.0) / 1e6;
  *hi = pow(10, b / 3.0) / 1e6;
}

/* Welford's running mean and sum of squared deviations: stable where
 * sum(x^2) - n mean^2 would cancel. The weighted form is West's. */
static void moments_add(mt_moments *m, double x, double w) {
  m->n += w;
  double d = x - m->mean;
  m->mean += d * (w / m->n);
  m->m2 += w * d * (x - m->mean);
}

/* o's promote_time is not read: `promoted` says whether it has one (its
 * time is in the side table, a lookup per object this pass does not need) */
static void group_add(mt_stats_group *g, const mt_object *o, int promoted, const mt_tally *t) {
  mt_tally_add(&g->all, t);
  mt_tally_add(&g->size[size_bin(o->length)], t);
  if (o->free_time == MT_NEVER) {
    mt_tally_add(&g->never, t);
  } else {
    uint64_t life = o->free_time > o->alloc_time ? o->free_time - o->alloc_time : 0;
    mt_tally_add(&g->life[life_bin(life)], t);
  }
  mt_tally_add(&g->source[o->source], t);
  if (o->source == MT_SOURCE_MINOR && promoted) mt_tally_add(&g->promoted, t);
  moments_add(&g->sampled, (double)o->length, 1.0);
  moments_add(&g->population, (double)o->length, mt_tally_ht(t));
  if (o->length > g->sampled.max) g->sampled.max = o->length;
  g->population.max = g->sampled.max;
}

typedef struct pass {
  const mt_analysis *a;
  mt_stats *s;
  uint64_t lo, hi; /* the allocation times the chunks split */
  int shift;       /* log2 of the word's bytes */
} pass;

/* Object i's columns the passes read: its promote_time is left out (a
 * lookup in the side table; the flag says whether it has one). */
static inline mt_object columns(const mt_analysis *a, size_t i) {
  mt_object o;
  o.alloc_time = mt__obj_alloc_time(a, i);
  o.free_time = mt__obj_free_time(a, i);
  o.length = mt__obj_length(a, i);
  o.source = (mt_source)(a->source[i] & 3);
  return o;
}

/* o in the finer histograms: sizes by powers of two of bytes, lifetimes by
 * thirds of a decade. */
static inline void fine_add(pass *p, const mt_object *o, const mt_tally *t) {
  mt_stats *s = p->s;
  /* below 0 only for words under 8 bits (a corrupt trace's) */
  int sb = o->length ? 63 - __builtin_clzll(o->length) + p->shift : 0;
  mt_tally_add(&s->size_log2[sb < 0 ? 0 : sb < MT_STATS_SIZE_LOG2_BINS ? sb : MT_STATS_SIZE_LOG2_BINS - 1],
               t);
  if (o->free_time != MT_NEVER)
    mt_tally_add(&s->life_fine[life_fine_bin(o->free_time - o->alloc_time)], t);
}

static int visit(void *ctx, size_t i, const uint32_t *codes, size_t n) {
  (void)codes;
  (void)n;
  pass *p = ctx;
  mt_stats *s = p->s;
  const mt_analysis *a = p->a;
  mt_object o = columns(a, i);
  int promoted = (a->source[i] & MT__OBJ_PROMOTED) != 0;
  mt_tally t = {0};
  mt__tally_object(a, i, &t);
  group_add(&s->all, &o, promoted, &t);
  if (s->nchunks > 1) {
    /* Chunk k holds times in [lo + k(hi-lo)/N, lo + (k+1)(hi-lo)/N), in
     * exact integer arithmetic; the trace's last instant joins the last. */
    size_t k = p->hi > p->lo && o.alloc_time > p->lo
                   ? (size_t)((unsigned __int128)(o.alloc_time - p->lo) * s->nchunks /
                              (p->hi - p->lo))
                   : 0;
    if (k >= s->nchunks) k = s->nchunks - 1;
    group_add(&s->chunks[k], &o, promoted, &t);
  }
  fine_add(p, &o, &t);
  return 0;
}


/* The histograms' pass over objects [from, to) into s. */
typedef struct fine_part {
  pass p;
  const mt__query *q;
  size_t from, to;
} fine_part;

/* Objects counted by length (under the weights' cache) and header word:
 * their tallies' weights depend on those alone, so a count and a sum of
 * samples make the tally, to the bit (tallies add exactly). */
typedef struct len_count {
  uint64_t objects, samples;
} len_count;

/* The tally of n objects of w words and `samples` samples in all: n times
 * one object's fixed-point terms, modulo 2^128 as n additions are. */
static void tally_of_count(const mt_analysis *a, uint64_t w, const len_count *c, mt_tally *t) {
  mt_tally one = {c->samples, c->objects, {0, 0}, {0, 0}, a->ht_w[w]};
  unsigned __int128 n = c->objects;
  const uint64_t *fw = a->ht_wfx[w], *fv = a->ht_vfx[w];
  unsigned __int128 lw = n * fw[0], lv = n * fv[0];
  one.ht_fx[0] = (uint64_t)lw;
  one.ht_fx[1] = (uint64_t)(lw >> 64) + c->objects * fw[1];
  one.var_fx[0] = (uint64_t)lv;
  one.var_fx[1] = (uint64_t)(lv >> 64) + c->objects * fv[1];
  mt_tally_add(t, &one);
}

/* The histograms' pass: the finer bins, and the objects never collected
 * (a loop of its own: a call per object would cost a third of it). The
 * sizes and the never collected are counted by length, then made tallies;
 * a lifetime's bin takes each object's terms. */
static void fine_run(void *arg) {
  fine_part *h = arg;
  const mt_analysis *a = h->p.a;
  mt_stats *s = h->p.s;
  size_t from = h->from > h->q->lo ? h->from : h->q->lo, to = h->to < h->q->hi ? h->to : h->q->hi;
  len_count *all = a->fold_tally ? NULL : calloc(4 * MT__HT_CACHE, sizeof *all);
  len_count *never = all ? all + 2 * MT__HT_CACHE : NULL;
  for (size_t i = from; i < to; i++) {
    if (!mt__query_object(h->q, i)) continue;
    mt_object o = columns(a, i);
    uint64_t hdr = o.source != MT_SOURCE_EXTERNAL, w = o.length + hdr;
    if (!all || w >= MT__HT_CACHE) {
      mt_tally t = {0};
      mt__tally_object(a, i, &t);
      if (o.free_time == MT_NEVER) mt_tally_add(&s->all.never, &t);
      fine_add(&h->p, &o, &t);
      continue;
    }
    uint64_t smp = mt__obj_samples(a, i);
    len_count *c = &all[o.length * 2 + hdr];
    c->objects++;
    c->samples += smp;
    if (o.free_time == MT_NEVER) {
      c = &never[o.length * 2 + hdr];
      c->objects++;
      c->samples += smp;
      continue;
    }
    mt__tally_cached(a, w, smp, &s->life_fine[life_fine_bin(o.free_time - o.alloc_time)]);
  }
  for (size_t k = 0; all && k < 2 * MT__HT_CACHE; k++) {
    uint64_t length = k / 2, w = length + k % 2;
    if (all[k].objects) {
      mt_object o = {0};
      o.length = length;
      o.free_time = MT_NEVER; /* the size bin alone */
      mt_tally t = {0};
      tally_of_count(a, w, &all[k], &t);
      fine_add(&h->p, &o, &t);
    }
    if (never[k].objects) tally_of_count(a, w, &never[k], &s->all.never);
  }
  free(all);
}

/* The histograms' pass, its halves on two threads when the objects are
 * many: their tallies add exactly, so the sums are one pass's. */
static int fine_pass(const mt__query *q, pass *p) {
  size_t n = q->hi > q->lo ? q->hi - q->lo : 0;
  fine_part h0 = {*p, q, q->lo, q->hi};
  if (n < MT__PAIR_MIN) {
    fine_run(&h0);
    return 0;
  }
  mt_stats *second = calloc(1, sizeof *second);
  if (!second) return -1;
  fine_part h1 = {*p, q, q->lo + n / 2, q->hi};
  h1.p.s = second;
  h0.to = h1.from;
  mt__run_pair(fine_run, &h0, &h1, 1);
  mt_stats *s = p->s;
  mt_tally_add(&s->all.never, &second->all.never);
  for (int b = 0; b < MT_STATS_SIZE_LOG2_BINS; b++) mt_tally_add(&s->size_log2[b], &second->size_log2[b]);
  for (int b = 0; b < MT_STATS_LIFE_FINE_BINS; b++) mt_tally_add(&s->life_fine[b], &second->life_fine[b]);
  free(second);
  return 0;
}

void mt_stats_free(mt_stats *s) {
  if (!s) return;
  free(s->chunks);
  free(s);
}

static int compute(const mt_analysis *a, const mt_filter *f, size_t nchunks, int fine_only,
                   mt_stats **out) {
  *out = NULL;
  if (nchunks == 0) return MT_ERR_INVALID;
  pthread_once(&life_once, life_init);
  mt_stats *s = calloc(1, sizeof *s);
  if (!s) return MT_ERR_NOMEM;
  s->chunks = nchunks > 1 ? calloc(nchunks, sizeof *s->chunks) : NULL;
  mt__query q;
  int qrc = nchunks > 1 && !s->chunks ? MT_ERR_NOMEM : mt__query_init(&q, a, f);
  if (qrc != MT_OK) {
    mt_stats_free(s);
    return qrc;
  }
  s->sampling = mt_analysis_sampling(a);
  s->duration = a->duration;
  s->nlife = life_bin(a->duration) + 1;
  s->nchunks = nchunks;
  /* Chunks split the allocation times the filter allows, within the trace.
   * Chunk k starts at the first whole microsecond at or after
   * lo + k (hi - lo) / N, so that its integer bounds agree with the index
   * floor((t - lo) N / (hi - lo)) the pass files each object under. */
  uint64_t lo = f->alloc_from, hi = f->alloc_to < a->duration ? f->alloc_to : a->duration;
  if (hi < lo) hi = lo;
  s->all.from = lo;
  s->all.to = hi;
  for (size_t k = 0; k < nchunks && s->chunks; k++) {
    unsigned __int128 span = hi - lo;
    s->chunks[k].from = lo + (uint64_t)((span * k + nchunks - 1) / nchunks);
    s->chunks[k].to = lo + (uint64_t)((span * (k + 1) + nchunks - 1) / nchunks);
  }
  pass p = {a, s, lo, hi, (int)log2(a->word_bytes)};
  int rc = MT_OK;
  if (!fine_only) mt__scan(&q, 0, a->nobj, visit, &p);
  else if (fine_pass(&q, &p)) rc = MT_ERR_NOMEM;
  mt__query_free(&q);
  if (rc != MT_OK) {
    mt_stats_free(s);
    return rc;
  }
  *out = s;
  return MT_OK;
}

int mt_stats_compute(const mt_analysis *a, const mt_filter *f, size_t nchunks, mt_stats **out) {
  return compute(a, f, nchunks, 0, out);
}

int mt_stats_histograms(const mt_analysis *a, const mt_filter *f, mt_stats **out) {
  return compute(a, f, 1, 1, out);
}

