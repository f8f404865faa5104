/* Leaks of several traces as one (rank.h): each trace's leaks grouped by
 * stack, the stacks that print the same merged and their tallies added. */
#include <stdlib.h>
#include <string.h>

#include "memtrace/rank.h"
#include "rank_store.h"
#include "trace_rates.h"

static int cmp_str(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : ""); }

/* A frame as it prints: function, file and line; a code only without a
 * location (code values differ between processes, so such frames match
 * only when the values happen to be equal, as the text shows them). */
static int cmp_frame(const mt_stack_frame *a, const mt_stack_frame *b) {
  if (!a->function != !b->function) return a->function ? -1 : 1;
  if (!a->function) return a->code < b->code ? -1 : a->code > b->code;
  int c = cmp_str(a->function, b->function);
  if (!c) c = cmp_str(a->file, b->file);
  if (!c && a->line != b->line) c = a->line < b->line ? -1 : 1;
  return c;
}

static int cmp_stack(const void *x, const void *y, void *by_process) {
  const mt_rank_row *a = x, *b = y;
  if (*(int *)by_process && a->trace != b->trace) return a->trace < b->trace ? -1 : 1;
  if (a->nframes != b->nframes) return a->nframes < b->nframes ? -1 : 1;
  for (size_t i = 0; i < a->nframes; i++) {
    int c = cmp_frame(&a->frames[i], &b->frames[i]);
    if (c) return c;
  }
  return 0;
}

/* The order mt_leaks gives: most bytes (estimated: at one rate, in the
 * order of the samples), most objects, or oldest first; ties by bytes,
 * then by stack, then trace. */
static int cmp_order(const void *x, const void *y, void *order) {
  const mt_rank_row *a = x, *b = y;
  mt_rank_order o = *(mt_rank_order *)order;
  if (o == MT_ORDER_OLDEST && a->oldest != b->oldest) return a->oldest < b->oldest ? -1 : 1;
  if (o == MT_ORDER_OBJECTS && mt_tally_ht(&a->tally) != mt_tally_ht(&b->tally))
    return mt_tally_ht(&a->tally) > mt_tally_ht(&b->tally) ? -1 : 1;
  if (a->bytes.value != b->bytes.value) return a->bytes.value > b->bytes.value ? -1 : 1;
  int by_process = 1;
  return cmp_stack(a, b, &by_process);
}

/* Every trace's leak groups with their full stacks, in *all (frames
 * pointing into ones[k]). */
static int gather(const mt_analysis *const *as, size_t n, const mt_filter *f,
                  mt_rank_order order, mt_ranking **ones, mt_ranking *r, mt_rank_row **all,
                  size_t *nall, mt_tally *totals) {
  for (size_t k = 0; k < n; k++) {
    int rc = mt_leaks(as[k], f, order, 0, 0, &ones[k]);
    if (rc != MT_OK) return rc;
    mt_rank_row *grown = realloc(*all, (*nall + ones[k]->nrows + 1) * sizeof **all);
    if (!grown) return MT_ERR_NOMEM;
    *all = grown;
    for (size_t i = 0; i < ones[k]->nrows; i++) {
      grown[*nall] = ones[k]->rows[i];
      grown[(*nall)++].trace = (uint32_t)k;
    }
    totals[k] = ones[k]->total;
    totals[n + k] = ones[k]->trace_total;
    mt_tally_add(&r->total, &ones[k]->total);
    mt_tally_add(&r->trace_total, &ones[k]->trace_total);
    if (ones[k]->duration > r->duration) r->duration = ones[k]->duration;
  }
  return MT_OK;
}

/* The merged rows kept (the first `limit`), their frames (the first
 * `depth`) copied into the ranking's own store. */
static int keep(mt_ranking *r, size_t limit, size_t depth) {
  if (limit && r->nrows > limit) r->nrows = limit;
  size_t nframes = 0;
  for (size_t i = 0; i < r->nrows; i++) {
    size_t k = r->rows[i].frames_total;
    nframes += depth && k > depth ? depth : k;
  }
  r->store = calloc(1, sizeof *r->store);
  if (!r->store) return MT_ERR_NOMEM;
  r->store->frames = malloc((nframes ? nframes : 1) * sizeof *r->store->frames);
  if (!r->store->frames) return MT_ERR_NOMEM;
  mt_stack_frame *at = r->store->frames;
  for (size_t i = 0; i < r->nrows; i++) {
    mt_rank_row *row = &r->rows[i];
    row->nframes = depth && row->frames_total > depth ? depth : row->frames_total;
    if (row->nframes) memcpy(at, row->frames, row->nframes * sizeof *at);
    row->frames = at;
    at += row->nframes;
  }
  return MT_OK;
}

int mt_leaks_traces(const mt_analysis *const *as, size_t n, const mt_filter *f,
                    mt_rank_order order, size_t limit, size_t depth, int by_process,
                    mt_ranking **out) {
  *out = NULL;
  if (n == 1 && !by_process) return mt_leaks(as[0], f, order, limit, depth, out);
  if (n == 0) return MT_ERR_INVALID;
  mt__trace_rates rates;
  mt_ranking *r = calloc(1, sizeof *r);
  mt_ranking **ones = calloc(n, sizeof *ones);
  mt_tally *totals = calloc(2 * n, sizeof *totals);
  mt_rank_row *all = NULL;
  size_t nall = 0;
  int rc = mt__trace_rates_init(&rates, as, n);
  if (rc == MT_OK && (!r || !ones || !totals)) rc = MT_ERR_NOMEM;
  if (rc == MT_OK) {
    r->by = MT_BY_STACK;
    r->order = order;
    mt__trace_rates_describe(&rates, by_process, r);
    rc = gather(as, n, f, order, ones, r, &all, &nall, totals);
  }
  if (rc == MT_OK && !(r->rows = malloc((nall ? nall : 1) * sizeof *r->rows))) rc = MT_ERR_NOMEM;
  if (rc == MT_OK) {
    /* matching stacks side by side, then one row each */
    if (nall) qsort_r(all, nall, sizeof *all, cmp_stack, &by_process);
    for (size_t i = 0, j; i < nall && rc == MT_OK; i = j) {
      j = i + 1;
      while (j < nall && cmp_stack(&all[i], &all[j], &by_process) == 0) j++;
      rc = mt__trace_rates_group(&rates, all + i, j - i, &r->rows[r->nrows++]);
    }
    r->groups = r->nrows;
    qsort_r(r->rows, r->nrows, sizeof *r->rows, cmp_order, &order);
    if (rc == MT_OK) rc = keep(r, limit, depth);
  }
  free(all);
  for (size_t k = 0; ones && k < n; k++) mt_ranking_free(ones[k]);
  free(ones);
  return mt__trace_rates_finish(&rates, rc, totals, r, out);
}
