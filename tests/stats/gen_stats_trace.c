/*
 * gen_stats_trace: writes small synthetic traces whose every figure is known,
 * for the tests of `memtrace stats` and `memtrace timeline`.
 *
 *   gen_stats_trace SCENARIO OUT.ctf TRUTH.json [SEED]
 *
 * Scenarios:
 *   exact    rate 1, nine hand-placed objects (test_stats.py checks figures
 *            worked out by hand as well as its own oracle);
 *   random   rate 1, a few thousand objects over every size bin, lifetime
 *            decade and source, some promoted, some never collected;
 *   empty    a trace_info and no events;
 *   instant  three objects, all at the trace's first instant (duration 0);
 *   sampled  rate 0.01, a population of allocations each sampled as the
 *            tracer would (every word independently: nsamples ~ Binomial(w,
 *            rate), w counting the header word for minor and major blocks);
 *            only those with a sample are written.
 *
 * TRUTH.json holds the whole population: for each object its allocation and
 * collection times (us since the trace start; -1 for never), length, source
 * (0 minor, 1 major, 2 external), nsamples, promotion time (-1 for none),
 * stack and whether it was written; then the written events in trace order.
 * The test computes the expected output from it on its own.
 */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memtrace/format.h"

#define T0 1700000000000000ull /* the trace's start, us since the epoch */

typedef struct obj {
  long long alloc, free, promote; /* -1: never */
  unsigned long long length, nsamples;
  int source, stack, written;
  uint64_t id;
} obj;

typedef struct event {
  long long time;
  long seq;
  int kind; /* 0 alloc, 1 promote, 2 collect */
  size_t obj;
} event;

/* Three stacks (outermost first) over five codes, so --inside has
 * something to choose between. */
static const uint64_t stack_codes[3][3] = {{1, 2, 0}, {1, 3, 0}, {1, 4, 5}};
static const size_t stack_len[3] = {2, 2, 3};
static const char *const code_name[6] = {"", "main", "List.map", "Hashtbl.add",
                                         "Buffer.create", "Bytes.make"};

static int resolve(void *ctx, uint64_t code, const mt_location **locs, size_t *n) {
  static mt_location loc;
  (void)ctx;
  loc.filename = "gen.ml";
  loc.defname = code < 6 ? code_name[code] : "?";
  loc.line = (uint32_t)code * 10;
  loc.start_char = 1;
  loc.end_char = 5;
  *locs = &loc;
  *n = 1;
  return 0;
}

/* ---- a deterministic generator (splitmix64), the same on every libc ---- */

