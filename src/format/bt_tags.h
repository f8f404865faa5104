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

#include "memtrace/format.h"

typedef struct mt__bt_tags {
  size_t from;          /* frames from here to the backtrace's end have a slot */
  const uint16_t *slot; /* slot[i]: the slot frame i came from (i >= from) */
  uint32_t *tag;        /* tag[s]: 0, or the number the user gave the code in s */
  const uint64_t *code; /* code[s]: the code in slot s */
} mt__bt_tags;

/* The slots of the allocation `ev`, the last event mt_reader_next returned
 * on r: 1 and *t filled, or 0 when r has none to give (a reader of several
 * traces, whose codes are renumbered). The tags are the caller's to set
 * (through the two functions below), r const or not, until r reads its
 * next event. */
int mt__reader_bt_tags(const mt_reader *r, const mt_event *ev, mt__bt_tags *t);

/* The number of ev's frame i (>= t->from), of code `code`, from its
 * slot's tag; 0 when there is none. The slot is checked to hold the code
 * still: a later frame of the same backtrace may have put another there. */
static inline uint32_t mt__bt_tag_get(const mt__bt_tags *t, size_t i, uint64_t code) {
  uint16_t s = t->slot[i];
  return t->code[s] == code ? t->tag[s] : 0;
}

/* Gives frame i (>= t->from), of code `code`, the number n (non-zero),
 * if its slot still holds that code: a slot's tag is always the number of
 * the code in it. */
static inline void mt__bt_tag_set(const mt__bt_tags *t, size_t i, uint64_t code, uint32_t n) {
  uint16_t s = t->slot[i];
  if (t->code[s] == code) t->tag[s] = n;
}

#endif
