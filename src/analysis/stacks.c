/* The stack tree, built from the backtrace log on first use, and access to
 * the distinct backtraces.
 *
 * Loading keeps each distinct backtrace once, as a delta against the
 * previous distinct one (a few bytes); tools that group by allocation site
 * never need more. The first query about stacks replays the log once and
 * interns every backtrace as a path in a tree of (parent, code) nodes, so
 * that a stack id names a distinct backtrace and parents have smaller ids
 * than children. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* Decodes one log record after `cur` (the previous backtrace's codes) into
 * cur; returns its shared prefix length, its total length in *n. */
static size_t read_record(const uint8_t **p, uint32_t **cur, size_t *cap, size_t *n) {
  size_t shared = (size_t)read_uint(p), fresh = (size_t)read_uint(p);
  if (shared + fresh > *cap) {
    size_t nc = (shared + fresh) * 2;
    uint32_t *q = realloc(*cur, nc * sizeof *q);
    if (!q) return SIZE_MAX;
    *cur = q;
    *cap = nc;
  }
  for (size_t k = 0; k < fresh; k++) (*cur)[shared + k] = (uint32_t)read_uint(p);
  *n = shared + fresh;
  return shared;
}

static int build(mt_analysis *a) {
  uint32_t *stack = malloc((a->nbt + 1) * sizeof *stack);
  uint32_t *path = NULL, *cur = NULL; /* node of each frame; the codes */
  size_t cap = 0, pcap = 0, n;
  if (!stack) return -1;
  const uint8_t *p = a->log;
  for (size_t b = 0; b < a->nbt; b++) {
    size_t shared = read_record(&p, &cur, &cap, &n);
    if (shared == SIZE_MAX) goto fail;
    if (n > pcap) {
      pcap = n * 2;
      uint32_t *np = realloc(path, pcap * sizeof *np);
      if (!np) goto fail;
      path = np;
    }
    uint32_t node = shared ? path[shared - 1] : 0;
    for (size_t j = shared; j < n; j++) {
      if (stack_child(a, node, cur[j], &node)) goto fail;
      path[j] = node;
    }
    stack[b] = node;
  }
  free(path);
  free(cur);
  a->bt_stack = stack;
  return 0;
fail:
  free(path);
  free(cur);
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

size_t mt__bt_codes(const mt_analysis *a, uint32_t b, uint32_t *out, size_t cap) {
  if (a->bt_flat) {
    size_t n = a->bt_off[b + 1] - a->bt_off[b], k = n < cap ? n : cap;
    if (k) memcpy(out, a->bt_flat + a->bt_off[b], k * sizeof *out); /* out may be NULL */
    return n;
  }
  /* Replay from the nearest full record: at most MT__LOG_CHECKPOINT - 1
   * deltas. Where record j starts is found by skipping the records from
   * the checkpoint, whose offset is the only one kept. */
  size_t first = b - b % MT__LOG_CHECKPOINT, len = 0;
  const uint8_t *p = a->log + a->checkpoints[first / MT__LOG_CHECKPOINT];
  for (size_t j = first; j <= b; j++) {
    size_t shared = (size_t)read_uint(&p), fresh = (size_t)read_uint(&p);
    for (size_t k = 0; k < fresh; k++) {
      uint32_t code = (uint32_t)read_uint(&p);
      if (shared + k < cap) out[shared + k] = code;
    }
    len = shared + fresh;
  }
  return len;
}

size_t mt_analysis_object_backtrace(const mt_analysis *a, size_t i, uint32_t *out,
                                    size_t cap) {
  return mt__bt_codes(a, a->bt[i], out, cap);
}

int mt__log_replay(const mt_analysis *a, const uint8_t *mask,
                   int (*fn)(void *ctx, size_t i, const uint32_t *codes, size_t n),
                   void *ctx) {
  /* Backtraces first appear in id order: a new one is the log's next
   * record (decoded sequentially into cur); a repeat of an older one is
   * looked up (expanded, or replayed from its checkpoint into old). */
  uint32_t *cur = NULL, *old = NULL;
  size_t cap = 0, old_cap = 0, cur_n = 0, next = 0;
  const uint8_t *p = a->log;
  int rc = 0;
  for (size_t i = 0; i < a->nobj && rc == 0; i++) {
    uint32_t b = a->bt[i];
    while (next <= b) { /* the log is read in order even past skipped objects */
      if (read_record(&p, &cur, &cap, &cur_n) == SIZE_MAX) goto nomem;
      next++;
    }
    if (mask && !mask[i]) continue;
    if (a->bt_flat) {
      rc = fn(ctx, i, a->bt_flat + a->bt_off[b], a->bt_off[b + 1] - a->bt_off[b]);
    } else if (b + 1 == next) {
      rc = fn(ctx, i, cur, cur_n);
    } else {
      size_t n = mt__bt_codes(a, b, old, old_cap);
      if (n > old_cap) {
        old_cap = n * 2;
        uint32_t *q = realloc(old, old_cap * sizeof *q);
        if (!q) goto nomem;
        old = q;
        n = mt__bt_codes(a, b, old, old_cap);
      }
      rc = fn(ctx, i, old, n);
    }
  }
  free(cur);
  free(old);
  return rc;
nomem:
  free(cur);
  free(old);
  return -1;
}

int mt_analysis_each_distinct_backtrace(const mt_analysis *a, mt_backtrace_fn fn, void *ctx) {
  uint32_t *cur = NULL;
  size_t cap = 0, n;
  const uint8_t *p = a->log;
  int rc = MT_OK;
  for (size_t b = 0; b < a->nbt && rc == MT_OK; b++) {
    if (a->bt_flat) {
      rc = fn(ctx, b, a->bt_flat + a->bt_off[b], a->bt_off[b + 1] - a->bt_off[b]);
      continue;
    }
    if (read_record(&p, &cur, &cap, &n) == SIZE_MAX) {
      rc = MT_ERR_NOMEM;
      break;
    }
    rc = fn(ctx, b, cur, n);
  }
  free(cur);
  return rc;
}

/* Few distinct backtraces (an ordinary program's): keep them expanded too,
 * for direct access without replaying the log. */
int mt__expand_backtraces(mt_analysis *a) {
  if (a->bt_codes_total > MT__FLAT_MAX) return 0;
  uint32_t *off = malloc((a->nbt + 1) * sizeof *off);
  uint32_t *flat = malloc((a->bt_codes_total + 1) * sizeof *flat);
  uint32_t *cur = NULL;
  size_t cap = 0, n, at = 0;
  const uint8_t *p = a->log;
  if (!off || !flat) goto fail;
  for (size_t b = 0; b < a->nbt; b++) {
    if (read_record(&p, &cur, &cap, &n) == SIZE_MAX) goto fail;
    off[b] = (uint32_t)at;
    if (n) memcpy(flat + at, cur, n * sizeof *cur); /* cur is NULL until a non-empty record */
    at += n;
  }
  off[a->nbt] = (uint32_t)at;
  free(cur);
  a->bt_off = off;
  a->bt_flat = flat;
  return 0;
fail:
  free(cur);
  free(off);
  free(flat);
  return -1;
}
