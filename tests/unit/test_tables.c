/* base/containers.h: the u64 -> u32 hash map, the string interner, array
 * growth, and large tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "mt_test_util.h"
#include "base/containers.h"

static void map_empty(void **state) {
  (void)state;
  mt__u64map m = {0};
  assert_null(mt__u64map_get(&m, 0));
  assert_null(mt__u64map_get(&m, 12345));
  mt__u64map_free(&m); /* freeing an unused map is fine */
  mt__u64map_free(&m); /* and idempotent */
}

/* 0 is an ordinary key (the map marks empty slots in the values), and a
 * value of 0 is an ordinary value. */
static void map_key_zero_and_value_zero(void **state) {
  (void)state;
  mt__u64map m = {0};
  assert_int_equal(mt__u64map_put(&m, 0, 0), 0);
  uint32_t *v = mt__u64map_get(&m, 0);
  assert_non_null(v);
  assert_int_equal(*v, 0 + 1); /* stored +1: documented */
  assert_null(mt__u64map_get(&m, 1));
  assert_int_equal(mt__u64map_put(&m, UINT64_MAX, 7), 0);
  assert_int_equal(*mt__u64map_get(&m, UINT64_MAX), 8);
  assert_int_equal(*mt__u64map_get(&m, 0), 1);
  /* the largest allowed value */
  assert_int_equal(mt__u64map_put(&m, 5, UINT32_MAX - 1), 0);
  assert_int_equal(*mt__u64map_get(&m, 5), UINT32_MAX);
  assert_int_equal(m.count, 3);
  mt__u64map_free(&m);
  assert_null(mt__u64map_get(&m, 0));
}

static void map_overwrite(void **state) {
  (void)state;
  mt__u64map m = {0};
  assert_int_equal(mt__u64map_put(&m, 42, 1), 0);
  assert_int_equal(mt__u64map_put(&m, 42, 2), 0);
  assert_int_equal(mt__u64map_put(&m, 42, 3), 0);
  assert_int_equal(m.count, 1);
  assert_int_equal(*mt__u64map_get(&m, 42), 4);
  mt__u64map_free(&m);
}

static void check_map(const mt__u64map *m, const uint64_t *keys, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint32_t *v = mt__u64map_get(m, keys[i]);
    if (!v || *v != (uint32_t)i + 1)
      fail_msg("key %llu (#%zu): %s", (unsigned long long)keys[i], i,
               v ? "wrong value" : "missing");
  }
}

/* Growth through many doublings, with keys that share low bits (multiples
 * of 2^32, of 2^16) and random keys; every key keeps its value, absent
 * keys stay absent, and the load stays <= 1/2. */
static void map_growth(void **state) {
  (void)state;
  enum { N = 200000 };
  uint64_t *keys = malloc(N * sizeof *keys);
  tu_rng rng = {7};
  for (size_t i = 0; i < N; i++) {
    switch (i % 4) {
    case 0: keys[i] = (uint64_t)i << 32; break;
    case 1: keys[i] = (uint64_t)i << 16; break;
    case 2: keys[i] = i; break;
    default: keys[i] = tu_next(&rng) | 1ull << 63; break; /* disjoint from the rest */
    }
  }
  mt__u64map m = {0};
  size_t last_cap = 0, growths = 0;
  for (size_t i = 0; i < N; i++) {
    assert_int_equal(mt__u64map_put(&m, keys[i], (uint32_t)i), 0);
    if (m.cap != last_cap) {
      growths++;
      last_cap = m.cap;
      check_map(&m, keys, i + 1); /* right after each rehash */
    }
    assert_true(m.count * 2 <= m.cap);
  }
  assert_true(growths >= 10);
  assert_int_equal(m.count, N);
  assert_int_equal(m.cap & (m.cap - 1), 0); /* power of two */
  check_map(&m, keys, N);
  /* absent keys */
  for (uint64_t k = 1; k < 1000; k++) {
    assert_null(mt__u64map_get(&m, (k << 32) + 1));
    assert_null(mt__u64map_get(&m, (uint64_t)N * 4 + k));
  }
  mt__u64map_free(&m);
  free(keys);
}

