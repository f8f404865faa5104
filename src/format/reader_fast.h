/* The trace reader's fast path for the common events (reader.c inlines
 * it in mt_reader_next): an allocation, promotion or collection read with
 * one bound checked for all its fields, making every check the checked
 * path (reader_events.c) makes; any event it doubts is left untouched to
 * the checked path, which says what is wrong with it
 * (docs/decisions.md). */
#ifndef MT_FORMAT_READER_FAST_H
#define MT_FORMAT_READER_FAST_H

#include "reader_internal.h"

/* The most bytes a promotion, a collection or an allocation takes before
 * its backtrace's codewords: a long allocation's header, three vints of 9
 * bytes at most, its source and its 16-bit codeword count. */
#define FAST_ROOM (4 + 9 + 9 + 1 + 9 + 2)

/* A vint at *p whose bytes are known to be there; 0 for a negative one
 * (a field that may not be negative: the checked path says so). */
static inline int fast_vint(const uint8_t **p, uint64_t *v) {
  const uint8_t *q = *p;
  uint8_t t = q[0];
  if (t < 253) {
    *v = t;
    *p = q + 1;
    return 1;
  }
  int64_t x = t == 253 ? (int64_t)mt__ld16(q + 1)
              : t == 254 ? (int64_t)(int32_t)mt__ld32(q + 1)
                         : (int64_t)mt__ld64(q + 1);
  *p = q + (t == 253 ? 3 : t == 254 ? 5 : 9);
  *v = (uint64_t)x;
  return x >= 0;
}

/* The event at d's cursor when it is a well-formed allocation, promotion
 * or collection of an earlier object, with FAST_ROOM bytes (and its
 * codewords' longest encoding) in the packet: every field read with the
 * one bound checked, and every check of the checked path made. Returns 1
 * with *ev and d advanced, or 0 with nothing read or changed: the checked
 * path (mt__read_event) then reads the event, and says what is wrong with it. */
static inline __attribute__((always_inline)) int fast_event(domain *d, mt_event *ev) {
  const uint8_t *p = d->rd.p;
  if ((size_t)(d->rd.end - p) < FAST_ROOM) return 0;
  const packet *pk = d->cur;
  uint32_t hdr = mt__ld32(p);
  uint64_t t = event_time(pk, hdr);
  if (t > pk->time_end || t < d->last_time) return 0; /* event_time is >= time_begin */
  unsigned code = hdr >> MT__TIME_BITS;
  p += 4;
  if (code == MT__EV_PROMOTE || code == MT__EV_COLLECT) {
    uint64_t delta;
    if (!fast_vint(&p, &delta) || delta >= d->alloc_id) return 0;
    ev->kind = code == MT__EV_PROMOTE ? MT_EVENT_PROMOTE : MT_EVENT_COLLECT;
    ev->source = MT_SOURCE_MINOR;
    ev->obj_id = d->alloc_id - 1 - delta;
    ev->length = ev->nsamples = 0;
    ev->backtrace = NULL;
    ev->backtrace_len = ev->common_prefix = 0;
  } else {
    uint64_t length, nsamples = 1, common;
    size_t nencoded;
    mt_source source = MT_SOURCE_MINOR;
    if (code > MT__EV_SHORT_ALLOC_BASE && code <= MT__EV_SHORT_ALLOC_BASE + 16) {
      length = code - MT__EV_SHORT_ALLOC_BASE;
      if (!fast_vint(&p, &common)) return 0;
      nencoded = *p++;
    } else if (code == MT__EV_ALLOC) {
      if (!fast_vint(&p, &length) || !fast_vint(&p, &nsamples)) return 0;
      if (*p > MT_SOURCE_EXTERNAL) return 0;
      source = (mt_source)*p++;
      if (!fast_vint(&p, &common)) return 0;
      nencoded = mt__ld16(p);
      p += 2;
    } else {
      return 0;
    }
    mt__bt_decoder *bt = &d->bt;
    if (d->alloc_id >= pk->alloc_end || common > bt->len || nencoded > MT__BT_EXPAND_MAX ||
        (size_t)(d->rd.end - p) < nencoded * 10 || bt->cap < common + nencoded * 256)
      return 0;
    bt->len = mt__bt_expand(bt, &p, nencoded, bt->bt, (size_t)common);
    ev->kind = MT_EVENT_ALLOC;
    ev->source = source;
    ev->obj_id = d->alloc_id++;
    ev->length = length;
    ev->nsamples = nsamples;
    ev->backtrace = bt->bt;
    ev->backtrace_len = bt->len;
    ev->common_prefix = (size_t)common;
  }
  d->rd.p = p;
  d->last_time = t;
  ev->time = t;
  ev->domain = d->id;
  return 1;
}

/* Consumes the promotions and collections at d's cursor whose kinds are in
 * `skip` (mt_reader_skip's mask), as long as fast_event would read each:
 * the same checks, nothing returned. A reader of allocations alone then
 * passes over the runs of collections between them without filling an
 * event or going round mt_reader_next's loop for each. Stops before any
 * other event, or any the fast path leaves to the checked path. Returns
 * how many it consumed. */
static inline __attribute__((always_inline)) size_t fast_skip(domain *d, unsigned skip) {
  const uint8_t *p = d->rd.p, *end = d->rd.end;
  const packet *pk = d->cur;
  uint64_t last = d->last_time, ids = d->alloc_id;
  size_t n = 0;
  while ((size_t)(end - p) >= FAST_ROOM) {
    uint32_t hdr = mt__ld32(p);
    unsigned code = hdr >> MT__TIME_BITS;
    mt_event_kind kind = code == MT__EV_PROMOTE ? MT_EVENT_PROMOTE : MT_EVENT_COLLECT;
    if ((code != MT__EV_PROMOTE && code != MT__EV_COLLECT) || !(skip >> kind & 1)) break;
    uint64_t t = event_time(pk, hdr), delta;
    if (t > pk->time_end || t < last) break;
    const uint8_t *q = p + 4;
    if (!fast_vint(&q, &delta) || delta >= ids) break;
    p = q;
    last = t;
    n++;
  }
  d->rd.p = p;
  d->last_time = last;
  return n;
}

#endif
