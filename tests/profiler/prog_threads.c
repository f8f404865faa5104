/* 8 threads allocating and freeing concurrently, mixed sizes, some blocks
 * handed between threads (freed by another thread). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 8
#define ROUNDS 200000
static void *volatile handoff[THREADS][64];

static void *work(void *arg) {
  long id = (long)arg;
  unsigned s = (unsigned)id * 2654435761u + 1;
  void *mine[32] = {0};
  for (int i = 0; i < ROUNDS; i++) {
    s = s * 1103515245u + 12345u;
    size_t n = 16 + (s >> 16) % 2048;
    int slot = (int)((s >> 8) % 32);
    free(mine[slot]);
    mine[slot] = malloc(n);
    if (i % 97 == 0) { /* pass a block to the next thread */
      void **h = (void **)&handoff[(id + 1) % THREADS][i % 64];
      void *old = __atomic_exchange_n(h, malloc(n), __ATOMIC_ACQ_REL);
      free(old);
    }
  }
  for (int i = 0; i < 32; i++) free(mine[i]);
  return NULL;
}

int main(void) {
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, work, (void *)i);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < THREADS; i++)
    for (int j = 0; j < 64; j++) free(handoff[i][j]);
  puts("threads done");
  return 0;
}
