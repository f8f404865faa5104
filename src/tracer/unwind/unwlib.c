/* libunwind, loaded when tracing starts in a mode that may use it, rather
 * than with the profiler (unwlib.h).
 *
 * The AUTO unwinder steps through functions without frame records by their
 * call-frame information itself (cfi.h); libunwind is its last resort, and
 * the LIBUNWIND mode's walker. Linked, libunwind (with liblzma) would be
 * loaded by every process that loads the profiler (docs/benchmarks.md,
 * "Loading libraries"); opened, a process preloading the interposer
 * without tracing, or tracing with frame pointers only, never loads it.
 *
 * The functions unwind.c calls are defined here under libunwind's names
 * (the ones <libunwind.h> maps them to), hidden: each calls libunwind's
 * own, looked up once libunwind.so.8 is open. mt_trace_start opens it
 * before taking the tracer's lock, as it does libdw (dwlib.c): dlopen
 * takes the loader's lock. Without libunwind each fails as libunwind's
 * would on a frame it cannot read. */
#include "unwlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

/* libunwind's names stay ours: a program using libunwind gets its own */
#pragma GCC visibility push(hidden)

#define MT__UNW_FUNCTIONS(X)                                                                   \
  X(unw_backtrace) X(unw_get_proc_info_by_ip) X(unw_get_reg) X(unw_init_local)                 \
  X(unw_set_caching_policy) X(unw_step)

#define AS_INDEX(name) I_##name,
enum { MT__UNW_FUNCTIONS(AS_INDEX) NFUNCTIONS };
/* the names in the library: <libunwind.h>'s macros expand each */
#define STR(x) STR_(x)
#define STR_(x) #x
#define AS_NAME(name) STR(name),
static const char *const names[NFUNCTIONS] = {MT__UNW_FUNCTIONS(AS_NAME)};
static void *fn[NFUNCTIONS];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;

int (*mt__unw_getcontext)(unw_context_t *);
unw_addr_space_t unw_local_addr_space;

static void load(void) {
  void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  unw_addr_space_t *as = (unw_addr_space_t *)dlsym(h, STR(unw_local_addr_space));
  void *get = dlsym(h, STR(unw_tdep_getcontext));
  for (int i = 0; i < NFUNCTIONS; i++)
    if (!(fn[i] = dlsym(h, names[i]))) return;
  if (!as || !get) return;
  unw_local_addr_space = *as;
  mt__unw_getcontext = (int (*)(unw_context_t *))(uintptr_t)get;
  __atomic_store_n(&loaded, 1, __ATOMIC_RELEASE);
}

int mt__unw_load(void) {
  pthread_once(&once, load);
  return mt__unw_loaded() ? 0 : -1;
}

int mt__unw_loaded(void) { return __atomic_load_n(&loaded, __ATOMIC_ACQUIRE); }

/* libunwind's function `name` once loaded, else NULL */
#define REAL(name) (mt__unw_loaded() ? (__typeof__(&name))fn[I_##name] : NULL)

int unw_backtrace(void **buffer, int size) {
  __typeof__(&unw_backtrace) f = REAL(unw_backtrace);
  return f ? f(buffer, size) : 0;
}

int unw_get_proc_info_by_ip(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi, void *arg) {
  __typeof__(&unw_get_proc_info_by_ip) f = REAL(unw_get_proc_info_by_ip);
  return f ? f(as, ip, pi, arg) : -UNW_EUNSPEC;
}

int unw_get_reg(unw_cursor_t *c, unw_regnum_t reg, unw_word_t *val) {
  __typeof__(&unw_get_reg) f = REAL(unw_get_reg);
  return f ? f(c, reg, val) : -UNW_EUNSPEC;
}

int unw_init_local(unw_cursor_t *c, unw_context_t *uc) {
  __typeof__(&unw_init_local) f = REAL(unw_init_local);
  return f ? f(c, uc) : -UNW_EUNSPEC;
}

int unw_set_caching_policy(unw_addr_space_t as, unw_caching_policy_t policy) {
  __typeof__(&unw_set_caching_policy) f = REAL(unw_set_caching_policy);
  return f ? f(as, policy) : -UNW_EUNSPEC;
}

int unw_step(unw_cursor_t *c) {
  __typeof__(&unw_step) f = REAL(unw_step);
  return f ? f(c) : 0;
}

#pragma GCC visibility pop
