/* Event times for the tracer: CLOCK_REALTIME in microseconds, cheaply. */
#ifndef MT_TRACER_CLOCK_H
#define MT_TRACER_CLOCK_H

#include <stdint.h>

/* The time now, in µs since the epoch (within a microsecond or two of
 * CLOCK_REALTIME; not always non-decreasing across threads: the writer
 * orders event times itself). Thread-safe, allocates nothing. */
uint64_t mt__clock_us(void) __attribute__((visibility("hidden")));

#endif
