/* Rankings (memtrace/rank.h): objects grouped by allocation site, by
 * function or line, from per-site-code tallies (one pass, no backtraces
 * read), or by stack (rank_stacks.c); leaks; the rows' names and frames. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "memtrace/rank.h"

/* Memory for one pass of the stack groups. */
#define STACK_BUDGET (24u << 20)

#include "rank_store.h"

/* The site of a site code (a code id, or MT__NO_SITE): the innermost
 * location of the code, or the code itself when the trace never described
 * it. */
static mt_site code_site(const mt_analysis *a, uint32_t code, int with_line) {
  mt_site s = {MT_SITE_NONE, "", "", 0, 0};
  if (code == MT__NO_SITE || code >= a->ncodes) return s;
  uint32_t n = a->code_n[code];
  if (n) {
    const mt_frame *fr = &a->frames[a->code_first[code] + n - 1];
    s.kind = MT_SITE_LOCATION;
    s.function = a->fn_name[fr->function];
    s.file = a->fn_file[fr->function];
    s.line = with_line ? fr->line : 0;
  } else {
    s.kind = MT_SITE_CODE;
    s.code = a->code_val[code];
  }
  return s;
}

const char *mt_site_text(const mt_site *s, int with_line, char *buf, size_t n) {
  if (s->kind == MT_SITE_NONE) snprintf(buf, n, "(no backtrace)");
  else if (s->kind == MT_SITE_CODE) snprintf(buf, n, "#%" PRIx64, s->code);
  else if (with_line) snprintf(buf, n, "%s (%s:%" PRIu32 ")", s->function, s->file, s->line);
  else snprintf(buf, n, "%s (%s)", s->function, s->file);
  return buf;
}

/* ---- by site ------------------------------------------------------------------ */

uint64_t mt__site_key(const mt_analysis *a, uint32_t code, int by_line) {
  if (code == MT__NO_SITE || code >= a->ncodes) return UINT64_MAX;
  uint32_t n = a->code_n[code];
  if (!n) return 1ull << 63 | code;
  const mt_frame *fr = &a->frames[a->code_first[code] + n - 1];
  return (uint64_t)fr->function << 32 | (by_line ? fr->line : 0);
}

typedef struct site_group {
  mt_site site;
  uint32_t code; /* a site code of the group */
  mt_tally tally;
  uint64_t oldest, newest;
} site_group;

typedef struct site_pass {
  const mt_analysis *a;
  site_group *per_code; /* ncodes + 1, the last for empty backtraces */
} site_pass;

static int site_visit(void *ctx, size_t i, const uint32_t *codes, size_t n) {
  (void)codes;
  (void)n;
  site_pass *p = ctx;
  uint32_t c = p->a->bt_site[p->a->bt[i]];
  site_group *g = &p->per_code[c == MT__NO_SITE ? p->a->ncodes : c];
  mt__tally_object(p->a, i, &g->tally);
  uint64_t t = mt__obj_alloc_time(p->a, i);
  if (t < g->oldest) g->oldest = t;
  if (t > g->newest) g->newest = t;
  return 0;
}

/* Names order: locations, then codes, then no backtrace; by function name,
 * file, line; codes by value. */
static int site_cmp(const mt_site *x, const mt_site *y) {
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  if (x->kind == MT_SITE_CODE) return x->code < y->code ? -1 : x->code > y->code;
  if (x->kind == MT_SITE_NONE) return 0;
  int c = strcmp(x->function, y->function);
  if (!c) c = strcmp(x->file, y->file);
  if (!c) c = x->line < y->line ? -1 : x->line > y->line;
  return c;
}

static int site_order(const void *px, const void *py, void *ctx) {
  const int *order = ctx;
  const site_group *x = px, *y = py;
  double xo = mt_tally_ht(&x->tally), yo = mt_tally_ht(&y->tally);
  if (*order == MT_ORDER_OBJECTS ? xo != yo : x->tally.samples != y->tally.samples) {
    if (*order == MT_ORDER_OBJECTS) return xo > yo ? -1 : 1;
    return x->tally.samples > y->tally.samples ? -1 : 1;
  }
  int c = site_cmp(&x->site, &y->site);
  if (c) return c;
  return x->code < y->code ? -1 : x->code > y->code;
}

/* Puts the first k of v[0..n) in order at its front, sorted: a bounded heap
 * (n log k comparisons), so the top 20 of millions are not all sorted. */
