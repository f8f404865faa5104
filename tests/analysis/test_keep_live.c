/* A live-only load (MT_KEEP_LIVE) against a whole one: the same leaks,
 * figure for figure, under filters; the same trace total, peak and
 * duration; answers that would need collected objects refused. A folded
 * load (MT_KEEP_FOLDED) against a whole one: the same call tree under the
 * same filter, its samples and objects exact, its Horvitz-Thompson sums to
 * the last bits; answers of another kind or filter refused. A load with
 * sums by site (MT_KEEP_SITES): rankings by site bit for bit where
 * mt_rank_folds says so. On
 * memtrace's own traces (promotions: side entries) and on one written here
 * whose frees run through many compactions, with blocks past 2^32 words
 * and past 65535 samples (side entries that must move with their
 * objects). */
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
#include "memtrace/calltree.h"
#include "memtrace/rank.h"
#include "write_trace.h"

static const mt_location LOCS[4][1] = {{{"a.c", "alpha", 10, 1, 5}},
                                       {{"b.c", "beta", 20, 1, 5}},
                                       {{"c.c", "gamma", 30, 1, 5}},
                                       {{"m.c", "main", 1, 1, 1}}};

static int resolve(void *ctx, uint64_t code, const mt_location **l, size_t *n) {
  (void)ctx;
  *l = code >= 0x100 && code < 0x104 ? LOCS[code - 0x100] : NULL;
  *n = *l ? 1 : 0;
  return 0;
}

static void load_both(const char *path, mt_analysis **all, mt_analysis **live) {
  assert_int_equal(mt_analysis_load_keep(all, &path, 1, MT_KEEP_ALL, NULL, NULL), MT_OK);
  assert_int_equal(mt_analysis_load_keep(live, &path, 1, MT_KEEP_LIVE, NULL, NULL), MT_OK);
  assert_int_equal(mt_analysis_keeps(*all), MT_KEEP_ALL);
  assert_int_equal(mt_analysis_keeps(*live), MT_KEEP_LIVE);
}

static void same_tally(const mt_tally *x, const mt_tally *y) {
  assert_int_equal(x->samples, y->samples);
  assert_int_equal(x->objects, y->objects);
  assert_memory_equal(x->ht_fx, y->ht_fx, sizeof x->ht_fx);
  assert_memory_equal(x->var_fx, y->var_fx, sizeof x->var_fx);
  assert_true(x->w_max == y->w_max);
}

static void same_leaks(const mt_analysis *all, const mt_analysis *live, const mt_filter *f) {
  mt_ranking *x, *y;
  assert_int_equal(mt_leaks(all, f, MT_ORDER_BYTES, 0, 0, &x), MT_OK);
  assert_int_equal(mt_leaks(live, f, MT_ORDER_BYTES, 0, 0, &y), MT_OK);
  assert_int_equal(x->nrows, y->nrows);
  assert_int_equal(x->groups, y->groups);
  same_tally(&x->total, &y->total);
  same_tally(&x->trace_total, &y->trace_total);
  for (size_t i = 0; i < x->nrows; i++) {
    const mt_rank_row *a = &x->rows[i], *b = &y->rows[i];
    same_tally(&a->tally, &b->tally);
    assert_int_equal(a->oldest, b->oldest);
    assert_int_equal(a->newest, b->newest);
    assert_int_equal(a->frames_total, b->frames_total);
    for (size_t k = 0; k < a->nframes; k++) {
      assert_int_equal(a->frames[k].code, b->frames[k].code);
      assert_true((a->frames[k].function == NULL) == (b->frames[k].function == NULL));
      if (a->frames[k].function) assert_string_equal(a->frames[k].function, b->frames[k].function);
    }
  }
  mt_ranking_free(x);
  mt_ranking_free(y);
}

