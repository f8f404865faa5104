/* A profile's samples as one digest, for tests that compare two ways of
 * making a profile: every sample, in order, with its codes, source and
 * values. Included by one test file each. */
#ifndef MT_TEST_PROFILE_DIGEST_H
#define MT_TEST_PROFILE_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/profile.h"

typedef struct sample_digest {
  size_t n;
  uint64_t h;
} sample_digest;

static inline uint64_t digest_step(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull; }

/* mt_profile's callback: ctx is the sample_digest. */
static inline int on_sample_digest(void *ctx, const uint32_t *codes, size_t n, int source,
                                   const int64_t v[MT_PROFILE_VALUES]) {
  sample_digest *d = ctx;
  d->n++;
  d->h = digest_step(d->h, n);
  for (size_t i = 0; i < n; i++) d->h = digest_step(d->h, codes[i]);
  d->h = digest_step(d->h, (uint64_t)(source + 1));
  for (int k = 0; k < MT_PROFILE_VALUES; k++) d->h = digest_step(d->h, (uint64_t)v[k]);
  return 0;
}

#endif
