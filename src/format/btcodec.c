#include "btcodec.h"

#include <stdlib.h>
#include <string.h>

#define MASK (MT__BT_CACHE_SIZE - 1)

void mt__bt_encoder_init(mt__bt_encoder *e) {
  memset(e, 0, sizeof *e);
  mt__bt_encoder_init_zeroed(e);
}

void mt__bt_encoder_init_zeroed(mt__bt_encoder *e) { e->verify_ix = 4242; }

/* memtrace's two hashes, on the code as an OCaml int: the bits they keep
 * (11..24 and 21..34) are the same in 63 and 64-bit arithmetic. */
static inline uint32_t hash1(uint64_t c) { return (uint32_t)((c * 0x4983723u) >> 11) & MASK; }
static inline uint32_t hash2(uint64_t c) { return (uint32_t)((c * 0xfdea731u) >> 21) & MASK; }
/* by address (mt__bt_encoder.by_address) */
static inline uint32_t addr_slot(uint64_t c) { return (uint32_t)(c >> 3) & MASK; }

static inline void put_hit(mt__wr *w, uint32_t bucket, unsigned ncorrect) {
  if (ncorrect == 0) {
    mt__put16(w, (uint16_t)(bucket << 2));
  } else if (ncorrect == 1) {
    mt__put16(w, (uint16_t)(bucket << 2 | 1));
  } else {
    mt__put16(w, (uint16_t)(bucket << 2 | 2));
    mt__put8(w, (uint8_t)ncorrect);
  }
}

/* The encoder, for one placement of codes (a constant where it is
 * inlined: each gets its own copy of the loop). */
static inline __attribute__((always_inline)) size_t
encode(mt__bt_encoder *e, mt__wr *w, uint64_t alloc_id, const uint64_t *bt, size_t from,
       size_t n, void (*log_miss)(void *ctx, uint64_t code), void *ctx, const int by_address) {
  /* The encoder stops before an entry could pass this point (at most 10
   * bytes: a miss), so an event never exceeds MT__BT_MAX_LENGTH. */
  const uint8_t *limit = w->p + MT__BT_MAX_LENGTH - 10;
  size_t ncodes = 0, k = from;
  uint32_t predictor = 0;

  for (;;) {
    /* No prediction running: code bt[k] as a hit or a miss. */
    if (k >= n || w->p > limit) return ncodes;
    uint64_t code = bt[k];
    uint32_t h1 = by_address ? addr_slot(code) : hash1(code);
    uint32_t h2 = by_address ? h1 ^ 8 : hash2(code), hit;
    if (e->code[h1] == code) {
      hit = h1;
    } else if (e->code[h2] == code) {
      hit = h2;
    } else {
      log_miss(ctx, code);
      uint32_t b = e->date[h1] < e->date[h2] ? h1 : h2;
      e->code[b] = code;
      e->date[b] = alloc_id;
      e->next[predictor] = (uint16_t)b;
      mt__put16(w, (uint16_t)(b << 2 | 3));
      mt__put64(w, code);
      predictor = b;
      k++;
      ncodes++;
      continue;
    }
    /* A hit: follow the predictions from it as far as they are right. */
    for (;;) {
      e->date[hit] = alloc_id;
      e->next[predictor] = (uint16_t)hit;
      uint32_t orig = hit;
      unsigned ncorrect = 0;
      predictor = hit;
      k++;
      ncodes++;
      for (;;) {
        if (k >= n || w->p + 2 > limit) {
          put_hit(w, orig, ncorrect);
          return ncodes;
        }
        uint32_t p = e->next[predictor];
        if (e->code[p] != bt[k]) break;
        if (ncorrect == 255) break; /* run full: start a new one at p */
        predictor = p;
        ncorrect++;
        k++;
      }
      put_hit(w, orig, ncorrect);
      uint32_t p = e->next[predictor];
      if (ncorrect == 255 && e->code[p] == bt[k]) {
        hit = p; /* continue as a fresh hit on the predicted slot */
        continue;
      }
      break; /* misprediction: code bt[k] from scratch */
    }
  }
}

size_t mt__bt_encode(mt__bt_encoder *e, mt__wr *w, uint64_t alloc_id,
                     const uint64_t *bt, size_t from, size_t n,
                     void (*log_miss)(void *ctx, uint64_t code), void *ctx) {
  return e->by_address ? encode(e, w, alloc_id, bt, from, n, log_miss, ctx, 1)
                       : encode(e, w, alloc_id, bt, from, n, log_miss, ctx, 0);
}

void mt__bt_put_verifier(mt__bt_encoder *e, mt__wr *w) {
  uint32_t ix = e->verify_ix;
  e->verify_ix = (e->verify_ix + 5413) & MASK;
  mt__put16(w, (uint16_t)ix);
  mt__put16(w, e->next[ix]);
  mt__put64(w, e->code[ix]);
}

