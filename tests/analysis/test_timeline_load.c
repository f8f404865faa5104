/* The timeline made while reading (mt_timeline_load) against the one of a
 * whole load (mt_timeline_compute), field for field and bit for bit,
 * under filters and bin counts: on memtrace's own traces; on one that
 * runs past 71 minutes (times kept coarser), with and without conditions
 * on times; on one whose packet headers claim a later end than its events
 * (the span not confirmed); and through a pipe (no span before reading).
 * Each says which way it was made: a live-only load, or a whole one.
 * mt_trace_span on a file, a truncated one, a non-trace and a pipe. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "memtrace/analysis.h"
#include "memtrace/stats.h"
#include "write_trace.h"

static const mt_location LOCS[3][1] = {{{"a.c", "alpha", 10, 1, 5}},
                                       {{"b.c", "beta", 20, 1, 5}},
                                       {{"m.c", "main", 1, 1, 1}}};

static int resolve(void *ctx, uint64_t code, const mt_location **l, size_t *n) {
  (void)ctx;
  *l = code >= 0x100 && code < 0x103 ? LOCS[code - 0x100] : NULL;
  *n = *l ? 1 : 0;
  return 0;
}

static void same_series(const double *x, const double *y, size_t n) {
  assert_memory_equal(x, y, n * sizeof *x);
}

/* The timeline of `path` under f both ways; the way mt_timeline_load took
 * (MT_KEEP_LIVE: while reading) must be `way`. */
static void compare(const char *path, const mt_filter *f, size_t nbins, mt_keep way) {
  mt_analysis *whole, *a;
  mt_timeline *x, *y;
  assert_int_equal(mt_analysis_load(&whole, path, NULL, NULL), MT_OK);
  assert_int_equal(mt_timeline_compute(whole, f, nbins, &x), MT_OK);
  assert_int_equal(mt_timeline_load(&a, &y, path, f, nbins, NULL, NULL), MT_OK);
  assert_int_equal(mt_analysis_keeps(a), way);
  assert_int_equal(x->nbins, y->nbins);
  same_series(x->end, y->end, nbins);
  same_series(x->live, y->live, nbins);
  same_series(x->filtered, y->filtered, nbins);
  same_series(x->min, y->min, nbins);
  same_series(x->max, y->max, nbins);
  assert_int_equal(x->duration, y->duration);
  assert_int_equal(x->start, y->start);
  assert_int_equal(x->peak_time, y->peak_time);
  assert_int_equal(x->peak_exact, y->peak_exact);
  assert_int_equal(x->filter_selects_all, y->filter_selects_all);
  assert_memory_equal(&x->peak_bytes, &y->peak_bytes, sizeof x->peak_bytes);
  assert_memory_equal(&x->sampling, &y->sampling, sizeof x->sampling);
  mt_tally tx = mt_analysis_total(whole), ty = mt_analysis_total(a);
  assert_memory_equal(&tx, &ty, sizeof tx);
  mt_timeline_free(x);
  mt_timeline_free(y);
  mt_analysis_free(a);
  mt_analysis_free(whole);
}

/* Filters of every kind; `timed` ones (conditions on times) taken the
 * way `timed_way`. */
static void filters(const char *path, mt_keep timed_way) {
  mt_analysis *a;
  assert_int_equal(mt_analysis_load(&a, path, NULL, NULL), MT_OK);
  uint64_t d = mt_analysis_duration(a);
  mt_analysis_free(a);
  mt_filter f;
  mt_filter_init(&f);
  static const size_t bins[] = {1, 7, 400, 5000};
  for (size_t k = 0; k < 4; k++) compare(path, &f, bins[k], MT_KEEP_LIVE);
  mt_filter g = f;
  g.size_min = 64, g.size_max = 4096;
  compare(path, &g, 100, MT_KEEP_LIVE);
  g = f;
  g.live = MT_LIVE_AT_END;
  g.sources = 1u << MT_SOURCE_MAJOR | MT_FILTER_HEAP;
  compare(path, &g, 100, MT_KEEP_LIVE);
  g = f;
  g.hide = "main";
  compare(path, &g, 100, MT_KEEP_LIVE);
  g = f;
  g.alloc_from = d / 4, g.alloc_to = d / 2;
  compare(path, &g, 100, timed_way);
  g = f;
  g.collected = MT_COLLECTED_IN, g.collect_from = d / 3, g.collect_to = d;
  compare(path, &g, 100, timed_way);
  g = f;
  g.live = MT_LIVE_AT, g.live_at = d / 2;
  compare(path, &g, 100, timed_way);
  g = f;
  g.lifetime_max = d / 10;
  compare(path, &g, 100, timed_way);
  g = f; /* known only at the end, or a condition on stacks: a whole load */
  g.live = MT_LIVE_AT_PEAK;
  compare(path, &g, 100, MT_KEEP_ALL);
  g = f;
  g.inside = "beta";
  compare(path, &g, 100, MT_KEEP_ALL);
}

