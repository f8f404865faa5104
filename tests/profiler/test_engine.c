/* The sampling engine: statistics of the sampler and the API's contracts.
 * Allocations are reported through the runtime API with fake block ids, so
 * no real memory is involved. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "memtrace/engine.h"

typedef struct counts {
  uint64_t allocs, samples, words, deallocs, promotes;
  uint64_t hist[64]; /* nsamples histogram */
  int reenter;       /* allocate from inside the callback */
  uint64_t nested;   /* samples seen while inside a callback */
  int inside;
} counts;

static counts C;

static void *on_alloc(void *ctx, const mt_alloc_info *i) {
  counts *c = ctx;
  if (c->inside) c->nested++;
  c->inside = 1;
  c->allocs++;
  c->samples += i->nsamples;
  c->words += i->words;
  c->hist[i->nsamples < 63 ? i->nsamples : 63]++;
  if (c->reenter) /* the engine must not sample inside its own callback */
    for (int k = 0; k < 1000; k++) mt_runtime_alloc((uintptr_t)(1u << 30) + 8 * (uintptr_t)k, 100, MT_SOURCE_MINOR);
  c->inside = 0;
  return (void *)(uintptr_t)c->allocs;
}
static void *on_promote(void *ctx, void *h) {
  ((counts *)ctx)->promotes++;
  return h;
}
static void on_dealloc(void *ctx, void *h) {
  (void)h;
  ((counts *)ctx)->deallocs++;
}

static mt_engine_params params(double rate, uint64_t seed) {
  memset(&C, 0, sizeof C);
  mt_engine_params p = {.rate = rate, .tracker = {on_alloc, on_promote, on_dealloc, &C}, .seed = seed};
  return p;
}

/* Total samples over W words is Binomial(W, rate): check the observed rate
 * against a 5-sigma band, over several rates and block sizes. */
static void test_observed_rate(void **state) {
  (void)state;
  static const double rates[] = {1e-1, 1e-2, 1e-3};
  static const size_t sizes[] = {1, 7, 64, 1000};
  for (size_t ri = 0; ri < 3; ri++)
    for (size_t si = 0; si < 4; si++) {
      mt_engine_params p = params(rates[ri], 42 + ri * 10 + si);
      assert_int_equal(mt_engine_start(&p), MT_OK);
      uint64_t words = 0;
      for (uintptr_t k = 1; words < 20000000; k++) {
        mt_runtime_alloc(k * 16, sizes[si], MT_SOURCE_MINOR);
        words += sizes[si];
      }
      assert_int_equal(mt_engine_stop(), MT_OK);
      double r = rates[ri], mean = words * r, sd = sqrt(words * r * (1 - r));
      double z = ((double)C.samples - mean) / sd;
      printf("rate %g size %zu: %llu samples over %llu words (expected %.0f, z = %.2f)\n", r,
             sizes[si], (unsigned long long)C.samples, (unsigned long long)words, mean, z);
      assert_true(fabs(z) < 5);
    }
}

/* For blocks of w words, nsamples given sampled ~ Binomial(w, r) | >= 1:
 * compare the histogram's mean with the exact conditional mean. */
static void test_nsamples_distribution(void **state) {
  (void)state;
  const double r = 0.01;
  const size_t w = 200;
  mt_engine_params p = params(r, 7);
  assert_int_equal(mt_engine_start(&p), MT_OK);
  for (uintptr_t k = 1; k <= 2000000; k++) mt_runtime_alloc(k * 16, w, MT_SOURCE_MAJOR);
  mt_engine_stop();
  double p_any = 1 - pow(1 - r, (double)w);
  double cond_mean = w * r / p_any;
  double cond_var = (w * r * (1 - r) + w * r * w * r) / p_any - cond_mean * cond_mean;
  double mean = (double)C.samples / C.allocs;
  double se = sqrt(cond_var / C.allocs);
  printf("nsamples mean %.4f (expected %.4f, se %.4f); sampled blocks %.4f (expected %.4f)\n",
         mean, cond_mean, se, (double)C.allocs / 2000000, p_any);
  assert_true(fabs(mean - cond_mean) < 5 * se);
  double sd_alloc = sqrt(2000000 * p_any * (1 - p_any));
  assert_true(fabs((double)C.allocs - 2000000 * p_any) < 5 * sd_alloc);
  /* P(nsamples = 1 | sampled) = w r (1-r)^(w-1) / P(any) */
  double p1 = w * r * pow(1 - r, (double)w - 1) / p_any;
  double sd1 = sqrt(C.allocs * p1 * (1 - p1));
  assert_true(fabs((double)C.hist[1] - C.allocs * p1) < 5 * sd1);
}

