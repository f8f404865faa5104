/* dl_iterate_phdr, wrapped: no sample is taken while the dynamic loader's
 * lock is held.
 *
 * The C library's dl_iterate_phdr holds the loader's lock while it calls
 * the program back, and a callback may allocate (to keep the names it is
 * shown). A sample there would unwind with libunwind, which takes a lock of
 * its own and, under it, dl_iterate_phdr: another thread's sample holding
 * libunwind's lock and waiting for the loader's, this one holding the
 * loader's and waiting for libunwind's, both wait for good (a program
 * whose threads list their libraries while one dlopens and dlcloses:
 * profiler.loader).
 *
 * So the callback runs with sampling suspended on its thread (the engine's
 * mt__tls.unsampled): what it allocates is not sampled, as if allocated by
 * the profiler itself; blocks it frees are reported freed. */
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>

#include "engine/engine_internal.h"
#include "preload.h"

#define EXPORT __attribute__((visibility("default")))

typedef int (*phdr_callback)(struct dl_phdr_info *, size_t, void *);
typedef int (*iterate_fn)(phdr_callback, void *);

/* Looked up at load (preload_init), not on first use: a first use in a
 * sample, under the tracer's lock, would take the loader's lock there. */
static iterate_fn real_iterate;

void mt__loader_resolve(void) { *(void **)&real_iterate = dlsym(RTLD_NEXT, "dl_iterate_phdr"); }

struct wrapped {
  phdr_callback fn;
  void *data;
};

static int unsampled_callback(struct dl_phdr_info *info, size_t size, void *arg) {
  struct wrapped *w = arg;
  mt__tls.unsampled++;
  int rc = w->fn(info, size, w->data);
  mt__tls.unsampled--;
  return rc;
}

EXPORT int dl_iterate_phdr(phdr_callback fn, void *data) {
  if (!real_iterate) mt__loader_resolve(); /* another preloaded library's constructor */
  if (!real_iterate) return 0;              /* no loader to ask: nothing listed */
  struct wrapped w = {fn, data};
  return real_iterate(unsampled_callback, &w);
}
