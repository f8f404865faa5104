/* The perf map reader (src/tracer/runtimes/perfmap.h): lines as runtimes write
 * them, a file growing between lookups, code replaced at the same
 * addresses, lines that do not parse, a file not the user's; and against a
 * model (the last line holding the address) on random maps read in several
 * growths; a map written anew; names cut; a large map's memory; the
 * lines read since, for the watcher of renamed code; jitdumps' records,
 * and the jitdump found among the process's mappings. */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "tracer/runtimes/perfmap.h"
#include "tracer/symbols/symbols.h"

static char path[64];

static int setup(void **state) {
  (void)state;
  snprintf(path, sizeof path, "/tmp/mt-perfmap-test-%ld.map", (long)getpid());
  unlink(path);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  unlink(path);
  return 0;
}

/* text written to file, opened with mode ("a" or "w") */
static void write_to(const char *file, const char *mode, const char *text) {
  FILE *f = fopen(file, mode);
  assert_non_null(f);
  assert_int_equal(fputs(text, f) >= 0, 1);
  assert_int_equal(fclose(f), 0);
}

static void append(const char *text) { write_to(path, "a", text); }

static void assert_name(mt__perfmap *pm, uint64_t addr, const char *want) {
  const char *got = mt__perfmap_name(pm, path, addr);
  if (!want) {
    if (got) fail_msg("%#llx: want none, got %s", (unsigned long long)addr, got);
    return;
  }
  if (!got || strcmp(got, want) != 0)
    fail_msg("%#llx: want %s, got %s", (unsigned long long)addr, want, got ? got : "(none)");
}

static void no_file(void **state) {
  (void)state;
  mt__perfmap pm = {0};
  assert_name(&pm, 0x1000, NULL);
  append("1000 10 late\n"); /* written after the first look: found */
  assert_name(&pm, 0x1000, "late");
  mt__perfmap_clear(&pm);
}

static void lines_and_bounds(void **state) {
  (void)state;
  append("7f0000001000 40 JS:~work /tmp/app.js:2:14\n"
         "7f0000002000 1c8 py::f:/tmp/x.py\n"
         "0x7f0000003000 0x10 with 0x prefixes\n"
         "7F0000004000 8 upper case\r\n");
  mt__perfmap pm = {0};
  assert_name(&pm, 0x7f0000000fff, NULL);
  assert_name(&pm, 0x7f0000001000, "JS:~work /tmp/app.js:2:14");
  assert_name(&pm, 0x7f000000103f, "JS:~work /tmp/app.js:2:14");
  assert_name(&pm, 0x7f0000001040, NULL); /* the end is not in it */
  assert_name(&pm, 0x7f00000021c7, "py::f:/tmp/x.py");
  assert_name(&pm, 0x7f0000003008, "with 0x prefixes");
  assert_name(&pm, 0x7f0000004000, "upper case"); /* and no \r */
  mt__perfmap_clear(&pm);
}

static void growth_and_partial_lines(void **state) {
  (void)state;
  append("1000 100 first\n2000 10 sec");
  mt__perfmap pm = {0};
  assert_name(&pm, 0x1010, "first");
  assert_name(&pm, 0x2000, NULL); /* its line is not ended yet */
  append("ond\n3000 10 third\n");
  assert_name(&pm, 0x2000, "second");
  assert_name(&pm, 0x3000, "third");
  assert_name(&pm, 0x1010, "first");
  mt__perfmap_clear(&pm);
}

static void later_line_wins(void **state) {
  (void)state;
  /* code replaced at reused addresses, ranges nested and overlapping */
  append("1000 1000 old big\n1400 100 old small\n");
  mt__perfmap pm = {0};
  assert_name(&pm, 0x1450, "old small");
  assert_name(&pm, 0x1800, "old big");
  append("1000 800 new low half\n");
  assert_name(&pm, 0x1450, "new low half");
  assert_name(&pm, 0x1fff, "old big");
  assert_name(&pm, 0x2000, NULL);
  assert_name(&pm, 0x1900, "old big");
  mt__perfmap_clear(&pm);
}

