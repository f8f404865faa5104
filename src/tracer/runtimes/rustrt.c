/* Rust's allocation layer left out of samples (rustrt.h). */
#include "rustrt.h"

#include "tracer/unwind/unwind.h"

#include <string.h>
#include <sys/auxv.h>

/* The layer's functions, by the start of their readable names (both
 * manglings give these): the shims rustc generates (__rustc:: in recent
 * versions), the standard library's global allocator, the alloc crate's
 * functions that call it. Neither the collections' code (RawVec's growth)
 * nor Box::new: those say what the memory is for. */
static const char *const layer_prefixes[] = {
    "__rust_alloc", "__rust_realloc", "__rdl_", "__rg_", "__rustc::__rust_alloc",
    "__rustc::__rust_realloc", "__rustc::__rdl_", "__rustc::__rg_", "alloc::alloc::",
    "<alloc::alloc::Global", "std::alloc::", "<std::alloc::System", "std::sys::alloc::",
    "std::sys::pal::unix::alloc::",
};

int mt__rustrt_is_layer(const char *name) {
  if (!name) return 0;
  for (size_t i = 0; i < sizeof layer_prefixes / sizeof *layer_prefixes; i++)
    if (strncmp(name, layer_prefixes[i], strlen(layer_prefixes[i])) == 0) return 1;
  return 0;
}

/* Functions of the main program hidden so far: hidden again at each
 * session's start. Written under the tracer's lock. */
#define MAX_FUNCTIONS 32
static struct {
  uintptr_t lo, hi;
} found[MAX_FUNCTIONS];
static size_t nfound;

static int in_main_program(Dwfl_Module *mod) {
  Dwarf_Addr lo = 0, hi = 0;
  dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL);
  uintptr_t phdr = (uintptr_t)getauxval(AT_PHDR); /* in the main program's image */
  return phdr && phdr >= lo && phdr < hi;
}

static void hide_function(Dwfl_Module *mod, uint64_t addr) {
  GElf_Off off = 0;
  GElf_Sym sym;
  if (!in_main_program(mod) || nfound == MAX_FUNCTIONS ||
      !dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL) || !sym.st_size ||
      off >= sym.st_size)
    return;
  uintptr_t lo = (uintptr_t)(addr - off), hi = lo + (uintptr_t)sym.st_size;
  for (size_t i = 0; i < nfound; i++)
    if (found[i].lo == lo) return;
  found[nfound].lo = lo, found[nfound].hi = hi, nfound++;
  mt__unwind_hide_late(lo, hi);
}

size_t mt__rustrt_trim(Dwfl_Module *mod, uint64_t addr, mt_location *out, size_t n) {
  size_t k = 0;
  while (k < n && mt__rustrt_is_layer(out[k].defname)) k++;
  if (k == 0) return n;
  if (k == n) { /* a function of the layer itself */
    hide_function(mod, addr);
    return n;
  }
  memmove(out, out + k, (n - k) * sizeof *out);
  return n - k;
}

void mt__rustrt_probe(void) { /* no sample is queued yet: not late */
  for (size_t i = 0; i < nfound; i++) mt__unwind_hide(found[i].lo, found[i].hi);
}
