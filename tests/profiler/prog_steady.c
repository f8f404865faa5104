/* Fixed work spread over about SECONDS seconds (default 3): blocks
 * allocated, filled, summed and freed, from 4 threads, with short sleeps;
 * prints a checksum that depends on the work alone, not on its timing
 * (e2e.sh, attach: attached and detached over and over, its output stays
 * the same). `prog_steady SECONDS main`: the main thread allocates too,
 * without sleeping, until the others are done, so that it is nearly always
 * inside malloc or free when it is stopped. `prog_steady SECONDS _exit`:
 * allocates and frees 200 blocks of 8000 bytes at last_site once the work
 * is done, then ends with _exit, which runs no exit handler: a trace has
 * those last events only if it was flushed on the way out. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
#define ROUNDS 300

static double seconds = 3;
static uint64_t sums[THREADS];
static volatile int threads_done;

__attribute__((noinline)) static uint64_t *steady_site(size_t n) { return malloc(n * sizeof(uint64_t)); }

static void *work(void *arg) {
  long k = (long)arg;
  struct timespec nap = {0, (long)(seconds / ROUNDS * 1e9)};
  uint64_t sum = 0;
  for (int r = 0; r < ROUNDS; r++) {
    for (int i = 0; i < 50; i++) {
      size_t n = 16 + (size_t)((r * 7 + i * 13 + k) % 200);
      uint64_t *p = steady_site(n);
      for (size_t j = 0; j < n; j++) p[j] = j * 2654435761u + (uint64_t)r;
      for (size_t j = 0; j < n; j++) sum += p[j] ^ (uint64_t)i;
      free(p);
    }
    nanosleep(&nap, NULL);
  }
  sums[k] = sum;
  return NULL;
}

__attribute__((noinline)) static void *last_site(size_t n) { return malloc(n); }

/* Joins the workers: their sums folded into one. */
static uint64_t all_sums;
static void *join_all(void *threads) {
  pthread_t *t = threads;
  for (int k = 0; k < THREADS; k++) {
    pthread_join(t[k], NULL);
    all_sums ^= sums[k];
  }
  threads_done = 1;
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) seconds = atof(argv[1]);
  pthread_t t[THREADS], joiner;
  for (long k = 0; k < THREADS; k++) pthread_create(&t[k], NULL, work, (void *)k);
  if (argc > 2 && strcmp(argv[2], "main") == 0) {
    pthread_create(&joiner, NULL, join_all, t);
    uint64_t rounds = 0; /* not printed: how many varies with the timing */
    for (; !threads_done; rounds++) {
      uint64_t *p = steady_site(8 + rounds % 64);
      p[0] = rounds;
      free(p);
    }
    pthread_join(joiner, NULL);
  } else {
    join_all(t);
  }
  printf("steady done %016llx\n", (unsigned long long)all_sums);
  if (argc > 2 && strcmp(argv[2], "_exit") == 0) {
    for (int i = 0; i < 200; i++) free(last_site(8000));
    fflush(stdout);
    _exit(0);
  }
  return 0;
}
