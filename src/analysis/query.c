/* Read-only queries over a loaded analysis: tables, filters, tallies,
 * estimates, live heap series. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"

/* ---- tables ---- */

const mt_trace_info *mt_analysis_info(const mt_analysis *a) { return &a->info; }
uint64_t mt_analysis_duration(const mt_analysis *a) { return a->duration; }
double mt_analysis_word_bytes(const mt_analysis *a) { return a->word_bytes; }
size_t mt_analysis_object_count(const mt_analysis *a) { return a->nobj; }

static inline void need_stacks(const mt_analysis *a) {
  if (__atomic_load_n(&a->stacks_built, __ATOMIC_ACQUIRE) != 1) mt__ensure_stacks(a);
}

mt_object mt_analysis_object(const mt_analysis *a, size_t i) {
  mt_object o;
  o.alloc_time = mt__obj_alloc_time(a, i);
  o.free_time = mt__obj_free_time(a, i);
  o.promote_time = (a->source[i] & MT__OBJ_PROMOTED) ? mt__side_get(a, i, MT__SIDE_PROMOTE)
                                                      : MT_NEVER;
  o.length = mt__obj_length(a, i);
  o.nsamples = mt__obj_samples(a, i);
  o.stack = __atomic_load_n(&a->stacks_built, __ATOMIC_ACQUIRE) == 1 ? a->bt_stack[a->bt[i]] : 0;
  o.source = (mt_source)(a->source[i] & 3);
  return o;
}

uint32_t mt_analysis_object_stack(const mt_analysis *a, size_t i) {
  need_stacks(a);
  return a->stacks_built == 1 ? a->bt_stack[a->bt[i]] : 0;
}

size_t mt_analysis_stack_count(const mt_analysis *a) {
  need_stacks(a);
  return a->nstacks;
}
/* Stack ids come from mt_analysis_stack_count or objects: the tree is built. */
uint32_t mt_analysis_stack_parent(const mt_analysis *a, uint32_t s) { return a->st_parent[s]; }
uint32_t mt_analysis_stack_code(const mt_analysis *a, uint32_t s) { return a->st_code[s]; }
uint32_t mt_analysis_stack_depth(const mt_analysis *a, uint32_t s) { return a->st_depth[s]; }

size_t mt_analysis_stack_codes(const mt_analysis *a, uint32_t s, uint32_t *out, size_t cap) {
  size_t d = a->st_depth[s];
  if (d > cap) return 0;
  for (size_t i = d; i > 0; i--) {
    out[i - 1] = a->st_code[s];
    s = a->st_parent[s];
  }
  return d;
}

size_t mt_analysis_code_count(const mt_analysis *a) { return a->ncodes; }
uint64_t mt_analysis_code_value(const mt_analysis *a, uint32_t c) { return a->code_val[c]; }

const mt_frame *mt_analysis_code_frames(const mt_analysis *a, uint32_t c, size_t *n) {
  *n = a->code_n[c];
  return *n ? &a->frames[a->code_first[c]] : NULL;
}

size_t mt_analysis_function_count(const mt_analysis *a) { return a->nfn; }
const char *mt_analysis_function_name(const mt_analysis *a, uint32_t f) { return a->fn_name[f]; }
const char *mt_analysis_function_file(const mt_analysis *a, uint32_t f) { return a->fn_file[f]; }

int mt_analysis_stack_site(const mt_analysis *a, uint32_t s, mt_frame *site) {
  for (int skipped = 0; s != 0 && skipped <= 2; skipped++, s = a->st_parent[s]) {
    uint32_t c = a->st_code[s];
    if (a->code_n[c]) {
      *site = a->frames[a->code_first[c] + a->code_n[c] - 1];
      return 0;
    }
  }
  return -1;
}

/* ---- live heap ---- */

void mt_analysis_peak(const mt_analysis *a, uint64_t *time, uint64_t *samples) {
  if (time) *time = a->peak_time;
  if (samples) *samples = a->peak_samples;
}

size_t mt_analysis_live_envelope(const mt_analysis *a, mt_live_point *out, size_t cap) {
  if (cap == 0 || a->nbins_used == 0) return 0;
  size_t group = (a->nbins_used + cap - 1) / cap, n = 0;
  for (size_t i = 0; i < a->nbins_used; i += group) {
    const mt__bin *b = &a->bins[i];
    mt_live_point p = {0, b->min, b->max, b->end};
    size_t last = i;
    for (size_t j = i + 1; j < i + group && j < a->nbins_used; j++) {
      p.min_samples = fmin(p.min_samples, a->bins[j].min);
      p.max_samples = fmax(p.max_samples, a->bins[j].max);
      p.end_samples = a->bins[j].end;
      last = j;
    }
    uint64_t end = (uint64_t)(last + 1) * a->bin_width;
    p.time = end < a->duration ? end : a->duration;
    out[n++] = p;
  }
  return n;
}

