/* btcodec: memtrace's backtrace cache codec.
 *
 * The expected bytes here were derived by hand from memtrace's
 * backtrace_codec.ml (Writer.put_backtrace / Reader.get_backtrace):
 *   hash1 c = ((c * 0x4983723) lsr 11) land 0x3fff
 *   hash2 c = ((c * 0xfdea731) lsr 21) land 0x3fff
 *   a miss evicts hash1 if date(hash1) < date(hash2), else hash2, and writes
 *     u16 (bucket lsl 2 lor 3), u64 code;
 *   a hit writes u16 (bucket lsl 2 lor n) for n = 0, 1 predictions, or
 *     u16 (bucket lsl 2 lor 2), u8 n for 2..255 predictions;
 *   a run reaching 255 correct predictions ends and a new hit starts on the
 *     predicted bucket;
 *   the encoder stops starting entries once more than 4096 - 10 bytes are
 *     written (hits: once the next 2 bytes would pass that mark). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "format/bt_tags.h"
#include "format/btcodec.h"
#include "mt_test_util.h"

#define MASK 0x3fffu
/* memtrace's hashes, restated from backtrace_codec.ml */
static uint32_t h1(uint64_t c) { return (uint32_t)((c * 0x4983723u) >> 11) & MASK; }
static uint32_t h2(uint64_t c) { return (uint32_t)((c * 0xfdea731u) >> 21) & MASK; }

/* ---- helpers ---- */

/* The number a user of the decoder's tags gives a code (bt_tags.h): one of
 * its own, non-zero. */
static uint32_t tag_number(uint64_t c) { return (uint32_t)(c * 0x9e3779b97f4a7c15ull >> 33) | 1; }

/* The decoder's user after each backtrace: the frames decoded (past the
 * common prefix) numbered from their slots' tags where found, which must
 * be their codes' numbers, and their tags set where not. Returns how many
 * were found. */
static size_t use_tags(mt__bt_decoder *d, uint64_t common) {
  size_t found = 0;
  for (size_t i = common < d->len ? (size_t)common : d->len; i < d->len; i++) {
    uint32_t n = mt__bt_tag_get(d, i, d->bt[i]);
    if (!n) {
      mt__bt_tag_set(d, i, d->bt[i], tag_number(d->bt[i]));
      continue;
    }
    if (n != tag_number(d->bt[i]))
      fail_msg("frame %zu, code 0x%llx, slot %u: tag %u, not %u", i,
               (unsigned long long)d->bt[i], d->slot[i], n, tag_number(d->bt[i]));
    found++;
  }
  return found;
}

typedef struct misses {
  uint64_t codes[8192];
  size_t n;
} misses;

static void log_miss(void *ctx, uint64_t code) {
  misses *m = ctx;
  assert_true(m->n < 8192);
  m->codes[m->n++] = code;
}

typedef struct enc_out {
  uint8_t bytes[MT__BT_MAX_LENGTH + 64];
  size_t len;   /* bytes written */
  size_t ncodes;
  misses miss;
} enc_out;

static void encode(mt__bt_encoder *e, enc_out *o, uint64_t id, const uint64_t *bt,
                   size_t from, size_t n) {
  memset(o->bytes, 0xee, sizeof o->bytes);
  o->miss.n = 0;
  mt__wr w = {o->bytes, o->bytes + sizeof o->bytes, o->bytes};
  o->ncodes = mt__bt_encode(e, &w, id, bt, from, n, log_miss, &o->miss);
  o->len = mt__wr_pos(&w);
  assert_true(o->len <= MT__BT_MAX_LENGTH);
  assert_int_equal(o->bytes[o->len], 0xee); /* wrote nothing beyond */
}

/* Decodes o's bytes exactly (guarded: no read past them). */
static int decode_g(mt__bt_decoder *d, const enc_out *o, uint64_t common, int guarded) {
  tu_guarded g;
  const uint8_t *p = o->bytes;
  if (guarded) {
    g = tu_guarded_copy(o->bytes, o->len);
    p = g.p;
  }
  mt__rd r = {p, p + o->len, 0};
  int rc = mt__bt_decode(d, &r, o->ncodes, common);
  if (rc == MT__BT_OK) {
    assert_int_equal(r.bad, 0);
    assert_ptr_equal(r.p, r.end); /* consumed exactly what was written */
  }
  if (guarded) tu_guarded_free(&g);
  return rc;
}
static int decode(mt__bt_decoder *d, const enc_out *o, uint64_t common) {
  return decode_g(d, o, common, 1);
}

static void assert_bt(const mt__bt_decoder *d, const uint64_t *bt, size_t n) {
  if (d->len != n) fail_msg("decoded %zu frames, expected %zu", d->len, n);
  for (size_t i = 0; i < n; i++)
    if (d->bt[i] != bt[i])
      fail_msg("frame %zu: decoded %llx, expected %llx", i, (unsigned long long)d->bt[i],
               (unsigned long long)bt[i]);
}

/* Codes whose two slots are distinct, not slot 0, and touched by no other
 * chosen code: with an otherwise unused cache each lands in its hash2 slot
 * (equal dates pick hash2) and is never evicted. */
static void collision_free_codes(uint64_t *out, size_t n, uint64_t start) {
  static uint8_t used[MT__BT_CACHE_SIZE];
  memset(used, 0, sizeof used);
  used[0] = 1;
  size_t k = 0;
  for (uint64_t c = start; k < n; c++) {
    uint32_t a = h1(c), b = h2(c);
    if (a == b || used[a] || used[b]) continue;
    used[a] = used[b] = 1;
    out[k++] = c;
  }
}

static void put_le16(uint8_t *p, unsigned v) { tu_st16(p, (uint16_t)v); }

/* ---- tests ---- */

