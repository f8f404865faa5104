/* Objects grouped by printed stack, and the first groups ranked, in
 * bounded memory (analysis_internal.h, mt__rank_stacks).
 *
 * A tree of stacks and a tally per stack cost ~150 bytes a distinct stack:
 * a gigabyte on a trace whose millions of objects nearly all have their
 * own stack. Here objects are grouped by a 64-bit fingerprint of their
 * printed frames (so backtraces that print alike are one group), computed
 * from each object's backtrace in a sequential pass. The groups are counted
 * in a hash table of 20 bytes a group (28 when ranked by age); when the
 * trace has more distinct backtraces than a table of the memory budget
 * holds, the fingerprints are split into 2^k slices and the pass is
 * repeated per slice. A bounded heap keeps the best groups over all
 * passes; a last pass sums their full tallies. */
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "memtrace/rank.h"

/* The fingerprint of a backtrace is a polynomial over its printed frames
 * (each location's function and line, or an undescribed code's value),
 * outermost first: x = x * M + k(frame). Each code's share (M^n and the
 * sum of its n frames' terms) is computed once, so a backtrace costs one
 * multiply-add per code, and a code with two inlined locations gives what
 * two codes of one location each give, as they print alike. The printed
 * length and a final mix make the value. */
#define FP_M 0x9e3779b97f4a7c15ull
#define FP_SEED 0x5bd1e9955bd1e995ull

/* What a group is ranked by: bytes (samples in x), objects (ht in y), or
 * the oldest allocation (x) then bytes (samples in y). */
typedef struct key {
  uint64_t x;
  double y;
} key;

typedef struct cand {
  uint64_t fp;
  key k;
  uint32_t bt;
  uint32_t slot; /* in a single pass: its slot, whose full tally is kept */
} cand;

typedef struct rank {
  const mt__query *q;
  const mt_analysis *a;
  int order;
  uint64_t *cmul, *cadd; /* per code: M^n and its frames' terms */
  uint32_t *clen;        /* per code: printed frames */
  uint64_t *bt_fp;       /* per backtrace id when few (0: not yet), or NULL */
  int borrowed;          /* bt_fp is the analysis' index */
  /* with few backtraces and many objects, passes read each backtrace's
   * passing objects' tally and span instead of the objects */
  mt_tally *bt_tally;
  mt__bt_span *bt_span;
  uint32_t last_bt;      /* the previous object's, whose fingerprint is */
  uint64_t last_fp;
  int have_last;
  /* the previous backtrace fingerprinted: its codes and the polynomial and
   * printed length after each, as consecutive backtraces share prefixes */
  uint32_t *pcodes;
  uint64_t *px, *plen;
  size_t pn, pcap;
  /* this pass: groups whose fingerprint's top `bits` bits are `part` */
  unsigned bits;
  uint64_t part;
  uint64_t *fp;
  uint64_t *kx; /* the slots' keys, each half only where the order uses it: */
  double *ky;   /* a slot costs 20 bytes, 28 when ranking by age */
  uint32_t *rep;          /* backtrace id + 1; 0 = empty slot */
  mt__stack_group *full;  /* when one pass does: each group's whole record */
  size_t cap, count;
  int oom;
  /* the best `limit` groups so far: a heap, the last-ranked at the root */
  cand *heap;
  size_t hn, limit;
  uint32_t *cx, *cy;
  size_t capx, capy;
  /* the last pass: shown groups by fingerprint -> row */
  int final;
  mt__u64map shown;
  mt__stack_group *rows;
} rank;

static int prepare_codes(rank *r) {
  const mt_analysis *a = r->a;
  size_t nc = a->ncodes;
  r->cmul = malloc((nc + 1) * sizeof *r->cmul);
  r->cadd = malloc((nc + 1) * sizeof *r->cadd);
  r->clen = malloc((nc + 1) * sizeof *r->clen);
  if (!r->cmul || !r->cadd || !r->clen) return -1;
  for (size_t c = 0; c < nc; c++) {
    size_t n = a->code_n[c], len = 0;
    const mt_frame *fr = &a->frames[a->code_first[c]];
    uint64_t mul = 1, add = 0;
    if (n == 0) {
      mul = FP_M;
      add = mt__mix64(a->code_val[c] ^ 0xc0dec0dec0dec0deull);
      len = 1;
    }
    for (size_t i = 0; i < n; i++) {
      if (mt__query_hidden(r->q, fr[i].function)) continue;
      mul *= FP_M;
      add = add * FP_M + mt__mix64((uint64_t)fr[i].function << 32 | fr[i].line);
      len++;
    }
    r->cmul[c] = mul;
    r->cadd[c] = add;
    r->clen[c] = (uint32_t)len;
  }
  return 0;
}