static void compare(const char *path) {
  mt_analysis *all, *live;
  load_both(path, &all, &live);
  assert_int_equal(mt_analysis_duration(all), mt_analysis_duration(live));
  uint64_t t1, s1, t2, s2;
  mt_analysis_peak(all, &t1, &s1);
  mt_analysis_peak(live, &t2, &s2);
  assert_int_equal(t1, t2);
  assert_int_equal(s1, s2);
  mt_filter f, never;
  mt_filter_init(&f);
  mt_tally ta, tl;
  assert_int_equal(mt_analysis_tally(all, &f, &ta), MT_OK);
  assert_int_equal(mt_analysis_tally(live, &f, &tl), MT_OK);
  same_tally(&ta, &tl); /* the whole trace's, kept or not */
  /* the live load keeps exactly the objects never collected, each whole
   * (side entries included), in allocation order */
  mt_leaks_filter(&f, &never);
  assert_int_equal(mt_analysis_tally(all, &never, &ta), MT_OK);
  assert_int_equal(mt_analysis_object_count(live), ta.objects);
  for (size_t i = 0, k = 0; i < mt_analysis_object_count(all); i++) {
    mt_object x = mt_analysis_object(all, i);
    if (x.free_time != MT_NEVER) continue;
    mt_object y = mt_analysis_object(live, k++);
    assert_int_equal(x.alloc_time, y.alloc_time);
    assert_int_equal(x.promote_time, y.promote_time);
    assert_int_equal(y.free_time, MT_NEVER);
    assert_int_equal(x.length, y.length);
    assert_int_equal(x.nsamples, y.nsamples);
    assert_int_equal(x.backtrace, y.backtrace);
    assert_int_equal(x.source, y.source);
  }

  same_leaks(all, live, &f);
  uint64_t d = mt_analysis_duration(all);
  mt_filter g = f;
  g.alloc_from = d / 4, g.alloc_to = d / 2;
  same_leaks(all, live, &g);
  g = f;
  g.size_min = 64, g.size_max = 4096;
  same_leaks(all, live, &g);
  g = f;
  g.live = MT_LIVE_AT_PEAK;
  same_leaks(all, live, &g);
  g = f;
  g.not_inside = "alpha";
  same_leaks(all, live, &g);

  /* an answer that needs the collected objects is refused, not wrong */
  mt_rank_spec spec = {MT_BY_FUNCTION, MT_ORDER_BYTES, 10, 0};
  mt_ranking *r;
  assert_int_equal(mt_rank(live, &f, &spec, &r), MT_ERR_INVALID);
  assert_int_equal(mt_rank(live, &never, &spec, &r), MT_OK);
  mt_ranking_free(r);
  mt_analysis_free(all);
  mt_analysis_free(live);
}

/* Each node's path of function names, with its tally: "a/b/c samples
 * objects ht". */
static char **tree_lines(const mt_calltree *t, const mt_analysis *a, const mt_tally *tl, size_t *n) {
  *n = mt_calltree_size(t);
  char **v = calloc(*n, sizeof *v);
  for (size_t k = 1; k < *n; k++) {
    char path[8192] = "";
    size_t at = 0;
    for (uint32_t u = (uint32_t)k; u && at < sizeof path - 256; u = mt_calltree_parent(t, u))
      at += (size_t)snprintf(path + at, sizeof path - at, "%s<",
                             mt_analysis_function_name(a, mt_calltree_function(t, u)));
    char line[8448];
    snprintf(line, sizeof line, "%s %llu %llu %.9g", path, (unsigned long long)tl[k].samples,
             (unsigned long long)tl[k].objects, mt_tally_ht(&tl[k]));
    v[k] = strdup(line);
  }
  v[0] = strdup("");
  return v;
}

static int by_text(const void *x, const void *y) {
  return strcmp(*(char *const *)x, *(char *const *)y);
}

