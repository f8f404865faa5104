/* Exp(1) variates by the ziggurat method (Marsaglia and Tsang, "The
 * ziggurat method for generating random variables", 2000): the density
 * under 256 strips of equal area, one table lookup, one multiply and one
 * compare in 98.9% of draws. The engine's geometric gaps need one per
 * sample point; a logarithm cost four times as much.
 *
 * Exact in distribution (up to double rounding), as -log(U) is: the strips
 * that overhang the density, and the tail beyond the base strip, take the
 * rejection and tail paths of the slow half. */
#ifndef MT_ZIGGURAT_H
#define MT_ZIGGURAT_H

#include <stdint.h>

#define MT__ZIG_N 256

/* A strip's fast-path pair, together: a draw reads one cache line (the
 * tables are cold between a program's samples). */
typedef struct mt__zig_strip {
  uint64_t k; /* accept u (53 bits) below k at once */
  double w;   /* x = u * w */
} mt__zig_strip;
extern mt__zig_strip mt__zig_kw[MT__ZIG_N];
extern double mt__zig_f[MT__ZIG_N]; /* exp(-x) at the strips' edges */

/* Fills the tables (idempotent; call before the first draw). */
void mt__zig_init(void);

/* A source of more 64-bit random numbers for the slow half. */
typedef uint64_t (*mt__rand_fn)(void *state);

double mt__zig_exp_slow(uint64_t r, mt__rand_fn next, void *state);

/* An Exp(1) variate from the 64-bit random r (bits 3-10 pick the strip,
 * bits 11-63 the point: xoroshiro128+'s weak low bits are not used). */
static inline double mt__zig_exp(uint64_t r, mt__rand_fn next, void *state) {
  unsigned i = (unsigned)(r >> 3) & (MT__ZIG_N - 1);
  uint64_t u = r >> 11;
  if (__builtin_expect(u < mt__zig_kw[i].k, 1)) return (double)u * mt__zig_kw[i].w;
  return mt__zig_exp_slow(r, next, state);
}

#endif
