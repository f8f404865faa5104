/* The distinct backtraces: access to the log that holds them (each a
 * delta against the previous distinct one, a full record every
 * MT__LOG_CHECKPOINT), sequential replays, and the expanded copy kept when
 * they are few. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"

static uint64_t read_uint_slow(const uint8_t **p) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    uint8_t b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (b < 0x80) return v;
  }
}

/* Code ids and lengths mostly take one or two bytes: those without a loop. */
static inline uint64_t read_uint(const uint8_t **p) {
  const uint8_t *q = *p;
  if (q[0] < 0x80) {
    *p = q + 1;
    return q[0];
  }
  if (q[1] < 0x80) {
    *p = q + 2;
    return (uint64_t)(q[0] & 0x7f) | (uint64_t)q[1] << 7;
  }
  return read_uint_slow(p);
}

/* Decodes one log record after `cur` (the previous backtrace's codes) into
 * cur; returns its shared prefix length, its total length in *n. The
 * position is kept in a local: through *p, each varint's load would wait
 * for the store of the last one's end. */
static size_t read_record(const uint8_t **p, uint32_t **cur, size_t *cap, size_t *n) {
  const uint8_t *q = *p;
  size_t shared = (size_t)read_uint(&q), fresh = (size_t)read_uint(&q);
  if (shared + fresh > *cap) {
    size_t nc = (shared + fresh) * 2;
    uint32_t *c = realloc(*cur, nc * sizeof *c);
    if (!c) return SIZE_MAX;
    *cur = c;
    *cap = nc;
  }
  uint32_t *out = *cur + shared;
  for (size_t k = 0; k < fresh; k++) out[k] = (uint32_t)read_uint(&q);
  *p = q;
  *n = shared + fresh;
  return shared;
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

size_t mt__bt_codes_grow(const mt_analysis *a, uint32_t bt, uint32_t **buf, size_t *cap) {
  for (;;) {
    size_t n = mt__bt_codes(a, bt, *buf, *cap);
    if (n <= *cap) return n;
    uint32_t *b = realloc(*buf, n * 2 * sizeof *b);
    if (!b) return SIZE_MAX;
    *buf = b;
    *cap = n * 2;
  }
}

void mt__bt_cursor_init(mt__bt_cursor *c, const mt_analysis *a) {
  memset(c, 0, sizeof *c);
  c->a = a;
  c->p = a->log;
}

void mt__bt_cursor_free(mt__bt_cursor *c) {
  free(c->cur);
  free(c->old);
  memset(c, 0, sizeof *c);
}

const uint32_t *mt__bt_cursor_seek(mt__bt_cursor *c, uint32_t b, size_t *n) {
  /* an empty backtrace read before any other leaves its buffer unmade:
   * NULL means no memory */
  static const uint32_t no_codes[1];
  /* Backtraces first appear in id order: a new one is the log's next
   * record (decoded sequentially into cur); a repeat of an older one is
   * replayed from its checkpoint into old. */
  while (c->next <= b) {
    if (read_record(&c->p, &c->cur, &c->cap, &c->cur_n) == SIZE_MAX) return NULL;
    c->next++;
  }
  if (b + 1 == c->next) {
    *n = c->cur_n;
    return c->cur ? c->cur : no_codes;
  }
  size_t len = mt__bt_codes_grow(c->a, b, &c->old, &c->old_cap);
  if (len == SIZE_MAX) return NULL;
  *n = len;
  return c->old ? c->old : no_codes;
}

int mt__scan_codes(const mt__query *q, mt__visit_fn fn, void *ctx) {
  mt__bt_cursor c;
  mt__bt_cursor_init(&c, q->a);
  int rc = 0;
  for (size_t i = q->lo; i < q->hi && rc == 0; i++) {
    if (!mt__query_object(q, i)) continue;
    size_t n;
    const uint32_t *codes = mt__bt_cursor_get(&c, q->a->bt[i], &n);
    rc = codes ? fn(ctx, i, codes, n) : -1;
  }
  mt__bt_cursor_free(&c);
  return rc;
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
 * for direct access without replaying the log. The backtraces logged
 * since the last call are appended (each record's shared prefix copied
 * from the one before it); past MT__FLAT_MAX codes the copy is dropped
 * for good. */
int mt__expand_backtraces(mt_analysis *a) {
  if (a->flat_dropped) return 0;
  if (a->bt_codes_total > MT__FLAT_MAX) {
    free(a->bt_flat);
    free(a->bt_off);
    a->bt_flat = a->bt_off = NULL;
    a->flat_dropped = 1;
    return 0;
  }
  if (a->bt_off && a->nbt_expanded == a->nbt) return 0;
  /* exactly what is needed at first (a whole load expands once), then
   * doubling (a load read in steps expands at each step) */
  size_t off_need = a->nbt + 1, flat_need = a->bt_codes_total + 1;
  if (mt__grow((void **)&a->bt_off, &a->bt_off_cap, off_need, sizeof *a->bt_off, off_need) ||
      mt__grow((void **)&a->bt_flat, &a->bt_flat_cap, flat_need, sizeof *a->bt_flat, flat_need))
    return -1;
  uint32_t *off = a->bt_off, *flat = a->bt_flat;
  size_t b = a->nbt_expanded, at = b ? off[b] : 0;
  if (b == a->nbt) { /* none new (no log yet, if none at all) */
    off[b] = (uint32_t)at;
    return 0;
  }
  const uint8_t *p = a->log + a->expand_pos;
  for (; b < a->nbt; b++) {
    size_t shared = (size_t)read_uint(&p), fresh = (size_t)read_uint(&p);
    if (shared) memmove(flat + at, flat + off[b - 1], shared * sizeof *flat);
    for (size_t k = 0; k < fresh; k++) flat[at + shared + k] = (uint32_t)read_uint(&p);
    off[b] = (uint32_t)at;
    at += shared + fresh;
  }
  off[a->nbt] = (uint32_t)at;
  a->nbt_expanded = a->nbt;
  a->expand_pos = (size_t)(p - a->log);
  return 0;
}
