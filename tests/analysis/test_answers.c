/* The answers of the analysis library (rankings, leaks, callers, diffs,
 * call trees, flame graphs, hot functions, statistics, profiles) on traces
 * written here at rate 1, where every figure is known; and the same answer
 * reached by different ways (an index, passes in a small budget) on random
 * traces. */
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

#include "analysis/calltree_internal.h" /* a node's `outer` flag */
#include "analysis/load_pass.h"        /* mt__analysis_new */
#include "memtrace/calltree.h"
#include "memtrace/profile.h"
#include "memtrace/rank.h"
#include "memtrace/stats.h"
#include "profile_digest.h"
#include "write_trace.h"


/* Codes: 0x10 main; 0x20 parse (parse.c:5) with lex inlined (lex.h:9);
 * 0x30 helper (h.c:7); 0x31 helper again at another line (h.c:8);
 * 0x40 xmalloc (alloc.c:1); 0x50 py::run (script.py:3); 0x99 undescribed. */
static const mt_location L_MAIN[] = {{"main.c", "main", 1, 0, 0}};
static const mt_location L_PARSE[] = {{"parse.c", "parse", 5, 0, 0}, {"lex.h", "lex", 9, 0, 0}};
static const mt_location L_HELPER[] = {{"h.c", "helper", 7, 0, 0}};
static const mt_location L_HELPER8[] = {{"h.c", "helper", 8, 0, 0}};
static const mt_location L_XMALLOC[] = {{"alloc.c", "xmalloc", 1, 0, 0}};
static const mt_location L_PY[] = {{"script.py", "py::run", 3, 0, 0}};

static int resolve(void *ctx, uint64_t code, const mt_location **l, size_t *n) {
  (void)ctx;
  *n = 1;
  switch (code) {
  case 0x10: *l = L_MAIN; break;
  case 0x20: *l = L_PARSE; *n = 2; break;
  case 0x30: *l = L_HELPER; break;
  case 0x31: *l = L_HELPER8; break;
  case 0x40: *l = L_XMALLOC; break;
  case 0x50: *l = L_PY; break;
  default: *l = NULL; *n = 0;
  }
  return 0;
}

static uint64_t alloc(mt_writer *w, uint64_t t, uint64_t words, mt_source src,
                      const uint64_t *bt, size_t n) {
  uint64_t id;
  assert_int_equal(mt_writer_alloc(w, T0 + t, 0, words, words, src, bt, n, &id), MT_OK);
  return id;
}

/* The trace most tests read (rate 1: samples = words):
 *   t=0   A: main > parse(lex) > xmalloc   10 words   freed at 50
 *   t=10  B: main > helper(7) > xmalloc    20 words   never
 *   t=20  C: main > helper(8) > xmalloc    30 words   never
 *   t=30  A again                           5 words   never (major)
 *   t=40  D: main > helper > helper(8) > #99 (undescribed, no site skip past
 *         2: the site is helper:8)            40 words   freed at 60
 *   t=45  E: (no backtrace)                  1 word    never
 *   t=70  P: main > py::run > xmalloc        8 words   never */
static const uint64_t A[] = {0x10, 0x20, 0x40}, B[] = {0x10, 0x30, 0x40},
                      C[] = {0x10, 0x31, 0x40}, D[] = {0x10, 0x30, 0x31, 0x99},
                      P[] = {0x10, 0x50, 0x40};

static mt_analysis *known_trace(void) {
  mt_writer *w = open_trace(1.0, resolve);
  uint64_t a = alloc(w, 0, 10, MT_SOURCE_EXTERNAL, A, 3);
  alloc(w, 10, 20, MT_SOURCE_EXTERNAL, B, 3);
  alloc(w, 20, 30, MT_SOURCE_EXTERNAL, C, 3);
  alloc(w, 30, 5, MT_SOURCE_MAJOR, A, 3);
  uint64_t d = alloc(w, 40, 40, MT_SOURCE_EXTERNAL, D, 4);
  alloc(w, 45, 1, MT_SOURCE_EXTERNAL, NULL, 0);
  assert_int_equal(mt_writer_collect(w, T0 + 50, 0, a), MT_OK);
  assert_int_equal(mt_writer_collect(w, T0 + 60, 0, d), MT_OK);
  alloc(w, 70, 8, MT_SOURCE_EXTERNAL, P, 3);
  return close_and_load(w);
}

static mt_filter all(void) {
  mt_filter f;
  mt_filter_init(&f);
  return f;
}

static mt_ranking *rank(const mt_analysis *a, const mt_filter *f, mt_group_by by,
                        mt_rank_order order, size_t limit, size_t depth) {
  mt_rank_spec s = {by, order, limit, depth};
  mt_ranking *r;
  assert_int_equal(mt_rank(a, f, &s, &r), MT_OK);
  return r;
}

