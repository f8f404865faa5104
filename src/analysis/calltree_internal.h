/* The call tree's representation (calltree.c), shared with the answers
 * computed on it (flame.c). */
#ifndef MT_ANALYSIS_CALLTREE_INTERNAL_H
#define MT_ANALYSIS_CALLTREE_INTERNAL_H

#include <pthread.h>

#include "analysis_internal.h"
#include "memtrace/calltree.h"

/* One frame of the current stack: the node after it, and the function it
 * kept (UINT32_MAX: none, the rule merged or skipped it). */
typedef struct mt__tree_step {
  uint32_t node, fn, line;
  uint32_t last; /* the last function kept on the path up to here */
} mt__tree_step;

struct mt__tree_memo {
  uint32_t from, code, to;
};

struct mt_calltree {
  int rule, inverted;
  size_t n, cap;
  uint32_t *parent, *fn;
  uint32_t *line;         /* NULL while every node's line is 0 */
  uint32_t *first, *next; /* children lists, most recently used first */
  uint8_t *nkids;         /* saturates at UINT8_MAX: only "more than WIDE" matters */
  uint8_t *outer;         /* 1 if no ancestor has the same function */
  mt__u64map wide;        /* parent << 32 | function -> child */
  /* the current stack */
  mt__tree_step *path;
  size_t depth, path_cap;
  uint32_t *pos;          /* per function: 1 + the step of its outermost kept
                             frame when last pushed (on_path() checks it) */
  size_t pos_cap;
  /* from an analysis: each backtrace id's node (UINT32_MAX: not in it) */
  uint32_t *leaf;
  size_t nbt, leaf_cap;
  struct mt__tree_memo *memo; /* while building (and extending: kept with ext) */
  struct mt__tree_feed *ext;  /* MT_TREE_EXTENSIBLE: where the walk stopped */
  uint32_t *canon;            /* while building by name: function -> its name's */
  /* a block the answers reuse between calls (mt__calltree_scratch_*) */
  pthread_mutex_t lock;
  void *scratch;
  size_t scratch_bytes;
};

/* The node where object i's backtrace ends, if the object passes the query
 * and the tree holds its backtrace; else UINT32_MAX. */
static inline uint32_t mt__passing_leaf(const mt__query *q, const mt_calltree *t, size_t i) {
  return mt__query_object(q, i) ? t->leaf[q->a->bt[i]] : UINT32_MAX;
}

/* Per-node scratch for an answer (the flame graph needs 16 bytes a node,
 * 190 MB on a tree of 12M nodes): the block the last answer gave back when
 * it is large enough, else a new one; contents undefined. Fresh memory of
 * that size per answer cost more in page faults than the answer. NULL when
 * out of memory. Give it back with mt__calltree_scratch_put (one block is
 * kept). */
void *mt__calltree_scratch_get(const mt_calltree *t, size_t bytes);
void mt__calltree_scratch_put(const mt_calltree *t, void *p, size_t bytes);

/* mt_calltree_functions, walking objects' paths for at most walk_budget
 * steps before sweeping the tree instead (the public function's budget:
 * 8 steps a node). */
int mt__calltree_functions(const mt_calltree *t, const mt_analysis *a, const mt_filter *f,
                           int by_total, size_t limit, size_t walk_budget, mt_function_row **rows,
                           size_t *n);

#endif
