/*
 * memtrace/calltree.h - allocations as a tree of function calls: flame
 * graphs (callees, callers of a focused function), hot functions, folded
 * stacks.
 *
 * A call tree interns stacks of functions: node 0 is the root, every other
 * node a function called from its parent (a parent's id is always smaller
 * than its children's). A backtrace becomes a path by expanding each code
 * into its locations (outermost first), leaving out the codes the trace
 * never described (as memtrace's own flame graphs do) and the frames the
 * filter hides, and applying a rule to repeated functions:
 *   - MT_TREE_MERGE_ADJACENT: consecutive frames of one function are one
 *     node (the viewer's flame graph: recursion through other functions
 *     stays visible);
 *   - MT_TREE_FIRST_OCCURRENCE: each function only at its first
 *     occurrence on the path (memtrace's `flamegraph`).
 * An inverted tree holds the same paths callee first.
 *
 * A tree is built from an analysis' backtraces (mt_calltree_build), or
 * from any source of frames through a cursor (mt_calltree_new, then
 * mark/rewind/push/end per stack), which shares each stack's prefix with
 * the previous one.
 */
#ifndef MEMTRACE_CALLTREE_H
#define MEMTRACE_CALLTREE_H

#include "memtrace/analysis.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  MT_TREE_MERGE_ADJACENT = 0,
  MT_TREE_FIRST_OCCURRENCE = 1,
  /* with either rule: functions of one name are one function, whatever
   * their file (as memtrace's `flamegraph` names them); a node's function
   * is then the lowest id of that name */
  MT_TREE_BY_NAME = 2,
  /* with either rule, for a tree of every backtrace (no filter, not
   * inverted, not by name): keep what mt_calltree_extend needs (some 3 MB) */
  MT_TREE_EXTENSIBLE = 4
};

typedef struct mt_calltree mt_calltree;

/* The tree of the backtraces of the objects passing f (every backtrace of
 * the trace when f is NULL), f's hidden frames left out; `rule` is a rule,
 * with MT_TREE_BY_NAME or not. MT_OK with *out, or MT_ERR_NOMEM. */
MT_API int mt_calltree_build(const mt_analysis *a, const mt_filter *f, int rule, int inverted,
                             mt_calltree **out);
/* A tree built with MT_TREE_EXTENSIBLE from a, which has gained
 * backtraces since (a trace followed as it grows: mt_follow_read), takes
 * the new ones: the tree is then the one a build would give now. MT_OK;
 * MT_ERR_INVALID for a tree built otherwise (or from another analysis);
 * MT_ERR_NOMEM, after which the tree must be built again. After a step
 * that described codes late (mt_follow_described_late), build it again:
 * its paths through those codes have changed. */
MT_API int mt_calltree_extend(mt_calltree *t, const mt_analysis *a);
MT_API void mt_calltree_free(mt_calltree *t);

MT_API size_t mt_calltree_size(const mt_calltree *t); /* nodes, the root included */
MT_API uint32_t mt_calltree_parent(const mt_calltree *t, uint32_t node);
/* The node's function: an analysis' function id (or the caller's own
 * numbering with a cursor); UINT32_MAX for the root. */
MT_API uint32_t mt_calltree_function(const mt_calltree *t, uint32_t node);
/* The line of the node's first frame seen. */
MT_API uint32_t mt_calltree_line(const mt_calltree *t, uint32_t node);
/* A node's children, most recently added first: first child and next
 * sibling, UINT32_MAX when none. */
MT_API uint32_t mt_calltree_first_child(const mt_calltree *t, uint32_t node);
MT_API uint32_t mt_calltree_next_sibling(const mt_calltree *t, uint32_t node);

/* Per node, the tally of the objects passing f whose path ends there
 * (per_node has mt_calltree_size entries; zeroed first). For a tree built
 * from a (with f's hidden frames, or fewer objects than f keeps). */
MT_API int mt_calltree_tally(const mt_calltree *t, const mt_analysis *a, const mt_filter *f,
                             mt_tally *per_node);

/* ---- Building from any source of frames --------------------------------- */