static void test_rank_sites(void **state) {
  (void)state;
  mt_analysis *a = known_trace();
  mt_filter f = all();
  /* by function: xmalloc 10+20+30+5+8 = 73, helper 40 (D: its site is
   * helper:8 past the undescribed code), the empty backtrace 1 */
  mt_ranking *r = rank(a, &f, MT_BY_FUNCTION, MT_ORDER_BYTES, 0, 0);
  assert_int_equal(r->groups, 3);
  assert_int_equal(r->nrows, 3);
  assert_string_equal(r->rows[0].site.function, "xmalloc");
  assert_int_equal(r->rows[0].tally.samples, 73);
  assert_true(fabs(r->rows[0].bytes.value - 73 * 8) < 1e-9);
  assert_int_equal(r->rows[0].oldest, 0);
  assert_int_equal(r->rows[0].newest, 70);
  assert_string_equal(r->rows[1].site.function, "helper");
  assert_int_equal(r->rows[1].site.line, 0); /* by function: no line */
  assert_int_equal(r->rows[1].tally.samples, 40);
  assert_int_equal(r->rows[2].site.kind, MT_SITE_NONE);
  assert_int_equal(r->total.samples, 114);
  assert_int_equal(r->trace_total.samples, 114);
  char buf[64];
  assert_string_equal(mt_site_text(&r->rows[1].site, 0, buf, sizeof buf), "helper (h.c)");
  assert_string_equal(mt_site_text(&r->rows[2].site, 0, buf, sizeof buf), "(no backtrace)");
  mt_ranking_free(r);
  /* by objects: xmalloc 5 objects first; the limit keeps the first */
  r = rank(a, &f, MT_BY_LINE, MT_ORDER_OBJECTS, 1, 0);
  assert_int_equal(r->nrows, 1);
  assert_int_equal(r->groups, 3);
  assert_string_equal(r->rows[0].site.function, "xmalloc");
  assert_int_equal(r->rows[0].site.line, 1);
  assert_true(fabs(r->rows[0].objects.value - 5) < 1e-9);
  mt_ranking_free(r);
  /* a filter: live at the end, inside helper: B 20, C 30 */
  f.live = MT_LIVE_AT_END;
  f.inside = "help";
  r = rank(a, &f, MT_BY_LINE, MT_ORDER_BYTES, 0, 0);
  assert_int_equal(r->total.samples, 50);
  assert_int_equal(r->trace_total.samples, 114);
  assert_int_equal(r->groups, 1); /* both at xmalloc:1 */
  mt_ranking_free(r);
  /* an order only leaks have */
  mt_rank_spec bad = {MT_BY_LINE, MT_ORDER_OLDEST, 0, 0};
  assert_int_equal(mt_rank(a, &f, &bad, &r), MT_ERR_INVALID);
  mt_analysis_free(a);
}

static void test_rank_stacks(void **state) {
  (void)state;
  mt_analysis *a = known_trace();
  mt_filter f = all();
  mt_ranking *r = rank(a, &f, MT_BY_STACK, MT_ORDER_BYTES, 0, 2);
  /* stacks: D 40, A 15 (two objects), C 30, B 20, P 8, empty 1 */
  assert_int_equal(r->groups, 6);
  assert_int_equal(r->rows[0].tally.samples, 40);
  assert_int_equal(r->rows[0].frames_total, 4); /* #99, helper:8, helper:7, main */
  assert_int_equal(r->rows[0].nframes, 2);      /* depth 2 */
  assert_null(r->rows[0].frames[0].function);
  assert_int_equal(r->rows[0].frames[0].code, 0x99);
  assert_string_equal(r->rows[0].frames[1].function, "helper");
  assert_int_equal(r->rows[0].frames[1].line, 8);
  assert_int_equal(r->rows[1].tally.samples, 30);
  assert_int_equal(r->rows[2].tally.samples, 20);
  assert_int_equal(r->rows[3].tally.samples, 15);
  assert_int_equal(r->rows[3].tally.objects, 2);
  /* A's frames: xmalloc, then parse's inlined lex, then parse, then main */
  assert_string_equal(r->rows[3].frames[0].function, "xmalloc");
  assert_string_equal(r->rows[3].frames[1].function, "lex");
  mt_ranking_free(r);
  /* hiding helper: B and C print as main > xmalloc with different lines?
   * no: xmalloc:1 both, so B and C merge (50); D prints #99 > main */
  f.hide = "helper";
  r = rank(a, &f, MT_BY_STACK, MT_ORDER_BYTES, 0, 0);
  assert_int_equal(r->groups, 5);
  assert_int_equal(r->rows[0].tally.samples, 50);
  assert_int_equal(r->rows[0].frames_total, 2);
  assert_int_equal(r->rows[1].tally.samples, 40);
  assert_int_equal(r->rows[1].frames_total, 2);
  mt_ranking_free(r);
  mt_analysis_free(a);
}

