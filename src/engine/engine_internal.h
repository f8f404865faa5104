/* The engine's per-thread state and its inline fast path, shared with the
 * malloc interposer (src/preload), which is linked into the same object so
 * that the thread-local countdown is one %fs-relative access. */
#ifndef MT_ENGINE_INTERNAL_H
#define MT_ENGINE_INTERNAL_H

#include <stdint.h>

#include "memtrace/engine.h"

typedef struct mt__thread {
  int64_t countdown; /* words until this thread's next sample point */
  uint64_t rng[2];   /* xoroshiro128+ state */
  uint32_t epoch;    /* the engine session this state was drawn for */
  int32_t busy;      /* > 0: inside the profiler; never sample */
} mt__thread;

extern __thread mt__thread mt__tls
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* Slow path of mt__sample: the countdown reached zero. Returns 1 and sets
 * *nsamples when the allocation is sampled. */
__attribute__((visibility("hidden"), noinline)) int mt__sample_slow(int64_t words,
                                                                     uint64_t *nsamples);

/* The fast path: one thread-local decrement and one branch. */
static inline int mt__sample(uint64_t bytes, uint64_t *nsamples) {
  int64_t words = (int64_t)((bytes + 7) >> 3);
  if (__builtin_expect((mt__tls.countdown -= words) > 0, 1)) return 0;
  return mt__sample_slow(words, nsamples);
}

/* Records a sampled block keyed by address or id (runs the tracker). */
__attribute__((visibility("hidden"))) void mt__track(uintptr_t key, uint64_t words,
                                                      uint64_t bytes, uint64_t nsamples,
                                                      mt_source source);

/* The free-side filter: non-zero when `key` may be tracked. */
extern uint8_t mt__filter[] __attribute__((visibility("hidden")));
#define MT__FILTER_BITS 20
static inline uint32_t mt__filter_slot(uintptr_t key) {
  return (uint32_t)(((uint64_t)key >> 3) * 0x9e3779b97f4a7c15ull >> (64 - MT__FILTER_BITS));
}
static inline int mt__maybe_tracked(uintptr_t key) {
  return __atomic_load_n(&mt__filter[mt__filter_slot(key)], __ATOMIC_RELAXED) != 0;
}
/* Slow path of a free: removes `key` and runs the dealloc callback. */
__attribute__((visibility("hidden"))) void mt__untrack(uintptr_t key);

#endif
