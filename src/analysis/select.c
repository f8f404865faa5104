/* Which objects a filter keeps and which frames it hides: compiled once per
 * question into per-code, per-backtrace and per-function tables, so that a
 * scan tests an object in a few loads and never walks its stack. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"

static int code_has(const mt_analysis *a, uint32_t c, const char *needle) {
  for (uint32_t i = 0; i < a->code_n[c]; i++)
    if (strstr(a->fn_name[a->frames[a->code_first[c] + i].function], needle)) return 1;
  return 0;
}

int mt__query_codes_pass(const mt__query *q, const uint32_t *codes, size_t n) {
  if (!q->code_bits) return 1;
  unsigned has = 0;
  for (size_t i = 0; i < n; i++) has |= q->code_bits[codes[i]];
  int in = q->f.inside && q->f.inside[0], out = q->f.not_inside && q->f.not_inside[0];
  return (!in || (has & 1)) && (!out || !(has & 2));
}

static int bt_passes(void *ctx, size_t bt, const uint32_t *codes, size_t n) {
  mt__query *q = ctx;
  q->bt_pass[bt] = (uint8_t)mt__query_codes_pass(q, codes, n);
  return 0;
}

/* Whether two filters have the same conditions on objects. */
static int same_conditions(const mt_filter *x, const mt_filter *y) {
  return x->alloc_from == y->alloc_from && x->alloc_to == y->alloc_to && x->live == y->live &&
         x->live_at == y->live_at && x->collected == y->collected &&
         x->collect_from == y->collect_from && x->collect_to == y->collect_to &&
         x->size_min == y->size_min && x->size_max == y->size_max &&
         x->lifetime_min == y->lifetime_min && x->lifetime_max == y->lifetime_max &&
         x->sources == y->sources;
}

