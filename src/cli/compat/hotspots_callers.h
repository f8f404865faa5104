/* memtrace hotspots: the distinct functions of a stack of frames, innermost
 * first.
 *
 * An allocation's callers are the distinct functions of its backtrace's
 * frames outside the allocation point, each at its innermost frame, from
 * the innermost out: the order in which memtrace adds their pairs to the
 * heavy-hitters summary. Scanning the frames and marking the functions met
 * costs the backtrace's depth on every allocation; a recursion 2,000 frames
 * deep then costs 2,000 steps for each allocation inside it, while the
 * backtraces around it differ by a frame or two.
 *
 * The list is kept instead as the frames are pushed and popped, stack-wise:
 * a doubly linked list of the frames that are their function's innermost,
 * innermost first. Pushing a frame unlinks the frame of its function it
 * hides and links the new one at the head; popping it unlinks it (it is the
 * head again) and relinks the hidden frame where it was, whose own links
 * still name its neighbours since every change after its unlinking has been
 * undone (the "dancing links" of Knuth). Each push and pop is a few stores;
 * reading the callers walks only the distinct functions.
 *
 * Nodes are frame positions plus one; node 0 is the list's head and tail,
 * and stands for "none" in `hidden` and `innermost`. */
#ifndef MT_CLI_HOTSPOTS_CALLERS_H
#define MT_CLI_HOTSPOTS_CALLERS_H

#include <stddef.h>
#include <stdint.h>

typedef struct callers_node {
  uint32_t out, in; /* the neighbours outwards (next in the walk) and inwards */
  uint32_t func;
  uint32_t hidden; /* the frame of the same function this one unlinked, or 0 */
} callers_node;

typedef struct callers_list {
  callers_node *node; /* node_cap nodes: node 0 and one per frame */
  uint32_t *innermost; /* per function: its innermost frame's node, or 0 */
  size_t len;          /* the frames pushed */
  size_t node_cap, func_cap;
} callers_list;

/* An empty list; callers_reserve gives it room. */
void callers_init(callers_list *l);
void callers_free(callers_list *l);
/* Room for `frames` frames of functions numbered below `funcs`; -1 when
 * out of memory (the list is unchanged). */
int callers_reserve(callers_list *l, size_t frames, size_t funcs);

/* Pushes a frame of function f (below the funcs reserved), at position
 * l->len, which there is room for. */
static inline void callers_push(callers_list *l, uint32_t f) {
  callers_node *v = l->node;
  uint32_t x = (uint32_t)++l->len, old = l->innermost[f];
  if (old) { /* unlinked: its own links are kept for the pop */
    v[v[old].in].out = v[old].out;
    v[v[old].out].in = v[old].in;
  }
  uint32_t head = v[0].out;
  v[x] = (callers_node){head, 0, f, old};
  v[head].in = x;
  v[0].out = x;
  l->innermost[f] = x;
}

/* Pops the last frame pushed. */
static inline void callers_pop(callers_list *l) {
  callers_node *v = l->node;
  uint32_t x = (uint32_t)l->len--, old = v[x].hidden;
  v[0].out = v[x].out; /* x is the head */
  v[v[x].out].in = 0;
  if (old) {
    v[v[old].in].out = old;
    v[v[old].out].in = old;
  }
  l->innermost[v[x].func] = old;
}

/* Pops frames until `len` remain. */
static inline void callers_truncate(callers_list *l, size_t len) {
  while (l->len > len) callers_pop(l);
}

/* The walk over the distinct functions, innermost first:
 *   for (uint32_t x = callers_first(l); x; x = callers_next(l, x))
 *     ... callers_func(l, x) ... */
static inline uint32_t callers_first(const callers_list *l) { return l->node[0].out; }
static inline uint32_t callers_next(const callers_list *l, uint32_t x) {
  return l->node[x].out;
}
static inline uint32_t callers_func(const callers_list *l, uint32_t x) {
  return l->node[x].func;
}

#endif
