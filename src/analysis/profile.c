/* A trace as a heap profile (memtrace/profile.h): one sample per distinct
 * backtrace, in bounded memory.
 *
 * When the loader interned every backtrace, the objects passing the filter
 * are summed by backtrace in one pass (or, when the backtraces are too
 * many for a sum each, ordered by backtrace id: a counting sort, 4 bytes
 * an object and 4 a backtrace) and the backtraces read once, in id order.
 * When it stopped interning (a trace of nearly all distinct stacks),
 * objects share an id only with their neighbours: each run of them is a
 * sample, and nothing is kept beside the analysis. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "format/bt_tags.h"
#include "memtrace/profile.h"

typedef struct acc {
  mt_tally alloc[3], inuse[3]; /* by source; [0] when sources are merged */
} acc;

typedef struct prof {
  const mt_analysis *a;
  mt__query qa, qi; /* counted (alloc_*), and alive at the snapshot (inuse_*) */
  int merge;
  mt_profile_fn fn;
  void *ctx;
  double scale; /* bytes a sample stands for */
  acc cur;
  size_t sums_max; /* bytes the sums by backtrace may take */
  acc *sums;       /* per backtrace, or NULL */
  /* counting sort: objects by backtrace id */
  uint32_t *start, *order;
  int rc;
} prof;

/* llround(v) for a finite estimate (v >= 0, or NaN), clamped: without the
 * call, as every sample rounds four. v - trunc(v) is exact. */
static int64_t round_est(double v) {
  if (!(v > 0)) return 0;
  if (v >= 9.2e18) return INT64_MAX;
  int64_t r = (int64_t)v;
  return v - (double)r >= 0.5 ? r + 1 : r;
}

/* Object i into the sums of its sample. */
static void add(const prof *p, acc *into, size_t i) {
  int s = p->merge ? 0 : p->a->source[i] & 3;
  mt__tally_object(p->a, i, &into->alloc[s]);
  if (mt__query_object(&p->qi, i)) mt__tally_object(p->a, i, &into->inuse[s]);
}

/* The samples of the objects gathered in `from`, then `from` emptied: only
 * the sources met, most samples meeting one. The point
 * estimates alone: objects are the Horvitz-Thompson count, bytes the
 * samples scaled (mt_sampling_objects and _bytes, without their
 * intervals). `shared`: codes known to be the last sample's (mt_profile_fn);
 * a source's sample after the first has all of them. */
static int emit(prof *p, acc *from, const uint32_t *codes, size_t n, size_t shared) {
  double scale = p->scale;
  for (int k = 0; k < (p->merge ? 1 : 3); k++) {
    mt_tally *al = &from->alloc[k], *in = &from->inuse[k];
    if (!al->objects) continue; /* nor in its inuse: a source not met is empty */
    int64_t v[MT_PROFILE_VALUES] = {round_est(mt_tally_ht(al)), round_est((double)al->samples * scale),
                                    in->objects ? round_est(mt_tally_ht(in)) : 0,
                                    in->objects ? round_est((double)in->samples * scale) : 0};
    if (!p->rc) p->rc = p->fn(p->ctx, codes, n, shared, p->merge ? -1 : k, v);
    shared = n;
    memset(al, 0, sizeof *al);
    memset(in, 0, sizeof *in);
  }
  return p->rc;
}

/* ---- runs ---- */

/* The samples of the run of backtrace bt gathered in cur, its codes read
 * through c. */
static void emit_run(prof *p, mt__bt_cursor *c, uint32_t bt) {
  size_t n;
  const uint32_t *codes = mt__bt_cursor_get(c, bt, &n);
  if (!codes) p->rc = MT_ERR_NOMEM;
  else emit(p, &p->cur, codes, n, 0);
}

/* A sample per run of passing objects of one backtrace (objects not
 * passing, between them, do not end it), its codes taken when it ends. */