/* The first object allocated at or after time t (objects sorted). */
static size_t first_at(const mt_analysis *a, uint64_t t) {
  size_t lo = 0, hi = a->nobj;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (mt__obj_alloc_time(a, mid) < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The objects that can pass q's conditions on allocation times: those
 * allocated in [alloc_from, alloc_to), and by live_at. */
static void narrow(mt__query *q) {
  const mt_analysis *a = q->a;
  const mt_filter *f = &q->f;
  q->lo = 0;
  q->hi = a->nobj;
  if (!a->alloc_sorted || a->fold_tally) return; /* a fold's rows are by backtrace */
  uint64_t to = f->alloc_to;
  if (f->live == MT_LIVE_AT && f->live_at < to) to = f->live_at + 1;
  if (f->alloc_from) q->lo = first_at(a, f->alloc_from);
  if (to != UINT64_MAX) q->hi = first_at(a, to);
  if (q->hi < q->lo) q->hi = q->lo;
}

static int query_init(mt__query *q, const mt_analysis *a, const mt_filter *f, int tallies) {
  memset(q, 0, sizeof *q);
  /* a live-only load holds nothing of the objects collected; a folded
   * one, tallies of those that passed its conditions */
  if (a->live_only && f->collected != MT_COLLECTED_NEVER) return MT_ERR_INVALID;
  if (a->reread) return MT_ERR_INVALID; /* no objects: only mt_profile reads them again */
  if (a->fold_tally && (!tallies || !same_conditions(f, &a->fold_filter))) return MT_ERR_INVALID;
  q->a = a;
  q->f = *f;
  if (f->live == MT_LIVE_AT_PEAK) {
    q->f.live = MT_LIVE_AT;
    q->f.live_at = a->peak_time;
  }
  mt_filter cols = *f;
  cols.inside = cols.not_inside = cols.hide = NULL;
  q->every_object = a->fold_tally || mt_filter_selects_all(&cols);
  int lifetimes = f->lifetime_min || f->lifetime_max != UINT64_MAX;
  q->need_alloc = f->alloc_from || f->alloc_to != MT_NEVER || q->f.live == MT_LIVE_AT || lifetimes;
  q->need_free = q->f.live == MT_LIVE_AT_END || f->collected != MT_COLLECTED_ANY;
  narrow(q);
  int in = f->inside && f->inside[0], out = f->not_inside && f->not_inside[0];
  if (in || out) {
    q->code_bits = calloc(a->ncodes + 1, 1);
    q->bt_pass = malloc(a->nbt + 1);
    if (!q->code_bits || !q->bt_pass) goto nomem;
    for (size_t c = 0; c < a->ncodes; c++)
      q->code_bits[c] = (uint8_t)((in && code_has(a, (uint32_t)c, f->inside)) |
                                  (out && code_has(a, (uint32_t)c, f->not_inside)) << 1);
    if (mt_analysis_each_distinct_backtrace(a, bt_passes, q) != MT_OK) goto nomem;
  }
  if (f->hide && f->hide[0]) {
    q->fn_hidden = malloc(a->nfn + 1);
    if (!q->fn_hidden) goto nomem;
    for (size_t k = 0; k < a->nfn; k++) q->fn_hidden[k] = (uint8_t)mt_filter_hides(f, a->fn_name[k]);
  }
  return MT_OK;
nomem:
  mt__query_free(q);
  return MT_ERR_NOMEM;
}

int mt__fold_sites_answer(const mt_analysis *a, const mt_filter *f) {
  return a->fold_site && same_conditions(f, &a->fold_filter) && !mt__filter_on_stacks(f);
}

int mt__query_init(mt__query *q, const mt_analysis *a, const mt_filter *f) {
  return query_init(q, a, f, 0);
}

int mt__query_init_tallies(mt__query *q, const mt_analysis *a, const mt_filter *f) {
  return query_init(q, a, f, 1);
}

void mt__query_free(mt__query *q) {
  free(q->code_bits);
  free(q->bt_pass);
  free(q->fn_hidden);
  q->code_bits = q->bt_pass = q->fn_hidden = NULL;
}

int mt__query_columns(const mt__query *q, size_t i) {
  const mt_analysis *a = q->a;
  const mt_filter *f = &q->f;
  /* only the columns the conditions read are loaded: a pass over tens of
   * millions of objects is bound by the memory it reads */
  uint64_t at = q->need_alloc ? mt__obj_alloc_time(a, i) : 0;
  uint64_t ft = q->need_free ? mt__obj_free_time(a, i) : 0;
  if (at < f->alloc_from || at >= f->alloc_to) return 0;
  if (f->live == MT_LIVE_AT_END && ft != MT_NEVER) return 0;
  if (f->live == MT_LIVE_AT && (at > f->live_at || mt__obj_gone_time(a, i) <= f->live_at))
    return 0;
  if (f->collected == MT_COLLECTED_NEVER && ft != MT_NEVER) return 0;
  if (f->collected == MT_COLLECTED_IN &&
      (ft == MT_NEVER || ft < f->collect_from || ft >= f->collect_to))
    return 0;
  if (f->size_min || f->size_max != UINT64_MAX) {
    double bytes = (double)mt__obj_length(a, i) * a->word_bytes;
    if (bytes < (double)f->size_min || bytes > (double)f->size_max) return 0;
  }
  if (f->lifetime_min || f->lifetime_max != UINT64_MAX) {
    uint64_t gone = mt__obj_gone_time(a, i), life = (gone == MT_NEVER ? a->duration : gone) - at;
    if (life < f->lifetime_min || life > f->lifetime_max) return 0;
  }
  if (f->sources && !(f->sources & (1u << (a->source[i] & 3))) &&
      !((a->source[i] & 3) == MT_SOURCE_EXTERNAL &&
        (f->sources & (a->source[i] & MT__OBJ_MAPPING ? MT_FILTER_MAPPINGS : MT_FILTER_HEAP))))
    return 0;
  return 1;
}

int mt__scan(const mt__query *q, size_t from, size_t to, mt__visit_fn fn, void *ctx) {
  if (from < q->lo) from = q->lo;
  if (to > q->hi) to = q->hi;
  for (size_t i = from; i < to; i++) {
    if (!mt__query_object(q, i)) continue;
    int rc = fn(ctx, i, NULL, 0);
    if (rc) return rc;
  }
  return 0;
}


typedef struct pair_arg {
  void (*fn)(void *);
  void *arg;
} pair_arg;

static void *pair_thread(void *p) {
  pair_arg *pa = p;
  pa->fn(pa->arg);
  return NULL;
}

void mt__run_pair(void (*fn)(void *), void *arg0, void *arg1, int threaded) {
  pthread_t th;
  pair_arg second = {fn, arg1};
  int started = threaded && pthread_create(&th, NULL, pair_thread, &second) == 0;
  fn(arg0);
  if (started) pthread_join(th, NULL);
  else fn(arg1);
}

/* ---- tallies by backtrace ---- */

typedef struct bt_part {
  const mt__query *q; /* NULL: every object */
  const mt_analysis *a;
  size_t from, to;
  mt_tally *out;
  mt__bt_span *span; /* or NULL */
} bt_part;

static void tally_part(void *p) {
  bt_part *h = p;
  const mt_analysis *a = h->a;
  if (!h->span) {
    for (size_t i = h->from; i < h->to; i++)
      if (!h->q || mt__query_object(h->q, i)) mt__tally_object(a, i, &h->out[a->bt[i]]);
    return;
  }
  for (size_t i = h->from; i < h->to; i++) {
    if (h->q && !mt__query_object(h->q, i)) continue;
    uint32_t b = a->bt[i];
    mt__tally_object(a, i, &h->out[b]);
    mt__bt_span *s = &h->span[b];
    uint64_t t = mt__obj_alloc_time(a, i);
    if (s->first == SIZE_MAX) s->first = i;
    if (t < s->oldest) s->oldest = t;
    if (t > s->newest) s->newest = t;
  }
}

static void spans_init(mt__bt_span *s, size_t n) {
  for (size_t b = 0; b < n; b++) s[b] = (mt__bt_span){UINT64_MAX, 0, SIZE_MAX};
}

int mt__tally_backtraces_spans(const mt__query *q, mt_tally *out, mt__bt_span *span) {
  const mt_analysis *a = q->a;
  memset(out, 0, a->nbt * sizeof *out);
  if (span) spans_init(span, a->nbt);
  size_t n = q->hi > q->lo ? q->hi - q->lo : 0;
  if (n < MT__PAIR_MIN) {
    bt_part h = {q, a, q->lo, q->hi, out, span};
    tally_part(&h);
    return 0;
  }
  mt_tally *second = calloc(a->nbt + 1, sizeof *second);
  mt__bt_span *span2 = span ? malloc((a->nbt + 1) * sizeof *span2) : NULL;
  if (!second || (span && !span2)) {
    free(second);
    free(span2);
    return -1;
  }
  if (span2) spans_init(span2, a->nbt);
  size_t mid = q->lo + n / 2;
  bt_part h0 = {q, a, q->lo, mid, out, span}, h1 = {q, a, mid, q->hi, second, span2};
  mt__run_pair(tally_part, &h0, &h1, 1);
  for (size_t b = 0; b < a->nbt; b++) {
    if (!second[b].objects) continue;
    mt_tally_add(&out[b], &second[b]);
    if (!span) continue;
    /* the first half's objects come first */
    if (span[b].first == SIZE_MAX) span[b].first = span2[b].first;
    if (span2[b].oldest < span[b].oldest) span[b].oldest = span2[b].oldest;
    if (span2[b].newest > span[b].newest) span[b].newest = span2[b].newest;
  }
  free(second);
  free(span2);
  return 0;
}

int mt__tally_backtraces(const mt__query *q, mt_tally *out) {
  return mt__tally_backtraces_spans(q, out, NULL);
}

int mt__by_backtrace(const mt__query *q) {
  const mt_analysis *a = q->a;
  return !a->fold_tally && q->hi > q->lo && a->nbt * 4 <= q->hi - q->lo;
}

int mt__bt_all_extend(mt_analysis *a) {
  if (!a->bt_all) return 0;
  size_t old = a->bt_all_cap;
  if (mt__grow((void **)&a->bt_all, &a->bt_all_cap, a->nbt, sizeof *a->bt_all, a->nbt))
    return -1;
  memset(a->bt_all + old, 0, (a->bt_all_cap - old) * sizeof *a->bt_all);
  bt_part h = {NULL, a, a->bt_all_nobj, a->nobj, a->bt_all, NULL};
  tally_part(&h);
  a->bt_all_nobj = a->nobj;
  return 0;
}

const mt_tally *mt__bt_all(const mt_analysis *ca) {
  mt_tally *t = __atomic_load_n(&ca->bt_all, __ATOMIC_ACQUIRE);
  if (t || ca->fold_tally) return t;
  mt_analysis *a = (mt_analysis *)ca; /* the cache only, installed atomically */
  if (!(t = calloc(a->nbt + 1, sizeof *t))) return NULL;
  /* one pass in allocation order, as a followed trace's steps extend it:
   * both sum alike to the last bit */
  bt_part h = {NULL, a, 0, a->nobj, t, NULL};
  tally_part(&h);
  mt_tally *expected = NULL;
  if (__atomic_compare_exchange_n(&a->bt_all, &expected, t, 0, __ATOMIC_RELEASE,
                                  __ATOMIC_ACQUIRE)) {
    /* read only by mt__bt_all_extend, which a followed trace's writer
     * calls once the readers are done */
    a->bt_all_nobj = a->nobj;
    a->bt_all_cap = a->nbt + 1;
    return t;
  }
  free(t);
  return expected;
}

/* ---- the public bulk queries ---- */

int mt_analysis_select(const mt_analysis *a, const mt_filter *f, uint8_t *mask, size_t *count) {
  mt__query q;
  int qrc = mt__query_init(&q, a, f);
  if (qrc != MT_OK) return qrc;
  size_t n = 0;
  for (size_t i = 0; i < a->nobj; i++) n += mask[i] = (uint8_t)mt__query_object(&q, i);
  if (count) *count = n;
  mt__query_free(&q);
  return MT_OK;
}

int mt_analysis_matches(const mt_analysis *a, const mt_filter *f, size_t i) {
  mt__query q;
  if (mt__query_init(&q, a, f) != MT_OK) return 0;
  int m = mt__query_object(&q, i);
  mt__query_free(&q);
  return m;
}

int mt_analysis_has_function_like(const mt_analysis *a, const char *s, size_t len) {
  for (size_t k = 0; k < a->nfn; k++) {
    const char *name = a->fn_name[k];
    if (memmem(name, strlen(name), s, len)) return 1;
  }
  return 0;
}

size_t mt_filter_unmatched(const mt_analysis *a, const mt_filter *f, mt_filter_name *out,
                           size_t max) {
  mt_filter_name names[MT_FILTER_NAMES_MAX];
  size_t n = mt_filter_names(f, names, MT_FILTER_NAMES_MAX), got = 0;
  for (size_t k = 0; k < n && k < MT_FILTER_NAMES_MAX && got < max; k++)
    if (!mt_analysis_has_function_like(a, names[k].name, names[k].len)) out[got++] = names[k];
  return got;
}

typedef struct each_ctx {
  mt_backtrace_fn fn;
  void *ctx;
} each_ctx;

static int each_visit(void *ctx, size_t i, const uint32_t *codes, size_t n) {
  each_ctx *e = ctx;
  return e->fn(e->ctx, i, codes, n);
}

int mt_analysis_each_backtrace(const mt_analysis *a, const mt_filter *f, mt_backtrace_fn fn,
                               void *ctx) {
  mt__query q;
  int qrc = mt__query_init(&q, a, f);
  if (qrc != MT_OK) return qrc;
  each_ctx e = {fn, ctx};
  int rc = mt__scan_codes(&q, each_visit, &e);
  mt__query_free(&q);
  return rc < 0 ? MT_ERR_NOMEM : rc;
}

static int tally_visit(void *ctx, size_t i, const uint32_t *codes, size_t n) {
  (void)codes;
  (void)n;
  const mt_analysis **a = ctx;
  mt__tally_object(a[0], i, (mt_tally *)a[1]);
  return 0;
}

typedef struct total_part {
  const mt__query *q;
  size_t from, to;
  mt_tally t;
} total_part;

static void total_run(void *p) {
  total_part *h = p;
  const void *ctx[2] = {h->q->a, &h->t};
  mt__scan(h->q, h->from, h->to, tally_visit, ctx);
}

void mt__tally_query(const mt__query *q, mt_tally *t) {
  /* halves on two threads when the objects are many: tallies add exactly */
  size_t n = q->hi > q->lo ? q->hi - q->lo : 0;
  total_part h0 = {q, q->lo, q->hi, {0}}, h1 = {q, q->lo + n / 2, q->hi, {0}};
  if (n >= MT__PAIR_MIN) {
    h0.to = h1.from;
    mt__run_pair(total_run, &h0, &h1, 1);
    mt_tally_add(&h0.t, &h1.t);
  } else {
    total_run(&h0);
  }
  *t = h0.t;
}

int mt_analysis_tally(const mt_analysis *a, const mt_filter *f, mt_tally *t) {
  memset(t, 0, sizeof *t);
  if (mt_filter_selects_all(f)) {
    *t = a->all;
    return MT_OK;
  }
  if (mt__fold_sites_answer(a, f)) { /* added up as a whole load's scan would */
    *t = a->fold_sum;
    return MT_OK;
  }
  mt__query q;
  int qrc = mt__query_init_tallies(&q, a, f);
  if (qrc != MT_OK) return qrc;
  mt__tally_query(&q, t);
  mt__query_free(&q);
  return MT_OK;
}

typedef struct sites_ctx {
  const mt_analysis *a;
  mt_tally *per_code;
} sites_ctx;

static int site_visit(void *ctx, size_t i, const uint32_t *codes, size_t n) {
  (void)codes;
  (void)n;
  sites_ctx *s = ctx;
  uint32_t c = s->a->bt_site[s->a->bt[i]];
  mt__tally_object(s->a, i, &s->per_code[c == MT__NO_SITE ? s->a->ncodes : c]);
  return 0;
}

int mt_analysis_tally_sites(const mt_analysis *a, const mt_filter *f, mt_tally *per_code,
                            mt_tally *total) {
  mt__query q;
  int qrc = mt__query_init(&q, a, f);
  if (qrc != MT_OK) return qrc;
  memset(per_code, 0, (a->ncodes + 1) * sizeof *per_code);
  sites_ctx s = {a, per_code};
  mt__scan(&q, 0, a->nobj, site_visit, &s);
  mt__query_free(&q);
  if (total) {
    mt_tally sum = {0};
    for (size_t c = 0; c <= a->ncodes; c++) mt_tally_add(&sum, &per_code[c]);
    *total = sum;
  }
  return MT_OK;
}
