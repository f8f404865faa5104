/* The interposer's slow paths and bootstrap.
 *
 * Bootstrapping: the real functions are found with dlsym(RTLD_NEXT), which
 * may itself allocate (dlerror buffers). Until they are known, requests are
 * served from a static arena whose blocks are never freed; each arena block
 * carries the magic word and is marked sticky in the engine's filter, so
 * that the fast free sends it here (where it is ignored) in either mode.
 *
 * Sampled blocks carry a header with their handle (preload.h); with an
 * allocator other than the C library's next, never on a page boundary.
 * Page-aligned requests are kept in the engine's table instead. */
#include <assert.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "preload.h"
#include "engine/engine_internal.h"
#include "memtrace/tracer.h"
#include "tracer/environ.h"
#include "tracer/exec.h"
#include "tracer/interposer.h"
#include "tracer/unwind/unwind.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- the header's secret ---- */

struct mt__hdr_mode mt__hdr_mode;

/* Set once, before the first header is written: the kernel's random bytes
 * for this process (no system call, no allocation), mixed with an address. */
static void init_secret(void) {
  if (mt__hdr_mode.secret) return;
  uint64_t s = (uint64_t)(uintptr_t)&mt__hdr_mode * 0x9e3779b97f4a7c15ull;
  const uint64_t *rnd = (const uint64_t *)getauxval(AT_RANDOM);
  if (rnd) {
    uint64_t a, b;
    memcpy(&a, rnd, 8);
    memcpy(&b, (const char *)rnd + 8, 8);
    s ^= a ^ (b << 29 | b >> 35);
  }
  mt__hdr_mode.secret = s ? s : 1;
}

/* ---- bootstrap arena ---- */

/* A block: its size and the magic word in the 16 bytes in front of it. */
static _Alignas(64) char arena[64 * 1024];
static size_t arena_used = 16;

static int in_arena(const void *p) { return (uintptr_t)p - (uintptr_t)arena < sizeof arena; }

static void *arena_alloc(size_t n, size_t align) {
  init_secret();
  if (align < 16) align = 16;
  size_t at = (arena_used + 16 + align - 1) & ~(align - 1);
  if (at + n > sizeof arena || at + n < at) return NULL;
  arena_used = at + n;
  char *p = arena + at;
  uint64_t words[2] = {n, mt__hdr_mode.secret ^ (uintptr_t)p};
  memcpy(p - 16, words, 16);
  mt__filter[mt__filter_slot((uintptr_t)p)] = MT__FILTER_STICKY;
  return p; /* static storage: already zeroed, as calloc needs */
}

