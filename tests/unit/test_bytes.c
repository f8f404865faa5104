/* bytes.h: little-endian helpers, the checked read cursor, vints, strings.
 *
 * The vint expectations are memtrace's Buf.Write.put_vint: one byte for
 * 0..252; 253 + u16 when v = v land 0xffff; 254 + s32 when v fits an
 * Int32; 255 + 64 bits otherwise (so negative numbers take 5 or 9 bytes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "format/bytes.h"
#include "mt_test_util.h"

typedef struct vint_case {
  int64_t v;
  size_t len;
  uint8_t bytes[9];
} vint_case;

static const vint_case vint_cases[] = {
    {0, 1, {0x00}},
    {1, 1, {0x01}},
    {252, 1, {0xfc}},
    {253, 3, {0xfd, 0xfd, 0x00}},
    {254, 3, {0xfd, 0xfe, 0x00}},
    {255, 3, {0xfd, 0xff, 0x00}},
    {256, 3, {0xfd, 0x00, 0x01}},
    {0xfffe, 3, {0xfd, 0xfe, 0xff}},
    {0xffff, 3, {0xfd, 0xff, 0xff}},
    {0x10000, 5, {0xfe, 0x00, 0x00, 0x01, 0x00}},
    {0x12345678, 5, {0xfe, 0x78, 0x56, 0x34, 0x12}},
    {INT32_MAX, 5, {0xfe, 0xff, 0xff, 0xff, 0x7f}},
    {(int64_t)INT32_MAX + 1, 9, {0xff, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00}},
    {0xffffffffll, 9, {0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00}},
    {0x100000000ll, 9, {0xff, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00}},
    {-1, 5, {0xfe, 0xff, 0xff, 0xff, 0xff}},
    {-2, 5, {0xfe, 0xfe, 0xff, 0xff, 0xff}},
    {-252, 5, {0xfe, 0x04, 0xff, 0xff, 0xff}},
    {-253, 5, {0xfe, 0x03, 0xff, 0xff, 0xff}},
    {-0xffff, 5, {0xfe, 0x01, 0x00, 0xff, 0xff}},
    {INT32_MIN, 5, {0xfe, 0x00, 0x00, 0x00, 0x80}},
    {(int64_t)INT32_MIN - 1, 9, {0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff}},
    {INT64_MAX, 9, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}},
    {INT64_MIN, 9, {0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80}},
    /* OCaml's max_int and min_int (63-bit): the largest values memtrace
     * itself can write. */
    {0x3fffffffffffffffll, 9, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x3f}},
    {-0x4000000000000000ll, 9, {0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0}},
};
#define NCASES (sizeof vint_cases / sizeof vint_cases[0])

static void vint_encode_matches_memtrace(void **state) {
  (void)state;
  for (size_t i = 0; i < NCASES; i++) {
    const vint_case *c = &vint_cases[i];
    uint8_t buf[16];
    memset(buf, 0xaa, sizeof buf);
    mt__wr w = {buf, buf + sizeof buf, buf};
    mt__putvint(&w, c->v);
    if (mt__wr_pos(&w) != c->len || memcmp(buf, c->bytes, c->len) != 0)
      fail_msg("vint %lld: wrote %zu bytes, expected %zu", (long long)c->v,
               mt__wr_pos(&w), c->len);
    assert_int_equal(buf[c->len], 0xaa); /* nothing past the encoding */
  }
}

static void vint_decode_every_case(void **state) {
  (void)state;
  for (size_t i = 0; i < NCASES; i++) {
    const vint_case *c = &vint_cases[i];
    tu_guarded g = tu_guarded_copy(c->bytes, c->len);
    mt__rd r = {g.p, g.p + c->len, 0};
    int64_t v = mt__getvint(&r);
    if (v != c->v) fail_msg("case %zu: decoded %lld, expected %lld", i, (long long)v, (long long)c->v);
    assert_int_equal(r.bad, 0);
    assert_ptr_equal(r.p, r.end);
    tu_guarded_free(&g);
  }
}

/* Every strict prefix of every encoding: `bad`, value 0, cursor at the end,
 * and (guard page) no byte past the end was touched. */
static void vint_truncated_sets_bad(void **state) {
  (void)state;
  for (size_t i = 0; i < NCASES; i++) {
    const vint_case *c = &vint_cases[i];
    for (size_t k = 0; k < c->len; k++) {
      tu_guarded g = tu_guarded_copy(c->bytes, k);
      mt__rd r = {g.p, g.p + k, 0};
      int64_t v = mt__getvint(&r);
      if (!r.bad || v != 0)
        fail_msg("vint %lld cut to %zu bytes: bad=%d value=%lld", (long long)c->v, k,
                 r.bad, (long long)v);
      assert_ptr_equal(r.p, r.end);
      tu_guarded_free(&g);
    }
  }
}

