/* Several traces ranked as one (rank.h): each trace ranked by site, the
 * rows matched by name and their tallies added. */
#include <stdlib.h>
#include <string.h>

#include "memtrace/rank.h"

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

/* Most bytes (or objects) first, ties by name, then by trace. */
static int cmp_rank(const void *x, const void *y, void *order) {
  const mt_rank_row *a = x, *b = y;
  if (*(mt_rank_order *)order == MT_ORDER_OBJECTS && a->tally.ht != b->tally.ht)
    return a->tally.ht > b->tally.ht ? -1 : 1;
  if (a->tally.samples != b->tally.samples) return a->tally.samples > b->tally.samples ? -1 : 1;
  int c = cmp_str(a->site.function, b->site.function);
  if (!c) c = cmp_str(a->site.file, b->site.file);
  if (!c && a->site.line != b->site.line) c = a->site.line < b->site.line ? -1 : 1;
  if (!c && a->trace != b->trace) c = a->trace < b->trace ? -1 : 1;
  return c;
}

static int same_sampling(const mt_sampling *a, const mt_sampling *b) {
  return a->rate == b->rate && a->word_bytes == b->word_bytes;
}

int mt_rank_traces(const mt_analysis *const *as, size_t n, const mt_filter *f,
                   const mt_rank_spec *spec, int by_process, mt_ranking **out) {
  *out = NULL;
  if (n == 1 && !by_process) return mt_rank(as[0], f, spec, out);
  if (n == 0 || spec->by == MT_BY_STACK || spec->order == MT_ORDER_OLDEST) return MT_ERR_INVALID;
  mt_sampling s = mt_analysis_sampling(as[0]);
  for (size_t k = 1; k < n; k++) {
    mt_sampling t = mt_analysis_sampling(as[k]);
    if (!same_sampling(&s, &t)) return MT_ERR_INVALID;
  }
  mt_ranking *r = calloc(1, sizeof *r);
  mt_rank_row *all = NULL; /* every trace's rows, merged below into r->rows */
  size_t nall = 0;
  if (!r) return MT_ERR_NOMEM;
  r->by = spec->by;
  r->order = spec->order;
  r->by_process = by_process;
  r->ntraces = n;
  r->sampling = s;
  mt_rank_spec every = {spec->by, spec->order, 0, 0};
  for (size_t k = 0; k < n; k++) {
    mt_ranking *one;
    int rc = mt_rank(as[k], f, &every, &one);
    mt_rank_row *grown = rc == MT_OK ? realloc(all, (nall + one->nrows + 1) * sizeof *all) : NULL;
    if (!grown) {
      if (rc == MT_OK) mt_ranking_free(one);
      free(all);
      mt_ranking_free(r);
      return rc == MT_OK ? MT_ERR_NOMEM : rc;
    }
    all = grown;
    for (size_t i = 0; i < one->nrows; i++, nall++) {
      all[nall] = one->rows[i];
      all[nall].callers = NULL; /* the store goes with `one` */
      all[nall].trace = (uint32_t)k;
    }
    mt_tally_add(&r->total, &one->total);
    mt_tally_add(&r->trace_total, &one->trace_total);
    if (one->duration > r->duration) r->duration = one->duration;
    mt_ranking_free(one);
  }
  /* matching sites side by side, then one row each */
  if (nall) qsort_r(all, nall, sizeof *all, cmp_site, &by_process);
  r->rows = malloc((nall ? nall : 1) * sizeof *r->rows);
  if (!r->rows) {
    free(all);
    mt_ranking_free(r);
    return MT_ERR_NOMEM;
  }
  for (size_t i = 0; i < nall;) {
    mt_rank_row row = all[i];
    size_t j = i + 1;
    for (; j < nall && cmp_site(&all[i], &all[j], &by_process) == 0; j++) {
      const mt_rank_row *o = &all[j];
      mt_tally_add(&row.tally, &o->tally);
      if (o->oldest < row.oldest) row.oldest = o->oldest;
      if (o->newest > row.newest) row.newest = o->newest;
    }
    if (row.site.kind == MT_SITE_CODE && !by_process) row.site.code = 0; /* a pool, as diffs */
    row.bytes = mt_sampling_bytes(&s, &row.tally);
    row.objects = mt_sampling_objects(&s, &row.tally);
    r->rows[r->nrows++] = row;
    i = j;
  }
  free(all);
  r->groups = r->nrows;
  mt_rank_order order = spec->order;
  qsort_r(r->rows, r->nrows, sizeof *r->rows, cmp_rank, &order);
  if (spec->limit && r->nrows > spec->limit) r->nrows = spec->limit;
  r->total_bytes = mt_sampling_bytes(&s, &r->total);
  r->total_objects = mt_sampling_objects(&s, &r->total);
  r->trace_bytes = mt_sampling_bytes(&s, &r->trace_total);
  r->trace_objects = mt_sampling_objects(&s, &r->trace_total);
  *out = r;
  return MT_OK;
}
