/* The tracer's event clock (src/tracer/clock.c): on x86-64 the TSC
 * interpolates between readings of CLOCK_REALTIME. Every reading must lie
 * within a few µs of CLOCK_REALTIME read just before and just after it,
 * from several threads at once, for long enough that interpolation is used
 * (the counter's rate is trusted after 10 ms). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "tracer/clock.h"

#define TOLERANCE_US 20
#define RUN_US 300000

static uint64_t realtime_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void *check(void *arg) {
  long *bad = arg;
  uint64_t start = realtime_us(), n = 0;
  for (;;) {
    uint64_t r0 = realtime_us(), c = mt__clock_us(), r1 = realtime_us();
    if (c + TOLERANCE_US < r0 || c > r1 + TOLERANCE_US) {
      if (*bad < 5)
        fprintf(stderr, "clock %llu outside [%llu, %llu] after %llu readings\n",
                (unsigned long long)c, (unsigned long long)r0, (unsigned long long)r1,
                (unsigned long long)n);
      ++*bad;
    }
    n++;
    if (r1 - start > RUN_US) break;
    if (n % 64 == 0) { /* spread the readings over the resync interval */
      struct timespec ts = {0, 37000};
      nanosleep(&ts, NULL);
    }
  }
  return NULL;
}

int main(void) {
  pthread_t t[3];
  long bad[4] = {0};
  for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, check, &bad[i]);
  check(&bad[3]);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  long total = bad[0] + bad[1] + bad[2] + bad[3];
  printf("%ld readings off by more than %d us\n", total, TOLERANCE_US);
  return total ? 1 : 0;
}
