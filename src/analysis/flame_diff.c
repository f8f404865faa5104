/* A flame graph beside another trace's (memtrace/calltree.h): each node
 * matched to the node of the base graph reached by the same path of
 * functions, named the same (ids differ between traces). */
#include <stdlib.h>
#include <string.h>

#include "memtrace/calltree.h"

static int same_function(const mt_analysis *a, uint32_t fa, const mt_analysis *b, uint32_t fb) {
  if (fa == UINT32_MAX || fb == UINT32_MAX) return fa == fb;
  return strcmp(mt_analysis_function_name(a, fa), mt_analysis_function_name(b, fb)) == 0 &&
         strcmp(mt_analysis_function_file(a, fa), mt_analysis_function_file(b, fb)) == 0;
}

/* out[i]: the base tally of tree g's node i (g and base of n and nb nodes,
 * node 0 the root, each node after its parent). */
static int match_tree(const mt_flame_node *g, size_t n, const mt_analysis *a,
                      const mt_flame_node *base, size_t nb, const mt_analysis *ab,
                      mt_tally *out) {
  uint32_t *to = malloc((n ? n : 1) * sizeof *to); /* g's node -> base node, or UINT32_MAX */
  if (!to) return MT_ERR_NOMEM;
  memset(out, 0, n * sizeof *out);
  for (size_t i = 0; i < n; i++) {
    to[i] = UINT32_MAX;
    if (i == 0) {
      if (nb && same_function(a, g[0].function, ab, base[0].function)) to[0] = 0;
    } else if (to[g[i].parent] != UINT32_MAX) {
      for (uint32_t c = base[to[g[i].parent]].first_child; c != UINT32_MAX;
           c = base[c].next_sibling)
        if (same_function(a, g[i].function, ab, base[c].function)) {
          to[i] = c;
          break;
        }
    }
    if (to[i] != UINT32_MAX) out[i] = base[to[i]].total;
  }
  free(to);
  return MT_OK;
}

int mt_flame_match(const mt_flame *g, const mt_analysis *a, const mt_flame *base,
                   const mt_analysis *ab, mt_tally **callees, mt_tally **callers) {
  *callees = calloc(g->ncallees ? g->ncallees : 1, sizeof **callees);
  *callers = g->callers ? calloc(g->ncallers ? g->ncallers : 1, sizeof **callers) : NULL;
  int rc = *callees && (*callers || !g->callers) ? MT_OK : MT_ERR_NOMEM;
  if (rc == MT_OK && base)
    rc = match_tree(g->callees, g->ncallees, a, base->callees, base->ncallees, ab, *callees);
  if (rc == MT_OK && base && g->callers && base->callers)
    rc = match_tree(g->callers, g->ncallers, a, base->callers, base->ncallers, ab, *callers);
  if (rc != MT_OK) {
    free(*callees);
    free(*callers);
    *callees = *callers = NULL;
  }
  return rc;
}

int64_t mt_flame_base_focus(const mt_analysis *a, int64_t focus, const mt_analysis *ab) {
  if (focus < 0) return focus;
  size_t n = mt_analysis_function_count(ab);
  for (size_t f = 0; f < n; f++)
    if (same_function(a, (uint32_t)focus, ab, (uint32_t)f)) return (int64_t)f;
  return -2;
}