static void same_tree(const mt_analysis *all, const mt_analysis *fold, const mt_filter *f) {
  mt_calltree *ta, *tf;
  assert_int_equal(mt_calltree_build(all, f, MT_TREE_FIRST_OCCURRENCE | MT_TREE_BY_NAME, 0, &ta), MT_OK);
  assert_int_equal(mt_calltree_build(fold, f, MT_TREE_FIRST_OCCURRENCE | MT_TREE_BY_NAME, 0, &tf), MT_OK);
  size_t n = mt_calltree_size(ta), nf = mt_calltree_size(tf);
  assert_int_equal(n, nf);
  mt_tally *xa = calloc(n, sizeof *xa), *xf = calloc(n, sizeof *xf);
  assert_int_equal(mt_calltree_tally(ta, all, f, xa), MT_OK);
  assert_int_equal(mt_calltree_tally(tf, fold, f, xf), MT_OK);
  size_t la, lf;
  char **va = tree_lines(ta, all, xa, &la), **vf = tree_lines(tf, fold, xf, &lf);
  qsort(va, la, sizeof *va, by_text);
  qsort(vf, lf, sizeof *vf, by_text);
  for (size_t k = 0; k < la; k++) assert_string_equal(va[k], vf[k]); /* ht to 9 digits */
  for (size_t k = 0; k < la; k++) free(va[k]), free(vf[k]);
  free(va), free(vf), free(xa), free(xf);
  mt_calltree_free(ta);
  mt_calltree_free(tf);
  mt_tally sa, sf;
  assert_int_equal(mt_analysis_tally(all, f, &sa), MT_OK);
  assert_int_equal(mt_analysis_tally(fold, f, &sf), MT_OK);
  assert_int_equal(sa.samples, sf.samples);
  assert_int_equal(sa.objects, sf.objects);
  same_tally(&sa, &sf); /* fixed-point sums: exact, in any order */
}

/* A folded load under f against the whole one. */
/* Rankings by function and by line, by bytes and by objects, of a whole
 * load and a folded one: the same rows, tallies bit for bit. */
static void same_sites(const mt_analysis *all, const mt_analysis *fold, const mt_filter *f) {
  for (int k = 0; k < 4; k++) {
    mt_rank_spec spec = {k & 1 ? MT_BY_LINE : MT_BY_FUNCTION,
                         k & 2 ? MT_ORDER_OBJECTS : MT_ORDER_BYTES, 0, 0};
    mt_ranking *x, *y;
    assert_int_equal(mt_rank(all, f, &spec, &x), MT_OK);
    int rc = mt_rank(fold, f, &spec, &y);
    if (!mt_rank_folds(f, &spec)) {
      assert_int_equal(rc, MT_ERR_INVALID);
      mt_ranking_free(x);
      continue;
    }
    assert_int_equal(rc, MT_OK);
    assert_int_equal(x->nrows, y->nrows);
    assert_int_equal(x->groups, y->groups);
    same_tally(&x->total, &y->total);
    same_tally(&x->trace_total, &y->trace_total);
    for (size_t i = 0; i < x->nrows; i++) {
      char sx[512], sy[512];
      assert_string_equal(mt_site_text(&x->rows[i].site, 1, sx, sizeof sx),
                          mt_site_text(&y->rows[i].site, 1, sy, sizeof sy));
      same_tally(&x->rows[i].tally, &y->rows[i].tally);
      assert_int_equal(x->rows[i].oldest, y->rows[i].oldest);
      assert_int_equal(x->rows[i].newest, y->rows[i].newest);
      assert_true(x->rows[i].bytes.hi == y->rows[i].bytes.hi);
      assert_true(x->rows[i].objects.lo == y->rows[i].objects.lo);
    }
    mt_ranking_free(x);
    mt_ranking_free(y);
  }
}

/* A load keeping sums by site (MT_KEEP_SITES) against a whole one: its
 * rankings bit for bit, its leaks as a live-only load's; refused where
 * the filter is not decided at allocation. */
static void compare_sites(const char *path, const mt_analysis *all, const mt_filter *f) {
  mt_analysis *s;
  int rc = mt_analysis_load_sites(&s, &path, 1, f, NULL, NULL);
  if (!mt_filter_decided_at_allocation(f)) {
    assert_int_equal(rc, MT_ERR_INVALID);
    assert_non_null(strstr(mt_analysis_error(s), "allocated"));
    mt_analysis_free(s);
    return;
  }
  assert_int_equal(rc, MT_OK);
  assert_int_equal(mt_analysis_keeps(s), MT_KEEP_SITES);
  same_sites(all, s, f);
  mt_tally x, y;
  assert_int_equal(mt_analysis_tally(all, f, &x), MT_OK);
  assert_int_equal(mt_analysis_tally(s, f, &y), MT_OK);
  same_tally(&x, &y);
  mt_filter g;
  mt_filter_init(&g);
  same_leaks(all, s, &g);
  mt_calltree *t; /* nothing by backtrace is kept */
  assert_int_equal(mt_calltree_build(s, f, MT_TREE_BY_NAME, 0, &t), MT_ERR_INVALID);
  mt_analysis_free(s);
}

