/* The unwinder's AUTO mode against libunwind, on call chains whose
 * functions set up their frame records after a first instruction or two
 * (unwind_cases.c, built at -O2): AUTO must learn that they have records
 * (after a few samples, its frame-pointer walk stands alone) and must
 * never take a function without one (uc_no_record) for one: every walk
 * must give libunwind's frames (but for the C library's entry points, the
 * outermost ones, where AUTO stops). The same chains built without frame
 * pointers, where every walk goes by call-frame steps, and chains through
 * signal handlers and frames sized at run time: the same frames, and
 * libunwind never needed. Chains through CPython's perf trampolines: the
 * same frames and the trampoline's caller (which libunwind skips), by the
 * walk of records alone once learnt where the functions keep records. On
 * the main thread and on another, with the unwinder's verdicts forgotten
 * now and then (as after dlclose). */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "cpython_trampoline.h"
#include "tracer/unwind/unwind.h"

#define CAP 256
#define ROUNDS 3000

typedef void (*unwind_case_leaf)(void);
typedef void (*run_fn)(unwind_case_leaf leaf, uint64_t seed, int rounds, int no_record);

extern _Atomic unsigned long mt__unwind_fallbacks, mt__unwind_lu_walks;

static void *self_base;
static __thread long walks, mismatches;

/* CPython's perf trampolines (cpython_trampoline.h), bare and with
 * endbr64: the return addresses into them; the function of the loaded
 * cases that calls them. */
static uintptr_t trampoline_ret[2];
static const void *tramp_caller_fn;

/* libunwind's frames from here, without the leading ones in this program
 * (as the unwinder hides its own object's). */
static size_t reference(uint64_t *out) {
  void *pcs[CAP + 8];
  int n = unw_backtrace(pcs, CAP + 8);
  int i = 0;
  Dl_info info;
  while (i < n && dladdr(pcs[i], &info) && info.dli_fbase == self_base) i++;
  size_t k = 0;
  for (; i < n && k < CAP; i++) out[k++] = (uint64_t)(uintptr_t)pcs[i];
  return k;
}

/* libunwind cannot pass a trampoline: it has no unwind tables, and rbp
 * there is its caller's (records skip that frame), or data. So the caller
 * (uc_tramp) takes a reference walk before each call through one: a
 * thread's stack of them, the innermost last. */
#define MAX_NESTED 16
static __thread uint64_t tramp_refs[MAX_NESTED][CAP];
static __thread size_t tramp_ref_len[MAX_NESTED], tramp_nested;

static void around_trampoline(int entering) {
  if (!entering) {
    tramp_nested--;
  } else if (tramp_nested < MAX_NESTED) {
    tramp_ref_len[tramp_nested] = reference(tramp_refs[tramp_nested]);
    tramp_nested++;
  }
}

static int is_trampoline_ret(uint64_t pc) {
  return pc == trampoline_ret[0] || pc == trampoline_ret[1];
}

/* Whether pc is in tramp_caller_fn (the nearest symbol dladdr finds). */
static int in_tramp_caller(uint64_t pc) {
  Dl_info info;
  return dladdr((void *)(uintptr_t)pc, &info) && info.dli_saddr == tramp_caller_fn;
}

/* The frames expected from the leaf (libunwind's walk there, lu), pieced
 * together: libunwind's up to the first trampoline, then its caller's (0:
 * any return address in uc_tramp, where it called the trampoline), then
 * the reference walk that caller took, from its own caller on, up to the
 * next trampoline, and so on. How many, or 0 if the references are too
 * few (nested too deep). */
static size_t expected_frames(const uint64_t *lu, size_t nlu, uint64_t *out) {
  size_t n = 0, level = tramp_nested;
  const uint64_t *seg = lu;
  size_t len = nlu;
  for (;;) {
    size_t k = 0;
    while (k < len && !is_trampoline_ret(seg[k])) k++;
    for (size_t i = 0; i < len && i <= k && n < CAP; i++) out[n++] = seg[i];
    if (k == len) return n;
    if (!level-- || n == CAP) return 0;
    out[n++] = 0;
    seg = tramp_refs[level] + 1; /* past the return address into uc_tramp */
    len = tramp_ref_len[level] ? tramp_ref_len[level] - 1 : 0;
  }
}

static void at_leaf(void) {
  uint64_t a[CAP], b[CAP];
  size_t na = mt__unwind(NULL, a, CAP);
  uint64_t lu[CAP];
  size_t nb = expected_frames(lu, reference(lu), b), same = 0;
  while (same < na && same < nb && (a[same] == b[same] || (!b[same] && in_tramp_caller(a[same]))))
    same++;
  /* AUTO ends its walks at the C library's entry points, where libunwind
   * may go up to three frames further (__libc_start_main, _start) */
  if (!na || na > nb || nb - na > 3 || same < na) {
    if (mismatches++ < 5) {
      fprintf(stderr, "walk %ld: %zu frames, libunwind %zu:", walks, na, nb);
      for (size_t i = 0; i < (na > nb ? na : nb); i++)
        fprintf(stderr, " %llx/%llx", i < na ? (unsigned long long)a[i] : 0ull,
                i < nb ? (unsigned long long)b[i] : 0ull);
      fprintf(stderr, "\n");
    }
  }
  if (++walks % 1000 == 0) mt__unwind_forget();
}

