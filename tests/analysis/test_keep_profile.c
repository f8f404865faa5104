/* A load for a heap profile (MT_KEEP_PROFILE) against a whole one. On a
 * trace of nearly all distinct stacks it keeps no object, and mt_profile,
 * reading the trace again, gives the same samples in the same order, with
 * the same codes, functions and warning; on a trace whose stacks repeat it
 * is a whole load. Answers other than the profile, and filters it cannot
 * take, are refused; a trace that changed or went between the reads is an
 * error naming it. Traces of format 2 and of format 3 with four domains
 * (object ids that are not the objects' order), runs of equal stacks,
 * stacks that come back later, empty ones, blocks past the weights' cache,
 * past 2^32 words and past 65535 samples, promotions, double frees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "memtrace/analysis.h"
#include "memtrace/profile.h"
#include "memtrace/rank.h"
#include "profile_digest.h"
#include "write_trace.h"

static const mt_location LOCS[4][1] = {{{"a.c", "alpha", 10, 1, 5}},
                                       {{"b.c", "beta", 20, 1, 5}},
                                       {{"c.c", "gamma", 30, 1, 5}},
                                       {{"m.c", "main", 1, 1, 1}}};

/* a code is described unless a multiple of 5: then its frame is a bare
 * address */
static int resolve(void *ctx, uint64_t code, const mt_location **l, size_t *n) {
  (void)ctx;
  *l = code % 5 ? LOCS[code % 4] : NULL;
  *n = *l ? 1 : 0;
  return 0;
}

static uint64_t rnd(void) { return (uint64_t)rand() << 31 ^ (uint64_t)rand(); }

/* Added to every allocation's samples by write_trace: the same program's
 * trace with other samples. */
static uint64_t extra_samples;

/* A trace of `nobj` allocations at rate 0.01, format `version` (3: four
 * domains). `fresh` in 100 of the stacks are new (the rest repeat the last
 * one or come back from earlier); the remaining objects' frees, double
 * frees and promotions at random. */
static void write_trace(int version, int nobj, int fresh) {
  enum { DEPTH = 24, KEEP = 64 };
  mt_writer *w = open_trace_version(0.01, resolve, version);
  int domains = version == 3 ? 4 : 1;
  uint64_t bt[DEPTH], old[KEEP][DEPTH];
  size_t n = 0, old_n[KEEP] = {0};
  uint64_t *ids = malloc((size_t)nobj * sizeof *ids);
  uint32_t *dom = malloc((size_t)nobj * sizeof *dom);
  assert_non_null(ids);
  assert_non_null(dom);
  for (int i = 0; i < nobj; i++) {
    int r = rand() % 100;
    if (r < fresh) { /* a new stack, sharing a prefix with the last */
      n = n ? (size_t)rand() % n : 0;
      size_t to = 1 + (size_t)rand() % DEPTH;
      for (; n < to; n++) bt[n] = 1 + rnd() % 3000;
    } else if (r < fresh + 3) { /* one seen earlier */
      size_t k = (size_t)rand() % KEEP;
      n = old_n[k];
      memcpy(bt, old[k], n * sizeof *bt);
    } else if (r < fresh + 5) {
      n = 0; /* no backtrace */
    } /* else the same as the last */
    if (rand() % 16 == 0) {
      size_t k = (size_t)rand() % KEEP;
      old_n[k] = n;
      memcpy(old[k], bt, n * sizeof *bt);
    }
    int big = rand() % 1000;
    uint64_t words = big == 0 ? (1ull << 33) : big < 5 ? 5000 + rnd() % 100000 : 1 + rnd() % 60;
    uint64_t samples = (big == 1 ? 70000 : 1 + rnd() % 3) + extra_samples;
    dom[i] = (uint32_t)(rand() % domains);
    assert_int_equal(mt_writer_alloc(w, T0 + (uint64_t)i, dom[i], words, samples,
                                     (mt_source)(rand() % 3), bt, n, &ids[i]),
                     MT_OK);
    if (i && rand() % 2) { /* an earlier object goes */
      int j = rand() % i;
      uint64_t t = T0 + (uint64_t)i;
      assert_int_equal(rand() % 8 ? mt_writer_collect(w, t, dom[j], ids[j])
                                  : mt_writer_promote(w, t, dom[j], ids[j]),
                       MT_OK);
    }
  }
  free(ids);
  free(dom);
  assert_int_equal(mt_writer_close(w), MT_OK);
  fclose(trace_file);
}