static void by_runs(prof *p) {
  const mt_analysis *a = p->a;
  mt__bt_cursor c;
  mt__bt_cursor_init(&c, a);
  uint32_t run_bt = 0;
  int in_run = 0;
  for (size_t i = p->qa.lo; i < p->qa.hi && !p->rc; i++) {
    if (!mt__query_object(&p->qa, i)) continue;
    uint32_t bt = a->bt[i];
    if (in_run && bt != run_bt) emit_run(p, &c, run_bt);
    run_bt = bt;
    in_run = 1;
    add(p, &p->cur, i);
  }
  if (in_run && !p->rc) emit_run(p, &c, run_bt);
  mt__bt_cursor_free(&c);
}

/* ---- by backtrace ---- */

/* The sums of every backtrace at once, when they take at most this much:
 * one pass over the objects in their order. Past it (a trace of that many
 * distinct stacks), the objects are sorted by backtrace instead, at 4
 * bytes an object; reading their columns in that order costs a cache miss
 * an object. */
#define SUMS_MAX ((size_t)64 << 20)

static int sums_visit(void *ctx, size_t bt, const uint32_t *codes, size_t n) {
  prof *p = ctx;
  return emit(p, &p->sums[bt], codes, n, 0); /* nothing for a backtrace with no object */
}

static void by_backtrace_sums(prof *p) {
  const mt_analysis *a = p->a;
  if (!(p->sums = calloc(a->nbt + 1, sizeof *p->sums))) {
    p->rc = MT_ERR_NOMEM;
    return;
  }
  for (size_t i = p->qa.lo; i < p->qa.hi; i++)
    if (mt__query_object(&p->qa, i)) add(p, &p->sums[a->bt[i]], i);
  int rc = mt_analysis_each_distinct_backtrace(a, sums_visit, p);
  if (rc && !p->rc) p->rc = rc;
}

static int count_visit(void *ctx, size_t i, const uint32_t *codes, size_t n) {
  (void)codes;
  (void)n;
  prof *p = ctx;
  p->start[p->a->bt[i] + 1]++;
  return 0;
}

static int place_visit(void *ctx, size_t i, const uint32_t *codes, size_t n) {
  (void)codes;
  (void)n;
  prof *p = ctx;
  p->order[p->start[p->a->bt[i]]++] = (uint32_t)i;
  return 0;
}

static int sorted_visit(void *ctx, size_t bt, const uint32_t *codes, size_t n) {
  prof *p = ctx;
  /* after placing, start[bt] is where bt + 1's objects begin */
  uint32_t from = bt ? p->start[bt - 1] : 0, to = p->start[bt];
  if (from == to) return 0;
  for (uint32_t k = from; k < to; k++) add(p, &p->cur, p->order[k]);
  return emit(p, &p->cur, codes, n, 0);
}

/* A sample per backtrace, in id order: the objects of each are added in
 * their order either way, so the sums are the same to the bit. */
static void by_backtrace(prof *p) {
  const mt_analysis *a = p->a;
  if (a->nbt <= p->sums_max / sizeof(acc)) {
    by_backtrace_sums(p);
    return;
  }
  p->start = calloc(a->nbt + 2, sizeof *p->start);
  if (!p->start) {
    p->rc = MT_ERR_NOMEM;
    return;
  }
  mt__scan(&p->qa, 0, a->nobj, count_visit, p);
  for (size_t b = 1; b <= a->nbt + 1; b++) p->start[b] += p->start[b - 1];
  p->order = malloc((p->start[a->nbt + 1] + 1) * sizeof *p->order);
  if (!p->order) {
    p->rc = MT_ERR_NOMEM;
    return;
  }
  mt__scan(&p->qa, 0, a->nobj, place_visit, p);
  int rc = mt_analysis_each_distinct_backtrace(a, sorted_visit, p);
  if (rc && !p->rc) p->rc = rc;
}

/* ---- reading the trace again ---- */

/* The backtrace of the last object read: its codes, their ids, its
 * domain. */
typedef struct last_bt {
  uint64_t *codes;
  uint32_t *ids;
  size_t n, cap;
  uint32_t domain;
  uint32_t *cache; /* recent code value -> id + 1, by hash */
  mt__bt_tags_seen seen;
} last_bt;

