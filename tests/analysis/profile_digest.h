/* A profile's samples as one digest, for tests that compare two ways of
 * making a profile: every sample, in order, with its codes, source and
 * values. Included by one test file each. */
#ifndef MT_TEST_PROFILE_DIGEST_H
#define MT_TEST_PROFILE_DIGEST_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "memtrace/profile.h"

/* Also checks each sample's `shared` (mt_profile_fn): its codes must be
 * the last sample's; bad_shared counts the samples where they are not,
 * shared_codes the codes given as shared. */
#define DIGEST_MAX_CODES 4096
typedef struct sample_digest {
  size_t n;
  uint64_t h;
  size_t bad_shared, shared_codes;
  size_t last_n;
  uint32_t last[DIGEST_MAX_CODES];
} sample_digest;

static inline uint64_t digest_step(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull; }

/* mt_profile's callback: ctx is the sample_digest. */
static inline int on_sample_digest(void *ctx, const uint32_t *codes, size_t n, size_t shared,
                                   int source, const int64_t v[MT_PROFILE_VALUES]) {
  sample_digest *d = ctx;
  d->n++;
  if (shared > n || shared > d->last_n || n > DIGEST_MAX_CODES ||
      (shared && memcmp(codes, d->last, shared * sizeof *codes) != 0))
    d->bad_shared++;
  d->shared_codes += shared;
  d->last_n = n < DIGEST_MAX_CODES ? n : DIGEST_MAX_CODES;
  if (d->last_n) memcpy(d->last, codes, d->last_n * sizeof *codes);
  d->h = digest_step(d->h, n);
  for (size_t i = 0; i < n; i++) d->h = digest_step(d->h, codes[i]);
  d->h = digest_step(d->h, (uint64_t)(source + 1));
  for (int k = 0; k < MT_PROFILE_VALUES; k++) d->h = digest_step(d->h, (uint64_t)v[k]);
  return 0;
}

#endif