static size_t arena_size(const void *p) {
  uint64_t n;
  memcpy(&n, (const char *)p - 16, 8);
  return (size_t)n;
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
static size_t boot_usable_size(void *p) {
  resolve_real();
  return mt__real_usable_size != boot_usable_size ? mt__real_usable_size(p) : 0;
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
size_t (*mt__real_usable_size)(void *) = boot_usable_size;

static void *next_symbol(const char *name) { return dlsym(RTLD_NEXT, name); }

/* Whether code addresses a and b lie in the same object. Not dladdr: it
 * also looks for the nearest symbol, scanning the object's symbol table
 * (170,000 instructions for the C library's). */
static int same_object(const void *a, const void *b) {
  mt__segment x, y;
  return mt__segment_of((uintptr_t)a, 0, &x) && mt__segment_of((uintptr_t)b, 0, &y) &&
         x.base == y.base;
}

static void resolve_real(void) {
  if (resolving || mt__real_malloc != boot_malloc) return;
  init_secret(); /* before the arena's first block */
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
  FIND(mt__real_usable_size, "malloc_usable_size");
  FIND(mt__real_malloc, "malloc"); /* last: it marks the end of bootstrap */
#undef FIND
  resolving = 0;
  if (mt__real_malloc == boot_malloc || mt__real_free == boot_free) {
    static const char msg[] = "memtrace: cannot find the C library's malloc; aborting\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
    abort();
  }
  /* Headers only in front of the C library's blocks: the word before a
   * block of another allocator may lie in an unmapped page. */
  void *libc_only = next_symbol("gnu_get_libc_version");
  if (libc_only && mt__real_usable_size != boot_usable_size &&
      same_object((void *)mt__real_malloc, libc_only))
    mt__hdr_mode.on = 1;
}

/* ---- slow paths ---- */

#define HERE __builtin_frame_address(0)
#define WORDS(n) (((uint64_t)(n) + 7) >> 3)

/* Samples the block, keeping its handle in the engine's table (a
 * page-aligned request: see preload.h). `frame`: the record of the slow
 * path that calls this, which the wrapper reached by a tail call, so that
 * its return address is the program's call: the unwinder starts there. */
static void *report_in_table(void *p, size_t n, uint64_t ns, void *frame) {
  if (p) {
    mt__unwind_from = (uintptr_t)frame;
    mt__track((uintptr_t)p, WORDS(n), n, ns, MT_SOURCE_EXTERNAL);
    mt__unwind_from = 0;
  }
  return p;
}

/* Whether the block of n bytes the wrapper passed here is sampled (the
 * countdown reached its sample point; the engine may still decline:
 * stopped, or the profiler's own allocation). */
static int sampled(size_t n, uint64_t *ns) { return mt__sample_slow((int64_t)WORDS(n), ns); }

/* The room to allocate in front of a sampled block whose header takes
 * `off` bytes (MT__HDR, or the alignment if larger): twice that with
 * another allocator next, so that the program's pointer can move past a
 * page boundary (place). */
static size_t room_for(size_t off) { return mt__hdr_mode.on ? off : 2 * off; }

static char *place(char *base, size_t off) {
  char *p = base + off;
  if (!mt__hdr_mode.on && !((uintptr_t)p & (MT__PAGE - 1))) p += off;
  return p;
}

/* The program's pointer p in the block at base, and its header, for a
 * sample of n bytes (see report_in_table for `frame`). */
static void *adopt(char *base, char *p, size_t n, uint64_t ns, void *frame) {
  mt__hdr *h = mt__hdr_of(p);
  uint32_t ep;
  mt__unwind_from = (uintptr_t)frame;
  h->handle = mt__track_handle(WORDS(n), n, ns, MT_SOURCE_EXTERNAL, &ep);
  mt__unwind_from = 0;
  h->epoch = ep;
  h->off = (uint32_t)(p - base);
  h->magic = mt__hdr_mode.secret ^ (uintptr_t)p;
  return p;
}

/* Copies a reallocated block's bytes: as many as both blocks hold. */
static void copy_bytes(void *to, const void *from, size_t old, size_t n) {
  memcpy(to, from, old < n ? old : n);
}

/* Gives a headed block back to the allocator. No later test may take the
 * freed bytes for a header: the magic is cleared first. */
static void free_headed(void *p, char *base) {
  mt__hdr_of(p)->magic = 0;
  mt__real_free(base); /* its size and alignment are no longer the program's */
}

/* A sampled block of n bytes with a header in front, from the C library's
 * malloc or calloc. */
static void *new_headed(size_t n, int zero, uint64_t ns, void *frame) {
  size_t room = room_for(MT__HDR);
  char *base = n > SIZE_MAX - room ? NULL
               : zero              ? mt__real_calloc(1, n + room)
                                   : mt__real_malloc(n + room);
  if (!base) {
    errno = ENOMEM;
    return NULL;
  }
  return adopt(base, place(base, MT__HDR), n, ns, frame);
}

void *mt__malloc_sampled(size_t n) {
  uint64_t ns;
  if (!sampled(n, &ns) || MT_BENCH_STAGE == 1) return mt__real_malloc(n);
  return new_headed(n, 0, ns, HERE);
}

void *mt__calloc_sampled(size_t n, size_t m, size_t bytes) {
  uint64_t ns;
  if (!sampled(bytes, &ns)) return mt__real_calloc(n, m);
  return new_headed(bytes, 1, ns, HERE);
}

/* realloc of a block not ours (or NULL), the new size reaching a sample
 * point: the sampled block is a new one, the bytes are copied. */
void *mt__realloc_sampled(void *p, size_t n) {
  uint64_t ns;
  if (!sampled(n, &ns)) return mt__real_realloc(p, n);
  char *q = new_headed(n, 0, ns, HERE);
  if (!q) return NULL; /* p is left as it was, as realloc must */
  if (p) {
    copy_bytes(q, p, mt__real_usable_size(p), n);
    mt__real_free(p);
  }
  return q;
}

/* The aligned allocators: the real one of `kind`, with the program's
 * arguments. */
static void *aligned_real(int kind, size_t align, size_t n) {
  return kind == MT__ALIGNED_ALLOC ? mt__real_aligned_alloc(align, n)
         : kind == MT__MEMALIGN    ? mt__real_memalign(align, n)
         : kind == MT__VALLOC      ? mt__real_valloc(n)
                                   : mt__real_pvalloc(n);
}

/* A sampled block aligned to `align` (a power of two) with a header in
 * front: the alignment itself when larger than the header, so that the
 * program's pointer keeps it. `size` bytes are allocated, n reported. */
static void *new_headed_aligned(size_t align, size_t size, size_t n, uint64_t ns, void *frame) {
  size_t off = align > MT__HDR ? align : MT__HDR, room = room_for(off);
  char *base = size <= SIZE_MAX - room ? mt__real_memalign(align, size + room) : NULL;
  if (!base) {
    errno = ENOMEM;
    return NULL;
  }
  return adopt(base, place(base, off), n, ns, frame);
}

void *mt__aligned_sampled(int kind, size_t align, size_t n) {
  uint64_t ns;
  if (!sampled(n, &ns)) return aligned_real(kind, align, n);
  size_t page = (size_t)sysconf(_SC_PAGESIZE), a = align, size = n;
  if (kind == MT__VALLOC || kind == MT__PVALLOC) a = page;
  if (kind == MT__PVALLOC) size = n ? (n + page - 1) & ~(page - 1) : page;
  /* a page-aligned request: no header (preload.h) */
  if (a >= MT__PAGE) return report_in_table(aligned_real(kind, align, n), n, ns, HERE);
  /* an alignment the C library would reject or round: its own call (the
   * sample point is spent on an allocation that goes unrecorded) */
  if (!a || (a & (a - 1)) || size < n) return aligned_real(kind, align, n);
  return new_headed_aligned(a, size, n, ns, HERE);
}

int mt__posix_memalign_sampled(void **out, size_t align, size_t n) {
  uint64_t ns;
  if (!sampled(n, &ns) || !align || (align & (align - 1)) || align % sizeof(void *))
    return mt__real_posix_memalign(out, align, n); /* and its EINVAL */
  if (align >= MT__PAGE) {
    int rc = mt__real_posix_memalign(out, align, n);
    if (rc == 0) report_in_table(*out, n, ns, HERE);
    return rc;
  }
  void *p = new_headed_aligned(align, n, n, ns, HERE);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}

/* Whether p, found ours by the fast test, has a header: else it is a block
 * in the engine's table, on a page boundary (or not ours: the filter errs
 * towards "maybe"). */
static int headed(const void *p) {
  return ((uintptr_t)p & (MT__PAGE - 1)) || (mt__hdr_mode.on && mt__has_magic(p));
}

/* Reports a headed block's free (once: the handle is cleared) and returns
 * where its allocation starts. */
static char *release(void *p) {
  mt__hdr *h = mt__hdr_of(p);
  void *handle = h->handle;
  h->handle = NULL;
  mt__release_handle(handle, h->epoch);
  return (char *)p - h->off;
}

/* A block the fast test found may be ours. */
void mt__free_ours(void *p, size_t size, size_t align, int kind) {
  if (in_arena(p)) return; /* bootstrap blocks are never freed */
  if (headed(p)) {
    free_headed(p, release(p));
    return;
  }
  mt__untrack((uintptr_t)p);
  if (kind == MT__FREE) mt__real_free(p);
  else if (kind == MT__FREE_SIZED) mt__real_free_sized(p, size);
  else mt__real_free_aligned_sized(p, align, size);
}

/* realloc of a block that may be ours. A sampled block is reported freed
 * first: once realloc returns, its address may already belong to another
 * thread's new block (if realloc fails, it lives on unreported). With the
 * C library next, a headed block keeps its header (the C library may then
 * resize it in place, or move it with mremap), sampled again or not. */
void *mt__realloc_ours(void *p, size_t n) {
  uint64_t ns;
  if (in_arena(p)) {
    void *q = malloc(n); /* ours: it may be sampled */
    if (q) copy_bytes(q, p, arena_size(p), n);
    return q;
  }
  if (!headed(p)) {
    mt__untrack((uintptr_t)p);
    if (mt__countdown(n)) return mt__real_realloc(p, n);
    return mt__realloc_sampled(p, n);
  }
  if (n == 0) { /* the C library's realloc(p, 0): a free */
    mt__free_ours(p, 0, 0, MT__FREE);
    return NULL;
  }
  size_t off = mt__hdr_of(p)->off;
  char *base = release(p);
  int s = !mt__countdown(n) && sampled(n, &ns);
  if (!mt__hdr_mode.on) { /* a new block: its place depends on its address */
    char *q = s ? new_headed(n, 0, ns, HERE) : mt__real_malloc(n);
    if (!q) return NULL;
    copy_bytes(q, p, mt__real_usable_size(base) - off, n);
    free_headed(p, base);
    return q;
  }
  char *nb = n <= SIZE_MAX - off ? mt__real_realloc(base, n + off) : NULL;
  if (!nb) {
    errno = ENOMEM;
    return NULL;
  }
  char *q = nb + off;
  if (s) return adopt(nb, q, n, ns, HERE);
  mt__hdr_of(q)->magic = mt__hdr_mode.secret ^ (uintptr_t)q; /* moved, untracked */
  return q;
}

size_t mt__usable_size_ours(void *p) {
  if (in_arena(p)) return arena_size(p);
  if (!headed(p)) return mt__real_usable_size(p);
  size_t off = mt__hdr_of(p)->off;
  return mt__real_usable_size((char *)p - off) - off;
}

/* The ends of a process that run no exit handler: each writes the
 * buffered events first (mt__trace_before_exit, which never waits for the
 * lock: these may come from a signal handler), then goes on as it would
 * have, through the next definition of its name (`real_` + name). */
#define REAL(name) \
  static __typeof__(&name) real_##name; \
  if (!real_##name) *(void **)&real_##name = dlsym(RTLD_NEXT, #name)

void (*mt__real__exit)(int);

/* _exit skips atexit: a forked child, or an attached process, ending with
 * it would lose its last events. Attached, the C library's _exit jumps
 * here, and goes on through its trampoline. */
EXPORT void _exit(int status) {
  REAL(_exit);
  mt__trace_before_exit();
  (mt__real__exit ? mt__real__exit : real__exit)(status);
  __builtin_unreachable();
}

EXPORT void _Exit(int status) { _exit(status); }

/* abort, and assert's __assert_fail (which ends with the C library's own
 * abort, not this one): a program dying of a failed assertion, or of
 * std::terminate, left a trace without its last second or so of events,
 * the ones a crash report wants. quick_exit runs only at_quick_exit's
 * handlers. */
EXPORT void abort(void) {
  REAL(abort);
  mt__trace_before_exit();
  real_abort();
  __builtin_unreachable();
}

EXPORT void __assert_fail(const char *assertion, const char *file, unsigned line,
                          const char *function) {
  REAL(__assert_fail);
  mt__trace_before_exit();
  real___assert_fail(assertion, file, line, function);
  __builtin_unreachable();
}

EXPORT void quick_exit(int status) {
  REAL(quick_exit);
  mt__trace_before_exit();
  real_quick_exit(status);
  __builtin_unreachable();
}

/* dlclose is told to the tracer (src/tracer/interposer.h), so that it
 * looks for unloaded libraries only after one, and describes what it has
 * queued before the library may go. */
EXPORT int dlclose(void *handle) {
  static int (*_Atomic real_dlclose)(void *);
  int (*real)(void *) = real_dlclose;
  if (!real) {
    *(void **)&real = dlsym(RTLD_NEXT, "dlclose");
    if (!real) return -1;
    real_dlclose = real;
  }
  /* Not in a dlclose nested in a destructor the outer one runs: the loader
   * holds its lock there, and the tracer's lock must not be taken under it
   * (a lock holder may be waiting for the loader's). The outer call
   * described what was queued. */
  static __thread int nested __attribute__((tls_model("initial-exec")));
  if (!nested) mt__tr_before_dlclose();
  nested++;
  int rc = real(handle);
  nested--;
  mt__tr_after_dlclose(); /* after: the library is gone */
  return rc;
}

/* malloc's and free's jumps to the next allocator made direct (jumps.c):
 * "direct", "indirect", or "mixed" if only one could be. */
const char *mt__make_jumps_direct(void) {
#ifdef MT__DIRECT_JUMPS
  int n = (mt__jump_direct(mt__malloc_site, (void *const *)(void *)&mt__real_malloc) == 0) +
          (mt__jump_direct(mt__free_site, (void *const *)(void *)&mt__real_free) == 0);
  return n == 2 ? "direct" : n ? "mixed" : "indirect";
#else
  return "indirect";
#endif
}

/* Whether `object` (a loaded library's name) defines malloc itself: its
 * handle's lookup, which goes on into its dependencies, ends in it. */
static int defines_malloc(const char *object) {
  void *h = dlopen(object, RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return 0;
  void *m = dlsym(h, "malloc");
  Dl_info info;
  int here = m && dladdr(m, &info) && info.dli_fname && strcmp(info.dli_fname, object) == 0;
  dlclose(h);
  return here;
}

typedef struct {
  const char *ours;    /* this library's name, where the search ends */
  int seen;            /* objects passed */
  const char *definer; /* the first to define malloc, if before ours */
} definer_search;

/* dl_iterate_phdr's callback: the objects in load order, which for those
 * loaded at start-up is the lookup's order (the program, the preloaded
 * libraries, then the needed ones); the program itself is skipped. */
static int find_definer(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  definer_search *s = data;
  if (s->seen++ == 0) return 0;
  const char *name = info->dlpi_name;
  if (!name || !*name) return 0;
  if (strcmp(name, s->ours) == 0) return 1;
  if (!defines_malloc(name)) return 0;
  s->definer = name;
  return 1;
}

/* Where the malloc that the program's calls reach is defined, if not in
 * this library; NULL if here. What the loader binds `malloc` to first is
 * usually the answer, with one exception: a program built without PIE
 * that takes malloc's address has an undefined `malloc` symbol whose value
 * is its own PLT entry, for every library's pointer to equal the
 * program's. The loader's lookup answers with that entry; its calls still
 * go on to the first definition after the program, looked for among the
 * libraries loaded ahead of this one (node, as Debian builds it). */
static const char *malloc_definer(void) {
  void *first = dlsym(RTLD_DEFAULT, "malloc");
  if (!first || first == (void *)mt__own_malloc) return NULL;
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  if (!dladdr1(first, &info, (void **)&sym, RTLD_DL_SYMENT))
    return "the program itself";
  if (!sym || sym->st_shndx != SHN_UNDEF)
    return info.dli_fname && *info.dli_fname ? info.dli_fname : "the program itself";
  Dl_info mine;
  if (!dladdr((void *)mt__own_malloc, &mine) || !mine.dli_fname) return NULL;
  definer_search s = {.ours = mine.dli_fname};
  dl_iterate_phdr(find_definer, &s);
  return s.definer;
}

/* A program that brings its own malloc (an allocator linked in and
 * exporting it: jemalloc, tcmalloc or mimalloc built so), or a library
 * preloaded ahead of this one that does, has every call bound to it before
 * this library's. Its functions are redirected to this library's wrappers
 * (preload_redirect.c) unless MEMTRACE_REDIRECT=0; where that cannot be
 * done, none of its allocations would be seen, and the trace would say
 * nothing of why: said once, as tracing starts. */
static struct {
  const char *where; /* the allocator's object, if one is ahead */
  const char *why;   /* why it is not redirected; NULL: it is */
} bypass;

static void redirect_if_bypassed(void) {
  if (!(bypass.where = malloc_definer())) return;
  const char *e = mt__env_get("MEMTRACE_REDIRECT");
  bypass.why = e && strcmp(e, "0") == 0 ? "MEMTRACE_REDIRECT=0" : mt__redirect_allocator();
}

static void say_if_bypassed(void) {
  if (!bypass.where || !bypass.why) return;
  mt__tr_say("memtrace: malloc is defined by %s, ahead of the interposer, and is not redirected "
             "(%s): the allocations through it are not traced",
             bypass.where, bypass.why);
}

int mt__loaded_late(void) {
  /* Preloaded, this library is in the program's global scope, which the
   * main program's handle searches (RTLD_DEFAULT would search this
   * library's own scope too, from here). */
  static int late = -1;
  if (late < 0) {
    void *global = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
    late = !global || dlsym(global, "mt__attach_begin") == NULL;
  }
  return late;
}

__attribute__((constructor)) static void preload_init(void) {
  resolve_real();
  if (mt__loaded_late()) {
    /* dlopen'ed into a running program (memtrace attach): no call is bound
     * to this library; what it needs is found now, and the rest is done
     * when the attacher asks (preload_attach.c) */
    mt__exec_resolve();
    mt__creds_resolve();
    mt__loader_resolve();
    mt__mmap_resolve();
    return;
  }
  redirect_if_bypassed(); /* the slots' final values: before the jumps use them */
  const char *jumps = mt__make_jumps_direct();
  mt__exec_resolve();
  mt__creds_resolve();
  mt__loader_resolve();
  mt__mmap_resolve();
  mt__tr_dlclose_hooked();
  static char settings[96]; /* no stdio here: it may allocate */
  size_t len = 0;
  const char *parts[] = {"blocks=", mt__hdr_mode.on ? "header" : "header-off-page", ", jumps=",
                         jumps, bypass.where && !bypass.why ? ", allocator=redirected" : ""};
  for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
    for (const char *c = parts[i]; *c && len + 1 < sizeof settings; c++) settings[len++] = *c;
  settings[len] = 0;
  mt__tr_set_interposer(settings); /* named in the trace's runtime parameters */
  mt_trace_if_requested(mt__env_get("MEMTRACE_CONTEXT"), 0);
  if (mt_trace_is_tracing()) say_if_bypassed(); /* listening too: said before a client comes */
}