/* Large blocks at a high rate: each block's count is 1 + Binomial(words
 * after its first sample point, r), drawn by inverting the binomial's
 * distribution function (means from 1 to 256). Every block is sampled here
 * (with probability 1 - 1e-13 or more): the counts are Binomial(w, r)
 * given K >= 1. Check the mean, the variance and both tails (two standard
 * deviations out), at means 30 and 100, with blocks under 2^16 words (P(K
 * = 0) from the engine's tables) and over (from exp). */
static double binom_cdf(size_t w, double r, size_t k) {
  double c = 0;
  for (size_t j = 0; j <= k; j++)
    c += exp(lgamma(w + 1.0) - lgamma(j + 1.0) - lgamma(w - j + 1.0) + j * log(r) +
             (w - j) * log1p(-r));
  return c;
}

static uint64_t bin_n, bin_low, bin_high, bin_lo_k, bin_hi_k;
static double bin_sum, bin_sum2;
static void *bin_alloc(void *ctx, const mt_alloc_info *i) {
  (void)ctx;
  bin_n++;
  bin_sum += (double)i->nsamples;
  bin_sum2 += (double)i->nsamples * (double)i->nsamples;
  bin_low += i->nsamples <= bin_lo_k;
  bin_high += i->nsamples >= bin_hi_k;
  return NULL;
}

static void check_binomial(size_t w, double r, size_t n, uint64_t seed) {
  double mu = w * r, var = w * r * (1 - r);
  bin_n = bin_low = bin_high = 0;
  bin_sum = bin_sum2 = 0;
  bin_lo_k = (uint64_t)(mu - 2 * sqrt(var));
  bin_hi_k = (uint64_t)(mu + 2 * sqrt(var)) + 1;
  mt_engine_params p = {.rate = r, .tracker = {bin_alloc, NULL, NULL, NULL}, .seed = seed};
  assert_int_equal(mt_engine_start(&p), MT_OK);
  for (uintptr_t k = 1; k <= n; k++) mt_runtime_alloc(k * 16, w, MT_SOURCE_MAJOR);
  mt_engine_stop();
  assert_int_equal(bin_n, n);
  double mean = bin_sum / n, se = sqrt(var / n);
  printf("blocks of %zu words at %g: nsamples mean %.4f (expected %.4f, se %.4f)\n", w, r, mean,
         mu, se);
  assert_true(fabs(mean - mu) < 5 * se);
  double pl = binom_cdf(w, r, bin_lo_k), ph = 1 - binom_cdf(w, r, bin_hi_k - 1);
  printf("  P(K <= %llu) %.5f (expected %.5f), P(K >= %llu) %.5f (expected %.5f)\n",
         (unsigned long long)bin_lo_k, (double)bin_low / n, pl, (unsigned long long)bin_hi_k,
         (double)bin_high / n, ph);
  assert_true(fabs((double)bin_low - n * pl) < 5 * sqrt(n * pl * (1 - pl)));
  assert_true(fabs((double)bin_high - n * ph) < 5 * sqrt(n * ph * (1 - ph)));
  /* the variance: its standard error is about var * sqrt(2 / n) */
  double m2 = bin_sum2 / n - mean * mean;
  printf("  variance %.3f (expected %.3f)\n", m2, var);
  assert_true(fabs(m2 - var) < 5 * var * sqrt(2.0 / n));
}

static void test_nsamples_large_blocks(void **state) {
  (void)state;
  check_binomial(3000, 0.01, 300000, 11);
  check_binomial(10000, 0.01, 100000, 12);
  /* 2^16 words or more: P(K = 0) from exp rather than the tables */
  check_binomial(200000, 0.0005, 100000, 13);
}

/* The gaps between sample points are Geometric(rate): with one-word blocks,
 * the distance between sampled blocks. Check P(gap > g) = (1 - r)^g at
 * points across the whole range, the tail past the exponential draw's base
 * strip (gap > 770 at r = 0.01: E > 7.7) included, and the mean. */