/* ---- filters ---- */

void mt_filter_init(mt_filter *f) {
  memset(f, 0, sizeof *f);
  f->alloc_to = MT_NEVER;
  f->collect_to = MT_NEVER;
  f->size_max = UINT64_MAX;
  f->lifetime_max = UINT64_MAX;
}

/* Per query: which stacks pass the function-name conditions (a stack's
 * frames are its parent's plus one code, and parents have smaller ids). */
typedef struct stack_pass {
  uint8_t *ok; /* NULL: every stack passes */
} stack_pass;

static int code_matches(const mt_analysis *a, uint32_t c, const char *needle) {
  for (uint32_t i = 0; i < a->code_n[c]; i++)
    if (strstr(a->fn_name[a->frames[a->code_first[c] + i].function], needle)) return 1;
  return 0;
}

static int stacks_for(const mt_analysis *a, const mt_filter *f, stack_pass *sp) {
  sp->ok = NULL;
  int in = f->inside && f->inside[0], out = f->not_inside && f->not_inside[0];
  if (!in && !out) return 0;
  if (mt__ensure_stacks(a)) return -1;
  uint8_t *code_in = calloc(a->ncodes + 1, 1), *ok = malloc(a->nstacks);
  /* bit 0: some frame matches `inside`; bit 1: some frame matches `not_inside` */
  uint8_t *has = malloc(a->nstacks);
  if (!code_in || !ok || !has) {
    free(code_in);
    free(ok);
    free(has);
    return -1;
  }
  for (size_t c = 0; c < a->ncodes; c++)
    code_in[c] = (uint8_t)((in && code_matches(a, (uint32_t)c, f->inside)) |
                           (out && code_matches(a, (uint32_t)c, f->not_inside)) << 1);
  has[0] = 0;
  ok[0] = !in;
  for (size_t s = 1; s < a->nstacks; s++) {
    has[s] = has[a->st_parent[s]] | code_in[a->st_code[s]];
    ok[s] = (!in || (has[s] & 1)) && (!out || !(has[s] & 2));
  }
  free(code_in);
  free(has);
  sp->ok = ok;
  return 0;
}

static int matches(const mt_analysis *a, const mt_filter *f, const stack_pass *sp,
                   uint64_t live_at, size_t i) {
  uint64_t at = mt__obj_alloc_time(a, i), ft = mt__obj_free_time(a, i);
  if (at < f->alloc_from || at >= f->alloc_to) return 0;
  if (f->live != MT_LIVE_ANY) {
    if (f->live == MT_LIVE_AT_END ? ft != MT_NEVER : (at > live_at || ft <= live_at)) return 0;
  }
  if (f->collected == MT_COLLECTED_NEVER && ft != MT_NEVER) return 0;
  if (f->collected == MT_COLLECTED_IN && (ft == MT_NEVER || ft < f->collect_from || ft >= f->collect_to))
    return 0;
  if (f->size_min || f->size_max != UINT64_MAX) {
    double bytes = (double)mt__obj_length(a, i) * a->word_bytes;
    if (bytes < (double)f->size_min || bytes > (double)f->size_max) return 0;
  }
  if (f->lifetime_min || f->lifetime_max != UINT64_MAX) {
    uint64_t life = (ft == MT_NEVER ? a->duration : ft) - at;
    if (life < f->lifetime_min || life > f->lifetime_max) return 0;
  }
  if (f->sources && !(f->sources & (1u << (a->source[i] & 3)))) return 0;
  if (sp->ok && !sp->ok[a->bt_stack[a->bt[i]]]) return 0;
  return 1;
}

static uint64_t live_time(const mt_analysis *a, const mt_filter *f) {
  return f->live == MT_LIVE_AT_PEAK ? a->peak_time : f->live_at;
}

int mt_analysis_matches(const mt_analysis *a, const mt_filter *f, size_t i) {
  stack_pass sp;
  if (stacks_for(a, f, &sp)) return 0;
  int m = matches(a, f, &sp, live_time(a, f), i);
  free(sp.ok);
  return m;
}

/* ---- tallies and estimates ---- */