void mt__bt_put_dummy_verifier(mt__wr *w) {
  mt__put16(w, 0xffff);
  mt__put16(w, 0);
  mt__put64(w, 0);
}

void mt__bt_decoder_init(mt__bt_decoder *d) { memset(d, 0, sizeof *d); }

void mt__bt_decoder_free(mt__bt_decoder *d) {
  free(d->bt);
  free(d->slot);
  free(d->scratch);
  free(d->scratch_slot);
  memset(d, 0, sizeof *d);
}

/* Room for `need` frames and their slots. */
static int reserve(uint64_t **buf, uint16_t **slots, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  if (need > MT__BT_MAX_FRAMES) return MT__BT_TOO_LONG;
  size_t ncap = *cap ? *cap : 64;
  while (ncap < need) ncap *= 2;
  if (ncap > MT__BT_MAX_FRAMES) ncap = MT__BT_MAX_FRAMES;
  uint64_t *nb = realloc(*buf, ncap * sizeof *nb);
  if (nb) *buf = nb;
  uint16_t *ns = realloc(*slots, ncap * sizeof *ns);
  if (ns) *slots = ns;
  if (!nb || !ns) return MT__BT_NOMEM;
  *cap = ncap;
  return 0;
}

/* Decodes into buf (and slots) from position pos; returns the status, the
 * new length in *out_len. */
static int decode_into(mt__bt_decoder *d, mt__rd *r, size_t nencoded, uint64_t **buf,
                       uint16_t **slots, size_t *cap, size_t pos, size_t *out_len) {
  uint32_t pred = 0;
  /* The common case: no codeword needs a check (mt__bt_expand). */
  if (mt__bt_expand_fits(r, nencoded) && reserve(buf, slots, cap, pos + nencoded * 256) == 0) {
    *out_len = mt__bt_expand(d, &r->p, nencoded, *buf, *slots, pos);
    return MT__BT_OK;
  }
  for (size_t i = 0; i < nencoded; i++) {
    uint16_t cw = mt__get16(r);
    if (r->bad) return MT__BT_TRUNCATED;
    uint32_t bucket = cw >> 2;
    unsigned tag = cw & 3;
    d->pred[pred] = (uint16_t)bucket;
    if (tag == 3) {
      uint64_t lit = mt__get64(r);
      if (r->bad) return MT__BT_TRUNCATED;
      d->code[bucket] = lit;
      d->tag[bucket] = 0;
      int rc = reserve(buf, slots, cap, pos + 1);
      if (rc) return rc;
      (*slots)[pos] = (uint16_t)bucket;
      (*buf)[pos++] = lit;
      pred = bucket;
      continue;
    }
    unsigned npred = tag == 2 ? mt__get8(r) : tag;
    if (r->bad) return MT__BT_TRUNCATED;
    int rc = reserve(buf, slots, cap, pos + 1 + npred);
    if (rc) return rc;
    uint64_t *b = *buf;
    uint16_t *s = *slots;
    s[pos] = (uint16_t)bucket;
    b[pos++] = d->code[bucket];
    pred = bucket;
    while (npred--) {
      pred = d->pred[pred];
      s[pos] = (uint16_t)pred;
      b[pos++] = d->code[pred];
    }
  }
  *out_len = pos;
  return MT__BT_OK;
}

int mt__bt_decode(mt__bt_decoder *d, mt__rd *r, size_t nencoded,
                  uint64_t common) {
  if (common <= d->len) {
    size_t len;
    int rc = decode_into(d, r, nencoded, &d->bt, &d->slot, &d->cap, (size_t)common, &len);
    if (rc != MT__BT_OK) return rc;
    d->len = len;
    /* Room for the fast path's next expansion after any prefix of this
     * backtrace: without it (no memory, or too many frames), that one
     * comes here too. */
    (void)reserve(&d->bt, &d->slot, &d->cap, len + MT__BT_EXPAND_ROOM);
    d->expand_end = d->cap >= MT__BT_EXPAND_ROOM ? d->cap - MT__BT_EXPAND_ROOM + 1 : 0;
    return MT__BT_OK;
  }
  /* The writer cut the previous backtrace short, so this one's prefix is
   * unknown: keep the cache in step, and report the previous backtrace. */
  size_t len;
  return decode_into(d, r, nencoded, &d->scratch, &d->scratch_slot, &d->scratch_cap, 0, &len);
}

int mt__bt_check_verifier(const mt__bt_decoder *d, uint16_t ix, uint16_t pred,
                          uint64_t value) {
  if (ix == 0xffff) return 1;
  if (ix >= MT__BT_CACHE_SIZE) return 0;
  return d->pred[ix] == pred && d->code[ix] == value;
}
