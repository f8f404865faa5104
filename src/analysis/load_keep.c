/* Loads that keep less than every object (load_pass.h). A live-only load
 * (MT_KEEP_LIVE): objects are dropped once collected, so
 * the object columns hold the live heap's sampled objects and those
 * collected since the last compaction, never more than about twice the
 * live ones (load_pass.h). Compaction moves objects, so an id finds its
 * object by where its run of consecutive ids starts (memtrace numbers
 * objects 0, 1, 2...): the newest run's directly, the older ones' by a
 * binary search; ids out of order go through a map. A folded load
 * (MT_KEEP_FOLDED) drops objects the same way, once its filter's
 * conditions can be decided on them (at their collection, or at the end),
 * after adding the tally of those that pass to their backtrace's row. */
#include <stdlib.h>
#include <string.h>

#include "load_pass.h"

/* Collected objects wait for a compaction until they are this many and
 * outnumber the kept ones: each compaction moves the live ones once. */
#define COMPACT_MIN 65536

int mt__live_note(mt_analysis *a, pass *p, size_t i, uint64_t id) {
  if (i >= p->keep_cap) {
    size_t cap = a->obj_cap > i ? a->obj_cap : i + 1;
    uint64_t *ids = realloc(p->obj_id, cap * sizeof *ids);
    if (ids) p->obj_id = ids;
    uint8_t *gone = realloc(p->gone, cap);
    if (gone) p->gone = gone;
    a->side_key = p->obj_id; /* the side table is keyed by id while objects move */
    if (!ids || !gone) return -1;
    p->keep_cap = cap;
  }
  p->obj_id[i] = id;
  p->gone[i] = 0;
  if (p->live_map) return mt__u64map_put(&p->ids, id, (uint32_t)i);
  if (i == p->tail_at && (i == 0 || id > p->obj_id[i - 1])) { /* a run starts */
    p->tail_id0 = id;
    return 0;
  }
  if (i != p->tail_at && id == p->tail_id0 + (i - p->tail_at)) return 0;
  /* ids out of order (not memtrace's numbering): a map from now on */
  p->live_map = 1;
  for (size_t j = 0; j <= i; j++)
    if (mt__u64map_put(&p->ids, p->obj_id[j], (uint32_t)j)) return -1;
  return 0;
}

int mt__live_find(const pass *p, uint64_t id, size_t nobj, size_t *out) {
  if (p->live_map) {
    uint32_t *ix = mt__u64map_get(&p->ids, id);
    if (!ix) return -1;
    *out = *ix - 1;
    return 0;
  }
  if (nobj > p->tail_at && id >= p->tail_id0 && id - p->tail_id0 < nobj - p->tail_at) {
    *out = p->tail_at + (size_t)(id - p->tail_id0);
    return 0;
  }
  /* the kept ones, by id: searched from the youngest, which the program
   * frees first, in steps that double, down to where the first id at or
   * above `id` (at most r) must be; then halved */
  size_t r = p->tail_at, step = 1;
  while (r >= step && p->obj_id[r - step] >= id) {
    r -= step;
    step *= 2;
  }
  size_t lo = r >= step ? r - step + 1 : 0, hi = r;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (p->obj_id[mid] < id) lo = mid + 1;
    else hi = mid;
  }
  if (lo == p->tail_at || p->obj_id[lo] != id) return -1;
  *out = lo;
  return 0;
}

int mt__live_collect(mt_analysis *a, pass *p, size_t i) {
  p->gone[i] = 1;
  p->ngone++;
  if (p->ngone >= COMPACT_MIN && 2 * p->ngone >= a->nobj) return mt__live_compact(a, p, 0);
  return 0;
}

/* The end of a load that moved objects: the side table keyed by index
 * again (its entries re-keyed already), the ids' arrays freed. */
static void release_ids(mt_analysis *a, pass *p) {
  a->side_key = NULL;
  free(p->obj_id);
  free(p->gone);
  p->obj_id = NULL;
  p->gone = NULL;
  p->keep_cap = 0;
}

typedef struct side_entry {
  size_t obj;
  unsigned kind;
  uint64_t value;
} side_entry;

/* The side entries of the kept objects, under their indices after the
 * compaction: 0 and *out (malloc'd), or -1. */
static int kept_side_entries(const mt_analysis *a, const pass *p, side_entry **out, size_t *n) {
  static const struct { uint8_t flag; unsigned kind; } kinds[] = {
      {MT__OBJ_BIG_LENGTH, MT__SIDE_LENGTH},
      {MT__OBJ_BIG_SAMPLES, MT__SIDE_SAMPLES},
      {MT__OBJ_PROMOTED, MT__SIDE_PROMOTE}};
  *out = NULL;
  *n = 0;
  size_t count = mt__side_count(&a->side);
  if (!count) return 0;
  side_entry *v = malloc(count * sizeof *v);
  if (!v) return -1;
  for (size_t i = 0, k = 0; i < a->nobj; i++) {
    if (p->gone[i]) continue;
    for (size_t j = 0; j < sizeof kinds / sizeof *kinds; j++)
      if ((a->source[i] & kinds[j].flag) && *n < count)
        v[(*n)++] = (side_entry){k, kinds[j].kind, mt__side_get(a, i, kinds[j].kind)};
    k++;
  }
  *out = v;
  return 0;
}

