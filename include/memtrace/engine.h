/*
 * memtrace/engine.h - the sampling engine: which allocations to record.
 *
 * The C counterpart of OCaml's Gc.Memprof. Every allocated word is sampled
 * independently with probability `rate`: each thread counts down the words
 * to its next sample point, drawn from a geometric distribution of mean
 * 1/rate; an allocation of n words that reaches the point carries
 * `nsamples` >= 1 sample points (how many of its words were sampled) and is
 * reported to the tracker, which may track it through promotion and
 * deallocation.
 *
 * Three ways to report allocations, all thread-safe:
 *   - by address (malloc-like allocators): mt_engine_malloc / mt_engine_free;
 *   - by token (any resource: pools, arenas, mmap'd or GPU buffers):
 *     mt_external_alloc / mt_external_free, as memtrace's External module;
 *   - by block id, for a language runtime written in C: mt_runtime_alloc,
 *     mt_runtime_promote, mt_runtime_free (minor and major heaps).
 * The unsampled path costs one thread-local decrement and one predictable
 * branch; freeing an unsampled block costs one load from a shared filter.
 *
 * A thread never samples while it runs a tracker callback or the engine's
 * own work (callbacks may allocate freely). The engine allocates nothing
 * with malloc, so it can sit under a malloc interposer.
 */
#ifndef MEMTRACE_ENGINE_H
#define MEMTRACE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the tracker learns of a sampled allocation. */
typedef struct mt_alloc_info {
  uint64_t words;          /* size in words (bytes rounded up to 8)          */
  uint64_t bytes;          /* size as requested (words x 8 for runtimes)      */
  uint64_t nsamples;       /* sample points in the block, >= 1               */
  mt_source source;
  const uint64_t *callstack; /* return addresses, innermost first; valid
                                during the callback only; NULL when
                                callstack_len is 0                         */
  size_t callstack_len;
} mt_alloc_info;

/* The tracker: callbacks run on the allocating thread, with sampling
 * suspended on it; they may allocate and take locks of their own. A NULL
 * handle from `alloc` means "do not track" (no later callback for it). */
typedef struct mt_tracker {
  void *(*alloc)(void *ctx, const mt_alloc_info *info);
  /* Runtime blocks moved to the major heap; returns the new handle (NULL:
   * stop tracking). May be NULL: handles are kept. */
  void *(*promote)(void *ctx, void *handle);
  /* The block was freed or collected. May be NULL. */
  void (*dealloc)(void *ctx, void *handle);
  void *ctx;
} mt_tracker;

/* Fills buf with up to `cap` return addresses of the current thread,
 * innermost first, and returns how many. Called with sampling suspended.
 * buf is the engine's, one per thread, mapped at the thread's first sample
 * (not on its stack, which may be a small one) and unmapped at its exit;
 * if it cannot be mapped, the sample carries no callstack. */
typedef size_t (*mt_callstack_fn)(void *ctx, uint64_t *buf, size_t cap);

typedef struct mt_engine_params {
  double rate;            /* sampling rate per word, in (0, 1]            */
  mt_tracker tracker;
  mt_callstack_fn callstack; /* NULL: allocations carry no callstack       */
  void *callstack_ctx;
  size_t callstack_max;   /* frames kept at most (default 256 when 0)     */
  uint64_t seed;          /* 0: seeded from the clock and the thread      */
} mt_engine_params;

/* Starts sampling. MT_ERR_INVALID if already started or a parameter is out
 * of range. The calling thread joins at once; the others at their next
 * allocation, or (those that allocated while the engine was stopped)
 * within 128 KiB of allocation. */
MT_API int mt_engine_start(const mt_engine_params *params);

/* Stops sampling and forgets every tracked block (no dealloc callback for
 * them; later frees of those blocks are ignored). MT_ERR_INVALID if not
 * started. Must not be called from a tracker callback. */
MT_API int mt_engine_stop(void);

MT_API int mt_engine_running(void);

/* Runs `fn(arg)` with sampling suspended on this thread (for code that
 * allocates on the profiler's behalf). */
MT_API void mt_engine_suspended(void (*fn)(void *arg), void *arg);

/* ---- By address ------------------------------------------------------------ */

/* Reports that `ptr` (non-NULL) was just allocated with `bytes` bytes. */
MT_API void mt_engine_malloc(void *ptr, size_t bytes);
/* Reports that `ptr` is about to be freed (call before freeing it, so that
 * a new block at the same address cannot be confused with it). NULL is
 * ignored. */
MT_API void mt_engine_free(void *ptr);

/* ---- By token (memtrace's External) ---------------------------------------- */

/* A resource of `bytes` bytes was allocated. Returns a token to pass to
 * mt_external_free, or 0 when the allocation was not sampled (then nothing
 * need be kept: mt_external_free(0) is a no-op). */
MT_API uintptr_t mt_external_alloc(size_t bytes);
MT_API void mt_external_free(uintptr_t token);

/* ---- By block id (language runtimes) --------------------------------------- */

/* A block of `words` words was allocated on the minor or major heap; `id`
 * names it until it is freed or promoted (its address, typically). */
MT_API void mt_runtime_alloc(uintptr_t id, size_t words, mt_source source);
/* The minor block `old_id` survived a minor collection as `new_id`. */
MT_API void mt_runtime_promote(uintptr_t old_id, uintptr_t new_id);
/* The block was collected. */
MT_API void mt_runtime_free(uintptr_t id);

/* ---- Statistics (for tests and the profiler's own report) ------------------ */

typedef struct mt_engine_stats {
  uint64_t sampled;       /* allocations sampled                         */
  uint64_t tracked;       /* blocks tracked now in the engine's table
                             (the malloc interposer keeps its sampled
                             blocks' handles in the blocks themselves,
                             when the C library's malloc is next)        */
  uint64_t filter_hits;   /* frees that took the slow path (the table's) */
  uint64_t table_bytes;   /* memory of the engine's tables               */
} mt_engine_stats;

MT_API void mt_engine_get_stats(mt_engine_stats *s);

#ifdef __cplusplus
}
#endif

#endif /* MEMTRACE_ENGINE_H */
