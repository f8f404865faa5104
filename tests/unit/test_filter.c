/* The filter language (memtrace/filter.h): every parameter in every form,
 * both spellings (the viewer's parameters, the command line's options),
 * every bad form and the message that names its bad part, the words. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "memtrace/filter.h"

static mt_filter set_ok(const char *name, const char *value) {
  mt_filter f;
  char err[512] = "";
  mt_filter_init(&f);
  int rc = mt_filter_set(&f, name, value, err, sizeof err);
  if (rc != MT_OK) fail_msg("%s=%s: %d %s", name, value, rc, err);
  return f;
}

/* A bad value: refused, the filter unchanged, and the message holds each
 * of the `parts` (NULL-terminated). */
static void set_bad(const char *name, const char *value, ...) {
  mt_filter f, before;
  char err[512] = "";
  mt_filter_init(&f);
  f.size_min = 7; /* a condition already there stays */
  before = f;
  assert_int_equal(mt_filter_set(&f, name, value, err, sizeof err), MT_ERR_INVALID);
  assert_memory_equal(&f, &before, sizeof f);
  va_list ap;
  va_start(ap, value);
  for (const char *part; (part = va_arg(ap, const char *));)
    if (!strstr(err, part)) fail_msg("%s=%s: '%s' lacks '%s'", name, value, err, part);
  va_end(ap);
}

static void test_init(void **state) {
  (void)state;
  mt_filter f;
  mt_filter_init(&f);
  assert_true(mt_filter_selects_all(&f));
  assert_false(mt_filter_has_stack_condition(&f));
  assert_int_equal(f.alloc_to, MT_NEVER);
  assert_int_equal(f.size_max, UINT64_MAX);
  char buf[64];
  assert_int_equal(mt_filter_describe(&f, buf, sizeof buf), 4);
  assert_string_equal(buf, "none");
}

static void test_times(void **state) {
  (void)state;
  mt_filter f = set_ok("alloc", "1.5..2");
  assert_int_equal(f.alloc_from, 1500000);
  assert_int_equal(f.alloc_to, 2000000);
  assert_false(mt_filter_selects_all(&f));
  f = set_ok("alloc", "..0.000001");
  assert_int_equal(f.alloc_from, 0);
  assert_int_equal(f.alloc_to, 1);
  f = set_ok("alloc", "3..");
  assert_int_equal(f.alloc_from, 3000000);
  assert_int_equal(f.alloc_to, MT_NEVER);
  f = set_ok("alloc", "1e-3..2E-3");
  assert_int_equal(f.alloc_from, 1000);
  assert_int_equal(f.alloc_to, 2000);
  f = set_ok("alloc", "2..2"); /* empty but not reversed: allowed */
  assert_int_equal(f.alloc_from, f.alloc_to);
  f = set_ok("lifetime", "0.5..1");
  assert_int_equal(f.lifetime_min, 500000);
  assert_int_equal(f.lifetime_max, 1000000);
  f = set_ok("collected", "1..2");
  assert_int_equal(f.collected, MT_COLLECTED_IN);
  assert_int_equal(f.collect_from, 1000000);
  assert_int_equal(f.collect_to, 2000000);
  f = set_ok("collected", "never");
  assert_int_equal(f.collected, MT_COLLECTED_NEVER);
  f = set_ok("live", "0.25");
  assert_int_equal(f.live, MT_LIVE_AT);
  assert_int_equal(f.live_at, 250000);
  assert_int_equal(set_ok("live", "peak").live, MT_LIVE_AT_PEAK);
  assert_int_equal(set_ok("live", "end").live, MT_LIVE_AT_END);
}

static void test_sizes(void **state) {
  (void)state;
  mt_filter f = set_ok("size", "1k..2M");
  assert_int_equal(f.size_min, 1024);
  assert_int_equal(f.size_max, 2 * 1024 * 1024);
  f = set_ok("size", "1.5K..");
  assert_int_equal(f.size_min, 1536);
  assert_int_equal(f.size_max, UINT64_MAX);
  f = set_ok("size", "..3GiB");
  assert_int_equal(f.size_max, 3ull << 30);
  f = set_ok("size", "1TB..1T");
  assert_int_equal(f.size_min, 1ull << 40);
  assert_int_equal(f.size_max, 1ull << 40);
  f = set_ok("size", "100..100");
  assert_int_equal(f.size_min, 100);
  /* fractions of a byte: MIN rounds up, MAX down, so MIN <= bytes <= MAX */
  f = set_ok("size", "1.2..7.6");
  assert_int_equal(f.size_min, 2);
  assert_int_equal(f.size_max, 7);
}

