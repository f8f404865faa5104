/* The trace reader's state, shared by its files: reader.c (the input,
 * packets, domains and their merge, the API), reader_events.c (the checked
 * path of the events and the location table) and reader_fast.h (the
 * common events' fast path). */
#ifndef MT_FORMAT_READER_INTERNAL_H
#define MT_FORMAT_READER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "btcodec.h"
#include "format_internal.h"
#include "loccodec.h"
#include "memtrace/format.h"
#include "reader_many.h"
#include "base/containers.h"

#define MAX_DOMAINS 128 /* OCaml's own limit on domains */
#define LOC_CHUNK 4096  /* mt_location entries per storage chunk */

typedef struct packet {
  struct packet *next;
  const uint8_t *data; /* content, after the header: buf, or in the input buffer */
  uint8_t *buf;        /* the packet's own copy, of cap bytes */
  size_t len, cap;
  uint64_t data_off; /* file offset of data[0] */
  uint64_t time_begin, time_end, alloc_begin, alloc_end;
  uint64_t seq; /* file order, to break timestamp ties */
  uint16_t v_ix, v_pred;
  uint64_t v_val;
} packet;

typedef struct domain {
  uint32_t id;
  mt__bt_decoder bt;
  mt__mtf mtf;
  uint64_t last_time;
  packet *cur; /* the packet being decoded, or NULL */
  mt__rd rd;   /* cursor in cur */
  uint64_t alloc_id;
  uint64_t passed; /* events the fast path passed over (mt_reader_skip) */
  packet *qhead, *qtail; /* read, not started */
} domain;

typedef struct loc_list {
  const mt_location *locs;
  uint32_t n;
} loc_list;

struct mt_reader {
  int fd, own_fd;
  char *name;
  uint64_t file_size;

  uint8_t *in;
  size_t in_pos, in_end, in_cap;
  uint64_t in_off; /* file offset of in[0] */
  int in_eof;      /* read() returned 0 */
  int done;        /* no more packets will be read */
  /* mt_reader_follow: the end of the file is the end for now; `waiting`
   * once a read found no whole packet there (cleared by the next call) */
  int follow, waiting;

  mt_trace_info info;
  mt__strtab strings;

  mt__u64map loc_index; /* code -> index in lists */
  loc_list *lists;
  size_t nlists, lists_cap;
  mt_location *loc_chunk;
  size_t loc_chunk_used;
  void **loc_chunks;
  size_t nloc_chunks, loc_chunks_cap;

  domain *doms[MAX_DOMAINS];
  size_t ndoms;
  size_t queued;
  uint64_t seq;
  packet *free_packets;

  int status;
  char err[768];
  uint64_t err_off;   /* MT_NO_OFFSET when the error has no place */
  char warn[512];
  int warn_set;
  int truncated;
  uint64_t truncated_off;
  uint64_t skipped_pid, skipped_pid_value;
  uint64_t last_event; /* the time of the last event read */
  unsigned skip;       /* mt_reader_skip's kinds */
  uint64_t passed;     /* skipped events passed over outside fast_event */
  int checked_only;    /* mt__reader_checked_only */
  /* The domain mt_reader_next reads on its fast path: the one domain of a
   * trace, while no error and no mt__reader_checked_only; else NULL */
  domain *fast;
  mt__many *many; /* several traces read as one: every call goes there */
};

/* Records the reader's error (the first one only) and returns its status;
 * off is the byte offset for MT_ERR_CORRUPT and MT_ERR_VERSION. */
int mt__reader_fail(mt_reader *r, int status, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int mt__reader_nomem(mt_reader *r);

/* The checked path: decodes the event at d's cursor, every field checked,
 * and says what is wrong with a bad one. Returns 0 with *ev set, 1 for a
 * location (no event for the caller), or a negative status. */
int mt__read_event(mt_reader *r, domain *d, mt_event *ev);

/* The file offset of d's cursor. */
static inline uint64_t cur_off(const domain *d) {
  return d->cur->data_off + (uint64_t)(d->rd.p - d->cur->data);
}

/* The file offset of `at`, a place in d's current packet: events note
 * where they start as a pointer and turn it into an offset only to report
 * an error. */
static inline uint64_t off_at(const domain *d, const uint8_t *at) {
  return d->cur->data_off + (uint64_t)(at - d->cur->data);
}

/* Widens a 25-bit event timestamp against the packet's begin time: the
 * first time at or after it whose low 25 bits are the event's, which is
 * the begin time plus the distance from its low bits to the event's,
 * modulo 2^25. */
static inline uint64_t event_time(const packet *p, uint32_t hdr) {
  return p->time_begin + ((hdr - (uint32_t)p->time_begin) & MT__TIME_MASK);
}

#endif
