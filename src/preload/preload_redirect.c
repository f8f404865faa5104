/* An allocator that the dynamic loader binds ahead of the interposer (linked
 * into the program: Debian's libjemalloc.a, a Rust global allocator
 * exporting malloc; or a library preloaded ahead of this one) gets its
 * allocation functions redirected to the interposer's wrappers, which then
 * reach it as they reach the C library's.
 *
 * Each function of the malloc family that the allocator's object defines
 * starts, once redirected, with a jump to this library's wrapper of the
 * same name (hotpatch.h: its first instructions move into a trampoline),
 * and the wrappers' next allocator (mt__real_*) becomes a shim that calls
 * the trampoline with the thread marked busy: the allocator's own mappings
 * (jemalloc's extents) and the C library's allocations it makes are not
 * the program's, and are neither sampled nor counted as mappings. A block
 * the allocator handed out before the redirection has no header; its free
 * goes to the allocator as any block not sampled.
 *
 * All or nothing: malloc, free, calloc, realloc and malloc_usable_size
 * (which a sampled realloc needs to copy a block it never saw) must be the
 * same object's and all move, with every other function of the family it
 * defines, or nothing changes and the interposer says so. jemalloc's own
 * API that takes a block (dallocx, sdallocx, rallocx, xallocx, sallocx) is
 * redirected too, so that a sampled block reaching it finds its way back.
 * Its reallocarray goes to this library's, and its C++ operator new and
 * delete (jemalloc, mimalloc and tcmalloc define them) to the C++
 * runtime's, which allocate through malloc and free, when the runtime is
 * loaded at the start. Other allocators' own APIs (mimalloc's mi_malloc,
 * mi_free) are not: blocks they allocate are not traced, and a sampled
 * block must not be given to them. */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <string.h>

#include "hotpatch.h"
#include "preload.h"
#include "tracer/unwind/unwind.h"

/* The allocator's functions, through their trampolines. */
static struct {
  void *(*malloc)(size_t);
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  void (*free)(void *);
  int (*posix_memalign)(void **, size_t, size_t);
  void *(*aligned_alloc)(size_t, size_t);
  void *(*memalign)(size_t, size_t);
  void *(*valloc)(size_t);
  void *(*pvalloc)(size_t);
  void (*free_sized)(void *, size_t);
  void (*free_aligned_sized)(void *, size_t, size_t);
  size_t (*usable_size)(void *);
  /* jemalloc's */
  void (*dallocx)(void *, int);
  void (*sdallocx)(void *, size_t, int);
  void *(*rallocx)(void *, size_t, int);
  size_t (*xallocx)(void *, size_t, size_t, int);
  size_t (*sallocx)(const void *, int);
  void *(*mallocx)(size_t, int);
  /* the C library's, in an attached process */
  void *mmap, *munmap, *mremap, *exit_now;
} orig;

/* This library's own wrappers (free, malloc_usable_size), for jemalloc's
 * API given a block that may be sampled. */
static struct {
  void (*free)(void *);
  size_t (*usable_size)(void *);
} own;

/* ---- the shims: the allocator, the thread busy ---- */

#define BUSY(call)              \
  do {                          \
    mt__tls.busy++;             \
    call;                       \
    mt__tls.busy--;             \
  } while (0)

static void *shim_malloc(size_t n) {
  void *p;
  BUSY(p = orig.malloc(n));
  return p;
}
static void *shim_calloc(size_t n, size_t m) {
  void *p;
  BUSY(p = orig.calloc(n, m));
  return p;
}
static void *shim_realloc(void *q, size_t n) {
  void *p;
  BUSY(p = orig.realloc(q, n));
  return p;
}
static void shim_free(void *p) { BUSY(orig.free(p)); }
static int shim_posix_memalign(void **out, size_t a, size_t n) {
  int rc;
  BUSY(rc = orig.posix_memalign(out, a, n));
  return rc;
}
static void *shim_aligned_alloc(size_t a, size_t n) {
  void *p;
  BUSY(p = orig.aligned_alloc(a, n));
  return p;
}
static void *shim_memalign(size_t a, size_t n) {
  void *p;
  BUSY(p = orig.memalign(a, n));
  return p;
}
static void *shim_valloc(size_t n) {
  void *p;
  BUSY(p = orig.valloc(n));
  return p;
}
static void *shim_pvalloc(size_t n) {
  void *p;
  BUSY(p = orig.pvalloc(n));
  return p;
}
static void shim_free_sized(void *p, size_t n) { BUSY(orig.free_sized(p, n)); }
static void shim_free_aligned_sized(void *p, size_t a, size_t n) {
  BUSY(orig.free_aligned_sized(p, a, n));
}
static size_t shim_usable_size(void *p) {
  size_t n;
  BUSY(n = orig.usable_size(p));
  return n;
}

