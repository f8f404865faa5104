/* Allocates steadily for about SECONDS seconds (for streaming tests). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) static void *slow_site(size_t n) { return malloc(n); }

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 2;
  struct timespec t0, t, nap = {0, 2000000};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  unsigned long n = 0;
  do {
    for (int i = 0; i < 200; i++) free(slow_site(1024)); /* noinline: not elided */
    n += 200;
    nanosleep(&nap, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
  printf("slow done %lu\n", n);
  return 0;
}