static void reread_fail(prof *p, mt_profile_info *info, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void reread_fail(prof *p, mt_profile_info *info, int rc, const char *fmt, ...) {
  if (p->rc) return;
  p->rc = rc;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(info->error, sizeof info->error, fmt, ap);
  va_end(ap);
}

/* ev's backtrace as the last one, past the k frames they share: its codes'
 * ids as the load numbered them, kept in the reader's tags (bt_tags.h)
 * where it has them. MT_OK; MT_ERR_INVALID for a code the load never saw
 * (the trace changed); MT_ERR_NOMEM. */
static int take_backtrace(const mt_analysis *a, last_bt *l, const mt_reader *r,
                          const mt_event *ev, size_t k) {
  size_t n = ev->backtrace_len;
  if (n > l->cap) {
    size_t nc = n * 2;
    void **const cols[] = {(void **)&l->codes, (void **)&l->ids};
    const size_t sizes[] = {sizeof *l->codes, sizeof *l->ids};
    if (mt__realloc_columns(cols, sizes, 2, nc, realloc)) return MT_ERR_NOMEM;
    l->cap = nc;
  }
  mt__bt_decoder *t = k < n ? mt__bt_tags_of(&l->seen, r, ev) : NULL;
  size_t from = t ? mt__bt_tags_from(ev) : n;
  for (size_t i = k; i < n; i++) {
    uint64_t code = ev->backtrace[i];
    uint32_t id = i >= from ? mt__bt_tag_get(t, i, code) : 0;
    if (!id) {
      if (!(id = mt__code_find(a, l->cache, code))) return MT_ERR_INVALID;
      if (i >= from) mt__bt_tag_set(t, i, code, id);
    }
    l->codes[i] = code;
    l->ids[i] = id - 1;
  }
  l->n = n;
  return MT_OK;
}

/* Object i, read again, into the run's sums: alive at the end unless the
 * load saw it collected. */
static void add_read(prof *p, const mt_event *ev, uint64_t i) {
  const mt_analysis *a = p->a;
  int s = p->merge ? 0 : (int)(ev->source & 3);
  mt__tally_one(a, ev->length, ev->source, ev->nsamples, &p->cur.alloc[s]);
  if (!mt__reread_gone(a, i))
    mt__tally_one(a, ev->length, ev->source, ev->nsamples, &p->cur.inuse[s]);
}

static const char *traces_name(const mt_analysis *a) {
  return a->nreread_paths == 1 ? a->reread_paths[0] : "the traces";
}

/* The samples of by_runs from the events the load read, read again: a
 * sample per run of objects of equal backtraces. A read to the end passes
 * over promotions and collections (the load noted which objects were
 * collected); the reader's count of them completes the count of events,
 * which must be the load's. A trace that grew since the load (its program
 * still writing it) gives the load's profile: the read stops at the first
 * allocation past the load's objects, which must come past its events;
 * the objects' samples must add up to the load's too. */
static void by_reading(prof *p, mt_profile_info *info) {
  const mt_analysis *a = p->a;
  mt_reader *r;
  int rc = mt_reader_open_many(&r, (const char *const *)a->reread_paths, a->nreread_paths);
  if (rc != MT_OK) {
    reread_fail(p, info, rc, "reading the trace again: %s",
                r ? mt_reader_error(r) : "out of memory");
    mt_reader_close(r);
    return;
  }
  if (a->reread_to_end) mt_reader_skip(r, 1u << MT_EVENT_PROMOTE | 1u << MT_EVENT_COLLECT);
  last_bt l = {0};
  if (!(l.cache = calloc(1u << 16, sizeof *l.cache))) p->rc = MT_ERR_NOMEM;
  uint64_t events = 0, obj = 0, samples = 0; /* events returned; objects, their samples */
  size_t last_shared = 0;         /* codes the last backtrace shared with the one before */
  int changed = 0, past = 0;
  mt_event ev;
  while (!p->rc && events < a->reread_events && (rc = mt_reader_next(r, &ev)) > 0) {
    events++;
    if (ev.kind != MT_EVENT_ALLOC) continue;
    if (obj == a->reread_objects) { /* past the objects the load read */
      past = 1;
      break;
    }
    size_t k = mt__frames_shared(&ev, l.domain, l.codes, l.n);
    if (k < ev.backtrace_len || k < l.n || obj == 0) {
      if (obj) emit(p, &p->cur, l.ids, l.n, last_shared);
      last_shared = k;
      int trc = take_backtrace(a, &l, r, &ev, k);
      if (trc == MT_ERR_NOMEM) p->rc = trc;
      changed = trc == MT_ERR_INVALID;
      if (trc) break;
    }
    l.domain = ev.domain;
    samples += ev.nsamples;
    add_read(p, &ev, obj++);
  }
  /* the events before the one that ended the read: more than the load's
   * only when the trace grew (a read that passes over events may pass
   * over some past the load's before it finds the next allocation) */
  uint64_t read = events - (uint64_t)past + mt_reader_skipped(r);
  if (rc < 0)
    reread_fail(p, info, rc, "reading the trace again: %s", mt_reader_error(r));
  else if (changed || read < a->reread_events || obj != a->reread_objects ||
           samples != a->reread_samples)
    reread_fail(p, info, MT_ERR_INVALID, "%s: the trace changed after it was loaded",
                traces_name(a));
  else if (obj && !p->rc)
    emit(p, &p->cur, l.ids, l.n, last_shared);
  free(l.codes);
  free(l.ids);
  free(l.cache);
  mt_reader_close(r);
}

int mt_profile_rereads(const mt_filter *f) {
  mt_filter g = *f;
  if (g.live == MT_LIVE_AT_END) g.live = MT_LIVE_ANY; /* the snapshot a reread takes */
  return mt_filter_selects_all(&g);
}

int mt_profile(const mt_analysis *a, const mt_filter *f, int merge, mt_profile_info *info,
               mt_profile_fn fn, void *ctx) {
  return mt__profile(a, f, merge, info, fn, ctx, SUMS_MAX);
}

int mt__profile(const mt_analysis *a, const mt_filter *f, int merge, mt_profile_info *info,
                mt_profile_fn fn, void *ctx, size_t sums_max) {
  /* alloc_* counts every object the filter keeps (up to the snapshot);
   * inuse_* those of them alive at the snapshot */
  mt_filter fa = *f, fi = *f;
  memset(info, 0, sizeof *info);
  info->snapshot = a->duration;
  info->snapshot_kind = MT_LIVE_AT_END;
  fa.live = MT_LIVE_ANY;
  if (f->live == MT_LIVE_AT || f->live == MT_LIVE_AT_PEAK) {
    info->snapshot_kind = f->live;
    info->snapshot = f->live == MT_LIVE_AT_PEAK ? a->peak_time : f->live_at;
    /* allocated at or before the snapshot: [.., snapshot + 1) */
    if (info->snapshot < UINT64_MAX && fa.alloc_to > info->snapshot + 1)
      fa.alloc_to = info->snapshot + 1;
  } else {
    fi.live = MT_LIVE_AT_END;
  }
  /* a snapshot past the end sees what the end sees */
  info->covered = info->snapshot < a->duration ? info->snapshot : a->duration;
  info->period = a->word_bytes / a->info.sample_rate;
  prof p;
  memset(&p, 0, sizeof p);
  p.a = a;
  p.merge = merge;
  p.fn = fn;
  p.ctx = ctx;
  p.scale = a->word_bytes / a->info.sample_rate;
  p.sums_max = sums_max;
  if (a->reread) {
    if (!mt_profile_rereads(f)) return MT_ERR_INVALID;
    by_reading(&p, info);
    return p.rc;
  }
  int qrc = mt__query_init(&p.qa, a, &fa);
  if (qrc != MT_OK) return qrc;
  if ((qrc = mt__query_init(&p.qi, a, &fi)) != MT_OK) {
    mt__query_free(&p.qa);
    return qrc;
  }
  if (a->bt_distinct) by_backtrace(&p);
  else by_runs(&p);
  mt__query_free(&p.qa);
  mt__query_free(&p.qi);
  free(p.sums);
  free(p.start);
  free(p.order);
  return p.rc;
}
