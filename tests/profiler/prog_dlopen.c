/* A library that allocates is dlopen'ed, used, closed, and opened again
 * (its code may come back at the same addresses): the trace must describe
 * each code once, correctly. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void *volatile escape; /* keeps the compiler from eliding malloc/free */

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  for (int round = 0; round < 3; round++) {
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    void (*work)(void) = (void (*)(void))dlsym(h, "dl_work");
    work();
    dlclose(h);
    for (int i = 0; i < 100; i++) { escape = malloc(512); free(escape); } /* main's site */
  }
  puts("dlopen done");
  return 0;
}
