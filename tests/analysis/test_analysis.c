/* The analysis library against traces whose every figure is known: written
 * here with the library's writer, at rate 1 (estimates exact) and at low
 * rates (intervals checked for coverage over many seeds). */
#include <math.h>
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

#define T0 1700000000000000ull

static const mt_location LOC_A[] = {{"a.c", "alpha", 10, 1, 5}};
static const mt_location LOC_B[] = {{"b.c", "beta", 20, 2, 6}, {"b.h", "beta_inl", 3, 1, 1}};
static const mt_location LOC_M[] = {{"main.c", "main", 1, 1, 1}};

static int resolve(void *ctx, uint64_t code, const mt_location **l, size_t *n) {
  (void)ctx;
  switch (code) {
  case 0x100: *l = LOC_M; *n = 1; break;
  case 0x200: *l = LOC_A; *n = 1; break;
  case 0x300: *l = LOC_B; *n = 2; break;
  default: *l = NULL; *n = 0; /* undescribed */
  }
  return 0;
}

static char path[64];
static FILE *trace_file; /* the writer owns no fd: closed after the writer */
static mt_writer *open_trace(double rate) {
  snprintf(path, sizeof path, "/tmp/mt_test_analysis_%d.ctf", (int)getpid());
  FILE *f = trace_file = fopen(path, "wb");
  mt_trace_info in = {.sample_rate = rate, .word_size = 64, .executable_name = "t",
                      .host_name = "h", .runtime_params = "", .pid = 1, .start_time = T0,
                      .context = ""};
  mt_writer_options o = {.fd = fileno(f), .resolve = resolve};
  mt_writer *w;
  assert_int_equal(mt_writer_open(&w, &in, &o), MT_OK);
  return w;
}
static mt_analysis *close_and_load(mt_writer *w) {
  assert_int_equal(mt_writer_close(w), MT_OK);
  fclose(trace_file);
  mt_analysis *a;
  assert_int_equal(mt_analysis_load(&a, path, NULL, NULL), MT_OK);
  unlink(path);
  return a;
}

/* Rate 1: objects of known sizes at known sites and times. */
static void test_exact(void **state) {
  (void)state;
  mt_writer *w = open_trace(1.0);
  uint64_t A[] = {0x100, 0x200}, B[] = {0x100, 0x300}, U[] = {0x100, 0x300, 0x999};
  uint64_t id[6];
  /* t=0: A 10 words; t=100: B 20 words; t=200: U 5 words (site skips the
   * undescribed frame to B's code); t=300 free A; t=400: A 1 word (never
   * freed); t=500 free B; t=600: B 100 words (never freed) */
  mt_writer_alloc(w, T0 + 0, 0, 10, 10, MT_SOURCE_EXTERNAL, A, 2, &id[0]);
  mt_writer_alloc(w, T0 + 100, 0, 20, 20, MT_SOURCE_EXTERNAL, B, 2, &id[1]);
  mt_writer_alloc(w, T0 + 200, 0, 5, 5, MT_SOURCE_EXTERNAL, U, 3, &id[2]);
  mt_writer_collect(w, T0 + 300, 0, id[0]);
  mt_writer_alloc(w, T0 + 400, 0, 1, 1, MT_SOURCE_EXTERNAL, A, 2, &id[3]);
  mt_writer_collect(w, T0 + 500, 0, id[1]);
  mt_writer_alloc(w, T0 + 600, 0, 100, 100, MT_SOURCE_EXTERNAL, B, 2, &id[4]);
  mt_analysis *a = close_and_load(w);

  assert_int_equal(mt_analysis_object_count(a), 5);
  assert_int_equal(mt_analysis_duration(a), 600);
  uint64_t pt, ps;
  mt_analysis_peak(a, &pt, &ps);
  /* live: 10, 30, 35, 25, 26, 6, 106 -> peak 106 at 600 */
  assert_int_equal(ps, 106);
  assert_int_equal(pt, 600);

  mt_filter f;
  mt_filter_init(&f);
  size_t nc = mt_analysis_code_count(a);
  mt_tally *sites = calloc(nc + 1, sizeof *sites), total;
  assert_int_equal(mt_analysis_tally_sites(a, &f, sites, &total), MT_OK);
  assert_int_equal(total.samples, 136);
  assert_int_equal(total.objects, 5);
  mt_estimate b = mt_estimate_bytes(a, &total), o = mt_estimate_objects(a, &total);
  assert_true(fabs(b.value - 136 * 8) < 1e-6 && b.lo == b.value && b.hi == b.value);
  assert_true(fabs(o.value - 5) < 1e-9);
  /* per site: alpha 11 words in 2 objects; beta (B, and U via the skip) 125 */
  for (size_t c = 0; c < nc; c++) {
    size_t n;
    const mt_frame *fr = mt_analysis_code_frames(a, (uint32_t)c, &n);
    if (!sites[c].objects) continue;
    const char *name = mt_analysis_function_name(a, fr[n - 1].function);
    if (strcmp(name, "alpha") == 0) assert_int_equal(sites[c].samples, 11);
    else if (strcmp(name, "beta_inl") == 0) assert_int_equal(sites[c].samples, 125);
    else fail_msg("unexpected site %s", name);
  }

  /* filters */
  f.live = MT_LIVE_AT_END;
  mt_analysis_tally_sites(a, &f, sites, &total);
  assert_int_equal(total.objects, 3); /* U, A#2, B#2 */
  assert_int_equal(total.samples, 106);
  mt_filter_init(&f);
  f.live = MT_LIVE_AT;
  f.live_at = 350; /* B (100..500), U (200..) */
  mt_analysis_tally_sites(a, &f, sites, &total);
  assert_int_equal(total.samples, 25);
  mt_filter_init(&f);
  f.alloc_from = 100;
  f.alloc_to = 400;
  mt_analysis_tally_sites(a, &f, sites, &total);
  assert_int_equal(total.samples, 25);
  mt_filter_init(&f);
  f.collected = MT_COLLECTED_IN;
  f.collect_from = 0;
  f.collect_to = 400;
  mt_analysis_tally_sites(a, &f, sites, &total);
  assert_int_equal(total.samples, 10);
  mt_filter_init(&f);
  f.size_min = 80;
  f.size_max = 160; /* 10 and 20 words */
  mt_analysis_tally_sites(a, &f, sites, &total);
  assert_int_equal(total.samples, 30);
  mt_filter_init(&f);
  f.lifetime_min = 400; /* B (400), U (400 to the end), A#1 300: no */
  mt_analysis_tally_sites(a, &f, sites, &total);
  assert_int_equal(total.samples, 25);
  mt_filter_init(&f);
  f.inside = "beta";
  mt_analysis_tally_sites(a, &f, sites, &total);
  assert_int_equal(total.samples, 125);
  f.inside = NULL;
  f.not_inside = "alp";
  mt_analysis_tally_sites(a, &f, sites, &total);
  assert_int_equal(total.samples, 125);
  mt_filter_init(&f);
  f.sources = 1u << MT_SOURCE_MINOR;
  mt_analysis_tally_sites(a, &f, sites, &total);
  assert_int_equal(total.objects, 0);

  /* the live series at bin ends 100, 200, ..., 600 */
  double live[6];
  mt_filter_init(&f);
  assert_int_equal(mt_analysis_live_series(a, &f, 0, 600, 6, live), MT_OK);
  const double want[6] = {30, 35, 25, 26, 6, 106};
  for (int i = 0; i < 6; i++) assert_true(fabs(live[i] - want[i]) < 1e-9);

  /* stacks: the tree and the per-object backtraces agree */
  mt_tally *per = calloc(mt_analysis_stack_count(a), sizeof *per);
  mt_filter_init(&f);
  assert_int_equal(mt_analysis_tally_stacks(a, &f, per, &total), MT_OK);
  assert_int_equal(total.samples, 136);
  uint32_t bt[8], sc[8];
  for (size_t i = 0; i < 5; i++) {
    size_t n = mt_analysis_object_backtrace(a, i, bt, 8);
    size_t d = mt_analysis_stack_codes(a, mt_analysis_object_stack(a, i), sc, 8);
    assert_int_equal(n, d);
    assert_memory_equal(bt, sc, n * sizeof *bt);
  }
  free(per);
  free(sites);
  mt_analysis_free(a);
}