static void hashes_as_memtrace(void **state) {
  (void)state;
  /* worked by hand: 1*0x4983723 = 77084451, >>11 = 37638, &0x3fff = 4870 */
  assert_int_equal(h1(1), 4870);
  assert_int_equal(h2(1), 126);
  assert_int_equal(h1(2), 9741);
  assert_int_equal(h2(2), 253);
  assert_int_equal(h1(3), 14612);
  assert_int_equal(h2(3), 380);
  /* the encoder uses exactly these hashes, on large codes too (where
   * every bit of the multipliers matters): a code planted in its hash1 slot
   * hits there, in its hash2 slot hits there, and a fresh miss (equal
   * dates) lands in hash2 */
  static mt__bt_encoder e;
  static enc_out o;
  const uint64_t big[4] = {0x7fffdeadbeefull, 0x3fffffffffffffffull, 0x123456789abcdefull,
                           0xfedcba9876543210ull};
  for (int i = 0; i < 4; i++) {
    uint64_t c = big[i];
    assert_int_not_equal(h1(c), h2(c));
    mt__bt_encoder_init(&e);
    e.code[h1(c)] = c;
    encode(&e, &o, 1, &c, 0, 1);
    assert_int_equal(o.miss.n, 0);
    assert_int_equal(tu_ld16(o.bytes), h1(c) << 2);
    mt__bt_encoder_init(&e);
    e.code[h2(c)] = c;
    encode(&e, &o, 1, &c, 0, 1);
    assert_int_equal(o.miss.n, 0);
    assert_int_equal(tu_ld16(o.bytes), h2(c) << 2);
    mt__bt_encoder_init(&e);
    encode(&e, &o, 1, &c, 0, 1);
    assert_int_equal(o.miss.n, 1);
    assert_int_equal(tu_ld16(o.bytes), h2(c) << 2 | 3);
  }
}

/* A tiny example, byte by byte. */
static void hand_checked_bytes(void **state) {
  (void)state;
  static mt__bt_encoder e;
  static mt__bt_decoder d;
  mt__bt_encoder_init(&e);
  mt__bt_decoder_init(&d);
  static enc_out o;

  /* alloc 0: [1 2 3], all misses; both dates 0, so each goes to hash2:
   * 126, 253, 380 -> codewords 126<<2|3 = 0x1fb, 253<<2|3 = 0x3f7, 380<<2|3 = 0x5f3 */
  const uint64_t bt123[3] = {1, 2, 3};
  encode(&e, &o, 0, bt123, 0, 3);
  const uint8_t want1[30] = {0xfb, 0x01, 1, 0, 0, 0, 0, 0, 0, 0,
                             0xf7, 0x03, 2, 0, 0, 0, 0, 0, 0, 0,
                             0xf3, 0x05, 3, 0, 0, 0, 0, 0, 0, 0};
  assert_int_equal(o.ncodes, 3);
  assert_int_equal(o.len, 30);
  assert_memory_equal(o.bytes, want1, 30);
  assert_int_equal(o.miss.n, 3);
  assert_int_equal(o.miss.codes[0], 1);
  assert_int_equal(o.miss.codes[1], 2);
  assert_int_equal(o.miss.codes[2], 3);
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  assert_bt(&d, bt123, 3);

  /* alloc 1: [1 2 3] again from scratch: a hit on 126 and 2 correct
   * predictions (next[126] = 253, next[253] = 380): 126<<2|2 = 0x1fa, 2 */
  encode(&e, &o, 1, bt123, 0, 3);
  const uint8_t want2[3] = {0xfa, 0x01, 0x02};
  assert_int_equal(o.ncodes, 1);
  assert_int_equal(o.len, 3);
  assert_memory_equal(o.bytes, want2, 3);
  assert_int_equal(o.miss.n, 0);
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  assert_bt(&d, bt123, 3);

  /* alloc 2: [1 3]: hit 126, prediction 253 (code 2) is wrong: 0x1f8;
   * then 3 hits in its hash2 slot 380 with no prediction left: 0x5f0 */
  const uint64_t bt13[2] = {1, 3};
  encode(&e, &o, 2, bt13, 0, 2);
  const uint8_t want3[4] = {0xf8, 0x01, 0xf0, 0x05};
  assert_int_equal(o.ncodes, 2);
  assert_memory_equal(o.bytes, want3, 4);
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  assert_bt(&d, bt13, 2);

  /* alloc 3: [1 3] again: next[126] is now 380: one prediction, 0x1f9 */
  encode(&e, &o, 3, bt13, 0, 2);
  const uint8_t want4[2] = {0xf9, 0x01};
  assert_int_equal(o.ncodes, 1);
  assert_memory_equal(o.bytes, want4, 2);
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  assert_bt(&d, bt13, 2);

  /* alloc 4: [1 3 4] with the common prefix 2: only 4 is coded, a miss.
   * hash1(4) = 3099, hash2(4) = 507, both dates 0 -> 507: 507<<2|3 = 0x7ef */
  const uint64_t bt134[3] = {1, 3, 4};
  encode(&e, &o, 4, bt134, 2, 3);
  const uint8_t want5[10] = {0xef, 0x07, 4, 0, 0, 0, 0, 0, 0, 0};
  assert_int_equal(o.ncodes, 1);
  assert_memory_equal(o.bytes, want5, 10);
  assert_int_equal(decode(&d, &o, 2), MT__BT_OK);
  assert_bt(&d, bt134, 3);

  /* the encoder's state, as memtrace's would be */
  assert_int_equal(e.code[126], 1);
  assert_int_equal(e.code[380], 3);
  assert_int_equal(e.code[507], 4);
  assert_int_equal(e.date[126], 3);
  /* a predicted frame keeps its date: memtrace's code_with_prediction
   * dates only the run's first hit (380 was last a direct hit in alloc 2) */
  assert_int_equal(e.date[380], 2);
  assert_int_equal(e.date[507], 4);
  assert_int_equal(e.date[253], 0); /* only ever predicted after alloc 0 */
  assert_int_equal(e.next[126], 380);
  assert_int_equal(e.next[0], 507); /* a new coding starts with predictor 0 */
  /* the decoder mirrors the shared part */
  assert_int_equal(d.code[126], 1);
  assert_int_equal(d.pred[126], 380);
  mt__bt_decoder_free(&d);
}