static void test_leaks(void **state) {
  (void)state;
  mt_analysis *a = known_trace();
  mt_filter f = all();
  mt_ranking *r;
  assert_int_equal(mt_leaks(a, &f, MT_ORDER_OLDEST, 0, 0, &r), MT_OK);
  /* never collected: B (10), C (20), A#2 (30), E (45), P (70): oldest first */
  assert_int_equal(r->groups, 5);
  assert_int_equal(r->total.samples, 20 + 30 + 5 + 1 + 8);
  uint64_t want_oldest[] = {10, 20, 30, 45, 70};
  for (int i = 0; i < 5; i++) assert_int_equal(r->rows[i].oldest, want_oldest[i]);
  assert_int_equal(r->rows[2].tally.samples, 5);
  assert_int_equal(r->duration, 70);
  mt_ranking_free(r);
  /* at the peak (t=45: 10+20+30+5+40+1 = 106 live, before A's free): of
   * the leaks, those already allocated then (B, C, A#2, E) */
  f.live = MT_LIVE_AT_PEAK;
  assert_int_equal(mt_leaks(a, &f, MT_ORDER_OLDEST, 0, 0, &r), MT_OK);
  assert_int_equal(r->groups, 4);
  mt_filter lf;
  mt_leaks_filter(&f, &lf);
  assert_int_equal(lf.collected, MT_COLLECTED_NEVER);
  assert_int_equal(lf.live, MT_LIVE_AT_PEAK);
  mt_ranking_free(r);
  mt_analysis_free(a);
}

static void test_callers(void **state) {
  (void)state;
  mt_analysis *a = known_trace();
  mt_filter f = all();
  mt_ranking *r = rank(a, &f, MT_BY_LINE, MT_ORDER_BYTES, 2, 0);
  assert_int_equal(mt_rank_callers(a, &f, r, 3), MT_OK);
  /* xmalloc:1 (73): callers helper (B 20 + C 30 = 50), parse... the
   * heaviest first level is helper (50 of 73), then main */
  const mt_site_callers *c = r->rows[0].callers;
  assert_non_null(c);
  assert_int_equal(c->ncallers, 2);
  assert_string_equal(c->callers[0].function, "helper");
  assert_true(fabs(c->callers[0].share - 50.0 / 73) < 1e-9);
  assert_string_equal(c->callers[1].function, "main");
  assert_true(fabs(c->callers[1].share - 50.0 / 73) < 1e-9);
  /* the program's function under a runtime: py::run, 8 of 73 */
  assert_string_equal(c->program_function, "py::run");
  assert_string_equal(c->program_file, "script.py");
  assert_true(fabs(c->program_share - 8.0 / 73) < 1e-9);
  /* helper:8 (D, 40): its callers are helper (itself at line 7 counts once
   * next to itself) then main */
  c = r->rows[1].callers;
  assert_int_equal(c->ncallers, 1);
  assert_string_equal(c->callers[0].function, "main");
  assert_null(c->program_function);
  mt_ranking_free(r);
  r = rank(a, &f, MT_BY_STACK, MT_ORDER_BYTES, 2, 0);
  assert_int_equal(mt_rank_callers(a, &f, r, 3), MT_ERR_INVALID);
  mt_ranking_free(r);
  mt_analysis_free(a);
}

static void test_diff(void **state) {
  (void)state;
  /* base: 1000 words at parse/lex, 10 at helper; new: 5000 at parse/lex,
   * 10 at helper, and an undescribed site; rate 1: every change exact */
  mt_writer *w = open_trace(1.0, resolve);
  alloc(w, 0, 1000, MT_SOURCE_EXTERNAL, A, 2);
  alloc(w, 1, 10, MT_SOURCE_EXTERNAL, B, 2);
  mt_analysis *base = close_and_load(w);
  static const uint64_t U[] = {0x10, 0x99, 0x99, 0x99};
  w = open_trace(1.0, resolve);
  alloc(w, 0, 5000, MT_SOURCE_EXTERNAL, A, 2);
  alloc(w, 1, 10, MT_SOURCE_EXTERNAL, B, 2);
  alloc(w, 2, 7, MT_SOURCE_EXTERNAL, U, 4);
  mt_analysis *now = close_and_load(w);
  mt_filter f = all();
  mt_diff *d;
  assert_int_equal(mt_diff_new(MT_BY_STACK, &d), MT_ERR_INVALID);
  assert_int_equal(mt_diff_new(MT_BY_FUNCTION, &d), MT_OK);
  assert_int_equal(mt_diff_add(d, MT_DIFF_BASE, base, &f), MT_OK);
  mt_analysis_free(base); /* names were copied */
  assert_int_equal(mt_diff_add(d, MT_DIFF_NEW, now, &f), MT_OK);
  mt_analysis_free(now);
  assert_int_equal(mt_diff_finish(d), MT_OK);
  assert_int_equal(d->nrows, 3);
  /* significant first: lex (+4000 words), then the new undescribed site;
   * helper unchanged last */
  assert_true(d->rows[0].significant);
  assert_string_equal(d->rows[0].site.function, "lex");
  assert_int_equal(d->rows[0].side[0].tally.samples, 1000);
  assert_int_equal(d->rows[0].side[1].tally.samples, 5000);
  assert_true(d->rows[1].significant);
  assert_int_equal(d->rows[1].site.kind, MT_SITE_CODE);
  assert_false(d->rows[1].side[0].present);
  assert_false(d->rows[2].significant);
  assert_string_equal(d->rows[2].site.function, "helper");
  assert_int_equal(d->nsignificant, 2);
  assert_true(d->total_significant);
  mt_diff_free(d);
}

