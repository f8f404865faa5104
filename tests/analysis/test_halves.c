/* The passes that split their objects between two threads past a million
 * objects, on a trace of mt_gen_trace that has more (argv[1]: its path):
 * the live heap's series, bit for bit against the timeline made while
 * reading (mt_timeline_load, one pass in order), and a second time from
 * the kept series; the flame graph read by backtrace against the summary's
 * object-by-object sums (counts exact, estimates within rounding), its
 * unfiltered total to the bit. */
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
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_series), cmocka_unit_test(test_flame)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  unlink(path);
  return rc;
}
