/* Constants of the memtrace format shared by the reader and the writer
 * (docs/format.md describes each). */
#ifndef MT_FORMAT_INTERNAL_H
#define MT_FORMAT_INTERNAL_H

#define MT__MAGIC 0xc1fc1fc1u
#define MT__HEADER_V2 66 /* packet header bytes, versions 1 and 2 */
#define MT__HEADER_V3 68 /* version 3 adds a 16-bit domain */
#define MT__HEADER_MAX MT__HEADER_V3

/* memtrace writes packets of at most 32 KiB (one write(2) each); the reader
 * accepts up to 1 MiB and calls anything larger corrupt. */
#define MT__PACKET_SIZE (1u << 15)
#define MT__MAX_PACKET (1u << 20)

/* Event headers: 7-bit code, 25-bit timestamp (microseconds, wrapping after
 * 33.5 s); a packet spans at most 30 s so that the wrap is unambiguous. */
#define MT__TIME_BITS 25
#define MT__TIME_MASK ((1u << MT__TIME_BITS) - 1)
#define MT__PACKET_MAX_TIME 30000000u

enum {
  MT__EV_TRACE_INFO = 0,
  MT__EV_LOCATION = 1,
  MT__EV_ALLOC = 2,
  MT__EV_PROMOTE = 3,
  MT__EV_COLLECT = 4,
  MT__EV_SHORT_ALLOC_BASE = 100 /* 101..116: alloc of 1..16 words */
};

/* The reader decodes the common events through a fast path where the
 * packet holds enough bytes, and every other event, or one the fast path
 * finds fault with, through the checked path, which says what is wrong.
 * This makes reader r use the checked path alone: the tests compare the
 * two on damaged traces. */
struct mt_reader;
void mt__reader_checked_only(struct mt_reader *r);

#endif
