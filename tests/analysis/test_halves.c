/* The passes that split their objects between two threads past a million
 * objects, on a trace of mt_gen_trace that has more (argv[1]: its path):
 * the live heap's series, bit for bit against the timeline made while
 * reading (mt_timeline_load, one pass in order), and a second time from
 * the kept series; the flame graph read by backtrace against the summary's
 * object-by-object sums, to the bit; the rankings by site and by stack
 * and the leaks, summed by backtrace on two threads, against the objects
 * summed one by one in allocation order, to the bit; the histograms'
 * halves against the statistics' one pass, to the bit. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "memtrace/analysis.h"
#include "memtrace/calltree.h"
#include "memtrace/rank.h"
#include "memtrace/stats.h"

static const char *gen_trace;
static char path[64];

static const char *filters[][2] = {{NULL, NULL},          {"live", "peak"},
                                   {"size", "100..10000"}, {"source", "external"},
                                   {"collected", "never"}, {"inside", "main"}};

static void set(mt_filter *f, size_t k) {
  char err[256];
  mt_filter_init(f);
  if (filters[k][0]) assert_int_equal(mt_filter_set(f, filters[k][0], filters[k][1], err, sizeof err), MT_OK);
}

static void test_series(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof filters / sizeof *filters; k++) {
    mt_filter f;
    set(&f, k);
    if (!mt_filter_decided_at_allocation(&f) && filters[k][0] && strcmp(filters[k][0], "live") == 0)
      continue; /* the peak is known only at the end: no timeline while reading */
    mt_analysis *whole, *a;
    mt_timeline *x, *y, *z;
    assert_int_equal(mt_analysis_load(&whole, path, NULL, NULL), MT_OK);
    assert_true(mt_analysis_object_count(whole) > (1u << 20));
    assert_int_equal(mt_timeline_compute(whole, &f, 300, &x), MT_OK);
    assert_int_equal(mt_timeline_compute(whole, &f, 300, &z), MT_OK); /* the kept series */
    assert_int_equal(mt_timeline_load(&a, &y, path, &f, 300, NULL, NULL), MT_OK);
    assert_memory_equal(x->live, y->live, 300 * sizeof *x->live);
    assert_memory_equal(x->filtered, y->filtered, 300 * sizeof *x->filtered);
    assert_memory_equal(x->live, z->live, 300 * sizeof *x->live);
    assert_memory_equal(x->filtered, z->filtered, 300 * sizeof *x->filtered);
    mt_timeline_free(x);
    mt_timeline_free(y);
    mt_timeline_free(z);
    mt_analysis_free(a);
    mt_analysis_free(whole);
  }
}

static void test_flame(void **state) {
  (void)state;
  mt_analysis *a;
  assert_int_equal(mt_analysis_load(&a, path, NULL, NULL), MT_OK);
  mt_calltree *t;
  assert_int_equal(mt_calltree_build(a, NULL, MT_TREE_MERGE_ADJACENT, 0, &t), MT_OK);
  for (size_t k = 0; k < sizeof filters / sizeof *filters; k++) {
    mt_filter f;
    set(&f, k);
    mt_tally want;
    assert_int_equal(mt_analysis_tally(a, &f, &want), MT_OK);
    assert_true(want.objects > 0);
    mt_flame_spec spec = {-1, 0, 0};
    mt_flame *g;
    assert_int_equal(mt_flame_compute(t, a, &f, &spec, &g), MT_OK);
    const mt_tally *got = &g->total;
    assert_int_equal(got->samples, want.samples);
    assert_int_equal(got->objects, want.objects);
    /* the halves' sums add up exactly: the tally of one pass, to the bit */
    assert_memory_equal(got, &want, sizeof want);
    /* with no cut, the nodes hold every object the graph shows */
    assert_int_equal(g->callees[0].total.samples, want.samples);
    mt_flame_free(g);
  }
  mt_calltree_free(t);
  mt_analysis_free(a);
}

static void same_rows(const mt_ranking *x, const mt_ranking *y) {
  assert_int_equal(x->groups, y->groups);
  assert_int_equal(x->nrows, y->nrows);
  assert_memory_equal(&x->total, &y->total, sizeof x->total);
  for (size_t i = 0; i < x->nrows; i++) {
    const mt_rank_row *p = &x->rows[i], *q = &y->rows[i];
    assert_memory_equal(&p->tally, &q->tally, sizeof p->tally);
    assert_true(p->oldest == q->oldest && p->newest == q->newest);
    assert_int_equal(p->backtrace, q->backtrace);
    assert_int_equal(p->frames_total, q->frames_total);
  }
}

/* By stack: by backtrace (few backtraces, many objects) against a stack
 * budget too small for the backtraces' fingerprints, which groups object
 * by object. */
