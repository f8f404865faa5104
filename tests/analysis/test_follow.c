/* A trace read as it grows (mt_follow) against whole loads: the file is
 * written in steps cut at random bytes (inside headers, inside packets),
 * and after each step the followed analysis must answer as a load of the
 * file as it then is, to the byte of every JSON answer; once the writer is
 * done, as a load of the whole trace (warnings included). The inputs are
 * the shared traces memtrace wrote, and traces of mt_gen_trace: several
 * domains (v3), stacks that recur, stacks nearly all distinct. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "memtrace/analysis.h"
#include "memtrace/calltree.h"
#include "memtrace/json.h"
#include "memtrace/rank.h"
#include "memtrace/stats.h"

static const char *gen_trace; /* mt_gen_trace's path (argv[1]) */
static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc(*n);
  assert_non_null(b);
  assert_int_equal(fread(b, 1, *n, f), *n);
  fclose(f);
  return b;
}

static char *take(mt_json *j) {
  size_t len;
  char *s = mt_json_take(j, &len);
  assert_non_null(s);
  mt_json_free(j);
  return s;
}

/* Every answer of a under f, as one JSON text (t: a's call tree). */
static char *answers(mt_analysis *a, const mt_calltree *t, const char *key, const char *value) {
  mt_filter f;
  mt_filter_init(&f);
  char err[256];
  if (key) assert_int_equal(mt_filter_set(&f, key, value, err, sizeof err), MT_OK);
  mt_json j;
  mt_json_init(&j);
  mt_json_arr(&j);
  mt_json_summary(&j, a, &f);
  mt_ranking *r;
  mt_group_by by[] = {MT_BY_FUNCTION, MT_BY_LINE, MT_BY_STACK};
  for (size_t k = 0; k < 3; k++) {
    mt_rank_spec s = {by[k], MT_ORDER_BYTES, 20, 0};
    assert_int_equal(mt_rank(a, &f, &s, &r), MT_OK);
    mt_json_ranking(&j, r, &f);
    mt_ranking_free(r);
  }
  if (mt_leaks(a, &f, MT_ORDER_BYTES, 20, 0, &r) == MT_OK) {
    mt_json_leaks(&j, r, &f);
    mt_ranking_free(r);
  }
  mt_timeline *tl;
  assert_int_equal(mt_timeline_compute(a, &f, 64, &tl), MT_OK);
  mt_json_timeline(&j, tl, &f);
  mt_timeline_free(tl);
  mt_stats *st;
  assert_int_equal(mt_stats_compute(a, &f, 4, &st), MT_OK);
  mt_json_stats(&j, st, &f);
  mt_stats_free(st);
  mt_flame_spec spec = {-1, 0.001, 0};
  mt_flame *g;
  assert_int_equal(mt_flame_compute(t, a, &f, &spec, &g), MT_OK);
  mt_json_flame(&j, a, g);
  mt_flame_free(g);
  mt_json_end_arr(&j);
  return take(&j);
}

static const char *filters[][2] = {{NULL, NULL},        {"live", "peak"}, {"size", "100.."},
                                   {"collected", "never"}, {"alloc", "0.2..0.6"}};

/* The followed analysis (its tree extended step by step) answers as a
 * whole load of the file at `path` does. */