static uint64_t rng_state;
static uint64_t next_u64(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static double uniform(void) { return (double)(next_u64() >> 11) * 0x1.0p-53; }
static unsigned long long range(unsigned long long lo, unsigned long long hi) {
  return lo + next_u64() % (hi - lo + 1);
}

/* Samples in a block of w words: the positions of successes among w
 * Bernoulli(rate) trials, found by geometric jumps. */
static unsigned long long binomial(unsigned long long w, double rate) {
  if (rate >= 1) return w;
  unsigned long long n = 0;
  double pos = 0, l = log1p(-rate);
  for (;;) {
    double u = uniform();
    pos += floor(log1p(-u) / l) + 1; /* trials up to the next success */
    if (pos > (double)w) return n;
    n++;
  }
}

static obj *objs;
static size_t nobjs, cap;

static obj *add(long long alloc, long long free, int source, unsigned long long length,
                long long promote, int stack) {
  if (nobjs == cap) {
    cap = cap ? cap * 2 : 1024;
    objs = realloc(objs, cap * sizeof *objs);
    if (!objs) exit(3);
  }
  obj *o = &objs[nobjs++];
  memset(o, 0, sizeof *o);
  o->alloc = alloc;
  o->free = free;
  o->promote = promote;
  o->source = source;
  o->length = length;
  o->stack = stack;
  return o;
}

/* Words the sampler draws over: the OCaml header word too. */
static unsigned long long words(const obj *o) { return o->length + (o->source != 2); }

static void scenario_exact(void) {
  /* alloc, free, source, length, promote, stack; nsamples = words */
  add(0, 5, 0, 2, -1, 0);
  add(10, 1010, 0, 32, 20, 0);
  add(100, -1, 1, 300, -1, 1);
  add(200, 300, 2, 20000, -1, 2);
  add(400, 400, 0, 256, -1, 1);
  add(500, 2500, 2, 33, -1, 2);
  add(600, 200600, 1, 10000, -1, 0);
  add(300000, 400000, 0, 3, -1, 0); /* allocated and collected on bin ends */
  add(1000000, -1, 0, 1, -1, 1);    /* the last event: the trace is 1 s */
  for (size_t i = 0; i < nobjs; i++) objs[i].nsamples = words(&objs[i]), objs[i].written = 1;
}

/* Lifetimes spread over every decade up to ~1 s, some never collected. */
static long long lifetime(void) {
  if (uniform() < 0.1) return -1;
  int dec = (int)range(0, 6);
  long long lo = dec ? (long long)pow(10, dec - 1) : 0, hi = (long long)pow(10, dec) - 1;
  if (dec == 0) hi = 0;
  return lo + (long long)(uniform() * (double)(hi - lo + 1));
}

static unsigned long long size_words(void) {
  double u = uniform();
  if (u < 0.6) return range(1, 32);
  if (u < 0.85) return range(33, 256);
  if (u < 0.98) return range(257, 10000);
  return range(10001, 60000);
}

static void scenario_population(size_t n, long long step, double rate) {
  for (size_t i = 0; i < n; i++) {
    long long t = (long long)i * step + (long long)range(0, (unsigned long long)step - 1);
    unsigned long long len = size_words();
    int src = len <= 256 ? (uniform() < 0.85 ? 0 : 2) : (uniform() < 0.7 ? 1 : 2);
    long long life = lifetime();
    long long promote = -1;
    if (src == 0 && life != 0 && uniform() < 0.3)
      promote = t + (life < 0 ? (long long)range(0, 1000) : life / 2);
    obj *o = add(t, life < 0 ? -1 : t + life, src, len, promote, (int)range(0, 2));
    o->nsamples = binomial(words(o), rate);
    o->written = o->nsamples > 0;
  }
}

static int cmp_event(const void *x, const void *y) {
  const event *a = x, *b = y;
  if (a->time != b->time) return a->time < b->time ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: gen_stats_trace SCENARIO OUT.ctf TRUTH.json [SEED]\n");
    return 2;
  }
  const char *scen = argv[1];
  rng_state = argc > 4 ? strtoull(argv[4], NULL, 10) : 42;
  double rate = 1;
  if (strcmp(scen, "exact") == 0) scenario_exact();
  else if (strcmp(scen, "random") == 0) scenario_population(4000, 250, 1);
  else if (strcmp(scen, "sampled") == 0) rate = 0.01, scenario_population(100000, 10, rate);
  else if (strcmp(scen, "empty") == 0) (void)0; /* a trace_info and nothing else */
  else if (strcmp(scen, "native") == 0) {
    /* A native program's: every block external (malloc), sizes in words of
     * 8 bytes; 3 of 40 B, 2 of 4 KiB, 1 of 1 MiB never freed. */
    for (int i = 0; i < 3; i++) add(10 * i, 10 * i + 5, 2, 5, -1, 0);
    for (int i = 0; i < 2; i++) add(100 + 10 * i, 1000 + 10 * i, 2, 512, -1, 1);
    add(2000, -1, 2, 131072, -1, 2);
    add(1000000, 1000001, 2, 1, -1, 0);
    for (size_t i = 0; i < nobjs; i++) objs[i].nsamples = words(&objs[i]), objs[i].written = 1;
  }
  else if (strcmp(scen, "instant") == 0) {
    /* Everything at the trace's first instant: a duration of 0. */
    add(0, 0, 0, 4, -1, 0)->nsamples = 5;
    add(0, -1, 1, 500, -1, 1)->nsamples = 501;
    add(0, -1, 2, 7, -1, 2)->nsamples = 7;
    for (size_t i = 0; i < nobjs; i++) objs[i].written = 1;
  }
  else {
    fprintf(stderr, "gen_stats_trace: no scenario '%s'\n", scen);
    return 2;
  }

  /* The written objects' events, in time order (ties: creation order). */
  event *ev = malloc((3 * nobjs + 1) * sizeof *ev);
  size_t nev = 0;
  long seq = 0;
  for (size_t i = 0; i < nobjs; i++) {
    if (!objs[i].written) continue;
    ev[nev++] = (event){objs[i].alloc, seq++, 0, i};
    if (objs[i].promote >= 0) ev[nev++] = (event){objs[i].promote, seq++, 1, i};
    if (objs[i].free >= 0) ev[nev++] = (event){objs[i].free, seq++, 2, i};
  }
  qsort(ev, nev, sizeof *ev, cmp_event);

  int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    perror(argv[2]);
    return 1;
  }
  mt_trace_info info = {0};
  info.sample_rate = rate;
  info.word_size = 64;
  info.executable_name = "gen_stats_trace";
  info.host_name = "test";
  info.runtime_params = "";
  info.pid = 4242;
  info.start_time = T0;
  info.context = "";
  mt_writer_options opt = {0};
  opt.version = 2;
  opt.fd = fd;
  opt.resolve = resolve;
  mt_writer *w;
  if (mt_writer_open(&w, &info, &opt) != MT_OK) {
    fprintf(stderr, "gen_stats_trace: %s\n", w ? mt_writer_error(w) : "out of memory");
    return 1;
  }
  for (size_t k = 0; k < nev; k++) {
    obj *o = &objs[ev[k].obj];
    uint64_t t = T0 + (uint64_t)ev[k].time;
    int rc;
    if (ev[k].kind == 0)
      rc = mt_writer_alloc(w, t, 0, o->length, o->nsamples, (mt_source)o->source,
                           stack_codes[o->stack], stack_len[o->stack], &o->id);
    else if (ev[k].kind == 1) rc = mt_writer_promote(w, t, 0, o->id);
    else rc = mt_writer_collect(w, t, 0, o->id);
    if (rc != MT_OK) {
      fprintf(stderr, "gen_stats_trace: %s\n", mt_writer_error(w));
      return 1;
    }
  }
  if (mt_writer_close(w) != MT_OK || close(fd) != 0) {
    fprintf(stderr, "gen_stats_trace: writing %s failed\n", argv[2]);
    return 1;
  }

  FILE *f = fopen(argv[3], "w");
  if (!f) {
    perror(argv[3]);
    return 1;
  }
  fprintf(f, "{\"rate\": %.17g, \"word_bytes\": 8,\n \"stacks\": [", rate);
  for (int s = 0; s < 3; s++) {
    fprintf(f, "%s[", s ? ", " : "");
    for (size_t k = 0; k < stack_len[s]; k++)
      fprintf(f, "%s\"%s\"", k ? ", " : "", code_name[stack_codes[s][k]]);
    fprintf(f, "]");
  }
  fprintf(f, "],\n \"objects\": [\n");
  for (size_t i = 0; i < nobjs; i++) {
    const obj *o = &objs[i];
    fprintf(f, "  [%lld, %lld, %llu, %d, %llu, %lld, %d, %d]%s\n", o->alloc, o->free, o->length,
            o->source, o->nsamples, o->promote, o->stack, o->written, i + 1 < nobjs ? "," : "");
  }
  fprintf(f, " ],\n \"events\": [\n");
  for (size_t k = 0; k < nev; k++)
    fprintf(f, "  [%lld, %d, %zu]%s\n", ev[k].time, ev[k].kind, ev[k].obj, k + 1 < nev ? "," : "");
  fprintf(f, " ]}\n");
  if (fclose(f) != 0) return 1;
  free(ev);
  free(objs);
  return 0;
}