static void load(const char *path, mt_keep keep, mt_analysis **a) {
  assert_int_equal(mt_analysis_load_keep(a, &path, 1, keep, NULL, NULL), MT_OK);
}

static sample_digest profile(const mt_analysis *a, const mt_filter *f, int merge) {
  mt_profile_info pi;
  sample_digest d = {0};
  assert_int_equal(mt_profile(a, f, merge, &pi, on_sample_digest, &d), MT_OK);
  assert_string_equal(pi.error, "");
  assert_int_equal(d.bad_shared, 0);
  return d;
}

/* The same codes, with the same frames, and the same functions. */
static void same_codes(const mt_analysis *x, const mt_analysis *y) {
  assert_int_equal(mt_analysis_code_count(x), mt_analysis_code_count(y));
  for (uint32_t c = 0; c < mt_analysis_code_count(x); c++) {
    assert_int_equal(mt_analysis_code_value(x, c), mt_analysis_code_value(y, c));
    size_t nx, ny;
    const mt_frame *fx = mt_analysis_code_frames(x, c, &nx), *fy = mt_analysis_code_frames(y, c, &ny);
    assert_int_equal(nx, ny);
    for (size_t k = 0; k < nx; k++) {
      assert_int_equal(fx[k].function, fy[k].function);
      assert_int_equal(fx[k].line, fy[k].line);
    }
  }
  assert_int_equal(mt_analysis_function_count(x), mt_analysis_function_count(y));
  for (uint32_t f = 0; f < mt_analysis_function_count(x); f++)
    assert_string_equal(mt_analysis_function_name(x, f), mt_analysis_function_name(y, f));
}

/* The profile of `whole` and of `reread` under the filters a reread takes:
 * the same samples. */
static void same_profiles(const mt_analysis *whole, const mt_analysis *reread) {
  mt_filter f;
  mt_filter_init(&f);
  for (int kind = 0; kind < 3; kind++) {
    if (kind == 1) f.live = MT_LIVE_AT_END;
    if (kind == 2) f.hide = "alpha";
    for (int merge = 0; merge < 2; merge++) {
      sample_digest x = profile(whole, &f, merge), y = profile(reread, &f, merge);
      assert_true(x.n > 1000);
      assert_int_equal(x.n, y.n);
      assert_true(x.h == y.h);
      /* a second read knows the codes each sample shares with the last */
      if (mt_analysis_keeps(reread) == MT_KEEP_PROFILE) assert_true(y.shared_codes > y.n);
    }
  }
  same_codes(whole, reread);
  assert_int_equal(mt_analysis_duration(whole), mt_analysis_duration(reread));
  const char *wx = mt_analysis_warning(whole), *wy = mt_analysis_warning(reread);
  assert_non_null(wx); /* the double frees */
  assert_non_null(wy);
  assert_string_equal(wx, wy);
}

static void distinct_stacks(int version) {
  srand(100 + version);
  write_trace(version, 700000, 85);
  mt_analysis *whole, *reread;
  load(trace_path, MT_KEEP_ALL, &whole);
  load(trace_path, MT_KEEP_PROFILE, &reread);
  assert_int_equal(mt_analysis_keeps(reread), MT_KEEP_PROFILE);
  assert_false(mt_analysis_backtraces_distinct(whole)); /* the whole load stopped interning */
  assert_int_equal(mt_analysis_object_count(reread), 0);
  same_profiles(whole, reread);

  /* what a reread cannot take, refused */
  mt_filter f;
  mt_filter_init(&f);
  f.size_min = 80;
  assert_false(mt_profile_rereads(&f));
  mt_profile_info pi;
  sample_digest d = {0};
  assert_int_equal(mt_profile(reread, &f, 0, &pi, on_sample_digest, &d), MT_ERR_INVALID);
  mt_filter_init(&f);
  f.live = MT_LIVE_AT_PEAK;
  assert_int_equal(mt_profile(reread, &f, 0, &pi, on_sample_digest, &d), MT_ERR_INVALID);
  assert_int_equal(d.n, 0);
  mt_filter_init(&f);
  mt_ranking *rk;
  mt_rank_spec s = {MT_BY_FUNCTION, MT_ORDER_BYTES, 10, 0};
  assert_int_equal(mt_rank(reread, &f, &s, &rk), MT_ERR_INVALID);

  /* the trace changed since the load: cut short, then another in its place */
  char path[64];
  snprintf(path, sizeof path, "%s", trace_path);
  assert_int_equal(truncate(path, 1 << 20), 0);
  assert_int_equal(mt_profile(reread, &f, 0, &pi, on_sample_digest, &d), MT_ERR_INVALID);
  assert_non_null(strstr(pi.error, path));
  assert_non_null(strstr(pi.error, "changed"));
  write_trace(version, 20000, 85);
  assert_int_equal(rename(trace_path, path), 0);
  pi.error[0] = 0;
  assert_int_equal(mt_profile(reread, &f, 0, &pi, on_sample_digest, &d), MT_ERR_INVALID);
  assert_non_null(strstr(pi.error, "changed"));
  /* gone */
  unlink(path);
  assert_int_equal(mt_profile(reread, &f, 0, &pi, on_sample_digest, &d), MT_ERR_IO);
  assert_non_null(strstr(pi.error, path));
  mt_analysis_free(whole);
  mt_analysis_free(reread);
}

