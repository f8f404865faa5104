/* Stacks the profiler must find on its own, allocating from known sites:
 *  - the main thread and a thread that ask the C library for their own
 *    stack first thing, as Rust's runtime does on the main thread and the
 *    JVM on each thread it starts: pthread_getattr_np allocates while it
 *    holds the thread's lock, so the thread's first sample is taken in
 *    there (the profiler asking the same would wait for itself);
 *  - a thread on a stack the program allocated itself (malloc'd, in a
 *    mapping with other data below it: no guard under it), whose qsort
 *    callback allocates (libunwind walks those stacks);
 *  - the main thread, allocating once near the top of its stack, then
 *    deep down (DEEP_KIB below), where its stack has grown since;
 *  - a coroutine (ucontext) on a malloc'd stack, the main thread and it
 *    allocating in turn: the profiler asks for each stack again and
 *    again, up to a bound, then walks from what it knows last (in modes
 *    with libunwind, every sample has its stack).
 * Usage: prog_stacks. Prints each site's true count, bytes and live
 * blocks, as prog_sites does. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#define ROUNDS 300
#define OWN_STACK (64u << 10) /* from the heap, not a mapping of its own */
#define DEEP_KIB 1024
#define SORTED 8

static void check(void *p) {
  if (!p) {
    puts("ERROR allocation failed");
    exit(1);
  }
}

__attribute__((noinline)) static void stacks_asked(void) {
  void *p = malloc(48);
  check(p);
  free(p);
}

static void ask_stack(void) {
  pthread_attr_t a;
  size_t size = 0;
  void *lo = NULL;
  if (pthread_getattr_np(pthread_self(), &a) != 0 || pthread_attr_getstack(&a, &lo, &size) != 0) {
    puts("ERROR pthread_getattr_np");
    exit(1);
  }
  pthread_attr_destroy(&a);
}

static void *asker(void *arg) {
  (void)arg;
  ask_stack();
  for (int i = 0; i < ROUNDS; i++) stacks_asked();
  return NULL;
}

static long compares;

/* qsort's comparison, allocating: its caller is the C library's code */
__attribute__((noinline)) static int stacks_sorted(const void *a, const void *b) {
  void *p = malloc(40);
  check(p);
  free(p);
  compares++;
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

__attribute__((noinline)) static void stacks_own(void) {
  void *p = malloc(72);
  check(p);
  free(p);
}

static void *own(void *arg) {
  (void)arg;
  for (int i = 0; i < ROUNDS; i++) {
    stacks_own();
    int v[SORTED];
    for (int k = 0; k < SORTED; k++) v[k] = (k * 5 + 3) % SORTED;
    qsort(v, SORTED, sizeof *v, stacks_sorted);
  }
  return NULL;
}

__attribute__((noinline)) static void stacks_shallow(void) {
  void *p = malloc(24);
  check(p);
  free(p);
}

__attribute__((noinline)) static void stacks_deep(void) {
  void *p = malloc(136);
  check(p);
  free(p);
}

/* 16 KiB of stack per level, touched so the stack grows as it goes */
#define LEVEL_KIB 16
__attribute__((noinline)) static void descend(int levels) {
  volatile char used[LEVEL_KIB << 10];
  memset((char *)used, 1, sizeof used);
  if (levels > 1) descend(levels - 1);
  else
    for (int i = 0; i < ROUNDS; i++) stacks_deep();
  used[0]++;
}

__attribute__((noinline)) static void stacks_coroutine(void) {
  void *p = malloc(88);
  check(p);
  free(p);
}

__attribute__((noinline)) static void stacks_switch(void) {
  void *p = malloc(104);
  check(p);
  free(p);
}

static ucontext_t main_uc, co_uc;

static void coroutine(void) {
  for (;;) {
    stacks_coroutine();
    swapcontext(&co_uc, &main_uc);
  }
}

static void run_coroutine(void) {
  void *stack = malloc(OWN_STACK);
  check(stack);
  getcontext(&co_uc);
  co_uc.uc_stack.ss_sp = stack;
  co_uc.uc_stack.ss_size = OWN_STACK;
  co_uc.uc_link = NULL;
  makecontext(&co_uc, coroutine, 0);
  for (int i = 0; i < ROUNDS; i++) {
    swapcontext(&main_uc, &co_uc);
    stacks_switch();
  }
  free(stack);
}

int main(void) {
  ask_stack();
  for (int i = 0; i < ROUNDS; i++) stacks_shallow();
  pthread_t t;
  if (pthread_create(&t, NULL, asker, NULL) != 0 || pthread_join(t, NULL) != 0) {
    puts("ERROR pthread_create");
    return 1;
  }
  pthread_attr_t attr;
  void *stack = malloc(OWN_STACK);
  check(stack);
  pthread_attr_init(&attr);
  if (pthread_attr_setstack(&attr, stack, OWN_STACK) != 0 ||
      pthread_create(&t, &attr, own, NULL) != 0 || pthread_join(t, NULL) != 0) {
    puts("ERROR pthread_create (own stack)");
    return 1;
  }
  pthread_attr_destroy(&attr);
  free(stack);
  descend(DEEP_KIB / LEVEL_KIB);
  run_coroutine();
  const int n = ROUNDS;
  printf("stacks_asked %d %d 0\nstacks_own %d %d 0\nstacks_sorted %ld %ld 0\n", n, n * 48, n,
         n * 72, compares, compares * 40);
  printf("stacks_shallow %d %d 0\nstacks_deep %d %d 0\n", n, n * 24, n, n * 136);
  printf("stacks_coroutine %d %d 0\nstacks_switch %d %d 0\n", n, n * 88, n, n * 104);
  return 0;
}