static uint64_t gap_last, gap_n, gap_sum, gap_over[6];
static const uint64_t gap_at[6] = {1, 50, 100, 300, 700, 900};
static uintptr_t gap_key; /* the key being allocated */
static void *gap_alloc(void *ctx, const mt_alloc_info *i) {
  (void)ctx;
  (void)i;
  uint64_t g = gap_key - gap_last;
  if (gap_last) {
    gap_n++;
    gap_sum += g;
    for (int k = 0; k < 6; k++) gap_over[k] += g > gap_at[k];
  }
  gap_last = gap_key;
  return NULL;
}

static void test_gap_distribution(void **state) {
  (void)state;
  const double r = 0.01;
  mt_engine_params p = {.rate = r, .tracker = {gap_alloc, NULL, NULL, NULL}, .seed = 5};
  assert_int_equal(mt_engine_start(&p), MT_OK);
  for (gap_key = 1; gap_key <= 100000000; gap_key++) mt_runtime_alloc(gap_key * 16, 1, MT_SOURCE_MINOR);
  mt_engine_stop();
  for (int k = 0; k < 6; k++) {
    double pk = pow(1 - r, (double)gap_at[k]), sd = sqrt(gap_n * pk * (1 - pk));
    printf("gaps: P(gap > %llu) %.6f (expected %.6f, z = %.2f)\n", (unsigned long long)gap_at[k],
           (double)gap_over[k] / gap_n, pk, ((double)gap_over[k] - gap_n * pk) / sd);
    assert_true(fabs((double)gap_over[k] - gap_n * pk) < 5 * sd);
  }
  double mean = (double)gap_sum / gap_n, se = sqrt((1 - r) / (r * r) / gap_n);
  printf("gaps: mean %.3f (expected %.3f, se %.3f)\n", mean, 1 / r, se);
  assert_true(fabs(mean - 1 / r) < 5 * se);
}

static void test_rate_one_samples_every_word(void **state) {
  (void)state;
  mt_engine_params p = params(1.0, 1);
  assert_int_equal(mt_engine_start(&p), MT_OK);
  uint64_t words = 0;
  for (uintptr_t k = 1; k <= 10000; k++) {
    mt_runtime_alloc(k * 16, k % 37 + 1, MT_SOURCE_MINOR);
    words += k % 37 + 1;
  }
  mt_engine_stop();
  assert_int_equal(C.allocs, 10000);
  assert_int_equal(C.samples, words);
}

static void test_zero_words_never_sampled(void **state) {
  (void)state;
  mt_engine_params p = params(1.0, 1);
  assert_int_equal(mt_engine_start(&p), MT_OK);
  for (uintptr_t k = 1; k <= 1000; k++) mt_runtime_alloc(k * 16, 0, MT_SOURCE_MINOR);
  mt_engine_stop();
  assert_int_equal(C.allocs, 0);
}

static void test_api_misuse(void **state) {
  (void)state;
  mt_engine_params p = params(0.5, 1);
  assert_int_equal(mt_engine_stop(), MT_ERR_INVALID); /* not started */
  p.rate = 0;
  assert_int_equal(mt_engine_start(&p), MT_ERR_INVALID);
  p.rate = 1.5;
  assert_int_equal(mt_engine_start(&p), MT_ERR_INVALID);
  p.rate = NAN;
  assert_int_equal(mt_engine_start(&p), MT_ERR_INVALID);
  assert_int_equal(mt_engine_start(NULL), MT_ERR_INVALID);
  p.rate = 0.5;
  assert_int_equal(mt_engine_start(&p), MT_OK);
  assert_int_equal(mt_engine_start(&p), MT_ERR_INVALID); /* already started */
  assert_true(mt_engine_running());
  assert_int_equal(mt_engine_stop(), MT_OK);
  assert_false(mt_engine_running());
  mt_external_free(0); /* no-op */
}

static void test_no_sampling_inside_callback(void **state) {
  (void)state;
  mt_engine_params p = params(1.0, 3);
  C.reenter = 1;
  assert_int_equal(mt_engine_start(&p), MT_OK);
  for (uintptr_t k = 1; k <= 100; k++) mt_runtime_alloc(k * 16, 4, MT_SOURCE_MINOR);
  mt_engine_stop();
  assert_int_equal(C.allocs, 100); /* the 100000 inner allocations: none */
  assert_int_equal(C.nested, 0);
}