/* ---- jemalloc's API, given a block that may be a sampled one ---- */

static void w_dallocx(void *p, int flags) {
  if (p && mt__maybe_ours(p)) own.free(p);
  else BUSY(orig.dallocx(p, flags));
}
static void w_sdallocx(void *p, size_t n, int flags) {
  if (p && mt__maybe_ours(p)) own.free(p); /* n is the program's size, not the block's */
  else BUSY(orig.sdallocx(p, n, flags));
}
static size_t w_sallocx(const void *p, int flags) {
  size_t n;
  if (p && mt__maybe_ours(p)) return own.usable_size((void *)p);
  BUSY(n = orig.sallocx(p, flags));
  return n;
}
static size_t w_xallocx(void *p, size_t n, size_t extra, int flags) {
  size_t r;
  if (p && mt__maybe_ours(p)) return own.usable_size(p); /* not resized in place */
  BUSY(r = orig.xallocx(p, n, extra, flags));
  return r;
}
static void *w_rallocx(void *p, size_t n, int flags) {
  void *q;
  if (!(p && mt__maybe_ours(p))) {
    BUSY(q = orig.rallocx(p, n, flags));
    return q;
  }
  /* a sampled block moves to one of the allocator's (not sampled: the
   * flags' alignment and zeroing are the allocator's to honour) */
  size_t old = own.usable_size(p);
  BUSY(q = orig.mallocx(n, flags));
  if (!q) return NULL;
  memcpy(q, p, old < n ? old : n);
  own.free(p);
  return q;
}

/* ---- the redirection ---- */

/* How a function of the allocator's is redirected. */
enum {
  REQUIRED,  /* it must define it, and it must move */
  IF_DEFINED, /* if it defines it, it must move: a sampled block may reach it */
  IF_MOVABLE, /* moved if it can be; else its calls are not traced */
};

typedef struct fn {
  const char *name;
  int how;
  void **orig;   /* where its trampoline goes (NULL: not called) */
  void **slot;   /* the wrappers' next allocator, which gets `shim` */
  void *shim;
  void *wrapper; /* this file's wrapper; NULL: this library's function of
                    the same name (C++'s: the C++ runtime's) */
  int cxx;
} fn;

#define ENTRY(n, how) {#n, how, (void **)&orig.n, (void **)&mt__real_##n, (void *)shim_##n, NULL, 0}
#define JE(n) {#n, IF_DEFINED, (void **)&orig.n, NULL, NULL, (void *)w_##n, 0}
/* C++'s operator new and delete, when the allocator defines them: the C++
 * runtime's own, which allocate through malloc and free (and so through
 * the redirected functions). */
#define CXX(mangled) {mangled, IF_MOVABLE, NULL, NULL, NULL, NULL, 1}
static const fn family[] = {
    ENTRY(malloc, REQUIRED), ENTRY(free, REQUIRED), ENTRY(calloc, REQUIRED),
    ENTRY(realloc, REQUIRED), ENTRY(posix_memalign, IF_DEFINED),
    ENTRY(aligned_alloc, IF_DEFINED), ENTRY(memalign, IF_DEFINED), ENTRY(valloc, IF_DEFINED),
    ENTRY(pvalloc, IF_DEFINED), ENTRY(free_sized, IF_DEFINED), ENTRY(free_aligned_sized, IF_DEFINED),
    {"malloc_usable_size", REQUIRED, (void **)&orig.usable_size, (void **)&mt__real_usable_size,
     (void *)shim_usable_size, NULL, 0},
    {"reallocarray", IF_MOVABLE, NULL, NULL, NULL, NULL, 0},
    /* the mapping functions, when the allocator defines them (the C library,
     * in an attached process): its own mappings, made from its code, are
     * told apart by their caller (preload_mmap.c) */
    {"mmap", IF_MOVABLE, &orig.mmap, (void **)&mt__real_mmap, NULL, NULL, 0},
    {"munmap", IF_MOVABLE, &orig.munmap, (void **)&mt__real_munmap, NULL, NULL, 0},
    {"mremap", IF_MOVABLE, &orig.mremap, (void **)&mt__real_mremap, NULL, NULL, 0},
    /* and its _exit (an alias, _Exit): it runs no exit handler, so the
     * trace is written out on the way (preload_slow.c) */
    {"_exit", IF_MOVABLE, &orig.exit_now, (void **)&mt__real__exit, NULL, NULL, 0},
    {"_Exit", IF_MOVABLE, NULL, NULL, NULL, NULL, 0},
    JE(dallocx), JE(sdallocx), JE(rallocx), JE(xallocx), JE(sallocx),
    CXX("_Znwm"), CXX("_Znam"), CXX("_ZnwmRKSt9nothrow_t"), CXX("_ZnamRKSt9nothrow_t"),
    CXX("_ZnwmSt11align_val_t"), CXX("_ZnamSt11align_val_t"),
    CXX("_ZnwmSt11align_val_tRKSt9nothrow_t"), CXX("_ZnamSt11align_val_tRKSt9nothrow_t"),
    CXX("_ZdlPv"), CXX("_ZdaPv"), CXX("_ZdlPvm"), CXX("_ZdaPvm"), CXX("_ZdlPvRKSt9nothrow_t"),
    CXX("_ZdaPvRKSt9nothrow_t"), CXX("_ZdlPvSt11align_val_t"), CXX("_ZdaPvSt11align_val_t"),
    CXX("_ZdlPvmSt11align_val_t"), CXX("_ZdaPvmSt11align_val_t"),
    CXX("_ZdlPvSt11align_val_tRKSt9nothrow_t"), CXX("_ZdaPvSt11align_val_tRKSt9nothrow_t")};