/* The decoder alone, on hand-written bytes (nothing an encoder made). */
static void decoder_hand_written(void **state) {
  (void)state;
  static mt__bt_decoder d;
  mt__bt_decoder_init(&d);
  uint8_t b[64];
  size_t n = 0;
  /* miss 0x1111 into bucket 10, miss 0x2222 into bucket 20 */
  put_le16(b + n, 10 << 2 | 3), n += 2;
  tu_st64(b + n, 0x1111), n += 8;
  put_le16(b + n, 20 << 2 | 3), n += 2;
  tu_st64(b + n, 0x2222), n += 8;
  /* hit bucket 10 with 3 predictions: pred[10] = 20, pred[20] = ? (0 -> code 0) */
  put_le16(b + n, 10 << 2 | 2), n += 2;
  b[n++] = 3;
  mt__rd r = {b, b + n, 0};
  assert_int_equal(mt__bt_decode(&d, &r, 3, 0), MT__BT_OK);
  assert_ptr_equal(r.p, b + n);
  /* after the hit on 10: pred[0] was 10 (first codeword), 10 -> 20 from the
   * misses, then 20 -> 10 (set when the hit codeword was read with pred 20),
   * then 10 -> 20 again */
  const uint64_t want[6] = {0x1111, 0x2222, 0x1111, 0x2222, 0x1111, 0x2222};
  assert_bt(&d, want, 6);
  assert_int_equal(d.pred[0], 10);
  assert_int_equal(d.pred[10], 20);
  assert_int_equal(d.pred[20], 10);

  /* nothing new, common prefix 4: the first 4 frames of the last one */
  mt__rd r2 = {b, b, 0};
  assert_int_equal(mt__bt_decode(&d, &r2, 0, 4), MT__BT_OK);
  assert_bt(&d, want, 4);
  /* common 0, nothing new: empty */
  assert_int_equal(mt__bt_decode(&d, &r2, 0, 0), MT__BT_OK);
  assert_int_equal(d.len, 0);
  mt__bt_decoder_free(&d);
}

/* Random backtraces sharing prefixes (a stack that pops and pushes), codes
 * drawn from a pool larger than the cache (evictions), with repeats and
 * empty ones: each decodes to what was encoded, the logged misses are the
 * literals in the output, and the verifier passes after every batch. */
/* Random backtraces from a pool larger than the cache round-trip, with
 * either placement of codes; each code sits in one of its two slots. */
static void round_trip(int by_address) {
  static mt__bt_encoder e;
  static mt__bt_decoder d;
  static enc_out o;
  mt__bt_encoder_init(&e);
  e.by_address = by_address;
  mt__bt_decoder_init(&d);
  enum { POOL = 40000, MAXLEN = 300, NALLOC = 20000 };
  uint64_t *pool = malloc(POOL * sizeof *pool);
  tu_rng rng = {0xb7c0dec};
  for (size_t i = 0; i < POOL; i++) pool[i] = tu_next(&rng) >> (tu_below(&rng, 4) * 16);
  pool[0] = 0; /* the code 0 hits the empty cache: still round-trips */
  uint64_t stack[MAXLEN], prev[MAXLEN];
  size_t len = 0, prev_len = 0;
  size_t total_hits = 0, total_misses = 0, tags_found = 0, frames_decoded = 0;
  for (uint64_t id = 1; id <= NALLOC; id++) {
    if (!tu_chance(&rng, 10)) { /* 10%: the same stack again */
      if (tu_chance(&rng, 3)) len = 0;
      else len -= tu_below(&rng, len + 1);
      size_t push = tu_below(&rng, tu_chance(&rng, 5) ? 200 : 12);
      for (size_t i = 0; i < push && len < MAXLEN; i++)
        stack[len++] = tu_chance(&rng, 85) ? pool[tu_below(&rng, 3000)]
                                           : pool[tu_below(&rng, POOL)];
    }
    size_t common = 0;
    while (common < len && common < prev_len && stack[common] == prev[common]) common++;
    encode(&e, &o, id, stack, common, len);
    /* count codewords and literals in the output */
    size_t pos = 0, ncw = 0, nlit = 0;
    while (pos < o.len) {
      unsigned cw = tu_ld16(o.bytes + pos);
      pos += 2;
      if ((cw & 3) == 3) {
        assert_int_equal(tu_ld64(o.bytes + pos), o.miss.codes[nlit]);
        nlit++;
        pos += 8;
      } else if ((cw & 3) == 2) {
        assert_true(o.bytes[pos] >= 2); /* 0 and 1 have their own tags */
        pos += 1;
        total_hits++;
      } else {
        total_hits++;
      }
      ncw++;
    }
    assert_int_equal(pos, o.len);
    assert_int_equal(ncw, o.ncodes);
    assert_int_equal(nlit, o.miss.n);
    total_misses += nlit;
    if (decode_g(&d, &o, common, 0) != MT__BT_OK) fail_msg("alloc %llu: decode failed", (unsigned long long)id);
    assert_bt(&d, stack, len);
    tags_found += use_tags(&d, common);
    frames_decoded += len - common;
    memcpy(prev, stack, len * sizeof *stack);
    prev_len = len;
    if (id % 37 == 0) {
      uint8_t v[12];
      mt__wr w = {v, v + 12, v};
      mt__bt_put_verifier(&e, &w);
      assert_int_equal(mt__wr_pos(&w), 12);
      assert_int_equal(mt__bt_check_verifier(&d, tu_ld16(v), tu_ld16(v + 2), tu_ld64(v + 4)), 1);
    }
  }
  /* the whole caches agree (the decoder's pred mirrors the encoder's next
   * wherever the decoder has seen the slot used) */
  for (size_t i = 0; i < MT__BT_CACHE_SIZE; i++) {
    assert_int_equal(d.code[i], e.code[i]);
    assert_int_equal(d.pred[i], e.next[i]);
  }
  assert_true(total_misses > POOL / 4); /* the pool overflowed the cache */
  assert_true(total_hits > 10000);
  /* most frames found their number: those of codes seen before, not since
   * evicted */
  assert_true(tags_found > frames_decoded / 2);
  size_t used = 0;
  for (uint32_t i = 0; i < MT__BT_CACHE_SIZE; i++) {
    if (!e.date[i]) continue; /* never taken (ids start at 1) */
    used++;
    uint64_t c = e.code[i];
    uint32_t a = (uint32_t)(c >> 3) & MASK;
    if (by_address ? i != a && i != (a ^ 8) : i != h1(c) && i != h2(c))
      fail_msg("slot %u holds 0x%llx, not one of its slots", i, (unsigned long long)c);
  }
  assert_true(used > MT__BT_CACHE_SIZE / 2);
  free(pool);
  mt__bt_decoder_free(&d);
}