static uint64_t fingerprint(rank *r, const uint32_t *codes, size_t n) {
  size_t k = 0;
  if (n > r->pcap) {
    size_t cap = n * 2;
    uint32_t *c = realloc(r->pcodes, cap * sizeof *c);
    if (c) r->pcodes = c;
    uint64_t *x = realloc(r->px, (cap + 1) * sizeof *x);
    if (x) r->px = x;
    uint64_t *l = realloc(r->plen, (cap + 1) * sizeof *l);
    if (l) r->plen = l;
    if (!c || !x || !l) {
      r->oom = 1;
      return 1;
    }
    r->pcap = cap;
  }
  while (k < n && k < r->pn && codes[k] == r->pcodes[k]) k++;
  uint64_t x = k ? r->px[k] : FP_SEED, len = k ? r->plen[k] : 0;
  for (size_t i = k; i < n; i++) {
    x = x * r->cmul[codes[i]] + r->cadd[codes[i]];
    len += r->clen[codes[i]];
    r->pcodes[i] = codes[i];
    r->px[i + 1] = x;
    r->plen[i + 1] = len;
  }
  r->pn = n;
  uint64_t fp = mt__mix64(x ^ mt__mix64(len + 0x632be59bd9b4e019ull));
  return fp ? fp : 1; /* 0 marks "not computed" in bt_fp */
}

/* Objects sharing a backtrace id are often consecutive (always, past the
 * point where the loader stopped interning), so the previous object's
 * fingerprint is reused; with few ids each is kept. */
static uint64_t object_fp(rank *r, uint32_t bt, const uint32_t *codes, size_t n) {
  if (r->have_last && bt == r->last_bt) return r->last_fp;
  uint64_t fp = r->bt_fp ? r->bt_fp[bt] : 0;
  if (!fp) {
    fp = fingerprint(r, codes, n);
    if (r->bt_fp) r->bt_fp[bt] = fp;
  }
  r->have_last = 1;
  r->last_bt = bt;
  r->last_fp = fp;
  return fp;
}

static size_t slot_of(uint64_t fp, size_t cap) { return (size_t)(fp ^ fp >> 29) & (cap - 1); }

static int grow(rank *r) {
  size_t cap = r->cap * 2;
  uint64_t *fp = malloc(cap * sizeof *fp);
  uint64_t *kx = r->kx ? malloc(cap * sizeof *kx) : NULL;
  double *ky = r->ky ? malloc(cap * sizeof *ky) : NULL;
  uint32_t *rep = calloc(cap, sizeof *rep);
  mt__stack_group *full = r->full ? malloc(cap * sizeof *full) : NULL;
  if (!fp || (r->kx && !kx) || (r->ky && !ky) || !rep || (r->full && !full)) {
    free(fp);
    free(kx);
    free(ky);
    free(rep);
    free(full);
    return -1;
  }
  for (size_t s = 0; s < r->cap; s++) {
    if (!r->rep[s]) continue;
    size_t t = slot_of(r->fp[s], cap);
    while (rep[t]) t = (t + 1) & (cap - 1);
    fp[t] = r->fp[s];
    if (kx) kx[t] = r->kx[s];
    if (ky) ky[t] = r->ky[s];
    rep[t] = r->rep[s];
    if (full) full[t] = r->full[s];
  }
  free(r->full);
  r->full = full;
  free(r->fp);
  free(r->kx);
  free(r->ky);
  free(r->rep);
  r->fp = fp;
  r->kx = kx;
  r->ky = ky;
  r->rep = rep;
  r->cap = cap;
  return 0;
}

static void group_add(const mt_analysis *a, mt__stack_group *g, size_t i) {
  mt__tally_object(a, i, &g->tally);
  uint64_t t = mt__obj_alloc_time(a, i);
  if (t < g->oldest) g->oldest = t;
  if (t > g->newest) g->newest = t;
}

