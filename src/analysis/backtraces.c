/* The distinct backtraces: access to the log that holds them (each a
 * delta against the previous distinct one, a full record every
 * MT__LOG_CHECKPOINT), sequential replays, and the expanded copy kept when
 * they are few. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"

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

int mt__scan_codes(const mt__query *q, mt__visit_fn fn, void *ctx) {
  const mt_analysis *a = q->a;
  /* Backtraces first appear in id order: a new one is the log's next
   * record (decoded sequentially into cur); a repeat of an older one is
   * looked up (expanded, or replayed from its checkpoint into old). */
  uint32_t *cur = NULL, *old = NULL;
  size_t cap = 0, old_cap = 0, cur_n = 0, next = 0;
  const uint8_t *p = a->log;
  int rc = 0;
  for (size_t i = q->lo; i < q->hi && rc == 0; i++) {
    uint32_t b = a->bt[i];
    while (next <= b) { /* the log is read in order even past skipped objects */
      if (read_record(&p, &cur, &cap, &cur_n) == SIZE_MAX) goto nomem;
      next++;
    }
    if (!mt__query_object(q, i)) continue; /* before any lookup of an old one */
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