static void random_round_trip(void **state) {
  (void)state;
  round_trip(0);
}

static void random_round_trip_by_address(void **state) {
  (void)state;
  round_trip(1);
}

/* By address, a program's codes (return addresses a few bytes to a few KB
 * apart) fill few lines of the tables: here 200 codes spread over 8 KB of
 * code take slots within 1,024 + 8 of each other, where memtrace's hashes
 * scatter them over the whole table. */
static void by_address_keeps_codes_together(void **state) {
  (void)state;
  static mt__bt_encoder e;
  static enc_out o;
  for (int by_address = 0; by_address <= 1; by_address++) {
    mt__bt_encoder_init(&e);
    e.by_address = by_address;
    tu_rng rng = {42};
    uint64_t bt[10];
    for (uint64_t id = 1; id <= 20; id++) {
      for (size_t i = 0; i < 10; i++) bt[i] = 0x555555554000ull + tu_below(&rng, 8192);
      encode(&e, &o, id, bt, 0, 10);
    }
    uint32_t lo = MASK, hi = 0;
    for (uint32_t i = 0; i < MT__BT_CACHE_SIZE; i++)
      if (e.date[i]) lo = i < lo ? i : lo, hi = i > hi ? i : hi;
    if (by_address) assert_true(hi - lo < 8192 / 8 + 9);
    else assert_true(hi - lo > MT__BT_CACHE_SIZE / 2);
  }
}

/* The decoder's two paths agree: events followed by enough bytes for their
 * longest encoding (10 per codeword) take the path without per-codeword
 * checks, events given their exact bytes the checked one. Two decoders fed
 * the same random events, one each way, decode the same frames, consume
 * the same bytes and end with the same caches. */
static void fast_and_checked_paths_agree(void **state) {
  (void)state;
  static mt__bt_encoder e;
  static mt__bt_decoder exact, padded;
  static enc_out o;
  static uint8_t buf[MT__BT_MAX_LENGTH * 4];
  mt__bt_encoder_init(&e);
  mt__bt_decoder_init(&exact);
  mt__bt_decoder_init(&padded);
  enum { POOL = 30000, MAXLEN = 600, NALLOC = 6000, NPATHS = 40 };
  uint64_t *pool = malloc(POOL * sizeof *pool);
  tu_rng rng = {0xfa57};
  for (size_t i = 0; i < POOL; i++) pool[i] = tu_next(&rng);
  /* stacks are prefixes of a few paths, so that predictions come true
   * (runs of every length, past 255 too), with a fresh code now and then */
  static uint64_t paths[NPATHS][MAXLEN];
  size_t path_len[NPATHS];
  for (size_t k = 0; k < NPATHS; k++) {
    path_len[k] = 1 + tu_below(&rng, k % 4 == 0 ? MAXLEN : 40);
    for (size_t i = 0; i < path_len[k]; i++) paths[k][i] = pool[tu_below(&rng, 800)];
  }
  uint64_t stack[MAXLEN], prev[MAXLEN];
  size_t len = 0, prev_len = 0, ndiffer = 0, nlong = 0, nruns = 0;
  for (uint64_t id = 1; id <= NALLOC; id++) {
    size_t k = tu_below(&rng, NPATHS);
    len = 1 + tu_below(&rng, path_len[k]);
    memcpy(stack, paths[k], len * sizeof *stack);
    if (tu_chance(&rng, 10)) stack[tu_below(&rng, len)] = pool[tu_below(&rng, POOL)];
    size_t common = 0;
    while (common < len && common < prev_len && stack[common] == prev[common]) common++;
    encode(&e, &o, id, stack, common, len);
    assert_int_equal(decode(&exact, &o, common), MT__BT_OK);
    memset(buf, 0xee, sizeof buf);
    memcpy(buf, o.bytes, o.len);
    size_t room = o.len > o.ncodes * 10 ? o.len : o.ncodes * 10;
    mt__rd r = {buf, buf + room, 0};
    assert_int_equal(mt__bt_decode(&padded, &r, o.ncodes, common), MT__BT_OK);
    assert_ptr_equal(r.p, buf + o.len);
    assert_bt(&exact, stack, len);
    assert_bt(&padded, stack, len);
    /* the same slots for the frames decoded, and the same tags found */
    for (size_t i = common; i < len; i++) assert_int_equal(exact.slot[i], padded.slot[i]);
    assert_int_equal(use_tags(&exact, common), use_tags(&padded, common));
    if (o.ncodes <= 32 && o.len < o.ncodes * 10) ndiffer++; /* the paths differed */
    else if (o.ncodes > 32) nlong++; /* checked both times */
    for (size_t pos = 0; pos + 2 <= o.len;) { /* runs of 2 or more predictions */
      unsigned tag = tu_ld16(o.bytes + pos) & 3;
      nruns += tag == 2;
      pos += tag == 3 ? 10 : tag == 2 ? 3 : 2;
    }
    memcpy(prev, stack, len * sizeof *stack);
    prev_len = len;
  }
  for (size_t i = 0; i < MT__BT_CACHE_SIZE; i++) {
    assert_int_equal(exact.code[i], padded.code[i]);
    assert_int_equal(exact.pred[i], padded.pred[i]);
    assert_int_equal(exact.tag[i], padded.tag[i]);
  }
  /* both kinds of events were there */
  assert_true(ndiffer > NALLOC / 4);
  assert_true(nlong > 100);
  assert_true(nruns > NALLOC);
  free(pool);
  mt__bt_decoder_free(&exact);
  mt__bt_decoder_free(&padded);
}

