/* The C++ runtime: its allocation functions hidden, its demangler (cxxrt.h). */
#include "cxxrt.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/events.h"
#include "tracer/unwind/stackmap.h"
#include "tracer/unwind/unwind.h"

/* operator new and new[], plain, nothrow, aligned, aligned nothrow */
static const char *const alloc_names[] = {
    "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
    "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
    "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t"};
#define NALLOC (sizeof alloc_names / sizeof *alloc_names)

typedef char *demangler(const char *, char *, size_t *, int *);
static _Atomic(demangler *) demangle;

/* The runtimes known (an address range in each), so that each is searched
 * once; written under the tracer's lock. */
#define MAX_RUNTIMES 4
static struct {
  uintptr_t lo, hi;
} known[MAX_RUNTIMES];
static size_t nknown;

/* An address in a runtime learned from its symbol table, not yet pinned */
static _Atomic uintptr_t to_pin;

static void use_demangler(demangler *d) {
  demangler *none = NULL;
  if (d) atomic_compare_exchange_strong(&demangle, &none, d);
}

static int is_known(uintptr_t lo, uintptr_t hi) {
  for (size_t i = 0; i < nknown; i++)
    if (known[i].lo < hi && lo < known[i].hi) return 1;
  return 0;
}

static void add_known(uintptr_t lo, uintptr_t hi) {
  if (nknown < MAX_RUNTIMES && !is_known(lo, hi)) {
    known[nknown].lo = lo;
    known[nknown++].hi = hi;
  }
}

/* The allocation functions and the demangler that `scope` (RTLD_DEFAULT or
 * a handle) gives. */
static void probe_scope(void *scope) {
  uintptr_t any = 0;
  for (size_t i = 0; i < NALLOC; i++) {
    void *p = dlsym(scope, alloc_names[i]);
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (p && dladdr1(p, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size) {
      mt__unwind_hide((uintptr_t)p, (uintptr_t)p + sym->st_size);
      any = (uintptr_t)p;
    }
  }
  void *d = dlsym(scope, "__cxa_demangle");
  use_demangler((demangler *)d);
  if (!any) any = (uintptr_t)d;
  if (any) add_known(any, any + 1);
}

/* Whether `path` names a C++ runtime's shared object. */
static int is_runtime(const char *path) {
  if (!path) return 0;
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  return strncmp(base, "libstdc++.so", 12) == 0 || strncmp(base, "libc++.so", 9) == 0 ||
         strncmp(base, "libc++abi.so", 12) == 0;
}

/* The loaded runtimes' paths, as the loader keeps them (static: the probe
 * runs under the tracer's lock). A longer path is left to mt__cxxrt_learn. */
#define PROBE_PATH 512
static char runtime_paths[MAX_RUNTIMES][PROBE_PATH];

static int list_runtime(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  size_t *n = data;
  size_t len = info->dlpi_name ? strlen(info->dlpi_name) : 0;
  if (*n < MAX_RUNTIMES && len < PROBE_PATH && is_runtime(info->dlpi_name))
    memcpy(runtime_paths[(*n)++], info->dlpi_name, len + 1);
  return 0;
}

void mt__cxxrt_probe(void) {
  probe_scope(RTLD_DEFAULT);
  /* Loaded, perhaps out of the global scope. The loaded objects are listed
   * first: asking the loader for each runtime by name (RTLD_NOLOAD) costs
   * dozens of system calls when none is loaded, as in every C program (it
   * searches its cache and opens each file). By the
   * path the loader keeps it matches without a system call. The handles
   * stay open: the ranges and the demangler must stay the runtime's. */
  size_t n = 0;
  dl_iterate_phdr(list_runtime, &n);
  for (size_t i = 0; i < n; i++) {
    void *h = dlopen(runtime_paths[i], RTLD_LAZY | RTLD_NOLOAD);
    if (h) probe_scope(h);
  }
}

void mt__cxxrt_learn(Dwfl_Module *mod, const char *path) {
  if (!mt__dlclose->hooked || !is_runtime(path)) return;
  Dwarf_Addr lo = 0, hi = 0;
  dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL);
  if (lo >= hi || is_known(lo, hi) || nknown == MAX_RUNTIMES) return;
  add_known(lo, hi); /* searched: not again, whatever it holds */
  uintptr_t any = 0;
  demangler *d = NULL;
  int n = dwfl_module_getsymtab(mod);
  for (int i = 1; i < n; i++) {
    GElf_Sym sym;
    GElf_Addr addr;
    GElf_Word shndx;
    const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, NULL, NULL);
    if (!name || name[0] != '_' || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
        sym.st_shndx == SHN_UNDEF || addr < lo || addr >= hi)
      continue;
    if (strcmp(name, "__cxa_demangle") == 0) {
      d = (demangler *)(uintptr_t)addr;
      any = addr;
      continue;
    }
    for (size_t k = 0; k < NALLOC; k++)
      if (sym.st_size && strcmp(name, alloc_names[k]) == 0) {
        mt__unwind_hide_late(addr, addr + sym.st_size);
        any = addr;
      }
  }
  if (!any) return;
  atomic_store(&to_pin, any);
  use_demangler(d);
}

void mt__cxxrt_pin(void) {
  uintptr_t a = atomic_exchange(&to_pin, 0);
  if (!a) return;
  Dl_info info, dinfo;
  int loaded = dladdr((void *)a, &info) != 0;
  if (loaded && info.dli_fname && dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD)) return;
  /* Not kept: its demangler may go, and is no longer called. (Its ranges
   * stay hidden until the next session: at worst, frames of code loaded
   * there later are hidden.) */
  demangler *d = atomic_load(&demangle);
  int d_loaded = d && dladdr((void *)(uintptr_t)d, &dinfo);
  if (d && (!d_loaded || (loaded && dinfo.dli_fbase == info.dli_fbase)))
    atomic_store(&demangle, NULL);
}

int mt__cxxrt_has_demangler(void) { return atomic_load(&demangle) != NULL; }

static int unlearned_runtime(const mt__file_mapping *m, const char *path, void *ctx) {
  (void)ctx;
  return is_runtime(path) && !is_known(m->lo, m->hi);
}

uintptr_t mt__cxxrt_unlearned(void) {
  static char path[PATH_MAX]; /* under the tracer's lock */
  mt__file_mapping m;
  return mt__maps_find(unlearned_runtime, NULL, path, sizeof path, &m) ? m.lo : 0;
}

char *mt__cxxrt_demangle(const char *name) {
  if (!name || name[0] != '_' || name[1] != 'Z') return NULL;
  demangler *d = atomic_load_explicit(&demangle, memory_order_acquire);
  if (!d) return NULL;
  int status = 0;
  char *r = d(name, NULL, NULL, &status);
  if (status != 0) {
    free(r);
    return NULL;
  }
  return r;
}