static void intern_equal_pointers(void **state) {
  (void)state;
  mt__strtab t = {0};
  char buf[] = "hello";
  const char *a = mt__strtab_intern(&t, buf, 5);
  assert_non_null(a);
  assert_ptr_not_equal(a, buf); /* a copy */
  assert_string_equal(a, "hello");
  buf[0] = 'j'; /* the copy does not follow the source */
  assert_string_equal(a, "hello");
  const char *b = mt__strtab_intern(&t, "hello", 5);
  assert_ptr_equal(a, b);
  /* a prefix given by length, of a longer buffer */
  const char *c = mt__strtab_intern(&t, "hello, world", 5);
  assert_ptr_equal(a, c);
  /* a prefix of an interned string is a different string */
  const char *d = mt__strtab_intern(&t, "hell", 4);
  assert_ptr_not_equal(a, d);
  assert_string_equal(d, "hell");
  /* an extension too */
  const char *e = mt__strtab_intern(&t, "hello!", 6);
  assert_ptr_not_equal(a, e);
  assert_string_equal(e, "hello!");
  /* the empty string */
  const char *z1 = mt__strtab_intern(&t, "", 0);
  const char *z2 = mt__strtab_intern(&t, "xyz", 0);
  assert_non_null(z1);
  assert_ptr_equal(z1, z2);
  assert_string_equal(z1, "");
  assert_int_equal(t.count, 4);
  mt__strtab_free(&t);
  mt__strtab_free(&t);
}

/* Strings longer than an arena chunk (64 KiB), and many strings across
 * table growth and many chunks: every pointer stays valid and stable. */
static void intern_long_and_many(void **state) {
  (void)state;
  mt__strtab t = {0};
  size_t big = 200000;
  char *s = malloc(big + 1);
  for (size_t i = 0; i < big; i++) s[i] = (char)('a' + i % 26);
  s[big] = 0;
  const char *p1 = mt__strtab_intern(&t, s, big);
  assert_non_null(p1);
  assert_int_equal(strlen(p1), big);
  assert_memory_equal(p1, s, big);
  /* differs in the last byte only */
  s[big - 1] = '#';
  const char *p2 = mt__strtab_intern(&t, s, big);
  assert_ptr_not_equal(p1, p2);
  assert_int_equal(p2[big - 1], '#');
  assert_int_equal(p1[big - 1], 'a' + (big - 1) % 26);

  enum { N = 50000 };
  const char **ptrs = malloc(N * sizeof *ptrs);
  char tmp[64];
  for (int i = 0; i < N; i++) {
    int n = snprintf(tmp, sizeof tmp, "file_%d_%0*d.ml", i, i % 40, 0);
    ptrs[i] = mt__strtab_intern(&t, tmp, (size_t)n);
    assert_non_null(ptrs[i]);
  }
  assert_int_equal(t.count, N + 2);
  assert_true(t.nchunks > 2);
  for (int i = 0; i < N; i++) {
    int n = snprintf(tmp, sizeof tmp, "file_%d_%0*d.ml", i, i % 40, 0);
    assert_string_equal(ptrs[i], tmp);
    assert_ptr_equal(mt__strtab_intern(&t, tmp, (size_t)n), ptrs[i]);
  }
  /* the long strings survived all that */
  s[big - 1] = 'a' + (big - 1) % 26;
  assert_ptr_equal(mt__strtab_intern(&t, s, big), p1);
  assert_int_equal(t.count, N + 2);
  free(ptrs);
  free(s);
  mt__strtab_free(&t);
}

/* Every prefix of one string is its own string, whatever the order: a
 * lookup must compare the length too, not just the bytes. */
