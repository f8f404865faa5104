/* The viewer's answers on a trace whose stack is 300,000 frames deep (a
 * recursion through two functions, which the call tree does not merge),
 * computed on a thread with a 256 KiB stack, as a request thread might
 * have: nothing may recurse once per frame. Each answer must be one
 * well-formed JSON object (tests/fuzz/json_check.h), the flame graph's
 * callees must nest as deep as the stack (a 300,001-level chain), and the
 * paths and leaks must carry every frame of their stacks. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "answers.h"
#include "json_check.h"
#include "memtrace/analysis.h"
#include "memtrace/format.h"

#define DEPTH 300000

static int resolve(void *ctx, uint64_t code, const mt_location **locs, size_t *n) {
  static mt_location l;
  (void)ctx;
  l = (mt_location){"deep.c", code == 1 ? "ping" : code == 2 ? "pong" : "main",
                    (uint32_t)code, 0, 1};
  *locs = &l;
  *n = 1;
  return 0;
}

/* main, then ping and pong in turn: DEPTH frames, outermost first. */
static mt_vsnap *deep_snapshot(void) {
  int fd = memfd_create("deep", 0);
  assert_true(fd >= 0);
  mt_trace_info info = {.sample_rate = 1, .word_size = 64, .executable_name = "deep",
                        .host_name = "h", .runtime_params = "", .pid = 1,
                        .start_time = 1, .context = ""};
  mt_writer_options opt = {.version = 2, .fd = fd, .resolve = resolve};
  mt_writer *w;
  assert_int_equal(mt_writer_open(&w, &info, &opt), MT_OK);
  uint64_t *bt = malloc(DEPTH * sizeof *bt), id;
  assert_non_null(bt);
  bt[0] = 3;
  for (size_t i = 1; i < DEPTH; i++) bt[i] = 1 + i % 2;
  assert_int_equal(mt_writer_alloc(w, 10, 0, 4, 4, MT_SOURCE_EXTERNAL, bt, DEPTH, &id), MT_OK);
  assert_int_equal(mt_writer_alloc(w, 20, 0, 2, 2, MT_SOURCE_EXTERNAL, bt, DEPTH / 2, NULL),
                   MT_OK);
  assert_int_equal(mt_writer_collect(w, 30, 0, id), MT_OK);
  assert_int_equal(mt_writer_close(w), MT_OK);
  free(bt);
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  mt_analysis *a;
  assert_int_equal(mt_analysis_load(&a, path, NULL, NULL), MT_OK);
  close(fd);
  mt_vsnap *s = mt_vsnap_new(a, "deep", 1);
  assert_non_null(s);
  return s;
}

typedef struct job {
  mt_vsnap *s;
  int built;
  int rc[MT_VANSWERS];
  char *text[MT_VANSWERS];
  size_t len[MT_VANSWERS];
} job;

static void *answer_all(void *arg) {
  job *jb = arg;
  jb->built = mt_vsnap_build(jb->s);
  /* the differential answers too: the trace against itself */
  jb->s->base = jb->s->a;
  jb->s->base_tree = jb->s->tree;
  jb->s->base_name = "deep";
  mt_vquery q;
  mt_vquery_init(&q);
  q.min = 0; /* every node of the flame graph */
  for (int k = 0; k < MT_VANSWERS; k++) {
    mt_json j;
    mt_json_init(&j);
    jb->rc[k] = mt_vendpoints[k].answer(jb->s, &q, &j);
    jb->text[k] = mt_json_take(&j, &jb->len[k]);
    mt_json_free(&j);
  }
  return NULL;
}

static const char *answer_text(const job *jb,
                               int (*answer)(const mt_vsnap *, const mt_vquery *, mt_json *)) {
  for (int k = 0; k < MT_VANSWERS; k++)
    if (mt_vendpoints[k].answer == answer) return jb->text[k];
  fail_msg("no such answer");
  return NULL;
}

/* Occurrences of `what` in text, by hand: a sanitizer checks the whole rest
 * of the text at each strstr or memmem, quadratic on answers of tens of
 * megabytes. */
static size_t count(const char *text, const char *what) {
  size_t n = 0;
  for (const char *p = text; *p; p++) {
    size_t k = 0;
    while (what[k] && p[k] == what[k]) k++;
    n += what[k] == '\0';
  }
  return n;
}

static void answers_on_a_small_stack(void **state) {
  (void)state;
  job jb = {.s = deep_snapshot()};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  assert_int_equal(pthread_attr_setstacksize(&attr, 256 * 1024), 0);
  pthread_t t;
  assert_int_equal(pthread_create(&t, &attr, answer_all, &jb), 0);
  pthread_join(t, NULL);
  pthread_attr_destroy(&attr);
  assert_int_equal(jb.built, 0);
  for (int k = 0; k < MT_VANSWERS; k++) {
    assert_int_equal(jb.rc[k], 0);
    assert_non_null(jb.text[k]);
    size_t at;
    if (!fuzz_json_ok(jb.text[k], jb.len[k], &at))
      fail_msg("answer %d: not JSON at byte %zu of %zu", k, at, jb.len[k]);
  }
  /* the flame graph: one chain of main, then ping and pong, to the end */
  const char *flame = answer_text(&jb, mt_vanswer_flame);
  size_t nest = 0;
  for (const char *p = strstr(flame, "\"callees\""); p && *p; p++) nest += *p == '[';
  assert_true(nest >= DEPTH);
  /* the paths: both stacks with every frame, the deeper first (more bytes);
   * the leaks: the one never collected, the shallower */
  const char *paths = answer_text(&jb, mt_vanswer_paths);
  assert_non_null(strstr(paths, "\"sites_total\":2,"));
  const char *first = strstr(paths, "\"frames_total\":"), *second;
  assert_non_null(first);
  assert_true(strncmp(first, "\"frames_total\":300000,", 22) == 0);
  second = strstr(first + 1, "\"frames_total\":");
  assert_non_null(second);
  assert_true(strncmp(second, "\"frames_total\":150000,", 22) == 0);
  assert_int_equal(count(paths, "{\"function\":"), DEPTH + DEPTH / 2);
  const char *leaks = answer_text(&jb, mt_vanswer_leaks);
  assert_non_null(strstr(leaks, "\"stacks_total\":1,"));
  assert_non_null(strstr(leaks, "\"frames_total\":150000,"));
  assert_int_equal(count(leaks, "{\"function\":"), DEPTH / 2);
  for (int k = 0; k < MT_VANSWERS; k++) free(jb.text[k]);
  mt_vsnap_unref(jb.s);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(answers_on_a_small_stack)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
