/* /api/flame: the flame graph at function granularity, with focus and hide.
 *
 * Costs follow the nodes kept, not the whole tree (11.8M nodes on a trace
 * whose stacks are all distinct). One pass adds each selected object's
 * weight to its node and sums subtrees (W; parents have smaller ids). The
 * answer's tree is then grown top-down: a kept node stands for a set of
 * base nodes (its members); its candidate children are the members'
 * children grouped by function, a group weighing the sum of its nodes' W;
 * a group under `min` of the root is cut (its weight stays in the parent's
 * self), so cut subtrees are never visited. `hide` and the merging of a
 * function with itself make a child a member of its parent instead of a
 * group. With focus=F the callees root's members are F's outermost nodes,
 * and the callers tree groups those same nodes by their ancestors. A last
 * pass tallies each object (bytes and objects, with intervals) into the
 * kept node its leaf falls in. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "answers.h"

#define NONE UINT32_MAX
#define EXCL (UINT32_MAX - 1) /* not in the graph (focus: no F above) */

/* The output: kept nodes, their tallies, children sorted by bytes. */
typedef struct otree {
  size_t k, cap;
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

static uint32_t ot_add(otree *o, uint32_t parent, uint32_t fn) {
  if (o->k == o->cap) {
    size_t nc = o->cap ? o->cap * 2 : 64;
    uint32_t *p = realloc(o->parent, nc * sizeof *p);
    if (p) o->parent = p;
    uint32_t *f = realloc(o->fn, nc * sizeof *f);
    if (f) o->fn = f;
    if (!p || !f) return NONE;
    o->cap = nc;
  }
  o->parent[o->k] = parent;
  o->fn[o->k] = fn;
  return (uint32_t)o->k++;
}

/* qsort has no context argument */
static const otree *g_sort_o;
static int by_bytes(const void *x, const void *y) {
  uint64_t a = g_sort_o->tot[*(const uint32_t *)x].samples;
  uint64_t b = g_sort_o->tot[*(const uint32_t *)y].samples;
  if (a != b) return a > b ? -1 : 1;
  return *(const uint32_t *)x < *(const uint32_t *)y ? -1 : 1;
}

static int ot_tallies(otree *o) {
  o->self = calloc(o->k, sizeof *o->self);
  o->tot = calloc(o->k, sizeof *o->tot);
  o->first = malloc(o->k * sizeof *o->first);
  o->next = malloc(o->k * sizeof *o->next);
  return o->self && o->tot && o->first && o->next ? 0 : -1;
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

/* A node's object up to its children's array, which stays open. */
static void emit_open(mt_json *j, const mt_vsnap *s, const otree *o, uint32_t v, int root) {
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
}

/* The subtree of node top, depth first, without recursion: a stack as deep
 * as the trace's (a recursion alternating two functions is not merged)
 * would overflow a request thread's stack. The way back up is parent[]. */
static void emit(mt_json *j, const mt_vsnap *s, const otree *o, uint32_t top, int root) {
  emit_open(j, s, o, top, root);
  uint32_t v = top, c = o->first[top];
  for (;;) {
    if (c != NONE) {
      emit_open(j, s, o, c, 0);
      v = c;
      c = o->first[c];
      continue;
    }
    mt_json_end_arr(j); /* v's children written */
    mt_json_end_obj(j);
    if (v == top) break;
    c = o->next[v];
    v = o->parent[v];
  }
}

/* growable vectors of uint32 */
typedef struct vec {
  uint32_t *v;
  size_t n, cap;
} vec;

static int push(vec *x, uint32_t a) {
  if (x->n == x->cap) {
    size_t nc = x->cap ? x->cap * 2 : 1024;
    uint32_t *p = realloc(x->v, nc * sizeof *p);
    if (!p) return -1;
    x->v = p;
    x->cap = nc;
  }
  x->v[x->n++] = a;
  return 0;
}

typedef struct flame_ctx {
  const mt_vsnap *s;
  const mt_vquery *q;
  const uint8_t *mask; /* NULL: every object */
  const uint8_t *hid;  /* per function: hidden */
  double *W;           /* per base node: weight of its subtree */
  uint32_t *out;       /* per base node: its callees node (NONE unset, EXCL) */
  uint32_t *gid;       /* per function: its group while a node's children are grouped */
  /* groups of the node being expanded */
  vec gfn, gtops; /* per group: function; then (group, node) pairs */
  double *gw;
  size_t gw_cap;
  uint8_t *used_fn; /* functions named in the answer */
} flame_ctx;

static int group_of(flame_ctx *c, uint32_t fn, uint32_t *g) {
  if (c->gid[fn] != NONE) {
    *g = c->gid[fn];
    return 0;
  }
  if (c->gfn.n == c->gw_cap) {
    size_t nc = c->gw_cap ? c->gw_cap * 2 : 256;
    double *p = realloc(c->gw, nc * sizeof *p);
    if (!p) return -1;
    c->gw = p;
    c->gw_cap = nc;
  }
  *g = c->gid[fn] = (uint32_t)c->gfn.n;
  c->gw[*g] = 0;
  return push(&c->gfn, fn);
}

/* The groups of node k's children (by function) at or above thr become
 * new nodes, children of k; a kept group's gw then holds -1 - its node id,
 * a cut one's 0. Resets gid for the next node. */
static int keep_groups(flame_ctx *c, otree *o, uint32_t k, double thr) {
  for (size_t g = 0; g < c->gfn.n; g++) {
    uint32_t f = c->gfn.v[g];
    c->gid[f] = NONE;
    if (c->gw[g] > 0 && c->gw[g] >= thr) {
      uint32_t id = ot_add(o, k, f);
      if (id == NONE) return -1;
      c->gw[g] = -1.0 - (double)id; /* remember the node */
    } else {
      c->gw[g] = 0;
    }
  }
  return 0;
}

/* Grows the callees tree from root node 0, whose members (base nodes) are
 * `tops`; out[] gets each member's kept node. */
static int grow_callees(flame_ctx *c, otree *o, vec *tops, double thr) {
  const mt_vsnap *s = c->s;
  vec mem = {0}, queue_tops = {0}, qstart = {0};
  int rc = -1;
  /* the queue of kept nodes to expand: node k's tops are
   * queue_tops[qstart[k] .. qstart[k+1]) */
  for (size_t i = 0; i < tops->n; i++)
    if (push(&queue_tops, tops->v[i])) goto done;
  if (push(&qstart, 0) || push(&qstart, (uint32_t)queue_tops.n)) goto done;
  for (size_t k = 0; k < o->k; k++) {
    uint32_t kfn = o->fn[k];
    mem.n = 0;
    for (uint32_t i = qstart.v[k]; i < qstart.v[k + 1]; i++)
      if (push(&mem, queue_tops.v[i])) goto done;
    c->gfn.n = c->gtops.n = 0;
    /* members: the tops, and the children hidden or of the same function */
    for (size_t i = 0; i < mem.n; i++) {
      uint32_t m = mem.v[i];
      c->out[m] = (uint32_t)k;
      for (uint32_t ch = s->ffirst[m]; ch; ch = s->fnext[ch]) {
        if (c->W[ch] <= 0) continue; /* nothing selected below */
        uint32_t f = s->ffn[ch], g;
        if (c->hid[f] || f == kfn) {
          if (push(&mem, ch)) goto done;
          continue;
        }
        if (group_of(c, f, &g) || push(&c->gtops, g) || push(&c->gtops, ch)) goto done;
        c->gw[g] += c->W[ch];
      }
    }
    /* kept groups become nodes (their tops queued); cut ones stay in k */
    uint32_t first_new = (uint32_t)o->k;
    if (keep_groups(c, o, (uint32_t)k, thr)) goto done;
    /* the tops of the new nodes, in node order: counting by node */
    size_t nn = o->k - first_new;
    if (nn) {
      size_t base = queue_tops.n;
      uint32_t *cnt = calloc(nn + 1, sizeof *cnt);
      if (!cnt) goto done;
      for (size_t i = 0; i < c->gtops.n; i += 2) {
        double gv = c->gw[c->gtops.v[i]];
        if (gv < 0) cnt[(uint32_t)(-1.0 - gv) - first_new + 1]++;
      }
      for (size_t i = 1; i <= nn; i++) cnt[i] += cnt[i - 1];
      for (size_t i = 0; i < nn; i++)
        if (push(&qstart, (uint32_t)(base + cnt[i + 1]))) {
          free(cnt);
          goto done;
        }
      size_t total = cnt[nn];
      for (size_t i = 0; i < total; i++)
        if (push(&queue_tops, 0)) {
          free(cnt);
          goto done;
        }
      for (size_t i = 0; i < c->gtops.n; i += 2) {
        double gv = c->gw[c->gtops.v[i]];
        if (gv < 0) queue_tops.v[base + cnt[(uint32_t)(-1.0 - gv) - first_new]++] = c->gtops.v[i + 1];
      }
      free(cnt);
    }
  }
  rc = 0;
done:
  free(mem.v);
  free(queue_tops.v);
  free(qstart.v);
  return rc;
}

/* Grows the callers tree: root node 0's members are F's outermost nodes
 * (tops); a member is (top, ancestor reached); its caller is the next
 * ancestor not hidden nor of the node's function. deepest[t] gets the
 * deepest kept node top t reached. */
static int grow_callers(flame_ctx *c, otree *o, const vec *tops, double thr, uint32_t *deepest) {
  const mt_vsnap *s = c->s;
  vec qt = {0}, qa = {0}, qstart = {0}, gm = {0};
  int rc = -1;
  for (size_t i = 0; i < tops->n; i++)
    if (push(&qt, (uint32_t)i) || push(&qa, tops->v[i])) goto done;
  if (push(&qstart, 0) || push(&qstart, (uint32_t)qt.n)) goto done;
  for (size_t k = 0; k < o->k; k++) {
    uint32_t kfn = o->fn[k];
    c->gfn.n = 0;
    gm.n = 0;
    for (uint32_t i = qstart.v[k]; i < qstart.v[k + 1]; i++) {
      uint32_t t = qt.v[i], p = s->fparent[qa.v[i]], g;
      deepest[t] = (uint32_t)k;
      while (p != 0 && (c->hid[s->ffn[p]] || s->ffn[p] == kfn)) p = s->fparent[p];
      if (p == 0) continue; /* the outermost frame: the weight stays here */
      if (group_of(c, s->ffn[p], &g) || push(&gm, g) || push(&gm, i) || push(&gm, p)) goto done;
      c->gw[g] += c->W[tops->v[t]];
    }
    uint32_t first_new = (uint32_t)o->k;
    if (keep_groups(c, o, (uint32_t)k, thr)) goto done;
    /* the new nodes' members, node by node (few nodes: one scan each) */
    for (uint32_t id = first_new; id < o->k; id++) {
      for (size_t i = 0; i < gm.n; i += 3) {
        double gv = c->gw[gm.v[i]];
        if (gv < 0 && (uint32_t)(-1.0 - gv) == id)
          if (push(&qt, qt.v[gm.v[i + 1]]) || push(&qa, gm.v[i + 2])) goto done;
      }
      if (push(&qstart, (uint32_t)qt.n)) goto done;
    }
  }
  rc = 0;
done:
  free(qt.v);
  free(qa.v);
  free(qstart.v);
  free(gm.v);
  return rc;
}

static double weight(const mt_vsnap *s, const mt_vquery *q, size_t i) {
  if (q->by_objects || s->samples[i] == UINT32_MAX) {
    mt_tally t = {0};
    mt_tally_object(s->a, i, &t);
    return q->by_objects ? t.ht : (double)t.samples;
  }
  return s->samples[i];
}

int mt_vanswer_flame(const mt_vsnap *s, const mt_vquery *q, mt_json *j) {
  if (q->focus > (int64_t)s->nfn) return -2; /* no such function */
  mt_vsel sel;
  if (mt_vsel_make(s, q, &sel)) return -1;
  int rc = -1, focused = q->focus >= 0;
  size_t n = s->nf;
  otree callees = {0}, callers = {0};
  vec tops = {0};
  uint32_t *fidx = NULL, *deepest = NULL;
  void *scratch = NULL;
  flame_ctx c = {.s = s, .q = q, .mask = sel.mask};
  uint8_t *hid = calloc(s->nfn + 1, 1);
  c.hid = hid;
  c.used_fn = calloc(s->nfn + 1, 1);
  /* W (doubles), out and fidx (uint32) in one reused scratch block */
  scratch = mt_vsnap_scratch_get(s);
  c.W = scratch;
  c.out = scratch ? (uint32_t *)(c.W + n) : NULL;
  c.gid = malloc((s->nfn + 1) * sizeof *c.gid);
  if (!hid || !c.used_fn || !scratch || !c.gid) goto done;
  memset(c.W, 0, n * sizeof *c.W);
  for (size_t k = 0; k <= s->nfn; k++) {
    c.gid[k] = NONE;
    if (q->nhide) hid[k] = (uint8_t)mt_vquery_hidden(q, mt_vsnap_fn_name(s, (uint32_t)k));
  }
  for (size_t i = 0; i < s->nobj; i++)
    if (sel.mask[i]) c.W[s->leaf[i]] += weight(s, q, i);
  for (size_t v = n; v-- > 1;) c.W[s->fparent[v]] += c.W[v];
  memset(c.out, 0xff, n * sizeof *c.out); /* NONE */
  double root_w;
  uint32_t F = focused ? (uint32_t)q->focus : NONE;
  if (!focused) {
    if (push(&tops, 0)) goto done;
    root_w = c.W[0];
  } else {
    root_w = 0;
    if (!hid[F])
      for (size_t v = 1; v < n; v++)
        if (s->ffn[v] == F && s->fouter[v] && c.W[v] > 0) {
          if (push(&tops, (uint32_t)v)) goto done;
          root_w += c.W[v];
        }
  }
  double thr = q->min * root_w;
  if (ot_add(&callees, 0, F) == NONE || grow_callees(&c, &callees, &tops, thr)) goto done;
  if (c.out[0] == NONE) c.out[0] = EXCL;
  for (size_t v = 1; v < n; v++)
    if (c.out[v] == NONE) c.out[v] = c.out[s->fparent[v]];
  if (focused) {
    fidx = c.out + n;
    deepest = malloc((tops.n + 1) * sizeof *deepest);
    if (!deepest) goto done;
    memset(fidx, 0xff, n * sizeof *fidx);
    for (size_t t = 0; t < tops.n; t++) fidx[tops.v[t]] = (uint32_t)t;
    for (size_t v = 1; v < n; v++)
      if (fidx[v] == NONE) fidx[v] = fidx[s->fparent[v]];
    if (ot_add(&callers, 0, F) == NONE || grow_callers(&c, &callers, &tops, thr, deepest))
      goto done;
    if (ot_tallies(&callers)) goto done;
  }
  if (ot_tallies(&callees)) goto done;
  for (size_t i = 0; i < s->nobj; i++) {
    if (!sel.mask[i]) continue;
    uint32_t leaf = s->leaf[i], v = c.out[leaf];
    if (v == EXCL) continue;
    mt_tally_object(s->a, i, &callees.self[v]);
    if (focused) mt_tally_object(s->a, i, &callers.self[deepest[fidx[leaf]]]);
  }
  if (finish(&callees) || (focused && finish(&callers))) goto done;
  for (size_t v = 1; v < callees.k; v++) c.used_fn[callees.fn[v]] = 1;
  for (size_t v = 1; v < callers.k; v++) c.used_fn[callers.fn[v]] = 1;
  if (focused) c.used_fn[F] = 1;
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
  free(tops.v);
  free(deepest);
  free(hid);
  free(c.used_fn);
  if (scratch) mt_vsnap_scratch_put(s, scratch);
  free(c.gid);
  free(c.gfn.v);
  free(c.gtops.v);
  free(c.gw);
  mt_vsel_free(&sel);
  return rc;
}
