/* The engine's own elementary functions (src/engine/mathlib.c) against the
 * C library's: within a few units in the last place over their whole
 * domains, and the same on IEEE special values. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "engine/mathlib.h"

#define DRAWS 2000000
#define MAX_ULPS 3.0 /* measured: 1 for exp and log, 2 for log1p and cos */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double uniform(void) { /* [0, 1) */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) * 0x1.0p-53;
}

/* |got - want| in units of want's last place (the least subnormal at 0). */
static double ulps(double got, double want) {
  if (got == want) return 0;
  double unit = nextafter(fabs(want), INFINITY) - fabs(want);
  return fabs(got - want) / unit;
}

typedef struct worst {
  double ulps, at;
} worst;

static void note(worst *w, double got, double want, double x) {
  double u = ulps(got, want);
  if (u > w->ulps || u != u) *w = (worst){u, x};
}

static void check(const char *name, worst w) {
  printf("%s: at most %.2f ulps (at %a)\n", name, w.ulps, w.at);
  assert_true(w.ulps <= MAX_ULPS);
}

static void test_exp(void **state) {
  (void)state;
  worst w = {0, 0};
  for (int i = 0; i < DRAWS; i++) {
    /* the whole range, and the engine's: exp(-x) for x in [0, 8] */
    double x = i % 2 ? (uniform() * 2 - 1) * 745 : -8 * uniform();
    note(&w, mt__exp(x), exp(x), x);
  }
  check("exp", w);
  /* results down among the subnormals */
  for (double x = -745.0; x < -708.0; x += 0.37) assert_true(ulps(mt__exp(x), exp(x)) <= 1);
  assert_true(mt__exp(0) == 1 && mt__exp(-0.0) == 1);
  assert_true(mt__exp(-INFINITY) == 0 && mt__exp(-746) == 0 && mt__exp(-1e300) == 0);
  assert_true(isinf(mt__exp(710)) && isinf(mt__exp(INFINITY)));
  assert_true(isnan(mt__exp(NAN)));
  assert_true(mt__exp(709.78) == exp(709.78)); /* the largest results: no overflow */
}

static void test_log(void **state) {
  (void)state;
  worst w = {0, 0};
  for (int i = 0; i < DRAWS; i++) {
    /* every binade, and the engine's: uniforms in (0, 1], values near 1 */
    double x = i % 3 == 0 ? exp((uniform() * 2 - 1) * 744)
               : i % 3 == 1 ? 1 - uniform()
                            : 1 + (uniform() - 0.5) * 1e-6;
    note(&w, mt__log(x), log(x), x);
  }
  check("log", w);
  assert_true(ulps(mt__log(4.9406564584124654e-324), log(4.9406564584124654e-324)) <= 1);
  assert_true(ulps(mt__log(0x1p-1030), log(0x1p-1030)) <= 1);
  assert_true(mt__log(1) == 0 && mt__log(2) == log(2) && mt__log(0.5) == log(0.5));
  assert_true(isinf(mt__log(0)) && mt__log(0) < 0 && isinf(mt__log(-0.0)));
  assert_true(isnan(mt__log(-1)) && isnan(mt__log(-INFINITY)) && isnan(mt__log(NAN)));
  assert_true(isinf(mt__log(INFINITY)) && mt__log(INFINITY) > 0);
}

static void test_log1p(void **state) {
  (void)state;
  worst w = {0, 0};
  for (int i = 0; i < DRAWS; i++) {
    /* the engine's: -rate for rates 1e-20 to 1, -u for uniforms in [0, 1);
     * and positive values */
    double x = i % 3 == 0 ? -pow(10, -20 * uniform()) : i % 3 == 1 ? -uniform() : 1e3 * uniform();
    note(&w, mt__log1p(x), log1p(x), x);
  }
  check("log1p", w);
  assert_true(mt__log1p(0) == 0 && signbit(mt__log1p(-0.0)));
  assert_true(mt__log1p(-1e-300) == -1e-300 && mt__log1p(0x1p-60) == 0x1p-60);
  assert_true(isinf(mt__log1p(-1)) && mt__log1p(-1) < 0);
  assert_true(isnan(mt__log1p(-1.5)) && isnan(mt__log1p(NAN)));
  assert_true(isinf(mt__log1p(INFINITY)));
}

/* cos(2 pi u), u reduced in long double to an angle of pi/4 at most, where
 * libm's cosl and sinl are far more precise than a double: a reference for
 * the values near cos's zeros too (there cos(2 * M_PI * u) itself is off by
 * M_PI's rounding, many ulps of a small result). */
static double cos_2pi_reference(double u) {
  static const long double two_pi = 6.283185307179586476925286766559005768L;
  long double a = fabsl((long double)u - roundl((long double)u)), sign = 1;
  if (a > 0.25L) {
    a = 0.5L - a;
    sign = -1;
  }
  return (double)(sign * (a > 0.125L ? sinl(two_pi * (0.25L - a)) : cosl(two_pi * a)));
}

static void test_cos_2pi(void **state) {
  (void)state;
  worst w = {0, 0};
  for (int i = 0; i < DRAWS; i++) {
    double u = i % 2 ? uniform() : (uniform() - 0.5) * 200; /* the engine's: (0, 1] */
    double got = mt__cos_2pi(u);
    note(&w, got, cos_2pi_reference(u), u);
    /* and the plain formula, to within its own error */
    assert_true(fabs(got - cos(2 * M_PI * u)) < 1e-13);
  }
  check("cos(2 pi u)", w);
  assert_true(mt__cos_2pi(0) == 1 && mt__cos_2pi(1) == 1 && mt__cos_2pi(-3) == 1);
  assert_true(mt__cos_2pi(0.5) == -1 && mt__cos_2pi(0.25) == 0 && mt__cos_2pi(0.75) == 0);
  assert_true(mt__cos_2pi(0x1p60) == 1 && mt__cos_2pi(0x1p51 + 0.5) == -1);
  assert_true(isnan(mt__cos_2pi(NAN)) && isnan(mt__cos_2pi(INFINITY)));
}

static void test_sqrt(void **state) {
  (void)state;
  for (int i = 0; i < DRAWS; i++) {
    double x = exp((uniform() * 2 - 1) * 700);
    assert_true(mt__sqrt(x) == sqrt(x)); /* correctly rounded, as C's */
  }
  assert_true(mt__sqrt(0) == 0 && signbit(mt__sqrt(-0.0)) && mt__sqrt(4) == 2);
  assert_true(mt__sqrt(4.9406564584124654e-324) == sqrt(4.9406564584124654e-324));
  assert_true(isinf(mt__sqrt(INFINITY)) && isnan(mt__sqrt(-1)) && isnan(mt__sqrt(NAN)));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exp),
      cmocka_unit_test(test_log),
      cmocka_unit_test(test_log1p),
      cmocka_unit_test(test_cos_2pi),
      cmocka_unit_test(test_sqrt),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
