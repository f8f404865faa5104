/* Traces written by the tests of the analysis, then loaded: the library's
 * writer into a temporary file, with the test's own resolver of location
 * codes. Included by one test file each (cmocka's asserts). */
#ifndef MT_TEST_WRITE_TRACE_H
#define MT_TEST_WRITE_TRACE_H

#include <stdio.h>
#include <unistd.h>

#include "memtrace/analysis.h"

#define T0 1700000000000000ull

static char trace_path[64];
static FILE *trace_file; /* the writer owns no fd: closed after the writer */

/* A writer of format `version` (0: the default) at `rate` (start time
 * T0), codes named by `resolve`. */
static inline mt_writer *open_trace_version(double rate, mt_resolve_fn resolve, int version) {
  static int written;
  snprintf(trace_path, sizeof trace_path, "/tmp/mt_test_trace_%d_%d.ctf", (int)getpid(),
           written++);
  trace_file = fopen(trace_path, "wb");
  assert_non_null(trace_file);
  mt_trace_info in = {.sample_rate = rate, .word_size = 64, .executable_name = "t",
                      .host_name = "h", .runtime_params = "", .pid = 1, .start_time = T0,
                      .context = ""};
  mt_writer_options o = {.fd = fileno(trace_file), .resolve = resolve, .version = version};
  mt_writer *w;
  assert_int_equal(mt_writer_open(&w, &in, &o), MT_OK);
  return w;
}

/* A writer at `rate` (start time T0), codes named by `resolve`. */
static inline mt_writer *open_trace(double rate, mt_resolve_fn resolve) {
  return open_trace_version(rate, resolve, 0);
}

/* Closes the writer and loads what it wrote (the file is removed). */
static inline mt_analysis *close_and_load(mt_writer *w) {
  assert_int_equal(mt_writer_close(w), MT_OK);
  fclose(trace_file);
  mt_analysis *a;
  assert_int_equal(mt_analysis_load(&a, trace_path, NULL, NULL), MT_OK);
  unlink(trace_path);
  return a;
}

#endif