/* The decoder accepts the wide forms of small numbers (memtrace does), and
 * the 16-bit form is unsigned while the 32-bit one is signed. */
static void vint_decode_noncanonical_and_signs(void **state) {
  (void)state;
  static const struct {
    uint8_t b[9];
    size_t n;
    int64_t v;
  } cases[] = {
      {{0xfd, 0x05, 0x00}, 3, 5},
      {{0xfd, 0xff, 0xff}, 3, 65535}, /* not -1 */
      {{0xfe, 0x05, 0x00, 0x00, 0x00}, 5, 5},
      {{0xfe, 0xff, 0xff, 0xff, 0xff}, 5, -1}, /* sign-extended */
      {{0xfe, 0xff, 0xff, 0xff, 0x7f}, 5, INT32_MAX},
      {{0xff, 0x07, 0, 0, 0, 0, 0, 0, 0}, 9, 7},
      {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 9, -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mt__rd r = {cases[i].b, cases[i].b + cases[i].n, 0};
    assert_int_equal(mt__getvint(&r), cases[i].v);
    assert_int_equal(r.bad, 0);
    assert_ptr_equal(r.p, r.end);
  }
}

/* Encoding then decoding random values of every magnitude. */
static void vint_random_round_trip(void **state) {
  (void)state;
  tu_rng rng = {12345};
  uint8_t buf[9 * 1000];
  int64_t vals[1000];
  mt__wr w = {buf, buf + sizeof buf, buf};
  for (int i = 0; i < 1000; i++) {
    unsigned bits = (unsigned)tu_below(&rng, 64);
    int64_t v = (int64_t)(tu_next(&rng) >> (63 - bits));
    if (tu_chance(&rng, 30) && v != INT64_MIN) v = -v;
    vals[i] = v;
    size_t before = mt__wr_pos(&w);
    mt__putvint(&w, v);
    size_t n = mt__wr_pos(&w) - before;
    size_t want = v >= 0 && v <= 252 ? 1 : v >= 0 && v <= 0xffff ? 3
                  : v >= INT32_MIN && v <= INT32_MAX ? 5 : 9;
    assert_int_equal(n, want);
  }
  tu_guarded g = tu_guarded_copy(buf, mt__wr_pos(&w));
  mt__rd r = {g.p, g.p + mt__wr_pos(&w), 0};
  for (int i = 0; i < 1000; i++) assert_int_equal(mt__getvint(&r), vals[i]);
  assert_int_equal(r.bad, 0);
  assert_ptr_equal(r.p, r.end);
  tu_guarded_free(&g);
}

static void fixed_width_little_endian(void **state) {
  (void)state;
  const uint8_t b[15] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
                         0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0xff};
  assert_int_equal(mt__ld16(b), 0x0201);
  assert_int_equal(mt__ld32(b), 0x04030201);
  assert_int_equal(mt__ld64(b), 0x0807060504030201ull);
  tu_guarded g = tu_guarded_copy(b, sizeof b);
  mt__rd r = {g.p, g.p + sizeof b, 0};
  assert_int_equal(mt__get8(&r), 0x01);
  assert_int_equal(mt__get16(&r), 0x0302);
  assert_int_equal(mt__get32(&r), 0x07060504);
  assert_int_equal(mt__get64(&r), 0xff0e0d0c0b0a0908ull);
  assert_int_equal(r.bad, 0);
  assert_ptr_equal(r.p, r.end);
  /* one more byte: past the end */
  assert_int_equal(mt__get8(&r), 0);
  assert_int_equal(r.bad, 1);
  tu_guarded_free(&g);

  uint8_t out[8];
  mt__st16(out, 0xbeef);
  assert_int_equal(out[0], 0xef);
  assert_int_equal(out[1], 0xbe);
  mt__st32(out, 0xdeadbeef);
  assert_int_equal(out[0], 0xef);
  assert_int_equal(out[3], 0xde);
  mt__st64(out, 0x0123456789abcdefull);
  assert_int_equal(out[0], 0xef);
  assert_int_equal(out[7], 0x01);
  assert_int_equal(mt__ld64(out), 0x0123456789abcdefull);
  assert_int_equal(mt__ld16((const uint8_t[]){0xff, 0xff}), 0xffff);
  assert_int_equal(mt__ld32((const uint8_t[]){0xff, 0xff, 0xff, 0xff}), 0xffffffffu);
}

/* Each getter at each shortfall: zero, `bad`, cursor pinned to the end,
 * and `bad` stays set (later reads that would fit still fail safe only if
 * the caller checks; the cursor gives them nothing). */
