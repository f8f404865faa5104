/* Per-unit indexes of the functions with code (scopes.h).
 *
 * A subprogram or inlined subroutine with address ranges is a node; its
 * parent is the nearest such DIE above it. The innermost function around
 * an address is the deepest node whose ranges contain it (an inlined
 * subroutine lies within the code it was inlined into).
 *
 * Built in two steps, pruned as libdw's scope search prunes (elfutils
 * 0.188 libdw/dwarf_getscopes.c and libdw_visit_scopes.c, as facts: it
 * descends only into DIEs whose code holds the address, among those that
 * may hold scopes). A unit's first code indexes its outer functions, those
 * with code not within another: each one's own DIEs (parameters,
 * variables, call sites, lexical blocks, inlined code: most of a unit,
 * which the producer's DW_AT_sibling lets libdw pass over) wait, and DIEs
 * without code (namespaces, classes, declarations) are not descended. An
 * outer function's own DIEs are indexed, all of them, when a code first
 * falls in it. A program's samples name a few functions of each unit they
 * pass through (a CPython built with -g: ~100 codes in ~30 units), so most
 * of each unit is never indexed. */
#include "scopes.h"

#include <dwarf.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct range {
  uint64_t lo, hi; /* [lo, hi) */
  uint64_t reach;  /* the highest hi of this and every range before it */
  int32_t node;
  int32_t depth; /* of the node's DIE in the unit's tree */
} range;

/* Ranges sorted by lo, then depth, each with its reach. */
typedef struct ranges {
  range *v;
  size_t n, cap;
} ranges;

typedef struct node {
  Dwarf_Die die;
  int32_t parent; /* the enclosing node, -1: none */
  int32_t depth;  /* of its DIE in the unit's tree */
  int subprogram;
  int inner_done; /* an outer node: its own DIEs indexed (into inner) */
  ranges inner;   /* an outer node's: the ranges of the nodes within it */
} node;

struct mt__cu_scopes {
  node *nodes;
  size_t nnodes, nodes_cap;
  ranges outer; /* the outer nodes' ranges */
  int failed;   /* out of memory, or a unit this index does not follow */
};

static int may_have_scopes(int tag) {
  switch (tag) {
  case DW_TAG_compile_unit:
  case DW_TAG_module:
  case DW_TAG_lexical_block:
  case DW_TAG_with_stmt:
  case DW_TAG_catch_block:
  case DW_TAG_try_block:
  case DW_TAG_entry_point:
  case DW_TAG_inlined_subroutine:
  case DW_TAG_subprogram:
  case DW_TAG_namespace:
  case DW_TAG_class_type:
  case DW_TAG_structure_type:
    return 1;
  default:
    return 0;
  }
}

/* A level of the walk: the DIE it is at, and the node its DIEs lie in. */
typedef struct level {
  Dwarf_Die die;
  int32_t parent;
} level;

/* Adds `die` (tag `tag`, at tree depth `depth`, in node `parent`) if it is
 * a function with code, its ranges to rs; returns the node its children
 * lie in. */
static int32_t add(mt__cu_scopes *c, ranges *rs, Dwarf_Die *die, int tag, int32_t parent,
                   int depth) {
  if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine) return parent;
  Dwarf_Addr base, start, end;
  ptrdiff_t off = 0;
  int32_t id = (int32_t)c->nnodes, here = parent;
  while ((off = dwarf_ranges(die, off, &base, &start, &end)) > 0) {
    if (start >= end) continue;
    if (here != id) {
      if (mt__reserve((void **)&c->nodes, c->nnodes, &c->nodes_cap, sizeof *c->nodes)) break;
      c->nodes[c->nnodes++] = (node){.die = *die, .parent = parent, .depth = depth,
                                     .subprogram = tag == DW_TAG_subprogram};
      here = id;
    }
    if (mt__reserve((void **)&rs->v, rs->n, &rs->cap, sizeof *rs->v)) break;
    rs->v[rs->n++] = (range){start, end, 0, id, depth};
  }
  if (off > 0) c->failed = 1; /* out of memory */
  return here;
}

/* Whether die (tag `tag`, not a function with code) has code of its own. */
static int has_code(Dwarf_Die *die, int tag) {
  if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) return 0; /* add() looked */
  Dwarf_Addr base, start, end;
  ptrdiff_t off = 0;
  while ((off = dwarf_ranges(die, off, &base, &start, &end)) > 0)
    if (start < end) return 1;
  return 0;
}

/* The DIEs from `first` and its siblings down, depth first (the first at
 * tree depth `depth`, in node `parent`), their functions' ranges into rs.
 * `outer`: stop at functions with code, whose own DIEs wait (inner_done
 * 0); else walk everything. On a stack of its own, not the thread's: this
 * runs inside the program's malloc, maybe on a small thread stack. */