static void intern_prefixes(void **state) {
  (void)state;
  mt__strtab t = {0};
  enum { N = 1500 };
  char *buf = malloc(N + 1);
  memset(buf, 'a', N);
  buf[N] = 0;
  static const char *p[N + 1];
  for (size_t len = N; len > 0; len--) { /* longest first */
    p[len] = mt__strtab_intern(&t, buf, len);
    assert_non_null(p[len]);
    if (strlen(p[len]) != len) fail_msg("interning %zu bytes gave %zu", len, strlen(p[len]));
  }
  for (size_t len = 1; len <= N; len++) {
    assert_ptr_equal(mt__strtab_intern(&t, buf, len), p[len]);
    if (len > 1) assert_ptr_not_equal(p[len], p[len - 1]);
  }
  assert_int_equal(t.count, N);
  free(buf);
  mt__strtab_free(&t);
}

/* A string is its len bytes, a NUL among them included: strings equal up
 * to a NUL and different past it are two. */
static void intern_bytes_past_nul(void **state) {
  (void)state;
  mt__strtab t = {0};
  const char *a = mt__strtab_intern(&t, "a", 1);
  const char *ab = mt__strtab_intern(&t, "a\0b", 3);
  const char *ac = mt__strtab_intern(&t, "a\0c", 3);
  assert_non_null(a);
  assert_non_null(ab);
  assert_non_null(ac);
  assert_ptr_not_equal(a, ab);
  assert_ptr_not_equal(ab, ac);
  assert_memory_equal(ac, "a\0c", 4);
  assert_ptr_equal(mt__strtab_intern(&t, "a\0b", 3), ab);
  assert_ptr_equal(mt__strtab_intern(&t, "a", 1), a);
  assert_int_equal(t.count, 3);
  mt__strtab_free(&t);
}

/* mt__grow: doubling from the first size to at least what is asked;
 * mt__reserve: room for one more; a size that would not fit a size_t
 * refused with the array as it was. */
static void grow_sizes(void **state) {
  (void)state;
  uint32_t *v = NULL;
  size_t cap = 0;
  assert_int_equal(mt__grow((void **)&v, &cap, 0, sizeof *v, 8), 0);
  assert_null(v);
  assert_int_equal(mt__grow((void **)&v, &cap, 1, sizeof *v, 8), 0);
  assert_int_equal(cap, 8);
  assert_int_equal(mt__grow((void **)&v, &cap, 8, sizeof *v, 8), 0);
  assert_int_equal(cap, 8); /* room enough */
  assert_int_equal(mt__grow((void **)&v, &cap, 33, sizeof *v, 8), 0);
  assert_int_equal(cap, 64);
  for (size_t i = 0; i < 33; i++) v[i] = (uint32_t)i; /* all of it usable (ASan) */
  uint32_t *before = v;
  assert_int_equal(mt__grow((void **)&v, &cap, SIZE_MAX / 2, sizeof *v, 8), -1);
  assert_int_equal(mt__grow((void **)&v, &cap, SIZE_MAX, 1, 8), -1); /* the doubling itself */
  assert_ptr_equal(v, before);
  assert_int_equal(cap, 64);
  assert_int_equal(v[32], 32);
  size_t n = 64;
  assert_int_equal(mt__reserve((void **)&v, n - 1, &cap, sizeof *v), 0);
  assert_int_equal(cap, 64);
  assert_int_equal(mt__reserve((void **)&v, n, &cap, sizeof *v), 0);
  assert_int_equal(cap, 128);
  free(v);
  v = NULL, cap = 0;
  assert_int_equal(mt__reserve((void **)&v, 0, &cap, sizeof *v), 0);
  assert_int_equal(cap, 16);
  free(v);
}

/* mt__table_alloc: cache-line aligned below 2 MiB, 2 MiB-aligned from
 * there (where huge pages can back it), every byte asked writable, freed
 * with free(). */