/* Low rate: the 95% interval on bytes covers the truth in ~95% of runs. */
static void test_coverage(void **state) {
  (void)state;
  const double rate = 1e-3;
  int covered_b = 0, covered_o = 0, runs = 200;
  uint64_t rng = 12345;
  for (int run = 0; run < runs; run++) {
    mt_writer *w = open_trace(rate);
    uint64_t words = 0, count = 0, t = 0, bt[] = {0x100, 0x200};
    /* 20000 objects of 1..64 words; sample each word with the rate */
    for (int k = 0; k < 20000; k++) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      uint64_t len = 1 + (rng >> 40) % 64, ns = 0;
      for (uint64_t x = 0; x < len; x++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        ns += (double)(rng >> 11) * 0x1.0p-53 < rate;
      }
      words += len;
      count++;
      if (ns) mt_writer_alloc(w, T0 + t++, 0, len, ns, MT_SOURCE_EXTERNAL, bt, 2, NULL);
    }
    mt_analysis *a = close_and_load(w);
    mt_filter f;
    mt_filter_init(&f);
    mt_tally *s = calloc(mt_analysis_code_count(a) + 1, sizeof *s), tot;
    mt_analysis_tally_sites(a, &f, s, &tot);
    mt_estimate b = mt_estimate_bytes(a, &tot), o = mt_estimate_objects(a, &tot);
    covered_b += b.lo <= words * 8.0 && words * 8.0 <= b.hi;
    covered_o += o.lo <= count && count <= o.hi;
    free(s);
    mt_analysis_free(a);
  }
  printf("coverage over %d runs: bytes %.1f%%, objects %.1f%%\n", runs, 100.0 * covered_b / runs,
         100.0 * covered_o / runs);
  assert_true(covered_b >= runs * 0.90);
  assert_true(covered_o >= runs * 0.88);
}

/* The per-object backtrace replay equals the stack tree's, on real traces. */
static void test_backtraces_golden(void **state) {
  (void)state;
  static const char *names[] = {"ocamlopt", "workload-1e-4"};
  for (int t = 0; t < 2; t++) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s.ctf", MT_SHARED_TRACES, names[t]);
    mt_analysis *a;
    assert_int_equal(mt_analysis_load(&a, p, NULL, NULL), MT_OK);
    static uint32_t bt[8192], st[8192];
    for (size_t i = 0; i < mt_analysis_object_count(a); i++) {
      size_t n = mt_analysis_object_backtrace(a, i, bt, 8192);
      size_t d = mt_analysis_stack_codes(a, mt_analysis_object_stack(a, i), st, 8192);
      assert_int_equal(n, d);
      assert_memory_equal(bt, st, n * sizeof *bt);
    }
    mt_analysis_free(a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exact),
      cmocka_unit_test(test_backtraces_golden),
      cmocka_unit_test(test_coverage),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
