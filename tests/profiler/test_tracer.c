/* The tracer in-process (no interposer), so that its code, the engine's and
 * the writer's run under the sanitizers in CI: allocations reported through
 * the three engine APIs are traced at rate 1, read back and compared. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "memtrace/engine.h"
#include "memtrace/format.h"
#include "memtrace/tracer.h"

__attribute__((noinline)) static void *traced_site(size_t n) {
  void *p = malloc(n);
  mt_engine_malloc(p, n);
  return p;
}

static void test_trace_in_process(void **state) {
  (void)state;
  char path[64];
  snprintf(path, sizeof path, "/tmp/mt_test_tracer_%d.ctf", (int)getpid());
  mt_trace_options o = {.destination = path, .rate = 1.0, .context = "test"};
  assert_int_equal(mt_trace_start(&o), MT_OK);
  assert_true(mt_trace_is_tracing());
  assert_int_equal(mt_trace_start(&o), MT_ERR_INVALID); /* already tracing */

  void *keep[10];
  for (int i = 0; i < 100; i++) { /* by address: 100 blocks, 90 freed */
    void *p = traced_site(64);
    if (i < 10) keep[i] = p;
    else {
      mt_engine_free(p);
      free(p);
    }
  }
  uintptr_t tok[20]; /* by token: 20, all freed */
  for (int i = 0; i < 20; i++) tok[i] = mt_external_alloc(800);
  for (int i = 0; i < 20; i++) mt_external_free(tok[i]);
  /* by runtime id: 5 minor blocks, 3 promoted, 1 of them then collected */
  for (uintptr_t k = 1; k <= 5; k++) mt_runtime_alloc(k * 4096, 3, MT_SOURCE_MINOR);
  for (uintptr_t k = 1; k <= 3; k++) mt_runtime_promote(k * 4096, (k + 100) * 4096);
  mt_runtime_free(101 * 4096);
  mt_runtime_alloc(999 * 4096, 1000, MT_SOURCE_MAJOR);

  assert_int_equal(mt_trace_stop(), MT_OK);
  assert_false(mt_trace_is_tracing());
  for (int i = 0; i < 10; i++) {
    mt_engine_free(keep[i]); /* after stop: ignored */
    free(keep[i]);
  }

  mt_reader *r;
  assert_int_equal(mt_reader_open(&r, path), MT_OK);
  const mt_trace_info *in = mt_reader_info(r);
  assert_int_equal(in->pid, (uint64_t)getpid());
  assert_string_equal(in->context, "test");
  assert_true(in->sample_rate == 1.0);
  unsigned allocs[3] = {0}, collects = 0, promotes = 0, at_site = 0;
  uint64_t words = 0;
  mt_event ev;
  int rc;
  while ((rc = mt_reader_next(r, &ev)) > 0) {
    if (ev.kind == MT_EVENT_ALLOC) {
      allocs[ev.source]++;
      words += ev.length;
      assert_int_equal(ev.nsamples, ev.length); /* rate 1: every word */
      for (size_t k = 0; k < ev.backtrace_len; k++) {
        size_t n;
        const mt_location *l = mt_reader_lookup(r, ev.backtrace[k], &n);
        for (size_t j = 0; j < n; j++) at_site += strcmp(l[j].defname, "traced_site") == 0;
      }
    } else if (ev.kind == MT_EVENT_COLLECT) {
      collects++;
    } else {
      promotes++;
    }
  }
  assert_int_equal(rc, 0);
  assert_null(mt_reader_warning(r));
  assert_int_equal(allocs[MT_SOURCE_EXTERNAL], 120);
  assert_int_equal(allocs[MT_SOURCE_MINOR], 5);
  assert_int_equal(allocs[MT_SOURCE_MAJOR], 1);
  assert_int_equal(words, 100 * 8 + 20 * 100 + 5 * 3 + 1000);
  assert_int_equal(collects, 90 + 20 + 1);
  assert_int_equal(promotes, 3);
  assert_int_equal(at_site, 100); /* symbolized from this file's DWARF */
  mt_reader_close(r);
  unlink(path);
}

/* Frees of sampled blocks are queued per thread: the queue of a thread
 * that exits is written at its exit, the queue of a thread that waits is
 * written at trace stop. Every collect must be in the trace. */
static pthread_barrier_t freed, stopped;

static void *exiting_thread(void *arg) {
  (void)arg;
  void *p[50];
  for (int i = 0; i < 50; i++) p[i] = traced_site(32);
  for (int i = 0; i < 50; i++) {
    mt_engine_free(p[i]);
    free(p[i]);
  }
  return NULL;
}

static void *waiting_thread(void *arg) {
  (void)arg;
  void *p[50];
  for (int i = 0; i < 50; i++) p[i] = traced_site(48);
  for (int i = 0; i < 50; i++) {
    mt_engine_free(p[i]);
    free(p[i]);
  }
  pthread_barrier_wait(&freed);
  pthread_barrier_wait(&stopped); /* alive, idle, until the trace stops */
  return NULL;
}

static void test_collects_of_threads(void **state) {
  (void)state;
  char path[64];
  snprintf(path, sizeof path, "/tmp/mt_test_tracer_thr_%d.ctf", (int)getpid());
  mt_trace_options o = {.destination = path, .rate = 1.0};
  assert_int_equal(mt_trace_start(&o), MT_OK);
  pthread_barrier_init(&freed, NULL, 2);
  pthread_barrier_init(&stopped, NULL, 2);
  pthread_t a, b;
  assert_int_equal(pthread_create(&a, NULL, exiting_thread, NULL), 0);
  assert_int_equal(pthread_join(a, NULL), 0);
  assert_int_equal(pthread_create(&b, NULL, waiting_thread, NULL), 0);
  pthread_barrier_wait(&freed);
  assert_int_equal(mt_trace_stop(), MT_OK);
  pthread_barrier_wait(&stopped);
  assert_int_equal(pthread_join(b, NULL), 0);
  pthread_barrier_destroy(&freed);
  pthread_barrier_destroy(&stopped);

  mt_reader *r;
  assert_int_equal(mt_reader_open(&r, path), MT_OK);
  unsigned allocs = 0, collects = 0;
  mt_event ev;
  int rc;
  while ((rc = mt_reader_next(r, &ev)) > 0) {
    allocs += ev.kind == MT_EVENT_ALLOC;
    collects += ev.kind == MT_EVENT_COLLECT;
  }
  assert_int_equal(rc, 0);
  assert_null(mt_reader_warning(r));
  assert_int_equal(allocs, 100);
  assert_int_equal(collects, 100);
  mt_reader_close(r);
  unlink(path);
}

static void test_bad_destination(void **state) {
  (void)state;
  mt_trace_options o = {.destination = "/nonexistent/dir/t.ctf", .rate = 1e-3};
  assert_int_equal(mt_trace_start(&o), MT_ERR_IO);
  assert_non_null(strstr(mt_trace_error(), "cannot create /nonexistent/dir/t.ctf"));
  assert_false(mt_trace_is_tracing());
  o.destination = "tcp:nohostport";
  assert_int_equal(mt_trace_start(&o), MT_ERR_INVALID);
  o.destination = "x.ctf";
  o.rate = 2;
  assert_int_equal(mt_trace_start(&o), MT_ERR_INVALID);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_trace_in_process),
      cmocka_unit_test(test_collects_of_threads),
      cmocka_unit_test(test_bad_destination),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