void mt__tally_object(const mt_analysis *a, size_t i, mt_tally *t) {
  uint64_t len = mt__obj_length(a, i);
  /* OCaml heap blocks are sampled over their header word too. */
  uint64_t w = len + ((a->source[i] & 3) != MT_SOURCE_EXTERNAL);
  t->samples += mt__obj_samples(a, i);
  t->objects++;
  double wt;
  if (w < MT__HT_CACHE) {
    wt = a->ht_w[w];
    t->ht_var += a->ht_v[w];
  } else {
    double p = -expm1((double)w * a->log1m_rate);
    wt = 1.0 / p;
    t->ht_var += (1.0 - p) / (p * p);
  }
  t->ht += wt;
  if (wt > t->w_max) t->w_max = wt;
}

uint32_t mt_analysis_object_site(const mt_analysis *a, size_t i) { return a->bt_site[a->bt[i]]; }

int mt_analysis_tally_sites(const mt_analysis *a, const mt_filter *f, mt_tally *per_code,
                            mt_tally *total) {
  stack_pass sp;
  if (stacks_for(a, f, &sp)) return MT_ERR_NOMEM;
  memset(per_code, 0, (a->ncodes + 1) * sizeof *per_code);
  uint64_t lt = live_time(a, f);
  for (size_t i = 0; i < a->nobj; i++) {
    if (!matches(a, f, &sp, lt, i)) continue;
    uint32_t c = a->bt_site[a->bt[i]];
    mt__tally_object(a, i, &per_code[c == MT__NO_SITE ? a->ncodes : c]);
  }
  if (total) {
    mt_tally sum = {0};
    for (size_t c = 0; c <= a->ncodes; c++) mt_tally_add(&sum, &per_code[c]);
    *total = sum;
  }
  free(sp.ok);
  return MT_OK;
}

void mt_tally_object(const mt_analysis *a, size_t i, mt_tally *t) { mt__tally_object(a, i, t); }

int mt_analysis_tally_stacks(const mt_analysis *a, const mt_filter *f, mt_tally *per_stack,
                             mt_tally *total) {
  if (mt__ensure_stacks(a)) return MT_ERR_NOMEM;
  stack_pass sp;
  if (stacks_for(a, f, &sp)) return MT_ERR_NOMEM;
  memset(per_stack, 0, a->nstacks * sizeof *per_stack);
  uint64_t lt = live_time(a, f);
  mt_tally sum = {0};
  for (size_t i = 0; i < a->nobj; i++) {
    if (!matches(a, f, &sp, lt, i)) continue;
    mt_tally *t = &per_stack[a->bt_stack[a->bt[i]]];
    mt__tally_object(a, i, t);
  }
  if (total) {
    for (size_t s = 0; s < a->nstacks; s++) mt_tally_add(&sum, &per_stack[s]);
    *total = sum;
  }
  free(sp.ok);
  return MT_OK;
}

int mt_analysis_live_series(const mt_analysis *a, const mt_filter *f, uint64_t from,
                            uint64_t to, size_t nbins, double *out) {
  if (nbins == 0 || to <= from) return MT_ERR_INVALID;
  stack_pass sp;
  if (stacks_for(a, f, &sp)) return MT_ERR_NOMEM;
  double *diff = calloc(nbins + 1, sizeof *diff);
  if (!diff) {
    free(sp.ok);
    return MT_ERR_NOMEM;
  }
  double width = (double)(to - from) / (double)nbins;
  uint64_t lt = live_time(a, f);
  /* Bin j ends at from + (j+1) * width; an object is counted at a bin's end
   * when it was allocated at or before it and not collected by then. */
  for (size_t i = 0; i < a->nobj; i++) {
    if (!matches(a, f, &sp, lt, i)) continue;
    double ns = (double)mt__obj_samples(a, i);
    double s = ((double)mt__obj_alloc_time(a, i) - (double)from) / width;
    size_t j0 = s <= 1 ? 0 : (size_t)ceil(s) - 1;
    if (j0 >= nbins) continue;
    size_t j1 = nbins;
    if (a->free_t[i] != MT__T_NEVER) {
      double e = ((double)mt__obj_free_time(a, i) - (double)from) / width;
      j1 = e <= 1 ? 0 : (size_t)ceil(e) - 1;
      if (j1 > nbins) j1 = nbins;
      /* alive at bin end b iff free > b: the first bin end >= free is dead */
    }
    if (j1 <= j0) continue;
    diff[j0] += ns;
    diff[j1] -= ns;
  }
  double run = 0;
  for (size_t j = 0; j < nbins; j++) {
    run += diff[j];
    out[j] = run;
  }
  free(diff);
  free(sp.ok);
  return MT_OK;
}