static void visit(mt__cu_scopes *c, ranges *rs, const Dwarf_Die *first, int32_t parent, int depth,
                  int outer) {
  level *stack = NULL;
  size_t n = 0, cap = 0;
  if (mt__reserve((void **)&stack, n, &cap, sizeof *stack)) c->failed = 1;
  else stack[n++] = (level){*first, parent};
  while (n > 0 && !c->failed) {
    level *l = &stack[n - 1];
    Dwarf_Die die = l->die;
    int32_t in = l->parent;
    int d = depth + (int)n - 1;
    if (dwarf_siblingof(&l->die, &l->die) != 0) n--; /* the level is done after this one */
    int tag = dwarf_tag(&die);
    if (tag == DW_TAG_imported_unit) { /* a partial unit's DIEs count here too */
      c->failed = 1;
      break;
    }
    if (!may_have_scopes(tag)) continue;
    int32_t here = add(c, rs, &die, tag, in, d);
    /* Outer: a function with code, its DIEs wait; a DIE without code,
     * nothing under it is searched (libdw's search prunes it too). */
    if (outer && (here != in || !has_code(&die, tag))) continue;
    Dwarf_Die child;
    if (!c->failed && dwarf_child(&die, &child) == 0) {
      if (mt__reserve((void **)&stack, n, &cap, sizeof *stack)) c->failed = 1;
      else stack[n++] = (level){child, here};
    }
  }
  free(stack);
}

static int by_lo(const void *a, const void *b) {
  const range *x = a, *y = b;
  if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
  return (x->depth > y->depth) - (x->depth < y->depth);
}

static void sort_ranges(ranges *rs) {
  if (rs->n > 1) qsort(rs->v, rs->n, sizeof *rs->v, by_lo); /* v is NULL when empty */
  uint64_t reach = 0;
  for (size_t i = 0; i < rs->n; i++) {
    if (rs->v[i].hi > reach) reach = rs->v[i].hi;
    rs->v[i].reach = reach;
  }
}

static mt__cu_scopes *build(Dwarf_Die *cu) {
  mt__cu_scopes *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  Dwarf_Die first;
  if (dwarf_child(cu, &first) == 0) visit(c, &c->outer, &first, -1, 1, 1);
  if (!c->failed) sort_ranges(&c->outer);
  return c;
}

/* Indexes outer node k's own DIEs. */
static void index_inner(mt__cu_scopes *c, int32_t k) {
  c->nodes[k].inner_done = 1;
  Dwarf_Die first, die = c->nodes[k].die;
  ranges rs = {0};
  if (dwarf_child(&die, &first) == 0) visit(c, &rs, &first, k, c->nodes[k].depth + 1, 0);
  sort_ranges(&rs);
  c->nodes[k].inner = rs; /* c->nodes may have moved */
}

static void cu_free(mt__cu_scopes *c) {
  if (!c) return;
  for (size_t i = 0; i < c->nnodes; i++) free(c->nodes[i].inner.v);
  free(c->nodes);
  free(c->outer.v);
  free(c);
}

/* The deepest node with a range of rs containing pc, else `none`. */
static int32_t deepest(const ranges *rs, uint64_t pc, int32_t none) {
  size_t lo = 0, hi = rs->n; /* ranges [0, lo) start at or below pc */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (rs->v[mid].lo <= pc) lo = mid + 1;
    else hi = mid;
  }
  int32_t best = none, best_depth = -1;
  for (size_t i = lo; i-- > 0 && rs->v[i].reach > pc;) {
    const range *r = &rs->v[i];
    if (pc < r->hi && r->depth > best_depth) best = r->node, best_depth = r->depth;
  }
  return best;
}

static int lookup(mt__cu_scopes *c, uint64_t pc, Dwarf_Die *out, int max) {
  int32_t best = deepest(&c->outer, pc, -1);
  if (best >= 0) {
    if (!c->nodes[best].inner_done) index_inner(c, best);
    if (c->failed) return -1;
    best = deepest(&c->nodes[best].inner, pc, best);
  }
  int n = 0;
  for (int32_t k = best; k >= 0 && n < max; k = c->nodes[k].parent) {
    out[n++] = c->nodes[k].die;
    if (c->nodes[k].subprogram) break;
  }
  return n;
}

int mt__scopes_at(mt__scopes *s, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *out, int max) {
  uint64_t key = (uint64_t)(uintptr_t)cu->addr;
  uint32_t *ix = mt__u64map_get(&s->index, key);
  mt__cu_scopes *c;
  if (ix) {
    c = s->v[*ix - 1]; /* stored + 1 */
  } else {
    if (mt__reserve((void **)&s->v, s->n, &s->cap, sizeof *s->v)) return -1;
    if (!(c = build(cu))) return -1;
    if (mt__u64map_put(&s->index, key, (uint32_t)s->n)) {
      cu_free(c);
      return -1;
    }
    s->v[s->n++] = c;
  }
  return c->failed ? -1 : lookup(c, pc, out, max);
}

int mt__scopes_by_libdw(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *out, int max) {
  Dwarf_Die *scopes = NULL;
  int nscopes = dwarf_getscopes(cu, pc, &scopes);
  if (nscopes > 0) {
    Dwarf_Die inner = scopes[0];
    free(scopes);
    scopes = NULL;
    nscopes = dwarf_getscopes_die(&inner, &scopes);
  }
  int n = 0;
  for (int i = 0; i < nscopes && n < max; i++) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine) continue;
    out[n++] = scopes[i];
    if (tag == DW_TAG_subprogram) break;
  }
  free(scopes);
  return n;
}

void mt__scopes_clear(mt__scopes *s) {
  for (size_t i = 0; i < s->n; i++) cu_free(s->v[i]);
  free(s->v);
  mt__u64map_free(&s->index);
  *s = (mt__scopes){0};
}
