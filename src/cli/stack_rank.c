/* The first N stacks in bounded memory: see stack_rank.h. */
#include "stack_rank.h"

#include <stdlib.h>
#include <string.h>

#include "sites.h"
#include "rng.h"

/* The fingerprint of a backtrace is a polynomial over its printed frames
 * (each location's function and line, or an undescribed code's value),
 * outermost first: x = x * M + k(frame). Each code's share (M^n and the
 * sum of its n frames' terms) is computed once, so a backtrace costs one
 * multiply-add per code, and a code with two inlined locations gives what
 * two codes of one location each give, as they print alike. The printed
 * length and a final mix make the value. */
#define FP_M 0x9e3779b97f4a7c15ull
#define FP_SEED 0x5bd1e9955bd1e995ull


typedef union key {
  uint64_t samples;
  double ht;
} key;

typedef struct cand {
  uint64_t fp;
  key k;
  uint32_t bt;
  uint32_t slot; /* in a single pass: its slot, whose full tally is kept */
} cand;

typedef struct rank {
  const mt_analysis *a;
  int by_objects;
  emit_stack_cond cond;
  uint64_t *cmul, *cadd; /* per code: M^n and its frames' terms */
  uint32_t *clen;        /* per code: printed frames */
  uint64_t *bt_fp;       /* per backtrace id when few (0: not yet), or NULL */
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
  key *k;
  uint32_t *rep; /* backtrace id + 1; 0 = empty slot */
  mt_tally *full; /* when one pass does: each group's tally, so that no
                     last pass is needed */
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
  stack_rank_row *rows;
} rank;

