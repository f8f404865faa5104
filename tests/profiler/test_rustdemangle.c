/* Rust's symbol names (rustdemangle.h): the readable forms of hundreds of
 * real names of both schemes (rust_names.txt, from GNU c++filt), the
 * output's bound, and malformed or hostile names, which must be declined
 * (-1), never read out of bounds or run away. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tracer/runtimes/rustdemangle.h"

#define CAP 4096

static long demangle(const char *sym, char *out) { return mt__rust_demangle(sym, out, CAP); }

static void test_golden(void **state) {
  (void)state;
  FILE *f = fopen(MT_RUST_NAMES, "r");
  assert_non_null(f);
  char line[16384], out[CAP];
  int pairs = 0, v0 = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#') continue;
    line[strcspn(line, "\n")] = 0;
    char *tab = strchr(line, '\t');
    assert_non_null(tab);
    *tab = 0;
    const char *sym = line, *want = tab + 1;
    long n = demangle(sym, out);
    if (n < 0 || strcmp(out, want) != 0) fail_msg("%s\n want %s\n got  %s", sym, want, n < 0 ? "-1" : out);
    assert_int_equal((size_t)n, strlen(want));
    /* the bound is exact: room for the name and its NUL, not one byte less */
    char tight[CAP];
    assert_int_equal(mt__rust_demangle(sym, tight, (size_t)n + 1), n);
    assert_string_equal(tight, want);
    assert_int_equal(mt__rust_demangle(sym, tight, (size_t)n), -1);
    pairs++;
    v0 += sym[1] == 'R';
  }
  fclose(f);
  assert_true(pairs > 600);
  assert_true(v0 > 400 && pairs - v0 > 100);
}

static void test_by_hand(void **state) {
  (void)state;
  static const char *const cases[][2] = {
      {"_RNvC3foo3bar", "foo::bar"},
      {"_RNvCs1234_7mycrate4site", "mycrate::site"},
      {"_RNvC3foo3bar.llvm.1234", "foo::bar"},
      {"_RNCNvC3foo3bar0", "foo::bar::{closure#0}"},
      {"_RNCNvC3foo3bars_0", "foo::bar::{closure#1}"},
      {"_RINvC3foo3barjE", "foo::bar::<usize>"},
      {"_RINvC3foo3barKj1f_E", "foo::bar::<31>"},
      {"_RINvC3foo3barKanff_E", "foo::bar::<-255>"},
      {"_RINvC3foo3barKb1_Kc61_E", "foo::bar::<true, 'a'>"},
      {"_RINvC3foo3barTjEE", "foo::bar::<(usize,)>"},
      {"_RNvMC3fooNtB2_3Bar3baz", "<foo::Bar>::baz"},
      {"_RNvXC3fooNtB2_3BarNtB2_5Trait3baz", "<foo::Bar as foo::Trait>::baz"},
      {"_RNvC4core6_5under", "core::5under"},
      {"_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write"},
      {"_ZN4core3fmt5write17h0123456789abcdefE.llvm.77", "core::fmt::write"},
      {"_ZN10_$LT$a$GT$3fmt17h0123456789abcdefE", "<a>::fmt"},
      {"_ZN9a..b$u7b$3fmt17h0123456789abcdefE", "a::b{::fmt"},
      {"_ZN3foo17h0123456789abcdefE", "foo"},
  };
  char out[CAP];
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    long n = demangle(cases[i][0], out);
    if (n < 0 || strcmp(out, cases[i][1]) != 0)
      fail_msg("%s\n want %s\n got  %s", cases[i][0], cases[i][1], n < 0 ? "-1" : out);
  }
}

static void test_declined(void **state) {
  (void)state;
  static const char *const cases[] = {
      "", "_", "_R", "_RC", "_RC3fo", "_RNvC3foo", "_RNvC3foo3bar3baz", /* junk after */
      "_R0NvC3foo3bar",                                                /* version 0, written */
      "_RCu3foo",                                                      /* Punycode */
      "_RB_",                                                          /* back to itself */
      "_RNvB5_3foo",                                                   /* forwards */
      "_RC99999999999999999999999foo",                                 /* length overflows */
      "_RINvC3foo3barKc0_E",                                           /* char 0 */
      "_RINvC3foo3barKb2_E",                                           /* bool 2 */
      "_RINvC3foo3barKhg_E",                                           /* not hex */
      "_RINvC3foo3barKhn1_E",                                          /* negative u8 */
      "_RINvC3foo3barE",                                               /* ok but: */
      "_RNvC3foo3bar$",                                                /* empty after cut */
      "_ZN3foo3barE", "_ZN3foo3barEv", "_ZN17h0123456789abcdefE", /* C++; a hash alone */
      "_ZN3foo3bar17h0123456789abcdeE", "_ZN3foo3bar17h0123456789abcdefEx",
      "_ZN5a$XX$3bar17h0123456789abcdefE", "_ZN5a$u0$3bar17h0123456789abcdefE",
      "_ZN4a$u73bar17h0123456789abcdefE", "_ZN9", "_ZN0E", "foo", "_Z3foov",
  };
  char out[CAP];
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    long n = demangle(cases[i], out);
    if (strcmp(cases[i], "_RINvC3foo3barE") == 0) { /* generics may be empty */
      assert_int_equal(n, (long)strlen("foo::bar::<>"));
      continue;
    }
    if (strcmp(cases[i], "_RNvC3foo3bar$") == 0) { /* '$' starts a suffix */
      assert_int_equal(n, (long)strlen("foo::bar"));
      continue;
    }
    if (n >= 0) fail_msg("%s: accepted as %s", cases[i], out);
  }
  assert_int_equal(mt__rust_demangle(NULL, out, CAP), -1);
  assert_int_equal(mt__rust_demangle("_RNvC3foo3bar", NULL, CAP), -1);
  assert_int_equal(mt__rust_demangle("_RNvC3foo3bar", out, 0), -1);
}

