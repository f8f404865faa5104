/* Event times for the tracer: CLOCK_REALTIME in microseconds, cheaply. */
#ifndef MT_TRACER_CLOCK_H
#define MT_TRACER_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>

#define MT__CLOCK_HIDDEN __attribute__((visibility("hidden")))

/* The time now, in µs since the epoch (within a microsecond or two of
 * CLOCK_REALTIME; not always non-decreasing across threads: the writer
 * orders event times itself). Thread-safe, allocates nothing.
 *
 * Inline: a sample reads it twice (its alloc and its collect), and a call
 * to a function of clock.c cost more than the interpolation itself. */
static inline uint64_t mt__clock_us(void);

/* The rest of this header is the fast path's state, kept by clock.c. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <x86intrin.h>

/* This thread's last reading of the clock: the counter and the time. */
typedef struct mt__clock_reading {
  uint64_t tsc, us;
} mt__clock_reading;
extern __thread mt__clock_reading mt__clock_last
    __attribute__((tls_model("initial-exec"))) MT__CLOCK_HIDDEN;
/* Ticks since a thread's last reading that the fast path interpolates
 * (fewer than 2^32); 0 until the counter is known invariant and its rate
 * measured, and for ever without such a counter. */
extern _Atomic uint64_t mt__clock_interp_ticks MT__CLOCK_HIDDEN;
/* µs per tick, times 2^32. */
extern _Atomic uint64_t mt__clock_us_per_tick_q32 MT__CLOCK_HIDDEN;
/* Everything but the interpolation, counter value t read. */
uint64_t mt__clock_slow(uint64_t t) MT__CLOCK_HIDDEN;

static inline uint64_t mt__clock_us(void) {
  uint64_t t = __rdtsc();
  /* dt wraps to a huge value if the thread moved back in ticks: resync */
  uint64_t dt = t - mt__clock_last.tsc;
  if (__builtin_expect(
          dt < atomic_load_explicit(&mt__clock_interp_ticks, memory_order_relaxed) &&
              mt__clock_last.tsc,
          1))
    return mt__clock_last.us +
           ((dt * atomic_load_explicit(&mt__clock_us_per_tick_q32, memory_order_relaxed)) >> 32);
  return mt__clock_slow(t); /* first call, stale, not calibrated, or no counter */
}
#else
uint64_t mt__clock_realtime_us(void) MT__CLOCK_HIDDEN;
static inline uint64_t mt__clock_us(void) { return mt__clock_realtime_us(); }
#endif

#endif