static int prepare_codes(rank *r) {
  size_t nc = mt_analysis_code_count(r->a);
  r->cmul = malloc((nc + 1) * sizeof *r->cmul);
  r->cadd = malloc((nc + 1) * sizeof *r->cadd);
  r->clen = malloc((nc + 1) * sizeof *r->clen);
  if (!r->cmul || !r->cadd || !r->clen) return -1;
  for (size_t c = 0; c < nc; c++) {
    size_t n;
    const mt_frame *fr = mt_analysis_code_frames(r->a, (uint32_t)c, &n);
    uint64_t mul = 1, add = 0;
    if (n == 0) {
      mul = FP_M;
      add = mt__mix64(mt_analysis_code_value(r->a, (uint32_t)c) ^ 0xc0dec0dec0dec0deull);
    }
    for (size_t i = 0; i < n; i++) {
      mul *= FP_M;
      add = add * FP_M + mt__mix64((uint64_t)fr[i].function << 32 | fr[i].line);
    }
    r->cmul[c] = mul;
    r->cadd[c] = add;
    r->clen[c] = n ? (uint32_t)n : 1;
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
  key *k = malloc(cap * sizeof *k);
  uint32_t *rep = calloc(cap, sizeof *rep);
  mt_tally *full = r->full ? malloc(cap * sizeof *full) : NULL;
  if (!fp || !k || !rep || (r->full && !full)) {
    free(fp);
    free(k);
    free(rep);
    free(full);
    return -1;
  }
  for (size_t s = 0; s < r->cap; s++) {
    if (!r->rep[s]) continue;
    size_t t = slot_of(r->fp[s], cap);
    while (rep[t]) t = (t + 1) & (cap - 1);
    fp[t] = r->fp[s];
    k[t] = r->k[s];
    rep[t] = r->rep[s];
    if (full) full[t] = r->full[s];
  }
  free(r->full);
  r->full = full;
  free(r->fp);
  free(r->k);
  free(r->rep);
  r->fp = fp;
  r->k = k;
  r->rep = rep;
  r->cap = cap;
  return 0;
}

/* Adds object i, of fingerprint fp, to this pass. */
static int add_object(rank *r, size_t i, uint32_t bt, uint64_t fp) {
  if (r->final) {
    uint32_t *row = mt__u64map_get(&r->shown, fp);
    if (row) mt_tally_object(r->a, i, &r->rows[*row - 1].tally);
    return 0;
  }
  if (r->bits && fp >> (64 - r->bits) != r->part) return 0;
  size_t s = slot_of(fp, r->cap);
  while (r->rep[s] && r->fp[s] != fp) s = (s + 1) & (r->cap - 1);
  if (!r->rep[s]) {
    if ((r->count + 1) * 4 > r->cap * 3) {
      if (grow(r)) {
        r->oom = 1;
        return 1;
      }
      return add_object(r, i, bt, fp);
    }
    r->fp[s] = fp;
    r->rep[s] = bt + 1;
    memset(&r->k[s], 0, sizeof r->k[s]);
    if (r->full) memset(&r->full[s], 0, sizeof r->full[s]);
    r->count++;
  }
  /* one object's tally alone, then added: the sum runs in allocation order
   * as the per-stack tallies of mt_analysis_tally_stacks do */
  if (r->full) { /* the same sums, in the same order */
    mt_tally_object(r->a, i, &r->full[s]);
    if (r->by_objects) r->k[s].ht = r->full[s].ht;
    else r->k[s].samples = r->full[s].samples;
    return 0;
  }
  mt_tally t = {0};
  mt_tally_object(r->a, i, &t);
  if (r->by_objects) r->k[s].ht += t.ht;
  else r->k[s].samples += t.samples;
  return 0;
}

static int on_object(void *ctx, size_t i, const uint32_t *codes, size_t n) {
  rank *r = ctx;
  if (!emit_stack_cond_pass(&r->cond, codes, n)) return 0;
  uint32_t bt = mt_analysis_object_backtrace_id(r->a, i);
  return add_object(r, i, bt, object_fp(r, bt, codes, n));
}

/* With few backtrace ids, each one's fingerprint (0 when it fails the
 * stack conditions) is computed once, and passes need no backtraces. */
static int on_distinct(void *ctx, size_t bt, const uint32_t *codes, size_t n) {
  rank *r = ctx;
  r->bt_fp[bt] = emit_stack_cond_pass(&r->cond, codes, n) ? fingerprint(r, codes, n) : 0;
  return 0;
}

static int run_pass(rank *r, const mt_filter *rest, const uint8_t *mask) {
  if (!mask) return mt_analysis_each_backtrace(r->a, rest, on_object, r) != MT_OK || r->oom;
  size_t nobj = mt_analysis_object_count(r->a);
  for (size_t i = 0; i < nobj; i++) {
    if (!mask[i]) continue;
    uint32_t bt = mt_analysis_object_backtrace_id(r->a, i);
    if (r->bt_fp[bt] && add_object(r, i, bt, r->bt_fp[bt])) return 1;
  }
  return r->oom;
}

static uint32_t *codes_of(rank *r, uint32_t bt, uint32_t **buf, size_t *cap, size_t *n) {
  for (;;) {
    *n = mt_analysis_backtrace_codes(r->a, bt, *buf, *cap);
    if (*n <= *cap) return *buf;
    uint32_t *b = realloc(*buf, *n * 2 * sizeof *b);
    if (!b) {
      r->oom = 1;
      *n = 0;
      return *buf;
    }
    *buf = b;
    *cap = *n * 2;
  }
}

/* < 0 when x ranks before y: greater key, then printed frames (as
 * emit_stack_cmp), then fingerprint. */
static int cand_cmp(rank *r, const cand *x, const cand *y) {
  if (r->by_objects ? x->k.ht != y->k.ht : x->k.samples != y->k.samples) {
    if (r->by_objects) return x->k.ht > y->k.ht ? -1 : 1;
    return x->k.samples > y->k.samples ? -1 : 1;
  }
  if (x->fp == y->fp) return 0;
  size_t nx, ny;
  const uint32_t *cx = codes_of(r, x->bt, &r->cx, &r->capx, &nx);
  const uint32_t *cy = codes_of(r, y->bt, &r->cy, &r->capy, &ny);
  int c = emit_codes_cmp(r->a, cx, nx, cy, ny);
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

static int sort_cmp(const void *x, const void *y, void *ctx) {
  return cand_cmp(ctx, x, y);
}

int stack_rank(const mt_analysis *a, const mt_filter *f, int by_objects, size_t limit,
               size_t budget, stack_rank_row **rows, size_t *nrows, size_t *ngroups) {
  rank r;
  memset(&r, 0, sizeof r);
  r.a = a;
  r.by_objects = by_objects;
  r.limit = limit;
  *rows = NULL;
  *nrows = *ngroups = 0;
  mt_filter rest;
  uint8_t *mask = NULL; /* the objects passing rest, when passes need it */
  int rc = -1;
  if (emit_stack_cond_init(a, f, &rest, &r.cond) || prepare_codes(&r)) goto out;
  /* Groups are at most the backtrace ids; a table slot costs 20 bytes and
   * tables stay at most 3/4 full. Passes split the fingerprints so that
   * one pass's table fits the budget. */
  size_t nbt = mt_analysis_backtrace_count(a), per_slot = 20;
  if (limit == 0 || limit > nbt + 1) r.limit = limit = nbt + 1; /* groups <= ids */
  if (nbt * sizeof *r.bt_fp <= budget / 4) {
    size_t nobj = mt_analysis_object_count(a);
    r.bt_fp = calloc(nbt + 1, sizeof *r.bt_fp);
    mask = malloc(nobj + 1);
    if (!r.bt_fp || !mask || mt_analysis_select(a, &rest, mask, NULL) != MT_OK ||
        mt_analysis_each_distinct_backtrace(a, on_distinct, &r) != MT_OK)
      goto out;
  }
  size_t cap = 1024;
  while (cap * per_slot * 2 <= budget) cap *= 2;
  unsigned bits = 0;
  while (bits < 16 && (nbt >> bits) * 4 > cap * 3) bits++;
  size_t want = 1024;
  while (want * 3 < (nbt >> bits) * 4 + 4 && want < cap) want *= 2;
  r.cap = want;
  r.fp = malloc(r.cap * sizeof *r.fp);
  r.k = malloc(r.cap * sizeof *r.k);
  r.rep = calloc(r.cap, sizeof *r.rep);
  r.heap = malloc(limit * sizeof *r.heap);
  if (!bits) r.full = malloc(r.cap * sizeof *r.full);
  if (!r.fp || !r.k || !r.rep || !r.heap || (!bits && !r.full)) goto out;
  r.bits = bits;
  for (uint64_t p = 0; p < (1ull << bits); p++) {
    r.part = p;
    r.have_last = 0;
    if (run_pass(&r, &rest, mask)) goto out;
    *ngroups += r.count;
    for (size_t s = 0; s < r.cap; s++) {
      if (!r.rep[s]) continue;
      cand c = {r.fp[s], r.k[s], r.rep[s] - 1, (uint32_t)s};
      offer(&r, &c);
      if (bits) r.rep[s] = 0;
    }
    if (r.oom) goto out;
    r.count = 0;
  }
  qsort_r(r.heap, r.hn, sizeof *r.heap, sort_cmp, &r);
  if (r.oom) goto out;
  r.rows = calloc(r.hn + 1, sizeof *r.rows);
  if (!r.rows) goto out;
  for (size_t i = 0; i < r.hn; i++) {
    r.rows[i].bt = r.heap[i].bt;
    if (r.full) r.rows[i].tally = r.full[r.heap[i].slot];
  }
  if (!r.full) {
    /* the last pass: the shown groups' full tallies */
    free(r.fp);
    free(r.k);
    free(r.rep);
    r.fp = NULL;
    r.k = NULL;
    r.rep = NULL;
    for (size_t i = 0; i < r.hn; i++)
      if (mt__u64map_put(&r.shown, r.heap[i].fp, (uint32_t)i)) goto out;
    r.final = 1;
    r.have_last = 0;
    if (run_pass(&r, &rest, mask)) goto out;
  }
  *rows = r.rows;
  *nrows = r.hn;
  r.rows = NULL;
  rc = 0;
out:
  emit_stack_cond_free(&r.cond);
  free(r.cmul);
  free(r.cadd);
  free(r.clen);
  free(r.bt_fp);
  free(mask);
  free(r.pcodes);
  free(r.px);
  free(r.plen);
  free(r.fp);
  free(r.k);
  free(r.rep);
  free(r.full);
  free(r.heap);
  free(r.cx);
  free(r.cy);
  free(r.rows);
  mt__u64map_free(&r.shown);
  return rc;
}