static void select_first(site_group *v, size_t n, size_t k,
                         int (*cmp)(const void *, const void *, void *), void *ctx) {
  if (k == 0 || k >= n) {
    qsort_r(v, n, sizeof *v, cmp, ctx);
    return;
  }
  site_group t;
  /* v[0..k) is a heap of the best k so far, the last-ranked at its root */
  for (size_t i = k / 2; i-- > 0;)
    for (size_t j = i;;) {
      size_t l = 2 * j + 1, r = l + 1, m = j;
      if (l < k && cmp(&v[l], &v[m], ctx) > 0) m = l;
      if (r < k && cmp(&v[r], &v[m], ctx) > 0) m = r;
      if (m == j) break;
      t = v[j], v[j] = v[m], v[m] = t, j = m;
    }
  for (size_t i = k; i < n; i++) {
    if (cmp(&v[i], &v[0], ctx) >= 0) continue;
    t = v[0], v[0] = v[i], v[i] = t;
    for (size_t j = 0;;) {
      size_t l = 2 * j + 1, r = l + 1, m = j;
      if (l < k && cmp(&v[l], &v[m], ctx) > 0) m = l;
      if (r < k && cmp(&v[r], &v[m], ctx) > 0) m = r;
      if (m == j) break;
      t = v[j], v[j] = v[m], v[m] = t, j = m;
    }
  }
  qsort_r(v, k, sizeof *v, cmp, ctx);
}

/* The sums by site code a load made while reading (MT_KEEP_SITES,
 * mt__fold_sites_answer), as the scan of a whole load gives them. */
static void folded_sites(const mt_analysis *a, site_group *per_code) {
  for (size_t k = 0; k < a->nfold_site; k++) {
    const mt__site_sum *s = &a->fold_site[k];
    uint32_t c = a->fold_site_code[k];
    site_group *g = &per_code[c == MT__NO_SITE ? a->ncodes : c];
    g->tally = s->tally;
    g->oldest = s->oldest;
    g->newest = s->newest;
  }
}

/* The objects passing q summed by backtrace first: one pass on two
 * threads into few sums, which add up to what the objects do (tallies
 * add exactly). */
static int sites_by_backtrace(const mt__query *q, site_group *per_code) {
  const mt_analysis *a = q->a;
  mt_tally *t = malloc((a->nbt + 1) * sizeof *t);
  mt__bt_span *span = malloc((a->nbt + 1) * sizeof *span);
  int rc = -1;
  if (t && span && mt__tally_backtraces_spans(q, t, span) == 0) {
    for (size_t b = 0; b < a->nbt; b++) {
      if (!t[b].objects) continue;
      uint32_t c = a->bt_site[b];
      site_group *g = &per_code[c == MT__NO_SITE ? a->ncodes : c];
      mt_tally_add(&g->tally, &t[b]);
      if (span[b].oldest < g->oldest) g->oldest = span[b].oldest;
      if (span[b].newest > g->newest) g->newest = span[b].newest;
    }
    rc = 0;
  }
  free(t);
  free(span);
  return rc;
}

/* The objects passing q (the load's sums when q is NULL) grouped by site,
 * into groups (every group with objects; *n of them). */
static int group_sites(const mt_analysis *a, const mt__query *q, int by, site_group **out,
                       size_t *n) {
  site_pass p = {a, calloc(a->ncodes + 1, sizeof(site_group))};
  mt__u64map index = {0};
  *out = NULL;
  *n = 0;
  if (!p.per_code) return MT_ERR_NOMEM;
  for (size_t c = 0; c <= a->ncodes; c++) p.per_code[c].oldest = UINT64_MAX;
  if (!q) {
    folded_sites(a, p.per_code);
  } else if (mt__by_backtrace(q)) {
    if (sites_by_backtrace(q, p.per_code)) {
      free(p.per_code);
      return MT_ERR_NOMEM;
    }
  } else {
    mt__scan(q, 0, a->nobj, site_visit, &p);
  }
  /* groups are gathered in place, at the front of per_code */
  size_t ng = 0;
  for (size_t c = 0; c <= a->ncodes; c++) {
    site_group g = p.per_code[c];
    if (!g.tally.objects) continue;
    uint32_t code = c == a->ncodes ? MT__NO_SITE : (uint32_t)c;
    g.site = code_site(a, code, by == MT_BY_LINE);
    g.code = code;
    uint64_t key = mt__site_key(a, code, by == MT_BY_LINE);
    int fresh;
    uint32_t ix = mt__u64map_intern(&index, key, (uint32_t)ng, &fresh);
    if (ix == UINT32_MAX) {
      mt__u64map_free(&index);
      free(p.per_code);
      return MT_ERR_NOMEM;
    }
    if (fresh) {
      p.per_code[ng++] = g;
      continue;
    }
    site_group *to = &p.per_code[ix];
    mt_tally_add(&to->tally, &g.tally);
    if (g.oldest < to->oldest) to->oldest = g.oldest;
    if (g.newest > to->newest) to->newest = g.newest;
  }
  mt__u64map_free(&index);
  *out = p.per_code;
  *n = ng;
  return MT_OK;
}

