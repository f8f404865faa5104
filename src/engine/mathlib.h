/* The elementary functions the sampling engine needs, written here so that
 * the interposer does not load the C library's libm: every process started
 * under `memtrace run` would pay for loading it (its IFUNC relocations and
 * its pages), a large part of the preloaded library's own start-up
 * (docs/benchmarks.md, "Loading libraries").
 *
 * The engine uses them for its draws' distributions and their tables, not
 * for bit-exact results: each is within a few units in the last place of
 * the correctly rounded value (tests/profiler/test_mathlib.c checks them
 * against libm); the square root is the processor's instruction (a call
 * to sqrt stays a call into libm in unoptimized builds, -fno-math-errno or
 * not). IEEE special values follow C's functions: NaN in, NaN out;
 * log of 0 is -inf, of a negative number NaN; exp underflows to 0 and
 * overflows to +inf. */
#ifndef MT_MATHLIB_H
#define MT_MATHLIB_H

#define MT__HIDDEN_FN __attribute__((visibility("hidden")))

MT__HIDDEN_FN double mt__exp(double x);
MT__HIDDEN_FN double mt__log(double x);
MT__HIDDEN_FN double mt__log1p(double x); /* log(1 + x), accurate for tiny x */
MT__HIDDEN_FN double mt__cos_2pi(double u); /* cos(2 pi u), for any finite u */
MT__HIDDEN_FN double mt__sqrt(double x);    /* correctly rounded on x86-64 */

#endif
