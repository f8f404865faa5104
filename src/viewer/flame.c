/* /api/flame: the flame graph at function granularity, with focus.
 *
 * Two passes over the selected objects, never a pass per node: the first
 * adds each object's weight to its node and sums subtrees (reverse id
 * order: parents have smaller ids); nodes under `min` of the root are cut
 * (their weight stays in their kept ancestor's self); the second pass
 * tallies each object (bytes and objects, with intervals) into its kept
 * node. With focus=F, the nodes under F's outermost occurrences are first
 * merged by their path relative to it (callees), or by the path from it
 * back to the root (callers), into a tree interned here. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "answers.h"
#include "u64map.h"

#define NONE UINT32_MAX
#define CUT 0x80000000u

/* A growable tree of (parent, fn), interned. */
typedef struct rtree {
  uint32_t *parent, *fn;
  size_t n, cap;
  mt_vmap map;
} rtree;

static int rt_init(rtree *r) {
  memset(r, 0, sizeof *r);
  r->cap = 256;
  r->parent = malloc(r->cap * sizeof *r->parent);
  r->fn = malloc(r->cap * sizeof *r->fn);
  if (!r->parent || !r->fn || mt_vmap_init(&r->map, 256)) return -1;
  r->parent[0] = 0;
  r->fn[0] = NONE;
  r->n = 1;
  return 0;
}

static void rt_free(rtree *r) {
  free(r->parent);
  free(r->fn);
  mt_vmap_free(&r->map);
}

static uint32_t rt_child(rtree *r, uint32_t p, uint32_t fn) {
  int fresh;
  uint32_t id = mt_vmap_intern(&r->map, (uint64_t)p << 32 | fn, (uint32_t)r->n, &fresh);
  if (id == NONE || !fresh) return id;
  if (r->n == r->cap) {
    size_t nc = r->cap * 2;
    uint32_t *a = realloc(r->parent, nc * sizeof *a);
    if (a) r->parent = a;
    uint32_t *b = realloc(r->fn, nc * sizeof *b);
    if (b) r->fn = b;
    if (!a || !b) return NONE;
    r->cap = nc;
  }
  r->parent[id] = p;
  r->fn[id] = fn;
  r->n++;
  return id;
}

/* The output: kept nodes, their tallies, children sorted by bytes. */
typedef struct otree {
  size_t k;
  uint32_t *parent, *fn;
  mt_tally *self, *tot;
  uint32_t *first, *next; /* children lists */
} otree;

static void ot_free(otree *o) {
  free(o->parent);
  free(o->fn);
  free(o->self);
  free(o->tot);
  free(o->first);
  free(o->next);
}

/* Cuts a tree of n nodes whose subtree weights are w: out[v] is v's kept
 * node, with CUT set when v itself was cut. */
static int cut(const uint32_t *parent, const uint32_t *fn, size_t n, const double *w,
               double thr, uint32_t *out, otree *o) {
  memset(o, 0, sizeof *o);
  size_t k = 1;
  out[0] = 0;
  for (size_t v = 1; v < n; v++) {
    uint32_t p = out[parent[v]];
    if (!(p & CUT) && w[v] > 0 && w[v] >= thr) out[v] = (uint32_t)k++;
    else out[v] = (p & ~CUT) | CUT;
  }
  o->k = k;
  o->parent = malloc(k * sizeof *o->parent);
  o->fn = malloc(k * sizeof *o->fn);
  o->self = calloc(k, sizeof *o->self);
  o->tot = calloc(k, sizeof *o->tot);
  o->first = malloc(k * sizeof *o->first);
  o->next = malloc(k * sizeof *o->next);
  if (!o->parent || !o->fn || !o->self || !o->tot || !o->first || !o->next) return -1;
  o->parent[0] = 0;
  o->fn[0] = NONE;
  for (size_t v = 1; v < n; v++)
    if (!(out[v] & CUT)) {
      o->parent[out[v]] = out[parent[v]];
      o->fn[out[v]] = fn[v];
    }
  return 0;
}

/* qsort has no context argument */
static const otree *g_sort_o;
static int by_bytes(const void *x, const void *y) {
  uint64_t a = g_sort_o->tot[*(const uint32_t *)x].samples;
  uint64_t b = g_sort_o->tot[*(const uint32_t *)y].samples;
  if (a != b) return a > b ? -1 : 1;
  return *(const uint32_t *)x < *(const uint32_t *)y ? -1 : 1;
}

