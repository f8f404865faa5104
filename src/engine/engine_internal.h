/* The engine's per-thread state and its inline fast path, shared with the
 * malloc interposer (src/preload), which is linked into the same object so
 * that the thread-local countdown is one %fs-relative access. */
#ifndef MT_ENGINE_INTERNAL_H
#define MT_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "memtrace/engine.h"

/* Builds for bench/stages.sh only (0 otherwise): a sample stops after one
 * stage of its work, so that the cost of each shows as a difference of
 * CPU times. 1: the sampling decision (the block is then allocated as an
 * unsampled one); 2: the header and the free's slow path too (no
 * callstack, no event); 3: the callstack too; 4: the events queued and
 * drained too, but their codes not named, nor the events encoded or
 * written. Such a library writes no usable trace. */
#ifndef MT_BENCH_STAGE
#define MT_BENCH_STAGE 0
#endif

typedef struct mt__thread {
  int64_t countdown; /* words until this thread's next sample point */
  uint64_t rng[2];   /* xoroshiro128+ state */
  uint32_t epoch;    /* the engine session this state was drawn for */
  int32_t busy;      /* > 0: inside the profiler; never sample */
  int32_t unsampled; /* > 0: where a sample could deadlock (the dynamic
                        loader's lock held: src/preload/preload_loader.c):
                        no sample; frees are still reported */
  uint32_t slot;     /* this thread's rank in the session: its counters' shard */
  int *errp;         /* this thread's errno, once asked (see thread_errno) */
  uint64_t *cs;      /* the callstack buffer, mapped at the first sample */
  size_t cs_cap;     /* its frames (NULL, 0: none yet) */
} mt__thread;

extern __thread mt__thread mt__tls
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* Slow path of mt__sample: the countdown reached zero. Returns 1 and sets
 * *nsamples when the allocation is sampled. */
__attribute__((visibility("hidden"), noinline)) int mt__sample_slow(int64_t words,
                                                                     uint64_t *nsamples);

/* The whole sampling decision: fast path inline, the rest out of line. */
static inline int mt__countdown(uint64_t bytes);
static inline int mt__sample(uint64_t bytes, uint64_t *nsamples) {
  if (mt__countdown(bytes)) return 0;
  return mt__sample_slow((int64_t)((bytes + 7) >> 3), nsamples);
}

/* Records a sampled block keyed by address or id (runs the tracker). */
__attribute__((visibility("hidden"))) void mt__track(uintptr_t key, uint64_t words,
                                                      uint64_t bytes, uint64_t nsamples,
                                                      mt_source source);

/* The free-side filter: a byte per 256-byte granule of a 256 MiB window of
 * addresses, non-zero when a tracked key may lie there. Indexing by address
 * bits keeps neighbouring frees on the same cache lines; the granule is
 * coarse so that the filter lines a program's heap maps to stay in cache (a
 * byte per 16 bytes made the load miss on frees of long-lived blocks, the
 * fast path's largest cost); a granule shared with a tracked block only
 * costs the other blocks' frees a table lookup. Values 1..MT__FILTER_MAX
 * count keys; MT__FILTER_STICKY marks slots that stay "maybe" for ever
 * (saturated counts, and the interposer's bootstrap blocks). */
extern uint8_t mt__filter[] __attribute__((visibility("hidden")));
#define MT__FILTER_BITS 20
#define MT__FILTER_SHIFT 8
#define MT__FILTER_MAX 253
#define MT__FILTER_STICKY 255
static inline uint32_t mt__filter_slot(uintptr_t key) {
  return (uint32_t)(key >> MT__FILTER_SHIFT) & ((1u << MT__FILTER_BITS) - 1);
}
static inline int mt__maybe_tracked(uintptr_t key) {
  return __atomic_load_n(&mt__filter[mt__filter_slot(key)], __ATOMIC_RELAXED) != 0;
}
/* Decrements the thread's countdown by the block's words: non-zero while
 * no sample point is reached (the fast path). */
