/* Hashing: 64-bit mixes of integers and a hash of byte strings, shared by
 * the containers, the RNG's seeding and the analysis' fingerprints.
 * Internal (mt__ prefix). */
#ifndef MT_BASE_HASH_H
#define MT_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* A cheap mix for hash tables whose keys are already well spread (codes,
 * ids): one multiply. */
static inline uint64_t mt__hash64(uint64_t x) {
  x ^= x >> 31;
  x *= 0x9e3779b97f4a7c15ull;
  x ^= x >> 29;
  return x;
}

/* splitmix64's finalizer: a bijective mix of all 64 bits. */
static inline uint64_t mt__mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A hash of len bytes at s, for hash tables: eight bytes a step, then
 * mixed as mt__mix64. */
uint64_t mt__hash_bytes(const char *s, size_t len);

#endif