static void test_track_free_promote(void **state) {
  (void)state;
  mt_engine_params p = params(1.0, 3);
  assert_int_equal(mt_engine_start(&p), MT_OK);
  for (uintptr_t k = 1; k <= 1000; k++) mt_runtime_alloc(k * 16, 2, MT_SOURCE_MINOR);
  for (uintptr_t k = 1; k <= 500; k++) mt_runtime_promote(k * 16, (k + 5000) * 16);
  for (uintptr_t k = 1; k <= 250; k++) mt_runtime_free((k + 5000) * 16);
  for (uintptr_t k = 501; k <= 600; k++) mt_runtime_free(k * 16);
  mt_runtime_free(999999 * 16); /* never allocated: ignored */
  mt_engine_stats s;
  mt_engine_get_stats(&s);
  assert_int_equal(C.promotes, 500);
  assert_int_equal(C.deallocs, 350);
  assert_int_equal(s.tracked, 650);
  /* stop discards tracked blocks: no callbacks for them afterwards */
  mt_engine_stop();
  for (uintptr_t k = 601; k <= 1000; k++) mt_runtime_free(k * 16);
  assert_int_equal(C.deallocs, 350);
}

static void test_external_tokens(void **state) {
  (void)state;
  mt_engine_params p = params(1.0, 3);
  assert_int_equal(mt_engine_start(&p), MT_OK);
  uintptr_t t[100];
  for (int i = 0; i < 100; i++) assert_true((t[i] = mt_external_alloc(1 + i * 100)) != 0);
  for (int i = 0; i < 50; i++) mt_external_free(t[i]);
  assert_int_equal(C.deallocs, 50);
  mt_engine_stop();
  /* a token from a stopped session is safe to free and reports nothing */
  p = params(1.0, 4);
  assert_int_equal(mt_engine_start(&p), MT_OK);
  for (int i = 50; i < 100; i++) mt_external_free(t[i]);
  assert_int_equal(C.deallocs, 0);
  mt_engine_stop();
  p = params(1e-9, 4); /* effectively never sampled: tokens are 0 */
  assert_int_equal(mt_engine_start(&p), MT_OK);
  int zeros = 0;
  for (int i = 0; i < 1000; i++) zeros += mt_external_alloc(64) == 0;
  mt_engine_stop();
  assert_int_equal(zeros, 1000);
}

/* Threads sample independently and concurrently; totals still add up. */
static void *thread_main(void *arg) {
  uintptr_t base = (uintptr_t)arg << 32;
  for (uintptr_t k = 1; k <= 200000; k++) {
    mt_runtime_alloc(base + k * 16, 8, MT_SOURCE_MINOR);
    mt_runtime_free(base + k * 16);
  }
  return NULL;
}

static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static uint64_t mt_allocs, mt_deallocs;
static void *mt_alloc(void *ctx, const mt_alloc_info *i) {
  (void)ctx;
  (void)i;
  pthread_mutex_lock(&cm);
  uintptr_t h = ++mt_allocs;
  pthread_mutex_unlock(&cm);
  return (void *)h;
}
static void mt_dealloc(void *ctx, void *h) {
  (void)ctx;
  (void)h;
  pthread_mutex_lock(&cm);
  mt_deallocs++;
  pthread_mutex_unlock(&cm);
}

/* Tracking under churn: many keys come and go in random order (rate 1:
 * every block tracked), with keys crowded into few hash neighbourhoods;
 * each free must give back exactly the handle of its own allocation (the
 * table's deletions move entries around), and nothing may be left over. */
static uint64_t churn_handle_sum;
static uint64_t churn_next;
static void *churn_alloc(void *ctx, const mt_alloc_info *i) {
  (void)ctx, (void)i;
  return (void *)(uintptr_t)++churn_next;
}
static void churn_dealloc(void *ctx, void *h) {
  (void)ctx;
  churn_handle_sum += (uint64_t)(uintptr_t)h;
}
static void test_table_churn(void **state) {
  (void)state;
  enum { LIVE = 5000, ROUNDS = 400000 };
  static uintptr_t live[LIVE];
  static uint64_t handle[LIVE];
  mt_engine_params p = {.rate = 1, .tracker = {churn_alloc, NULL, churn_dealloc, NULL}};
  churn_next = churn_handle_sum = 0;
  assert_int_equal(mt_engine_start(&p), MT_OK);
  uint64_t rng = 12345, expect = 0;
  for (int r = 0; r < ROUNDS; r++) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    size_t i = (size_t)(rng >> 33) % LIVE;
    if (live[i]) {
      uint64_t before = churn_handle_sum;
      mt_runtime_free(live[i]);
      assert_int_equal(churn_handle_sum - before, handle[i]);
      expect += handle[i];
    }
    /* distinct keys, 16-byte aligned, from a small range: long probe runs */
    live[i] = (uintptr_t)0x100000 + 16 * (uintptr_t)(r * 2 + 1);
    mt_runtime_alloc(live[i], 1, MT_SOURCE_MAJOR);
    handle[i] = churn_next;
  }
  mt_engine_stats st;
  mt_engine_get_stats(&st);
  uint64_t n = 0;
  for (size_t i = 0; i < LIVE; i++) n += live[i] != 0;
  assert_int_equal(st.tracked, n);
  for (size_t i = 0; i < LIVE; i++) {
    if (!live[i]) continue;
    mt_runtime_free(live[i]);
    expect += handle[i];
    live[i] = 0;
  }
  assert_int_equal(churn_handle_sum, expect);
  mt_engine_get_stats(&st);
  assert_int_equal(st.tracked, 0);
  mt_runtime_free(0x100000 + 16); /* freed long ago: nothing happens */
  assert_int_equal(churn_handle_sum, expect);
  assert_int_equal(mt_engine_stop(), MT_OK);
}

