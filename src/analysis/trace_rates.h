/* Several traces' rates, for the answers that add their tallies
 * (rank_traces.c, leaks_traces.c): a group's bytes are each trace's at its
 * own rate (mt_sampling_bytes_mixed), its objects the tallies added. */
#ifndef MT_ANALYSIS_TRACE_RATES_H
#define MT_ANALYSIS_TRACE_RATES_H

#include "memtrace/rank.h"

typedef struct mt__trace_rates {
  mt_sampling *of;   /* per trace                                          */
  size_t n;
  mt_sampling least; /* the smallest rate's: for a tally of no object      */
  int mixed;         /* the rates or word sizes differ                     */
  mt_sampling *gs;   /* scratch: a group's rows' samplings and tallies     */
  mt_tally *gt;
  size_t cap;
} mt__trace_rates;

/* MT_OK or MT_ERR_NOMEM. */
int mt__trace_rates_init(mt__trace_rates *r, const mt_analysis *const *as, size_t n);
void mt__trace_rates_free(mt__trace_rates *r);
/* Describes a ranking of the n traces r was made for: ranking->by_process,
 * ntraces, mixed_rates and sampling (the rate's, or the lowest's when they
 * differ). */
void mt__trace_rates_describe(const mt__trace_rates *r, int by_process, mt_ranking *ranking);
/* One row for the group of matching rows[0..m) (each of trace
 * rows[i].trace): rows[0] with the tallies added, the oldest and newest of
 * all, no callers, and the bytes and objects estimated. MT_OK or
 * MT_ERR_NOMEM. */
int mt__trace_rates_group(mt__trace_rates *r, const mt_rank_row *rows, size_t m,
                          mt_rank_row *out);
/* The estimates of t[0..n), trace k's tally t[k], whose sum is sum. */
void mt__trace_rates_total(const mt__trace_rates *r, const mt_tally *t, const mt_tally *sum,
                           mt_estimate *bytes, mt_estimate *objects);

/* Ends a ranking of several traces: its totals' estimates from each
 * trace's (totals[0..n) the rows' objects, totals[n..2n) every object),
 * then the scratch freed; on failure (rc) the ranking freed too. Returns
 * rc, with *out the ranking on MT_OK. */
int mt__trace_rates_finish(mt__trace_rates *r, int rc, mt_tally *totals, mt_ranking *ranking,
                           mt_ranking **out);

#endif
