/* A malloc-heavy program for the profiler benchmark: mixed sizes from 16 B
 * to 64 KiB (most small), call stacks 5 to 15 deep through distinct
 * functions, a fraction of objects kept live for a while, 1 or more threads.
 * Usage: alloc_workload [THREADS] [MILLIONS_OF_ALLOCATIONS_PER_THREAD]
 * Each block gets its first byte written: allocation and little else. Built
 * with -DTOUCH, a byte in every 64-byte line of it, as a program
 * initializing what it allocates touches it (a compile-time choice, so that
 * the plain variant's code stays as it was).
 * Deterministic; prints a checksum so the work cannot be optimized away. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIVE 4096 /* objects each thread keeps alive, replaced at random */

typedef struct ctx {
  uint64_t rng;
  long remaining;
  void *live[LIVE];
  uint64_t checksum;
} ctx;

static uint64_t next(ctx *c) {
  c->rng ^= c->rng << 13;
  c->rng ^= c->rng >> 7;
  c->rng ^= c->rng << 17;
  return c->rng;
}

/* Sizes: 70% 16-256 B, 25% 256 B-4 KiB, 5% 4-64 KiB. */
static size_t pick_size(ctx *c) {
  uint64_t r = next(c);
  unsigned p = r % 100;
  if (p < 70) return 16 + (r >> 8) % 241;
  if (p < 95) return 256 + (r >> 8) % 3841;
  return 4096 + (r >> 8) % 61441;
}

static void leaf(ctx *c) {
  size_t n = pick_size(c);
  char *p = malloc(n);
  p[0] = (char)n;
#ifdef TOUCH
  for (size_t i = 64; i < n; i += 64) p[i] = (char)i;
#endif
  c->checksum += (uint64_t)(uintptr_t)p[0];
  if (next(c) % 8 == 0) { /* keep it for a while */
    size_t slot = next(c) % LIVE;
    free(c->live[slot]);
    c->live[slot] = p;
  } else {
    free(p);
  }
  c->remaining--;
}

/* Built with -DLATE_FRAMES, each level first updates a global: compilers
 * then schedule that load before the push %rbp that starts the function's
 * frame record (as in much real code at -O2), and the profiler's unwinder
 * must learn that these functions have records all the same. */
#ifdef LATE_FRAMES
static uint64_t level_calls;
#define LATE() (level_calls ^= level_calls << 13)
#else
#define LATE() ((void)0)
#endif

/* Eight distinct functions recurse to a random depth, so that stacks vary
 * and share prefixes as in real programs. */
#define LEVEL(name, other)                                                   \
  __attribute__((noinline)) static void name(ctx *c, int depth) {           \
    LATE();                                                                    \
    if (depth <= 0) {                                                          \
      for (int i = 0; i < 16 && c->remaining > 0; i++) leaf(c);               \
      return;                                                                  \
    }                                                                          \
    other(c, depth - 1);                                                       \
    __asm__ volatile("" ::: "memory");                                         \
  }
static void f0(ctx *, int);
static void f1(ctx *, int);
static void f2(ctx *, int);
static void f3(ctx *, int);
LEVEL(f7, f0)
LEVEL(f6, f7)
LEVEL(f5, f2)
LEVEL(f4, f5)
LEVEL(f3, f6)
LEVEL(f2, f3)
LEVEL(f1, f4)
LEVEL(f0, f1)
static void (*const roots[4])(ctx *, int) = {f0, f1, f2, f3};

static void *thread_main(void *arg) {
  ctx *c = arg;
  while (c->remaining > 0) roots[next(c) % 4](c, 5 + (int)(next(c) % 11));
  for (int i = 0; i < LIVE; i++) free(c->live[i]);
  return NULL;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  long per = (long)((argc > 2 ? atof(argv[2]) : 4) * 1e6);
  if (threads < 1 || threads > 64) return 2;
  ctx *cs = calloc((size_t)threads, sizeof *cs);
  pthread_t t[64];
  for (int i = 0; i < threads; i++) {
    cs[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    cs[i].remaining = per;
    pthread_create(&t[i], NULL, thread_main, &cs[i]);
  }
  uint64_t sum = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(t[i], NULL);
    sum += cs[i].checksum;
  }
  printf("checksum %llu\n", (unsigned long long)sum);
  free(cs);
  return 0;
}
