/* The backtrace codec: memtrace's 2^14-slot, two-hash cache with
 * next-slot prediction (docs/format.md, "Backtraces").
 *
 * The encoder and the decoder keep the same cache state; the encoder's
 * choices (which of the two slots to evict, how to split prediction runs)
 * are memtrace's exactly, so that a trace re-encoded by memtrace-c is the
 * byte-for-byte the trace memtrace wrote. */
#ifndef MT_FORMAT_BTCODEC_H
#define MT_FORMAT_BTCODEC_H

#include <stddef.h>
#include <stdint.h>

#include "bytes.h"

#define MT__BT_CACHE_SIZE (1u << 14)
/* Bytes one encoded backtrace may take; the rest of a longer one is cut. */
#define MT__BT_MAX_LENGTH 4096
/* Frames a decoded backtrace may hold before the decoder calls it corrupt:
 * far beyond what memtrace's encoder can produce within one packet. */
#define MT__BT_MAX_FRAMES (1u << 22)

typedef struct mt__bt_encoder {
  uint64_t code[MT__BT_CACHE_SIZE];
  uint64_t date[MT__BT_CACHE_SIZE]; /* object id of the last use: eviction */
  uint16_t next[MT__BT_CACHE_SIZE]; /* prediction: the slot that followed */
  uint32_t verify_ix;
  /* Which two slots a code may take (the decoder is told the slot, so the
   * choice is the encoder's alone). 0: memtrace's two hashes, for output
   * byte-identical to memtrace's. 1: by address, for codes that are
   * return addresses (a live program's): slot (code / 8) mod 2^14, or
   * the slot 8 away (a cache line further) when two calls end within 8
   * bytes. A program's codes then share cache lines and pages of the
   * tables instead of each taking its own (the benchmark's workload
   * traced: 21 page faults in the encoder instead of 47, 1.5 fewer cache
   * misses a sample). */
  int by_address;
} mt__bt_encoder;

void mt__bt_encoder_init(mt__bt_encoder *e);
/* The same for an encoder in memory known to be zero (calloc'd): its
 * 288 KiB are left untouched, so their pages are mapped only as the cache
 * fills (a traced program's start-up: 70 page faults fewer). */
void mt__bt_encoder_init_zeroed(mt__bt_encoder *e);

/* Encodes bt[from..n) (outermost first) into w. `log_miss` is called with
 * the index of each frame that missed the cache (its location must be
 * written before the packet). Returns the number of codewords written
 * (the alloc event's new_suffix field). w must have MT__BT_MAX_LENGTH bytes
 * free. */
size_t mt__bt_encode(mt__bt_encoder *e, mt__wr *w, uint64_t alloc_id,
                     const uint64_t *bt, size_t from, size_t n,
                     void (*log_miss)(void *ctx, uint64_t code), void *ctx);

/* The 12-byte cache verifier of a packet header; `dummy` writes the one
 * that checks nothing (first packets). */
void mt__bt_put_verifier(mt__bt_encoder *e, mt__wr *w);
void mt__bt_put_dummy_verifier(mt__wr *w);

typedef struct mt__bt_decoder {
  uint64_t code[MT__BT_CACHE_SIZE];
  uint16_t pred[MT__BT_CACHE_SIZE];
  /* A number per slot kept by the decoder's user (a code's id: the
   * reader's mt__reader_bt_tags), cleared whenever the slot takes a code. */
  uint32_t tag[MT__BT_CACHE_SIZE];
  uint64_t *bt;   /* the last backtrace, outermost first */
  uint16_t *slot; /* the slot each of its frames was decoded from: valid
                     past the prefix it shares with the one before */
  size_t len, cap; /* of bt and slot */
  /* mt__bt_expand may follow a prefix of fewer frames than this: room for
   * its longest expansion after them (cap - MT__BT_EXPAND_ROOM + 1, or 0) */
  size_t expand_end;
  uint64_t *scratch; /* for a suffix whose prefix the decoder lacks */
  uint16_t *scratch_slot;
  size_t scratch_cap;
} mt__bt_decoder;

void mt__bt_decoder_init(mt__bt_decoder *d);
void mt__bt_decoder_free(mt__bt_decoder *d);

