/* The interposer's slow paths and bootstrap.
 *
 * Bootstrapping: the real functions are found with dlsym(RTLD_NEXT), which
 * may itself allocate (dlerror buffers). Until they are known, requests are
 * served from a static arena whose blocks are never freed; each arena block
 * is marked sticky in the engine's filter, so the fast free sends it here
 * (where it is ignored) without testing for the arena itself. */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine_internal.h"
#include "memtrace/tracer.h"
#include "preload.h"
#include "unwind.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- bootstrap arena ---- */

static _Alignas(64) char arena[64 * 1024];
static size_t arena_used;

static int in_arena(const void *p) { return (uintptr_t)p - (uintptr_t)arena < sizeof arena; }

static void *arena_alloc(size_t n, size_t align) {
  if (align < 16) align = 16;
  size_t at = (arena_used + align - 1) & ~(align - 1);
  if (at + n > sizeof arena || at + n < at) return NULL;
  arena_used = at + n;
  mt__filter[mt__filter_slot((uintptr_t)(arena + at))] = MT__FILTER_STICKY;
  return arena + at; /* static storage: already zeroed, as calloc needs */
}

/* ---- finding the real functions ---- */

/* volatile: dlsym re-enters through malloc (from another file), which the
 * compiler cannot see; the store must not be elided or moved. */
static volatile int resolving;

static void resolve_real(void);

static void *boot_malloc(size_t n) {
  resolve_real();
  return mt__real_malloc != boot_malloc ? mt__real_malloc(n) : arena_alloc(n, 16);
}
static void *boot_calloc(size_t n, size_t m) {
  resolve_real();
  return mt__real_calloc != boot_calloc ? mt__real_calloc(n, m) : arena_alloc(n * m, 16);
}
static void *boot_realloc(void *p, size_t n) {
  resolve_real();
  return mt__real_realloc != boot_realloc ? mt__real_realloc(p, n) : NULL;
}
static void boot_free(void *p) {
  resolve_real();
  if (mt__real_free != boot_free) mt__real_free(p);
}
static int boot_posix_memalign(void **out, size_t a, size_t n) {
  resolve_real();
  return mt__real_posix_memalign != boot_posix_memalign ? mt__real_posix_memalign(out, a, n) : ENOMEM;
}
static void *boot_aligned_alloc(size_t a, size_t n) {
  resolve_real();
  return mt__real_aligned_alloc != boot_aligned_alloc ? mt__real_aligned_alloc(a, n) : arena_alloc(n, a);
}
static void *boot_memalign(size_t a, size_t n) {
  resolve_real();
  return mt__real_memalign != boot_memalign ? mt__real_memalign(a, n) : arena_alloc(n, a);
}
static void *boot_valloc(size_t n) {
  resolve_real();
  return mt__real_valloc != boot_valloc ? mt__real_valloc(n) : NULL;
}
static void *boot_pvalloc(size_t n) {
  resolve_real();
  return mt__real_pvalloc != boot_pvalloc ? mt__real_pvalloc(n) : NULL;
}
/* The C library may lack C23's sized frees: then they are plain frees. */
static void plain_free_sized(void *p, size_t n) {
  (void)n;
  mt__real_free(p);
}
static void plain_free_aligned_sized(void *p, size_t a, size_t n) {
  (void)a;
  (void)n;
  mt__real_free(p);
}

void *(*mt__real_malloc)(size_t) = boot_malloc;
void *(*mt__real_calloc)(size_t, size_t) = boot_calloc;
void *(*mt__real_realloc)(void *, size_t) = boot_realloc;
void (*mt__real_free)(void *) = boot_free;
int (*mt__real_posix_memalign)(void **, size_t, size_t) = boot_posix_memalign;
void *(*mt__real_aligned_alloc)(size_t, size_t) = boot_aligned_alloc;
void *(*mt__real_memalign)(size_t, size_t) = boot_memalign;
void *(*mt__real_valloc)(size_t) = boot_valloc;
void *(*mt__real_pvalloc)(size_t) = boot_pvalloc;
void (*mt__real_free_sized)(void *, size_t) = plain_free_sized;
void (*mt__real_free_aligned_sized)(void *, size_t, size_t) = plain_free_aligned_sized;

static void *next_symbol(const char *name) { return dlsym(RTLD_NEXT, name); }