/* Prediction runs: 600 frames known in order code as hit+255, hit+255,
 * hit+87 (the 255 overflow starts a new hit on the predicted bucket). */
static void prediction_run_overflow(void **state) {
  (void)state;
  static mt__bt_encoder e;
  static mt__bt_decoder d;
  static enc_out o;
  mt__bt_encoder_init(&e);
  mt__bt_decoder_init(&d);
  uint64_t bt[600];
  collision_free_codes(bt, 600, 1000);
  /* load them: 300 misses, then the other 300 (the encoder cuts a
   * backtrace of 600 misses at 409) */
  encode(&e, &o, 1, bt, 0, 300);
  assert_int_equal(o.ncodes, 300);
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  encode(&e, &o, 2, bt, 300, 600);
  assert_int_equal(o.ncodes, 300);
  assert_int_equal(o.miss.n, 300);
  assert_int_equal(decode(&d, &o, 300), MT__BT_OK);
  assert_bt(&d, bt, 600);
  /* all hits; the chain breaks once, at 300 (each coding starts its
   * predictions from bucket 0): runs 0..255, 256..299, 300..555, 556..599 */
  encode(&e, &o, 3, bt, 0, 600);
  assert_int_equal(o.miss.n, 0);
  assert_int_equal(o.ncodes, 4);
  {
    uint8_t want[12];
    put_le16(want + 0, h2(bt[0]) << 2 | 2), want[2] = 255;
    put_le16(want + 3, h2(bt[256]) << 2 | 2), want[5] = 43;
    put_le16(want + 6, h2(bt[300]) << 2 | 2), want[8] = 255;
    put_le16(want + 9, h2(bt[556]) << 2 | 2), want[11] = 43;
    assert_int_equal(o.len, 12);
    assert_memory_equal(o.bytes, want, 12);
  }
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  assert_bt(&d, bt, 600);
  /* now every link is known: 256 + 256 + 88 */
  encode(&e, &o, 4, bt, 0, 600);
  {
    uint8_t want[9];
    put_le16(want + 0, h2(bt[0]) << 2 | 2), want[2] = 255;
    put_le16(want + 3, h2(bt[256]) << 2 | 2), want[5] = 255;
    put_le16(want + 6, h2(bt[512]) << 2 | 2), want[8] = 87;
    assert_int_equal(o.ncodes, 3);
    assert_int_equal(o.len, 9);
    assert_memory_equal(o.bytes, want, 9);
  }
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  assert_bt(&d, bt, 600);
  /* exactly 256 frames: one codeword with 255; 257: then a plain hit */
  encode(&e, &o, 5, bt, 0, 256);
  assert_int_equal(o.ncodes, 1);
  assert_int_equal(o.len, 3);
  assert_int_equal(o.bytes[2], 255);
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  assert_bt(&d, bt, 256);
  encode(&e, &o, 6, bt, 0, 257);
  assert_int_equal(o.ncodes, 2);
  assert_int_equal(o.len, 5);
  assert_int_equal(tu_ld16(o.bytes + 3), h2(bt[256]) << 2 | 0);
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  assert_bt(&d, bt, 257);
  /* 1 and 2 predictions use tags 1 and 2 */
  encode(&e, &o, 7, bt, 0, 2);
  assert_int_equal(o.len, 2);
  assert_int_equal(tu_ld16(o.bytes), h2(bt[0]) << 2 | 1);
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  encode(&e, &o, 8, bt, 0, 3);
  assert_int_equal(o.len, 3);
  assert_int_equal(tu_ld16(o.bytes), h2(bt[0]) << 2 | 2);
  assert_int_equal(o.bytes[2], 2);
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  assert_bt(&d, bt, 3);
  mt__bt_decoder_free(&d);
}

/* Deep recursion: [a b r x 1000] is 3 misses and 4 hits (256+256+256+231
 * frames of r after the first), 42 bytes. */
static void repeated_frames(void **state) {
  (void)state;
  static mt__bt_encoder e;
  static mt__bt_decoder d;
  static enc_out o;
  mt__bt_encoder_init(&e);
  mt__bt_decoder_init(&d);
  uint64_t codes[3];
  collision_free_codes(codes, 3, 77);
  static uint64_t bt[1002];
  bt[0] = codes[0];
  bt[1] = codes[1];
  for (int i = 2; i < 1002; i++) bt[i] = codes[2];
  encode(&e, &o, 1, bt, 0, 1002);
  assert_int_equal(o.miss.n, 3);
  assert_int_equal(o.ncodes, 7);
  assert_int_equal(o.len, 42);
  uint32_t r = h2(codes[2]);
  assert_int_equal(tu_ld16(o.bytes + 30), r << 2 | 2);
  assert_int_equal(o.bytes[32], 255);
  assert_int_equal(o.bytes[35], 255);
  assert_int_equal(o.bytes[38], 255);
  assert_int_equal(tu_ld16(o.bytes + 39), r << 2 | 2);
  assert_int_equal(o.bytes[41], 230);
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  assert_bt(&d, bt, 1002);
  /* alternating pair recursion: [p q p q ...] x 600 after two misses */
  static uint64_t bt2[600];
  for (int i = 0; i < 600; i++) bt2[i] = codes[i % 2];
  encode(&e, &o, 2, bt2, 0, 600);
  assert_int_equal(o.miss.n, 0);
  assert_true(o.len < 20);
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  assert_bt(&d, bt2, 600);
  mt__bt_decoder_free(&d);
}