/* The side table is rebuilt at the last compaction (keyed by index from
 * then on) and when the entries of dropped objects outnumber the kept ones;
 * otherwise, keyed by id, it needs nothing when objects move. */
int mt__live_compact(mt_analysis *a, pass *p, int last) {
  int rc = 0;
  if (p->ngone || last) {
    int rebuild = last || mt__side_count(&a->side) > 2 * p->side_kept + COMPACT_MIN;
    side_entry *side = NULL;
    size_t nside = 0;
    if (rebuild && kept_side_entries(a, p, &side, &nside)) return -1;
    size_t k = 0;
    for (size_t i = 0; i < a->nobj; i++) {
      if (p->gone[i]) continue;
      if (k != i) {
        a->alloc_t[k] = a->alloc_t[i];
        a->free_t[k] = a->free_t[i];
        a->bt[k] = a->bt[i];
        a->nsamples[k] = a->nsamples[i];
        a->length[k] = a->length[i];
        a->source[k] = a->source[i];
        if (a->trace_of) a->trace_of[k] = a->trace_of[i];
        p->obj_id[k] = p->obj_id[i];
      }
      p->gone[k] = 0;
      k++;
    }
    a->nobj = k;
    p->ngone = 0;
    p->tail_at = k;
    if (rebuild) {
      mt__side_free(&a->side);
      if (last) a->side_key = NULL; /* by index from now on */
      for (size_t j = 0; j < nside && !rc; j++)
        rc = mt__side_put(a, side[j].obj, side[j].kind, side[j].value);
      p->side_kept = nside;
      free(side);
    }
    if (p->live_map && !last) { /* the kept ones at their new indices */
      mt__u64map_free(&p->ids);
      for (size_t j = 0; j < k && !rc; j++) rc = mt__u64map_put(&p->ids, p->obj_id[j], (uint32_t)j);
    }
  }
  if (last) release_ids(a, p);
  return rc;
}

/* ---- MT_KEEP_FOLDED ---- */

/* Adds one object's tally (one), allocated at time t, to backtrace bt's
 * row. 0, or -1. */
static int add_to_row(pass *p, size_t nbt, uint32_t bt, const mt_tally *one, uint64_t t) {
  if (bt >= p->row_of_cap) {
    size_t cap = nbt > bt ? nbt : (size_t)bt + 1;
    cap += cap / 2;
    uint32_t *v = realloc(p->row_of, cap * sizeof *v);
    if (!v) return -1;
    memset(v + p->row_of_cap, 0, (cap - p->row_of_cap) * sizeof *v);
    p->row_of = v;
    p->row_of_cap = cap;
  }
  if (!p->row_of[bt]) {
    if (p->nfold == UINT32_MAX - 1 ||
        mt__reserve((void **)&p->rows, p->nfold + 1, &p->rows_cap, sizeof *p->rows))
      return -1;
    p->rows[p->nfold] = (mt__fold_row){.oldest = UINT64_MAX};
    p->row_of[bt] = (uint32_t)++p->nfold;
  }
  mt__fold_row *row = &p->rows[p->row_of[bt] - 1];
  mt_tally_add(&row->tally, one);
  if (t < row->oldest) row->oldest = t;
  return 0;
}

int mt__fold_object(mt_analysis *a, pass *p, size_t i) {
  if (p->fold_at_alloc || !mt__query_columns(p->fold, i)) return 0; /* or decided already */
  mt_tally one = {0};
  mt__tally_object(a, i, &one);
  return add_to_row(p, a->nbt, a->bt[i], &one, mt__obj_alloc_time(a, i));
}

/* The sum of site code c (MT__NO_SITE: none), made on its first object:
 * sums are kept in that order, densely (codes are many, sites few). */
