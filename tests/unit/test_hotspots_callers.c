/* hotspots' list of distinct callers (src/cli/compat/hotspots_callers.h):
 * after any sequence of pushes and pops, walking the list must give the
 * distinct functions of the frames pushed, each once, innermost first: what
 * a scan of the frames from the innermost out, skipping functions already
 * met, gives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hotspots_callers.h"
#include "mt_test_util.h"

enum { MAX_FRAMES = 3000 };

/* The scan the list replaces: out[] gets the distinct functions of
 * frames[0..n), innermost first; returns their count. */
static size_t scan(const uint32_t *frames, size_t n, size_t nfuncs, uint32_t *out) {
  unsigned char *met = calloc(nfuncs, 1);
  size_t k = 0;
  for (size_t i = n; i-- > 0;)
    if (!met[frames[i]]) {
      met[frames[i]] = 1;
      out[k++] = frames[i];
    }
  free(met);
  return k;
}

static void check_walk(const callers_list *l, const uint32_t *frames, size_t nfuncs) {
  static uint32_t want[MAX_FRAMES];
  size_t n = scan(frames, l->len, nfuncs, want), k = 0;
  for (uint32_t x = callers_first(l); x; x = callers_next(l, x)) {
    if (k >= n) fail_msg("the walk gives more than the %zu distinct functions", n);
    if (callers_func(l, x) != want[k])
      fail_msg("caller %zu of %zu frames: %u, not %u", k, l->len, callers_func(l, x), want[k]);
    k++;
  }
  assert_int_equal(k, n);
}

/* Random walks of a stack: runs of pushes and pops of varying length over
 * few functions (many repeats, as in a recursion) or many; the list is
 * checked after each run, and grows (moving its nodes) on the way. */
static void random_stacks(void **state) {
  (void)state;
  tu_rng r = {0x5eedca11e55ull};
  static uint32_t frames[MAX_FRAMES];
  for (int trial = 0; trial < 60; trial++) {
    size_t nfuncs = trial % 3 == 0 ? 3 : trial % 3 == 1 ? 40 : 2000;
    callers_list l;
    callers_init(&l);
    assert_int_equal(callers_reserve(&l, 0, nfuncs), 0);
    for (int step = 0; step < 400; step++) {
      if (tu_chance(&r, 55)) {
        size_t runs = 1 + tu_below(&r, tu_chance(&r, 10) ? 500 : 8);
        if (l.len + runs > MAX_FRAMES) runs = MAX_FRAMES - l.len;
        assert_int_equal(callers_reserve(&l, l.len + runs, nfuncs), 0);
        for (size_t i = 0; i < runs; i++) {
          uint32_t f = (uint32_t)tu_below(&r, nfuncs);
          if (tu_chance(&r, 30) && l.len) f = frames[l.len - 1]; /* recursion */
          frames[l.len] = f;
          callers_push(&l, f);
        }
      } else {
        size_t keep = l.len ? (size_t)tu_below(&r, l.len + 1) : 0;
        if (tu_chance(&r, 70) && l.len > 4) keep = l.len - 1 - tu_below(&r, 4);
        callers_truncate(&l, keep);
      }
      check_walk(&l, frames, nfuncs);
    }
    callers_truncate(&l, 0);
    assert_int_equal(callers_first(&l), 0);
    for (size_t f = 0; f < nfuncs; f++) assert_int_equal(l.innermost[f], 0);
    callers_free(&l);
  }
}

/* A recursion: A B B B ... C, popped back to A B and pushed again: the
 * callers are C B A, then B A. */
static void recursion(void **state) {
  (void)state;
  callers_list l;
  callers_init(&l);
  assert_int_equal(callers_reserve(&l, 1002, 3), 0);
  callers_push(&l, 0);
  for (int i = 0; i < 1000; i++) callers_push(&l, 1);
  callers_push(&l, 2);
  uint32_t x = callers_first(&l);
  assert_int_equal(callers_func(&l, x), 2);
  x = callers_next(&l, x);
  assert_int_equal(callers_func(&l, x), 1);
  assert_int_equal(x, 1001); /* the innermost B: the 1001st frame */
  x = callers_next(&l, x);
  assert_int_equal(callers_func(&l, x), 0);
  assert_int_equal(callers_next(&l, x), 0);
  callers_truncate(&l, 2);
  x = callers_first(&l);
  assert_int_equal(callers_func(&l, x), 1);
  assert_int_equal(x, 2);
  assert_int_equal(callers_func(&l, callers_next(&l, x)), 0);
  assert_int_equal(callers_next(&l, callers_next(&l, x)), 0);
  callers_free(&l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(random_stacks),
      cmocka_unit_test(recursion),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