/* Eviction: a miss replaces the older of its two slots (by date = the
 * allocation id of the last use), as memtrace. */
static void eviction_by_date(void **state) {
  (void)state;
  static mt__bt_encoder e;
  static mt__bt_decoder d;
  static enc_out o;
  /* X with slots s1 = h1(X), s2 = h2(X); P lands in s1 (its hash2), Q in
   * s2 (its hash2); their other slots are elsewhere. */
  uint64_t X = 0, P = 0, Q = 0;
  for (uint64_t c = 5000; !X; c++)
    if (h1(c) != h2(c)) X = c;
  uint32_t s1 = h1(X), s2 = h2(X);
  for (uint64_t c = 1; !P || !Q; c++) {
    if (c == X) continue;
    if (!P && h2(c) == s1 && h1(c) != s2 && h1(c) != s1) P = c;
    else if (!Q && h2(c) == s2 && h1(c) != s1 && h1(c) != s2) Q = c;
  }
  for (int older_first = 0; older_first < 2; older_first++) {
    mt__bt_encoder_init(&e);
    mt__bt_decoder_init(&d);
    /* P at date 5 and Q at date 7, or the other way round */
    uint64_t dp = older_first ? 7 : 5, dq = older_first ? 5 : 7;
    uint64_t first = dp < dq ? P : Q, second = dp < dq ? Q : P;
    encode(&e, &o, 5, &first, 0, 1);
    assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
    encode(&e, &o, 7, &second, 0, 1);
    assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
    assert_int_equal(e.code[s1], P);
    assert_int_equal(e.code[s2], Q);
    assert_int_equal(e.date[s1], dp);
    assert_int_equal(e.date[s2], dq);
    /* X misses and evicts the older one */
    encode(&e, &o, 10, &X, 0, 1);
    uint32_t victim = dp < dq ? s1 : s2;
    uint64_t evicted = dp < dq ? P : Q, kept = dp < dq ? Q : P;
    uint32_t kept_slot = dp < dq ? s2 : s1;
    assert_int_equal(o.miss.n, 1);
    assert_int_equal(tu_ld16(o.bytes), victim << 2 | 3);
    assert_int_equal(tu_ld64(o.bytes + 2), X);
    assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
    assert_int_equal(d.code[victim], X);
    /* the kept one still hits; the evicted one misses again */
    encode(&e, &o, 11, &kept, 0, 1);
    assert_int_equal(o.miss.n, 0);
    assert_int_equal(tu_ld16(o.bytes), kept_slot << 2);
    assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
    assert_bt(&d, &kept, 1);
    encode(&e, &o, 12, &evicted, 0, 1);
    assert_int_equal(o.miss.n, 1);
    assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
    assert_bt(&d, &evicted, 1);
    /* X now hits through whichever slot holds it (hash1 or hash2 path) */
    encode(&e, &o, 13, &X, 0, 1);
    if (e.code[s1] == X || e.code[s2] == X) {
      assert_int_equal(o.miss.n, 0);
    } else {
      assert_int_equal(o.miss.n, 1);
    }
    assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
    assert_bt(&d, &X, 1);
    mt__bt_decoder_free(&d);
  }
}

/* A hit through hash1 (the code sits in its first slot). */
static void hit_via_hash1(void **state) {
  (void)state;
  static mt__bt_encoder e;
  static mt__bt_decoder d;
  static enc_out o;
  mt__bt_encoder_init(&e);
  mt__bt_decoder_init(&d);
  /* Occupy h2(X) at a late date so X's miss takes h1(X). */
  uint64_t X = 0, Y = 0;
  for (uint64_t c = 9000; !X; c++)
    if (h1(c) != h2(c)) X = c;
  for (uint64_t c = 1; !Y; c++)
    if (c != X && h2(c) == h2(X) && h1(c) != h1(X)) Y = c;
  encode(&e, &o, 3, &Y, 0, 1); /* Y into h2(X) at date 3 */
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  encode(&e, &o, 4, &X, 0, 1); /* date(h1 X) = 0 < 3: h1 */
  assert_int_equal(tu_ld16(o.bytes), h1(X) << 2 | 3);
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  encode(&e, &o, 5, &X, 0, 1);
  assert_int_equal(o.miss.n, 0);
  assert_int_equal(tu_ld16(o.bytes), h1(X) << 2);
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  assert_bt(&d, &X, 1);
  mt__bt_decoder_free(&d);
}

/* The 4096-byte cut: 1000 fresh codes stop after 409 misses (4090
 * bytes); 3000 cached codes with no usable predictions stop after 2044
 * hits (4088 bytes). The decoder gets that prefix and stays in step. */
static void max_length_cut(void **state) {
  (void)state;
  static mt__bt_encoder e;
  static mt__bt_decoder d;
  static enc_out o;
  mt__bt_encoder_init(&e);
  mt__bt_decoder_init(&d);
  static uint64_t bt[3000];
  collision_free_codes(bt, 3000, 1);
  encode(&e, &o, 1, bt, 0, 1000);
  assert_int_equal(o.ncodes, 409);
  assert_int_equal(o.len, 4090);
  assert_int_equal(o.miss.n, 409);
  assert_int_equal(o.miss.codes[408], bt[408]);
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  assert_bt(&d, bt, 409);

  /* cache every code on its own (predictor 0 each time: no chains) */
  for (size_t i = 409; i < 3000; i++) {
    encode(&e, &o, 2 + i, &bt[i], 0, 1);
    assert_int_equal(o.miss.n, 1);
    assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  }
  /* the first 409 were chained by their coding; break those links by
   * re-coding them one by one */
  for (size_t i = 0; i < 409; i++) {
    encode(&e, &o, 5000 + i, &bt[i], 0, 1);
    assert_int_equal(o.miss.n, 0);
    assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  }
  /* links were set by the 409-miss coding: next[s_i] = s_{i+1}; re-coding
   * single frames only sets next[0]. So frames 0..408 predict each other.
   * Use the codes in reverse order instead: no link applies. */
  static uint64_t rev[3000];
  for (size_t i = 0; i < 3000; i++) rev[i] = bt[2999 - i];
  encode(&e, &o, 9000, rev, 0, 3000);
  assert_int_equal(o.miss.n, 0);
  assert_int_equal(o.ncodes, 2044);
  assert_int_equal(o.len, 4088);
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  assert_bt(&d, rev, 2044);
  /* still in step afterwards */
  encode(&e, &o, 9001, bt, 0, 100);
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  assert_bt(&d, bt, 100);
  mt__bt_decoder_free(&d);
}

