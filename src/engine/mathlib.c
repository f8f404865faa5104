/* The engine's elementary functions (mathlib.h): each reduced to a small
 * interval where a truncated Taylor series, summed by Horner's rule in
 * double precision, is accurate to well under an ulp; the reductions are
 * exact or carry their rounding separately. */
#include "mathlib.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t bits_of(double d) {
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  return b;
}

static inline double double_of(uint64_t b) {
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
}

/* ln 2 in two parts: LN2_HI has 29 significant bits, so k * LN2_HI is exact
 * for every |k| < 2^11 that exp and log meet; LN2_LO is the rest. */
static const double LN2_HI = 0x1.62e42ffp-1;
static const double LN2_LO = -0x1.718432a1b0e26p-35;
static const double INV_LN2 = 0x1.71547652b82fep+0;
static const double SQRT2 = 0x1.6a09e667f3bcdp+0;
static const double TWO_PI = 0x1.921fb54442d18p+2;
/* (x + ROUNDER) - ROUNDER is x rounded to an integer, for |x| < 2^51, in
 * the default rounding mode (the only one the engine runs in) */
static const double ROUNDER = 0x1.8p52;

static inline double round_to_integer(double x) { return (x + ROUNDER) - ROUNDER; }

/* 2^k, for -1022 <= k <= 1023 */
static inline double pow2(int k) { return double_of((uint64_t)(k + 1023) << 52); }

/* ---- exp ---- */

/* The polynomial with coefficients c[0..n), highest degree first, at x
 * (Horner's rule). */
static double horner(double x, const double *c, size_t n) {
  double p = c[0];
  for (size_t i = 1; i < n; i++) p = p * x + c[i];
  return p;
}

/* e^r for |r| <= ln(2)/2: the series to r^13/13!, whose first term left out
 * is below 2^-58 there. */
static double exp_reduced(double r) {
  static const double inv_fact[14] = {
      1.0 / 6227020800.0, 1.0 / 479001600, 1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880,
      1.0 / 40320,        1.0 / 5040,      1.0 / 720,      1.0 / 120,     1.0 / 24,
      1.0 / 6,            1.0 / 2,         1.0,            1.0};
  return horner(r, inv_fact, 14);
}

double mt__exp(double x) {
  if (x != x) return x;
  if (x > 0x1.62e42fefa39efp+9) return __builtin_inf(); /* past log(DBL_MAX) */
  if (x < -0x1.74910d52d3052p+9) return 0.0;             /* below half the least subnormal */
  /* x = k ln 2 + r, |r| <= ln(2)/2: e^x = 2^k e^r */
  double kd = round_to_integer(x * INV_LN2);
  int k = (int)kd;
  double r = (x - kd * LN2_HI) - kd * LN2_LO;
  double p = exp_reduced(r); /* in [0.70, 1.42] */
  if (k > 1023) return p * 2.0 * pow2(k - 1);
  if (k < -1021) return p * pow2(k + 1000) * 0x1p-1000; /* subnormal: one rounding */
  return p * pow2(k);
}

/* ---- log and log1p ---- */

double mt__log(double x) {
  if (x != x) return x;
  if (x < 0) return (x - x) / (x - x); /* NaN */
  if (x == 0) return -__builtin_inf();
  if (x == __builtin_inf()) return x;
  int e = 0;
  if (x < 0x1p-1022) { /* subnormal: made normal */
    x *= 0x1p54;
    e = -54;
  }
  /* x = m 2^e, m in [sqrt(2)/2, sqrt(2)] */
  uint64_t b = bits_of(x);
  e += (int)(b >> 52) - 1023;
  double m = double_of((b & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1023) << 52));
  if (m > SQRT2) {
    m *= 0.5;
    e++;
  }
  /* log(1 + f) = 2 atanh(s) = 2s + 2s^3/3 + 2s^5/5 + ... with s = f/(2 + f),
   * |s| <= 0.172: the series is 2s + s R, R = 2z/3 + 2z^2/5 + ... (z = s^2),
   * to 2z^10/21 (the next term is below 2^-60 of the sum). Since 2s = f - sf
   * and sf = h - sh (h = f^2/2), the sum is f - (h - s (h + R)): f is exact
   * and the terms after it small, so s's rounding hardly shows. */
  static const double odd_inv2[10] = {2.0 / 21, 2.0 / 19, 2.0 / 17, 2.0 / 15, 2.0 / 13,
                                      2.0 / 11, 2.0 / 9,  2.0 / 7,  2.0 / 5,  2.0 / 3};
  double f = m - 1, s = f / (2 + f), z = s * s;
  double R = z * horner(z, odd_inv2, 10);
  double h = 0.5 * f * f;
  double log_m = f - (h - s * (h + R));
  return e * LN2_HI + (log_m + e * LN2_LO);
}