static void test_threads(void **state) {
  (void)state;
  mt_engine_params p = {.rate = 0.01, .tracker = {mt_alloc, NULL, mt_dealloc, NULL}, .seed = 9};
  assert_int_equal(mt_engine_start(&p), MT_OK);
  pthread_t th[8];
  for (uintptr_t i = 0; i < 8; i++) pthread_create(&th[i], NULL, thread_main, (void *)(i + 1));
  for (int i = 0; i < 8; i++) pthread_join(th[i], NULL);
  mt_engine_stop();
  double words = 8.0 * 200000 * 8, mean = words * 0.01;
  /* blocks of 8 words at 1%: sampled blocks ~ 1 - 0.99^8 of them */
  double blocks = 8.0 * 200000, pb = 1 - pow(0.99, 8);
  printf("threads: %llu sampled blocks (expected %.0f), %llu freed\n",
         (unsigned long long)mt_allocs, blocks * pb, (unsigned long long)mt_deallocs);
  (void)mean;
  assert_true(fabs((double)mt_allocs - blocks * pb) < 5 * sqrt(blocks * pb * (1 - pb)));
  assert_int_equal(mt_deallocs, mt_allocs); /* every sampled block's free was seen */
}

/* ---- the callstack ---- */

/* The callstack function's view: the buffer it was given, its room, and
 * where the calling thread's stack lies. It writes cs_fill frames
 * (capped by the room): frame k is 0x1000 + k. */
static struct {
  uintptr_t buf, stack_lo, stack_hi;
  size_t cap, fill, seen_len, calls;
  int frames_ok;
} CS;

static void stack_bounds(uintptr_t *lo, uintptr_t *hi) {
  pthread_attr_t a;
  void *addr;
  size_t size;
  *lo = *hi = 0;
  if (pthread_getattr_np(pthread_self(), &a) == 0) {
    if (pthread_attr_getstack(&a, &addr, &size) == 0) {
      *lo = (uintptr_t)addr;
      *hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&a);
  }
}

static size_t cs_walk(void *ctx, uint64_t *buf, size_t cap) {
  (void)ctx;
  CS.calls++;
  CS.buf = (uintptr_t)buf;
  CS.cap = cap;
  stack_bounds(&CS.stack_lo, &CS.stack_hi);
  size_t n = CS.fill < cap ? CS.fill : cap;
  for (size_t k = 0; k < n; k++) buf[k] = 0x1000 + k; /* the whole room is writable */
  for (size_t k = n; k < cap; k++) buf[k] = 0;
  return n;
}

static void *cs_alloc(void *ctx, const mt_alloc_info *i) {
  (void)ctx;
  CS.seen_len = i->callstack_len;
  CS.frames_ok = 1;
  for (size_t k = 0; k < i->callstack_len; k++)
    if (i->callstack[k] != 0x1000 + k) CS.frames_ok = 0;
  return (void *)1;
}

/* Starts the engine at rate 1 with cs_walk (or none) writing `fill`
 * frames, at most `max` (0: the default), the record cleared. */
static void cs_start(size_t fill, size_t max, int walk) {
  memset(&CS, 0, sizeof CS);
  CS.fill = fill;
  mt_engine_params p = {.rate = 1, .tracker = {cs_alloc, NULL, NULL, NULL},
                        .callstack = walk ? cs_walk : NULL, .callstack_max = max, .seed = 3};
  assert_int_equal(mt_engine_start(&p), MT_OK);
}