/* The writer computes the next common prefix against the whole previous
 * backtrace, so after a cut it can exceed what the decoder has: the decoder
 * keeps its previous backtrace, still applies the coded entries to its
 * cache, and a later backtrace using them decodes right. */
static void common_prefix_beyond_decoded(void **state) {
  (void)state;
  static mt__bt_encoder e;
  static mt__bt_decoder d;
  static enc_out o;
  mt__bt_encoder_init(&e);
  mt__bt_decoder_init(&d);
  static uint64_t bt[1002];
  collision_free_codes(bt, 1002, 3);
  encode(&e, &o, 1, bt, 0, 1000);
  assert_int_equal(o.ncodes, 409);
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  assert_int_equal(d.len, 409);
  /* B = bt[0..900) + bt[1000], common prefix 900 with the full A */
  static uint64_t b[901];
  memcpy(b, bt, 900 * sizeof *b);
  b[900] = bt[1000];
  encode(&e, &o, 2, b, 900, 901);
  assert_int_equal(o.ncodes, 1);
  assert_int_equal(o.miss.n, 1);
  assert_int_equal(decode(&d, &o, 900), MT__BT_OK);
  assert_bt(&d, bt, 409); /* the previous backtrace, as memtrace returns */
  assert_int_equal(d.code[h2(bt[1000])], bt[1000]); /* cache updated */
  /* a backtrace starting with bt[1000] then bt[0]: hit and hit */
  uint64_t c[2] = {bt[1000], bt[0]};
  encode(&e, &o, 3, c, 0, 2);
  assert_int_equal(o.miss.n, 0);
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);
  assert_bt(&d, c, 2);
  mt__bt_decoder_free(&d);
}

/* Tags (bt_tags.h) when a backtrace puts codes W, V, W by turns into one
 * slot: its frames W, V, W come from that slot, which ends holding W. The
 * number given the first W is not V's, nor is the number V had in an
 * earlier backtrace W's; through the expanding path and the checked one. */
static void tags_of_replaced_slots(void **state) {
  (void)state;
  static mt__bt_decoder d;
  const uint64_t W = 0x1111, V = 0x2222, slot = 5;
  uint8_t b[64];
  size_t n = 0;
  const uint64_t lits[] = {V, W, V, W};
  for (size_t k = 0; k < 4; k++) {
    uint16_t cw = (uint16_t)(slot << 2 | 3);
    memcpy(b + n, &cw, 2); /* little-endian, as the trace */
    memcpy(b + n + 2, &lits[k], 8);
    n += 10;
  }
  for (int checked = 0; checked <= 1; checked++) {
    mt__bt_decoder_init(&d);
    /* V alone, numbered */
    mt__rd r = {b, b + (checked ? 10 : sizeof b), 0};
    assert_int_equal(mt__bt_decode(&d, &r, 1, 0), MT__BT_OK);
    assert_int_equal(use_tags(&d, 0), 0);
    assert_int_equal(d.tag[slot], tag_number(V));
    /* W, V, W */
    r = (mt__rd){b + 10, b + (checked ? 40 : sizeof b), 0};
    assert_int_equal(mt__bt_decode(&d, &r, 3, 0), MT__BT_OK);
    uint64_t want[] = {W, V, W};
    assert_bt(&d, want, 3);
    for (size_t i = 0; i < 3; i++) assert_int_equal(d.slot[i], slot);
    assert_int_equal(d.tag[slot], 0); /* cleared by the literals */
    assert_int_equal(use_tags(&d, 0), 1); /* the second W finds the first's */
    assert_int_equal(d.tag[slot], tag_number(W));
    mt__bt_decoder_free(&d);
  }
}

/* Verifier: memtrace's slot sequence 4242, +5413 mod 2^14; bytes
 * ix, next[ix], code[ix]; the dummy is ffff 0000 0*8 and always passes. */
