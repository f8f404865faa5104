/* Shared by the interposer's fast wrappers (preload.c) and its slow paths
 * (preload_slow.c). */
#ifndef MT_PRELOAD_H
#define MT_PRELOAD_H

#include <stddef.h>

/* The next allocator's functions. They start as bootstrap stubs that look
 * the real ones up, so the wrappers never test for NULL. */
#define MT__HIDDEN __attribute__((visibility("hidden")))
/* hidden: the wrappers jump through them with one rip-relative load */
extern MT__HIDDEN void *(*mt__real_malloc)(size_t);
extern MT__HIDDEN void *(*mt__real_calloc)(size_t, size_t);
extern MT__HIDDEN void *(*mt__real_realloc)(void *, size_t);
extern MT__HIDDEN void (*mt__real_free)(void *);
extern MT__HIDDEN int (*mt__real_posix_memalign)(void **, size_t, size_t);
extern MT__HIDDEN void *(*mt__real_aligned_alloc)(size_t, size_t);
extern MT__HIDDEN void *(*mt__real_memalign)(size_t, size_t);
extern MT__HIDDEN void *(*mt__real_valloc)(size_t);
extern MT__HIDDEN void *(*mt__real_pvalloc)(size_t);
extern MT__HIDDEN void (*mt__real_free_sized)(void *, size_t);
extern MT__HIDDEN void (*mt__real_free_aligned_sized)(void *, size_t, size_t);

/* Slow paths: the countdown ran out (the block is allocated here, then
 * reported), or the filter says the block may be tracked. */
void *mt__malloc_sampled(size_t n);
void *mt__calloc_sampled(size_t n, size_t m, size_t bytes);
void *mt__realloc_sampled(void *p, size_t n);
void *mt__aligned_sampled(int kind, size_t align, size_t n);
int mt__posix_memalign_sampled(void **out, size_t align, size_t n);
void mt__free_maybe_tracked(void *p, size_t size, size_t align, int kind);

enum { MT__ALIGNED_ALLOC, MT__MEMALIGN, MT__VALLOC, MT__PVALLOC };
enum { MT__FREE, MT__FREE_SIZED, MT__FREE_ALIGNED_SIZED };

#endif
