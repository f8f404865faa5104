/* Four threads allocate and free through the engine's API, handing blocks
 * to each other, while the main thread stops and restarts tracing six
 * times: events queued per thread meet session changes, cells of an ended
 * session, and frees of blocks allocated by another thread. Each session's
 * trace must read back whole, every collection naming an allocation before
 * it. Built as a ctest everywhere, and under ThreadSanitizer by
 * `make test-tsan` (frame-pointer unwinding: libunwind's own thread-exit
 * destructor crashes TSan's runtime). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "memtrace/engine.h"
#include "memtrace/format.h"
#include "memtrace/tracer.h"

#define THREADS 4
#define SESSIONS 6
#define POOL 256

static void *_Atomic pool[POOL];
static _Atomic int stop_all;

static void *work(void *arg) {
  unsigned s = (unsigned)(long)arg * 2654435761u + 1;
  while (!stop_all) {
    for (int i = 0; i < 2000; i++) {
      s = s * 1103515245u + 12345u;
      size_t n = 16 + (s >> 16) % 256;
      void *p = malloc(n);
      mt_engine_malloc(p, n);
      if (i % 5 == 0) { /* hand it over: another thread frees it */
        void *old = atomic_exchange(&pool[(s >> 8) % POOL], p);
        if (old) {
          mt_engine_free(old);
          free(old);
        }
      } else {
        mt_engine_free(p);
        free(p);
      }
    }
  }
  return NULL;
}

/* The trace reads back whole; returns its alloc events (-1: unreadable). */
static long check(const char *path) {
  mt_reader *r;
  if (mt_reader_open(&r, path) != MT_OK) return -1;
  mt_event ev;
  long allocs = 0, collects = 0;
  int rc;
  while ((rc = mt_reader_next(r, &ev)) > 0) {
    if (ev.kind == MT_EVENT_ALLOC) allocs++;
    else if (ev.kind == MT_EVENT_COLLECT) collects++;
  }
  int ok = rc == 0 && !mt_reader_warning(r) && collects <= allocs;
  if (!ok) fprintf(stderr, "%s: rc %d, %ld allocs, %ld collects, %s\n", path, rc, allocs, collects,
                   mt_reader_warning(r) ? mt_reader_warning(r) : "no warning");
  mt_reader_close(r);
  return ok ? allocs : -1;
}

int main(void) {
  /* STRESS_MS: each session's length (100 ms; longer under TSan, which
   * slows the threads tenfold) */
  const char *ms_env = getenv("STRESS_MS");
  useconds_t session_us = (useconds_t)(ms_env ? atoi(ms_env) : 100) * 1000;
  char path[SESSIONS + 1][64];
  pthread_t t[THREADS];
  for (int k = 0; k <= SESSIONS; k++) snprintf(path[k], sizeof path[k], "stress.%d.%d.ctf", (int)getpid(), k);
  mt_trace_options o = {.destination = path[0], .rate = 0.05, .unwind = MT_UNWIND_FRAME_POINTERS};
  if (mt_trace_start(&o) != MT_OK) {
    fprintf(stderr, "start: %s\n", mt_trace_error());
    return 1;
  }
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, work, (void *)(i + 1));
  for (int k = 1; k <= SESSIONS; k++) {
    usleep(session_us);
    mt_trace_stop();
    usleep(10000);
    o.destination = path[k];
    if (mt_trace_start(&o) != MT_OK) {
      fprintf(stderr, "restart: %s\n", mt_trace_error());
      return 1;
    }
  }
  usleep(session_us);
  stop_all = 1;
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  mt_trace_stop();
  /* A session may see no sample: after a stop, a thread rejoins only once
   * its idle countdown (2^20 words) runs out, which takes a slow build
   * (ASan, TSan) longer than a session. Every trace must read back whole,
   * and the stress must have sampled. */
  int bad = 0;
  long total = 0;
  for (int k = 0; k <= SESSIONS; k++) {
    long n = check(path[k]);
    if (n < 0) bad = 1;
    else total += n;
    printf("session %d: %ld sampled allocations\n", k, n);
    unlink(path[k]);
  }
  if (total == 0) bad = 1;
  for (int i = 0; i < POOL; i++) free(pool[i]);
  puts(bad ? "stress FAILED" : "stress done");
  return bad;
}