static const char *fname(const mt_analysis *a, const mt_calltree *t, uint32_t v) {
  return mt_analysis_function_name(a, mt_calltree_function(t, v));
}

/* The path from the root to a node, names joined by ';'. */
static void path_of(const mt_analysis *a, const mt_calltree *t, uint32_t v, char *buf, size_t n) {
  const char *names[64];
  size_t k = 0;
  for (; v != 0; v = mt_calltree_parent(t, v)) names[k++] = fname(a, t, v);
  buf[0] = 0;
  while (k--) snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", names[k], k ? ";" : "");
}

static void test_calltree(void **state) {
  (void)state;
  mt_analysis *a = known_trace();
  mt_filter f = all();
  mt_calltree *t;
  /* merged adjacent: D is main;helper (its two helper frames are one);
   * undescribed codes are left out */
  assert_int_equal(mt_calltree_build(a, NULL, MT_TREE_MERGE_ADJACENT, 0, &t), MT_OK);
  size_t n = mt_calltree_size(t);
  mt_tally *per = calloc(n, sizeof *per);
  assert_int_equal(mt_calltree_tally(t, a, &f, per), MT_OK);
  char buf[256];
  int seen_d = 0, seen_a = 0;
  for (uint32_t v = 1; v < n; v++) {
    path_of(a, t, v, buf, sizeof buf);
    if (strcmp(buf, "main;helper") == 0) assert_int_equal(per[v].samples, 40), seen_d = 1;
    if (strcmp(buf, "main;parse;lex;xmalloc") == 0) assert_int_equal(per[v].samples, 15), seen_a = 1;
    assert_true(mt_calltree_parent(t, v) < v); /* parents first */
  }
  assert_true(seen_d && seen_a);
  assert_int_equal(per[0].samples, 1); /* the empty backtrace at the root */
  free(per);

  /* functions: self xmalloc 73, helper 40; total helper 20+30+40 = 90 (D
   * counted once though helper appears twice on its stack) */
  mt_function_row *rows;
  size_t nr;
  assert_int_equal(mt_calltree_functions(t, a, &f, 0, 0, &rows, &nr), MT_OK);
  assert_string_equal(mt_analysis_function_name(a, rows[0].function), "xmalloc");
  assert_int_equal(rows[0].self.samples, 73);
  assert_string_equal(mt_analysis_function_name(a, rows[1].function), "helper");
  assert_int_equal(rows[1].self.samples, 40);
  assert_int_equal(rows[1].total.samples, 90);
  for (size_t k = 0; k < nr; k++)
    if (strcmp(mt_analysis_function_name(a, rows[k].function), "main") == 0)
      assert_int_equal(rows[k].total.samples, 113), assert_int_equal(rows[k].self.samples, 0);
  /* the same by sweeps of the tree as by walks of the objects' paths, with
   * and without hidden frames */
  for (int hide = 0; hide < 2; hide++) {
    mt_filter fh = all();
    if (hide) assert_int_equal(mt_filter_set(&fh, "hide", "helper", NULL, 0), MT_OK);
    mt_function_row *walked, *swept;
    size_t nw, ns;
    assert_int_equal(mt__calltree_functions(t, a, &fh, 1, 0, SIZE_MAX, &walked, &nw), MT_OK);
    assert_int_equal(mt__calltree_functions(t, a, &fh, 1, 0, 0, &swept, &ns), MT_OK);
    assert_int_equal(nw, ns);
    assert_true(nw >= 3);
    for (size_t k = 0; k < nw; k++) {
      assert_int_equal(walked[k].function, swept[k].function);
      assert_memory_equal(&walked[k].self, &swept[k].self, sizeof walked[k].self);
      assert_memory_equal(&walked[k].total, &swept[k].total, sizeof walked[k].total);
      if (hide) assert_string_not_equal(mt_analysis_function_name(a, walked[k].function), "helper");
    }
    free(walked);
    free(swept);
  }
  free(rows);

  /* flame, focused on helper: callees rooted at helper weigh 90; callers
   * of it: main */
  uint32_t helper = UINT32_MAX;
  for (uint32_t k = 0; k < mt_analysis_function_count(a); k++)
    if (strcmp(mt_analysis_function_name(a, k), "helper") == 0) helper = k;
  mt_flame_spec spec = {helper, 0, 0};
  mt_flame *g;
  assert_int_equal(mt_flame_compute(t, a, &f, &spec, &g), MT_OK);
  assert_int_equal(g->callees[0].function, helper);
  assert_int_equal(g->callees[0].total.samples, 90);
  assert_non_null(g->callers);
  assert_int_equal(g->callers[0].total.samples, 90);
  uint32_t c = g->callers[0].first_child;
  assert_int_not_equal(c, UINT32_MAX);
  assert_string_equal(mt_analysis_function_name(a, g->callers[c].function), "main");
  assert_int_equal(g->total.samples, 114);
  assert_true(g->named[helper]);
  mt_flame_free(g);
  spec.focus = (int64_t)mt_analysis_function_count(a);
  assert_int_equal(mt_flame_compute(t, a, &f, &spec, &g), MT_ERR_INVALID);
  /* unfocused, with a cut: children under half the root stay in its self */
  spec.focus = -1;
  spec.min = 0.5;
  assert_int_equal(mt_flame_compute(t, a, &f, &spec, &g), MT_OK);
  assert_int_equal(g->callees[0].total.samples, 114);
  assert_null(g->callers);
  mt_flame_free(g);
  mt_calltree_free(t);

  /* first occurrence, inverted, over the objects never collected: B and C
   * (xmalloc;helper;main, 50) and P (xmalloc;py::run;main) and A#2 */
  f.live = MT_LIVE_AT_END;
  assert_int_equal(mt_calltree_build(a, &f, MT_TREE_FIRST_OCCURRENCE | MT_TREE_BY_NAME, 1, &t),
                   MT_OK);
  n = mt_calltree_size(t);
  per = calloc(n, sizeof *per);
  assert_int_equal(mt_calltree_tally(t, a, &f, per), MT_OK);
  int seen = 0;
  for (uint32_t v = 1; v < n; v++) {
    path_of(a, t, v, buf, sizeof buf);
    if (strcmp(buf, "xmalloc;helper;main") == 0) assert_int_equal(per[v].samples, 50), seen = 1;
  }
  assert_true(seen);
  free(per);
  mt_calltree_free(t);
  mt_analysis_free(a);
}

