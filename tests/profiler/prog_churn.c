/* Threads come and go: 50 rounds of 6 short-lived threads, each allocating
 * 3000 blocks and handing every 7th to a shared pool that other threads
 * (of later rounds too) free. Exercises the reuse of an exited thread's
 * event queue and unwinder memory, and frees of blocks whose allocating
 * thread is gone. Prints the number of blocks allocated by churn_site. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 50
#define THREADS 6
#define PER_THREAD 3000
#define POOL 512

static void *volatile pool[POOL];

__attribute__((noinline)) static void *churn_site(size_t n) { return malloc(n); }

static void *work(void *arg) {
  unsigned s = (unsigned)(uintptr_t)arg * 2654435761u + 7;
  for (int i = 0; i < PER_THREAD; i++) {
    s = s * 1103515245u + 12345u;
    void *p = churn_site(16 + (s >> 16) % 512);
    if (i % 7 == 0) {
      void *old = __atomic_exchange_n(&pool[(s >> 8) % POOL], p, __ATOMIC_ACQ_REL);
      free(old);
    } else {
      free(p);
    }
  }
  return NULL;
}

int main(void) {
  for (int r = 0; r < ROUNDS; r++) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, work, (void *)(r * THREADS + i + 1));
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  }
  for (int i = 0; i < POOL; i++) free(pool[i]);
  printf("churn %d\n", ROUNDS * THREADS * PER_THREAD);
  return 0;
}