static void bad_lines_skipped(void **state) {
  (void)state;
  char longline[70000];
  memset(longline, 'x', sizeof longline);
  memcpy(longline, "5000 10 ", 8);
  longline[sizeof longline - 2] = '\n';
  longline[sizeof longline - 1] = '\0';
  append("zz 10 not hex\n"
         "1000 0 empty\n"
         "1100 10\n"
         "1200 10 \n"
         "ffffffffffffff00 1000 past the top\n"
         "12345678901234567 10 too many digits\n"
         "1300\n"
         "\n"
         "1400 10 good\n");
  append(longline); /* longer than a read: skipped whole */
  append("6000 10 after the long line\n");
  mt__perfmap pm = {0};
  assert_name(&pm, 0x1000, NULL);
  assert_name(&pm, 0x1100, NULL);
  assert_name(&pm, 0x1200, NULL);
  assert_name(&pm, 0xffffffffffffff10, NULL);
  assert_name(&pm, 0x1400, "good");
  assert_name(&pm, 0x5000, NULL);
  assert_name(&pm, 0x6000, "after the long line");
  /* a long line not ended yet: read again once it is, then skipped */
  static char unended[150000];
  memset(unended, 'y', sizeof unended - 1);
  memcpy(unended, "7000 10 ", 8);
  append(unended);
  assert_name(&pm, 0x7000, NULL);
  append("\n8000 10 after the unended line\n");
  assert_name(&pm, 0x8000, "after the unended line");
  assert_name(&pm, 0x7000, NULL);
  assert_name(&pm, 0x6000, "after the long line");
  mt__perfmap_clear(&pm);
}

/* A name longer than MT__PERFMAP_MAX_NAME is cut there; the next line is
 * read as usual. */
static void long_name_cut(void **state) {
  (void)state;
  static char line[6000], want[MT__PERFMAP_MAX_NAME + 1];
  memcpy(line, "2000 10 ", 8);
  for (size_t i = 8; i < sizeof line - 2; i++) line[i] = (char)('a' + i % 26);
  line[sizeof line - 2] = '\n';
  memcpy(want, line + 8, MT__PERFMAP_MAX_NAME);
  append(line);
  append("3000 10 next\n");
  mt__perfmap pm = {0};
  assert_name(&pm, 0x2000, want);
  assert_name(&pm, 0x3000, "next");
  mt__perfmap_clear(&pm);
}

/* What is kept of a map is its ranges: a map of 100k lines with names of
 * 60-odd bytes takes at most 64 bytes a line (24 for the range and where
 * its name is, 8 for the reach, up to as much again of room to grow), and
 * every name still comes back right. A map removed since names nothing. */
static void large_map_kept_small(void **state) {
  (void)state;
  enum { LINES = 100000 };
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  for (unsigned i = 0; i < LINES; i++) /* addresses out of order, as runtimes reuse space */
    fprintf(f, "%x 10 JS:*function_number_%u_with_a_long_name /srv/app/lib/module_%u.js:%u:7\n",
            0x100000 + (i * 7919u % LINES) * 0x10, i, i % 97, i % 1000 + 1);
  assert_int_equal(fclose(f), 0);
  mt__perfmap pm = {0};
  struct mallinfo2 m0 = mallinfo2(); /* the C library's heap in use, mapped blocks too */
  char want[128];
  for (unsigned i = 0; i < LINES; i += 997) {
    snprintf(want, sizeof want, "JS:*function_number_%u_with_a_long_name /srv/app/lib/module_%u.js:%u:7",
             i, i % 97, i % 1000 + 1);
    assert_name(&pm, 0x100000 + (i * 7919u % LINES) * 0x10 + 0xf, want);
  }
  struct mallinfo2 m1 = mallinfo2();
  size_t bytes = (m1.uordblks + m1.hblkhd) - (m0.uordblks + m0.hblkhd);
  if (bytes > (size_t)LINES * 64)
    fail_msg("%zu bytes for %d lines: %.1f a line", bytes, LINES, (double)bytes / LINES);
  unlink(path);
  assert_name(&pm, 0x100000, NULL);
  mt__perfmap_clear(&pm);
}