/* The cursor: a stack's prefix shared with the previous one, rules. */
static void test_cursor(void **state) {
  (void)state;
  mt_calltree *t = mt_calltree_new(MT_TREE_FIRST_OCCURRENCE, 0);
  uint32_t s1[] = {1, 2, 3, 2, 4}; /* the second 2 is left out */
  for (int i = 0; i < 5; i++) assert_int_equal(mt_calltree_push(t, s1[i], 0), MT_OK);
  uint32_t leaf = mt_calltree_end(t);
  uint32_t want[] = {4, 3, 2, 1}, k = 0;
  for (uint32_t v = leaf; v != 0; v = mt_calltree_parent(t, v)) assert_int_equal(mt_calltree_function(t, v), want[k++]);
  assert_int_equal(k, 4);
  /* back to after "1", then 3, 1, 3: 1 and the second 3 are on the path */
  mt_calltree_rewind(t, 1);
  uint32_t s2[] = {3, 1, 3};
  for (int i = 0; i < 3; i++) mt_calltree_push(t, s2[i], 0);
  leaf = mt_calltree_end(t);
  assert_int_equal(mt_calltree_function(t, leaf), 3);
  assert_int_equal(mt_calltree_function(t, mt_calltree_parent(t, leaf)), 1);
  /* many children of one node: looked up by their index past a few */
  mt_calltree_rewind(t, 0);
  for (uint32_t f = 100; f < 200; f++) {
    mt_calltree_rewind(t, 0);
    mt_calltree_push(t, f, 0);
    assert_int_equal(mt_calltree_function(t, mt_calltree_end(t)), f);
  }
  size_t size = mt_calltree_size(t);
  for (uint32_t f = 100; f < 200; f++) {
    mt_calltree_rewind(t, 0);
    mt_calltree_push(t, f, 0);
    assert_int_equal(mt_calltree_function(t, mt_calltree_end(t)), f);
  }
  assert_int_equal(mt_calltree_size(t), size); /* found, not added again */
  mt_calltree_free(t);
  /* merged adjacent: 1 1 2 1 is 1;2;1 */
  t = mt_calltree_new(MT_TREE_MERGE_ADJACENT, 0);
  uint32_t s3[] = {1, 1, 2, 1};
  for (int i = 0; i < 4; i++) mt_calltree_push(t, s3[i], 0);
  leaf = mt_calltree_end(t);
  k = 0;
  for (uint32_t v = leaf; v != 0; v = mt_calltree_parent(t, v)) k++;
  assert_int_equal(k, 3);
  mt_calltree_free(t);
}

