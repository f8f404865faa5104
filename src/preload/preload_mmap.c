/* The interposer's wrappers of mmap, mmap64, munmap and mremap: anonymous
 * mappings sampled by the same countdown as the heap's blocks.
 *
 * What is counted: a mapping the program makes itself (MAP_ANONYMOUS,
 * private or shared) with some access (PROT_NONE reserves address space,
 * not memory). Not counted: file mappings (their pages are the page
 * cache's; the resident series shows them as RssFile), mappings made by
 * the profiler itself, and those made by the library that holds the next
 * malloc (jemalloc's or tcmalloc's arenas, whose blocks are traced as
 * blocks). The C library's own mappings (malloc's large blocks, thread
 * stacks) are made by internal calls that never reach these wrappers.
 *
 * A sampled mapping is an external allocation whose stack starts with a
 * frame of its own, MT__MAPPING_PC (named MT_MAPPING_FILENAME's location
 * by the tracer), so memtrace's tools read it as any other allocation and
 * ours can tell it from the heap's. Its range, handle and frames are kept
 * in a table sorted by address:
 *   - munmap (and a MAP_FIXED mapping over it) of the whole range reports
 *     it freed; of a part, it reports it freed and each remaining piece as
 *     a new allocation with the same frames, carrying the sample points
 *     that lie in it (mt__samples_within): at rate 1, exactly its words;
 *   - mremap is a realloc: the old range as unmapped, the new one as a
 *     mapping made by mremap's caller (if anonymous: the kernel is asked
 *     once the new one is sampled).
 * The table's lock (mt__maps_lock, which the engine takes at fork) is
 * never held while a tracker runs: the tracer's lock is taken inside it,
 * and the tracer's work may unmap. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"
#include "tracer/environ.h"
#include "tracer/interposer.h"
#include "tracer/unwind/stackmap.h"
#include "tracer/unwind/unwind.h"

#define EXPORT __attribute__((visibility("default")))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define PAGE_UP(x) (((x) + MT__PAGE - 1) & ~(uintptr_t)(MT__PAGE - 1))

typedef struct region {
  uintptr_t lo, hi;  /* [lo, hi), whole pages */
  void *handle;      /* the tracker's */
  uint32_t epoch;    /* the engine session that sampled it */
  uint64_t nsamples; /* sample points in it */
  uint64_t *frames;  /* innermost first, the mapping's own frame included */
  size_t nframes;
} region;

/* What a change to the table leaves to report once its lock is released. */
typedef struct removed {
  region r;
  uintptr_t keep_lo[2], keep_hi[2]; /* the pieces of r that stay mapped */
  int nkeep;
} removed;

static struct {
  region *v; /* sorted by lo, disjoint */
  size_t n, cap;
  _Atomic size_t count; /* n, for munmap's test without the lock */
  mt__segment own, allocator; /* code whose mappings are not the program's */
  int off;                    /* MEMTRACE_MAPPINGS=0 */
} maps;

void *(*mt__real_mmap)(void *, size_t, int, int, int, off_t);
int (*mt__real_munmap)(void *, size_t);
void *(*mt__real_mremap)(void *, size_t, size_t, int, ...);

void mt__mmap_resolve(void) {
  *(void **)&mt__real_mmap = dlsym(RTLD_NEXT, "mmap");
  *(void **)&mt__real_munmap = dlsym(RTLD_NEXT, "munmap");
  *(void **)&mt__real_mremap = dlsym(RTLD_NEXT, "mremap");
  mt__segment_of((uintptr_t)&mt__mmap_resolve, 1, &maps.own);
  /* the next malloc's library, unless it is the C library (whose mappings
   * never come here) or this one */
  if (!mt__segment_of((uintptr_t)mt__real_malloc, 1, &maps.allocator) ||
      maps.allocator.lo == maps.own.lo)
    maps.allocator = (mt__segment){0, 0, 0};
  const char *e = mt__env_get("MEMTRACE_MAPPINGS");
  maps.off = e && strcmp(e, "0") == 0;
}

/* Before the constructor ran (another preloaded library's constructor),
 * the system calls themselves. */
static void *real_mmap(void *a, size_t len, int prot, int flags, int fd, off_t off) {
  if (mt__real_mmap) return mt__real_mmap(a, len, prot, flags, fd, off);
  long r = syscall(SYS_mmap, a, len, prot, flags, fd, off);
  return r == -1 ? MAP_FAILED : (void *)r;
}

static int real_munmap(void *a, size_t len) {
  return mt__real_munmap ? mt__real_munmap(a, len) : (int)syscall(SYS_munmap, a, len);
}

static void *real_mremap(void *old, size_t old_len, size_t len, int flags, void *to) {
  if (mt__real_mremap) return mt__real_mremap(old, old_len, len, flags, to);
  long r = syscall(SYS_mremap, old, old_len, len, flags, to);
  return r == -1 ? MAP_FAILED : (void *)r;
}

static int within(const mt__segment *s, uintptr_t pc) { return pc - 1 >= s->lo && pc - 1 < s->hi; }

/* Whether a mapping made from return address `caller` is the program's to
 * count. */