static inline int mt__countdown(uint64_t bytes) {
  return __builtin_expect((mt__tls.countdown -= (int64_t)((bytes + 7) >> 3)) > 0, 1);
}

/* The same as a statement that jumps to `label` when a sample point is
 * reached: on x86-64 one subtraction straight from the thread-local
 * countdown in memory, and a branch on its flags (the interposer's fast
 * path; the countdown is the first field of mt__tls). */
#if defined(__x86_64__) && defined(__GNUC__)
#define MT__SPEND_OR_GOTO(bytes, label)                                        \
  __asm__ goto("movq mt__tls@gottpoff(%%rip), %%rax\n\t"                      \
               "subq %0, %%fs:(%%rax)\n\t"                                    \
               "jle %l1"                                               \
               : /* no outputs */                                              \
               : "r"((int64_t)(((uint64_t)(bytes) + 7) >> 3))                  \
               : "rax", "cc", "memory"                                         \
               : label)
#else
#define MT__SPEND_OR_GOTO(bytes, label)                                        \
  do {                                                                         \
    if (!mt__countdown(bytes)) goto label;                                     \
  } while (0)
#endif
/* Slow path of a free: removes `key` and runs the dealloc callback. */
__attribute__((visibility("hidden"))) void mt__untrack(uintptr_t key);

/* For a caller that keeps each sampled block's handle itself (the malloc
 * interposer, in a header in front of the block) instead of in the
 * engine's table: no table, no lock, no filter. mt__track_handle runs the
 * alloc callback and returns its handle (NULL: not tracked), and in *epoch
 * the session it belongs to; mt__release_handle runs the dealloc callback
 * for it, if that session is still the running one. */
__attribute__((visibility("hidden"))) void *mt__track_handle(uint64_t words, uint64_t bytes,
                                                              uint64_t nsamples, mt_source source,
                                                              uint32_t *epoch);
__attribute__((visibility("hidden"))) void mt__release_handle(void *handle, uint32_t epoch);

/* For a caller that keeps its sampled blocks' frames and may report parts
 * of a block again later (the interposer's anonymous mappings, split by a
 * partial munmap: src/preload/preload_mmap.c). All three run with sampling
 * suspended on the thread, as the other tracker calls do.
 *
 * mt__callstack_marked: this thread's callstack, innermost first, with
 * `mark` as an innermost frame of its own before the caller's frames (a
 * code the tracer names itself); in *frames, the thread's buffer, valid
 * until its next sample or call here. Returns the frames' count (0, and
 * *frames NULL, when the thread has no buffer).
 *
 * mt__track_handle_frames: mt__track_handle for an external block with
 * these frames, which the tracker sees instead of the current callstack.
 *
 * mt__session_current: whether sampling runs in session `epoch`, the one
 * a handle of mt__track_handle* came from (a later session must not hear
 * of a block it never sampled). */
__attribute__((visibility("hidden"))) size_t mt__callstack_marked(uint64_t mark,
                                                                   const uint64_t **frames);
__attribute__((visibility("hidden"))) void *mt__track_handle_frames(uint64_t bytes,
                                                                     uint64_t nsamples,
                                                                     const uint64_t *frames,
                                                                     size_t n, uint32_t *epoch);
__attribute__((visibility("hidden"))) int mt__session_current(uint32_t epoch);

/* The lock of the interposer's table of sampled mappings, which the
 * engine takes at fork after its own (and after the tracer's): its holders
 * call no tracker, while the tracer's may unmap (and so wait for it). */
extern pthread_mutex_t mt__maps_lock __attribute__((visibility("hidden")));

/* How many of a block's `nsamples` sample points lie in `part` of its
 * `words` words, drawn as the engine's sampling would have placed them
 * (given the count, the points are a uniform choice of distinct words: a
 * hypergeometric draw; exact at rate 1, where every word is a point). */
__attribute__((visibility("hidden"))) uint64_t mt__samples_within(uint64_t words,
                                                                   uint64_t nsamples,
                                                                   uint64_t part);

#endif
