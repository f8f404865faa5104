/* The trace reader's fast path for the common events (reader.c inlines
 * it in mt_reader_next): an allocation, promotion or collection read with
 * one bound checked for all its fields, making every check the checked
 * path (reader_events.c) makes; any event it doubts is left untouched to
 * the checked path, which says what is wrong with it
 * (docs/decisions.md). */
#ifndef MT_FORMAT_READER_FAST_H
#define MT_FORMAT_READER_FAST_H

#include "reader_internal.h"

/* A promotion's or collection's kind from its code by one subtraction. */
_Static_assert(MT__EV_PROMOTE - MT_EVENT_PROMOTE == MT__EV_COLLECT - MT_EVENT_COLLECT,
               "the codes of promotions and collections are their kinds' at one distance");

/* The most bytes a promotion, a collection or an allocation takes before
 * its backtrace's codewords: a long allocation's header, three vints of 9
 * bytes at most, its source and its 16-bit codeword count. */
#define FAST_ROOM (4 + 9 + 9 + 1 + 9 + 2)

/* A vint at *p whose bytes are known to be there; 0 for a negative one
 * (a field that may not be negative: the checked path says so). */
static inline int fast_vint(const uint8_t **p, uint64_t *v) {
  const uint8_t *q = *p;
  uint8_t t = q[0];
  if (__builtin_expect(t < 253, 1)) { /* nearly always: kept on the straight path */
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
 * one bound checked, and every check of the checked path made. Promotions
 * and collections whose kinds are in `skip` (mt_reader_skip's mask, or 0)
 * are passed over on the way, checked the same, so that a reader of
 * allocations alone neither fills an event for each nor goes round
 * mt_reader_next's loop. Returns 1 with *ev and d advanced, or 0 with only
 * the events passed over consumed (d->last_time is the last one's time):
 * the checked path (mt__read_event) then reads the next event, and says
 * what is wrong with it. */
static inline __attribute__((always_inline)) int fast_event(domain *d, mt_event *ev,
                                                            unsigned skip) {
  const uint8_t *p = d->rd.p;
  const packet *pk = d->cur;
  uint64_t t;
  unsigned code;
  for (;;) {
    if (d->rd.end - p < FAST_ROOM) return 0; /* a domain without a packet has none */
    uint32_t hdr = mt__ld32(p);
    t = event_time(pk, hdr);
    if (t > pk->time_end || t < d->last_time) return 0; /* event_time is >= time_begin */
    code = hdr >> MT__TIME_BITS;
    if (code != MT__EV_PROMOTE && code != MT__EV_COLLECT) break;
    const uint8_t *q = p + 4;
    uint64_t delta;
    if (!fast_vint(&q, &delta) || delta >= d->alloc_id) return 0;
    mt_event_kind kind = (mt_event_kind)(code - (MT__EV_PROMOTE - MT_EVENT_PROMOTE));
    if (skip >> kind & 1) { /* passed over */
      d->rd.p = p = q;
      d->last_time = t;
      d->passed++;
      continue;
    }
    ev->kind = kind;
    ev->source = MT_SOURCE_MINOR;
    ev->obj_id = d->alloc_id - 1 - delta;
    ev->length = ev->nsamples = 0;
    ev->backtrace = NULL;
    ev->backtrace_len = ev->common_prefix = 0;
    p = q;
    goto done;
  }
  p += 4;
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
  if (d->alloc_id >= pk->alloc_end || common > bt->len || common >= bt->expand_end ||
      nencoded > MT__BT_EXPAND_MAX || (size_t)(d->rd.end - p) < nencoded * 10)
    return 0;
  /* The event's fields before its frames: they need no register while
   * the frames are expanded */
  ev->kind = MT_EVENT_ALLOC;
  ev->source = source;
  ev->obj_id = d->alloc_id++;
  ev->length = length;
  ev->nsamples = nsamples;
  ev->backtrace = bt->bt;
  ev->common_prefix = (size_t)common;
  ev->time = t;
  ev->domain = d->id;
  d->last_time = t;
  ev->backtrace_len = bt->len = mt__bt_expand(bt, &p, nencoded, bt->bt, bt->slot, (size_t)common);
  d->rd.p = p;
  return 1;
done:
  d->rd.p = p;
  d->last_time = t;
  ev->time = t;
  ev->domain = d->id;
  return 1;
}

#endif