static void table_alloc(void **state) {
  (void)state;
  const size_t huge = (size_t)2 << 20;
  const size_t sizes[] = {1, 64, 1000, huge - 1, huge, huge + 1, 3 * huge + 12345};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    size_t n = sizes[k];
    unsigned char *p = mt__table_alloc(n);
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % (n < huge ? 64 : huge), 0);
    for (size_t i = 0; i < n; i += 4096) p[i] = (unsigned char)i;
    p[n - 1] = 0xab;
    assert_int_equal(p[n - 1], 0xab);
    if (n > 1) assert_int_equal(p[0], 0);
    free(p);
  }
}

/* mt__hash_bytes: any one bit changed, at any place of strings of every
 * length up to 40 (the word steps and the tail), changes the hash; and
 * names alike but for a number spread over a table's slots. */
/* Parallel arrays reallocated together keep their contents; a size that
 * would not fit a size_t fails the call, the other arrays still grown. */
static void realloc_columns(void **state) {
  (void)state;
  uint64_t *a = malloc(4 * sizeof *a);
  uint16_t *b = malloc(4 * sizeof *b);
  for (int i = 0; i < 4; i++) a[i] = 1000 + (uint64_t)i, b[i] = (uint16_t)(7 * i);
  void **const cols[] = {(void **)&a, (void **)&b};
  const size_t sizes[] = {sizeof *a, sizeof *b};
  assert_int_equal(mt__realloc_columns(cols, sizes, 2, 100000, realloc), 0);
  a[99999] = 1;
  b[99999] = 2;
  for (int i = 0; i < 4; i++) {
    assert_int_equal(a[i], 1000 + (uint64_t)i);
    assert_int_equal(b[i], 7 * i);
  }
  const size_t huge[] = {sizeof *a, SIZE_MAX / 2};
  assert_int_equal(mt__realloc_columns(cols, huge, 2, 200000, realloc), -1);
  a[199999] = 3; /* the first grew all the same */
  assert_int_equal(b[3], 21);
  free(a);
  free(b);
}

static void hash_bytes_spreads(void **state) {
  (void)state;
  char buf[41] = {0};
  for (size_t len = 0; len <= 40; len++) {
    for (size_t i = 0; i < len; i++) buf[i] = (char)('a' + (i * 7) % 26);
    uint64_t h = mt__hash_bytes(buf, len);
    if (len) assert_true(h != mt__hash_bytes(buf, len - 1));
    for (size_t i = 0; i < len; i++)
      for (int bit = 0; bit < 8; bit++) {
        buf[i] ^= (char)(1 << bit);
        assert_true(mt__hash_bytes(buf, len) != h);
        buf[i] ^= (char)(1 << bit);
      }
  }
  enum { N = 8192, SLOTS = 16384 };
  static uint8_t used[SLOTS];
  size_t taken = 0;
  for (int k = 0; k < N; k++) {
    int n = snprintf(buf, sizeof buf, "Stdlib__Map.Make(Ord).add_%d", k);
    size_t s = mt__hash_bytes(buf, (size_t)n) & (SLOTS - 1);
    taken += !used[s];
    used[s] = 1;
  }
  /* a random placement takes SLOTS * (1 - e^(-N/SLOTS)): 6,450 */
  assert_true(taken > 6300);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(hash_bytes_spreads),
      cmocka_unit_test(map_empty),
      cmocka_unit_test(map_key_zero_and_value_zero),
      cmocka_unit_test(map_overwrite),
      cmocka_unit_test(map_growth),
      cmocka_unit_test(intern_equal_pointers),
      cmocka_unit_test(intern_long_and_many),
      cmocka_unit_test(intern_prefixes),
      cmocka_unit_test(intern_bytes_past_nul),
      cmocka_unit_test(grow_sizes),
      cmocka_unit_test(table_alloc),
      cmocka_unit_test(realloc_columns),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