static void stacks_both_ways(const mt_analysis *a, const mt_filter *f, int leaks,
                             mt_rank_order order) {
  mt_ranking *x, *y;
  mt_rank_spec spec = {MT_BY_STACK, order, 25, 0};
  unsetenv("MEMTRACE_STACK_RANK_BUDGET");
  int rx = leaks ? mt_leaks(a, f, order, 25, 0, &x) : mt_rank(a, f, &spec, &x);
  setenv("MEMTRACE_STACK_RANK_BUDGET", "64", 1);
  int ry = leaks ? mt_leaks(a, f, order, 25, 0, &y) : mt_rank(a, f, &spec, &y);
  unsetenv("MEMTRACE_STACK_RANK_BUDGET");
  assert_int_equal(rx, ry);
  if (rx == MT_OK) {
    assert_true(x->nrows > 0);
    same_rows(x, y);
    mt_ranking_free(x);
    mt_ranking_free(y);
  }
}

/* By function: each row against its objects' sums, one by one in
 * allocation order. */
static void functions_one_by_one(const mt_analysis *a, const mt_filter *f) {
  mt_ranking *r;
  mt_rank_spec spec = {MT_BY_FUNCTION, MT_ORDER_BYTES, 0, 0};
  assert_int_equal(mt_rank(a, f, &spec, &r), MT_OK);
  size_t nobj = mt_analysis_object_count(a), nfn = mt_analysis_function_count(a), n;
  uint8_t *mask = malloc(nobj + 1);
  mt_tally *want = calloc(nfn + 1, sizeof *want);
  assert_int_equal(mt_analysis_select(a, f, mask, &n), MT_OK);
  for (size_t i = 0; i < nobj; i++) {
    if (!mask[i]) continue;
    uint32_t code = mt_analysis_object_site(a, i);
    size_t nf = 0;
    const mt_frame *fr = code == MT_NO_CODE ? NULL : mt_analysis_code_frames(a, code, &nf);
    mt_tally_object(a, i, &want[nf ? fr[nf - 1].function : nfn]);
  }
  size_t rows = 0;
  for (size_t k = 0; k <= nfn; k++) rows += want[k].objects > 0;
  assert_int_equal(r->nrows, rows);
  for (size_t i = 0; i < r->nrows; i++) {
    const mt_rank_row *row = &r->rows[i];
    assert_int_equal(row->site.kind, MT_SITE_LOCATION);
    size_t k = 0;
    while (k < nfn && strcmp(mt_analysis_function_name(a, (uint32_t)k), row->site.function)) k++;
    assert_true(k < nfn);
    assert_memory_equal(&row->tally, &want[k], sizeof want[k]);
  }
  free(mask);
  free(want);
  mt_ranking_free(r);
}

static void test_rankings(void **state) {
  (void)state;
  mt_analysis *a;
  assert_int_equal(mt_analysis_load(&a, path, NULL, NULL), MT_OK);
  assert_true(mt_analysis_object_count(a) > 4 * mt_analysis_backtrace_count(a));
  for (size_t k = 0; k < sizeof filters / sizeof *filters; k++) {
    mt_filter f;
    set(&f, k);
    functions_one_by_one(a, &f);
    for (int order = MT_ORDER_BYTES; order <= MT_ORDER_OLDEST; order++) {
      stacks_both_ways(a, &f, 0, (mt_rank_order)order);
      stacks_both_ways(a, &f, 1, (mt_rank_order)order);
    }
  }
  mt_analysis_free(a);
}

/* The histograms' halves against mt_stats_compute's one pass in order. */
static void test_histograms(void **state) {
  (void)state;
  mt_analysis *a;
  assert_int_equal(mt_analysis_load(&a, path, NULL, NULL), MT_OK);
  for (size_t k = 0; k < sizeof filters / sizeof *filters; k++) {
    mt_filter f;
    set(&f, k);
    mt_stats *h, *s;
    assert_int_equal(mt_stats_histograms(a, &f, &h), MT_OK);
    assert_int_equal(mt_stats_compute(a, &f, 1, &s), MT_OK);
    assert_true(s->all.all.objects > 0);
    assert_memory_equal(h->size_log2, s->size_log2, sizeof h->size_log2);
    assert_memory_equal(h->life_fine, s->life_fine, sizeof h->life_fine);
    assert_memory_equal(&h->all.never, &s->all.never, sizeof h->all.never);
    mt_stats_free(h);
    mt_stats_free(s);
  }
  mt_analysis_free(a);
}

int main(int argc, char **argv) {
  if (argc < 2) return 77;
  gen_trace = argv[1];
  snprintf(path, sizeof path, "/tmp/mt_test_halves_%d.ctf", (int)getpid());
  pid_t pid = fork();
  if (pid == 0) {
    freopen("/dev/null", "w", stdout);
    execl(gen_trace, gen_trace, path, "--events", "2600000", "--seed", "4", "--stacks", "400",
          (char *)NULL);
    _exit(127);
  }
  int st;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_series), cmocka_unit_test(test_flame),
                                     cmocka_unit_test(test_rankings),
                                     cmocka_unit_test(test_histograms)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  unlink(path);
  return rc;
}