static void another_users_file(void **state) {
  (void)state;
  append("1000 10 planted\n");
  if (geteuid() != 0) skip(); /* only root can give it away */
  assert_int_equal(chown(path, 65534, 65534), 0);
  mt__perfmap pm = {0};
  assert_name(&pm, 0x1000, NULL);
  mt__perfmap_clear(&pm);
}

/* The map written anew from its start, as `jcmd PID Compiler.perfmap`
 * writes the JVM's: shorter, longer (what was read then ends mid-line), of
 * the same size, or another file put in its place. Each time only the new
 * lines name code. */
static void rewrite(const char *text) { write_to(path, "w", text); }

static void written_anew(void **state) {
  (void)state;
  append("1000 10 first\n2000 10 second\n3000 10 third\n");
  mt__perfmap pm = {0};
  assert_name(&pm, 0x2000, "second");
  rewrite("2000 10 shorter\n"); /* truncated, below what was read */
  assert_name(&pm, 0x2000, "shorter");
  assert_name(&pm, 0x1000, NULL);
  assert_name(&pm, 0x3000, NULL);
  rewrite("4000 10 longer than before, and then some\n2000 10 again\n");
  assert_name(&pm, 0x2000, "again"); /* not a line read from the middle */
  assert_name(&pm, 0x4000, "longer than before, and then some");
  rewrite("4000 10 LONGER THAN BEFORE, AND THEN SOME\n2000 10 AGAIN\n"); /* the same size */
  assert_name(&pm, 0x4000, "LONGER THAN BEFORE, AND THEN SOME");
  assert_name(&pm, 0x2000, "AGAIN");
  /* another file renamed into its place, longer, with the same bytes
   * where the last read ended */
  char other[80];
  snprintf(other, sizeof other, "%s.new", path);
  write_to(other, "w", "7000 10 LONGER THAN BEFORE, AND THEN SOME\n2000 10 AGAIN\n5000 10 renamed\n");
  assert_int_equal(rename(other, path), 0);
  assert_name(&pm, 0x5000, "renamed");
  assert_name(&pm, 0x7000, "LONGER THAN BEFORE, AND THEN SOME");
  assert_name(&pm, 0x4000, NULL);
  append("6000 10 appended after\n"); /* and growth is read as before */
  assert_name(&pm, 0x6000, "appended after");
  assert_name(&pm, 0x2000, "AGAIN");
  mt__perfmap_clear(&pm);
}

static void another_path_read_anew(void **state) {
  (void)state;
  append("1000 10 parent's\n");
  mt__perfmap pm = {0};
  assert_name(&pm, 0x1000, "parent's");
  char other[80];
  snprintf(other, sizeof other, "%s.child", path);
  write_to(other, "w", "1000 10 child's\n");
  const char *got = mt__perfmap_name(&pm, other, 0x1000);
  unlink(other);
  assert_non_null(got);
  assert_string_equal(got, "child's");
  mt__perfmap_clear(&pm);
}

/* Random maps, written in several growths, looked up at random addresses
 * after each: the name of the last line holding the address. */