static void verifier(void **state) {
  (void)state;
  static mt__bt_encoder e;
  static mt__bt_decoder d;
  static enc_out o;
  mt__bt_encoder_init(&e);
  mt__bt_decoder_init(&d);
  /* put codes in slot 4242 (as hash2) and one following it */
  uint64_t A = 0, B = 0;
  for (uint64_t c = 1; !A; c++)
    if (h2(c) == 4242 && h1(c) != 4242) A = c;
  for (uint64_t c = 1; !B; c++)
    if (c != A && h1(c) != h2(c) && h1(c) != 4242 && h2(c) != 4242 &&
        h1(c) != h1(A) && h2(c) != h1(A))
      B = c;
  uint64_t bt[2] = {A, B};
  encode(&e, &o, 1, bt, 0, 2);
  assert_int_equal(decode(&d, &o, 0), MT__BT_OK);

  uint8_t v[12];
  mt__wr w = {v, v + 12, v};
  mt__bt_put_verifier(&e, &w);
  uint8_t want[12];
  tu_st16(want, 4242);
  tu_st16(want + 2, (uint16_t)h2(B));
  tu_st64(want + 4, A);
  assert_memory_equal(v, want, 12);
  assert_int_equal(mt__bt_check_verifier(&d, 4242, (uint16_t)h2(B), A), 1);
  assert_int_equal(mt__bt_check_verifier(&d, 4242, (uint16_t)h2(B) ^ 1, A), 0);
  assert_int_equal(mt__bt_check_verifier(&d, 4242, (uint16_t)h2(B), A + 1), 0);
  assert_int_equal(mt__bt_check_verifier(&d, 4243, (uint16_t)h2(B), A), 0);
  assert_int_equal(mt__bt_check_verifier(&d, 0x4000, 0, 0), 0); /* out of range */
  assert_int_equal(mt__bt_check_verifier(&d, 0xfffe, 0, 0), 0);
  assert_int_equal(mt__bt_check_verifier(&d, 0xffff, 123, 456), 1); /* dummy */

  /* the next slots: 9655, 15068, 4097 (wraps), 9510 */
  const unsigned seq[4] = {9655, 15068, 4097, 9510};
  for (int i = 0; i < 4; i++) {
    w = (mt__wr){v, v + 12, v};
    mt__bt_put_verifier(&e, &w);
    assert_int_equal(tu_ld16(v), seq[i]);
    assert_int_equal(mt__bt_check_verifier(&d, tu_ld16(v), tu_ld16(v + 2), tu_ld64(v + 4)), 1);
  }
  w = (mt__wr){v, v + 12, v};
  mt__bt_put_dummy_verifier(&w);
  const uint8_t dummy[12] = {0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  assert_int_equal(mt__wr_pos(&w), 12);
  assert_memory_equal(v, dummy, 12);
  mt__bt_decoder_free(&d);
}

/* Every cut of a valid coding reports TRUNCATED without reading past the
 * end (guard page). */
static void decoder_truncated(void **state) {
  (void)state;
  static mt__bt_encoder e;
  static mt__bt_decoder d;
  static enc_out o1, o2;
  mt__bt_encoder_init(&e);
  uint64_t bt[40];
  collision_free_codes(bt, 20, 11);
  for (int i = 20; i < 40; i++) bt[i] = bt[(i * 7) % 20]; /* hits, some runs */
  encode(&e, &o1, 1, bt, 0, 20); /* misses */
  encode(&e, &o2, 2, bt, 0, 40); /* hits */
  assert_int_equal(o1.len, 200);
  assert_true(o2.len >= 20);
  const enc_out *outs[2] = {&o1, &o2};
  for (int k = 0; k < 2; k++) {
    size_t full = outs[k]->len;
    for (size_t cut = 0; cut < full; cut++) {
      mt__bt_decoder_init(&d);
      tu_guarded g = tu_guarded_copy(outs[k]->bytes, cut);
      mt__rd r = {g.p, g.p + cut, 0};
      int rc = mt__bt_decode(&d, &r, outs[k]->ncodes, 0);
      if (rc != MT__BT_TRUNCATED) fail_msg("coding %d cut at %zu of %zu: rc %d", k, cut, full, rc);
      tu_guarded_free(&g);
      mt__bt_decoder_free(&d);
    }
  }
  /* a miss literal cut short */
  mt__bt_decoder_init(&d);
  uint8_t m[6] = {0x07, 0x00, 1, 2, 3, 4};
  tu_guarded g = tu_guarded_copy(m, sizeof m);
  mt__rd r = {g.p, g.p + sizeof m, 0};
  assert_int_equal(mt__bt_decode(&d, &r, 1, 0), MT__BT_TRUNCATED);
  tu_guarded_free(&g);
  /* a tag-2 hit without its count byte */
  uint8_t h[2] = {0x06, 0x00};
  g = tu_guarded_copy(h, sizeof h);
  r = (mt__rd){g.p, g.p + sizeof h, 0};
  assert_int_equal(mt__bt_decode(&d, &r, 1, 0), MT__BT_TRUNCATED);
  tu_guarded_free(&g);
  /* more codewords announced than present */
  uint8_t one[2] = {0x04, 0x00};
  g = tu_guarded_copy(one, sizeof one);
  r = (mt__rd){g.p, g.p + sizeof one, 0};
  assert_int_equal(mt__bt_decode(&d, &r, 2, 0), MT__BT_TRUNCATED);
  tu_guarded_free(&g);
  mt__bt_decoder_free(&d);
}

/* A hostile coding that expands past MT__BT_MAX_FRAMES is refused. */
static void decoder_too_long(void **state) {
  (void)state;
  static mt__bt_decoder d;
  mt__bt_decoder_init(&d);
  size_t ncw = MT__BT_MAX_FRAMES / 256 + 1;
  uint8_t *b = malloc(ncw * 3);
  for (size_t i = 0; i < ncw; i++) {
    tu_st16(b + 3 * i, 5 << 2 | 2);
    b[3 * i + 2] = 255;
  }
  mt__rd r = {b, b + ncw * 3, 0};
  assert_int_equal(mt__bt_decode(&d, &r, ncw, 0), MT__BT_TOO_LONG);
  /* exactly at the limit: fine */
  mt__bt_decoder_free(&d);
  mt__bt_decoder_init(&d);
  r = (mt__rd){b, b + (ncw - 1) * 3, 0};
  assert_int_equal(mt__bt_decode(&d, &r, ncw - 1, 0), MT__BT_OK);
  assert_int_equal(d.len, MT__BT_MAX_FRAMES);
  free(b);
  mt__bt_decoder_free(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(hashes_as_memtrace),
      cmocka_unit_test(hand_checked_bytes),
      cmocka_unit_test(decoder_hand_written),
      cmocka_unit_test(random_round_trip),
      cmocka_unit_test(random_round_trip_by_address),
      cmocka_unit_test(by_address_keeps_codes_together),
      cmocka_unit_test(fast_and_checked_paths_agree),
      cmocka_unit_test(prediction_run_overflow),
      cmocka_unit_test(repeated_frames),
      cmocka_unit_test(eviction_by_date),
      cmocka_unit_test(hit_via_hash1),
      cmocka_unit_test(max_length_cut),
      cmocka_unit_test(common_prefix_beyond_decoded),
      cmocka_unit_test(tags_of_replaced_slots),
      cmocka_unit_test(verifier),
      cmocka_unit_test(decoder_truncated),
      cmocka_unit_test(decoder_too_long),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