static void compare_folded(const char *path, const mt_analysis *all, const mt_filter *f) {
  mt_analysis *fold;
  assert_int_equal(mt_analysis_load_folded(&fold, &path, 1, f, NULL, NULL), MT_OK);
  assert_int_equal(mt_analysis_keeps(fold), MT_KEEP_FOLDED);
  same_tree(all, fold, f);
  mt_filter g = *f;
  g.not_inside = "alpha"; /* conditions on stacks may differ */
  g.hide = "main";
  same_tree(all, fold, &g);
  assert_int_equal(mt_analysis_has_runtime_heap(fold), mt_analysis_has_runtime_heap(all));
  assert_int_equal(mt_analysis_has_mappings(fold), mt_analysis_has_mappings(all));
  /* rankings are a load with sums by site's (compare_sites): here
   * refused, as any other answer and other conditions on objects */
  mt_rank_spec spec = {MT_BY_STACK, MT_ORDER_BYTES, 10, 0};
  mt_ranking *r;
  assert_int_equal(mt_rank(fold, f, &spec, &r), MT_ERR_INVALID);
  spec.by = MT_BY_FUNCTION;
  assert_int_equal(mt_rank(fold, f, &spec, &r), MT_ERR_INVALID);
  g = *f;
  g.inside = "beta";
  assert_false(mt_rank_folds(&g, &spec));
  assert_int_equal(mt_rank(fold, &g, &spec, &r), MT_ERR_INVALID);
  g = *f;
  g.size_min += 1;
  mt_calltree *t;
  assert_int_equal(mt_calltree_build(fold, &g, MT_TREE_BY_NAME, 0, &t), MT_ERR_INVALID);
  mt_analysis_free(fold);
  compare_sites(path, all, f);
}

static void folds(const char *path) {
  mt_analysis *all;
  assert_int_equal(mt_analysis_load_keep(&all, &path, 1, MT_KEEP_ALL, NULL, NULL), MT_OK);
  uint64_t d = mt_analysis_duration(all);
  mt_filter f;
  mt_filter_init(&f);
  compare_folded(path, all, &f);
  mt_filter g = f;
  g.alloc_from = d / 4, g.alloc_to = d / 2;
  compare_folded(path, all, &g);
  g = f;
  g.size_min = 64, g.size_max = 4096;
  compare_folded(path, all, &g);
  g.lifetime_max = d / 10;
  compare_folded(path, all, &g);
  g = f;
  g.sources = 1u << MT_SOURCE_MAJOR | MT_FILTER_HEAP;
  compare_folded(path, all, &g);
  g = f;
  g.collected = MT_COLLECTED_IN, g.collect_from = d / 3, g.collect_to = d;
  compare_folded(path, all, &g);
  g = f;
  g.live = MT_LIVE_AT, g.live_at = d / 2;
  compare_folded(path, all, &g);
  g = f;
  g.live = MT_LIVE_AT_END;
  g.sources = 1u << MT_SOURCE_EXTERNAL | 1u << MT_SOURCE_MAJOR;
  compare_folded(path, all, &g);
  g = f;
  g.live = MT_LIVE_AT_PEAK; /* known only at the end */
  mt_analysis *fold;
  assert_int_equal(mt_analysis_load_folded(&fold, &path, 1, &g, NULL, NULL), MT_ERR_INVALID);
  mt_analysis_free(fold);
  mt_analysis_free(all);
}

static void test_shared_traces(void **state) {
  (void)state;
  static const char *const names[] = {"ocamlopt.ctf", "workload-1e-3.ctf", "workload-1e-4.ctf"};
  for (size_t k = 0; k < 3; k++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", MT_SHARED_TRACES, names[k]);
    if (access(path, R_OK) == 0) compare(path), folds(path);
  }
}

/* 400,000 objects from 24 backtraces, most freed within 5,000 allocations
 * (compactions, the live ones moved each time), 1 in 50 never; now and
 * then a block past 2^32 words or with more than 65535 samples (never
 * freed), and 150,000 promoted (the side table rebuilt while loading). */
