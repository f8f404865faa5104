/* Several traces ranked as one (rank.h): each trace ranked by site, the
 * rows matched by name and their tallies added. */
#include <stdlib.h>
#include <string.h>

#include "memtrace/rank.h"
#include "trace_rates.h"

static int cmp_str(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : ""); }

/* The site's identity: kind, name, file, line (code values never: they
 * differ between processes; every site without a location is one group,
 * as mt_diff pools them), and the trace when by process. */
static int cmp_site(const void *x, const void *y, void *by_process) {
  const mt_rank_row *a = x, *b = y;
  if (*(int *)by_process && a->trace != b->trace) return a->trace < b->trace ? -1 : 1;
  const mt_site *s = &a->site, *t = &b->site;
  if (s->kind != t->kind) return s->kind < t->kind ? -1 : 1;
  if (s->kind == MT_SITE_CODE && *(int *)by_process && s->code != t->code) /* one process's */
    return s->code < t->code ? -1 : 1;
  if (s->kind != MT_SITE_LOCATION) return 0;
  int c = cmp_str(s->function, t->function);
  if (!c) c = cmp_str(s->file, t->file);
  if (!c && s->line != t->line) c = s->line < t->line ? -1 : 1;
  return c;
}

/* Most bytes (or objects) first, ties by name, then by trace. Bytes are
 * the estimates (at one rate, in the order of the samples). */
static int cmp_rank(const void *x, const void *y, void *order) {
  const mt_rank_row *a = x, *b = y;
  if (*(mt_rank_order *)order == MT_ORDER_OBJECTS &&
      mt_tally_ht(&a->tally) != mt_tally_ht(&b->tally))
    return mt_tally_ht(&a->tally) > mt_tally_ht(&b->tally) ? -1 : 1;
  if (a->bytes.value != b->bytes.value) return a->bytes.value > b->bytes.value ? -1 : 1;
  int c = cmp_str(a->site.function, b->site.function);
  if (!c) c = cmp_str(a->site.file, b->site.file);
  if (!c && a->site.line != b->site.line) c = a->site.line < b->site.line ? -1 : 1;
  if (!c && a->trace != b->trace) c = a->trace < b->trace ? -1 : 1;
  return c;
}

/* The rows of every trace's ranking, each with its trace, into *all;
 * each trace's totals into totals[k] and trace_totals[k]. */
static int gather(const mt_analysis *const *as, size_t n, const mt_filter *f,
                  const mt_rank_spec *spec, mt_ranking *r, mt_rank_row **all, size_t *nall,
                  mt_tally *totals, mt_tally *trace_totals) {
  mt_rank_spec every = {spec->by, spec->order, 0, 0};
  for (size_t k = 0; k < n; k++) {
    mt_ranking *one;
    int rc = mt_rank(as[k], f, &every, &one);
    if (rc != MT_OK) return rc;
    mt_rank_row *grown = realloc(*all, (*nall + one->nrows + 1) * sizeof **all);
    if (!grown) {
      mt_ranking_free(one);
      return MT_ERR_NOMEM;
    }
    *all = grown;
    for (size_t i = 0; i < one->nrows; i++, (*nall)++) {
      grown[*nall] = one->rows[i];
      grown[*nall].callers = NULL; /* the store goes with `one` */
      grown[*nall].trace = (uint32_t)k;
    }
    totals[k] = one->total;
    trace_totals[k] = one->trace_total;
    mt_tally_add(&r->total, &one->total);
    mt_tally_add(&r->trace_total, &one->trace_total);
    if (one->duration > r->duration) r->duration = one->duration;
    mt_ranking_free(one);
  }
  return MT_OK;
}

/* The rows of `all` merged into r->rows, one a site (a trace's own with
 * by_process). */
static int merge(mt_ranking *r, mt_rank_row *all, size_t nall, int by_process,
                 mt__trace_rates *rates) {
  if (nall) qsort_r(all, nall, sizeof *all, cmp_site, &by_process);
  r->rows = malloc((nall ? nall : 1) * sizeof *r->rows);
  if (!r->rows) return MT_ERR_NOMEM;
  for (size_t i = 0, j; i < nall; i = j) {
    j = i + 1;
    while (j < nall && cmp_site(&all[i], &all[j], &by_process) == 0) j++;
    mt_rank_row *row = &r->rows[r->nrows++];
    if (mt__trace_rates_group(rates, all + i, j - i, row) != MT_OK) return MT_ERR_NOMEM;
    if (row->site.kind == MT_SITE_CODE && !by_process) row->site.code = 0; /* a pool, as diffs */
  }
  r->groups = r->nrows;
  return MT_OK;
}

int mt_rank_traces(const mt_analysis *const *as, size_t n, const mt_filter *f,
                   const mt_rank_spec *spec, int by_process, mt_ranking **out) {
  *out = NULL;
  if (n == 1 && !by_process) return mt_rank(as[0], f, spec, out);
  if (n == 0 || spec->by == MT_BY_STACK || spec->order == MT_ORDER_OLDEST) return MT_ERR_INVALID;
  mt__trace_rates rates;
  mt_ranking *r = calloc(1, sizeof *r);
  mt_tally *totals = calloc(2 * n, sizeof *totals);
  mt_rank_row *all = NULL; /* every trace's rows, merged below into r->rows */
  size_t nall = 0;
  int rc = mt__trace_rates_init(&rates, as, n);
  if (rc == MT_OK && (!r || !totals)) rc = MT_ERR_NOMEM;
  if (rc == MT_OK) {
    r->by = spec->by;
    r->order = spec->order;
    mt__trace_rates_describe(&rates, by_process, r);
    rc = gather(as, n, f, spec, r, &all, &nall, totals, totals + n);
  }
  if (rc == MT_OK) rc = merge(r, all, nall, by_process, &rates);
  if (rc == MT_OK) {
    mt_rank_order order = spec->order;
    qsort_r(r->rows, r->nrows, sizeof *r->rows, cmp_rank, &order);
    if (spec->limit && r->nrows > spec->limit) r->nrows = spec->limit;
  }
  free(all);
  return mt__trace_rates_finish(&rates, rc, totals, r, out);
}
