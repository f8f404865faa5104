/* The unwinder's AUTO mode against libunwind, on call chains whose
 * functions set up their frame records after a first instruction or two
 * (unwind_cases.c, built at -O2): AUTO must learn that they have records
 * (after a few samples, its frame-pointer walk stands alone) and must
 * never take a function without one (uc_no_record) for one: every walk
 * must give libunwind's frames (but for the C library's entry points, the
 * outermost ones, where AUTO stops). The same chains built without frame
 * pointers, where every walk goes by call-frame steps, and chains through
 * signal handlers and frames sized at run time: the same frames, and
 * libunwind never needed. On the main thread and on another, with the
 * unwinder's verdicts forgotten now and then (as after dlclose). */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "unwind.h"

#define CAP 256
#define ROUNDS 3000

typedef void (*unwind_case_leaf)(void);
typedef void (*run_fn)(unwind_case_leaf leaf, uint64_t seed, int rounds, int no_record);

extern _Atomic unsigned long mt__unwind_fallbacks, mt__unwind_lu_walks;

static void *self_base;
static __thread long walks, mismatches;

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

static void at_leaf(void) {
  uint64_t a[CAP], b[CAP];
  size_t na = mt__unwind(NULL, a, CAP);
  size_t nb = reference(b);
  /* AUTO ends its walks at the C library's entry points, where libunwind
   * may go up to three frames further (__libc_start_main, _start) */
  if (!na || na > nb || nb - na > 3 || memcmp(a, b, na * sizeof *a) != 0) {
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

static run_fn load(const char *path, int (**signals)(void)) {
  void *lib = dlopen(path, RTLD_NOW);
  run_fn run = lib ? (run_fn)dlsym(lib, "unwind_cases_run") : NULL;
  *signals = lib ? (int (*)(void))dlsym(lib, "unwind_cases_signals") : NULL;
  if (!run || !*signals) fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
  return run && *signals ? run : NULL;
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
  int bad = 0;
  for (int lib = 0; lib < 2; lib++) {
    int (*signals)(void);
    run_fn run = load(paths[lib], &signals);
    if (!run) return 1;
    for (int no_record = 0; no_record < 3; no_record++) {
      for (int on_thread = 0; on_thread < 2; on_thread++) {
        job j = {.run = run,
                 .seed = 0x9e3779b97f4a7c15ull * (uint64_t)(6 * lib + 2 * no_record + on_thread + 1),
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
                                             "through signal handlers and sized frames too"};
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
        /* learnt after a few samples, again after each forget (every 1000) */
        if (!lib && !no_record && fallbacks * 50 > (unsigned long)j.walks) bad = 1;
      }
    }
  }
  return bad;
}
