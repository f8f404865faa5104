/* The ziggurat's tables and its slow half (ziggurat.h). */
#include "ziggurat.h"

#include "mathlib.h"

#define ZIG_R 7.697117470131487     /* the base strip's right edge */
#define ZIG_V 3.949659822581572e-3  /* each strip's area */
#define TWO53 9007199254740992.0

mt__zig_strip mt__zig_kw[MT__ZIG_N];
double mt__zig_f[MT__ZIG_N];

void mt__zig_init(void) {
  if (mt__zig_kw[MT__ZIG_N - 1].w != 0) return;
  double de = ZIG_R, te = de, q = ZIG_V / mt__exp(-de);
  mt__zig_kw[0].k = (uint64_t)(de / q * TWO53);
  mt__zig_kw[1].k = 0;
  mt__zig_kw[0].w = q / TWO53;
  mt__zig_f[0] = 1.0;
  mt__zig_f[MT__ZIG_N - 1] = mt__exp(-de);
  for (int i = MT__ZIG_N - 2; i >= 1; i--) {
    de = -mt__log(ZIG_V / de + mt__exp(-de));
    mt__zig_kw[i + 1].k = (uint64_t)(de / te * TWO53);
    te = de;
    mt__zig_f[i] = mt__exp(-de);
    mt__zig_kw[i].w = de / TWO53;
  }
  /* last: it marks the tables as filled */
  mt__zig_kw[MT__ZIG_N - 1].w = ZIG_R / TWO53;
}

static double uniform01(mt__rand_fn next, void *state) { /* in [0, 1) */
  return (double)(next(state) >> 11) * 0x1.0p-53;
}

double mt__zig_exp_slow(uint64_t r, mt__rand_fn next, void *state) {
  for (;;) {
    unsigned i = (unsigned)(r >> 3) & (MT__ZIG_N - 1);
    uint64_t u = r >> 11;
    if (u < mt__zig_kw[i].k) return (double)u * mt__zig_kw[i].w;
    if (i == 0) /* the tail: memoryless, R plus a fresh Exp(1) */
      return ZIG_R - mt__log1p(-uniform01(next, state));
    double x = (double)u * mt__zig_kw[i].w;
    /* under the density within the strip's overhang? */
    if (mt__zig_f[i] + uniform01(next, state) * (mt__zig_f[i - 1] - mt__zig_f[i]) < mt__exp(-x))
      return x;
    r = next(state);
  }
}