static void test_distinct_v2(void **state) {
  (void)state;
  distinct_stacks(2);
}

static void test_distinct_v3(void **state) {
  (void)state;
  distinct_stacks(3);
}

/* Stacks that repeat: the load is a whole one, and answers all. */
static void test_repeating(void **state) {
  (void)state;
  srand(7);
  write_trace(2, 300000, 2);
  mt_analysis *whole, *kept;
  load(trace_path, MT_KEEP_ALL, &whole);
  load(trace_path, MT_KEEP_PROFILE, &kept);
  unlink(trace_path);
  assert_int_equal(mt_analysis_keeps(kept), MT_KEEP_ALL);
  assert_true(mt_analysis_backtraces_distinct(kept));
  assert_int_equal(mt_analysis_object_count(kept), 300000);
  same_profiles(whole, kept);
  mt_filter f;
  mt_filter_init(&f);
  f.size_min = 80;
  sample_digest x = profile(whole, &f, 0), y = profile(kept, &f, 0);
  assert_int_equal(x.n, y.n);
  assert_true(x.h == y.h);
  mt_analysis_free(whole);
  mt_analysis_free(kept);
}

/* A trace that grew after the load (its program still writing it): the
 * second read stops past the events the load read, and the profile is
 * the load's. The load reads the file cut in the middle of a packet; the
 * whole file is back for the second read. */
static void test_grown(void **state) {
  (void)state;
  srand(11);
  write_trace(2, 700000, 85);
  FILE *f = fopen(trace_path, "rb");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long size = ftell(f);
  assert_true(size > 1 << 20);
  char *all = malloc((size_t)size);
  assert_non_null(all);
  rewind(f);
  assert_int_equal(fread(all, 1, (size_t)size, f), (size_t)size);
  fclose(f);
  assert_int_equal(truncate(trace_path, size / 4 * 3 + 1000), 0);
  mt_analysis *whole, *reread;
  load(trace_path, MT_KEEP_ALL, &whole);
  load(trace_path, MT_KEEP_PROFILE, &reread);
  assert_int_equal(mt_analysis_keeps(reread), MT_KEEP_PROFILE);
  f = fopen(trace_path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(all, 1, (size_t)size, f), (size_t)size);
  fclose(f);
  same_profiles(whole, reread);
  /* another trace of as many objects and events, with the same codes, in
   * its place: their samples tell them apart */
  char path[64];
  snprintf(path, sizeof path, "%s", trace_path);
  srand(11);
  extra_samples = 1;
  write_trace(2, 700000, 85);
  extra_samples = 0;
  assert_int_equal(rename(trace_path, path), 0);
  mt_filter any;
  mt_filter_init(&any);
  mt_profile_info pi;
  sample_digest d = {0};
  assert_int_equal(mt_profile(reread, &any, 0, &pi, on_sample_digest, &d), MT_ERR_INVALID);
  assert_non_null(strstr(pi.error, "changed"));
  unlink(path);
  free(all);
  mt_analysis_free(whole);
  mt_analysis_free(reread);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_distinct_v2),
      cmocka_unit_test(test_distinct_v3),
      cmocka_unit_test(test_repeating),
      cmocka_unit_test(test_grown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