typedef struct job {
  run_fn run;
  uint64_t seed;
  int no_record;
  long walks, mismatches;
} job;

static void *run_job(void *arg) {
  job *j = arg;
  walks = mismatches = 0;
  j->run(at_leaf, j->seed, ROUNDS, j->no_record);
  j->walks = walks, j->mismatches = mismatches;
  return NULL;
}

static run_fn load(const char *path, int (**signals)(void), unsigned char *stubs) {
  void *lib = dlopen(path, RTLD_NOW);
  run_fn run = lib ? (run_fn)dlsym(lib, "unwind_cases_run") : NULL;
  *signals = lib ? (int (*)(void))dlsym(lib, "unwind_cases_signals") : NULL;
  void (*set)(void *, void *, void (*)(int)) =
      lib ? (void (*)(void *, void *, void (*)(int)))dlsym(lib, "unwind_cases_trampolines") : NULL;
  tramp_caller_fn = lib ? dlsym(lib, "uc_tramp") : NULL;
  if (!run || !*signals || !set || !tramp_caller_fn) {
    fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
    return NULL;
  }
  set(stubs, stubs + 64, around_trampoline);
  return run;
}

/* The two trampolines, 64 bytes apart, in a mapping made executable. */
static unsigned char *make_trampolines(void) {
  unsigned char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  trampoline_ret[0] = (uintptr_t)m + put_cpython_trampoline(m, 0) - 5;
  trampoline_ret[1] = (uintptr_t)m + 64 + put_cpython_trampoline(m + 64, 1) - 5;
  if (mprotect(m, 4096, PROT_READ | PROT_EXEC) != 0) return NULL;
  return m;
}

int main(void) {
  Dl_info info;
  if (!dladdr((void *)at_leaf, &info)) return 1;
  self_base = info.dli_fbase;
  const char *paths[2] = {MT_UNWIND_CASES, MT_UNWIND_CASES_NOFP};
  if (mt__unw_load() != 0) { /* the reference walks' (the profiler's AUTO never needs it here) */
    fprintf(stderr, "cannot load libunwind\n");
    return 1;
  }
  mt__unwind_init(MT__UNWIND_AUTO);
  unsigned char *stubs = make_trampolines();
  if (!stubs) {
    perror("mapping the trampolines");
    return 1;
  }
  int bad = 0;
  for (int lib = 0; lib < 2; lib++) {
    int (*signals)(void);
    run_fn run = load(paths[lib], &signals, stubs);
    if (!run) return 1;
    for (int no_record = 0; no_record < 4; no_record++) {
      for (int on_thread = 0; on_thread < 2; on_thread++) {
        job j = {.run = run,
                 .seed = 0x9e3779b97f4a7c15ull * (uint64_t)(8 * lib + 2 * no_record + on_thread + 1),
                 .no_record = no_record};
        unsigned long before = mt__unwind_fallbacks, lu_before = mt__unwind_lu_walks;
        int signals_before = signals();
        if (on_thread) {
          pthread_t t;
          pthread_create(&t, NULL, run_job, &j);
          pthread_join(t, NULL);
        } else {
          run_job(&j);
        }
        unsigned long fallbacks = mt__unwind_fallbacks - before;
        unsigned long lu = mt__unwind_lu_walks - lu_before;
        static const char *const chains[] = {"functions with records",
                                             "through a function without a record too",
                                             "through signal handlers and sized frames too",
                                             "through CPython's perf trampolines"};
        printf("%s, %s thread, %s: %ld walks, %lu off the records, %lu by libunwind, "
               "%ld differ from libunwind's\n",
               lib ? "without frame pointers" : "with frame pointers",
               on_thread ? "another" : "the main", chains[no_record], j.walks, fallbacks, lu,
               j.mismatches);
        if (j.walks < ROUNDS || j.mismatches || lu) bad = 1;
        if (no_record == 2 && signals() - signals_before < 20) {
          fprintf(stderr, "only %d walks through a signal handler\n", signals() - signals_before);
          bad = 1;
        }
        /* learnt after a few samples, again after each forget (every 1000);
         * trampolines stepped by the walk of records, not by call-frame
         * steps from there on (every walk through them did before) */
        if (!lib && (no_record == 0 || no_record == 3) && fallbacks * 50 > (unsigned long)j.walks)
          bad = 1;
      }
    }
  }
  return bad;
}
