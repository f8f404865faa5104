/* /api/info, summary, timeline, functions, paths, sites, leaks and
 * histograms (docs/viewer.md). Each is one or two passes over the objects
 * a query selects. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answers.h"
#include "tables.h"

#define NONE UINT32_MAX

static double samples_bytes(const mt_vsnap *s, double samples) {
  return samples / mt_analysis_info(s->a)->sample_rate * mt_analysis_word_bytes(s->a);
}

static void peak(const mt_vsnap *s, mt_json *j) {
  uint64_t t, samples;
  mt_analysis_peak(s->a, &t, &samples);
  mt_tally pk = {0};
  pk.samples = samples;
  mt_json_key(j, "peak");
  mt_json_obj(j);
  mt_json_key(j, "time");
  mt_json_num(j, (double)t / 1e6);
  mt_json_key(j, "bytes");
  mt_vjson_est(j, mt_estimate_bytes(s->a, &pk));
  mt_json_end_obj(j);
}

int mt_vanswer_info(const mt_vsnap *s, int live, mt_json *j) {
  const mt_trace_info *in = mt_analysis_info(s->a);
  mt_json_obj(j);
  mt_json_key(j, "trace");
  mt_json_str(j, s->name);
  mt_json_key(j, "executable");
  mt_json_str(j, in->executable_name);
  mt_json_key(j, "pid");
  mt_json_uint(j, in->pid);
  mt_json_key(j, "host");
  mt_json_str(j, in->host_name);
  mt_json_key(j, "start_time");
  mt_json_uint(j, in->start_time);
  mt_json_key(j, "word_size");
  mt_json_uint(j, in->word_size);
  mt_json_key(j, "context");
  mt_json_str(j, in->context);
  mt_json_key(j, "runtime_params");
  mt_json_str(j, in->runtime_params);
  mt_json_key(j, "sample_rate");
  mt_json_num(j, in->sample_rate);
  mt_json_key(j, "bytes_per_sample");
  mt_json_num(j, mt_analysis_word_bytes(s->a) / in->sample_rate);
  mt_json_key(j, "duration");
  mt_json_num(j, s->duration);
  mt_json_key(j, "sampled_objects");
  mt_json_uint(j, s->nobj);
  mt_json_key(j, "generation");
  mt_json_uint(j, s->generation);
  mt_json_key(j, "live");
  mt_json_bool(j, live);
  mt_json_key(j, "warning");
  mt_json_str(j, mt_analysis_warning(s->a));
  mt_json_key(j, "version");
  char v[64];
  snprintf(v, sizeof v, "memtrace-c %s", mt_version());
  mt_json_str(j, v);
  mt_json_key(j, "total");
  mt_json_obj(j);
  mt_vjson_tally(j, s, &s->all);
  mt_json_key(j, "samples");
  mt_json_uint(j, s->all.samples);
  mt_json_end_obj(j);
  peak(s, j);
  mt_json_end_obj(j);
  return 0;
}

int mt_vanswer_summary(const mt_vsnap *s, const mt_vquery *q, mt_json *j) {
  mt_vsel sel;
  if (mt_vsel_make(s, q, &sel)) return -1;
  mt_json_obj(j);
  mt_vjson_tally(j, s, &sel.total);
  mt_json_key(j, "samples");
  mt_json_uint(j, sel.total.samples);
  mt_json_key(j, "sampled_objects");
  mt_json_uint(j, sel.count);
  mt_json_key(j, "share");
  mt_json_num(j, s->all.samples ? (double)sel.total.samples / (double)s->all.samples : 0);
  mt_json_end_obj(j);
  mt_vsel_free(&sel);
  return 0;
}

/* The first bin whose end is at or after t (nb if none). */
static size_t bin_of(const uint64_t *ends, size_t nb, uint64_t t) {
  size_t lo = 0, hi = nb;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (ends[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

int mt_vanswer_timeline(const mt_vsnap *s, const mt_vquery *q, mt_json *j) {
  size_t cap = (size_t)q->bins;
  mt_live_point *env = malloc(cap * sizeof *env);
  uint64_t *ends = malloc(cap * sizeof *ends);
  double *diff = calloc(cap + 1, sizeof *diff);
  mt_vsel sel = {0};
  int rc = -1;
  if (!env || !ends || !diff || mt_vsel_make(s, q, &sel)) goto done;
  size_t nb = mt_analysis_live_envelope(s->a, env, cap);
  for (size_t b = 0; b < nb; b++) ends[b] = env[b].time;
  /* the filtered line at the same bin ends as the envelope: an object
   * counts at a bin end t when allocated at or before t and not yet
   * collected (free > t). (The envelope may differ by the objects whose
   * events fall exactly on a bin end.) */
  for (size_t i = 0; i < s->nobj; i++) {
    if (!sel.mask[i]) continue;
    mt_object o = mt_analysis_object(s->a, i);
    size_t b0 = bin_of(ends, nb, o.alloc_time);
    size_t b1 = o.free_time == MT_NEVER ? nb : bin_of(ends, nb, o.free_time);
    if (b1 <= b0) continue;
    diff[b0] += (double)o.nsamples;
    diff[b1] -= (double)o.nsamples;
  }
  mt_json_obj(j);
  mt_json_key(j, "from");
  mt_json_int(j, 0);
  mt_json_key(j, "to");
  mt_json_num(j, s->duration);
  mt_json_key(j, "bins");
  mt_json_uint(j, nb);
  mt_json_key(j, "time");
  mt_json_arr(j);
  for (size_t b = 0; b < nb; b++) mt_json_num(j, (double)ends[b] / 1e6);
  mt_json_end_arr(j);
  mt_json_key(j, "all");
  mt_json_obj(j);
  static const char *keys[] = {"min", "max", "end"};
  for (int k = 0; k < 3; k++) {
    mt_json_key(j, keys[k]);
    mt_json_arr(j);
    for (size_t b = 0; b < nb; b++) {
      double v = k == 0 ? env[b].min_samples : k == 1 ? env[b].max_samples : env[b].end_samples;
      mt_json_num(j, round(samples_bytes(s, v)));
    }
    mt_json_end_arr(j);
  }
  mt_json_end_obj(j);
  mt_json_key(j, "filtered");
  mt_json_arr(j);
  double run = 0;
  for (size_t b = 0; b < nb; b++) {
    run += diff[b];
    mt_json_num(j, round(samples_bytes(s, run)));
  }
  mt_json_end_arr(j);
  peak(s, j);
  mt_json_end_obj(j);
  rc = 0;
done:
  free(env);
  free(ends);
  free(diff);
  mt_vsel_free(&sel);
  return rc;
}

/* ---- groups: tallies keyed by a 64-bit key, sorted for output ---- */

typedef struct group {
  uint64_t key;
  mt_tally t;
  uint64_t oldest, newest;
} group;

typedef struct groups {
  mt__u64map map;
  group *g;
  size_t n, cap;
} groups;

static int gr_init(groups *gs) {
  memset(gs, 0, sizeof *gs);
  return 0;
}

static void gr_free(groups *gs) {
  mt__u64map_free(&gs->map);
  free(gs->g);
}

static group *gr_get(groups *gs, uint64_t key) {
  int fresh;
  uint32_t id = mt__u64map_intern(&gs->map, key, (uint32_t)gs->n, &fresh);
  if (id == NONE) return NULL;
  if (fresh) {
    if (gs->n == gs->cap) {
      size_t nc = gs->cap ? gs->cap * 2 : 256;
      group *g = realloc(gs->g, nc * sizeof *g);
      if (!g) return NULL;
      gs->g = g;
      gs->cap = nc;
    }
    memset(&gs->g[id], 0, sizeof gs->g[id]);
    gs->g[id].key = key;
    gs->g[id].oldest = UINT64_MAX;
    gs->n++;
  }
  return &gs->g[id];
}

static int by_samples(const void *x, const void *y) {
  const group *a = x, *b = y;
  if (a->t.samples != b->t.samples) return a->t.samples > b->t.samples ? -1 : 1;
  return a->key < b->key ? -1 : a->key > b->key;
}

static int by_oldest(const void *x, const void *y) {
  const group *a = x, *b = y;
  if (a->oldest != b->oldest) return a->oldest < b->oldest ? -1 : 1;
  return a->key < b->key ? -1 : a->key > b->key;
}

/* frames of a tree node, innermost first */
static void frames(mt_json *j, const mt_vsnap *s, const mt_vtree *t, uint32_t v) {
  mt_json_arr(j);
  for (; v != 0; v = t->parent[v]) {
    mt_json_obj(j);
    mt_json_key(j, "name");
    mt_json_str(j, mt_vsnap_fn_name(s, t->fn[v]));
    mt_json_key(j, "file");
    mt_json_str(j, mt_vsnap_fn_file(s, t->fn[v]));
    mt_json_key(j, "line");
    mt_json_uint(j, t->line[v]);
    mt_json_end_obj(j);
  }
  mt_json_end_arr(j);
}

/* paths and leaks: the selected objects grouped by their node after hide */
static int by_path(const mt_vsnap *s, const mt_vquery *q, mt_json *j, int leaks) {
  mt_vquery lq = *q;
  if (leaks) lq.f.collected = MT_COLLECTED_NEVER;
  lq.f.inside = q->f.inside ? lq.inside : NULL;
  lq.f.not_inside = q->f.not_inside ? lq.not_inside : NULL;
  for (int h = 0; h < q->nhide; h++) lq.hide[h] = lq.hide_buf + (q->hide[h] - q->hide_buf);
  mt_vsel sel;
  mt_vtree t;
  groups gs;
  if (mt_vsel_make(s, &lq, &sel)) return -1;
  if (mt_vtree_make(s, &lq, &t)) {
    mt_vsel_free(&sel);
    return -1;
  }
  int rc = -1;
  if (gr_init(&gs)) goto done;
  for (size_t i = 0; i < s->nobj; i++) {
    if (!sel.mask[i]) continue;
    group *g = gr_get(&gs, mt_vtree_node(&t, s->leaf[i]));
    if (!g) goto done;
    mt_tally_object(s->a, i, &g->t);
    mt_object o = mt_analysis_object(s->a, i);
    if (o.alloc_time < g->oldest) g->oldest = o.alloc_time;
    if (o.alloc_time > g->newest) g->newest = o.alloc_time;
  }
  if (gs.n) qsort(gs.g, gs.n, sizeof *gs.g, leaks ? by_oldest : by_samples); /* none: g NULL */
  mt_json_obj(j);
  mt_json_key(j, leaks ? "leaks" : "paths");
  mt_json_arr(j);
  for (size_t k = 0; k < gs.n && k < (size_t)q->n; k++) {
    mt_json_obj(j);
    mt_json_key(j, "frames");
    frames(j, s, &t, (uint32_t)gs.g[k].key);
    mt_vjson_tally(j, s, &gs.g[k].t);
    if (leaks) {
      mt_json_key(j, "oldest");
      mt_json_num(j, (double)gs.g[k].oldest / 1e6);
      mt_json_key(j, "newest");
      mt_json_num(j, (double)gs.g[k].newest / 1e6);
    }
    mt_json_end_obj(j);
  }
  mt_json_end_arr(j);
  mt_json_key(j, "total");
  mt_vjson_est(j, mt_estimate_bytes(s->a, &sel.total));
  mt_json_end_obj(j);
  rc = 0;
done:
  gr_free(&gs);
  mt_vtree_free(&t);
  mt_vsel_free(&sel);
  return rc;
}

int mt_vanswer_paths(const mt_vsnap *s, const mt_vquery *q, mt_json *j) {
  return by_path(s, q, j, 0);
}

int mt_vanswer_leaks(const mt_vsnap *s, const mt_vquery *q, mt_json *j) {
  return by_path(s, q, j, 1);
}

int mt_vanswer_sites(const mt_vsnap *s, const mt_vquery *q, mt_json *j) {
  mt_vsel sel;
  groups gs;
  if (mt_vsel_make(s, q, &sel)) return -1;
  int rc = -1;
  if (gr_init(&gs)) goto done;
  /* Sites are grouped by location (function and line), as memtrace top
   * does; undescribed codes by code; empty backtraces together. */
  for (size_t i = 0; i < s->nobj; i++) {
    if (!sel.mask[i]) continue;
    uint32_t c = mt_analysis_object_site(s->a, i);
    uint64_t key;
    if (c == MT_NO_CODE) key = UINT64_MAX - 1;
    else {
      size_t nfr;
      const mt_frame *fr = mt_analysis_code_frames(s->a, c, &nfr);
      key = nfr ? (uint64_t)fr[nfr - 1].function << 32 | fr[nfr - 1].line
                : (uint64_t)1 << 63 | c;
    }
    group *g = gr_get(&gs, key);
    if (!g) goto done;
    if (g->newest == 0) g->newest = (uint64_t)c + 1; /* a code of the group */
    mt_tally_object(s->a, i, &g->t);
  }
  if (gs.n) qsort(gs.g, gs.n, sizeof *gs.g, by_samples);
  mt_json_obj(j);
  mt_json_key(j, "sites");
  mt_json_arr(j);
  for (size_t k = 0; k < gs.n && k < (size_t)q->n; k++) {
    const group *g = &gs.g[k];
    char name[64];
    const char *nm, *file = "";
    uint64_t line = 0;
    if (g->key == UINT64_MAX - 1) nm = "(no backtrace)";
    else if (g->key >> 63) {
      snprintf(name, sizeof name, "#%llx",
               (unsigned long long)mt_analysis_code_value(s->a, (uint32_t)(g->newest - 1)));
      nm = name;
    } else {
      uint32_t f = (uint32_t)(g->key >> 32);
      nm = mt_vsnap_fn_name(s, f);
      file = mt_vsnap_fn_file(s, f);
      line = g->key & 0xffffffffu;
    }
    mt_json_obj(j);
    mt_json_key(j, "name");
    mt_json_str(j, nm);
    mt_json_key(j, "file");
    mt_json_str(j, file);
    mt_json_key(j, "line");
    mt_json_uint(j, line);
    mt_vjson_tally(j, s, &g->t);
    mt_json_end_obj(j);
  }
  mt_json_end_arr(j);
  mt_json_key(j, "total");
  mt_vjson_est(j, mt_estimate_bytes(s->a, &sel.total));
  mt_json_end_obj(j);
  rc = 0;
done:
  gr_free(&gs);
  mt_vsel_free(&sel);
  return rc;
}

typedef struct fstat {
  uint32_t fn;
  mt_tally self, tot;
  int sort_total;
} fstat;

static int by_fn(const void *x, const void *y) {
  const fstat *a = x, *b = y;
  uint64_t sa = a->sort_total ? a->tot.samples : a->self.samples;
  uint64_t sb = b->sort_total ? b->tot.samples : b->self.samples;
  if (sa != sb) return sa > sb ? -1 : 1;
  return a->fn < b->fn ? -1 : 1;
}

int mt_vanswer_functions(const mt_vsnap *s, const mt_vquery *q, mt_json *j) {
  mt_vsel sel;
  mt_vtree t;
  if (mt_vsel_make(s, q, &sel)) return -1;
  if (mt_vtree_make(s, q, &t)) {
    mt_vsel_free(&sel);
    return -1;
  }
  int rc = -1;
  size_t nf = s->nfn + 1;
  fstat *st = calloc(nf, sizeof *st);
  uint8_t *hid = calloc(nf, 1);
  if (!st || !hid) goto done;
  for (size_t k = 0; k < nf; k++) {
    st[k].fn = (uint32_t)k;
    st[k].sort_total = q->sort_total;
    hid[k] = (uint8_t)mt_vquery_hidden(q, mt_vsnap_fn_name(s, (uint32_t)k));
  }
  /* self: the innermost frame after hide; total: every function on the
   * path once (the outermost occurrence of each, marked at load) */
  for (size_t i = 0; i < s->nobj; i++) {
    if (!sel.mask[i]) continue;
    mt_tally ti = {0};
    mt_tally_object(s->a, i, &ti);
    uint32_t v = mt_vtree_node(&t, s->leaf[i]);
    if (v) mt_tally_add(&st[t.fn[v]].self, &ti);
    for (uint32_t u = s->leaf[i]; u != 0; u = s->fparent[u])
      if (s->fouter[u] && !hid[s->ffn[u]]) mt_tally_add(&st[s->ffn[u]].tot, &ti);
  }
  qsort(st, nf, sizeof *st, by_fn);
  mt_json_obj(j);
  mt_json_key(j, "functions");
  mt_json_arr(j);
  for (size_t k = 0, shown = 0; k < nf && shown < (size_t)q->n; k++) {
    if (st[k].tot.objects == 0) continue;
    shown++;
    mt_json_obj(j);
    mt_json_key(j, "id");
    mt_json_uint(j, st[k].fn);
    mt_json_key(j, "name");
    mt_json_str(j, mt_vsnap_fn_name(s, st[k].fn));
    mt_json_key(j, "file");
    mt_json_str(j, mt_vsnap_fn_file(s, st[k].fn));
    mt_json_key(j, "self");
    mt_json_obj(j);
    mt_vjson_tally(j, s, &st[k].self);
    mt_json_end_obj(j);
    mt_json_key(j, "total");
    mt_json_obj(j);
    mt_vjson_tally(j, s, &st[k].tot);
    mt_json_end_obj(j);
    mt_json_end_obj(j);
  }
  mt_json_end_arr(j);
  mt_json_key(j, "total");
  mt_vjson_est(j, mt_estimate_bytes(s->a, &sel.total));
  mt_json_end_obj(j);
  rc = 0;
done:
  free(st);
  free(hid);
  mt_vtree_free(&t);
  mt_vsel_free(&sel);
  return rc;
}

/* ---- histograms ---- */

#define NSIZE 64
#define NLIFE 64 /* thirds of decades of microseconds; bin 0 is < 1 us */

/* Bin b >= 1 holds lifetimes in [10^((b-1)/3), 10^(b/3)) us. The edges are
 * rounded up to whole microseconds once, so binning is a search over
 * integers instead of a log10 per object. */
static uint64_t life_edges[NLIFE]; /* life_edges[b]: least lifetime of bin b */
static pthread_once_t life_once = PTHREAD_ONCE_INIT;
static void life_init(void) {
  life_edges[0] = 0;
  for (int b = 1; b < NLIFE; b++) {
    /* from bin 59 on (10^19.3 us) past any 64-bit lifetime: the last value,
     * not an overflowing conversion (undefined, and 2^63 on x86-64) */
    double e = ceil(pow(10, (b - 1) / 3.0) - 1e-9);
    life_edges[b] = e < 18446744073709551616.0 ? (uint64_t)e : UINT64_MAX;
  }
}

static int life_bin(uint64_t us) {
  int lo = 0, hi = NLIFE - 1; /* the last edge at or below us */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (life_edges[mid] <= us) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

static double life_edge(int b) { return b == 0 ? 0 : pow(10, (b - 1) / 3.0) / 1e6; }

/* One half of the objects, binned by one thread. */
typedef struct hist_part {
  const mt_vsnap *s;
  const uint8_t *mask;
  size_t from, to;
  mt_tally size[NSIZE], life[NLIFE], end;
} hist_part;

static void *hist_run(void *arg) {
  hist_part *h = arg;
  const mt_analysis *a = h->s->a;
  int shift = (int)log2(mt_analysis_word_bytes(a)); /* 3 for 64-bit words */
  for (size_t i = h->from; i < h->to; i++) {
    if (!h->mask[i]) continue;
    mt_object o = mt_analysis_object(a, i);
    mt_tally t = {0};
    mt_tally_object(a, i, &t);
    /* below 0 only for a word under 8 bits (a corrupt trace's: 2 bits
     * gave -2, out of the table) */
    int sb = o.length ? 63 - __builtin_clzll(o.length) + shift : 0;
    mt_tally_add(&h->size[sb < 0 ? 0 : sb < NSIZE ? sb : NSIZE - 1], &t);
    if (o.free_time == MT_NEVER) mt_tally_add(&h->end, &t);
    else mt_tally_add(&h->life[life_bin(o.free_time - o.alloc_time)], &t);
  }
  return NULL;
}

int mt_vanswer_histograms(const mt_vsnap *s, const mt_vquery *q, mt_json *j) {
  mt_vsel sel;
  if (mt_vsel_make(s, q, &sel)) return -1;
  pthread_once(&life_once, life_init);
  /* two halves on the two cores; a part's tallies are sums, so they add */
  hist_part *p = calloc(2, sizeof *p);
  if (!p) {
    mt_vsel_free(&sel);
    return -1;
  }
  for (int k = 0; k < 2; k++)
    p[k] = (hist_part){.s = s, .mask = sel.mask, .from = k * s->nobj / 2,
                       .to = (k + 1) * s->nobj / 2};
  pthread_t th;
  int threaded = s->nobj > 100000 && pthread_create(&th, NULL, hist_run, &p[1]) == 0;
  hist_run(&p[0]);
  if (threaded) pthread_join(th, NULL);
  else hist_run(&p[1]);
  mt_tally *size = p[0].size, *life = p[0].life, end = p[0].end;
  for (int b = 0; b < NSIZE; b++) mt_tally_add(&size[b], &p[1].size[b]);
  for (int b = 0; b < NLIFE; b++) mt_tally_add(&life[b], &p[1].life[b]);
  mt_tally_add(&end, &p[1].end);
  mt_json_obj(j);
  for (int h = 0; h < 2; h++) {
    mt_tally *bins = h ? life : size;
    int nb = h ? NLIFE : NSIZE, lo = nb, hi = -1;
    for (int b = 0; b < nb; b++)
      if (bins[b].objects) {
        if (b < lo) lo = b;
        hi = b;
      }
    mt_json_key(j, h ? "lifetime" : "size");
    mt_json_arr(j);
    for (int b = lo; b <= hi; b++) {
      mt_json_obj(j);
      mt_json_key(j, "lo");
      mt_json_num(j, h ? life_edge(b) : b == 0 ? 0 : ldexp(1, b));
      mt_json_key(j, "hi");
      mt_json_num(j, h ? life_edge(b + 1) : ldexp(1, b + 1));
      mt_vjson_tally(j, s, &bins[b]);
      mt_json_end_obj(j);
    }
    mt_json_end_arr(j);
  }
  mt_json_key(j, "live_at_end");
  mt_json_obj(j);
  mt_vjson_tally(j, s, &end);
  mt_json_end_obj(j);
  mt_json_end_obj(j);
  free(p);
  mt_vsel_free(&sel);
  return 0;
}

const mt_vendpoint mt_vendpoints[MT_VENDPOINTS] = {
    {"/api/summary", MT_VP_FILTER, mt_vanswer_summary, 0},
    {"/api/timeline", MT_VP_FILTER | MT_VP_BINS, mt_vanswer_timeline, 0},
    {"/api/flame", MT_VP_FILTER | MT_VP_FLAME, mt_vanswer_flame, 1},
    {"/api/functions", MT_VP_FILTER | MT_VP_N | MT_VP_SORT, mt_vanswer_functions, 1},
    {"/api/paths", MT_VP_FILTER | MT_VP_N, mt_vanswer_paths, 1},
    {"/api/sites", MT_VP_FILTER | MT_VP_N, mt_vanswer_sites, 0},
    {"/api/leaks", MT_VP_FILTER | MT_VP_N, mt_vanswer_leaks, 1},
    {"/api/histograms", MT_VP_FILTER, mt_vanswer_histograms, 0},
    {"/api/info", 0, NULL, 0},
    {"/api/status", 0, NULL, 0},
};