static void same_as_load(mt_follow *fw, const mt_calltree *t, const char *path, int whole) {
  mt_analysis *a = mt_follow_analysis(fw), *b;
  assert_int_equal(mt_analysis_load(&b, path, NULL, NULL), MT_OK);
  assert_int_equal(mt_analysis_object_count(a), mt_analysis_object_count(b));
  assert_int_equal(mt_analysis_duration(a), mt_analysis_duration(b));
  mt_calltree *tb;
  assert_int_equal(mt_calltree_build(b, NULL, MT_TREE_MERGE_ADJACENT, 0, &tb), MT_OK);
  assert_int_equal(mt_calltree_size(t), mt_calltree_size(tb));
  /* a half of the checks with the stacks' index, which steps drop */
  if (next_rand() & 1) {
    assert_int_equal(mt_analysis_index_stacks(a), MT_OK);
    assert_int_equal(mt_analysis_index_stacks(b), MT_OK);
  }
  size_t nf = sizeof filters / sizeof *filters;
  for (size_t k = 0; k < nf; k++) {
    /* every filter at the end; else the unfiltered answers and one more */
    if (!whole && k && k != 1 + next_rand() % (nf - 1)) continue;
    char *x = answers(a, t, filters[k][0], filters[k][1]);
    char *y = answers(b, tb, filters[k][0], filters[k][1]);
    if (strcmp(x, y) != 0) fail_msg("%s, filter %s: the followed analysis answers\n%.600s\nwhere a load answers\n%.600s", path, filters[k][0] ? filters[k][0] : "none", x, y);
    free(x);
    free(y);
  }
  mt_json j1, j2;
  mt_json_init(&j1);
  mt_json_init(&j2);
  mt_json_info(&j1, a);
  mt_json_info(&j2, b);
  char *x = take(&j1), *y = take(&j2);
  if (whole) assert_string_equal(x, y); /* cut files warn of a truncation */
  if (whole) {
    const char *wa = mt_analysis_warning(a), *wb = mt_analysis_warning(b);
    assert_true((wa == NULL) == (wb == NULL));
    if (wa) assert_string_equal(wa, wb);
    assert_int_equal(mt_analysis_truncated(a), mt_analysis_truncated(b));
  }
  free(x);
  free(y);
  mt_calltree_free(tb);
  mt_analysis_free(b);
}

static void append(int fd, const char *bytes, size_t n) {
  while (n) {
    ssize_t w = write(fd, bytes, n);
    assert_true(w > 0);
    bytes += w;
    n -= (size_t)w;
  }
}

/* Writes src into a new file in `steps` random steps, following it;
 * `end_at` bytes of it in all (a cut one ends truncated). With several
 * domains (`domains`), a step holds back the events whose order a domain's
 * next packet may still change, which a load of the cut file reads as the
 * end: those steps hold at most the load's objects, and the end all. */
static void follow_in_steps(const char *src, size_t steps, size_t end_at, int domains) {
  size_t n;
  char *bytes = slurp(src, &n);
  if (end_at == 0 || end_at > n) end_at = n;
  char path[64];
  snprintf(path, sizeof path, "/tmp/mt_test_follow_%d.ctf", (int)getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  size_t at = 0;
  mt_follow *fw = NULL;
  mt_calltree *t = NULL;
  char err[512];
  while (at < end_at) {
    size_t k = (size_t)(next_rand() % (2 * end_at / steps + 2)) + 1;
    if (next_rand() % 4 == 0) k = (size_t)(next_rand() % 40) + 1; /* inside a header */
    if (k > end_at - at) k = end_at - at;
    append(fd, bytes + at, k);
    at += k;
    if (!fw) {
      int rc = mt_follow_open(&fw, path, err, sizeof err);
      if (rc != MT_OK) { /* no whole first packet yet */
        assert_int_equal(rc, MT_ERR_CORRUPT);
        assert_null(fw);
        continue;
      }
    }
    /* in pieces of a random bound, or all at once */
    uint64_t limit = next_rand() % 3 ? 0 : next_rand() % 5000 + 1, got;
    do assert_int_equal(mt_follow_read(fw, limit, &got), MT_OK);
    while (limit && got == limit);
    mt_analysis *a = mt_follow_analysis(fw);
    if (!t) assert_int_equal(mt_calltree_build(a, NULL, MT_TREE_MERGE_ADJACENT | MT_TREE_EXTENSIBLE, 0, &t), MT_OK);
    else assert_int_equal(mt_calltree_extend(t, a), MT_OK);
    assert_false(mt_follow_described_late(fw));
    assert_true(mt_follow_offset(fw) <= at);
    if (domains) {
      mt_analysis *b;
      assert_int_equal(mt_analysis_load(&b, path, NULL, NULL), MT_OK);
      assert_true(mt_analysis_object_count(a) <= mt_analysis_object_count(b));
      mt_analysis_free(b);
    } else if (next_rand() % 3 == 0 || at == end_at) {
      same_as_load(fw, t, path, 0);
    }
  }
  close(fd);
  assert_non_null(fw);
  assert_int_equal(mt_follow_end(fw, NULL), MT_OK);
  assert_int_equal(mt_calltree_extend(t, mt_follow_analysis(fw)), MT_OK);
  same_as_load(fw, t, path, 1);
  if (end_at < n) assert_true(mt_analysis_warning(mt_follow_analysis(fw)) != NULL);
  /* the writer is done: nothing more, even if the file grows */
  uint64_t got;
  assert_int_equal(mt_follow_read(fw, 0, &got), MT_OK);
  assert_int_equal(got, 0);
  mt_calltree_free(t);
  mt_follow_close(fw);
  unlink(path);
  free(bytes);
}

static void test_shared_traces(void **state) {
  (void)state;
  static const char *names[] = {"ocamlopt", "workload-1e-3", "workload-1e-4"};
  for (int k = 0; k < 3; k++) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s.ctf", MT_SHARED_TRACES, names[k]);
    assert_int_equal(access(p, R_OK), 0);
    follow_in_steps(p, 25, 0, 0);
  }
}

