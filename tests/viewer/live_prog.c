/* mt_viewer_live_prog SECONDS: allocates from a few distinct call sites in
 * a loop for SECONDS seconds (a fraction is fine), keeping some of the
 * blocks, so that a live viewer (memtrace view --listen / --follow) has a
 * trace that grows while it watches. Prints the number of rounds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KEEP 4096

static void *volatile keep[KEEP];

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* noinline: each is its own frame, so each is a site in the trace */
__attribute__((noinline)) static void *live_alpha(size_t n) { return malloc(n); }
__attribute__((noinline)) static void *live_beta(size_t n) { return malloc(n * 4); }
__attribute__((noinline)) static void *live_gamma(size_t n) { return calloc(n, 16); }
__attribute__((noinline)) static void live_round(unsigned long r) {
  size_t k = r % KEEP;
  free(keep[k]);
  switch (r % 3) {
  case 0: keep[k] = live_alpha(64 + r % 512); break;
  case 1: keep[k] = live_beta(32 + r % 256); break;
  default: keep[k] = live_gamma(8 + r % 64); break;
  }
  if (keep[k]) memset(keep[k], 1, 8);
}

int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 2;
  double end = now() + secs;
  unsigned long r = 0;
  while (now() < end) {
    for (int i = 0; i < 2000; i++) live_round(r++);
    struct timespec ts = {0, 2000000}; /* 2 ms: a steady, modest stream */
    nanosleep(&ts, NULL);
  }
  printf("%lu\n", r);
  return 0;
}