static void test_shared_traces(void **state) {
  (void)state;
  static const char *const names[] = {"ocamlopt.ctf", "workload-1e-3.ctf", "workload-1e-4.ctf"};
  for (size_t k = 0; k < 3; k++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", MT_SHARED_TRACES, names[k]);
    if (access(path, R_OK) == 0) filters(path, MT_KEEP_LIVE);
  }
}

/* n objects `step` us apart, a third freed soon, a third later, a third
 * never; the file's path in trace_path. */
static void write_objects(size_t n, uint64_t step) {
  mt_writer *w = open_trace(1e-2, resolve);
  uint64_t t = T0, *ids = malloc(n * sizeof *ids);
  for (size_t i = 0; i < n; i++) {
    uint64_t bt[2] = {0x102, 0x100 + i % 2};
    assert_int_equal(mt_writer_alloc(w, t += step, 0, 1 + i % 700, 1 + i % 3,
                                     i % 5 ? MT_SOURCE_EXTERNAL : MT_SOURCE_MAJOR, bt, 2, &ids[i]),
                     MT_OK);
    if (i % 3 == 0) assert_int_equal(mt_writer_collect(w, t += step / 3, 0, ids[i]), MT_OK);
    if (i % 3 == 1 && i >= 30) assert_int_equal(mt_writer_collect(w, t += 1, 0, ids[i - 30]), MT_OK);
  }
  assert_int_equal(mt_writer_close(w), MT_OK);
  fclose(trace_file);
  free(ids);
}

static void test_written(void **state) {
  (void)state;
  write_objects(20000, 97);
  filters(trace_path, MT_KEEP_LIVE);
  unlink(trace_path);
}

/* Past 71 minutes: conditions on times are decided by a whole load. */
static void test_long_clock(void **state) {
  (void)state;
  write_objects(3000, 3600000);
  filters(trace_path, MT_KEEP_ALL);
  unlink(trace_path);
}

/* Objects allocated and freed around the edges of 7 bins of an odd
 * width, in a trace of 7 x 1000 s (past 71 minutes: times kept to 2 us):
 * a time read finer than a whole load keeps it lands in another bin. */
static void test_edges(void **state) {
  (void)state;
  const uint64_t x = 1000000007;
  mt_writer *w = open_trace(1e-2, resolve);
  uint64_t id, bt[2] = {0x102, 0x100};
  for (uint64_t k = 1; k < 7; k++)
    for (uint64_t e = 0; e < 3; e++) {
      uint64_t at = T0 + k * x - 1 + e;
      assert_int_equal(mt_writer_alloc(w, at, 0, 8, 1, MT_SOURCE_EXTERNAL, bt, 2, &id), MT_OK);
      if (e != 1) assert_int_equal(mt_writer_collect(w, at + 2 + e, 0, id), MT_OK);
    }
  assert_int_equal(mt_writer_alloc(w, T0 + 7 * x, 0, 8, 1, MT_SOURCE_EXTERNAL, bt, 2, &id), MT_OK);
  assert_int_equal(mt_writer_close(w), MT_OK);
  fclose(trace_file);
  mt_filter f;
  mt_filter_init(&f);
  compare(trace_path, &f, 7, MT_KEEP_LIVE);
  f.size_min = 8;
  compare(trace_path, &f, 7, MT_KEEP_LIVE);
  unlink(trace_path);
}

/* The last packet says it ends 5 s after its last event: the events do
 * not confirm the span, and the answer comes from a whole load. */