/* With have_total, r->total is made too: the sum of every group's. */
static int rank_sites(const mt_analysis *a, const mt__query *q, const mt_rank_spec *spec,
                      mt_ranking *r, int *have_total) {
  site_group *g;
  size_t n;
  if (group_sites(a, q, spec->by, &g, &n) != MT_OK) return MT_ERR_NOMEM;
  /* the groups hold every passing object once: their tallies add up
   * exactly to the objects' */
  *have_total = q != NULL;
  for (size_t i = 0; q && i < n; i++) mt_tally_add(&r->total, &g[i].tally);
  int order = spec->order;
  select_first(g, n, spec->limit, site_order, &order);
  r->groups = n;
  r->nrows = spec->limit && spec->limit < n ? spec->limit : n;
  r->rows = calloc(r->nrows + 1, sizeof *r->rows);
  r->store->row_code = malloc((r->nrows + 1) * sizeof *r->store->row_code);
  if (!r->rows || !r->store->row_code) {
    free(g);
    return MT_ERR_NOMEM;
  }
  for (size_t i = 0; i < r->nrows; i++) {
    mt_rank_row *row = &r->rows[i];
    r->store->row_code[i] = g[i].code;
    row->site = g[i].site;
    row->tally = g[i].tally;
    row->oldest = g[i].oldest;
    row->newest = g[i].newest;
    row->backtrace = UINT32_MAX;
  }
  free(g);
  return MT_OK;
}

/* ---- by stack ------------------------------------------------------------------ */

/* Each row's printed frames (at most depth of them) into one array. */
static int row_frames(const mt__query *q, mt_ranking *r, size_t depth) {
  const mt_analysis *a = q->a;
  uint32_t *codes = NULL;
  size_t cap = 0, total = 0, *counts = calloc(r->nrows + 1, sizeof *counts);
  int rc = MT_ERR_NOMEM;
  if (!counts) return rc;
  for (int fill = 0; fill < 2; fill++) {
    size_t at = 0;
    for (size_t i = 0; i < r->nrows; i++) {
      mt_rank_row *row = &r->rows[i];
      size_t n = mt__bt_codes_grow(a, row->backtrace, &codes, &cap);
      if (n == SIZE_MAX) goto out;
      mt__frame_iter it;
      mt__printed p;
      mt__frame_iter_init(&it, a, q, codes, n);
      size_t k = 0;
      if (fill) row->frames = r->store->frames + at;
      while (mt__frame_next(&it, &p)) {
        if (fill && k < counts[i]) {
          mt_stack_frame *f = &r->store->frames[at + k];
          if (p.function == UINT32_MAX) {
            *f = (mt_stack_frame){NULL, NULL, 0, a->code_val[p.code]};
          } else {
            *f = (mt_stack_frame){a->fn_name[p.function], a->fn_file[p.function], p.line, 0};
          }
        }
        k++;
      }
      if (!fill) {
        row->frames_total = k;
        counts[i] = depth && k > depth ? depth : k;
        total += counts[i];
      } else {
        row->nframes = counts[i];
        at += counts[i];
      }
    }
    if (!fill && !(r->store->frames = malloc((total + 1) * sizeof *r->store->frames))) goto out;
  }
  rc = MT_OK;
out:
  free(codes);
  free(counts);
  return rc;
}

static int rank_stacks(const mt__query *q, const mt_rank_spec *spec, size_t budget,
                       mt_ranking *r, int *have_total) {
  mt__stack_group *g;
  size_t n;
  if (mt__rank_stacks(q, spec->order, spec->limit, budget, &g, &n, &r->groups, &r->total,
                      have_total) != MT_OK)
    return MT_ERR_NOMEM;
  r->nrows = n;
  r->rows = calloc(n + 1, sizeof *r->rows);
  if (!r->rows) {
    free(g);
    return MT_ERR_NOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    mt_rank_row *row = &r->rows[i];
    row->site = code_site(q->a, q->a->bt_site[g[i].bt], 1);
    row->tally = g[i].tally;
    row->oldest = g[i].oldest;
    row->newest = g[i].newest;
    row->backtrace = g[i].bt;
  }
  free(g);
  return row_frames(q, r, spec->depth);
}

