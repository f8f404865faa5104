/* memtrace hotspots' list of distinct callers: its memory (the list's
 * operations are in hotspots_callers.h). */
#include "hotspots_callers.h"

#include <stdlib.h>
#include <string.h>

#include "base/containers.h"

void callers_init(callers_list *l) { memset(l, 0, sizeof *l); }

void callers_free(callers_list *l) {
  free(l->node);
  free(l->innermost);
  memset(l, 0, sizeof *l);
}

int callers_reserve(callers_list *l, size_t frames, size_t funcs) {
  if (frames + 1 > l->node_cap) {
    size_t had = l->node_cap;
    void *v = l->node;
    if (frames >= UINT32_MAX || mt__grow(&v, &l->node_cap, frames + 1, sizeof *l->node, 64) != 0)
      return -1;
    l->node = v;
    if (had == 0) l->node[0] = (callers_node){0, 0, 0, 0}; /* the empty list */
  }
  if (funcs > l->func_cap) {
    size_t had = l->func_cap;
    void *v = l->innermost;
    if (mt__grow(&v, &l->func_cap, funcs, sizeof *l->innermost, 256) != 0) return -1;
    l->innermost = v;
    memset(l->innermost + had, 0, (l->func_cap - had) * sizeof *l->innermost);
  }
  return 0;
}
