/* The difference between two traces, site by site (memtrace/rank.h). Each
 * side is reduced to its sites' tallies, their names copied, so that one
 * trace's analysis can be freed before the other's is loaded. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "memtrace/rank.h"

struct mt__diff_store {
  mt__strtab strings;
  mt__u64map index; /* interned key -> row */
  size_t cap;
  char *key;
  size_t key_cap;
};

int mt_diff_new(mt_group_by by, mt_diff **out) {
  *out = NULL;
  if (by == MT_BY_STACK) return MT_ERR_INVALID;
  mt_diff *d = calloc(1, sizeof *d);
  if (!d || !(d->store = calloc(1, sizeof *d->store))) {
    free(d);
    return MT_ERR_NOMEM;
  }
  d->by = by;
  *out = d;
  return MT_OK;
}

void mt_diff_free(mt_diff *d) {
  if (!d) return;
  if (d->store) {
    mt__strtab_free(&d->store->strings);
    mt__u64map_free(&d->store->index);
    free(d->store->key);
    free(d->store);
  }
  free(d->rows);
  free(d);
}

static const char *intern(mt_diff *d, const char *s) {
  return mt__strtab_intern(&d->store->strings, s, strlen(s));
}

/* The row of a site, created on first sight; NULL when out of memory.
 * Sites with no location are pooled, as are empty backtraces. */
static mt_diff_row *row_for(mt_diff *d, const mt_site *s) {
  struct mt__diff_store *st = d->store;
  const char *fn = s->kind == MT_SITE_LOCATION ? s->function : "";
  const char *file = s->kind == MT_SITE_LOCATION ? s->file : "";
  /* names never hold a newline in practice (the analysis keys functions
   * the same way) */
  size_t need = strlen(fn) + strlen(file) + 32;
  if (mt__grow((void **)&st->key, &st->key_cap, need, 1, 256)) return NULL;
  size_t len = s->kind == MT_SITE_LOCATION
                   ? (size_t)snprintf(st->key, st->key_cap, "%s\n%s\n%u", fn, file,
                                      d->by == MT_BY_LINE ? s->line : 0)
                   : (size_t)snprintf(st->key, st->key_cap, "\n%d", s->kind);
  const char *k = mt__strtab_intern(&st->strings, st->key, len);
  if (!k) return NULL;
  uint32_t *ix = mt__u64map_get(&st->index, (uint64_t)(uintptr_t)k);
  if (ix) return &d->rows[*ix - 1];
  if (mt__reserve((void **)&d->rows, d->nrows, &st->cap, sizeof *d->rows)) return NULL;
  mt_diff_row *r = &d->rows[d->nrows];
  memset(r, 0, sizeof *r);
  r->site.kind = s->kind;
  r->site.function = intern(d, fn);
  r->site.file = intern(d, file);
  r->site.line = d->by == MT_BY_LINE && s->kind == MT_SITE_LOCATION ? s->line : 0;
  if (!r->site.function || !r->site.file ||
      mt__u64map_put(&st->index, (uint64_t)(uintptr_t)k, (uint32_t)d->nrows))
    return NULL;
  d->nrows++;
  return r;
}

int mt_diff_add(mt_diff *d, int side, const mt_analysis *a, const mt_filter *f) {
  if (side != MT_DIFF_BASE && side != MT_DIFF_NEW) return MT_ERR_INVALID;
  mt_sampling s = mt_analysis_sampling(a);
  if (d->ntraces[side] &&
      (s.rate != d->sampling[side].rate || s.word_bytes != d->sampling[side].word_bytes))
    return MT_ERR_INVALID; /* one side, one rate: its tallies add */
  mt_rank_spec spec = {d->by, MT_ORDER_BYTES, 0, 0};
  mt_ranking *r;
  int rc = mt_rank(a, f, &spec, &r);
  if (rc != MT_OK) return rc;
  for (size_t i = 0; i < r->nrows; i++) {
    mt_diff_row *row = row_for(d, &r->rows[i].site);
    if (!row) {
      mt_ranking_free(r);
      return MT_ERR_NOMEM;
    }
    row->side[side].present = 1;
    mt_tally_add(&row->side[side].tally, &r->rows[i].tally);
  }
  mt_tally_add(&d->total[side], &r->total);
  d->sampling[side] = r->sampling;
  d->ntraces[side]++;
  mt_ranking_free(r);
  return MT_OK;
}

static int disjoint(mt_estimate x, mt_estimate y) { return x.hi < y.lo || y.hi < x.lo; }

static int name_cmp(const mt_diff_row *x, const mt_diff_row *y) {
  if (x->site.kind != y->site.kind) return x->site.kind < y->site.kind ? -1 : 1;
  int c = strcmp(x->site.function, y->site.function);
  if (!c) c = strcmp(x->site.file, y->site.file);
  if (!c) c = x->site.line < y->site.line ? -1 : x->site.line > y->site.line;
  return c;
}

static int order(const void *px, const void *py) {
  const mt_diff_row *x = px, *y = py;
  if (x->significant != y->significant) return x->significant ? -1 : 1;
  double cx = fabs(x->side[1].bytes.value - x->side[0].bytes.value);
  double cy = fabs(y->side[1].bytes.value - y->side[0].bytes.value);
  if (cx != cy) return cx > cy ? -1 : 1;
  return name_cmp(x, y);
}

int mt_diff_finish(mt_diff *d) {
  d->nsignificant = 0;
  for (int k = 0; k < 2; k++) {
    d->total_bytes[k] = mt_sampling_bytes(&d->sampling[k], &d->total[k]);
    d->total_objects[k] = mt_sampling_objects(&d->sampling[k], &d->total[k]);
  }
  for (size_t i = 0; i < d->nrows; i++) {
    mt_diff_row *r = &d->rows[i];
    for (int k = 0; k < 2; k++) {
      /* a site a trace lacks: the estimate of an empty tally there (0, up
       * to zero samples' upper bound) */
      r->side[k].bytes = mt_sampling_bytes(&d->sampling[k], &r->side[k].tally);
      r->side[k].objects = mt_sampling_objects(&d->sampling[k], &r->side[k].tally);
    }
    r->significant = disjoint(r->side[0].bytes, r->side[1].bytes);
    d->nsignificant += (size_t)r->significant;
  }
  if (d->nrows) qsort(d->rows, d->nrows, sizeof *d->rows, order);
  /* the index named rows by position: sorting moved them */
  mt__u64map_free(&d->store->index);
  d->total_significant = disjoint(d->total_bytes[0], d->total_bytes[1]);
  return MT_OK;
}