/* The cursor against a model, on random stacks over a small alphabet (so
 * that functions repeat) with rewinds to random marks, under both rules:
 * the leaf's path must be the kept functions, and each node's `outer` flag
 * whether its function is kept higher on the path. */
static void cursor_against_model(int rule) {
  enum { MAXD = 40, ROUNDS = 20000 };
  mt_calltree *t = mt_calltree_new(rule, 0);
  assert_non_null(t);
  uint32_t frames[MAXD];
  size_t depth = 0;
  uint64_t x = 88172645463325252ull; /* xorshift */
  for (int round = 0; round < ROUNDS; round++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    depth = depth ? (size_t)(x % (depth + 1)) : 0; /* rewind to any mark */
    mt_calltree_rewind(t, depth);
    size_t more = (size_t)(x >> 20) % 6;
    for (size_t i = 0; i < more && depth < MAXD; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      frames[depth++] = (uint32_t)(x % 7);
      assert_int_equal(mt_calltree_push(t, frames[depth - 1], 0), MT_OK);
      assert_int_equal(mt_calltree_mark(t), depth);
    }
    /* the model: the kept functions of frames[0, depth) */
    uint32_t kept[MAXD];
    size_t nk = 0;
    for (size_t i = 0; i < depth; i++) {
      int seen = 0;
      for (size_t j = 0; j < nk; j++) seen |= kept[j] == frames[i];
      if (rule == MT_TREE_FIRST_OCCURRENCE ? !seen : !nk || kept[nk - 1] != frames[i])
        kept[nk++] = frames[i];
    }
    uint32_t v = mt_calltree_end(t);
    for (size_t j = nk; j-- > 0;) {
      assert_int_not_equal(v, 0);
      assert_int_equal(mt_calltree_function(t, v), kept[j]);
      int higher = 0;
      for (size_t i = 0; i < j; i++) higher |= kept[i] == kept[j];
      assert_int_equal(t->outer[v], !higher);
      v = mt_calltree_parent(t, v);
    }
    assert_int_equal(v, 0);
  }
  mt_calltree_free(t);
}

static void test_cursor_model(void **state) {
  (void)state;
  cursor_against_model(MT_TREE_FIRST_OCCURRENCE);
  cursor_against_model(MT_TREE_MERGE_ADJACENT);
}

static void test_stats(void **state) {
  (void)state;
  mt_analysis *a = known_trace();
  mt_filter f = all();
  mt_stats *s;
  assert_int_equal(mt_stats_compute(a, &f, 0, &s), MT_ERR_INVALID);
  assert_int_equal(mt_stats_compute(a, &f, 2, &s), MT_OK);
  assert_int_equal(s->all.all.samples, 114);
  assert_int_equal(s->all.size[0].objects, 6); /* <= 32 words: 10,20,30,5,1,8 */
  assert_int_equal(s->all.size[1].objects, 1); /* 40 */
  assert_int_equal(s->all.never.objects, 5);
  assert_int_equal(s->all.life[2].objects, 2); /* 50 and 20 us: 10..100 */
  assert_int_equal(s->all.source[MT_SOURCE_MAJOR].samples, 5);
  assert_int_equal(s->all.sampled.max, 40);
  assert_true(fabs(s->all.sampled.mean - 114.0 / 7) < 1e-9);
  /* chunks of [0, 70): [0, 35) and [35, 70] */
  assert_int_equal(s->chunks[0].from, 0);
  assert_int_equal(s->chunks[1].from, 35);
  assert_int_equal(s->chunks[0].all.objects, 4);
  assert_int_equal(s->chunks[1].all.objects, 3);
  /* the finer histograms: 40 words = 320 bytes in [256, 512) */
  assert_int_equal(s->size_log2[8].samples, 40);
  uint64_t lo, hi;
  mt_stats_size_bin(1, &lo, &hi);
  assert_true(lo == 33 && hi == 256);
  mt_stats_life_bin(3, &lo, &hi);
  assert_true(lo == 100 && hi == 1000);
  mt_stats_free(s);
  mt_analysis_free(a);
}

typedef struct sample_log {
  int n;
  int64_t alloc_space, inuse_space;
  int sources[3];
} sample_log;