MT_API mt_calltree *mt_calltree_new(int rule, int inverted);
/* The position after the frames pushed so far for the current stack. */
MT_API size_t mt_calltree_mark(const mt_calltree *t);
/* Back to a position marked in the current stack (0: a new stack). */
MT_API void mt_calltree_rewind(mt_calltree *t, size_t mark);
/* The next frame of the current stack, outer frames first: a function id
 * (any but UINT32_MAX) and its line (0: none). MT_OK, MT_ERR_INVALID for
 * the id UINT32_MAX, or MT_ERR_NOMEM. */
MT_API int mt_calltree_push(mt_calltree *t, uint32_t function, uint32_t line);
/* The node where the current stack's path ends (UINT32_MAX when out of
 * memory). The stack stays current: rewind for the next one. */
MT_API uint32_t mt_calltree_end(mt_calltree *t);

/* ---- Flame graphs ---------------------------------------------------------- */

/* A flame graph at function granularity over a tree built with
 * MT_TREE_MERGE_ADJACENT from every backtrace: without a focus, the tree
 * of all stacks (callees); with a focus on function F, the tree of what
 * the stacks do from their first frame in F on (callees, rooted at F) and
 * the inverted tree of how they got there (callers, rooted at F). Frames
 * the filter hides vanish (their callers and callees become adjacent, and
 * merge when they are the same function). Nodes weighing under `min` of
 * the root are cut: their weight stays in their parent's `self`. */
typedef struct mt_flame_node {
  uint32_t parent;          /* UINT32_MAX for the root                      */
  uint32_t function;        /* UINT32_MAX for the unfocused root            */
  mt_tally self, total;
  uint32_t first_child, next_sibling; /* by bytes, largest first; UINT32_MAX
                                         ends                              */
} mt_flame_node;

typedef struct mt_flame {
  mt_flame_node *callees;
  size_t ncallees;
  mt_flame_node *callers;   /* NULL without a focus                         */
  size_t ncallers;
  mt_tally total;           /* the objects passing the filter               */
  uint8_t *named;           /* per function id: named in the graph          */
  size_t nfunctions;
} mt_flame;

typedef struct mt_flame_spec {
  int64_t focus;  /* a function id, or -1                                   */
  double min;     /* fraction of the root's weight                          */
  int by_objects; /* weigh by estimated objects rather than bytes           */
} mt_flame_spec;

/* MT_OK with *out (free it with mt_flame_free), MT_ERR_INVALID for a
 * focus that is no function of the trace, or MT_ERR_NOMEM. */
MT_API int mt_flame_compute(const mt_calltree *t, const mt_analysis *a, const mt_filter *f,
                            const mt_flame_spec *spec, mt_flame **out);
MT_API void mt_flame_free(mt_flame *g);
/* A flame graph g of trace a beside the graph `base` of trace ab (the same
 * spec, ideally with min 0, so that nothing is cut there): per node of g's
 * callees (and callers), the total of the base's node reached by the same
 * path of functions (matched by name and file: ids differ between traces),
 * a zero tally where the base has none, in *callees and *callers (arrays
 * of g->ncallees and g->ncallers to free; *callers NULL without callers).
 * base NULL: all zero. MT_OK or MT_ERR_NOMEM. */
MT_API int mt_flame_match(const mt_flame *g, const mt_analysis *a, const mt_flame *base,
                          const mt_analysis *ab, mt_tally **callees, mt_tally **callers);
/* The function of trace ab named as function `focus` of trace a: its id,
 * -2 when ab has none, or focus itself when negative (no focus). */
MT_API int64_t mt_flame_base_focus(const mt_analysis *a, int64_t focus, const mt_analysis *ab);

/* ---- Hot functions --------------------------------------------------------- */

/* Per function, `self`: the objects whose innermost frame (after hiding)
 * is in it; `total`: those with it anywhere on their stack, each counted
 * once however often the function recurs. */
typedef struct mt_function_row {
  uint32_t function;
  mt_tally self, total;
} mt_function_row;

/* The first `limit` functions (0: all) with objects passing f, by self
 * bytes (or total bytes with by_total), ties by function id, over a tree
 * built with MT_TREE_MERGE_ADJACENT from every backtrace. MT_OK with *rows
 * (free it) and *n, or MT_ERR_NOMEM. */
MT_API int mt_calltree_functions(const mt_calltree *t, const mt_analysis *a, const mt_filter *f,
                                 int by_total, size_t limit, mt_function_row **rows, size_t *n);

#ifdef __cplusplus
}
#endif

#endif /* MEMTRACE_CALLTREE_H */