static void test_compactions(void **state) {
  (void)state;
  enum { N = 400000, WINDOW = 5000 };
  mt_writer *w = open_trace(1e-3, resolve);
  uint64_t *ids = malloc(N * sizeof *ids);
  uint8_t *freed = calloc(N, 1);
  uint64_t rng = 88172645463325252ull, t = T0;
  for (size_t i = 0; i < N; i++) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    uint64_t bt[3] = {0x103, 0x100 + rng % 3, 0x200 + (rng >> 8) % 8};
    uint64_t len = 1 + (rng >> 16) % 600, samples = 1 + (rng >> 40) % 3;
    if (i % 9973 == 0) len = (1ull << 32) + i; /* past 32 bits */
    if (i % 7919 == 0) samples = 70000 + i % 100;
    mt_source src = i % 2 == 0 ? MT_SOURCE_MINOR : MT_SOURCE_EXTERNAL;
    assert_int_equal(mt_writer_alloc(w, t += 3, 0, len, samples, src, bt, 3, &ids[i]), MT_OK);
    if (src == MT_SOURCE_MINOR && (rng >> 20) % 4 != 0) /* 150,000: the side table rebuilt */
      assert_int_equal(mt_writer_promote(w, t += 1, 0, ids[i]), MT_OK);
    /* free the object WINDOW allocations old, and a random younger one;
     * 1 in 50 and the big ones live on */
    if (i == 0) continue;
    size_t cand[2] = {i >= WINDOW ? i - WINDOW : i, i - 1 - (rng >> 24) % (i < WINDOW ? i : WINDOW)};
    for (int c = 0; c < 2; c++) {
      size_t j = cand[c];
      if (j < i && !freed[j] && j % 50 != 7 && j % 9973 && j % 7919) {
        freed[j] = 1;
        assert_int_equal(mt_writer_collect(w, t += 2, 0, ids[j]), MT_OK);
      }
    }
  }
  assert_int_equal(mt_writer_close(w), MT_OK);
  fclose(trace_file);
  compare(trace_path);
  folds(trace_path);
  unlink(trace_path);
  free(ids);
  free(freed);
}

/* A trace of 3 hours: times are kept coarser once it passes 71 minutes.
 * A folded ranking gives a whole load's times; under a condition on
 * allocation times it is refused (objects decided at their allocation at
 * a finer time than a whole load decides them). */
static void test_long_clock(void **state) {
  (void)state;
  mt_writer *w = open_trace(1e-2, resolve);
  uint64_t t = T0, id;
  for (size_t i = 0; i < 2000; i++) {
    uint64_t bt[2] = {0x103, 0x100 + i % 3};
    assert_int_equal(mt_writer_alloc(w, t += 5400007, 0, 1 + i % 50, 1, MT_SOURCE_EXTERNAL, bt,
                                     2, &id),
                     MT_OK);
    if (i % 3 == 0) assert_int_equal(mt_writer_collect(w, t += 11, 0, id), MT_OK);
  }
  assert_int_equal(mt_writer_close(w), MT_OK);
  fclose(trace_file);
  const char *path = trace_path;
  mt_analysis *all, *fold;
  assert_int_equal(mt_analysis_load_keep(&all, &path, 1, MT_KEEP_ALL, NULL, NULL), MT_OK);
  mt_filter f;
  mt_filter_init(&f);
  assert_int_equal(mt_analysis_load_sites(&fold, &path, 1, &f, NULL, NULL), MT_OK);
  same_sites(all, fold, &f);
  mt_analysis_free(fold);
  f.alloc_from = mt_analysis_duration(all) / 3;
  assert_int_equal(mt_analysis_load_sites(&fold, &path, 1, &f, NULL, NULL), MT_OK);
  mt_rank_spec spec = {MT_BY_FUNCTION, MT_ORDER_BYTES, 0, 0};
  mt_ranking *r;
  assert_true(mt_rank_folds(&f, &spec));
  assert_int_equal(mt_rank(fold, &f, &spec, &r), MT_ERR_INVALID);
  mt_analysis_free(fold);
  mt_analysis_free(all);
  unlink(trace_path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_long_clock),
      cmocka_unit_test(test_shared_traces),
      cmocka_unit_test(test_compactions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