static int on_sample(void *ctx, const uint32_t *codes, size_t n, size_t shared, int source,
                     const int64_t v[MT_PROFILE_VALUES]) {
  (void)codes;
  (void)n;
  (void)shared;
  sample_log *l = ctx;
  l->n++;
  l->alloc_space += v[MT_PROFILE_ALLOC_SPACE];
  l->inuse_space += v[MT_PROFILE_INUSE_SPACE];
  if (source >= 0) l->sources[source]++;
  return 0;
}

static void test_profile(void **state) {
  (void)state;
  mt_analysis *a = known_trace();
  mt_filter f = all();
  mt_profile_info pi;
  sample_log l = {0};
  assert_int_equal(mt_profile(a, &f, 0, &pi, on_sample, &l), MT_OK);
  /* one sample per backtrace and source: A external, A major, B, C, D, E, P */
  assert_int_equal(l.n, 7);
  assert_int_equal(l.sources[MT_SOURCE_MAJOR], 1);
  assert_int_equal(l.alloc_space, 114 * 8);
  assert_int_equal(l.inuse_space, 64 * 8); /* never collected */
  assert_int_equal(pi.snapshot_kind, MT_LIVE_AT_END);
  assert_int_equal(pi.snapshot, 70);
  assert_true(fabs(pi.period - 8) < 1e-9);
  /* at the peak (t=45): allocations up to it, all alive then; sources
   * merged, A's two objects are one sample: A, B, C, D, E */
  memset(&l, 0, sizeof l);
  f.live = MT_LIVE_AT_PEAK;
  assert_int_equal(mt_profile(a, &f, 1, &pi, on_sample, &l), MT_OK);
  assert_int_equal(pi.snapshot, 45);
  assert_int_equal(pi.snapshot_kind, MT_LIVE_AT_PEAK);
  assert_int_equal(l.n, 5);
  assert_int_equal(l.alloc_space, 106 * 8);
  assert_int_equal(l.inuse_space, 106 * 8);
  mt_analysis_free(a);
}

/* A random trace (rand()): 3000 objects of sizes 1-50 words from 8 codes,
 * stacks of 0-6 frames, a third collected, each up to `late` us after its
 * allocation. */
static mt_analysis *random_trace(int late) {
  static const uint64_t codes[] = {0x10, 0x20, 0x30, 0x31, 0x40, 0x50, 0x99, 0x98};
  mt_writer *w = open_trace(0.01, resolve);
  for (int i = 0; i < 3000; i++) {
    uint64_t bt[8];
    size_t n = (size_t)(rand() % 7);
    for (size_t k = 0; k < n; k++) bt[k] = codes[rand() % 8];
    uint64_t id = alloc(w, (uint64_t)i, 1 + (uint64_t)(rand() % 50), (mt_source)(rand() % 3), bt, n);
    if (rand() % 3 == 0)
      mt_writer_collect(w, T0 + (uint64_t)i + (late ? (uint64_t)(rand() % late) : 0), 0, id);
  }
  return close_and_load(w);
}

/* Random traces of interned backtraces: the profile's samples are the same
 * whether made from sums by backtrace or from the objects sorted by
 * backtrace, under filters and with sources apart or merged. */
static void test_profile_ways_agree(void **state) {
  (void)state;
  srand(11);
  for (int round = 0; round < 4; round++) {
    mt_analysis *a = random_trace(500);
    assert_true(a->bt_distinct);
    for (int kind = 0; kind < 4; kind++) {
      mt_filter f = all();
      if (kind == 1) f.live = MT_LIVE_AT_PEAK;
      if (kind == 2) f.size_min = 80, f.size_max = 240;
      if (kind == 3) f.sources = 1u << MT_SOURCE_MAJOR | 1u << MT_SOURCE_EXTERNAL;
      for (int merge = 0; merge < 2; merge++) {
        mt_profile_info pi;
        sample_digest sums = {0}, sorted = {0};
        assert_int_equal(mt_profile(a, &f, merge, &pi, on_sample_digest, &sums), MT_OK);
        assert_int_equal(mt__profile(a, &f, merge, &pi, on_sample_digest, &sorted, 0), MT_OK);
        assert_true(sums.n > 0);
        assert_int_equal(sums.n, sorted.n);
        assert_int_equal(sums.bad_shared + sorted.bad_shared, 0);
        assert_true(sums.h == sorted.h);
      }
    }
    mt_analysis_free(a);
  }
}

/* Random traces: rankings by stack agree whether from one pass, from
 * passes over slices of the fingerprints, or from the analysis' index. */
static int same_rows(const mt_ranking *x, const mt_ranking *y) {
  if (x->groups != y->groups || x->nrows != y->nrows) return 0;
  for (size_t i = 0; i < x->nrows; i++)
    if (x->rows[i].tally.samples != y->rows[i].tally.samples ||
        x->rows[i].tally.objects != y->rows[i].tally.objects ||
        x->rows[i].oldest != y->rows[i].oldest || x->rows[i].frames_total != y->rows[i].frames_total)
      return 0;
  return 1;
}

