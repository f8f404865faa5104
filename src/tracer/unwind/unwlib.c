/* libunwind, loaded when tracing starts in a mode that may use it, rather
 * than with the profiler (unwlib.h); started on its first use, its pipe
 * kept off the low descriptors; and its walks, for unwind.c.
 *
 * The AUTO unwinder steps through functions without frame records by their
 * call-frame information itself (cfi.h); libunwind is its last resort, and
 * the LIBUNWIND mode's walker. Linked, libunwind (with liblzma) would be
 * loaded by every process that loads the profiler (docs/benchmarks.md,
 * "Loading libraries"); opened, a process preloading the interposer
 * without tracing, or tracing with frame pointers only, never loads it.
 *
 * The functions of libunwind's used are defined here under its names
 * (the ones <libunwind.h> maps them to), hidden: each calls libunwind's
 * own, looked up once libunwind.so.8 is open. mt_trace_start opens it
 * before taking the tracer's lock, as it does libdw (dwlib.c): dlopen
 * takes the loader's lock. Without libunwind each fails as libunwind's
 * would on a frame it cannot read. */
#include "unwlib.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

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

/* ---- libunwind started, and its walks ---- */

/* libunwind opens a pipe at its first use and keeps it for the life of the
 * process (it validates addresses by writing a byte from them). Left to
 * itself it takes the lowest free numbers, 3 and 4 in most programs: the
 * program's own first open would no longer get 3, and a program that
 * closes every descriptor and opens files of its own would give libunwind
 * one of them to read from and write to. So the numbers below LOW_FDS are
 * held (dups of a descriptor of ours) while libunwind starts, and let go
 * after: an eighth of the system calls that holding the 512 below the
 * trace's own descriptor (dest.h) would take, once per process. */
#define LOW_FDS 64

/* Holds the free numbers below LOW_FDS (into held[]); returns how many. */
static int hold_low_fds(int held[LOW_FDS]) {
  int n = 0, fd, open_one = 2;
  while (open_one > 0 && fcntl(open_one, F_GETFD) < 0) open_one--; /* stderr closed? */
  while (n < LOW_FDS && (fd = fcntl(open_one, F_DUPFD_CLOEXEC, 0)) >= 0) {
    if (fd >= LOW_FDS) {
      close(fd);
      break;
    }
    held[n++] = fd;
  }
  return n;
}

/* libunwind's start: its caching policy, and the pipe it opens then, kept
 * off the low descriptor numbers. At a session's start in the LIBUNWIND
 * mode; in AUTO at the first walk that needs libunwind (most processes
 * never do: the call-frame steps of cfi.h pass what frame records do not),
 * inside that sample. Never without the library loaded (unwlib.h: at a
 * session's start, never in a sample). A thread that finds another
 * starting it does without libunwind for that sample (never waits: a fork
 * child may have inherited the start half done). */
static _Atomic int lu_state; /* 0: not started; 1: starting; 2: ready */

int mt__unw_ready(void) {
  int s = atomic_load_explicit(&lu_state, memory_order_acquire);
  if (__builtin_expect(s == 2, 1)) return 1;
  if (!mt__unw_loaded()) return 0; /* loaded at a session's start, if at all */
  if (s == 1 || !atomic_compare_exchange_strong(&lu_state, &s, 1))
    return atomic_load_explicit(&lu_state, memory_order_acquire) == 2;
  int held[LOW_FDS], n = hold_low_fds(held);
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
  while (n > 0) close(held[--n]);
  atomic_store_explicit(&lu_state, 2, memory_order_release);
  return 1;
}

/* libunwind's walk one unw_step at a time: unw_backtrace's fast path
 * first maps and clears a trace cache of 256 KiB in each thread that calls
 * it (64 page faults). */
size_t mt__unw_walk_from(unw_context_t *uc, uintptr_t *pcs, size_t want) {
  unw_cursor_t c;
  if (!want || unw_init_local(&c, uc) != 0) return 0;
  size_t n = 0;
  do {
    unw_word_t ip;
    if (unw_get_reg(&c, UNW_REG_IP, &ip) != 0 || !ip) break;
    pcs[n++] = (uintptr_t)ip;
  } while (n < want && unw_step(&c) > 0);
  return n;
}

static size_t stepped_walk(uintptr_t *pcs, size_t want) {
  unw_context_t uc;
  return unw_getcontext(&uc) == 0 ? mt__unw_walk_from(&uc, pcs, want) : 0;
}

/* Stepped walks a thread takes before unw_backtrace's: in AUTO mode most
 * threads never need libunwind (cfi.h steps past record-less frames), and
 * those that do, a few times at most: they need no trace cache. */
#define STEPPED_FIRST 16
static __thread unsigned stepped __attribute__((tls_model("initial-exec")));

size_t mt__unw_walk(uintptr_t *pcs, size_t want, int cached) {
  if (!cached && stepped < STEPPED_FIRST) {
    stepped++;
    return stepped_walk(pcs, want);
  }
  int got = unw_backtrace((void **)pcs, (int)want);
  return got > 0 ? (size_t)got : 0;
}

#pragma GCC visibility pop
