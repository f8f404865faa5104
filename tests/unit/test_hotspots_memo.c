/* hotspots' memo hash (src/cli/hotspots_memo.h): backtraces are told apart
 * by their two hashes alone, so these must differ for distinct backtraces,
 * structured ones included, and resuming from a kept prefix must give what
 * hashing from the start gives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "hotspots_memo.h"
#include "mt_test_util.h"

typedef struct pair {
  uint64_t h1, h2;
} pair;

static int cmp_pair(const void *a, const void *b) {
  const pair *x = a, *y = b;
  if (x->h1 != y->h1) return x->h1 < y->h1 ? -1 : 1;
  return x->h2 < y->h2 ? -1 : x->h2 > y->h2;
}

static pair hash_of(const uint64_t *bt, size_t n) {
  static memo_prefix ph[64];
  static uint64_t out[64];
  pair p;
  memo_hash(bt, 0, n, ph, out, &p.h1, &p.h2);
  return p;
}

/* Every sequence of 1 to 6 codes over an alphabet of near and far values
 * (0, small integers, codes differing in one high bit, the top bit): all
 * 56,000 get distinct hash1s (so distinct pairs); sequences that are
 * prefixes of others, or the same codes in another order, included. */
static void structured_backtraces_differ(void **state) {
  (void)state;
  const uint64_t alphabet[6] = {0, 1, 2, 0x100000000ull, 0x8000000000000000ull,
                                0x7f1234567890ull};
  size_t total = 0;
  for (size_t len = 1, count = 6; len <= 6; len++, count *= 6) total += count;
  pair *all = malloc(total * sizeof *all);
  size_t k = 0;
  for (size_t len = 1, count = 6; len <= 6; len++, count *= 6) {
    for (size_t v = 0; v < count; v++) {
      uint64_t bt[6];
      for (size_t i = 0, x = v; i < len; i++, x /= 6) bt[i] = alphabet[x % 6];
      all[k] = hash_of(bt, len);
      k++;
    }
  }
  assert_int_equal(k, total);
  qsort(all, total, sizeof *all, cmp_pair);
  for (size_t i = 1; i < total; i++)
    if (all[i].h1 == all[i - 1].h1)
      fail_msg("two backtraces share hash1 %llx", (unsigned long long)all[i].h1);
  free(all);
}

/* Random backtraces that share prefixes with the one before: resuming from
 * the kept prefix hashes equals hashing from scratch, the new codes are
 * copied out, and distinct backtraces get distinct hashes. */
static void resumed_prefixes_agree(void **state) {
  (void)state;
  enum { N = 20000, MAXLEN = 40 };
  static memo_prefix ph[MAXLEN];
  static uint64_t bts[N][MAXLEN];
  static size_t lens[N];
  static pair got[N];
  tu_rng rng = {0x4a54};
  uint64_t prev[MAXLEN];
  size_t prev_len = 0;
  for (size_t e = 0; e < N; e++) {
    size_t keep = prev_len ? tu_below(&rng, prev_len + 1) : 0;
    size_t len = keep + tu_below(&rng, MAXLEN - keep + 1);
    if (len == 0) len = 1;
    uint64_t *bt = bts[e];
    memcpy(bt, prev, keep * sizeof *bt);
    for (size_t i = keep; i < len; i++) bt[i] = 0x400000 + tu_below(&rng, 64) * 16;
    size_t k = 0;
    while (k < len && k < prev_len && bt[k] == prev[k]) k++;
    pair p;
    uint64_t out[MAXLEN];
    memo_hash(bt, k, len, ph, out, &p.h1, &p.h2);
    /* the new codes copied on the way */
    if (len > k) assert_memory_equal(out, bt + k, (len - k) * sizeof *bt);
    pair q = hash_of(bt, len);
    assert_true(p.h1 == q.h1 && p.h2 == q.h2);
    got[e] = p;
    lens[e] = len;
    memcpy(prev, bt, len * sizeof *bt);
    prev_len = len;
  }
  /* equal hashes only for equal backtraces */
  for (size_t a = 0; a < N; a += 7)
    for (size_t b = a + 1; b < N; b++)
      if (got[a].h1 == got[b].h1 || got[a].h2 == got[b].h2) {
        int same = lens[a] == lens[b] && !memcmp(bts[a], bts[b], lens[a] * sizeof(uint64_t));
        if (!same) fail_msg("backtraces %zu and %zu differ but share a hash", a, b);
        assert_true(got[a].h1 == got[b].h1 && got[a].h2 == got[b].h2);
      }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(structured_backtraces_differ),
      cmocka_unit_test(resumed_prefixes_agree),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