/* Quantile of the chi-square distribution (Wilson-Hilferty), for the exact
 * (Garwood) Poisson interval on a sample count. */
static double chi2_quantile(double z, double k) {
  double h = 2.0 / (9.0 * k);
  double c = 1.0 - h + z * sqrt(h);
  return c > 0 ? k * c * c * c : 0;
}

mt_estimate mt_estimate_bytes(const mt_analysis *a, const mt_tally *t) {
  const double z = 1.959963984540054;
  double n = (double)t->samples, scale = a->word_bytes / a->info.sample_rate;
  mt_estimate e = {n * scale, 0, 0};
  /* Samples ~ Binomial(words, rate), close to Poisson for small rates; the
   * Garwood interval keeps its 95% coverage down to a handful of samples. */
  e.lo = n > 0 ? chi2_quantile(-z, 2 * n) / 2 * scale : 0;
  e.hi = (n > 0 ? chi2_quantile(z, 2 * n + 2) / 2 : -log(0.025)) * scale;
  if (a->info.sample_rate >= 1) e.lo = e.hi = e.value; /* everything sampled */
  return e;
}

mt_estimate mt_estimate_objects(const mt_analysis *a, const mt_tally *t) {
  /* The Horvitz-Thompson count is a weighted sum of (nearly) Poisson
   * counts; its interval is Fay and Feuer's gamma interval for such sums
   * (docs/estimators.md): Garwood's Poisson interval on the effective
   * number of objects Y^2/V, scaled by V/Y, with the upper end computed as
   * if one more object of the largest weight had been sampled. */
  const double z = 1.959963984540054;
  double y = t->ht, v = t->ht_var;
  mt_estimate e = {y, y, y};
  if (t->objects == 0) {
    /* Nothing sampled: up to -ln(0.025) = 3.69 expected sampled objects
     * of the smallest size (1 word, the heaviest weight) are consistent. */
    double p1 = -expm1(a->log1m_rate);
    e.lo = e.hi = 0;
    if (p1 > 0 && p1 < 1) e.hi = -log(0.025) / p1;
    return e;
  }
  if (!(v > 0) || !(y > 0)) return e; /* every object certain to be sampled */
  double wm = t->w_max > 0 ? t->w_max : v / y;
  e.lo = chi2_quantile(-z, 2 * y * y / v) / 2 * (v / y);
  double yu = y + wm, vu = v + wm * wm;
  e.hi = chi2_quantile(z, 2 * yu * yu / vu) / 2 * (vu / yu);
  if (e.lo < (double)t->objects) e.lo = (double)t->objects; /* we saw these */
  if (e.hi < e.value) e.hi = e.value;
  return e;
}

/* ---- bulk queries ---- */

int mt_analysis_select(const mt_analysis *a, const mt_filter *f, uint8_t *mask, size_t *count) {
  stack_pass sp;
  if (stacks_for(a, f, &sp)) return MT_ERR_NOMEM;
  uint64_t lt = live_time(a, f);
  size_t n = 0;
  for (size_t i = 0; i < a->nobj; i++) n += mask[i] = (uint8_t)matches(a, f, &sp, lt, i);
  if (count) *count = n;
  free(sp.ok);
  return MT_OK;
}


int mt_analysis_each_backtrace(const mt_analysis *a, const mt_filter *f, mt_backtrace_fn fn,
                               void *ctx) {
  uint8_t *mask = malloc(a->nobj + 1);
  if (!mask) return MT_ERR_NOMEM;
  int rc = mt_analysis_select(a, f, mask, NULL);
  if (rc == MT_OK) {
    rc = mt__log_replay(a, mask, fn, ctx);
    if (rc < 0) rc = MT_ERR_NOMEM;
  }
  free(mask);
  return rc;
}

/* ---- distinct backtraces ---- */

size_t mt_analysis_backtrace_count(const mt_analysis *a) { return a->nbt; }

uint32_t mt_analysis_object_backtrace_id(const mt_analysis *a, size_t i) { return a->bt[i]; }

size_t mt_analysis_backtrace_codes(const mt_analysis *a, uint32_t bt, uint32_t *out,
                                   size_t cap) {
  return mt__bt_codes(a, bt, out, cap);
}

uint32_t mt_analysis_backtrace_site(const mt_analysis *a, uint32_t bt) {
  return a->bt_site[bt];
}

uint32_t mt_analysis_backtrace_stack(const mt_analysis *a, uint32_t bt) {
  need_stacks(a);
  return a->stacks_built == 1 ? a->bt_stack[bt] : 0;
}

int mt_analysis_backtraces_distinct(const mt_analysis *a) { return a->bt_distinct; }
