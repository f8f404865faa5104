/* The trace reader's checked path: every event decoded field by field,
 * each field checked before use, every failure named with its byte
 * offset; and the table of locations the trace defines. reader.c takes
 * the common events through its fast path (reader_fast.h) and leaves the
 * rest, and any it doubts, here. */
#include <stdlib.h>
#include <string.h>

#include "reader_internal.h"

/* ---- location table ---- */

static const mt_location *store_locations(mt_reader *r, const mt_location *l, size_t n) {
  if (n == 0) return NULL;
  if (!r->loc_chunk || LOC_CHUNK - r->loc_chunk_used < n) {
    if (mt__reserve((void **)&r->loc_chunks, r->nloc_chunks, &r->loc_chunks_cap,
                    sizeof *r->loc_chunks))
      return NULL;
    mt_location *chunk = malloc(LOC_CHUNK * sizeof *chunk);
    if (!chunk) return NULL;
    r->loc_chunks[r->nloc_chunks++] = chunk;
    r->loc_chunk = chunk;
    r->loc_chunk_used = 0;
  }
  mt_location *dst = r->loc_chunk + r->loc_chunk_used;
  memcpy(dst, l, n * sizeof *l);
  r->loc_chunk_used += n;
  return dst;
}

static int same_locations(const loc_list *a, const mt_location *b, size_t n) {
  if (a->n != n) return 0;
  for (size_t i = 0; i < n; i++) {
    const mt_location *x = &a->locs[i], *y = &b[i];
    /* strings are interned: equal strings are equal pointers */
    if (x->filename != y->filename || x->defname != y->defname ||
        x->line != y->line || x->start_char != y->start_char ||
        x->end_char != y->end_char)
      return 0;
  }
  return 1;
}

static int read_location(mt_reader *r, domain *d, uint64_t off) {
  mt_location locs[255];
  size_t n = 0;
  uint64_t code;
  const char *why = mt__loc_decode(&d->mtf, &r->strings, &d->rd, &code, locs, &n);
  if (why) return mt__reader_fail(r, MT_ERR_CORRUPT, cur_off(d), "%s", why);
  uint32_t *ix = mt__u64map_get(&r->loc_index, code);
  if (ix) {
    if (!same_locations(&r->lists[*ix - 1], locs, n))
      return mt__reader_fail(r, MT_ERR_CORRUPT, off,
                             "location code 0x%llx redefined with different locations",
                             (unsigned long long)code);
    return 0;
  }
  if (mt__grow((void **)&r->lists, &r->lists_cap, r->nlists + 1, sizeof *r->lists, 1024))
    return mt__reader_nomem(r);
  const mt_location *stored = store_locations(r, locs, n);
  if (n && !stored) return mt__reader_nomem(r);
  r->lists[r->nlists] = (loc_list){stored, (uint32_t)n};
  if (mt__u64map_put(&r->loc_index, code, (uint32_t)r->nlists) != 0) return mt__reader_nomem(r);
  r->nlists++;
  return 0;
}

/* ---- events ---- */

static int read_alloc(mt_reader *r, domain *d, unsigned code, mt_event *ev) {
  mt__rd *c = &d->rd;
  const uint8_t *at = d->rd.p;
  int64_t length, nsamples, common;
  size_t nencoded;
  mt_source source = MT_SOURCE_MINOR;
  if (code != MT__EV_ALLOC) {
    length = code - MT__EV_SHORT_ALLOC_BASE;
    nsamples = 1;
    common = mt__getvint(c);
    nencoded = mt__get8(c);
  } else {
    length = mt__getvint(c);
    nsamples = mt__getvint(c);
    unsigned src = mt__get8(c);
    if (!c->bad && src > MT_SOURCE_EXTERNAL)
      return mt__reader_fail(r, MT_ERR_CORRUPT, cur_off(d) - 1, "unknown allocation source %u",
                             src);
    source = (mt_source)src;
    common = mt__getvint(c);
    nencoded = mt__get16(c);
  }
  if (c->bad)
    return mt__reader_fail(r, MT_ERR_CORRUPT, off_at(d, at), "allocation event cut short");
  if (length < 0 || nsamples < 0 || common < 0)
    return mt__reader_fail(r, MT_ERR_CORRUPT, off_at(d, at),
                           "allocation with a negative field (length %lld, samples %lld, "
                           "common prefix %lld)",
                           (long long)length, (long long)nsamples, (long long)common);
  if (d->alloc_id >= d->cur->alloc_end)
    return mt__reader_fail(r, MT_ERR_CORRUPT, off_at(d, at),
                           "more allocations than the packet header's object id range");
  int rc = mt__bt_decode_fast(&d->bt, c, nencoded, (uint64_t)common)
               ? MT__BT_OK
               : mt__bt_decode(&d->bt, c, nencoded, (uint64_t)common);
  if (rc == MT__BT_TRUNCATED)
    return mt__reader_fail(r, MT_ERR_CORRUPT, cur_off(d), "backtrace cut short");
  if (rc == MT__BT_TOO_LONG)
    return mt__reader_fail(r, MT_ERR_CORRUPT, off_at(d, at), "backtrace longer than %u frames",
                           MT__BT_MAX_FRAMES);
  if (rc == MT__BT_NOMEM) return mt__reader_nomem(r);
  ev->kind = MT_EVENT_ALLOC;
  ev->source = source;
  ev->obj_id = d->alloc_id++;
  ev->length = (uint64_t)length;
  ev->nsamples = (uint64_t)nsamples;
  ev->backtrace = d->bt.bt;
  ev->backtrace_len = d->bt.len;
  ev->common_prefix = (size_t)common;
  return 0;
}

