/* Figures for people (src/base/human.c): the one way every command prints
 * sizes, counts and durations; durations by the viewer's rule
 * (fmtSeconds in src/viewer/assets/app.js), so both give a time alike. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/human.h"

static char buf[80];

static void test_durations_as_the_viewer(void **state) {
  (void)state;
  /* microseconds in; what fmtSeconds(us / 1e6) shows */
  static const struct { double us; const char *want; } cases[] = {
      {0, "0 s"},           {0.5, "0.50 us"},      {78, "78.0 us"},
      {999, "999 us"},      {1000, "1.00 ms"},     {1500, "1.50 ms"},
      {6123, "6.12 ms"},    {45600, "45.6 ms"},    {456000, "456 ms"},
      {1e6, "1.00 s"},      {1.234e6, "1.23 s"},   {59.9e6, "59.9 s"},
      {119e6, "119 s"},     {125e6, "2 min 5 s"},  {3599e6, "59 min 59 s"},
      {7200e6, "2 h 0 min"}, {12000e6, "3 h 20 min"}, {-1500, "-1.50 ms"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
    assert_string_equal(mt_human_duration(buf, sizeof buf, cases[k].us), cases[k].want);
}

static void test_bytes_and_counts(void **state) {
  (void)state;
  assert_string_equal(mt_human_bytes(buf, sizeof buf, 512), "512 B");
  assert_string_equal(mt_human_bytes(buf, sizeof buf, 1260), "1.23 KiB");
  assert_string_equal(mt_human_bytes(buf, sizeof buf, 1 << 30), "1.00 GiB");
  assert_string_equal(mt_human_signed_bytes(buf, sizeof buf, -512), "-512 B");
  assert_string_equal(mt_human_count(buf, sizeof buf, 9999), "9999");
  assert_string_equal(mt_human_count(buf, sizeof buf, 12345), "12.3k");
  assert_string_equal(mt_human_percent(buf, sizeof buf, 1, 0), "-");
  assert_string_equal(mt_human_percent(buf, sizeof buf, 1, 1e5), "<0.1%");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_durations_as_the_viewer),
      cmocka_unit_test(test_bytes_and_counts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