static int finish(otree *o) {
  memcpy(o->tot, o->self, o->k * sizeof *o->tot);
  for (size_t v = o->k; v-- > 1;) mt_tally_add(&o->tot[o->parent[v]], &o->tot[v]);
  /* children lists in bytes order: sort all ids, then link in reverse */
  uint32_t *ids = malloc(o->k * sizeof *ids);
  if (!ids) return -1;
  for (size_t v = 0; v < o->k; v++) {
    ids[v] = (uint32_t)v;
    o->first[v] = NONE;
  }
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&lock);
  g_sort_o = o;
  qsort(ids + 1, o->k - 1, sizeof *ids, by_bytes);
  pthread_mutex_unlock(&lock);
  for (size_t i = o->k; i-- > 1;) {
    uint32_t v = ids[i];
    o->next[v] = o->first[o->parent[v]];
    o->first[o->parent[v]] = v;
  }
  free(ids);
  return 0;
}

static void emit(mt_json *j, const mt_vsnap *s, const otree *o, uint32_t v, int root) {
  mt_json_obj(j);
  mt_json_key(j, "fn");
  mt_json_int(j, root ? -1 : (int64_t)o->fn[v]);
  mt_vjson_tally(j, s, &o->tot[v]);
  mt_json_key(j, "self");
  mt_json_obj(j);
  mt_vjson_tally(j, s, &o->self[v]);
  mt_json_end_obj(j);
  mt_json_key(j, "children");
  mt_json_arr(j);
  for (uint32_t c = o->first[v]; c != NONE; c = o->next[c]) emit(j, s, o, c, 0);
  mt_json_end_arr(j);
  mt_json_end_obj(j);
}

static double weight(const mt_vsnap *s, const mt_vquery *q, size_t i) {
  mt_tally t = {0};
  mt_tally_object(s->a, i, &t);
  return q->by_objects ? t.ht : (double)t.samples;
}

typedef struct flame_ctx {
  const mt_vsnap *s;
  const mt_vquery *q;
  const mt_vsel *sel;
  const mt_vtree *t;
  uint8_t *used_fn; /* functions named in the answer */
} flame_ctx;

/* Builds one tree (callees or callers) into o. `node` maps an object's
 * view node to a node of the tree (parent, fn, n) or NONE; w is scratch
 * of n doubles. */
static int build(flame_ctx *c, const uint32_t *parent, const uint32_t *fn, size_t n,
                 const uint32_t *node, double *w, uint32_t *out, otree *o,
                 double self_w_root_only) {
  const mt_vsnap *s = c->s;
  (void)self_w_root_only;
  memset(w, 0, n * sizeof *w);
  for (size_t i = 0; i < s->nobj; i++) {
    if (!c->sel->mask[i]) continue;
    uint32_t v = node[mt_vtree_node(c->t, s->leaf[i])];
    if (v != NONE) w[v] += weight(s, c->q, i);
  }
  for (size_t v = n; v-- > 1;) w[parent[v]] += w[v];
  if (cut(parent, fn, n, w, c->q->min * w[0], out, o)) return -1;
  for (size_t i = 0; i < s->nobj; i++) {
    if (!c->sel->mask[i]) continue;
    uint32_t v = node[mt_vtree_node(c->t, s->leaf[i])];
    if (v != NONE) mt_tally_object(s->a, i, &o->self[out[v] & ~CUT]);
  }
  for (size_t v = 1; v < o->k; v++) c->used_fn[o->fn[v]] = 1;
  return finish(o);
}

