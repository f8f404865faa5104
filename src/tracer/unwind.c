/* Backtraces for samples: libunwind's cached fast path (default), or a walk
 * of the frame-pointer chain (for programs built with frame pointers; much
 * cheaper, and safe: every step is checked against the thread's stack). */
#define UNW_LOCAL_ONLY
#include "unwind.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <libunwind.h>

static mt__unwind_mode mode;

/* Address ranges whose frames a sample hides: the profiler itself (its
 * shared object's text), and C++'s allocation functions, so that the
 * innermost frame is the code that asked for memory. */
#define MAX_HIDDEN 16
static struct range {
  uintptr_t lo, hi;
} hidden[MAX_HIDDEN];
static size_t nhidden;

static void hide(uintptr_t lo, uintptr_t hi) {
  if (nhidden < MAX_HIDDEN && lo < hi) hidden[nhidden++] = (struct range){lo, hi};
}

static int is_hidden(uintptr_t pc) {
  for (size_t i = 0; i < nhidden; i++)
    if (pc - 1 >= hidden[i].lo && pc - 1 < hidden[i].hi) return 1;
  return 0;
}

/* The executable segment of the object containing `addr`. */
static int find_own_text(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  uintptr_t addr = *(uintptr_t *)data;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (addr >= lo && addr < hi) {
      hide(lo, hi);
      return 1;
    }
  }
  return 0;
}

static void hide_symbol(const char *name) {
  void *p = dlsym(RTLD_DEFAULT, name);
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  if (p && dladdr1(p, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size)
    hide((uintptr_t)p, (uintptr_t)p + sym->st_size);
}

void mt__unwind_init(mt__unwind_mode m) {
  mode = m;
  nhidden = 0;
  uintptr_t self = (uintptr_t)&mt__unwind_init;
  dl_iterate_phdr(find_own_text, &self);
  static const char *const cxx_new[] = {
      "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
      "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
      "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t"};
  for (size_t i = 0; i < sizeof cxx_new / sizeof *cxx_new; i++) hide_symbol(cxx_new[i]);
  if (mode == MT__UNWIND_LIBUNWIND) {
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    void *warm[64];
    unw_backtrace(warm, 64); /* loads the tables of what is mapped now */
  }
}

/* The current thread's stack bounds, found once per thread. */
static __thread uintptr_t stack_lo, stack_hi;

static void find_stack_bounds(void) {
  pthread_attr_t attr;
  void *addr;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
      stack_lo = (uintptr_t)addr;
      stack_hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&attr);
  }
  if (!stack_hi) stack_hi = 1; /* unknown: the walk stops at once */
}

static size_t walk_frame_pointers(uintptr_t *pcs, size_t cap) {
  if (!stack_hi) find_stack_bounds();
  uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
  size_t n = 0;
  while (n < cap && fp >= stack_lo && fp + 16 <= stack_hi && (fp & 7) == 0) {
    uintptr_t next = ((uintptr_t *)fp)[0], ret = ((uintptr_t *)fp)[1];
    if (!ret) break;
    pcs[n++] = ret;
    if (next <= fp) break; /* the chain must climb the stack */
    fp = next;
  }
  return n;
}

size_t mt__unwind(void *ctx, uint64_t *buf, size_t cap) {
  (void)ctx;
  enum { EXTRA = 32 }; /* room for the frames we drop */
  uintptr_t pcs[4096 + EXTRA];
  size_t want = cap + EXTRA < sizeof pcs / sizeof *pcs ? cap + EXTRA : sizeof pcs / sizeof *pcs;
  size_t n;
  if (mode == MT__UNWIND_FRAME_POINTERS) {
    n = walk_frame_pointers(pcs, want);
  } else {
    int got = unw_backtrace((void **)pcs, (int)want);
    n = got > 0 ? (size_t)got : 0;
  }
  size_t skip = 0;
  while (skip < n && is_hidden(pcs[skip])) skip++;
  size_t out = 0;
  for (size_t i = skip; i < n && out < cap; i++) buf[out++] = pcs[i];
  return out;
}
