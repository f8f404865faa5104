/* Several traces' rates (trace_rates.h). */
#include "trace_rates.h"

#include <stdlib.h>

int mt__trace_rates_init(mt__trace_rates *r, const mt_analysis *const *as, size_t n) {
  *r = (mt__trace_rates){0};
  r->of = malloc((n ? n : 1) * sizeof *r->of);
  if (!r->of) return MT_ERR_NOMEM;
  r->n = n;
  for (size_t k = 0; k < n; k++) {
    r->of[k] = mt_analysis_sampling(as[k]);
    if (k == 0 || r->of[k].rate < r->least.rate) r->least = r->of[k];
    if (k && (r->of[k].rate != r->of[0].rate || r->of[k].word_bytes != r->of[0].word_bytes))
      r->mixed = 1;
  }
  return MT_OK;
}

void mt__trace_rates_free(mt__trace_rates *r) {
  free(r->of);
  free(r->gs);
  free(r->gt);
  *r = (mt__trace_rates){0};
}

void mt__trace_rates_describe(const mt__trace_rates *r, int by_process, mt_ranking *ranking) {
  ranking->by_process = by_process;
  ranking->ntraces = r->n;
  ranking->mixed_rates = r->mixed;
  ranking->sampling = r->mixed ? r->least : r->of[0];
}

/* out->bytes and out->objects for the group of rows[0..m), whose tallies
 * out->tally holds added. */
static int estimate(mt__trace_rates *r, const mt_rank_row *rows, size_t m, mt_rank_row *out) {
  if (!r->mixed) {
    out->bytes = mt_sampling_bytes(&r->of[0], &out->tally);
    out->objects = mt_sampling_objects(&r->of[0], &out->tally);
    return MT_OK;
  }
  if (m > r->cap) {
    mt_sampling *gs = realloc(r->gs, m * sizeof *gs);
    if (gs) r->gs = gs;
    mt_tally *gt = realloc(r->gt, m * sizeof *gt);
    if (gt) r->gt = gt;
    if (!gs || !gt) return MT_ERR_NOMEM;
    r->cap = m;
  }
  for (size_t i = 0; i < m; i++) {
    r->gs[i] = r->of[rows[i].trace];
    r->gt[i] = rows[i].tally;
  }
  out->bytes = mt_sampling_bytes_mixed(r->gs, r->gt, m);
  out->objects = mt_sampling_objects(&r->least, &out->tally);
  return MT_OK;
}

int mt__trace_rates_group(mt__trace_rates *r, const mt_rank_row *rows, size_t m,
                          mt_rank_row *out) {
  *out = rows[0];
  for (size_t i = 1; i < m; i++) {
    mt_tally_add(&out->tally, &rows[i].tally);
    if (rows[i].oldest < out->oldest) out->oldest = rows[i].oldest;
    if (rows[i].newest > out->newest) out->newest = rows[i].newest;
  }
  out->callers = NULL;
  return estimate(r, rows, m, out);
}

void mt__trace_rates_total(const mt__trace_rates *r, const mt_tally *t, const mt_tally *sum,
                           mt_estimate *bytes, mt_estimate *objects) {
  *bytes = r->mixed ? mt_sampling_bytes_mixed(r->of, t, r->n) : mt_sampling_bytes(&r->of[0], sum);
  *objects = mt_sampling_objects(r->mixed ? &r->least : &r->of[0], sum);
}

int mt__trace_rates_finish(mt__trace_rates *r, int rc, mt_tally *totals, mt_ranking *ranking,
                           mt_ranking **out) {
  if (rc == MT_OK) {
    mt__trace_rates_total(r, totals, &ranking->total, &ranking->total_bytes,
                          &ranking->total_objects);
    mt__trace_rates_total(r, totals + r->n, &ranking->trace_total, &ranking->trace_bytes,
                          &ranking->trace_objects);
  }
  free(totals);
  mt__trace_rates_free(r);
  if (rc != MT_OK) {
    mt_ranking_free(ranking);
    return rc;
  }
  *out = ranking;
  return MT_OK;
}
