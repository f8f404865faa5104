/* Event times: on x86-64 with an invariant TSC, the time-stamp counter
 * interpolates between readings of CLOCK_REALTIME that each thread takes
 * once per RESYNC_US. Where the vDSO reads a paravirtual clock (kvm-clock:
 * the counter, then the hypervisor's scale under a sequence lock) that
 * halves the cost of a sample's two clock readings (one per alloc, one per
 * collect event), the largest single cost of a sample on such a VM.
 *
 * The counter's rate is measured against CLOCK_REALTIME over the whole
 * session (from the first reading, refreshed at every resync), so its
 * error shrinks as tracing goes on: after 10 ms it is below 0.1%, i.e.
 * under 1 µs over a RESYNC_US interval. Before that, and without an
 * invariant counter, every call reads the clock. */
#include "clock.h"

#include <stdatomic.h>
#include <time.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <x86intrin.h>
#define HAVE_TSC 1
#endif

#define RESYNC_US 1000
#define CALIBRATE_US 10000 /* the rate is trusted past this baseline */
#define MAX_PAIR_US 5       /* a counter/clock pair read further apart is read again */

static uint64_t realtime_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

#ifdef HAVE_TSC
/* 1: invariant TSC; -1: none (checked once). */
static _Atomic int tsc_ok;
/* The first reading of the process: the rate's baseline. */
static _Atomic uint64_t base_tsc, base_us;
_Atomic uint64_t mt__clock_us_per_tick_q32;
_Atomic uint64_t mt__clock_interp_ticks;
__thread mt__clock_reading mt__clock_last __attribute__((tls_model("initial-exec")));

static int check_tsc(void) {
  unsigned a, b, c, d;
  int ok = __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8)) ? 1 : -1;
  atomic_store_explicit(&tsc_ok, ok, memory_order_relaxed);
  return ok;
}

/* Reads the clock, remembers it for this thread and refines the rate. The
 * counter is read on both sides of the clock: a thread preempted between
 * the two readings would pair a counter value with a clock reading taken
 * milliseconds later, and every interpolation until the next resync would
 * be off by that much (seen under load). Such a pair is read again. */
static __attribute__((noinline)) uint64_t resync(uint64_t t) {
  uint64_t us = realtime_us(), t1 = __rdtsc();
  uint64_t q = atomic_load_explicit(&mt__clock_us_per_tick_q32, memory_order_relaxed);
  /* before the rate is known: 20000 ticks, 5-10 µs at today's rates */
  uint64_t max_ticks = q ? ((uint64_t)MAX_PAIR_US << 32) / q : 20000;
  for (int tries = 0; tries < 4 && t1 - t > max_ticks; tries++) {
    t = __rdtsc();
    us = realtime_us();
    t1 = __rdtsc();
  }
  t += (t1 - t) / 2;
  mt__clock_last.tsc = t;
  mt__clock_last.us = us;
  uint64_t bt = atomic_load_explicit(&base_tsc, memory_order_acquire);
  if (!bt) {
    uint64_t zero = 0;
    atomic_store_explicit(&base_us, us, memory_order_relaxed);
    /* the first thread here sets the baseline; base_us is written first
     * and only read once base_tsc is seen (a racing pair may mix two
     * first readings a few µs apart: within the error below) */
    atomic_compare_exchange_strong_explicit(&base_tsc, &zero, t, memory_order_release,
                                            memory_order_relaxed);
    return us;
  }
  uint64_t bu = atomic_load_explicit(&base_us, memory_order_relaxed);
  if (us > bu + CALIBRATE_US && t > bt) {
    uint64_t q = (uint64_t)((double)(us - bu) / (double)(t - bt) * 4294967296.0);
    /* q > 2^32 (under one tick per µs): no counter worth interpolating */
    uint64_t ticks = q && q <= (UINT64_C(1) << 32) ? ((uint64_t)RESYNC_US << 32) / q : 0;
    if (ticks > (UINT64_C(1) << 32)) ticks = UINT64_C(1) << 32;
    atomic_store_explicit(&mt__clock_us_per_tick_q32, q, memory_order_relaxed);
    atomic_store_explicit(&mt__clock_interp_ticks, ticks, memory_order_relaxed);
  }
  return us;
}

/* The fast path's other cases (clock.h): without a known invariant
 * counter, check once, then read the clock; else read it and resync. */
uint64_t mt__clock_slow(uint64_t t) {
  int ok = atomic_load_explicit(&tsc_ok, memory_order_relaxed);
  if (ok < 0 || (!ok && check_tsc() < 0)) return realtime_us();
  return resync(t);
}
#else
uint64_t mt__clock_realtime_us(void) { return realtime_us(); }
#endif
