/* libmemtrace_preload.so: the LD_PRELOAD malloc interposer's fast paths.
 *
 * Each wrapper first spends the block's words from the thread's countdown;
 * while no sample point is reached (nearly always) it tail-calls the next
 * allocator: a thread-local subtraction, a branch and a jump. A free
 * consults the engine's filter (one load from a table indexed by address
 * bits) and jumps to the next free. Everything else is in preload_slow.c.
 * This file is compiled without frame pointers so the wrappers stay a few
 * instructions; the slow paths keep them for the frame-pointer unwinder. */
#include <errno.h>
#include <stdint.h>

#include "engine_internal.h"
#include "preload.h"

#define EXPORT __attribute__((visibility("default")))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

EXPORT void *malloc(size_t n) {
  MT__SPEND_OR_GOTO(n, sampled);
  return mt__real_malloc(n);
sampled:
  return mt__malloc_sampled(n);
}

EXPORT void free(void *p) {
  if (UNLIKELY(mt__maybe_ours(p))) {
    mt__free_ours(p, 0, 0, MT__FREE);
    return;
  }
  mt__real_free(p);
}

EXPORT void *calloc(size_t n, size_t m) {
  size_t bytes;
  if (UNLIKELY(__builtin_mul_overflow(n, m, &bytes))) {
    errno = ENOMEM;
    return NULL;
  }
  MT__SPEND_OR_GOTO(bytes, sampled);
  return mt__real_calloc(n, m);
sampled:
  return mt__calloc_sampled(n, m, bytes);
}

EXPORT void *realloc(void *p, size_t n) {
  if (UNLIKELY(mt__maybe_ours(p))) return mt__realloc_ours(p, n);
  MT__SPEND_OR_GOTO(n, sampled);
  return mt__real_realloc(p, n);
sampled: /* a tail call, as everywhere here: no frame of ours to unwind */
  return mt__realloc_sampled(p, n);
}

EXPORT void *reallocarray(void *p, size_t n, size_t m) {
  size_t bytes;
  if (__builtin_mul_overflow(n, m, &bytes)) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc(p, bytes);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n) {
  MT__SPEND_OR_GOTO(n, sampled);
  return mt__real_posix_memalign(out, align, n);
sampled:
  return mt__posix_memalign_sampled(out, align, n);
}

EXPORT void *aligned_alloc(size_t align, size_t n) {
  MT__SPEND_OR_GOTO(n, sampled);
  return mt__real_aligned_alloc(align, n);
sampled:
  return mt__aligned_sampled(MT__ALIGNED_ALLOC, align, n);
}

EXPORT void *memalign(size_t align, size_t n) {
  MT__SPEND_OR_GOTO(n, sampled);
  return mt__real_memalign(align, n);
sampled:
  return mt__aligned_sampled(MT__MEMALIGN, align, n);
}

EXPORT void *valloc(size_t n) {
  MT__SPEND_OR_GOTO(n, sampled);
  return mt__real_valloc(n);
sampled:
  return mt__aligned_sampled(MT__VALLOC, 0, n);
}

EXPORT void *pvalloc(size_t n) {
  MT__SPEND_OR_GOTO(n, sampled);
  return mt__real_pvalloc(n);
sampled:
  return mt__aligned_sampled(MT__PVALLOC, 0, n);
}

/* C23's sized frees: forwarded to the C library's when it has them. */
EXPORT void free_sized(void *p, size_t n) {
  if (UNLIKELY(mt__maybe_ours(p))) {
    mt__free_ours(p, n, 0, MT__FREE_SIZED);
    return;
  }
  mt__real_free_sized(p, n);
}

EXPORT void free_aligned_sized(void *p, size_t align, size_t n) {
  if (UNLIKELY(mt__maybe_ours(p))) {
    mt__free_ours(p, n, align, MT__FREE_ALIGNED_SIZED);
    return;
  }
  mt__real_free_aligned_sized(p, align, n);
}

/* A sampled block's usable size is its allocation's less the header. */
EXPORT size_t malloc_usable_size(void *p) {
  if (UNLIKELY(mt__maybe_ours(p))) return mt__usable_size_ours(p);
  return mt__real_usable_size(p);
}