static size_t put_base62(char *p, uint64_t v) {
  if (v == 0) {
    p[0] = '_';
    return 1;
  }
  v--;
  char d[16];
  size_t k = 0;
  do {
    int x = (int)(v % 62);
    d[k++] = (char)(x < 10 ? '0' + x : x < 36 ? 'a' + x - 10 : 'A' + x - 36);
    v /= 62;
  } while (v);
  for (size_t i = 0; i < k; i++) p[i] = d[k - 1 - i];
  p[k] = '_';
  return k + 1;
}

/* a::b::<(u8, u8), ((u8, u8), (u8, u8)), ...>: each level a pair of the
 * one below, by back-reference. */
static size_t pairs_of_pairs(char *sym, int levels) {
  strcpy(sym, "_RINvC1a1b");
  size_t len = strlen(sym), prev = len - 2;
  memcpy(sym + len, "ThhE", 4);
  len += 4;
  for (int level = 0; level < levels; level++) {
    size_t here = len - 2;
    sym[len++] = 'T';
    for (int k = 0; k < 2; k++) {
      sym[len++] = 'B';
      len += put_base62(sym + len, prev);
    }
    sym[len++] = 'E';
    prev = here;
  }
  sym[len++] = 'E';
  sym[len] = 0;
  return len;
}

/* 2^40 types in 40 levels: declined at the output's bound, at once (the
 * same at 3 levels is read in full). Nesting beyond any stack: declined. */
static void test_hostile(void **state) {
  (void)state;
  char sym[8192], out[CAP], want[CAP] = "a::b::<", level[CAP] = "(u8, u8)", next[CAP];
  for (int i = 0; i <= 3; i++) {
    if (i) {
      int w = snprintf(next, sizeof next, "(%s, %s)", level, level);
      assert_true(w > 0 && (size_t)w < sizeof next);
      strcpy(level, next);
    }
    strcat(want, i ? ", " : "");
    strcat(want, level);
  }
  strcat(want, ">");
  pairs_of_pairs(sym, 3);
  assert_int_equal(demangle(sym, out), (long)strlen(want));
  assert_string_equal(out, want);
  pairs_of_pairs(sym, 40);
  assert_int_equal(demangle(sym, out), -1);

  char *deep = malloc(200000);
  assert_non_null(deep);
  strcpy(deep, "_RINvC1a1b");
  size_t n = strlen(deep);
  for (int i = 0; i < 100000; i++) deep[n++] = 'S'; /* [[[...]]] */
  strcpy(deep + n, "hE");
  assert_int_equal(demangle(deep, out), -1);
  free(deep);
}

/* Whether a name is read does not hang on the room given for it: an
 * inherent impl's own path is read but not printed, so 300 generic
 * arguments there cost work and no output. The work bound once grew with
 * cap, and this name, read into 4 KiB, was declined into the 10 bytes its
 * output needs (fuzz_rustdemangle found one such). */
static void test_work_not_tied_to_room(void **state) {
  (void)state;
  char sym[1024] = "_RNvMINtC1a1b", out[CAP], tight[16];
  size_t n = strlen(sym);
  for (int i = 0; i < 300; i++) sym[n++] = 'h';
  strcpy(sym + n, "Eh3new");
  assert_int_equal(demangle(sym, out), 9);
  assert_string_equal(out, "<u8>::new");
  assert_int_equal(mt__rust_demangle(sym, tight, 10), 9);
  assert_string_equal(tight, "<u8>::new");
  assert_int_equal(mt__rust_demangle(sym, tight, 9), -1);
  /* fuzz_rustdemangle's input: accepted at 4 KiB as "<!>", so at 4 bytes */
  char found[256] = "_RMMMB_AaB_";
  memset(found + strlen(found), 'Q', 126);
  strcat(found, "AB_B_z");
  assert_int_equal(demangle(found, out), 3);
  assert_int_equal(mt__rust_demangle(found, tight, 4), 3);
  assert_string_equal(tight, "<!>");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden),
      cmocka_unit_test(test_by_hand),
      cmocka_unit_test(test_declined),
      cmocka_unit_test(test_hostile),
      cmocka_unit_test(test_work_not_tied_to_room),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