/* Slot s's key from a group's whole record. */
static void key_of(rank *r, size_t s, const mt__stack_group *g) {
  if (r->order == MT_ORDER_OBJECTS) r->ky[s] = mt_tally_ht(&g->tally);
  else if (r->order == MT_ORDER_OLDEST) r->kx[s] = g->oldest, r->ky[s] = (double)g->tally.samples;
  else r->kx[s] = g->tally.samples;
}

static key key_at(const rank *r, size_t s) {
  key k = {r->kx ? r->kx[s] : 0, r->ky ? r->ky[s] : 0};
  return k;
}

static void group_init(mt__stack_group *g, uint32_t bt) {
  memset(g, 0, sizeof *g);
  g->bt = bt;
  g->oldest = UINT64_MAX;
}

/* The slot of fingerprint fp in this pass, claimed for backtrace bt when
 * the group is new (the table grown first when 3/4 full); SIZE_MAX when
 * out of memory. */
static size_t claim_slot(rank *r, uint64_t fp, uint32_t bt) {
  for (;;) {
    size_t s = slot_of(fp, r->cap);
    while (r->rep[s] && r->fp[s] != fp) s = (s + 1) & (r->cap - 1);
    if (r->rep[s]) return s;
    if ((r->count + 1) * 4 > r->cap * 3) {
      if (grow(r)) {
        r->oom = 1;
        return SIZE_MAX;
      }
      continue;
    }
    r->fp[s] = fp;
    r->rep[s] = bt + 1;
    if (r->kx) r->kx[s] = r->order == MT_ORDER_OLDEST ? UINT64_MAX : 0;
    if (r->ky) r->ky[s] = 0;
    if (r->full) group_init(&r->full[s], bt);
    r->count++;
    return s;
  }
}

/* Adds object i, of fingerprint fp, to this pass. */
static int add_object(rank *r, size_t i, uint32_t bt, uint64_t fp) {
  if (r->final) {
    uint32_t *row = mt__u64map_get(&r->shown, fp);
    if (row) group_add(r->a, &r->rows[*row - 1], i);
    return 0;
  }
  if (r->bits && fp >> (64 - r->bits) != r->part) return 0;
  size_t s = claim_slot(r, fp, bt);
  if (s == SIZE_MAX) return 1;
  if (r->full) { /* the whole record, in allocation order */
    group_add(r->a, &r->full[s], i);
    key_of(r, s, &r->full[s]);
    return 0;
  }
  mt_tally t = {0};
  mt__tally_object(r->a, i, &t);
  if (r->order == MT_ORDER_OBJECTS) {
    r->ky[s] += mt_tally_ht(&t);
  } else if (r->order == MT_ORDER_OLDEST) {
    uint64_t at = mt__obj_alloc_time(r->a, i);
    if (at < r->kx[s]) r->kx[s] = at;
    r->ky[s] += (double)t.samples;
  } else {
    r->kx[s] += t.samples;
  }
  return 0;
}

static void group_add_backtrace(mt__stack_group *g, const mt_tally *t, const mt__bt_span *s) {
  mt_tally_add(&g->tally, t);
  if (s->oldest < g->oldest) g->oldest = s->oldest;
  if (s->newest > g->newest) g->newest = s->newest;
}

/* Adds backtrace bt's passing objects to a pass that keeps whole records
 * (one pass): what their objects one by one add, and the same group's
 * representative, the backtrace of its first object. */
static int add_backtrace(rank *r, uint32_t bt) {
  const mt_tally *t = &r->bt_tally[bt];
  const mt__bt_span *sp = &r->bt_span[bt];
  uint64_t fp = r->bt_fp[bt];
  if (r->final) {
    uint32_t *row = mt__u64map_get(&r->shown, fp);
    if (row) group_add_backtrace(&r->rows[*row - 1], t, sp);
    return 0;
  }
  size_t s = claim_slot(r, fp, bt);
  if (s == SIZE_MAX) return 1;
  /* a group met before keeps the backtrace of its earliest object */
  if (sp->first < r->bt_span[r->rep[s] - 1].first) {
    r->rep[s] = bt + 1;
    r->full[s].bt = bt;
  }
  group_add_backtrace(&r->full[s], t, sp);
  key_of(r, s, &r->full[s]);
  return 0;
}

