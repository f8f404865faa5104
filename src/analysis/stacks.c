/* The stack tree, built from the backtrace log on first use.
 *
 * Loading keeps each object's backtrace only as a delta against the
 * previous one (a few bytes); tools that group by allocation site never need
 * more. The first query about stacks replays the log once and interns every
 * backtrace as a path in a tree of (parent, code) nodes, so that a stack id
 * names a distinct backtrace and parents have smaller ids than children. */
#include <stdlib.h>

#include "analysis_internal.h"

static int stack_child(mt_analysis *a, uint32_t parent, uint32_t code, uint32_t *out) {
  uint64_t key = (uint64_t)parent << 32 | code;
  uint32_t *ix = mt__u64map_get(&a->st_index, key);
  if (ix) {
    *out = *ix - 1;
    return 0;
  }
  size_t n = a->nstacks;
  if (n >= UINT32_MAX - 1) return -1;
  if (n == a->st_cap) {
    size_t nc = a->st_cap * 2;
    uint32_t *p = realloc(a->st_parent, nc * sizeof *p);
    if (p) a->st_parent = p;
    uint32_t *c = realloc(a->st_code, nc * sizeof *c);
    if (c) a->st_code = c;
    uint32_t *d = realloc(a->st_depth, nc * sizeof *d);
    if (d) a->st_depth = d;
    if (!p || !c || !d) return -1;
    a->st_cap = nc;
  }
  a->st_parent[n] = parent;
  a->st_code[n] = code;
  a->st_depth[n] = a->st_depth[parent] + 1;
  if (mt__u64map_put(&a->st_index, key, (uint32_t)n)) return -1;
  a->nstacks++;
  *out = (uint32_t)n;
  return 0;
}

static uint64_t read_uint(const uint8_t **p) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    uint8_t b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (b < 0x80) return v;
  }
}

static int build(mt_analysis *a) {
  uint32_t *stack = malloc((a->nobj + 1) * sizeof *stack);
  uint32_t *path = NULL; /* node of each frame of the current backtrace */
  size_t cap = 0;
  if (!stack) return -1;
  const uint8_t *p = a->log;
  for (size_t i = 0; i < a->nobj; i++) {
    size_t shared = (size_t)read_uint(&p), fresh = (size_t)read_uint(&p);
    if (shared + fresh > cap) {
      cap = (shared + fresh) * 2;
      uint32_t *np = realloc(path, cap * sizeof *np);
      if (!np) goto fail;
      path = np;
    }
    uint32_t node = shared ? path[shared - 1] : 0;
    for (size_t j = 0; j < fresh; j++) {
      if (stack_child(a, node, (uint32_t)read_uint(&p), &node)) goto fail;
      path[shared + j] = node;
    }
    stack[i] = node;
  }
  free(path);
  a->stack = stack;
  return 0;
fail:
  free(path);
  free(stack);
  return -1;
}

int mt__ensure_stacks(const mt_analysis *ca) {
  mt_analysis *a = (mt_analysis *)ca; /* building is invisible to callers */
  pthread_mutex_lock(&a->stacks_lock);
  if (!a->stacks_built) {
    a->stacks_built = build(a) == 0 ? 1 : -1;
    /* The tree is complete and never grows again: its (parent, code) index
     * (the largest part of it, ~30 bytes per stack) is only for building,
     * so the memory goes back before the queries that need the tree
     * allocate theirs (a tally per stack, say). */
    mt__u64map_free(&a->st_index);
  }
  int ok = a->stacks_built;
  pthread_mutex_unlock(&a->stacks_lock);
  return ok > 0 ? 0 : -1;
}

size_t mt_analysis_object_backtrace(const mt_analysis *a, size_t i, uint32_t *out,
                                    size_t cap) {
  /* Replay from the nearest full record: at most MT__LOG_CHECKPOINT - 1
   * deltas. Where record j starts is found by skipping the records from
   * the checkpoint, whose offset is the only one kept. */
  size_t first = i - i % MT__LOG_CHECKPOINT, len = 0;
  const uint8_t *p = a->log + a->checkpoints[first / MT__LOG_CHECKPOINT];
  for (size_t j = first; j <= i; j++) {
    size_t shared = (size_t)read_uint(&p), fresh = (size_t)read_uint(&p);
    for (size_t k = 0; k < fresh; k++) {
      uint32_t code = (uint32_t)read_uint(&p);
      if (shared + k < cap) out[shared + k] = code;
    }
    len = shared + fresh;
  }
  return len;
}

int mt__log_replay(const mt_analysis *a, int (*fn)(void *ctx, size_t i, const uint32_t *codes,
                                                  size_t n),
                   void *ctx) {
  uint32_t *codes = NULL;
  size_t cap = 0;
  const uint8_t *p = a->log;
  int rc = 0;
  for (size_t i = 0; i < a->nobj && rc == 0; i++) {
    size_t shared = (size_t)read_uint(&p), fresh = (size_t)read_uint(&p);
    if (shared + fresh > cap) {
      cap = (shared + fresh) * 2;
      uint32_t *nc = realloc(codes, cap * sizeof *nc);
      if (!nc) {
        free(codes);
        return -1;
      }
      codes = nc;
    }
    for (size_t k = 0; k < fresh; k++) codes[shared + k] = (uint32_t)read_uint(&p);
    rc = fn(ctx, i, codes, shared + fresh);
  }
  free(codes);
  return rc;
}