/* The tracker gets the frames the callstack function wrote, as many as
 * callstack_max allows (256 by default); without a callstack function, none. */
static void test_callstack_contract(void **state) {
  (void)state;
  static const size_t maxes[] = {0, 1, 10, 4096};
  for (size_t m = 0; m < 4; m++) {
    cs_start(300, maxes[m], 1);
    mt_runtime_alloc(0x5000, 4, MT_SOURCE_MINOR);
    assert_int_equal(mt_engine_stop(), MT_OK);
    size_t cap = maxes[m] ? maxes[m] : 256;
    assert_int_equal(CS.calls, 1);
    assert_int_equal(CS.cap, cap);
    assert_int_equal(CS.seen_len, CS.fill < cap ? CS.fill : cap);
    assert_true(CS.frames_ok);
  }
  cs_start(300, 0, 0);
  CS.seen_len = 99;
  mt_runtime_alloc(0x5000, 4, MT_SOURCE_MINOR);
  assert_int_equal(mt_engine_stop(), MT_OK);
  assert_int_equal(CS.calls, 0);
  assert_int_equal(CS.seen_len, 0);
}

static void *small_thread(void *arg) {
  (void)arg;
  for (uintptr_t k = 0; k < 4; k++) mt_runtime_alloc(0x9000 + 16 * k, 4, MT_SOURCE_MINOR);
  return NULL;
}

/* The buffer is not on the sampling thread's stack: a thread with the
 * smallest stack the system allows samples at the deepest callstack_max
 * (32 KiB of frames: as an array on its stack, that overflowed it). */
static void test_callstack_off_the_stack(void **state) {
  (void)state;
  cs_start(5000, 4096, 1);
  pthread_attr_t a;
  pthread_attr_init(&a);
  assert_int_equal(pthread_attr_setstacksize(&a, 16384), 0);
  pthread_t t;
  assert_int_equal(pthread_create(&t, &a, small_thread, NULL), 0);
  pthread_join(t, NULL);
  pthread_attr_destroy(&a);
  assert_int_equal(mt_engine_stop(), MT_OK);
  assert_int_equal(CS.calls, 4);
  assert_int_equal(CS.seen_len, 4096);
  assert_true(CS.frames_ok);
  assert_true(CS.stack_hi > CS.stack_lo);
  assert_true(CS.buf + 4096 * 8 <= CS.stack_lo || CS.buf >= CS.stack_hi);
}

/* The process's mapped address space, in KiB (VmSize): adjacent leaked
 * pages would merge into one mapping, so mappings are not counted. */
static long vm_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmSize:", 7) == 0) kib = atol(line + 7);
  if (f) fclose(f);
  return kib;
}

/* Each sampling thread's buffer goes at its exit: 200 threads that each
 * sampled (a page each) leave the process's address space as it was. */
static void test_callstack_buffer_freed(void **state) {
  (void)state;
  cs_start(3, 0, 1);
  pthread_t t;
  pthread_create(&t, NULL, small_thread, NULL); /* the C library's thread caches, once */
  pthread_join(t, NULL);
  long before = vm_kib();
  for (int k = 0; k < 200; k++) {
    assert_int_equal(pthread_create(&t, NULL, small_thread, NULL), 0);
    pthread_join(t, NULL);
  }
  long after = vm_kib();
  assert_int_equal(mt_engine_stop(), MT_OK);
  assert_int_equal(CS.calls, 4 * 201);
  printf("address space: %ld KiB before 200 sampling threads, %ld KiB after\n", before, after);
  assert_true(before > 0 && after < before + 200); /* leaked: +800 KiB */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_api_misuse),
      cmocka_unit_test(test_rate_one_samples_every_word),
      cmocka_unit_test(test_zero_words_never_sampled),
      cmocka_unit_test(test_observed_rate),
      cmocka_unit_test(test_gap_distribution),
      cmocka_unit_test(test_nsamples_distribution),
      cmocka_unit_test(test_nsamples_large_blocks),
      cmocka_unit_test(test_no_sampling_inside_callback),
      cmocka_unit_test(test_track_free_promote),
      cmocka_unit_test(test_external_tokens),
      cmocka_unit_test(test_table_churn),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_callstack_contract),
      cmocka_unit_test(test_callstack_off_the_stack),
      cmocka_unit_test(test_callstack_buffer_freed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
