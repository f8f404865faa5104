/* /api/info, summary, timeline, flame, functions, paths, sites, leaks,
 * histograms and stats (docs/viewer.md): the analysis library's answers as
 * its JSON documents. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answers.h"
#include "memtrace/calltree.h"
#include "memtrace/rank.h"
#include "memtrace/stats.h"

int mt_vanswer_info(const mt_vsnap *s, int live, mt_json *j) {
  mt_json_obj(j);
  mt_json_key(j, "trace");
  mt_json_str(j, s->name);
  mt_json_info(j, s->a);
  mt_json_key(j, "generation");
  mt_json_uint(j, s->generation);
  mt_json_key(j, "live");
  mt_json_bool(j, live);
  if (s->base) { /* the differential view: what the trace is compared with */
    mt_json_key(j, "base");
    mt_json_obj(j);
    mt_json_key(j, "trace");
    mt_json_str(j, s->base_name);
    mt_json_info(j, s->base);
    mt_json_end_obj(j);
  }
  mt_json_end_obj(j);
  return j->oom ? -1 : 0;
}

int mt_vanswer_summary(const mt_vsnap *s, const mt_vquery *q, mt_json *j) {
  mt_json_obj(j);
  mt_json_summary(j, s->a, &q->f);
  mt_json_end_obj(j);
  return j->oom ? -1 : 0;
}

int mt_vanswer_timeline(const mt_vsnap *s, const mt_vquery *q, mt_json *j) {
  mt_timeline *t;
  if (mt_timeline_compute(s->a, &q->f, (size_t)q->bins, &t) != MT_OK) return -1;
  if (s->rss && mt_timeline_add_rss(t, s->rss) != MT_OK) {
    mt_timeline_free(t);
    return -1;
  }
  mt_json_obj(j);
  mt_json_timeline(j, t, &q->f);
  mt_json_end_obj(j);
  mt_timeline_free(t);
  return 0;
}

/* The base's flame graph for the same question (no cut, so that every
 * path of the answer is there), matched to g's nodes; its total. */
static int base_flame(const mt_vsnap *s, const mt_vquery *q, const mt_flame *g, mt_tally *total,
                      mt_tally **callees, mt_tally **callers) {
  mt_flame_spec spec = {mt_flame_base_focus(s->a, q->focus, s->base), 0, q->by_objects};
  mt_flame *b = NULL;
  if (spec.focus != -2 && mt_flame_compute(s->base_tree, s->base, &q->f, &spec, &b) != MT_OK)
    return -1;
  memset(total, 0, sizeof *total);
  if (b) *total = b->total; /* a focus the base lacks: nothing there */
  int rc = mt_flame_match(g, s->a, b, s->base, callees, callers);
  mt_flame_free(b);
  return rc == MT_OK ? 0 : -1;
}

int mt_vanswer_flame(const mt_vsnap *s, const mt_vquery *q, mt_json *j) {
  mt_flame_spec spec = {q->focus, q->min, q->by_objects};
  mt_flame *g;
  int rc = mt_flame_compute(mt_vsnap_tree(s), s->a, &q->f, &spec, &g);
  if (rc == MT_ERR_INVALID) return -2;
  if (rc != MT_OK) return -1;
  mt_tally base_total, *callees = NULL, *callers = NULL;
  if (s->base && base_flame(s, q, g, &base_total, &callees, &callers)) {
    mt_flame_free(g);
    return -1;
  }
  mt_json_obj(j);
  mt_json_flame_diff(j, s->a, g, s->base, &base_total, callees, callers);
  mt_json_end_obj(j);
  free(callees);
  free(callers);
  mt_flame_free(g);
  return 0;
}

/* The differential view's table of changes (memtrace diff): -4 without a
 * base. */
int mt_vanswer_diff(const mt_vsnap *s, const mt_vquery *q, mt_json *j) {
  if (!s->base) return -4;
  mt_diff *d;
  if (mt_diff_new(q->by_line ? MT_BY_LINE : MT_BY_FUNCTION, &d) != MT_OK) return -1;
  int rc = mt_diff_add(d, MT_DIFF_BASE, s->base, &q->f);
  if (rc == MT_OK) rc = mt_diff_add(d, MT_DIFF_NEW, s->a, &q->f);
  if (rc == MT_OK) rc = mt_diff_finish(d);
  if (rc == MT_OK) {
    mt_json_obj(j);
    mt_json_diff(j, d, &q->f, (size_t)q->n, s->base_name, s->name);
    mt_json_end_obj(j);
  }
  mt_diff_free(d);
  return rc == MT_OK ? 0 : -1;
}

