/* Threads cancelled while they allocate: pthread_cancel'd workers whose
 * only cancellation point is their own pthread_testcancel, between runs
 * of malloc and free. Under the profiler a sample's system calls (the
 * trace's write) are cancellation points unless the profiler holds
 * cancellation off: a worker cancelled in there left the tracer's lock
 * held, and the program hung. Prints "cancelled N" when every worker was
 * cancelled (at its own point), then its main thread's site, as
 * prog_sites does. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ROUNDS 40
#define WORKERS 3
#define AFTER 3000

__attribute__((noinline)) static void *deep(int depth, size_t n) {
  void *p = depth ? deep(depth - 1, n) : malloc(n);
  __asm__ volatile("" ::: "memory"); /* not a tail call: a frame per level */
  return p;
}

static void *worker(void *arg) {
  (void)arg;
  for (;;) {
    for (int i = 0; i < 20000; i++) free(deep(i % 13, 64 + (size_t)(i % 7) * 8));
    pthread_testcancel();
  }
  return NULL;
}

__attribute__((noinline)) static void *cancel_after(void) { return malloc(32); }

int main(void) {
  int cancelled = 0;
  for (int round = 0; round < ROUNDS; round++) {
    pthread_t t[WORKERS];
    for (int k = 0; k < WORKERS; k++)
      if (pthread_create(&t[k], NULL, worker, NULL) != 0) {
        puts("ERROR pthread_create");
        return 1;
      }
    usleep(3000 + (unsigned)(round * 997) % 5000);
    for (int k = 0; k < WORKERS; k++) pthread_cancel(t[k]);
    for (int k = 0; k < WORKERS; k++) {
      void *res;
      pthread_join(t[k], &res);
      cancelled += res == PTHREAD_CANCELED;
    }
    for (int i = 0; i < AFTER; i++) free(cancel_after());
  }
  printf("cancelled %d\n", cancelled);
  printf("cancel_after %d %d 0\n", ROUNDS * AFTER, ROUNDS * AFTER * 32);
  return 0;
}