static void resolve_real(void) {
  if (resolving || mt__real_malloc != boot_malloc) return;
  resolving = 1; /* dlsym's own allocations come from the arena */
  void *f;
#define FIND(var, name)                                                         \
  if ((f = next_symbol(name))) *(void **)&var = f;
  FIND(mt__real_calloc, "calloc");
  FIND(mt__real_realloc, "realloc");
  FIND(mt__real_free, "free");
  FIND(mt__real_posix_memalign, "posix_memalign");
  FIND(mt__real_aligned_alloc, "aligned_alloc");
  FIND(mt__real_memalign, "memalign");
  FIND(mt__real_valloc, "valloc");
  FIND(mt__real_pvalloc, "pvalloc");
  FIND(mt__real_free_sized, "free_sized");
  FIND(mt__real_free_aligned_sized, "free_aligned_sized");
  FIND(mt__real_malloc, "malloc"); /* last: it marks the end of bootstrap */
#undef FIND
  resolving = 0;
  if (mt__real_malloc == boot_malloc || mt__real_free == boot_free) {
    static const char msg[] = "memtrace: cannot find the C library's malloc; aborting\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
    abort();
  }
}

/* ---- slow paths ---- */

/* Samples the block if a sample point lies in it. `frame`: the record of
 * the slow path that calls this, which the wrapper reached by a tail call,
 * so that its return address is the program's call: the unwinder starts
 * there. */
static void *report(void *p, size_t n, void *frame) {
  uint64_t ns;
  if (mt__sample_slow((int64_t)((n + 7) >> 3), &ns) && p) {
    mt__unwind_from = (uintptr_t)frame;
    mt__track((uintptr_t)p, (n + 7) >> 3, n, ns, MT_SOURCE_EXTERNAL);
    mt__unwind_from = 0;
  }
  return p;
}

#define HERE __builtin_frame_address(0)

void *mt__malloc_sampled(size_t n) { return report(mt__real_malloc(n), n, HERE); }

void *mt__realloc_sampled(void *p, size_t n) { return report(mt__real_realloc(p, n), n, HERE); }

void *mt__calloc_sampled(size_t n, size_t m, size_t bytes) {
  return report(mt__real_calloc(n, m), bytes, HERE);
}

void *mt__aligned_sampled(int kind, size_t align, size_t n) {
  void *p = kind == MT__ALIGNED_ALLOC ? mt__real_aligned_alloc(align, n)
            : kind == MT__MEMALIGN    ? mt__real_memalign(align, n)
            : kind == MT__VALLOC      ? mt__real_valloc(n)
                                      : mt__real_pvalloc(n);
  return report(p, n, HERE);
}

int mt__posix_memalign_sampled(void **out, size_t align, size_t n) {
  int rc = mt__real_posix_memalign(out, align, n);
  report(rc == 0 ? *out : NULL, n, HERE);
  return rc;
}

/* kind < 0: only report (realloc frees the block itself). */
void mt__free_maybe_tracked(void *p, size_t size, size_t align, int kind) {
  if (in_arena(p)) return; /* bootstrap blocks are never freed */
  mt__untrack((uintptr_t)p);
  if (kind == MT__FREE) mt__real_free(p);
  else if (kind == MT__FREE_SIZED) mt__real_free_sized(p, size);
  else if (kind == MT__FREE_ALIGNED_SIZED) mt__real_free_aligned_sized(p, align, size);
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

/* dlclose is counted, so that the tracer looks for unloaded libraries only
 * after one (see check_unloads in src/tracer/tracer.c). */
extern _Atomic unsigned mt__dlclose_count;
extern int mt__dlclose_hooked;

EXPORT int dlclose(void *handle) {
  static int (*_Atomic real_dlclose)(void *);
  int (*real)(void *) = real_dlclose;
  if (!real) {
    *(void **)&real = dlsym(RTLD_NEXT, "dlclose");
    if (!real) return -1;
    real_dlclose = real;
  }
  int rc = real(handle);
  atomic_fetch_add(&mt__dlclose_count, 1); /* after: the library is gone */
  return rc;
}

__attribute__((constructor)) static void preload_init(void) {
  resolve_real();
  mt__dlclose_hooked = 1;
  mt_trace_if_requested(getenv("MEMTRACE_CONTEXT"), 0);
}
