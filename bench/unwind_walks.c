/* unwind_walks [-t] LIB MODE...: the CPU time of the profiler's stack walks.
 * LIB is tests/profiler/unwind_cases.c built as a shared object (with or
 * without frame pointers); its call chains (1 to 14 deep, through
 * functions without frame records too; with -t, through CPython's perf
 * trampolines instead) call back here, where each leaf walks its stack
 * with mt__unwind. MODE: auto, libunwind or fp (the profiler's
 * unwinders). Prints, per mode, microseconds per walk, frames per walk and
 * the call-frame steps per walk whose rows were not kept (read from the
 * tables: ~90 ns each), over 20,000 chains after 2,000 to warm up. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "cpython_trampoline.h"
#include "tracer/unwind/cfi.h"
#include "tracer/unwind/unwind.h"

typedef void (*leaf_fn)(void);
typedef void (*run_fn)(leaf_fn leaf, uint64_t seed, int rounds, int no_record);

static long walks;
static size_t frames;

static void leaf(void) {
  uint64_t buf[256];
  frames += mt__unwind(NULL, buf, 256);
  walks++;
}

static void around_trampoline(int entering) { (void)entering; }

/* CPython's perf trampoline (cpython_trampoline.h) in anonymous executable
 * memory, as CPython copies it; NULL on failure. */
static void *trampoline(void) {
  unsigned char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  put_cpython_trampoline(m, 0);
  return mprotect(m, 4096, PROT_READ | PROT_EXEC) == 0 ? m : NULL;
}

static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  int chains = 1; /* unwind_cases_run's no_record: through functions without records */
  if (argc > 1 && strcmp(argv[1], "-t") == 0) {
    chains = 3; /* through trampolines */
    argc--, argv++;
  }
  if (argc < 3) {
    fprintf(stderr, "usage: unwind_walks [-t] LIB auto|libunwind|fp...\n");
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW);
  run_fn run = lib ? (run_fn)dlsym(lib, "unwind_cases_run") : NULL;
  void (*set)(void *, void *, void (*)(int)) =
      lib ? (void (*)(void *, void *, void (*)(int)))dlsym(lib, "unwind_cases_trampolines") : NULL;
  void *stub = trampoline();
  if (!run || !set || !stub) {
    fprintf(stderr, "unwind_walks: cannot load %s: %s\n", argv[1], stub ? dlerror() : "no stub");
    return 1;
  }
  set(stub, stub, around_trampoline);
  if (mt__unw_load() != 0) {
    fprintf(stderr, "unwind_walks: cannot load libunwind\n");
    return 1;
  }
  for (int i = 2; i < argc; i++) {
    mt__unwind_mode mode = strcmp(argv[i], "auto") == 0        ? MT__UNWIND_AUTO
                           : strcmp(argv[i], "libunwind") == 0 ? MT__UNWIND_LIBUNWIND
                           : strcmp(argv[i], "fp") == 0        ? MT__UNWIND_FRAME_POINTERS
                                                               : (mt__unwind_mode)-1;
    if ((int)mode < 0) {
      fprintf(stderr, "unwind_walks: unknown mode '%s'\n", argv[i]);
      return 2;
    }
    mt__unwind_init(mode);
    run(leaf, 1, 2000, chains); /* warm: rows, verdicts, libunwind's caches */
    walks = 0, frames = 0;
    unsigned long uncached = mt__cfi_uncached;
    double t0 = cpu_seconds();
    run(leaf, 2, 20000, chains);
    double t = cpu_seconds() - t0;
    printf("%-10s %6.3f us/walk %5.1f frames/walk %6.3f CFI steps/walk by the tables\n", argv[i],
           t / (double)walks * 1e6, (double)frames / (double)walks,
           (double)(mt__cfi_uncached - uncached) / (double)walks);
  }
  return 0;
}