/* Promote and collect name an object relative to the last allocation. */
static int read_relative_id(mt_reader *r, domain *d, int may_be_later, mt_event *ev) {
  const uint8_t *at = d->rd.p;
  int64_t delta = mt__getvint(&d->rd);
  if (d->rd.bad) return mt__reader_fail(r, MT_ERR_CORRUPT, off_at(d, at), "event cut short");
  uint64_t last = d->alloc_id; /* id of the last allocation, plus one */
  if (delta >= 0) {
    if ((uint64_t)delta >= last)
      return mt__reader_fail(r, MT_ERR_CORRUPT, off_at(d, at),
                             "object id delta %lld names an object before the first",
                             (long long)delta);
    ev->obj_id = last - 1 - (uint64_t)delta;
  } else {
    /* Only collections may name a later id: an object of another domain
     * (memtrace's reader allows this for domain termination). */
    if (!may_be_later || delta == INT64_MIN || (uint64_t)(-delta) > UINT64_MAX - last)
      return mt__reader_fail(r, MT_ERR_CORRUPT, off_at(d, at), "negative object id delta %lld",
                             (long long)delta);
    ev->obj_id = last + (uint64_t)(-delta) - 1; /* -delta >= 1: no underflow */
  }
  return 0;
}

int mt__read_event(mt_reader *r, domain *d, mt_event *ev) {
  const uint8_t *at = d->rd.p;
  uint32_t hdr = mt__get32(&d->rd);
  if (d->rd.bad) return mt__reader_fail(r, MT_ERR_CORRUPT, off_at(d, at), "event header cut short");
  uint64_t t = event_time(d->cur, hdr);
  if (t < d->cur->time_begin || t > d->cur->time_end)
    return mt__reader_fail(r, MT_ERR_CORRUPT, off_at(d, at),
                           "event time %llu us lies outside its packet (%llu to %llu)",
                           (unsigned long long)t, (unsigned long long)d->cur->time_begin,
                           (unsigned long long)d->cur->time_end);
  if (t < d->last_time)
    return mt__reader_fail(r, MT_ERR_CORRUPT, off_at(d, at),
                           "event time %llu us is before the previous event (%llu us)",
                           (unsigned long long)t, (unsigned long long)d->last_time);
  d->last_time = t;
  unsigned code = hdr >> MT__TIME_BITS;
  ev->time = t;
  ev->domain = d->id;
  switch (code) {
  case MT__EV_TRACE_INFO:
    return mt__reader_fail(r, MT_ERR_CORRUPT, off_at(d, at), "a second trace_info event");
  case MT__EV_LOCATION: {
    int rc = read_location(r, d, off_at(d, at));
    return rc < 0 ? rc : 1; /* 1: not an event for the caller */
  }
  case MT__EV_ALLOC:
    return read_alloc(r, d, code, ev);
  case MT__EV_PROMOTE:
  case MT__EV_COLLECT:
    /* an allocation's fields are zero here (read_alloc sets them all) */
    ev->kind = code == MT__EV_PROMOTE ? MT_EVENT_PROMOTE : MT_EVENT_COLLECT;
    ev->backtrace = NULL;
    ev->backtrace_len = ev->common_prefix = 0;
    ev->length = ev->nsamples = 0;
    ev->source = MT_SOURCE_MINOR;
    return read_relative_id(r, d, code == MT__EV_COLLECT, ev);
  default:
    if (code > MT__EV_SHORT_ALLOC_BASE && code <= MT__EV_SHORT_ALLOC_BASE + 16)
      return read_alloc(r, d, code, ev);
    return mt__reader_fail(r, MT_ERR_CORRUPT, off_at(d, at), "unknown event code %u", code);
  }
}

/* ---- lookups ---- */

const mt_location *mt_reader_lookup(const mt_reader *r, uint64_t code, size_t *n) {
  if (r->many) return mt__many_lookup(r->many, code, n);
  uint32_t *ix = mt__u64map_get(&r->loc_index, code);
  if (!ix) {
    *n = 0;
    return NULL;
  }
  const loc_list *l = &r->lists[*ix - 1];
  *n = l->n;
  return l->locs;
}

int mt_reader_has_code(const mt_reader *r, uint64_t code) {
  if (r->many) return mt__many_has_code(r->many, code);
  return mt__u64map_get(&r->loc_index, code) != NULL;
}
