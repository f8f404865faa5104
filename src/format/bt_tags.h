/* A number per backtrace code kept where the reader keeps the code, for a
 * reader's user that numbers codes (the analysis's code ids).
 *
 * The reader decodes each frame of a backtrace from a slot of its domain's
 * backtrace cache (btcodec.h), whose line it has just read. Beside each
 * slot it keeps a tag, which it clears whenever the slot takes a new code.
 * A user that sets a slot's tag to its number for the slot's code finds
 * that number again, for the frames decoded from that slot later, with no
 * lookup of its own: the tags are 64 KiB a domain where a table of codes
 * by hash would be several times that, and missed in cache for each frame
 * of a trace of many codes. */
#ifndef MT_FORMAT_BT_TAGS_H
#define MT_FORMAT_BT_TAGS_H

#include <stddef.h>
#include <stdint.h>

#include "btcodec.h"
#include "memtrace/format.h"

/* The decoder of the domain of `ev`, an allocation mt_reader_next returned
 * on r, whose slots and tags the functions below read; NULL when r has
 * none to give (a reader of several traces, whose codes are renumbered).
 * Valid until r is closed; its tags are the caller's to set (through
 * mt__bt_tag_set), r const or not. */
mt__bt_decoder *mt__reader_bt_tags(const mt_reader *r, const mt_event *ev);

/* The first frame of ev, the last event r returned, that has a slot: the
 * frames past its common prefix were decoded for it (a prefix longer than
 * the last backtrace, which its writer cut short, left that one as it
 * was). */
static inline size_t mt__bt_tags_from(const mt_event *ev) {
  return ev->common_prefix < ev->backtrace_len ? ev->common_prefix : ev->backtrace_len;
}

/* mt__reader_bt_tags for a reader's events one after another, asked again
 * only when an event's domain or backtrace buffer is not the last one's
 * (zero it for a new reader). */
typedef struct mt__bt_tags_seen {
  const uint64_t *backtrace;
  uint32_t domain;
  mt__bt_decoder *tags;
} mt__bt_tags_seen;

static inline mt__bt_decoder *mt__bt_tags_of(mt__bt_tags_seen *seen, const mt_reader *r,
                                             const mt_event *ev) {
  if (ev->backtrace != seen->backtrace || ev->domain != seen->domain) {
    seen->backtrace = ev->backtrace;
    seen->domain = ev->domain;
    seen->tags = mt__reader_bt_tags(r, ev);
  }
  return seen->tags;
}

/* The number of frame i (past mt__bt_tags_from) of the last event, of code
 * `code`, from its slot's tag; 0 when there is none. The slot is checked
 * to hold the code still: a later frame of the same backtrace may have put
 * another there. */
static inline uint32_t mt__bt_tag_get(const mt__bt_decoder *t, size_t i, uint64_t code) {
  uint16_t s = t->slot[i];
  return t->code[s] == code ? t->tag[s] : 0;
}

/* Gives frame i (past mt__bt_tags_from), of code `code`, the number n
 * (non-zero), if its slot still holds that code: a slot's tag is always
 * the number of the code in it. */
static inline void mt__bt_tag_set(mt__bt_decoder *t, size_t i, uint64_t code, uint32_t n) {
  uint16_t s = t->slot[i];
  if (t->code[s] == code) t->tag[s] = n;
}

#endif