static mt__site_sum *site_sum(mt_analysis *a, pass *p, uint32_t c) {
  size_t key = c == MT__NO_SITE ? 0 : (size_t)c + 1;
  if (key >= p->site_slot_cap) {
    size_t cap = p->site_slot_cap ? p->site_slot_cap : 1024;
    while (cap <= key) cap *= 2;
    uint32_t *v = realloc(p->site_slot, cap * sizeof *v);
    if (!v) return NULL;
    memset(v + p->site_slot_cap, 0, (cap - p->site_slot_cap) * sizeof *v);
    p->site_slot = v;
    p->site_slot_cap = cap;
  }
  if (!p->site_slot[key]) {
    size_t n = a->nfold_site;
    if (mt__reserve((void **)&a->fold_site, n, &p->fold_site_cap, sizeof *a->fold_site) ||
        mt__reserve((void **)&a->fold_site_code, n, &p->fold_code_cap,
                    sizeof *a->fold_site_code))
      return NULL;
    a->fold_site[n] = (mt__site_sum){.oldest = UINT64_MAX};
    a->fold_site_code[n] = c;
    p->site_slot[key] = (uint32_t)++a->nfold_site;
  }
  return &a->fold_site[p->site_slot[key] - 1];
}

int mt__fold_alloc(mt_analysis *a, pass *p, size_t i, uint64_t t, const mt_tally *one) {
  int every = p->fold->every_object; /* then fold_sum is `all`, set at the end */
  if (!every && !mt__query_columns(p->fold, i)) return 0;
  if (p->fold_rows) return add_to_row(p, a->nbt, a->bt[i], one, t); /* MT_KEEP_FOLDED */
  /* the sum through its backtrace: one lookup where objects repeat their
   * backtraces (the site's code, then its sum, would be two) */
  uint32_t b = a->bt[i];
  mt__site_sum *s;
  if (b < p->bt_sum_cap && p->bt_sum[b]) {
    s = &a->fold_site[p->bt_sum[b] - 1];
  } else {
    if (b >= p->bt_sum_cap) {
      size_t cap = p->bt_sum_cap ? p->bt_sum_cap : 1024;
      while (cap <= b) cap *= 2;
      uint32_t *v = realloc(p->bt_sum, cap * sizeof *v);
      if (!v) return -1;
      memset(v + p->bt_sum_cap, 0, (cap - p->bt_sum_cap) * sizeof *v);
      p->bt_sum = v;
      p->bt_sum_cap = cap;
    }
    if (!(s = site_sum(a, p, a->bt_site[b]))) return -1;
    p->bt_sum[b] = (uint32_t)(s - a->fold_site) + 1;
  }
  mt_tally_add(&s->tally, one);
  if (!every) mt_tally_add(&a->fold_sum, one);
  if (t < s->oldest) s->oldest = t;
  if (t > s->newest) s->newest = t;
  return 0;
}

/* The site sums at the end of the load: times in the precision the
 * objects' columns ended with (a trace past 71 minutes coarsens them), as
 * a whole load reports them. Under a condition on allocation times, an
 * object decided before the columns coarsened might be decided otherwise
 * after: the sums are then dropped (answers needing them are refused). */
void mt__fold_sites_finish(mt_analysis *a) {
  if (!a->fold_site) return;
  const mt_filter *f = &a->fold_filter;
  unsigned s = a->time_shift;
  if (mt_filter_selects_all(f)) a->fold_sum = a->all;
  if (s && mt__filter_on_times(f)) {
    free(a->fold_site);
    free(a->fold_site_code);
    a->fold_site = NULL;
    a->fold_site_code = NULL;
    a->nfold_site = 0;
    return;
  }
  for (size_t k = 0; k < a->nfold_site; k++) {
    mt__site_sum *x = &a->fold_site[k];
    x->oldest = x->oldest >> s << s, x->newest = x->newest >> s << s;
  }
}

int mt__fold_finish(mt_analysis *a, pass *p) {
  mt__fold_sites_finish(a);
  /* the objects never collected: their fate is known now */
  for (size_t i = 0; i < a->nobj; i++)
    if (!p->gone[i] && mt__fold_object(a, p, i)) return -1;
  mt_tally *tally = malloc((p->nfold + 1) * sizeof *tally);
  if (!tally || mt__grow_objects(a, p->nfold)) {
    free(tally);
    return -1;
  }
  /* one object a row, in backtrace order (first seen first) */
  size_t k = 0;
  for (size_t bt = 0; bt < p->row_of_cap && k < p->nfold; bt++) {
    if (!p->row_of[bt]) continue;
    const mt__fold_row *r = &p->rows[p->row_of[bt] - 1];
    tally[k] = r->tally;
    a->alloc_t[k] = (uint32_t)(r->oldest >> a->time_shift);
    a->free_t[k] = MT__T_NEVER;
    a->bt[k] = (uint32_t)bt;
    a->nsamples[k] = 0;
    a->length[k] = 0;
    a->source[k] = MT_SOURCE_EXTERNAL;
    if (a->trace_of) a->trace_of[k] = 0;
    k++;
  }
  a->nobj = k;
  a->fold_tally = tally;
  mt__side_free(&a->side); /* the rows have no side entries */
  release_ids(a, p);
  p->keep_live = 0; /* nothing left to compact */
  return 0;
}