double mt__log1p(double x) {
  if (x != x) return x;
  if (x < -1) return (x - x) / (x - x); /* NaN */
  if (x == -1) return -__builtin_inf();
  if (x == __builtin_inf()) return x;
  double u = 1 + x;
  if (u == 1) return x; /* |x| < 2^-53: log(1 + x) rounds to x */
  /* u - 1 is exact; c is what rounding 1 + x lost, put back to first
   * order: log(u + c) = log(u) + c/u */
  double c = x - (u - 1);
  return mt__log(u) + c / u;
}

/* ---- cos(2 pi u) ---- */

/* cos t and sin t for 0 <= t <= pi/4: their series to t^16/16! and
 * t^17/17! (the next terms are below 2^-58). */
static double cos_reduced(double t) {
  static const double c[9] = {1.0 / 20922789888000.0, -1.0 / 87178291200.0, 1.0 / 479001600,
                              -1.0 / 3628800,         1.0 / 40320,          -1.0 / 720,
                              1.0 / 24,               -1.0 / 2,             1.0};
  return horner(t * t, c, 9);
}

static double sin_reduced(double t) {
  static const double c[9] = {1.0 / 355687428096000.0, -1.0 / 1307674368000.0,
                              1.0 / 6227020800.0,      -1.0 / 39916800,
                              1.0 / 362880,            -1.0 / 5040,
                              1.0 / 120,               -1.0 / 6,
                              1.0};
  return horner(t * t, c, 9) * t;
}

double mt__cos_2pi(double u) {
  if (u != u || u - u != 0) return u - u; /* NaN, infinities: NaN */
  if (!(u > -0x1p51 && u < 0x1p51)) /* an integer, or past 2^51 a half */
    return !(u > -0x1p52 && u < 0x1p52) || u == (double)(int64_t)u ? 1.0 : -1.0;
  /* the nearest integer's turns do nothing, cos is even, cos(2 pi (1/2 - a))
   * = -cos(2 pi a), and cos(2 pi a) = sin(2 pi (1/4 - a)): each step exact,
   * down to an angle of pi/4 at most */
  double a = u - round_to_integer(u);
  if (a < 0) a = -a; /* in [0, 1/2] */
  double sign = 1;
  if (a > 0.25) {
    a = 0.5 - a;
    sign = -1;
  }
  return a > 0.125 ? sign * sin_reduced(TWO_PI * (0.25 - a)) : sign * cos_reduced(TWO_PI * a);
}

/* ---- sqrt ---- */

double mt__sqrt(double x) {
#if defined(__x86_64__)
  __asm__("sqrtsd %1, %0" : "=x"(x) : "x"(x));
  return x;
#else
  if (!(x > 0) || x == __builtin_inf()) return x < 0 ? (x - x) / (x - x) : x; /* 0, NaN, inf */
  /* Newton's iteration from the halved exponent: quadratic convergence */
  double y = double_of((bits_of(x) >> 1) + (UINT64_C(1023) << 51));
  for (int i = 0; i < 8; i++) y = 0.5 * (y + x / y);
  return y;
#endif
}