static void test_sources_and_text(void **state) {
  (void)state;
  mt_filter f = set_ok("source", "minor,external");
  assert_int_equal(f.sources, 1u << MT_SOURCE_MINOR | 1u << MT_SOURCE_EXTERNAL);
  assert_int_equal(set_ok("source", "major,,major").sources, 1u << MT_SOURCE_MAJOR);
  /* the two kinds of external objects */
  mt_filter k = set_ok("source", "mapping,heap");
  assert_int_equal(k.sources, MT_FILTER_MAPPINGS | MT_FILTER_HEAP);
  char text[128];
  mt_filter_describe(&k, text, sizeof text);
  assert_string_equal(text, "source mapping,heap");
  f = set_ok("inside", "List.map");
  assert_string_equal(f.inside, "List.map");
  assert_true(mt_filter_has_stack_condition(&f));
  assert_false(mt_filter_selects_all(&f));
  f = set_ok("not_inside", "Gc");
  assert_string_equal(f.not_inside, "Gc");
  f = set_ok("hide", "caml_,,Stdlib");
  assert_true(mt_filter_has_stack_condition(&f));
  assert_true(mt_filter_selects_all(&f)); /* hiding selects no objects */
  assert_true(mt_filter_hides(&f, "caml_alloc"));
  assert_true(mt_filter_hides(&f, "Stdlib__list.map"));
  assert_false(mt_filter_hides(&f, "main"));
  assert_false(mt_filter_hides(&f, "")); /* empty pieces hide nothing */
}

static void test_empty_clears(void **state) {
  (void)state;
  char err[64];
  mt_filter f = set_ok("size", "1..2"), all;
  mt_filter_init(&all);
  assert_int_equal(mt_filter_set(&f, "size", "", err, sizeof err), MT_OK);
  assert_int_equal(mt_filter_set(&f, "inside", NULL, err, sizeof err), MT_OK);
  assert_memory_equal(&f, &all, sizeof f);
  /* a name that is no filter parameter: 1, the filter untouched */
  assert_int_equal(mt_filter_set(&f, "bins", "5", err, sizeof err), 1);
  assert_memory_equal(&f, &all, sizeof f);
}

