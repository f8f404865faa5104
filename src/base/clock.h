/* The monotonic clock in seconds, for timeouts and rates that must not
 * jump with the wall clock. */
#ifndef MT_BASE_CLOCK_H
#define MT_BASE_CLOCK_H

#include <time.h>

static inline double mt_monotonic_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
