/* xoshiro256** (Blackman and Vigna), seeded by splitmix64: the project's
 * deterministic generator where a seed must give the same output on any
 * libc (memtrace subsample, the benchmark's trace generator, the sampling
 * engine's per-thread seeds). Internal. */
#ifndef MT_BASE_RNG_H
#define MT_BASE_RNG_H

#include <stdint.h>

#include "hash.h"

typedef struct mt__rng {
  uint64_t s[4];
} mt__rng;

static inline uint64_t mt__splitmix64(uint64_t *x) { return mt__mix64(*x += 0x9e3779b97f4a7c15ull); }

static inline void mt__rng_seed(mt__rng *g, uint64_t seed) {
  for (int i = 0; i < 4; i++) g->s[i] = mt__splitmix64(&seed);
}

static inline uint64_t mt__rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t mt__rng_next(mt__rng *g) {
  uint64_t *s = g->s;
  uint64_t result = mt__rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = mt__rotl(s[3], 45);
  return result;
}

#endif