static void test_rank_ways_agree(void **state) {
  (void)state;
  srand(7);
  for (int round = 0; round < 4; round++) {
    mt_analysis *a = random_trace(0);
    mt_filter f = all();
    if (round & 1) f.hide = "helper";
    for (int order = 0; order < 3; order++) {
      mt_ranking *one, *passes, *indexed;
      mt_rank_spec s = {MT_BY_STACK, (mt_rank_order)order, 30, 0};
      if (order == MT_ORDER_OLDEST) {
        assert_int_equal(mt_leaks(a, &f, (mt_rank_order)order, 30, 0, &one), MT_OK);
      } else {
        assert_int_equal(mt_rank(a, &f, &s, &one), MT_OK);
      }
      setenv("MEMTRACE_STACK_RANK_BUDGET", "1", 1); /* the smallest tables: passes */
      if (order == MT_ORDER_OLDEST) assert_int_equal(mt_leaks(a, &f, (mt_rank_order)order, 30, 0, &passes), MT_OK);
      else assert_int_equal(mt_rank(a, &f, &s, &passes), MT_OK);
      unsetenv("MEMTRACE_STACK_RANK_BUDGET");
      assert_int_equal(mt_analysis_index_stacks(a), MT_OK);
      if (order == MT_ORDER_OLDEST) assert_int_equal(mt_leaks(a, &f, (mt_rank_order)order, 30, 0, &indexed), MT_OK);
      else assert_int_equal(mt_rank(a, &f, &s, &indexed), MT_OK);
      assert_true(same_rows(one, passes));
      assert_true(same_rows(one, indexed));
      mt_ranking_free(one);
      mt_ranking_free(passes);
      mt_ranking_free(indexed);
    }
    mt_analysis_free(a);
  }
}

/* The side table against a plain array: per kind, keys mostly increasing
 * (the runs), some going back (the map), some set again; with objects
 * keyed by index, then by id (a live-only load's side_key). */
static void test_side_table(void **state) {
  (void)state;
  enum { N = 20000 };
  static uint64_t want[MT__SIDE_KINDS][N];
  static uint64_t ids[N];
  for (int by_id = 0; by_id < 2; by_id++) {
    mt_analysis *a = mt__analysis_new();
    assert_non_null(a);
    for (size_t i = 0; i < N; i++) ids[i] = 3 * (uint64_t)i + 7;
    a->side_key = by_id ? ids : NULL;
    memset(want, 0, sizeof want);
    uint64_t rng = 0x9e3779b97f4a7c15ull + (uint64_t)by_id;
    size_t next[MT__SIDE_KINDS] = {0}, held = 0;
    for (int step = 0; step < 3 * N; step++) {
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      unsigned kind = (unsigned)(rng % MT__SIDE_KINDS);
      size_t obj;
      if (next[kind] + 2 >= N) continue;
      if ((rng >> 8) % 8 != 0 || next[kind] == 0) { /* in order, some left out */
        obj = next[kind] + (size_t)((rng >> 20) % 3);
        next[kind] = obj + 1;
      } else {
        obj = (size_t)((rng >> 16) % next[kind]); /* back: the map, or set again */
      }
      uint64_t v = rng >> 3 | 1;
      if (!want[kind][obj]) held++;
      want[kind][obj] = v;
      assert_int_equal(mt__side_put(a, obj, kind, v), 0);
    }
    assert_int_equal(mt__side_count(&a->side), held);
    assert_true(a->side.nlate > 0 && a->side.nlate < held / 2); /* both ways taken */
    for (unsigned k = 0; k < MT__SIDE_KINDS; k++)
      for (size_t i = 0; i < N; i++) assert_int_equal(mt__side_get(a, i, k), want[k][i]);
    mt__side_free(&a->side);
    assert_int_equal(mt__side_count(&a->side), 0);
    assert_int_equal(mt__side_get(a, 5, MT__SIDE_PROMOTE), 0);
    assert_int_equal(mt__side_put(a, 5, MT__SIDE_PROMOTE, 42), 0); /* usable again */
    assert_int_equal(mt__side_get(a, 5, MT__SIDE_PROMOTE), 42);
    a->side_key = NULL;
    mt_analysis_free(a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rank_sites), cmocka_unit_test(test_rank_stacks),
      cmocka_unit_test(test_leaks),      cmocka_unit_test(test_callers),
      cmocka_unit_test(test_diff),       cmocka_unit_test(test_calltree),
      cmocka_unit_test(test_cursor),     cmocka_unit_test(test_cursor_model),     cmocka_unit_test(test_stats),
      cmocka_unit_test(test_profile),    cmocka_unit_test(test_profile_ways_agree),
      cmocka_unit_test(test_rank_ways_agree), cmocka_unit_test(test_side_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
