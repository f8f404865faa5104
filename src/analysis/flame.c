/* Flame graphs and hot functions on a call tree (memtrace/calltree.h).
 *
 * Costs follow the nodes kept, not the whole tree (millions of nodes on a
 * trace whose stacks are all distinct). One pass adds each selected
 * object's weight to its node and sums subtrees (W; parents have smaller
 * ids). The answer's tree is then grown top-down: a kept node stands for a
 * set of base nodes (its members); its candidate children are the members'
 * children grouped by function, a group weighing the sum of its nodes' W;
 * a group under `min` of the root is cut (its weight stays in the parent's
 * self), so cut subtrees are never visited. Hiding and the merging of a
 * function with itself make a child a member of its parent instead of a
 * group. With a focus on F, the callees root's members are F's outermost
 * nodes, and the callers tree groups those same nodes by their ancestors.
 * A last pass tallies each object (bytes and objects) into the kept node
 * its leaf falls in. */
#include <stdlib.h>
#include <string.h>

#include "calltree_internal.h"

#define NONE UINT32_MAX
#define EXCL (UINT32_MAX - 1) /* not in the graph (focus: no F above) */

/* growable vectors of uint32 */
typedef struct vec {
  uint32_t *v;
  size_t n, cap;
} vec;

static int push(vec *x, uint32_t a) {
  if (mt__reserve((void **)&x->v, x->n, &x->cap, sizeof *x->v)) return -1;
  x->v[x->n++] = a;
  return 0;
}

/* The answer's trees: kept nodes, their tallies, children by bytes. */
typedef struct otree {
  mt_flame_node *nodes;
  size_t k, cap;
} otree;

static uint32_t ot_add(otree *o, uint32_t parent, uint32_t fn) {
  if (mt__reserve((void **)&o->nodes, o->k, &o->cap, sizeof *o->nodes)) return NONE;
  mt_flame_node *nd = &o->nodes[o->k];
  memset(nd, 0, sizeof *nd);
  nd->parent = parent;
  nd->function = fn;
  nd->first_child = nd->next_sibling = NONE;
  return (uint32_t)o->k++;
}

static int by_bytes(const void *x, const void *y, void *ctx) {
  const mt_flame_node *n = ctx;
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  if (n[a].total.samples != n[b].total.samples)
    return n[a].total.samples > n[b].total.samples ? -1 : 1;
  return a < b ? -1 : 1;
}

/* Totals from the selves, and children lists in bytes order. */
static int finish(otree *o) {
  mt_flame_node *nd = o->nodes;
  for (size_t v = 0; v < o->k; v++) nd[v].total = nd[v].self;
  for (size_t v = o->k; v-- > 1;) mt_tally_add(&nd[nd[v].parent].total, &nd[v].total);
  nd[0].parent = NONE;
  uint32_t *ids = malloc(o->k * sizeof *ids);
  if (!ids) return -1;
  for (size_t v = 0; v < o->k; v++) ids[v] = (uint32_t)v;
  qsort_r(ids + 1, o->k - 1, sizeof *ids, by_bytes, nd);
  for (size_t i = o->k; i-- > 1;) {
    uint32_t v = ids[i];
    nd[v].next_sibling = nd[nd[v].parent].first_child;
    nd[nd[v].parent].first_child = v;
  }
  free(ids);
  return 0;
}

typedef struct flame_ctx {
  const mt_calltree *t;
  const mt__query *q;
  double *W;    /* per base node: weight of its subtree */
  uint32_t *out; /* per base node: its callees node (NONE unset, EXCL) */
  uint32_t *gid; /* per function: its group while a node's children are grouped */
  /* groups of the node being expanded */
  vec gfn, gtops; /* per group: function; then (group, node) pairs */
  double *gw;
  size_t gw_cap;
} flame_ctx;

static int hidden(const flame_ctx *c, uint32_t fn) { return mt__query_hidden(c->q, fn); }