static int counted(int prot, int flags, uintptr_t caller) {
  return (flags & MAP_ANONYMOUS) && (prot & (PROT_READ | PROT_WRITE)) && !maps.off &&
         !mt__tls.busy && !within(&maps.own, caller) && !within(&maps.allocator, caller);
}

/* ---- the table (its lock held) ---- */

/* The first region whose end lies above addr. */
static size_t first_above(uintptr_t addr) {
  size_t lo = 0, hi = maps.n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (maps.v[mid].hi <= addr) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The table's memory is mapped, not malloc'd: the lock is held around
 * it, and the next allocator (jemalloc's, tcmalloc's) may itself be
 * unmapping, under its own lock, when it reaches this library's munmap. */
static int insert(const region *r) {
  if (maps.n == maps.cap) {
    size_t cap = maps.cap ? maps.cap * 2 : MT__PAGE / sizeof(region);
    region *v = real_mmap(NULL, cap * sizeof *v, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (v == MAP_FAILED) return -1;
    if (maps.n) memcpy(v, maps.v, maps.n * sizeof *v);
    if (maps.v) real_munmap(maps.v, maps.cap * sizeof *v);
    maps.v = v;
    maps.cap = cap;
  }
  size_t i = first_above(r->lo);
  /* overlapping a region the table holds: that one was unmapped behind
   * the wrappers' back (a raw system call), and which is right is not
   * known: the new one is not followed */
  if ((i < maps.n && maps.v[i].lo < r->hi) || (i > 0 && maps.v[i - 1].hi > r->lo)) return -1;
  memmove(&maps.v[i + 1], &maps.v[i], (maps.n - i) * sizeof *maps.v);
  maps.v[i] = *r;
  atomic_store_explicit(&maps.count, ++maps.n, memory_order_relaxed);
  return 0;
}

/* The regions overlapping [lo, hi), taken out of the table in the same
 * hold of the lock as the system call that unmapped them (else another
 * thread could map the range again, and sample it, in between): in
 * `stack` (cap entries), or in a mapping of their own when more. */
typedef struct batch {
  removed *v;
  size_t n, mapped_bytes;
} batch;

static void take_range(uintptr_t lo, uintptr_t hi, batch *b, removed *stack, size_t cap) {
  size_t i = first_above(lo), j = i;
  while (j < maps.n && maps.v[j].lo < hi) j++;
  b->v = stack;
  b->n = b->mapped_bytes = 0;
  if (j - i > cap) {
    size_t bytes = PAGE_UP((j - i) * sizeof(removed));
    void *m = real_mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) j = i + cap; /* the rest stay: at worst, wrongly live */
    else b->v = m, b->mapped_bytes = bytes;
  }
  for (size_t k = i; k < j; k++) {
    removed *d = &b->v[b->n++];
    d->r = maps.v[k];
    d->nkeep = 0;
    if (d->r.lo < lo) d->keep_lo[d->nkeep] = d->r.lo, d->keep_hi[d->nkeep++] = lo;
    if (d->r.hi > hi) d->keep_lo[d->nkeep] = hi, d->keep_hi[d->nkeep++] = d->r.hi;
  }
  memmove(&maps.v[i], &maps.v[j], (maps.n - j) * sizeof *maps.v);
  maps.n -= j - i;
  atomic_store_explicit(&maps.count, maps.n, memory_order_relaxed);
}

/* ---- reports (the lock released) ---- */

static void forget(region *r) {
  mt__real_free(r->frames);
  r->frames = NULL;
}

/* Records a sampled mapping; its frames are copied. */
static void keep(region *r, const uint64_t *frames, size_t n) {
  r->frames = mt__real_malloc(n * sizeof *frames);
  r->nframes = r->frames ? n : 0;
  if (r->frames) memcpy(r->frames, frames, n * sizeof *frames);
  pthread_mutex_lock(&mt__maps_lock);
  int rc = insert(r);
  pthread_mutex_unlock(&mt__maps_lock);
  if (rc != 0) { /* no memory for the table: the mapping is not followed */
    mt__release_handle(r->handle, r->epoch);
    forget(r);
  }
}

/* A region left the table: it is freed, and the pieces of it still mapped
 * come back as allocations of their own with their share of its points. */
static void report_removed(removed *d) {
  region *r = &d->r;
  int live = mt__session_current(r->epoch);
  mt__release_handle(r->handle, r->epoch);
  uint64_t words = (r->hi - r->lo) >> 3, left = r->nsamples;
  for (int i = 0; i < d->nkeep && live; i++) {
    uint64_t part = (d->keep_hi[i] - d->keep_lo[i]) >> 3;
    uint64_t k = mt__samples_within(words, left, part);
    words -= part; /* the next piece draws from what this one left */
    left -= k;
    if (!k) continue;
    region p = {.lo = d->keep_lo[i], .hi = d->keep_hi[i], .nsamples = k};
    p.handle = mt__track_handle_frames(p.hi - p.lo, k, r->frames, r->nframes, &p.epoch);
    if (p.handle) keep(&p, r->frames, r->nframes);
  }
  forget(r);
}

/* Reports what take_range took, the lock released. */
static void report_batch(batch *b) {
  for (size_t i = 0; i < b->n; i++) report_removed(&b->v[i]);
  if (b->mapped_bytes) real_munmap(b->v, b->mapped_bytes);
}

/* The pages of [lo, hi) were replaced (a MAP_FIXED mapping over them):
 * the regions there are reported gone. */
static void replaced(uintptr_t lo, uintptr_t hi) {
  removed stack[16];
  batch b;
  pthread_mutex_lock(&mt__maps_lock);
  take_range(lo, hi, &b, stack, sizeof stack / sizeof *stack);
  pthread_mutex_unlock(&mt__maps_lock);
  report_batch(&b);
}

/* A new mapping of `len` bytes at p, made by the program: sampled as a
 * block of that many bytes. */
static __attribute__((noinline)) void mapped_sampled(uintptr_t p, size_t len, uint64_t ns) {
  const uint64_t *frames;
  mt__tls.busy++; /* the unwinder's own work is not the program's */
  size_t n = mt__callstack_marked(MT__MAPPING_PC, &frames);
  mt__tls.busy--; /* not in keep: a handle it gives back must reach the tracker */
  region r = {.lo = p, .hi = p + PAGE_UP(len), .nsamples = ns};
  r.handle = mt__track_handle_frames(r.hi - r.lo, ns, frames, n, &r.epoch);
  if (r.handle) keep(&r, frames, n);
}

static void mapped(void *p, size_t len, int prot, int flags, uintptr_t caller) {
  int saved = errno;
  if (UNLIKELY(flags & MAP_FIXED) && atomic_load_explicit(&maps.count, memory_order_relaxed))
    replaced((uintptr_t)p, (uintptr_t)p + PAGE_UP(len));
  uint64_t ns;
  if (counted(prot, flags, caller) && mt__sample(PAGE_UP(len), &ns))
    mapped_sampled((uintptr_t)p, len, ns);
  errno = saved;
}

/* ---- the wrappers ---- */

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  void *p = real_mmap(addr, len, prot, flags, fd, off);
  if (p != MAP_FAILED) mapped(p, len, prot, flags, (uintptr_t)__builtin_return_address(0));
  return p;
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
    __attribute__((alias("mmap")));

/* munmap when the table holds regions: the unmap and the table's update
 * under one hold of the lock. */
static __attribute__((noinline)) int munmap_followed(void *addr, size_t len) {
  removed stack[16];
  batch b = {stack, 0, 0};
  pthread_mutex_lock(&mt__maps_lock);
  int rc = real_munmap(addr, len), err = errno;
  if (rc == 0)
    take_range((uintptr_t)addr, PAGE_UP((uintptr_t)addr + len), &b, stack,
               sizeof stack / sizeof *stack);
  pthread_mutex_unlock(&mt__maps_lock);
  report_batch(&b);
  errno = err;
  return rc;
}

EXPORT int munmap(void *addr, size_t len) {
  if (__builtin_expect(!atomic_load_explicit(&maps.count, memory_order_relaxed), 1) ||
      within(&maps.allocator, (uintptr_t)__builtin_return_address(0)))
    return real_munmap(addr, len);
  return munmap_followed(addr, len);
}

EXPORT void *mremap(void *old, size_t old_len, size_t len, int flags, ...) {
  void *to = NULL;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    to = va_arg(ap, void *);
    va_end(ap);
  }
  uintptr_t caller = (uintptr_t)__builtin_return_address(0);
  if (within(&maps.allocator, caller)) return real_mremap(old, old_len, len, flags, to);
  /* the old range is left (with MREMAP_DONTUNMAP, new empty pages stay
   * there), and MREMAP_FIXED's target replaced: both leave the table in
   * the same hold of the lock as the call, as in munmap */
  removed stack[16], stack2[16];
  batch b = {stack, 0, 0}, b2 = {stack2, 0, 0};
  int followed = atomic_load_explicit(&maps.count, memory_order_relaxed) != 0;
  if (followed) pthread_mutex_lock(&mt__maps_lock);
  void *p = real_mremap(old, old_len, len, flags, to);
  int err = errno;
  if (followed && p != MAP_FAILED) {
    take_range((uintptr_t)old, (uintptr_t)old + PAGE_UP(old_len), &b, stack, 16);
    if (flags & MREMAP_FIXED) take_range((uintptr_t)p, (uintptr_t)p + PAGE_UP(len), &b2, stack2, 16);
  }
  if (followed) pthread_mutex_unlock(&mt__maps_lock);
  report_batch(&b);
  report_batch(&b2);
  uint64_t ns;
  mt__file_mapping m;
  /* what kind of mapping moved is asked of the kernel only once sampled
   * (a few system calls): a file's is not counted */
  if (p != MAP_FAILED && counted(PROT_READ, MAP_ANONYMOUS, caller) &&
      mt__sample(PAGE_UP(len), &ns) && mt__file_mapping_of((uintptr_t)p, &m) && m.inode == 0)
    mapped_sampled((uintptr_t)p, len, ns);
  errno = err;
  return p;
}