#define NFAMILY (sizeof family / sizeof *family)

/* The definition of `name` that calls bind to first, if it is in the
 * object at `base`; its size in *size. */
static void *defined_in(const char *name, const void *base, size_t *size) {
  void *f = dlsym(RTLD_DEFAULT, name);
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  if (!f || !dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT) || info.dli_fbase != base || !sym ||
      sym->st_shndx == SHN_UNDEF)
    return NULL;
  *size = sym->st_size;
  return f;
}

/* What a redirection changes, prepared: the patches, and which family
 * entry each (and each alias: one function under two names) serves. */
typedef struct plan {
  mt__island *is;
  mt__patch patches[NFAMILY];
  const fn *which[NFAMILY];
  struct {
    const fn *f;
    size_t patch;
  } aliases[NFAMILY];
  size_t n, naliases;
  int libc; /* the allocator is the C library's */
} plan;

/* Prepares redirecting the allocator that malloc binds to first (not this
 * library): NULL, or why not. */
static const char *prepare(plan *pl) {
  void *first = dlsym(RTLD_DEFAULT, "malloc");
  Dl_info info, mine;
  const ElfW(Sym) *sym = NULL;
  if (!first || first == (void *)mt__own_malloc) return "not needed";
  if (!dladdr1(first, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || sym->st_shndx == SHN_UNDEF)
    return "its malloc is a PLT entry";
  if (!dladdr((void *)mt__own_malloc, &mine) || !mine.dli_fname)
    return "this library cannot be found";
  void *self = dlopen(mine.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!self) return "this library cannot be found";
  *(void **)&own.free = dlsym(self, "free");
  *(void **)&own.usable_size = dlsym(self, "malloc_usable_size");
  mt__segment seg;
  if (!own.free || !own.usable_size || !mt__segment_of((uintptr_t)first, 1, &seg))
    return "its code cannot be found";
  void *libc_only = dlsym(RTLD_DEFAULT, "gnu_get_libc_version");
  Dl_info li;
  pl->libc = libc_only && dladdr(libc_only, &li) && li.dli_fbase == info.dli_fbase;
  if (!(pl->is = mt__island_near(seg.lo, seg.hi))) return "no room for trampolines near its code";
  pl->n = pl->naliases = 0;
  int jemalloc = 0;
  /* C++'s runtime, if loaded: its operator new and delete */
  void *cxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
  for (size_t k = 0; k < NFAMILY; k++) {
    const fn *f = &family[k];
    size_t size = 0;
    void *def = defined_in(f->name, info.dli_fbase, &size);
    if (!def) {
      if (f->how == REQUIRED)
        return "it does not define all of malloc, free, calloc, realloc, malloc_usable_size";
      continue;
    }
    /* one function under two names (mimalloc's free is its operator
     * delete): redirected once, the first name's way */
    size_t dup = 0;
    while (dup < pl->n && pl->patches[dup].target != (uint8_t *)def) dup++;
    if (dup < pl->n) { /* its slot still reaches it, through the same trampoline */
      if (f->orig) pl->aliases[pl->naliases].f = f, pl->aliases[pl->naliases++].patch = dup;
      continue;
    }
    void *wrapper = f->wrapper ? f->wrapper : dlsym(f->cxx ? cxx : self, f->name);
    if (f->cxx && (!cxx || wrapper == def)) continue; /* no C++ runtime of its own */
    if (!wrapper || mt__patch_prepare(pl->is, def, size, wrapper, &pl->patches[pl->n])) {
      if (f->how == IF_MOVABLE) continue;
      return "an allocation function's first instructions cannot be moved";
    }
    pl->which[pl->n++] = f;
    jemalloc |= f->wrapper != NULL;
  }
  if (jemalloc) {
    size_t size;
    *(void **)&orig.mallocx = defined_in("mallocx", info.dli_fbase, &size);
    if (!orig.mallocx) return "it has jemalloc's rallocx but no mallocx";
  }
  /* the trampolines in place before anything can jump to them */
  for (size_t k = 0; k < pl->n; k++)
    if (pl->which[k]->orig) *pl->which[k]->orig = pl->patches[k].trampoline;
  for (size_t k = 0; k < pl->naliases; k++)
    *pl->aliases[k].f->orig = pl->patches[pl->aliases[k].patch].trampoline;
  return NULL;
}

/* The wrappers' next allocator becomes the shims, once the patches are
 * (or are about to be) in place: for the C library's allocator (an attached
 * process), its trampolines themselves. Its own mappings and allocations
 * never reach the wrappers (internal calls), so the thread need not be
 * marked busy around them, and a call is saved. */
static void commit(const plan *pl) {
  for (size_t k = 0; k < pl->n; k++)
    if (pl->which[k]->slot)
      *pl->which[k]->slot = pl->libc || !pl->which[k]->shim ? *pl->which[k]->orig : pl->which[k]->shim;
  for (size_t k = 0; k < pl->naliases; k++)
    if (pl->aliases[k].f->slot)
      *pl->aliases[k].f->slot =
          pl->libc || !pl->aliases[k].f->shim ? *pl->aliases[k].f->orig : pl->aliases[k].f->shim;
  /* the word before another allocator's block may lie in an unmapped page */
  if (!pl->libc) mt__hdr_mode.on = 0;
}

static plan the_plan;

const char *mt__redirect_allocator(void) {
  const char *why = prepare(&the_plan);
  if (why) return why;
  if (mt__patch_apply(the_plan.is, the_plan.patches, the_plan.n))
    return "the system refused to make its code writable";
  commit(&the_plan);
  return NULL;
}

static const char *jumps_made = "indirect";

/* The patch of the function named `name`, or NULL. */
static const mt__patch *patch_named(const plan *pl, const char *name) {
  for (size_t k = 0; k < pl->n; k++)
    if (strcmp(pl->which[k]->name, name) == 0) return &pl->patches[k];
  return NULL;
}

/* malloc's and free's forwarding jumps: for the C library's allocator,
 * whose slots are its trampolines, the trampolines' instructions written
 * in their place ("inline"); else direct jumps (mt__make_jumps_direct). */
static const char *make_jumps(const plan *pl) {
  int inlined = 0;
#ifdef MT__DIRECT_JUMPS
  const mt__patch *m = patch_named(pl, "malloc"), *f = patch_named(pl, "free");
  if (pl->libc && m && f)
    inlined = (mt__jump_inline(mt__malloc_site, (void *const *)(void *)&mt__real_malloc, m) == 0) +
              (mt__jump_inline(mt__free_site, (void *const *)(void *)&mt__real_free, f) == 0);
#endif
  const char *direct = mt__make_jumps_direct(); /* those not inlined */
  return inlined == 2 ? "inline" : inlined ? "mixed" : direct;
}

const char *mt__redirect_jumps(void) { return jumps_made; }

const char *mt__redirect_plan(mt__jump_list *out) {
  static int planned;
  static const char *why;
  if (!planned) {
    planned = 1;
    if (!(why = prepare(&the_plan)) && mt__island_seal(the_plan.is))
      why = "the system refused to make the trampolines executable";
    if (!why) {
      commit(&the_plan);
      /* the slots are final: malloc's and free's jumps to them made direct,
       * or the trampolines themselves (no thread runs the wrappers before
       * the attacher's jumps) */
      jumps_made = make_jumps(&the_plan);
    }
  }
  if (why) return why;
  out->n = (uint32_t)the_plan.n;
  for (size_t k = 0; k < the_plan.n; k++) {
    out->jumps[k].at = (uint64_t)(uintptr_t)the_plan.patches[k].target;
    out->jumps[k].len = (uint32_t)the_plan.patches[k].moved;
    mt__patch_bytes(&the_plan.patches[k], out->jumps[k].bytes);
  }
  return NULL;
}

_Static_assert(2 * NFAMILY <= MT__REBIND_MAX, "every name of every patch fits mt__plt_slots");

void mt__redirect_slots(mt__slot_list *out) {
  mt__rebind rb[2 * NFAMILY];
  size_t n = 0;
  for (size_t k = 0; k < the_plan.n; k++)
    rb[n++] = (mt__rebind){the_plan.which[k]->name, the_plan.patches[k].target,
                           the_plan.patches[k].wrapper};
  for (size_t k = 0; k < the_plan.naliases; k++) { /* the other name of a patched function */
    const mt__patch *p = &the_plan.patches[the_plan.aliases[k].patch];
    rb[n++] = (mt__rebind){the_plan.aliases[k].f->name, p->target, p->wrapper};
  }
  mt__plt_slots(rb, n, out);
}