static int on_object(void *ctx, size_t i, const uint32_t *codes, size_t n) {
  rank *r = ctx;
  uint32_t bt = r->a->bt[i];
  if (!codes) return add_object(r, i, bt, r->bt_fp[bt]);
  return add_object(r, i, bt, object_fp(r, bt, codes, n));
}

/* With few backtrace ids, each one's fingerprint is computed once, and
 * passes need no backtraces. */
static int on_distinct(void *ctx, size_t bt, const uint32_t *codes, size_t n) {
  rank *r = ctx;
  r->bt_fp[bt] = fingerprint(r, codes, n);
  return r->oom;
}

static int run_pass(rank *r) {
  if (r->bt_tally) {
    for (size_t b = 0; b < r->a->nbt; b++)
      if (r->bt_tally[b].objects && add_backtrace(r, (uint32_t)b)) return 1;
    return r->oom;
  }
  if (r->bt_fp) return mt__scan(r->q, 0, r->a->nobj, on_object, r) || r->oom;
  return mt__scan_codes(r->q, on_object, r) != 0 || r->oom;
}

static uint32_t *codes_of(rank *r, uint32_t bt, uint32_t **buf, size_t *cap, size_t *n) {
  *n = mt__bt_codes_grow(r->a, bt, buf, cap);
  if (*n == SIZE_MAX) {
    r->oom = 1;
    *n = 0;
  }
  return *buf;
}

/* < 0 when x ranks before y: its key, then printed frames, then
 * fingerprint. */
static int cand_cmp(rank *r, const cand *x, const cand *y) {
  if (r->order == MT_ORDER_OLDEST) {
    if (x->k.x != y->k.x) return x->k.x < y->k.x ? -1 : 1;
    if (x->k.y != y->k.y) return x->k.y > y->k.y ? -1 : 1;
  } else if (r->order == MT_ORDER_OBJECTS) {
    if (x->k.y != y->k.y) return x->k.y > y->k.y ? -1 : 1;
  } else if (x->k.x != y->k.x) {
    return x->k.x > y->k.x ? -1 : 1;
  }
  if (x->fp == y->fp) return 0;
  size_t nx, ny;
  const uint32_t *cx = codes_of(r, x->bt, &r->cx, &r->capx, &nx);
  const uint32_t *cy = codes_of(r, y->bt, &r->cy, &r->capy, &ny);
  int c = mt__codes_cmp(r->a, r->q, cx, nx, cy, ny);
  if (c) return c;
  return x->fp < y->fp ? -1 : 1;
}