static int group_of(flame_ctx *c, uint32_t fn, uint32_t *g) {
  if (c->gid[fn] != NONE) {
    *g = c->gid[fn];
    return 0;
  }
  if (mt__reserve((void **)&c->gw, c->gfn.n, &c->gw_cap, sizeof *c->gw)) return -1;
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

/* Queues the tops of the nodes kept after first_new (their members start
 * from those base nodes), in node order. */
static int queue_tops(flame_ctx *c, const otree *o, uint32_t first_new, vec *tops, vec *qstart) {
  size_t nn = o->k - first_new;
  if (!nn) return 0;
  size_t base = tops->n;
  uint32_t *cnt = calloc(nn + 1, sizeof *cnt);
  if (!cnt) return -1;
  for (size_t i = 0; i < c->gtops.n; i += 2) {
    double gv = c->gw[c->gtops.v[i]];
    if (gv < 0) cnt[(uint32_t)(-1.0 - gv) - first_new + 1]++;
  }
  for (size_t i = 1; i <= nn; i++) cnt[i] += cnt[i - 1];
  int rc = -1;
  for (size_t i = 0; i < nn; i++)
    if (push(qstart, (uint32_t)(base + cnt[i + 1]))) goto out;
  for (size_t i = 0; i < cnt[nn]; i++)
    if (push(tops, 0)) goto out;
  for (size_t i = 0; i < c->gtops.n; i += 2) {
    double gv = c->gw[c->gtops.v[i]];
    if (gv < 0) tops->v[base + cnt[(uint32_t)(-1.0 - gv) - first_new]++] = c->gtops.v[i + 1];
  }
  rc = 0;
out:
  free(cnt);
  return rc;
}

/* Grows the callees tree from root node 0, whose members (base nodes) are
 * `tops`; out[] gets each member's kept node. */
static int grow_callees(flame_ctx *c, otree *o, const vec *tops, double thr) {
  const mt_calltree *t = c->t;
  vec mem = {0}, queue = {0}, qstart = {0};
  int rc = -1;
  /* node k's tops are queue[qstart[k] .. qstart[k+1]) */
  for (size_t i = 0; i < tops->n; i++)
    if (push(&queue, tops->v[i])) goto done;
  if (push(&qstart, 0) || push(&qstart, (uint32_t)queue.n)) goto done;
  for (size_t k = 0; k < o->k; k++) {
    uint32_t kfn = o->nodes[k].function;
    mem.n = 0;
    for (uint32_t i = qstart.v[k]; i < qstart.v[k + 1]; i++)
      if (push(&mem, queue.v[i])) goto done;
    c->gfn.n = c->gtops.n = 0;
    /* members: the tops, and the children hidden or of the same function */
    for (size_t i = 0; i < mem.n; i++) {
      uint32_t m = mem.v[i];
      c->out[m] = (uint32_t)k;
      for (uint32_t ch = t->first[m]; ch != NONE; ch = t->next[ch]) {
        if (c->W[ch] <= 0) continue; /* nothing selected below */
        uint32_t f = t->fn[ch], g;
        if (hidden(c, f) || f == kfn) {
          if (push(&mem, ch)) goto done;
          continue;
        }
        if (group_of(c, f, &g) || push(&c->gtops, g) || push(&c->gtops, ch)) goto done;
        c->gw[g] += c->W[ch];
      }
    }
    /* kept groups become nodes (their tops queued); cut ones stay in k */
    uint32_t first_new = (uint32_t)o->k;
    if (keep_groups(c, o, (uint32_t)k, thr) || queue_tops(c, o, first_new, &queue, &qstart))
      goto done;
  }
  rc = 0;
done:
  free(mem.v);
  free(queue.v);
  free(qstart.v);
  return rc;
}

/* Grows the callers tree: root node 0's members are F's outermost nodes
 * (tops); a member is (top, ancestor reached); its caller is the next
 * ancestor neither hidden nor of the node's function. deepest[t] gets the
 * deepest kept node top t reached. */
static int grow_callers(flame_ctx *c, otree *o, const vec *tops, double thr, uint32_t *deepest) {
  const mt_calltree *t = c->t;
  vec qt = {0}, qa = {0}, qstart = {0}, gm = {0};
  int rc = -1;
  for (size_t i = 0; i < tops->n; i++)
    if (push(&qt, (uint32_t)i) || push(&qa, tops->v[i])) goto done;
  if (push(&qstart, 0) || push(&qstart, (uint32_t)qt.n)) goto done;
  for (size_t k = 0; k < o->k; k++) {
    uint32_t kfn = o->nodes[k].function;
    c->gfn.n = 0;
    gm.n = 0;
    for (uint32_t i = qstart.v[k]; i < qstart.v[k + 1]; i++) {
      uint32_t top = qt.v[i], p = t->parent[qa.v[i]], g;
      deepest[top] = (uint32_t)k;
      while (p != 0 && (hidden(c, t->fn[p]) || t->fn[p] == kfn)) p = t->parent[p];
      if (p == 0) continue; /* the outermost frame: the weight stays here */
      if (group_of(c, t->fn[p], &g) || push(&gm, g) || push(&gm, i) || push(&gm, p)) goto done;
      c->gw[g] += c->W[tops->v[top]];
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

void mt_flame_free(mt_flame *g) {
  if (!g) return;
  free(g->callees);
  free(g->callers);
  free(g->named);
  free(g);
}

/* Each selected object's weight into its leaf's W, subtrees summed: from
 * the objects' tallies by backtrace when given (per_bt), else object by
 * object. */
static void weigh(const mt__query *q, const mt_calltree *t, int by_objects,
                  const mt_tally *per_bt, double *W) {
  const mt_analysis *a = q->a;
  memset(W, 0, t->n * sizeof *W);
  for (size_t b = 0; per_bt && b < a->nbt; b++) {
    uint32_t v = t->leaf[b];
    if (v == NONE || !per_bt[b].objects || (q->bt_pass && !q->bt_pass[b])) continue;
    W[v] += by_objects ? mt_tally_ht(&per_bt[b]) : (double)per_bt[b].samples;
  }
  for (size_t i = q->lo; !per_bt && i < q->hi; i++) {
    uint32_t v = mt__passing_leaf(q, t, i);
    if (v == NONE) continue;
    if (by_objects) {
      mt_tally one = {0};
      mt__tally_object(a, i, &one);
      W[v] += mt_tally_ht(&one);
    } else {
      W[v] += (double)mt__obj_samples(a, i);
    }
  }
  for (size_t v = t->n; v-- > 1;) W[t->parent[v]] += W[v];
}

int mt_flame_compute(const mt_calltree *t, const mt_analysis *a, const mt_filter *f,
                     const mt_flame_spec *spec, mt_flame **out) {
  *out = NULL;
  if (spec->focus >= (int64_t)a->nfn) return MT_ERR_INVALID;
  if (!t->leaf || t->inverted || t->rule != MT_TREE_MERGE_ADJACENT) return MT_ERR_INVALID;
  int focused = spec->focus >= 0, rc = MT_ERR_NOMEM;
  size_t n = t->n, scratch_bytes = n * (sizeof(double) + 2 * sizeof(uint32_t));
  otree callees = {0}, callers = {0};
  vec tops = {0};
  mt_tally *own_bt = NULL;
  uint32_t *fidx = NULL, *deepest = NULL;
  mt__query q;
  int qrc = mt__query_init(&q, a, f);
  if (qrc != MT_OK) return qrc;
  mt_flame *g = calloc(1, sizeof *g);
  /* W (doubles), out and fidx (uint32) in one reused scratch block */
  void *scratch = mt__calltree_scratch_get(t, scratch_bytes);
  flame_ctx c = {.t = t, .q = &q};
  c.W = scratch;
  c.out = scratch ? (uint32_t *)(c.W + n) : NULL;
  c.gid = malloc((a->nfn + 1) * sizeof *c.gid);
  if (!g || !scratch || !c.gid || !(g->named = calloc(a->nfn + 1, 1))) goto done;
  g->nfunctions = a->nfn;
  memset(c.gid, 0xff, (a->nfn + 1) * sizeof *c.gid);
  /* Few backtraces against the objects: one pass sums the objects by
   * backtrace (every object's sums are kept for a filter without
   * conditions on objects' columns), and the graph reads those sums. */
  const mt_tally *per_bt = NULL;
  if (!mt__by_backtrace(&q)) {
    /* object by object */
  } else if (q.every_object && q.lo == 0 && q.hi == a->nobj) {
    per_bt = mt__bt_all(a);
  } else if ((own_bt = malloc((a->nbt + 1) * sizeof *own_bt))) {
    if (mt__tally_backtraces(&q, own_bt) == 0) per_bt = own_bt;
  }
  weigh(&q, t, spec->by_objects, per_bt, c.W);
  memset(c.out, 0xff, n * sizeof *c.out); /* NONE */
  double root_w = 0;
  uint32_t F = focused ? (uint32_t)spec->focus : NONE;
  if (!focused) {
    if (push(&tops, 0)) goto done;
    root_w = c.W[0];
  } else if (!hidden(&c, F)) {
    for (size_t v = 1; v < n; v++)
      if (t->fn[v] == F && t->outer[v] && c.W[v] > 0) {
        if (push(&tops, (uint32_t)v)) goto done;
        root_w += c.W[v];
      }
  }
  double thr = spec->min * root_w;
  if (ot_add(&callees, NONE, F) == NONE || grow_callees(&c, &callees, &tops, thr)) goto done;
  if (c.out[0] == NONE) c.out[0] = EXCL;
  for (size_t v = 1; v < n; v++)
    if (c.out[v] == NONE) c.out[v] = c.out[t->parent[v]];
  if (focused) {
    fidx = c.out + n;
    deepest = malloc((tops.n + 1) * sizeof *deepest);
    if (!deepest) goto done;
    memset(fidx, 0xff, n * sizeof *fidx);
    for (size_t k = 0; k < tops.n; k++) fidx[tops.v[k]] = (uint32_t)k;
    for (size_t v = 1; v < n; v++)
      if (fidx[v] == NONE) fidx[v] = fidx[t->parent[v]];
    if (ot_add(&callers, NONE, F) == NONE || grow_callers(&c, &callers, &tops, thr, deepest))
      goto done;
  }
  /* every object: the trace's total as loaded (to the last bit the one
   * the summary gives, summed object by object) */
  int every = mt_filter_selects_all(f);
  if (per_bt && every) g->total = a->all;
  for (size_t b = 0; per_bt && b < a->nbt; b++) {
    const mt_tally *bt = &per_bt[b];
    if (!bt->objects || (q.bt_pass && !q.bt_pass[b])) continue;
    if (!every) mt_tally_add(&g->total, bt);
    uint32_t leaf = t->leaf[b];
    if (leaf == NONE || c.out[leaf] == EXCL) continue;
    mt_tally_add(&callees.nodes[c.out[leaf]].self, bt);
    if (focused) mt_tally_add(&callers.nodes[deepest[fidx[leaf]]].self, bt);
  }
  for (size_t i = q.lo; !per_bt && i < q.hi; i++) {
    if (!mt__query_object(&q, i)) continue;
    mt__tally_object(a, i, &g->total);
    uint32_t leaf = t->leaf[a->bt[i]];
    if (leaf == NONE || c.out[leaf] == EXCL) continue;
    mt__tally_object(a, i, &callees.nodes[c.out[leaf]].self);
    if (focused) mt__tally_object(a, i, &callers.nodes[deepest[fidx[leaf]]].self);
  }
  if (finish(&callees) || (focused && finish(&callers))) goto done;
  for (size_t v = 1; v < callees.k; v++) g->named[callees.nodes[v].function] = 1;
  for (size_t v = 1; v < callers.k; v++) g->named[callers.nodes[v].function] = 1;
  if (focused) g->named[F] = 1;
  g->callees = callees.nodes;
  g->ncallees = callees.k;
  g->callers = callers.nodes;
  g->ncallers = callers.k;
  callees.nodes = callers.nodes = NULL;
  *out = g;
  g = NULL;
  rc = MT_OK;
done:
  mt__query_free(&q);
  free(own_bt);
  free(callees.nodes);
  free(callers.nodes);
  free(tops.v);
  free(deepest);
  if (scratch) mt__calltree_scratch_put(t, scratch, scratch_bytes);
  free(c.gid);
  free(c.gfn.v);
  free(c.gtops.v);
  free(c.gw);
  mt_flame_free(g);
  return rc;
}

/* ---- hot functions ------------------------------------------------------------- */

typedef struct fn_order {
  const mt_function_row *rows;
  int by_total;
} fn_order;

static int by_weight(const void *x, const void *y, void *ctx) {
  const fn_order *o = ctx;
  const mt_function_row *a = x, *b = y;
  (void)o->rows;
  uint64_t sa = o->by_total ? a->total.samples : a->self.samples;
  uint64_t sb = o->by_total ? b->total.samples : b->self.samples;
  if (sa != sb) return sa > sb ? -1 : 1;
  return a->function < b->function ? -1 : a->function > b->function;
}

/* A function's self tally is its objects' whose innermost frame left
 * (after hide) it is; its total, the objects with it on their stack, each
 * once: the subtrees of its outermost nodes. Two ways there: walking each
 * passing object's path up the tree (cost by objects times depth: a
 * selective filter's way), given up past `budget` steps; or sums per node
 * swept up the tree, two tally components at a time in 16 bytes a node
 * (the flame graph's reused block: a 12M-node tree's tallies whole would
 * take half a gigabyte). */
static int functions_by_walks(const mt__query *q, const mt_calltree *t, mt_function_row *fr,
                              size_t budget) {
  const mt_analysis *a = q->a;
  size_t steps = 0;
  for (size_t i = q->lo; i < q->hi; i++) {
    uint32_t v = mt__passing_leaf(q, t, i);
    if (v == NONE) continue;
    mt_tally ti = {0};
    mt__tally_object(a, i, &ti);
    int self_done = 0;
    for (uint32_t u = v; u != 0; u = t->parent[u]) {
      if (++steps > budget) return 1;
      if (mt__query_hidden(q, t->fn[u])) continue;
      if (!self_done) mt_tally_add(&fr[t->fn[u]].self, &ti), self_done = 1;
      if (t->outer[u]) mt_tally_add(&fr[t->fn[u]].total, &ti);
    }
  }
  return 0;
}

typedef union pair {
  uint64_t u[2];
  double d[2];
} pair;

/* Component pair k of a tally: samples and objects, the Horvitz-Thompson
 * sum, its variance's (fixed point, two words each), the largest weight. */
enum { NPAIRS = 4 };

static void pair_add(int k, pair *to, const mt_tally *t) {
  if (k == 0) to->u[0] += t->samples, to->u[1] += t->objects;
  else if (k == 1) mt_tally_fx_add(to->u, t->ht_fx);
  else if (k == 2) mt_tally_fx_add(to->u, t->var_fx);
  else if (t->w_max > to->d[0]) to->d[0] = t->w_max;
}

static void pair_merge(int k, pair *to, const pair *p) {
  if (k == 0) to->u[0] += p->u[0], to->u[1] += p->u[1];
  else if (k < 3) mt_tally_fx_add(to->u, p->u);
  else if (p->d[0] > to->d[0]) to->d[0] = p->d[0];
}

static void pair_to_tally(int k, mt_tally *to, const pair *p) {
  mt_tally t = {0};
  if (k == 0) t.samples = p->u[0], t.objects = p->u[1];
  else if (k == 1) t.ht_fx[0] = p->u[0], t.ht_fx[1] = p->u[1];
  else if (k == 2) t.var_fx[0] = p->u[0], t.var_fx[1] = p->u[1];
  else t.w_max = p->d[0];
  mt_tally_add(to, &t);
}

static int functions_by_sweeps(const mt__query *q, const mt_calltree *t, mt_function_row *fr) {
  const mt_analysis *a = q->a;
  size_t n = t->n, bytes = n * sizeof(pair);
  pair *acc = mt__calltree_scratch_get(t, bytes);
  uint32_t *vis = q->fn_hidden ? malloc(n * sizeof *vis) : NULL;
  if (!acc || (q->fn_hidden && !vis)) {
    free(acc);
    free(vis);
    return -1;
  }
  if (vis) { /* each node's innermost frame not hidden */
    vis[0] = 0;
    for (size_t v = 1; v < n; v++)
      vis[v] = mt__query_hidden(q, t->fn[v]) ? vis[t->parent[v]] : (uint32_t)v;
  }
  for (int k = 0; k < NPAIRS; k++) {
    memset(acc, 0, bytes);
    for (size_t i = q->lo; i < q->hi; i++) {
      uint32_t v = mt__passing_leaf(q, t, i);
      if (v == NONE) continue;
      mt_tally ti = {0};
      mt__tally_object(a, i, &ti);
      pair_add(k, &acc[v], &ti);
    }
    for (size_t v = 1; v < n; v++) {
      uint32_t u = vis ? vis[v] : (uint32_t)v;
      if (u) pair_to_tally(k, &fr[t->fn[u]].self, &acc[v]);
    }
    for (size_t v = n; v-- > 1;) pair_merge(k, &acc[t->parent[v]], &acc[v]);
    for (size_t v = 1; v < n; v++)
      if (t->outer[v] && !mt__query_hidden(q, t->fn[v])) pair_to_tally(k, &fr[t->fn[v]].total, &acc[v]);
  }
  mt__calltree_scratch_put(t, acc, bytes);
  free(vis);
  return 0;
}

int mt_calltree_functions(const mt_calltree *t, const mt_analysis *a, const mt_filter *f,
                          int by_total, size_t limit, mt_function_row **rows, size_t *nrows) {
  /* a step of a walk costs a few times less than a node's share of the
   * sweeps (four passes of four touches each, and the objects' tallies) */
  return mt__calltree_functions(t, a, f, by_total, limit, 8 * t->n, rows, nrows);
}

int mt__calltree_functions(const mt_calltree *t, const mt_analysis *a, const mt_filter *f,
                           int by_total, size_t limit, size_t walk_budget, mt_function_row **rows,
                           size_t *nrows) {
  *rows = NULL;
  *nrows = 0;
  if (!t->leaf) return MT_ERR_INVALID;
  mt__query q;
  int qrc = mt__query_init(&q, a, f);
  if (qrc != MT_OK) return qrc;
  size_t nf = a->nfn;
  mt_function_row *fr = calloc(nf + 1, sizeof *fr);
  int rc = MT_ERR_NOMEM;
  if (!fr) goto out;
  if (functions_by_walks(&q, t, fr, walk_budget)) {
    memset(fr, 0, (nf + 1) * sizeof *fr);
    if (functions_by_sweeps(&q, t, fr)) goto out;
  }
  for (size_t k = 0; k < nf; k++) fr[k].function = (uint32_t)k;
  size_t m = 0;
  for (size_t k = 0; k < nf; k++)
    if (fr[k].total.objects) fr[m++] = fr[k];
  fn_order o = {fr, by_total};
  qsort_r(fr, m, sizeof *fr, by_weight, &o);
  *nrows = limit && limit < m ? limit : m;
  *rows = fr;
  fr = NULL;
  rc = MT_OK;
out:
  mt__query_free(&q);
  free(fr);
  return rc;
}