int mt_vanswer_functions(const mt_vsnap *s, const mt_vquery *q, mt_json *j) {
  mt_function_row *rows;
  size_t n;
  if (mt_calltree_functions(mt_vsnap_tree(s), s->a, &q->f, q->sort_total, (size_t)q->n, &rows, &n) !=
      MT_OK)
    return -1;
  mt_json_obj(j);
  mt_json_functions(j, s->a, rows, n, &q->f);
  mt_json_end_obj(j);
  free(rows);
  return 0;
}

static int ranking(const mt_vsnap *s, const mt_vquery *q, mt_json *j, mt_group_by by) {
  mt_rank_spec spec = {by, MT_ORDER_BYTES, (size_t)q->n, 0};
  mt_ranking *r;
  if (mt_rank(s->a, &q->f, &spec, &r) != MT_OK) return -1;
  mt_json_obj(j);
  mt_json_ranking(j, r, &q->f);
  mt_json_end_obj(j);
  mt_ranking_free(r);
  return 0;
}

int mt_vanswer_paths(const mt_vsnap *s, const mt_vquery *q, mt_json *j) {
  return ranking(s, q, j, MT_BY_STACK);
}

int mt_vanswer_sites(const mt_vsnap *s, const mt_vquery *q, mt_json *j) {
  return ranking(s, q, j, q->by_line ? MT_BY_LINE : MT_BY_FUNCTION);
}

int mt_vanswer_leaks(const mt_vsnap *s, const mt_vquery *q, mt_json *j) {
  mt_ranking *r;
  int rc = mt_leaks(s->a, &q->f, MT_ORDER_BYTES, (size_t)q->n, 0, &r);
  if (rc == MT_ERR_INVALID) return -3;
  if (rc != MT_OK) return -1;
  mt_json_obj(j);
  mt_json_leaks(j, r, &q->f);
  mt_json_end_obj(j);
  mt_ranking_free(r);
  return 0;
}

static int stats(const mt_vsnap *s, const mt_vquery *q, mt_json *j, int histograms) {
  mt_stats *st;
  int rc = histograms ? mt_stats_histograms(s->a, &q->f, &st)
                      : mt_stats_compute(s->a, &q->f, (size_t)q->chunks, &st);
  if (rc != MT_OK) return -1;
  mt_json_obj(j);
  if (histograms) mt_json_histograms(j, st);
  else mt_json_stats(j, st, &q->f);
  mt_json_end_obj(j);
  mt_stats_free(st);
  return 0;
}

int mt_vanswer_histograms(const mt_vsnap *s, const mt_vquery *q, mt_json *j) {
  return stats(s, q, j, 1);
}

int mt_vanswer_stats(const mt_vsnap *s, const mt_vquery *q, mt_json *j) {
  return stats(s, q, j, 0);
}

const mt_vendpoint mt_vendpoints[MT_VENDPOINTS] = {
    {"/api/summary", MT_VP_FILTER, mt_vanswer_summary, 0},
    {"/api/timeline", MT_VP_FILTER | MT_VP_BINS, mt_vanswer_timeline, 0},
    {"/api/flame", MT_VP_FILTER | MT_VP_FLAME, mt_vanswer_flame, 1},
    {"/api/functions", MT_VP_FILTER | MT_VP_N | MT_VP_SORT, mt_vanswer_functions, 1},
    {"/api/paths", MT_VP_FILTER | MT_VP_N, mt_vanswer_paths, 0},
    {"/api/sites", MT_VP_FILTER | MT_VP_N | MT_VP_BY, mt_vanswer_sites, 0},
    {"/api/leaks", MT_VP_FILTER | MT_VP_N, mt_vanswer_leaks, 0},
    {"/api/histograms", MT_VP_FILTER, mt_vanswer_histograms, 0},
    {"/api/stats", MT_VP_FILTER | MT_VP_CHUNKS, mt_vanswer_stats, 0},
    {"/api/diff", MT_VP_FILTER | MT_VP_N | MT_VP_BY, mt_vanswer_diff, 0},
    {"/api/info", 0, NULL, 0},
    {"/api/status", 0, NULL, 0},
};