static void getters_past_end(void **state) {
  (void)state;
  const uint8_t src[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (size_t avail = 0; avail < 8; avail++) {
    for (int width = 1; width <= 8; width *= 2) {
      if ((size_t)width <= avail) continue;
      tu_guarded g = tu_guarded_copy(src, avail);
      mt__rd r = {g.p, g.p + avail, 0};
      uint64_t v = width == 1 ? mt__get8(&r) : width == 2 ? mt__get16(&r)
                   : width == 4 ? mt__get32(&r) : mt__get64(&r);
      if (v != 0 || !r.bad || r.p != r.end)
        fail_msg("get%d with %zu bytes: v=%llu bad=%d", width * 8, avail,
                 (unsigned long long)v, r.bad);
      /* the cursor is exhausted: even a 1-byte read now fails */
      assert_int_equal(mt__get8(&r), 0);
      assert_int_equal(r.bad, 1);
      tu_guarded_free(&g);
    }
  }
  /* mt__rd_need: exact fit passes, one more fails */
  uint8_t b[4] = {0};
  mt__rd r = {b, b + 4, 0};
  assert_int_equal(mt__rd_need(&r, 4), 1);
  assert_int_equal(r.bad, 0);
  assert_int_equal(mt__rd_need(&r, 5), 0);
  assert_int_equal(r.bad, 1);
  assert_ptr_equal(r.p, b + 4);
  /* a huge request does not wrap around */
  mt__rd r2 = {b, b + 4, 0};
  assert_int_equal(mt__rd_need(&r2, SIZE_MAX), 0);
  assert_int_equal(r2.bad, 1);
}

static void strings(void **state) {
  (void)state;
  const char src[] = "abc\0\0xyz"; /* "abc", "", then unterminated "xyz" */
  size_t n = sizeof src - 1;           /* drop the C terminator */
  tu_guarded g = tu_guarded_copy(src, n);
  mt__rd r = {g.p, g.p + n, 0};
  size_t len = 99;
  const char *s = mt__getstr(&r, &len);
  assert_non_null(s);
  assert_int_equal(len, 3);
  assert_string_equal(s, "abc");
  assert_ptr_equal(s, (const char *)g.p); /* points into the buffer */
  s = mt__getstr(&r, &len);
  assert_non_null(s);
  assert_int_equal(len, 0);
  assert_string_equal(s, "");
  assert_int_equal(r.bad, 0);
  /* unterminated: NULL and `bad`, the cursor left where the string starts
   * (so that an error can name that byte), nothing read past the end */
  s = mt__getstr(&r, &len);
  assert_null(s);
  assert_int_equal(r.bad, 1);
  assert_ptr_equal(r.p, g.p + 5);
  /* again: the same */
  s = mt__getstr(&r, &len);
  assert_null(s);
  assert_int_equal(r.bad, 1);
  assert_ptr_equal(r.p, g.p + 5);
  /* on an exhausted cursor */
  r.p = r.end;
  s = mt__getstr(&r, &len);
  assert_null(s);
  assert_int_equal(r.bad, 1);
  tu_guarded_free(&g);

  /* an empty range */
  tu_guarded e = tu_guarded_copy("", 0);
  mt__rd re = {e.p, e.p, 0};
  assert_null(mt__getstr(&re, &len));
  assert_int_equal(re.bad, 1);
  tu_guarded_free(&e);

  /* putstr writes the bytes and one NUL */
  uint8_t out[16];
  memset(out, 0xaa, sizeof out);
  mt__wr w = {out, out + sizeof out, out};
  mt__putstr(&w, "hello", 5);
  mt__putstr(&w, "", 0);
  assert_int_equal(mt__wr_pos(&w), 7);
  assert_memory_equal(out, "hello\0\0", 7);
  assert_int_equal(out[7], 0xaa);
  assert_int_equal(mt__wr_left(&w), sizeof out - 7);
}

static void writer_cursor(void **state) {
  (void)state;
  uint8_t out[32];
  mt__wr w = {out, out + sizeof out, out};
  mt__put8(&w, 0x11);
  mt__put16(&w, 0x2233);
  mt__put32(&w, 0x44556677);
  mt__put64(&w, 0x8899aabbccddeeffull);
  assert_int_equal(mt__wr_pos(&w), 15);
  const uint8_t want[15] = {0x11, 0x33, 0x22, 0x77, 0x66, 0x55, 0x44, 0xff,
                            0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88};
  assert_memory_equal(out, want, 15);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(vint_encode_matches_memtrace),
      cmocka_unit_test(vint_decode_every_case),
      cmocka_unit_test(vint_truncated_sets_bad),
      cmocka_unit_test(vint_decode_noncanonical_and_signs),
      cmocka_unit_test(vint_random_round_trip),
      cmocka_unit_test(fixed_width_little_endian),
      cmocka_unit_test(getters_past_end),
      cmocka_unit_test(strings),
      cmocka_unit_test(writer_cursor),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