static void against_a_model(void **state) {
  (void)state;
  enum { LINES = 3000, GROWTHS = 6, LOOKS = 4000 };
  static uint64_t start[LINES], end[LINES];
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (int round = 0; round < 5; round++) {
    unlink(path);
    mt__perfmap pm = {0};
    int written = 0;
    for (int g = 0; g < GROWTHS; g++) {
      FILE *f = fopen(path, "a");
      assert_non_null(f);
      int upto = LINES * (g + 1) / GROWTHS;
      for (; written < upto; written++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        start[written] = 0x100000 + ((seed >> 20) % 0x40000);
        end[written] = start[written] + 1 + ((seed >> 44) % (round == 4 ? 0x800 : 0x80));
        fprintf(f, "%llx %llx line%d\n", (unsigned long long)start[written],
                (unsigned long long)(end[written] - start[written]), written);
      }
      fclose(f);
      for (int k = 0; k < LOOKS; k++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t a = 0xff000 + ((seed >> 24) % 0x42000);
        int want = -1;
        for (int i = written; i-- > 0;)
          if (start[i] <= a && a < end[i]) {
            want = i;
            break;
          }
        char name[32];
        snprintf(name, sizeof name, "line%d", want);
        assert_name(&pm, a, want < 0 ? NULL : name);
      }
    }
    mt__perfmap_clear(&pm);
  }
}

/* Names taken apart where they say where their code comes from. */
/* The lines read since the watcher last took them: by lookups and
 * refreshes alike; all of them when the map is written anew. */
static void fresh_lines_noted(void **state) {
  (void)state;
  mt__perfmap pm = {0};
  append("1000 10 a\n");
  assert_name(&pm, 0x1000, "a");
  assert_int_equal(pm.nfresh, 0); /* not watched then */
  pm.watch = 1;
  append("2000 20 b\n3000 8 c\n40");
  mt__perfmap_refresh(&pm, path);
  assert_int_equal(pm.nfresh, 2);
  assert_int_equal(pm.fresh_all, 0);
  uint64_t seen = 0;
  for (size_t i = 0; i < pm.nfresh; i++) {
    if (pm.fresh[i].start == 0x2000 && pm.fresh[i].end == 0x2020) seen |= 1;
    if (pm.fresh[i].start == 0x3000 && pm.fresh[i].end == 0x3008) seen |= 2;
  }
  assert_int_equal(seen, 3);
  pm.nfresh = 0;
  append("00 4 d\n"); /* the partial line ended: noted once whole */
  assert_name(&pm, 0x4000, "d");
  assert_int_equal(pm.nfresh, 1);
  assert_int_equal(pm.fresh[0].start, 0x4000);
  pm.nfresh = 0;
  mt__perfmap_refresh(&pm, path); /* not grown: nothing */
  assert_int_equal(pm.nfresh, 0);
  rewrite("1000 10 e\n");
  mt__perfmap_refresh(&pm, path);
  assert_int_equal(pm.fresh_all, 1);
  assert_int_equal(pm.watch, 1);
  assert_name(&pm, 0x1000, "e");
  mt__perfmap_clear(&pm);
}

/* The symbolizer's watch over code it named by the map (symbols.h): the
 * codes a later line names otherwise are reported, those named the same
 * again are not; a map written anew renames nothing that kept its name. */
static uint64_t renamed_pcs[8];
static size_t nrenamed;

static void on_renamed(void *ctx, uint64_t pc) {
  (void)ctx;
  if (nrenamed < 8) renamed_pcs[nrenamed] = pc;
  nrenamed++;
}

static int was_renamed(uint64_t pc) {
  for (size_t i = 0; i < nrenamed && i < 8; i++)
    if (renamed_pcs[i] == pc) return 1;
  return 0;
}

static void assert_function(mt__symbols *s, uint64_t code, uint64_t pc, const char *want) {
  const mt_location *l;
  size_t n;
  assert_int_equal(mt__symbols_lookup(s, code, pc, &l, &n), 0);
  assert_int_equal(n, 1);
  if (strcmp(l[0].defname, want) != 0) fail_msg("%#llx: want %s, got %s", (unsigned long long)pc, want, l[0].defname);
}

