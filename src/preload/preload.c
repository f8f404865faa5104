/* libmemtrace_preload.so: LD_PRELOAD malloc interposer.
 *
 * Each wrapper calls the next allocator (found with dlsym(RTLD_NEXT)) and
 * reports to the engine. The unsampled malloc costs one thread-local
 * decrement and a branch; an unsampled free, one load from the engine's
 * filter and a branch.
 *
 * Bootstrapping: dlsym itself may allocate (dlerror buffers) before the
 * real functions are known; those requests are served from a static arena
 * whose blocks are never freed (freeing one is a no-op). */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine_internal.h"
#include "memtrace/tracer.h"

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static void (*real_free_sized)(void *, size_t);
static void (*real_free_aligned_sized)(void *, size_t, size_t);

/* ---- bootstrap arena ---- */

static _Alignas(64) char arena[64 * 1024];
static size_t arena_used;

static int in_arena(const void *p) {
  return (uintptr_t)p - (uintptr_t)arena < sizeof arena;
}

static void *arena_alloc(size_t n, size_t align) {
  if (align < 16) align = 16;
  size_t at = (arena_used + align - 1) & ~(align - 1);
  if (at + n > sizeof arena || at + n < at) return NULL;
  arena_used = at + n;
  return arena + at; /* static storage: already zeroed, as calloc needs */
}

static int resolving;

static void resolve_real(void) {
  if (resolving) return;
  resolving = 1;
  *(void **)&real_malloc = dlsym(RTLD_NEXT, "malloc");
  *(void **)&real_calloc = dlsym(RTLD_NEXT, "calloc");
  *(void **)&real_realloc = dlsym(RTLD_NEXT, "realloc");
  *(void **)&real_free = dlsym(RTLD_NEXT, "free");
  *(void **)&real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
  *(void **)&real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
  *(void **)&real_memalign = dlsym(RTLD_NEXT, "memalign");
  *(void **)&real_valloc = dlsym(RTLD_NEXT, "valloc");
  *(void **)&real_pvalloc = dlsym(RTLD_NEXT, "pvalloc");
  *(void **)&real_free_sized = dlsym(RTLD_NEXT, "free_sized");
  *(void **)&real_free_aligned_sized = dlsym(RTLD_NEXT, "free_aligned_sized");
  resolving = 0;
  if (!real_malloc || !real_free || !real_calloc || !real_realloc) {
    static const char msg[] = "memtrace: cannot find the C library's malloc; aborting\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
    abort();
  }
}

/* Reports a block just allocated (the sampled case is out of line). */
static inline void *allocated(void *p, size_t bytes) {
  uint64_t ns;
  if (UNLIKELY(mt__sample(bytes, &ns)) && p)
    mt__track((uintptr_t)p, (bytes + 7) >> 3, bytes, ns, MT_SOURCE_EXTERNAL);
  return p;
}

/* Reports a block about to be freed. */
static inline void releasing(void *p) {
  if (UNLIKELY(mt__maybe_tracked((uintptr_t)p))) mt__untrack((uintptr_t)p);
}

EXPORT void *malloc(size_t n) {
  if (UNLIKELY(!real_malloc)) {
    resolve_real();
    if (!real_malloc) return arena_alloc(n, 16);
  }
  return allocated(real_malloc(n), n);
}

EXPORT void free(void *p) {
  if (UNLIKELY(!p) || UNLIKELY(in_arena(p))) return;
  releasing(p);
  real_free(p);
}

EXPORT void *calloc(size_t n, size_t m) {
  size_t bytes;
  if (UNLIKELY(__builtin_mul_overflow(n, m, &bytes))) {
    errno = ENOMEM;
    return NULL;
  }
  if (UNLIKELY(!real_calloc)) {
    resolve_real();
    if (!real_calloc) return arena_alloc(bytes, 16);
  }
  return allocated(real_calloc(n, m), bytes);
}

EXPORT void *realloc(void *p, size_t n) {
  if (UNLIKELY(!real_realloc)) resolve_real();
  if (UNLIKELY(in_arena(p))) { /* a bootstrap block: move it to the heap */
    size_t avail = (size_t)(arena + sizeof arena - (char *)p);
    void *q = malloc(n);
    if (q) memcpy(q, p, n < avail ? n : avail);
    return q;
  }
  /* The old block is reported freed first: once realloc returns, its
   * address may already belong to another thread's new block. (If realloc
   * fails, the old block lives on unreported.) */
  if (p) releasing(p);
  void *q = real_realloc(p, n);
  return q ? allocated(q, n) : q;
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
  if (UNLIKELY(!real_posix_memalign)) resolve_real();
  int rc = real_posix_memalign(out, align, n);
  if (rc == 0) allocated(*out, n);
  return rc;
}

EXPORT void *aligned_alloc(size_t align, size_t n) {
  if (UNLIKELY(!real_aligned_alloc)) resolve_real();
  return allocated(real_aligned_alloc(align, n), n);
}

EXPORT void *memalign(size_t align, size_t n) {
  if (UNLIKELY(!real_memalign)) {
    resolve_real();
    if (!real_memalign) return arena_alloc(n, align);
  }
  return allocated(real_memalign(align, n), n);
}

EXPORT void *valloc(size_t n) {
  if (UNLIKELY(!real_valloc)) resolve_real();
  return allocated(real_valloc(n), n);
}

EXPORT void *pvalloc(size_t n) {
  if (UNLIKELY(!real_pvalloc)) resolve_real();
  return allocated(real_pvalloc(n), n);
}

/* C23's sized frees: forwarded to the C library's when it has them. */
EXPORT void free_sized(void *p, size_t n) {
  if (!p || in_arena(p)) return;
  releasing(p);
  if (real_free_sized) real_free_sized(p, n);
  else real_free(p);
}

EXPORT void free_aligned_sized(void *p, size_t align, size_t n) {
  if (!p || in_arena(p)) return;
  releasing(p);
  if (real_free_aligned_sized) real_free_aligned_sized(p, align, n);
  else real_free(p);
}

/* _exit skips atexit: a forked child ending with it would lose its last
 * events. Flush them first, then exit for real. */
void mt__trace_before_exit(void);

EXPORT void _exit(int status) {
  static void (*real_exit)(int);
  mt__trace_before_exit();
  if (!real_exit) *(void **)&real_exit = dlsym(RTLD_NEXT, "_exit");
  real_exit(status);
  __builtin_unreachable();
}

EXPORT void _Exit(int status) { _exit(status); }

__attribute__((constructor)) static void preload_init(void) {
  resolve_real();
  mt_trace_if_requested(getenv("MEMTRACE_CONTEXT"), 0);
}