enum { MT__BT_OK = 0, MT__BT_TRUNCATED = 1, MT__BT_TOO_LONG = 2, MT__BT_NOMEM = 3 };

/* Decodes `nencoded` codewords after `common` frames shared with the last
 * backtrace; afterwards d->bt[0..d->len) is the backtrace. If `common`
 * exceeds what the decoder has (the writer cut the previous backtrace), the
 * cache is still updated and the previous backtrace is kept, as memtrace
 * does. Returns MT__BT_OK or why it failed. */
int mt__bt_decode(mt__bt_decoder *d, mt__rd *r, size_t nencoded,
                  uint64_t common);

/* Codewords mt__bt_expand takes at once; the input must hold the longest
 * encoding of that many (a literal each: 10 bytes), the output room for
 * the longest expansion (256 frames each: MT__BT_EXPAND_ROOM, which each
 * domain's decoder keeps free past its backtrace, 80 KiB with the slots).
 * More codewords than this are rare (1 allocation in 6,000 of a generated
 * trace, none in a real OCaml one), and take the checked path. */
#define MT__BT_EXPAND_MAX 16
#define MT__BT_EXPAND_ROOM (MT__BT_EXPAND_MAX * 256)

/* Whether mt__bt_expand may take r's next n codewords: few enough, and
 * the longest encoding of them in r (the output's room is the caller's). */
static inline int mt__bt_expand_fits(const mt__rd *r, size_t n) {
  return n <= MT__BT_EXPAND_MAX && (size_t)(r->end - r->p) >= n * 10;
}

/* Expands n codewords at *p into b[pos..), and each frame's slot into
 * s[pos..), with no bounds checked (the caller checked them, as
 * MT__BT_EXPAND_MAX says), updating the cache; advances *p and returns the
 * new pos. Always inlined: the reader's fast path, inlined twice itself,
 * would otherwise call it for each allocation. */
static inline __attribute__((always_inline)) size_t mt__bt_expand(mt__bt_decoder *d,
                                                                  const uint8_t **p, size_t n,
                                                                  uint64_t *b, uint16_t *s,
                                                                  size_t pos) {
  const uint8_t *q = *p;
  uint32_t pred = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t cw = mt__ld16(q);
    uint32_t bucket = cw >> 2, tag = cw & 3;
    d->pred[pred] = (uint16_t)bucket;
    pred = bucket;
    if (tag == 3) {
      uint64_t lit = mt__ld64(q + 2);
      q += 10;
      d->code[bucket] = lit;
      d->tag[bucket] = 0;
      s[pos] = (uint16_t)bucket;
      b[pos++] = lit;
      continue;
    }
    if (tag < 2) {
      /* one frame, or two: both written (the output has room), no loop
       * whose length varies from one codeword to the next */
      uint32_t next = d->pred[bucket];
      b[pos] = d->code[bucket];
      b[pos + 1] = d->code[next];
      s[pos] = (uint16_t)bucket;
      s[pos + 1] = (uint16_t)next;
      pos += 1 + tag;
      pred = tag ? next : bucket;
      q += 2;
      continue;
    }
    uint32_t npred = q[2];
    q += 3;
    s[pos] = (uint16_t)bucket;
    b[pos++] = d->code[bucket];
    while (npred--) {
      pred = d->pred[pred];
      s[pos] = (uint16_t)pred;
      b[pos++] = d->code[pred];
    }
  }
  *p = q;
  return pos;
}

/* mt__bt_decode where it is quickest, for the reader to inline: a known
 * prefix, few codewords, all of them in r and room for them in d->bt. 1
 * when it decoded, 0 when mt__bt_decode must (nothing was read). */
static inline int mt__bt_decode_fast(mt__bt_decoder *d, mt__rd *r, size_t nencoded,
                                     uint64_t common) {
  if (common > d->len || common >= d->expand_end || !mt__bt_expand_fits(r, nencoded)) return 0;
  d->len = mt__bt_expand(d, &r->p, nencoded, d->bt, d->slot, (size_t)common);
  return 1;
}

/* Checks a packet's verifier against the cache: 1 if it matches (or is the
 * dummy), 0 if not. */
int mt__bt_check_verifier(const mt__bt_decoder *d, uint16_t ix, uint16_t pred,
                          uint64_t value);

#endif