static void watched_codes_renamed(void **state) {
  (void)state;
  char map[64], want[64], small[8] = "x";
  mt__perfmap_path(map, sizeof map);
  snprintf(want, sizeof want, "/tmp/perf-%ld.map", (long)getpid());
  assert_string_equal(map, want);
  mt__perfmap_path(small, sizeof small); /* too small: empty */
  assert_string_equal(small, "");
  /* code in no module: an anonymous mapping's three pages */
  char *m = mmap(NULL, 3 * 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(m != MAP_FAILED);
  uint64_t b = (uint64_t)(uintptr_t)m, a = b + 0x10, bb = b + 0x40, c = b + 0x1010, d = b + 0x2000;
  char text[512];
  snprintf(text, sizeof text,
           "%llx 20 JS:*a /x.js:1:1\n%llx 20 JS:*b /x.js:2:1\n%llx 20 JS:*c /x.js:3:1\n"
           "%llx 10 JS:*d /x.js:4:1\n",
           (unsigned long long)a, (unsigned long long)bb, (unsigned long long)c,
           (unsigned long long)d);
  write_to(map, "w", text);
  mt__symbols *s = mt__symbols_new(0);
  assert_non_null(s);
  assert_int_equal(mt__symbols_jit_watched(s), 0);
  /* a code is its return address: the call is at pc - 1 */
  assert_function(s, a + 1, a + 1, "JS:a"); /* V8's tier marks left out */
  assert_function(s, bb + 1, bb + 1, "JS:b");
  assert_function(s, c + 1, c + 1, "JS:c");
  assert_function(s, d + 1, d + 1, "JS:d");
  assert_int_equal(mt__symbols_jit_watched(s), 1);
  nrenamed = 0;
  mt__symbols_jit_poll(s, on_renamed, NULL);
  assert_int_equal(nrenamed, 0); /* nothing written since */
  /* b replaced; a named the same again; one line over c's page and d's */
  snprintf(text, sizeof text, "%llx 20 JS:*b2 /y.js:2:1\n%llx 20 JS:*a /x.js:1:1\n%llx 1010 JS:*wide /y.js:9:1\n",
           (unsigned long long)bb, (unsigned long long)a, (unsigned long long)(b + 0x1000));
  write_to(map, "a", text);
  mt__symbols_jit_poll(s, on_renamed, NULL);
  assert_int_equal(nrenamed, 3);
  assert_true(was_renamed(bb + 1) && was_renamed(c + 1) && was_renamed(d + 1));
  /* their new codes named by the new lines; the old ones keep their names */
  assert_function(s, bb + 1 + (1ull << 47), bb + 1, "JS:b2");
  assert_function(s, c + 1 + (1ull << 47), c + 1, "JS:wide");
  assert_function(s, bb + 1, bb + 1, "JS:b");
  /* the map written anew (shorter), its last lines only: read again
   * whole, nothing renamed; then a renamed there */
  write_to(map, "w", text);
  nrenamed = 0;
  mt__symbols_jit_poll(s, on_renamed, NULL);
  assert_int_equal(nrenamed, 0);
  snprintf(text, sizeof text, "%llx 20 JS:*a2 /x.js:1:1\n%llx 20 JS:*b2 /y.js:2:1\n",
           (unsigned long long)a, (unsigned long long)bb);
  write_to(map, "w", text);
  mt__symbols_jit_poll(s, on_renamed, NULL);
  assert_int_equal(nrenamed, 1);
  assert_true(was_renamed(a + 1));
  mt__symbols_free(s);
  unlink(map);
  munmap(m, 3 * 4096);
}

/* fn: the function part; mark: its tier mark's offset (0: none) */
static void check_where_v8(const char *name, const char *fn, size_t mark, int anonymous,
                           const char *file, unsigned line, unsigned col) {
  mt__perfmap_where w;
  mt__perfmap_where_of(name, &w);
  char got_file[256] = "(none)";
  if (w.file) snprintf(got_file, sizeof got_file, "%.*s", (int)w.file_len, w.file);
  if (w.fn_len != strlen(fn) || strncmp(name, fn, w.fn_len) != 0 || w.anonymous != anonymous ||
      w.mark != mark || strcmp(got_file, file ? file : "(none)") != 0 || w.line != line ||
      w.col != col)
    fail_msg("%s: got \"%.*s\" mark %zu%s %s:%u:%u", name, (int)w.fn_len, name, w.mark,
             w.anonymous ? " (anonymous)" : "", got_file, w.line, w.col);
}

static void check_where(const char *name, const char *fn, const char *file, unsigned line,
                        unsigned col) {
  check_where_v8(name, fn, 0, 0, file, line, col);
}

static void where_names_say(void **state) {
  (void)state;
  check_where_v8("JS:~work /tmp/app.js:2:14", "JS:~work", 3, 0, "/tmp/app.js", 2, 14);
  check_where_v8("JS:^alloc node:buffer:391:30", "JS:^alloc", 3, 0, "node:buffer", 391, 30);
  check_where_v8("JS:+m /a.js:1:2", "JS:+m", 3, 0, "/a.js", 1, 2);
  check_where("JS:work /a.js:1:2", "JS:work", "/a.js", 1, 2); /* no tier said */
  check_where("RegExp:^a+ /a.js:1:2", "RegExp:^a+", "/a.js", 1, 2); /* a pattern, no tier */
  /* V8's functions without names, scripts without names */
  check_where_v8("Eval:~ /tmp/s36/j.js:1:1", "Eval:~", 5, 1, "/tmp/s36/j.js", 1, 1);
  check_where_v8("JS:~ node:internal/util:801:18", "JS:~", 3, 1, "node:internal/util", 801, 18);
  check_where_v8("JS:* :1:20", "JS:*", 3, 1, "", 1, 20);
  check_where_v8("LazyCompile: /a.js:2:3", "LazyCompile:", 0, 1, "/a.js", 2, 3);
  check_where_v8("JS:*f :1:20", "JS:*f", 3, 0, "", 1, 20);
  check_where_v8("JS:~~ /a.js:1:1", "JS:~~", 3, 0, "/a.js", 1, 1); /* a function named "~" */
  check_where("JS :~ /a.js:1:1", "JS :~", "/a.js", 1, 1);   /* no kind */
  check_where(":~ /a.js:1:1", ":~", "/a.js", 1, 1);
  check_where("f :1:2", "f", "", 1, 2);
  check_where_v8("LazyCompile:*f  /a/b.js:10", "LazyCompile:*f", 12, 0, "/a/b.js", 10, 0);
  check_where("py::work:/tmp/x.py", "py::work", "/tmp/x.py", 0, 0);
  check_where("py::<module>:<frozen os>", "py::<module>", "<frozen os>", 0, 0);
  check_where("py::nofile", "py::nofile", NULL, 0, 0);
  check_where("py:::x", "py:::x", NULL, 0, 0);
  check_where("Builtin:RecordWriteSaveFP", "Builtin:RecordWriteSaveFP", NULL, 0, 0);
  check_where("jit_stub [generated]", "jit_stub [generated]", NULL, 0, 0);
  check_where("Lcom/x/Y;.run()V", "Lcom/x/Y;.run()V", NULL, 0, 0);
  check_where("f :12", "f :12", NULL, 0, 0);             /* no file before the line */
  check_where(" /a.js:1", " /a.js:1", NULL, 0, 0);       /* no function */
  check_where("f a.js:1234567890", "f a.js:1234567890", NULL, 0, 0); /* 10 digits */
  check_where("f a.js:x:1", "f", "a.js:x", 1, 0);
  check_where("", "", NULL, 0, 0);
}

/* ---- jitdumps ---- */

/* A jitdump being built: a header, then records (jitdump_* below). */
typedef struct jd {
  unsigned char *b;
  size_t n, cap;
} jd;

static void jd_put(jd *d, const void *p, size_t len) {
  if (d->n + len > d->cap) {
    d->cap = (d->n + len) * 2;
    d->b = realloc(d->b, d->cap);
    assert_non_null(d->b);
  }
  memcpy(d->b + d->n, p, len);
  d->n += len;
}

static void jd_u32(jd *d, uint32_t v) { jd_put(d, &v, 4); }
static void jd_u64(jd *d, uint64_t v) { jd_put(d, &v, 8); }

static void jd_header(jd *d) {
  jd_u32(d, 0x4A695444); /* magic */
  jd_u32(d, 1);          /* version */
  jd_u32(d, 40);         /* the header's size */
  jd_u32(d, 62);         /* EM_X86_64 */
  jd_u32(d, 0);
  jd_u32(d, (uint32_t)getpid());
  jd_u64(d, 123);        /* timestamp */
  jd_u64(d, 0);          /* flags */
}

/* A code load record of code [addr, addr + size), its code `code_len`
 * bytes (zeros). */
static void jd_load(jd *d, uint64_t addr, uint64_t size, const char *name, size_t code_len) {
  size_t len = 16 + 40 + strlen(name) + 1 + code_len;
  jd_u32(d, 0);
  jd_u32(d, (uint32_t)len);
  jd_u64(d, 1000);
  jd_u32(d, 1), jd_u32(d, 2);      /* pid, tid */
  jd_u64(d, addr), jd_u64(d, addr); /* vma, code_addr */
  jd_u64(d, size);
  jd_u64(d, 7); /* code_index */
  jd_put(d, name, strlen(name) + 1);
  for (size_t i = 0; i < code_len; i++) jd_put(d, "", 1);
}

/* A record of another kind (2: line tables, 4: unwinding), len bytes. */
static void jd_other(jd *d, uint32_t id, size_t len) {
  jd_u32(d, id);
  jd_u32(d, (uint32_t)len);
  jd_u64(d, 1000);
  for (size_t i = 16; i < len; i++) jd_put(d, "\xff", 1);
}

/* bytes [from, to) of d appended to the file (from 0: written anew) */
static void jd_write(const jd *d, size_t from, size_t to) {
  FILE *f = fopen(path, from ? "a" : "w");
  assert_non_null(f);
  assert_int_equal(fwrite(d->b + from, 1, to - from, f), to - from);
  assert_int_equal(fclose(f), 0);
}

static void jitdump_records(void **state) {
  (void)state;
  jd d = {0};
  jd_header(&d);
  jd_load(&d, 0x7f0000001000, 0x40, "py::work:/app/j.py", 0x40);
  jd_other(&d, 2, 100);                                    /* line tables */
  jd_load(&d, 0x7f0000002000, 0x10, "wasm[0]::function[3]", 0x10);
  jd_other(&d, 4, 70000);                                  /* past a read's buffer */
  jd_load(&d, 0x7f0000003000, 0x20, "big", 100000);        /* its code past it too */
  jd_load(&d, 0x7f0000004000, 0x8, "after the big one", 8);
  jd_load(&d, 0x7f0000005000, 0, "empty", 0);              /* no code: none */
  jd_load(&d, 0x7f0000001000, 0x40, "JS:replaced /app/r.js:1:1", 0); /* the later wins */
  size_t whole = d.n;
  jd_write(&d, 0, whole);
  mt__perfmap pm = {0};
  assert_name(&pm, 0x7f0000000fff, NULL);
  assert_name(&pm, 0x7f0000001000, "JS:replaced /app/r.js:1:1");
  assert_name(&pm, 0x7f0000002008, "wasm[0]::function[3]");
  assert_name(&pm, 0x7f0000002010, NULL);
  assert_name(&pm, 0x7f000000301f, "big");
  assert_name(&pm, 0x7f0000004000, "after the big one");
  assert_name(&pm, 0x7f0000005000, NULL);
  assert_int_equal(pm.jitdump, 1);
  assert_int_equal(pm.n, 5);
  /* grown a record at a time, in pieces: a record not whole is read once it is */
  jd_load(&d, 0x7f0000006000, 0x30, "grown", 5);
  size_t mid = whole + 30;
  jd_write(&d, whole, mid);
  assert_name(&pm, 0x7f0000006000, NULL);
  jd_write(&d, mid, d.n);
  assert_name(&pm, 0x7f0000006010, "grown");
  /* a record whose size cannot be one: nothing after it is read */
  jd_u32(&d, 0), jd_u32(&d, 8), jd_u64(&d, 0);
  size_t bad = d.n;
  jd_load(&d, 0x7f0000007000, 0x10, "beyond", 0);
  jd_write(&d, bad - 16, d.n);
  assert_name(&pm, 0x7f0000007000, NULL);
  assert_name(&pm, 0x7f0000006010, "grown");
  mt__perfmap_clear(&pm);
  free(d.b);
}

/* Records whose name lies across the reader's 64 KiB buffers, at many
 * places: each is read whole. A header alone names nothing; a file shorter
 * than a header is read once it is one. */
static void jitdump_boundaries(void **state) {
  (void)state;
  for (size_t pad = 65400; pad < 65536 + 64; pad += 13) {
    jd d = {0};
    jd_header(&d);
    mt__perfmap pm = {0};
    jd_write(&d, 0, 20);
    assert_name(&pm, 0x1000, NULL);
    jd_write(&d, 20, d.n);
    assert_name(&pm, 0x1000, NULL);
    assert_int_equal(pm.jitdump, 1);
    jd_other(&d, 4, pad - d.n); /* the next record starts at pad */
    jd_load(&d, 0x1000, 0x10, "a name across the boundary", 3);
    jd_load(&d, 0x2000, 0x10, "the next", 0);
    jd_write(&d, 40, d.n);
    assert_name(&pm, 0x1000, "a name across the boundary");
    assert_name(&pm, 0x2000, "the next");
    mt__perfmap_clear(&pm);
    free(d.b);
  }
}

/* The jitdump of this process found among its mappings, as a runtime maps
 * it (perf's convention): by its name, jit-PID.dump; not while unmapped. */
static void jitdump_found_mapped(void **state) {
  (void)state;
  char dir[] = "/tmp/mt-jitdump-XXXXXX", file[128], found[256];
  assert_non_null(mkdtemp(dir));
  snprintf(file, sizeof file, "%s/jit-%ld.dump", dir, (long)getpid());
  FILE *f = fopen(file, "w");
  assert_non_null(f);
  assert_int_equal(fputs("JiTD and more", f) >= 0, 1);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(mt__jitdump_path(found, sizeof found), 0);
  int fd = open(file, O_RDONLY);
  assert_true(fd >= 0);
  void *m = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
  assert_true(m != MAP_FAILED);
  close(fd);
  assert_int_equal(mt__jitdump_path(found, sizeof found), 1);
  assert_string_equal(found, file);
  assert_int_equal(mt__jitdump_path(found, strlen(file)), 0); /* no room */
  munmap(m, 4096);
  assert_int_equal(mt__jitdump_path(found, sizeof found), 0);
  unlink(file);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(no_file, setup, teardown),
      cmocka_unit_test_setup_teardown(lines_and_bounds, setup, teardown),
      cmocka_unit_test_setup_teardown(growth_and_partial_lines, setup, teardown),
      cmocka_unit_test_setup_teardown(later_line_wins, setup, teardown),
      cmocka_unit_test_setup_teardown(bad_lines_skipped, setup, teardown),
      cmocka_unit_test_setup_teardown(long_name_cut, setup, teardown),
      cmocka_unit_test_setup_teardown(large_map_kept_small, setup, teardown),
      cmocka_unit_test_setup_teardown(another_users_file, setup, teardown),
      cmocka_unit_test_setup_teardown(written_anew, setup, teardown),
      cmocka_unit_test_setup_teardown(another_path_read_anew, setup, teardown),
      cmocka_unit_test_setup_teardown(against_a_model, setup, teardown),
      cmocka_unit_test_setup_teardown(fresh_lines_noted, setup, teardown),
      cmocka_unit_test(watched_codes_renamed),
      cmocka_unit_test_setup_teardown(jitdump_records, setup, teardown),
      cmocka_unit_test_setup_teardown(jitdump_boundaries, setup, teardown),
      cmocka_unit_test(jitdump_found_mapped),
      cmocka_unit_test(where_names_say),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