static void test_bad(void **state) {
  (void)state;
  set_bad("alloc", "5", "'5' is not a range", "FROM..TO", NULL);
  set_bad("alloc", "x..2", "'x' in 'x..2' is not a time in seconds", NULL);
  set_bad("alloc", "1..y", "'y' in '1..y'", NULL);
  set_bad("alloc", "-1..2", "'-1' in '-1..2'", NULL);
  set_bad("alloc", "inf..", "'inf'", NULL);
  set_bad("alloc", "nan..1", "'nan'", NULL);
  set_bad("alloc", "0x10..", "'0x10'", NULL);
  set_bad("alloc", " 1..2", "' 1'", NULL);
  set_bad("alloc", "2..1", "'2..1' is empty: FROM is after TO", NULL);
  set_bad("lifetime", "3..1", "'3..1' is empty: MIN is above MAX", NULL);
  set_bad("lifetime", "3", "write MIN..MAX", NULL);
  set_bad("collected", "2..1", "FROM is after TO", NULL);
  set_bad("size", "abc", "'abc' is not a range", "MIN..MAX", NULL);
  set_bad("size", "1k..x", "'x' in '1k..x' is not a size in bytes", "k, M, G or T", NULL);
  set_bad("size", "1q..", "'1q'", NULL);
  set_bad("size", "1kk..", "'1kk'", NULL);
  set_bad("size", "k..", "'k'", NULL);
  set_bad("size", "2k..1k", "MIN is above MAX", NULL);
  set_bad("live", "soon", "'soon' is not a time in seconds, 'peak' or 'end'", NULL);
  set_bad("collected", "always", "'always' is neither 'never' nor a range", NULL);
  set_bad("collected", "1..a", "'a' in '1..a'", NULL);
  set_bad("source", "stack", "'stack' is not a source (minor, major, external, mapping or heap)", NULL);
  set_bad("source", "minor,stack", "'stack'", NULL);
  set_bad("source", ",", "no source given", NULL);
  char big[5000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  set_bad("inside", big, "longer than 4096 bytes", NULL);
}

/* The command line's spelling: each option, both value forms, the flags
 * without a value, and the errors naming the option. */
static void test_options(void **state) {
  (void)state;
  char *argv[] = {"cmd", "--time",   "1..2",   "--size=1k..", "--live-at-peak", "--inside",
                  "x",   "--hide=a,b", "--never-collected", "--source", "major",
                  "--lifetime", "..1", "--not-inside=y", "TRACE"};
  int argc = (int)(sizeof argv / sizeof *argv), i;
  mt_filter f;
  char err[512];
  mt_filter_init(&f);
  for (i = 1; i < argc; i++) {
    int rc = mt_filter_option(&f, argc, argv, &i, err, sizeof err);
    if (i == argc - 1) assert_int_equal(rc, 0); /* TRACE is no option */
    else assert_int_equal(rc, 1);
  }
  assert_int_equal(f.alloc_from, 1000000);
  assert_int_equal(f.size_min, 1024);
  assert_int_equal(f.live, MT_LIVE_AT_PEAK);
  assert_string_equal(f.inside, "x");
  assert_string_equal(f.hide, "a,b");
  assert_int_equal(f.collected, MT_COLLECTED_NEVER);
  assert_int_equal(f.sources, 1u << MT_SOURCE_MAJOR);
  assert_int_equal(f.lifetime_max, 1000000);
  assert_string_equal(f.not_inside, "y");

  char *live_at[] = {"cmd", "--live-at", "0.5", "--live-at-end"};
  mt_filter_init(&f);
  i = 1;
  assert_int_equal(mt_filter_option(&f, 4, live_at, &i, err, sizeof err), 1);
  assert_int_equal(i, 2);
  assert_int_equal(f.live_at, 500000);
  i = 3;
  assert_int_equal(mt_filter_option(&f, 4, live_at, &i, err, sizeof err), 1);
  assert_int_equal(f.live, MT_LIVE_AT_END);

  char *bad[][2] = {{"--size", "x"}, {"--live-at", "later"}, {"--collected", "1"},
                    {"--source", "gpu"}};
  const char *want[] = {"--size: 'x' is not a range", "--live-at: 'later'",
                        "--collected: '1' is neither", "--source: 'gpu' is not a source"};
  for (size_t k = 0; k < 4; k++) {
    char *args[] = {"cmd", bad[k][0], bad[k][1]};
    mt_filter_init(&f);
    i = 1;
    assert_int_equal(mt_filter_option(&f, 3, args, &i, err, sizeof err), -1);
    if (!strstr(err, want[k])) fail_msg("%s %s: '%s'", bad[k][0], bad[k][1], err);
  }
  char *missing[] = {"cmd", "--time"};
  i = 1;
  assert_int_equal(mt_filter_option(&f, 2, missing, &i, err, sizeof err), -1);
  assert_string_equal(err, "--time needs a value");
  char *longer[] = {"cmd", "--live-at-peakx", "--sizes"};
  i = 1;
  assert_int_equal(mt_filter_option(&f, 3, longer, &i, err, sizeof err), 0);
  i = 2;
  assert_int_equal(mt_filter_option(&f, 3, longer, &i, err, sizeof err), 0);
}

static void test_words(void **state) {
  (void)state;
  mt_filter f;
  char err[64], buf[256], tiny[8];
  mt_filter_init(&f);
  mt_filter_set(&f, "alloc", "1..2", err, sizeof err);
  mt_filter_set(&f, "size", "1k..", err, sizeof err);
  mt_filter_set(&f, "source", "external", err, sizeof err);
  mt_filter_set(&f, "inside", "foo", err, sizeof err);
  mt_filter_set(&f, "hide", "bar", err, sizeof err);
  size_t n = mt_filter_describe(&f, buf, sizeof buf);
  assert_string_equal(buf, "allocated in [1 s, 2 s); size 1.00 KiB or more; source external; "
                           "inside \"foo\"; hiding \"bar\"");
  assert_int_equal(n, strlen(buf));
  /* a short buffer: truncated, terminated, the length needed returned */
  assert_int_equal(mt_filter_describe(&f, tiny, sizeof tiny), n);
  assert_int_equal(strlen(tiny), sizeof tiny - 1);
  mt_filter_init(&f);
  mt_filter_set(&f, "live", "peak", err, sizeof err);
  mt_filter_set(&f, "lifetime", "..0.5", err, sizeof err);
  mt_filter_set(&f, "collected", "3..", err, sizeof err);
  mt_filter_describe(&f, buf, sizeof buf);
  assert_string_equal(buf, "live at the peak; collected from 3 s; lifetime at most 0.5 s");
}

/* mt_filter_names: inside, not_inside, then hide's names, the empty ones
 * skipped; the count past max. */
static void test_names(void **state) {
  (void)state;
  mt_filter f;
  mt_filter_name n[8];
  mt_filter_init(&f);
  assert_int_equal(mt_filter_names(&f, n, 8), 0);
  f.inside = "";
  f.hide = ",,";
  assert_int_equal(mt_filter_names(&f, n, 8), 0);
  f.inside = "Foo";
  f.not_inside = "Bar";
  f.hide = ",a,,bc,";
  assert_int_equal(mt_filter_names(&f, n, 8), 4);
  const char *params[] = {"inside", "not_inside", "hide", "hide"};
  const char *names[] = {"Foo", "Bar", "a", "bc"};
  for (int k = 0; k < 4; k++) {
    assert_string_equal(n[k].param, params[k]);
    assert_int_equal(n[k].len, strlen(names[k]));
    assert_memory_equal(n[k].name, names[k], n[k].len);
  }
  memset(n, 0, sizeof n);
  assert_int_equal(mt_filter_names(&f, n, 1), 4); /* all counted, one written */
  assert_string_equal(n[0].name, "Foo");
  assert_null(n[1].name);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init),    cmocka_unit_test(test_times),
      cmocka_unit_test(test_sizes),   cmocka_unit_test(test_sources_and_text),
      cmocka_unit_test(test_empty_clears), cmocka_unit_test(test_bad),
      cmocka_unit_test(test_options), cmocka_unit_test(test_words),
      cmocka_unit_test(test_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