int mt_vanswer_flame(const mt_vsnap *s, const mt_vquery *q, mt_json *j) {
  mt_vsel sel;
  mt_vtree t;
  if (mt_vsel_make(s, q, &sel)) return -1;
  if (mt_vtree_make(s, q, &t)) {
    mt_vsel_free(&sel);
    return -1;
  }
  int rc = -1;
  otree callees = {0}, callers = {0};
  rtree rc_tree = {0}, rr_tree = {0};
  int has_callers = 0;
  uint32_t *anc = NULL, *rel = NULL, *out = NULL, *ident = NULL;
  double *w = NULL;
  flame_ctx c = {s, q, &sel, &t, calloc(s->nfn + 1, 1)};
  if (!c.used_fn) goto done;
  size_t n = t.n;
  if (q->focus > (int64_t)s->nfn) {
    rc = -2; /* no such function */
    goto done;
  }
  if (q->focus < 0) {
    /* the whole tree: its nodes are the output's candidates */
    w = malloc(n * sizeof *w);
    out = malloc(n * sizeof *out);
    ident = malloc(n * sizeof *ident);
    if (!w || !out || !ident) goto done;
    for (size_t v = 0; v < n; v++) ident[v] = (uint32_t)v;
    if (build(&c, t.parent, t.fn, n, ident, w, out, &callees, 0)) goto done;
  } else {
    uint32_t F = (uint32_t)q->focus;
    anc = malloc(n * sizeof *anc);
    rel = malloc(n * sizeof *rel);
    w = malloc(n * sizeof *w);
    if (!anc || !rel || !w || rt_init(&rc_tree) || rt_init(&rr_tree)) goto done;
    /* each node's outermost F ancestor (itself included) */
    anc[0] = NONE;
    for (size_t v = 1; v < n; v++) {
      uint32_t a = anc[t.parent[v]];
      anc[v] = a != NONE ? a : t.fn[v] == F ? (uint32_t)v : NONE;
    }
    /* which nodes hold selected objects (and their ancestors) */
    memset(w, 0, n * sizeof *w);
    for (size_t i = 0; i < s->nobj; i++)
      if (sel.mask[i]) w[mt_vtree_node(&t, s->leaf[i])] = 1;
    for (size_t v = n; v-- > 1;)
      if (w[v] != 0) w[t.parent[v]] = 1;
    /* callees: merged by the path from the F node */
    for (size_t v = 0; v < n; v++) {
      rel[v] = NONE;
      if (anc[v] == NONE || w[v] == 0) continue;
      rel[v] = anc[v] == v ? 0 : rt_child(&rc_tree, rel[t.parent[v]], t.fn[v]);
      if (rel[v] == NONE) goto done;
    }
    rc_tree.fn[0] = F;
    double *rw = malloc(rc_tree.n * sizeof *rw);
    uint32_t *rout = malloc(rc_tree.n * sizeof *rout);
    int bad = !rw || !rout || build(&c, rc_tree.parent, rc_tree.fn, rc_tree.n, rel, rw, rout,
                                    &callees, 0);
    free(rw);
    free(rout);
    if (bad) goto done;
    /* callers: an F node's objects, by the path from it back to the root */
    for (size_t v = 0; v < n; v++) {
      rel[v] = NONE;
      if (anc[v] == NONE || w[v] == 0) continue;
      if (anc[v] != v) {
        rel[v] = rel[anc[v]];
        continue;
      }
      uint32_t r = 0;
      for (uint32_t p = t.parent[v]; p != 0 && r != NONE; p = t.parent[p])
        r = rt_child(&rr_tree, r, t.fn[p]);
      if (r == NONE) goto done;
      rel[v] = r;
    }
    rr_tree.fn[0] = F;
    rw = malloc(rr_tree.n * sizeof *rw);
    rout = malloc(rr_tree.n * sizeof *rout);
    bad = !rw || !rout || build(&c, rr_tree.parent, rr_tree.fn, rr_tree.n, rel, rw, rout,
                                &callers, 0);
    free(rw);
    free(rout);
    if (bad) goto done;
    has_callers = 1;
    c.used_fn[F] = 1;
    callees.fn[0] = callers.fn[0] = F;
  }
  int focused = has_callers;
  mt_json_obj(j);
  mt_json_key(j, "total");
  mt_vjson_est(j, mt_estimate_bytes(s->a, &sel.total));
  mt_json_key(j, "functions");
  mt_json_arr(j);
  for (size_t k = 0; k <= s->nfn; k++) {
    if (!c.used_fn[k]) continue;
    mt_json_obj(j);
    mt_json_key(j, "id");
    mt_json_uint(j, k);
    mt_json_key(j, "name");
    mt_json_str(j, mt_vsnap_fn_name(s, (uint32_t)k));
    mt_json_key(j, "file");
    mt_json_str(j, mt_vsnap_fn_file(s, (uint32_t)k));
    mt_json_end_obj(j);
  }
  mt_json_end_arr(j);
  mt_json_key(j, "callees");
  emit(j, s, &callees, 0, !focused);
  mt_json_key(j, "callers");
  if (focused) emit(j, s, &callers, 0, 0);
  else mt_json_null(j);
  mt_json_end_obj(j);
  rc = 0;
done:
  ot_free(&callees);
  ot_free(&callers);
  rt_free(&rc_tree);
  rt_free(&rr_tree);
  free(anc);
  free(rel);
  free(out);
  free(ident);
  free(w);
  free(c.used_fn);
  mt_vtree_free(&t);
  mt_vsel_free(&sel);
  return rc;
}