/* A trace of mt_gen_trace with these arguments into path. */
static void generate(const char *path, const char *const *args) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    const char *argv[16] = {gen_trace, path};
    size_t k = 2;
    for (; *args && k < 15; args++) argv[k++] = *args;
    argv[k] = NULL;
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    execv(gen_trace, (char *const *)argv);
    _exit(127);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_generated(void **state) {
  (void)state;
  if (!gen_trace) skip();
  static const char *cases[][10] = {
      {"--events", "100000", "--seed", "3", "--version", "3", "--domains", "4", NULL},
      {"--events", "80000", "--seed", "5", "--stacks", "300", NULL},
      {"--events", "60000", "--seed", "9", NULL}};
  char path[64];
  snprintf(path, sizeof path, "/tmp/mt_test_follow_gen_%d.ctf", (int)getpid());
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    generate(path, cases[k]);
    follow_in_steps(path, 30, 0, k == 0);
  }
  /* a writer that stopped inside a packet: truncated as a load says */
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  follow_in_steps(path, 10, (size_t)st.st_size - 1000, 0);
  unlink(path);
}

/* A tree built otherwise refuses to extend; errors name what failed. */
static void test_refusals(void **state) {
  (void)state;
  char p[1024], err[512];
  snprintf(p, sizeof p, "%s/ocamlopt.ctf", MT_SHARED_TRACES);
  mt_follow *fw;
  assert_int_equal(mt_follow_open(&fw, "/nonexistent/trace.ctf", err, sizeof err), MT_ERR_IO);
  assert_null(fw);
  assert_non_null(strstr(err, "/nonexistent/trace.ctf"));
  assert_int_equal(mt_follow_open(&fw, p, err, sizeof err), MT_OK);
  assert_int_equal(mt_follow_read(fw, 0, NULL), MT_OK);
  mt_calltree *t;
  assert_int_equal(mt_calltree_build(mt_follow_analysis(fw), NULL, MT_TREE_MERGE_ADJACENT, 0, &t), MT_OK);
  assert_int_equal(mt_calltree_extend(t, mt_follow_analysis(fw)), MT_ERR_INVALID);
  mt_calltree_free(t);
  mt_follow_close(fw);
}

int main(int argc, char **argv) {
  if (argc > 1) gen_trace = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shared_traces),
      cmocka_unit_test(test_generated),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
