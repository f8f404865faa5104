/* Threads with small stacks, as thread pools and coroutine runtimes give
 * them, allocating from sites the profiler has not named yet: naming them
 * (libdw) happens on the thread that takes the sample. One site is called
 * back from the C library's qsort, whose frames have no frame records:
 * its samples take libunwind's walk (in every mode but fp), and the
 * threads call it with part of their stack already used.
 * Usage: prog_small_stack [KIB [USED]]: each thread's stack, in KiB
 * (default 32; 0: the smallest the system allows), and the bytes a thread
 * uses before qsort (default 4096). Prints each site's true count, bytes
 * and live blocks, as prog_sites does. */
#include <limits.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 2
#define ROUNDS 500
#define SORTED 8

static long used_bytes = 4096;
static _Atomic long compares;

__attribute__((noinline)) static void *small_a(void) { return malloc(24); }
__attribute__((noinline)) static void *small_b(void) { return malloc(200); }
__attribute__((noinline)) static void *small_c(void) { return calloc(1, 3000); }

static int by_value(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* qsort's comparison, allocating: its caller is the C library's code */
__attribute__((noinline)) static int small_d(const void *a, const void *b) {
  void *p = malloc(40);
  if (!p) {
    puts("ERROR allocation failed");
    exit(1);
  }
  free(p);
  compares++;
  return by_value(a, b);
}

/* qsort from a frame that holds `bytes` of the thread's stack */
__attribute__((noinline)) static void sort_deep(long bytes) {
  volatile char used[bytes > 0 ? bytes : 1];
  used[0] = 1;
  int v[SORTED];
  for (int k = 0; k < SORTED; k++) v[k] = (k * 5 + 3) % SORTED;
  qsort(v, SORTED, sizeof *v, small_d);
  used[0] += (char)v[0];
}

static void *work(void *arg) {
  (void)arg;
  void *p[3];
  for (int i = 0; i < ROUNDS; i++) {
    p[0] = small_a();
    p[1] = small_b();
    p[2] = small_c();
    if (!p[0] || !p[1] || !p[2]) {
      puts("ERROR allocation failed");
      exit(1);
    }
    memset(p[1], 1, 200);
    for (int k = 0; k < 3; k++) free(p[k]);
    sort_deep(used_bytes);
  }
  return NULL;
}

int main(int argc, char **argv) {
  long kib = argc > 1 ? atol(argv[1]) : 32;
  if (argc > 2) used_bytes = atol(argv[2]);
  /* qsort bound here, on the main thread's stack: the loader's lazy
   * binding of a thread's first call saves the vector registers on its
   * stack, which would make that call, not the callback's allocations, the
   * deepest point of the threads' stacks */
  int warm[2] = {1, 0};
  qsort(warm, 2, sizeof *warm, by_value);
  long min = sysconf(_SC_THREAD_STACK_MIN);
  size_t size = kib > 0 ? (size_t)kib * 1024 : (size_t)(min > 0 ? min : PTHREAD_STACK_MIN);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  if (pthread_attr_setstacksize(&attr, size) != 0) {
    printf("ERROR stack size %zu refused\n", size);
    return 1;
  }
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++)
    if (pthread_create(&t[i], &attr, work, NULL) != 0) {
      puts("ERROR pthread_create");
      return 1;
    }
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  const int n = THREADS * ROUNDS;
  printf("small_a %d %d 0\nsmall_b %d %d 0\nsmall_c %d %d 0\nsmall_d %ld %ld 0\n", n, n * 24, n,
         n * 200, n, n * 3000, (long)compares, (long)compares * 40);
  return 0;
}