static void sift_down(rank *r, size_t i) {
  cand *h = r->heap;
  for (;;) {
    size_t l = 2 * i + 1, rr = l + 1, m = i;
    if (l < r->hn && cand_cmp(r, &h[l], &h[m]) > 0) m = l;
    if (rr < r->hn && cand_cmp(r, &h[rr], &h[m]) > 0) m = rr;
    if (m == i) return;
    cand t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}

static void offer(rank *r, const cand *c) {
  cand *h = r->heap;
  if (r->hn < r->limit) {
    size_t i = r->hn++;
    h[i] = *c;
    while (i && cand_cmp(r, &h[(i - 1) / 2], &h[i]) < 0) {
      cand t = h[i];
      h[i] = h[(i - 1) / 2];
      h[(i - 1) / 2] = t;
      i = (i - 1) / 2;
    }
    return;
  }
  if (cand_cmp(r, c, &h[0]) >= 0) return;
  h[0] = *c;
  sift_down(r, 0);
}

static int sort_cmp(const void *x, const void *y, void *ctx) { return cand_cmp(ctx, x, y); }

static void rank_free(rank *r) {
  free(r->cmul);
  free(r->cadd);
  free(r->clen);
  if (!r->borrowed) free(r->bt_fp);
  free(r->bt_tally);
  free(r->bt_span);
  free(r->pcodes);
  free(r->px);
  free(r->plen);
  free(r->fp);
  free(r->kx);
  free(r->ky);
  free(r->rep);
  free(r->full);
  free(r->heap);
  free(r->cx);
  free(r->cy);
  free(r->rows);
  mt__u64map_free(&r->shown);
}

/* Sets up the pass tables: a table of at most the budget per pass, and the
 * number of fingerprint bits that split the groups into passes. */
static int tables(rank *r, size_t nbt, size_t budget) {
  const size_t per_slot = sizeof(uint64_t) + sizeof(uint32_t) +
                          (r->order == MT_ORDER_OLDEST ? sizeof(key) : sizeof(uint64_t));
  size_t cap = 1024;
  while (cap * per_slot * 2 <= budget) cap *= 2;
  unsigned bits = 0;
  while (bits < 16 && (nbt >> bits) * 4 > cap * 3) bits++;
  size_t want = 1024;
  while (want * 3 < (nbt >> bits) * 4 + 4 && want < cap) want *= 2;
  r->cap = want;
  r->bits = bits;
  r->fp = malloc(r->cap * sizeof *r->fp);
  if (r->order != MT_ORDER_OBJECTS && !(r->kx = malloc(r->cap * sizeof *r->kx))) return -1;
  if (r->order != MT_ORDER_BYTES && !(r->ky = malloc(r->cap * sizeof *r->ky))) return -1;
  r->rep = calloc(r->cap, sizeof *r->rep);
  r->heap = malloc(r->limit * sizeof *r->heap);
  if (!bits) r->full = malloc(r->cap * sizeof *r->full);
  return !r->fp || !r->rep || !r->heap || (!bits && !r->full) ? -1 : 0;
}

/* The shown groups' full records, by a last pass, when passes kept keys
 * only. */
static int last_pass(rank *r) {
  free(r->fp);
  free(r->kx);
  free(r->ky);
  free(r->rep);
  r->fp = NULL;
  r->kx = NULL;
  r->ky = NULL;
  r->rep = NULL;
  for (size_t i = 0; i < r->hn; i++)
    if (mt__u64map_put(&r->shown, r->heap[i].fp, (uint32_t)i)) return -1;
  r->final = 1;
  r->have_last = 0;
  return run_pass(r) ? -1 : 0;
}

static int count_visit(void *ctx, size_t i, const uint32_t *codes, size_t n) {
  (void)i;
  (void)codes;
  (void)n;
  ++*(size_t *)ctx;
  return 0;
}

int mt__rank_stacks(const mt__query *q, int order, size_t limit, size_t budget,
                    mt__stack_group **groups, size_t *n, size_t *ngroups, mt_tally *total,
                    int *have_total) {
  const mt_analysis *a = q->a;
  rank r;
  memset(&r, 0, sizeof r);
  r.q = q;
  r.a = a;
  r.order = order;
  *groups = NULL;
  *n = *ngroups = 0;
  *have_total = 0;
  memset(total, 0, sizeof *total);
  size_t nbt = a->nbt, bound = nbt, passing = 0;
  if (prepare_codes(&r)) goto nomem;
  uint64_t *index = q->fn_hidden ? NULL : __atomic_load_n(&a->bt_fp, __ATOMIC_ACQUIRE);
  if (index) {
    r.bt_fp = index; /* complete: read only */
    r.borrowed = 1;
  } else if (nbt * sizeof *r.bt_fp <= budget / 4) {
    r.bt_fp = calloc(nbt + 1, sizeof *r.bt_fp);
    if (!r.bt_fp || mt_analysis_each_distinct_backtrace(a, on_distinct, &r) != MT_OK || r.oom)
      goto nomem;
  }
  if (r.bt_fp && mt__by_backtrace(q)) {
    r.bt_tally = malloc((nbt + 1) * sizeof *r.bt_tally);
    r.bt_span = malloc((nbt + 1) * sizeof *r.bt_span);
    if (!r.bt_tally || !r.bt_span || mt__tally_backtraces_spans(q, r.bt_tally, r.bt_span))
      goto nomem;
    for (size_t b = 0; b < nbt; b++) passing += r.bt_tally[b].objects;
  } else if (!q->every_object || q->bt_pass) {
    mt__scan(q, 0, a->nobj, count_visit, &passing);
  }
  /* groups are at most the backtrace ids, and the objects passing */
  if ((r.bt_tally || !q->every_object || q->bt_pass) && passing < bound) bound = passing;
  r.limit = limit == 0 || limit > bound + 1 ? bound + 1 : limit;
  if (tables(&r, bound, budget)) goto nomem;
  if (r.bits && r.bt_tally) { /* passes keep keys only: object by object */
    free(r.bt_tally);
    free(r.bt_span);
    r.bt_tally = NULL;
    r.bt_span = NULL;
  }
  for (uint64_t p = 0; p < (1ull << r.bits); p++) {
    r.part = p;
    r.have_last = 0;
    if (run_pass(&r)) goto nomem;
    *ngroups += r.count;
    for (size_t s = 0; s < r.cap; s++) {
      if (!r.rep[s]) continue;
      cand c = {r.fp[s], key_at(&r, s), r.rep[s] - 1, (uint32_t)s};
      offer(&r, &c);
      if (r.bits) r.rep[s] = 0;
    }
    if (r.oom) goto nomem;
    r.count = 0;
  }
  qsort_r(r.heap, r.hn, sizeof *r.heap, sort_cmp, &r);
  if (r.oom) goto nomem;
  r.rows = calloc(r.hn + 1, sizeof *r.rows);
  if (!r.rows) goto nomem;
  for (size_t i = 0; i < r.hn; i++) {
    if (r.full) r.rows[i] = r.full[r.heap[i].slot];
    else group_init(&r.rows[i], r.heap[i].bt);
    r.rows[i].bt = r.heap[i].bt;
  }
  if (!r.full && last_pass(&r)) goto nomem;
  for (size_t b = 0; r.bt_tally && b < nbt; b++) mt_tally_add(total, &r.bt_tally[b]);
  *have_total = r.bt_tally != NULL;
  *groups = r.rows;
  *n = r.hn;
  r.rows = NULL;
  rank_free(&r);
  return MT_OK;
nomem:
  rank_free(&r);
  return MT_ERR_NOMEM;
}

int mt_analysis_index_stacks(mt_analysis *a) {
  if (__atomic_load_n(&a->bt_fp, __ATOMIC_ACQUIRE)) return MT_OK;
  mt_filter none;
  mt__query q;
  mt_filter_init(&none);
  int qrc = mt__query_init(&q, a, &none);
  if (qrc != MT_OK) return qrc;
  rank r;
  memset(&r, 0, sizeof r);
  r.q = &q;
  r.a = a;
  int rc = MT_ERR_NOMEM;
  if (prepare_codes(&r) == 0 && (r.bt_fp = calloc(a->nbt + 1, sizeof *r.bt_fp)) &&
      mt_analysis_each_distinct_backtrace(a, on_distinct, &r) == MT_OK && !r.oom) {
    uint64_t *expected = NULL;
    if (__atomic_compare_exchange_n(&a->bt_fp, &expected, r.bt_fp, 0, __ATOMIC_RELEASE,
                                    __ATOMIC_RELAXED)) {
      r.bt_fp = NULL; /* the analysis owns it now */
      a->bt_fp_n = a->nbt; /* read by mt__index_stacks_extend, after the readers */
    }
    rc = MT_OK;
  }
  rank_free(&r);
  mt__query_free(&q);
  return rc;
}

int mt__index_stacks_extend(mt_analysis *a) {
  if (!a->bt_fp || a->bt_fp_n == a->nbt) return 0;
  uint64_t *fp = realloc(a->bt_fp, (a->nbt + 1) * sizeof *fp);
  if (!fp) return -1;
  a->bt_fp = fp;
  mt_filter none;
  mt__query q;
  mt_filter_init(&none);
  if (mt__query_init(&q, a, &none) != MT_OK) return -1;
  rank r;
  memset(&r, 0, sizeof r);
  r.q = &q;
  r.a = a;
  uint32_t *codes = NULL;
  size_t cap = 0;
  int rc = prepare_codes(&r);
  /* a fingerprint is its backtrace's own: the new ones alone are made */
  for (size_t b = a->bt_fp_n; rc == 0 && b < a->nbt; b++) {
    size_t n = mt__bt_codes_grow(a, (uint32_t)b, &codes, &cap);
    if (n == SIZE_MAX) rc = -1;
    else fp[b] = fingerprint(&r, codes, n);
    if (r.oom) rc = -1;
  }
  free(codes);
  rank_free(&r);
  mt__query_free(&q);
  if (rc == 0) a->bt_fp_n = a->nbt;
  return rc;
}