static void test_span_not_confirmed(void **state) {
  (void)state;
  write_objects(5000, 50);
  FILE *fp = fopen(trace_path, "r+b");
  assert_non_null(fp);
  long off = 0, last = -1;
  unsigned char h[24];
  while (fseek(fp, off, SEEK_SET) == 0 && fread(h, 1, sizeof h, fp) == sizeof h) {
    uint32_t bits = (uint32_t)h[4] | (uint32_t)h[5] << 8 | (uint32_t)h[6] << 16 |
                    (uint32_t)h[7] << 24;
    last = off;
    off += bits / 8;
  }
  uint64_t end = 0;
  assert_int_equal(fseek(fp, last + 16, SEEK_SET), 0);
  assert_int_equal(fread(h, 1, 8, fp), 8);
  for (int k = 7; k >= 0; k--) end = end << 8 | h[k];
  end += 5000000;
  for (int k = 0; k < 8; k++) h[k] = (unsigned char)(end >> (8 * k));
  assert_int_equal(fseek(fp, last + 16, SEEK_SET), 0);
  assert_int_equal(fwrite(h, 1, 8, fp), 8);
  fclose(fp);
  uint64_t first, lastt;
  assert_int_equal(mt_trace_span(trace_path, &first, &lastt), MT_OK);
  assert_int_equal(lastt, end);
  mt_filter f;
  mt_filter_init(&f);
  compare(trace_path, &f, 50, MT_KEEP_ALL);
  unlink(trace_path);
}

/* A pipe has no span before it is read: a whole load. */
static void test_pipe(void **state) {
  (void)state;
  write_objects(2000, 50);
  char fifo[96];
  snprintf(fifo, sizeof fifo, "%s.fifo", trace_path);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  uint64_t first, last;
  assert_int_equal(mt_trace_span(fifo, &first, &last), MT_ERR_INVALID);
  pid_t child = fork();
  if (child == 0) { /* the writer end: the trace, then EOF */
    int in = open(trace_path, O_RDONLY), out = open(fifo, O_WRONLY);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
      if (write(out, buf, (size_t)n) != n) _exit(1);
    _exit(0);
  }
  mt_analysis *a;
  mt_timeline *t;
  mt_filter f;
  mt_filter_init(&f);
  assert_int_equal(mt_timeline_load(&a, &t, fifo, &f, 10, NULL, NULL), MT_OK);
  assert_int_equal(mt_analysis_keeps(a), MT_KEEP_ALL);
  mt_analysis *b;
  assert_int_equal(mt_analysis_load(&b, trace_path, NULL, NULL), MT_OK);
  mt_timeline *u;
  assert_int_equal(mt_timeline_compute(b, &f, 10, &u), MT_OK);
  same_series(t->live, u->live, 10);
  mt_timeline_free(t);
  mt_timeline_free(u);
  mt_analysis_free(a);
  mt_analysis_free(b);
  unlink(fifo);
  unlink(trace_path);
}

/* The span of a whole file, of one cut inside its last packet (that
 * packet left out, as the reader leaves it), and of what is no trace. */
static void test_span(void **state) {
  (void)state;
  write_objects(4000, 50);
  uint64_t first, last, first2, last2;
  assert_int_equal(mt_trace_span(trace_path, &first, &last), MT_OK);
  assert_int_equal(first, T0);
  mt_analysis *a;
  assert_int_equal(mt_analysis_load(&a, trace_path, NULL, NULL), MT_OK);
  assert_int_equal(last - first, mt_analysis_duration(a));
  mt_analysis_free(a);
  struct stat st;
  assert_int_equal(stat(trace_path, &st), 0);
  assert_int_equal(truncate(trace_path, st.st_size - 10), 0);
  assert_int_equal(mt_trace_span(trace_path, &first2, &last2), MT_OK);
  assert_int_equal(first2, first);
  assert_true(last2 < last);
  mt_filter f;
  mt_filter_init(&f);
  compare(trace_path, &f, 30, MT_KEEP_LIVE);
  FILE *fp = fopen(trace_path, "wb");
  fputs("not a trace, not at all: just some text that is long enough for a header", fp);
  fclose(fp);
  assert_int_equal(mt_trace_span(trace_path, &first, &last), MT_ERR_CORRUPT);
  unlink(trace_path);
  assert_int_equal(mt_trace_span(trace_path, &first, &last), MT_ERR_IO);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shared_traces), cmocka_unit_test(test_written),
      cmocka_unit_test(test_long_clock),    cmocka_unit_test(test_edges),
      cmocka_unit_test(test_span_not_confirmed),
      cmocka_unit_test(test_pipe),          cmocka_unit_test(test_span),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