/* ---- the answers --------------------------------------------------------------- */

void mt_ranking_free(mt_ranking *r) {
  if (!r) return;
  if (r->store) {
    free(r->store->frames);
    free(r->store->callers);
    free(r->store->row_code);
    free(r->store);
  }
  free(r->rows);
  free(r);
}

static int rank(const mt_analysis *a, const mt_filter *f, const mt_rank_spec *spec,
                size_t budget, mt_ranking **out) {
  *out = NULL;
  if (spec->order == MT_ORDER_OLDEST && spec->by != MT_BY_STACK) return MT_ERR_INVALID;
  mt_ranking *r = calloc(1, sizeof *r);
  if (!r || !(r->store = calloc(1, sizeof *r->store))) {
    free(r);
    return MT_ERR_NOMEM;
  }
  /* a load with sums by site ranks sites from them, and nothing else */
  int folded = spec->by != MT_BY_STACK && mt__fold_sites_answer(a, f);
  mt__query q;
  int qrc = folded ? MT_OK : mt__query_init(&q, a, f);
  if (qrc != MT_OK) {
    mt_ranking_free(r);
    return qrc;
  }
  r->by = spec->by;
  r->order = spec->order;
  r->sampling = mt_analysis_sampling(a);
  r->duration = a->duration;
  r->trace_total = a->all;
  int have_total = 0;
  int rc = spec->by == MT_BY_STACK ? rank_stacks(&q, spec, budget, r, &have_total)
                                   : rank_sites(a, folded ? NULL : &q, spec, r, &have_total);
  if (!folded) mt__query_free(&q);
  if (rc != MT_OK || (!have_total && mt_analysis_tally(a, f, &r->total) != MT_OK)) {
    mt_ranking_free(r);
    return MT_ERR_NOMEM;
  }
  for (size_t i = 0; i < r->nrows; i++) {
    r->rows[i].bytes = mt_sampling_bytes(&r->sampling, &r->rows[i].tally);
    r->rows[i].objects = mt_sampling_objects(&r->sampling, &r->rows[i].tally);
  }
  r->total_bytes = mt_sampling_bytes(&r->sampling, &r->total);
  r->total_objects = mt_sampling_objects(&r->sampling, &r->total);
  r->trace_bytes = mt_sampling_bytes(&r->sampling, &r->trace_total);
  r->trace_objects = mt_sampling_objects(&r->sampling, &r->trace_total);
  *out = r;
  return MT_OK;
}

/* The memory for a pass of stack groups: MEMTRACE_STACK_RANK_BUDGET (bytes)
 * when set, so that tests reach the passes on small traces. */
static size_t stack_budget(void) {
  const char *env = getenv("MEMTRACE_STACK_RANK_BUDGET");
  return env && *env ? (size_t)strtoull(env, NULL, 10) : STACK_BUDGET;
}

int mt_rank_folds(const mt_filter *f, const mt_rank_spec *spec) {
  return spec->by != MT_BY_STACK && mt_filter_decided_at_allocation(f) &&
         !mt__filter_on_stacks(f);
}

int mt_rank(const mt_analysis *a, const mt_filter *f, const mt_rank_spec *spec,
            mt_ranking **out) {
  return rank(a, f, spec, stack_budget(), out);
}

void mt_leaks_filter(const mt_filter *f, mt_filter *out) {
  *out = *f;
  /* "at the end" is what leaks means; as a live condition it would also
   * displace a live time (--live-at-peak), so it is "never collected". */
  if (out->live == MT_LIVE_AT_END) out->live = MT_LIVE_ANY;
  out->collected = MT_COLLECTED_NEVER;
}

int mt_leaks(const mt_analysis *a, const mt_filter *f, mt_rank_order order, size_t limit,
             size_t depth, mt_ranking **out) {
  *out = NULL;
  if (f->collected == MT_COLLECTED_IN) return MT_ERR_INVALID;
  mt_filter lf;
  mt_leaks_filter(f, &lf);
  mt_rank_spec spec = {MT_BY_STACK, order, limit, depth};
  return rank(a, &lf, &spec, stack_budget(), out);
}
