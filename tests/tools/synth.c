/*
 * mt_tools_synth: writes a small synthetic trace whose every figure is known,
 * and the truth beside it, for the tests of memtrace top, leaks and diff.
 *
 *   mt_tools_synth OUT.ctf TRUTH.json [--rate R] [--seed S] [--scale K]
 *                  [--double SITE] [--summary] [--version 2|3] [--start US]
 *                  [--gap US]
 *
 * The simulated program has a dozen allocation sites (stacks) chosen to
 * exercise the site rules: two stacks sharing one site line, one function
 * name in two files, an inlined frame, undescribed codes at the end of a
 * stack (skipped, or too many to skip), two codes that print alike, an empty
 * backtrace, names that need CSV and JSON escaping, names of 3000
 * characters, an inlined frame against the same locations as two codes,
 * objects larger than the analysis' weight cache, and a site whose objects
 * are never collected.
 *
 * Every allocation of the program is generated; each word is then sampled
 * with probability R (Bernoulli per word, via geometric gaps over one word
 * stream, as the runtimes do), and only objects with at least one sample are
 * written. TRUTH.json lists every object, sampled or not, so the tests can
 * compute the true bytes and counts of any group under any filter:
 *
 *   {"rate": R, "word_bytes": 8, "duration_us": D,
 *    "sites": [{"function", "file", "line", "site", "frames": [...]}...],
 *    "totals": [[words, objects, samples, sampled_objects] per site],
 *    "objects": [[site, words, length, nsamples, source, alloc_us, free_us]...]}
 *
 * words includes the header word of minor/major blocks (what the runtime
 * samples over); length is the object's size in words as the trace records
 * it; free_us is -1 for objects never collected; times are microseconds
 * since the trace start, all distinct. --summary omits "objects".
 *
 * Each site draws from its own random stream, so --double SITE (which
 * doubles that site's allocations) leaves the others' objects unchanged.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memtrace/format.h"

/* ---- random numbers (splitmix64: small, and the same on every libc) ---- */

static uint64_t next_u64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static double unit(uint64_t *s) { return (double)(next_u64(s) >> 11) * 0x1.0p-53; }
static uint64_t range(uint64_t *s, uint64_t lo, uint64_t hi) {
  return lo + next_u64(s) % (hi - lo + 1);
}
static double expo(uint64_t *s, double mean) { return -mean * log1p(-unit(s)); }

/* ---- the program ---- */

typedef struct fn {
  const char *name, *file;
} fn;

/* Two names of 3000 characters differing only at their end: text built
 * from names must not be cut to a fixed length. Filled in by main. */
static char long_a[3001], long_b[3001];

static const fn fns[] = {
    {"main", "main.ml"},
    {"Foo.parse", "foo.ml"},
    {"Foo.build", "foo.ml"},
    {"Bar.alloc", "bar.ml"},
    {"Bar.alloc", "baz.ml"}, /* same name, another file: another function */
    {"Inl.outer", "inl.ml"},
    {"Inl.inner", "inl.ml"},
    {"Weird, \"quoted\"\t\\ caf\xc3\xa9", "dir with space/we,ird.ml"},
    {"Dup.f", "dup.ml"},
    {"Leaky.keep", "leaky.ml"},
    {long_a, "long.ml"},
    {long_b, "long.ml"},
};
enum { MAIN, PARSE, BUILD, BAR, BAZ, OUTER, INNER, WEIRD, DUP, KEEP, LONG_A, LONG_B };

/* A code and its locations, outermost first (at most 2: one inlined). */
typedef struct code {
  uint64_t value;
  int n;
  int fn[2];
  unsigned line[2], start[2];
} code;

#define MAIN_CODE(k) {0x1000 + (k), 1, {MAIN}, {(k)}, {2}}
static const code codes[] = {
    MAIN_CODE(1), MAIN_CODE(2), MAIN_CODE(3), MAIN_CODE(4),
    MAIN_CODE(5), MAIN_CODE(6), MAIN_CODE(7), MAIN_CODE(8),
    {0x2010, 1, {PARSE}, {10}, {4}},           /* 8 */
    {0x2011, 1, {PARSE}, {11}, {4}},           /* 9 */
    {0x2012, 1, {PARSE}, {12}, {4}},           /* 10 */
    {0x2020, 1, {BUILD}, {20}, {4}},           /* 11 */
    {0x3005, 1, {BAR}, {5}, {6}},              /* 12 */
    {0x4005, 1, {BAZ}, {5}, {6}},              /* 13 */
    {0x5007, 2, {OUTER, INNER}, {7, 8}, {1, 3}}, /* 14: Inl.inner inlined */
    {0x6003, 1, {WEIRD}, {3}, {0}},            /* 15 */
    {0xdead, 0, {0}, {0}, {0}},                /* 16: no location */
    {0x7009, 1, {DUP}, {9}, {1}},              /* 17 */
    {0x7109, 1, {DUP}, {9}, {6}},              /* 18: prints as 17 */
    {0x8030, 1, {KEEP}, {30}, {0}},            /* 19 */
    {0xbee1, 0, {0}, {0}, {0}},                /* 20 */
    {0xbee2, 0, {0}, {0}, {0}},                /* 21 */
    {0x5107, 1, {OUTER}, {7}, {1}},            /* 22: with 23, prints as 14 */
    {0x5208, 1, {INNER}, {8}, {3}},            /* 23 */
    MAIN_CODE(9),                              /* 24 */
    {0x9001, 1, {LONG_A}, {1}, {0}},           /* 25 */
    {0x9002, 1, {LONG_B}, {1}, {0}},           /* 26 */
};
#define NCODES (sizeof codes / sizeof *codes)

typedef struct site {
  int len;
  int stack[4];        /* indices into codes, outermost first */
  double count;        /* objects at scale 1 */
  unsigned lo, hi;     /* length in words, uniform */
  mt_source source;
  double life_us;      /* mean lifetime */
  double p_never;      /* probability of never being collected */
} site;

static const site sites[] = {
    {3, {0, 8, 12}, 3000, 2, 10, MT_SOURCE_MINOR, 300, 0.01},    /* 0 Bar.alloc bar.ml:5 */
    {3, {1, 11, 12}, 2000, 2, 10, MT_SOURCE_MINOR, 300, 0.01},   /* 1 same site line */
    {2, {0, 9}, 1500, 20, 100, MT_SOURCE_MINOR, 2000, 0.02},     /* 2 Foo.parse:11 */
    {2, {1, 10}, 800, 100, 300, MT_SOURCE_MAJOR, 50000, 0.05},   /* 3 Foo.parse:12 */
    {2, {2, 13}, 1000, 5, 50, MT_SOURCE_EXTERNAL, 5000, 0.02},   /* 4 Bar.alloc baz.ml:5 */
    {2, {3, 14}, 1000, 1, 4, MT_SOURCE_MINOR, 100, 0.0},         /* 5 Inl.inner:8 */
    {3, {4, 15, 16}, 500, 10, 20, MT_SOURCE_EXTERNAL, 1000, 0.1}, /* 6 Weird:3, skip 1 */
    {2, {5, 17}, 400, 8, 8, MT_SOURCE_MINOR, 200, 0.05},         /* 7 Dup.f:9 */
    {2, {5, 18}, 400, 8, 8, MT_SOURCE_MINOR, 200, 0.05},         /* 8 prints as 7 */
    {0, {0}, 300, 16, 16, MT_SOURCE_EXTERNAL, 500, 0.1},         /* 9 no backtrace */
    {2, {6, 19}, 200, 1000, 8000, MT_SOURCE_MAJOR, 0, 1.0},      /* 10 never collected */
    {4, {7, 16, 20, 21}, 300, 3, 6, MT_SOURCE_MINOR, 100, 0.0},  /* 11 no site: 3 unknown */
    {3, {3, 22, 23}, 300, 2, 6, MT_SOURCE_MINOR, 100, 0.1},      /* 12 prints as 5 */
    {2, {24, 25}, 200, 4, 8, MT_SOURCE_EXTERNAL, 100, 0.1},      /* 13 long name */
    {2, {24, 26}, 100, 4, 8, MT_SOURCE_EXTERNAL, 100, 0.1},      /* 14 the other */
};
#define NSITES (sizeof sites / sizeof *sites)

typedef struct obj {
  int site;
  uint64_t words, length, nsamples, alloc, free; /* free: UINT64_MAX = never */
  uint64_t id;
} obj;

typedef struct event {
  uint64_t time;
  int kind; /* 0 alloc, 1 promote, 2 collect */
  size_t obj;
} event;

static void die(const char *msg) {
  fprintf(stderr, "mt_tools_synth: %s\n", msg);
  exit(1);
}

static int resolve(void *ctx, uint64_t value, const mt_location **locs, size_t *n) {
  static mt_location buf[2];
  (void)ctx;
  *locs = NULL;
  *n = 0;
  for (size_t c = 0; c < NCODES; c++) {
    if (codes[c].value != value) continue;
    for (int i = 0; i < codes[c].n; i++) {
      buf[i].defname = fns[codes[c].fn[i]].name;
      buf[i].filename = fns[codes[c].fn[i]].file;
      buf[i].line = codes[c].line[i];
      buf[i].start_char = codes[c].start[i];
      buf[i].end_char = codes[c].start[i] + 5;
    }
    *locs = codes[c].n ? buf : NULL;
    *n = (size_t)codes[c].n;
  }
  return 0;
}

static int by_time(const void *x, const void *y) {
  const event *a = x, *b = y;
  if (a->time != b->time) return a->time < b->time ? -1 : 1;
  if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
  return a->obj < b->obj ? -1 : a->obj > b->obj;
}

/* Orders objects by the random key their alloc field holds before times
 * are assigned. */
static int cmp_key(const void *x, const void *y) {
  const obj *a = x, *b = y;
  return a->alloc < b->alloc ? -1 : a->alloc > b->alloc;
}

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

/* The printed frame of a location, as the tools print it. */
static void frame_text(char *buf, size_t n, int f, unsigned line) {
  snprintf(buf, n, "%s (%s:%u)", fns[f].name, fns[f].file, line);
}

int main(int argc, char **argv) {
  if (argc < 3) die("usage: mt_tools_synth OUT.ctf TRUTH.json [--rate R] [--seed S] "
                    "[--scale K] [--double SITE] [--summary] [--version 2|3] [--start US] [--gap US]");
  const char *out = argv[1], *truth = argv[2];
  memset(long_a, 'x', sizeof long_a - 1);
  memset(long_b, 'x', sizeof long_b - 1);
  long_a[sizeof long_a - 2] = 'a';
  long_b[sizeof long_b - 2] = 'b';
  double rate = 1, scale = 1;
  uint64_t seed = 1;
  int doubled = -1, summary = 0, version = 2;
  uint64_t start = 1700000000000000ull; /* us since the epoch; --start US adds */
  double alloc_gap = 20; /* the mean gap between allocations, us */
  for (int i = 3; i < argc; i++) {
    if (strcmp(argv[i], "--summary") == 0) summary = 1;
    else if (i + 1 >= argc) die("option without a value");
    else if (strcmp(argv[i], "--rate") == 0) rate = atof(argv[++i]);
    else if (strcmp(argv[i], "--seed") == 0) seed = strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--scale") == 0) scale = atof(argv[++i]);
    else if (strcmp(argv[i], "--double") == 0) doubled = atoi(argv[++i]);
    else if (strcmp(argv[i], "--version") == 0) version = atoi(argv[++i]);
    else if (strcmp(argv[i], "--start") == 0) start += strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--gap") == 0) alloc_gap = atof(argv[++i]);
    else die("unknown option");
  }
  if (!(rate > 0 && rate <= 1)) die("--rate must be in (0, 1]");

  /* Every allocation, site by site, each site from its own stream. */
  size_t nobj = 0, cap = 0;
  obj *objs = NULL;
  for (size_t s = 0; s < NSITES; s++) {
    uint64_t st = seed * 1000003 + s;
    size_t count = (size_t)llround(sites[s].count * scale * ((int)s == doubled ? 2 : 1));
    for (size_t k = 0; k < count; k++) {
      if (nobj == cap) {
        cap = cap ? cap * 2 : 4096;
        objs = realloc(objs, cap * sizeof *objs);
        if (!objs) die("out of memory");
      }
      obj *o = &objs[nobj++];
      o->site = (int)s;
      o->length = range(&st, sites[s].lo, sites[s].hi);
      o->words = o->length + (sites[s].source != MT_SOURCE_EXTERNAL);
      /* allocation order: a random key, replaced by a time below */
      o->alloc = next_u64(&st);
      o->free = unit(&st) < sites[s].p_never ? UINT64_MAX : 1 + (uint64_t)expo(&st, sites[s].life_us);
    }
  }
  /* Interleave the sites in time: sort by the random key, then give
   * increasing, distinct times (a mean gap of 20 us, or --gap's). */
  qsort(objs, nobj, sizeof *objs, cmp_key);
  uint64_t ts = seed ^ 0x5eed, t = 0;
  for (size_t i = 0; i < nobj; i++) {
    t += 1 + (uint64_t)expo(&ts, alloc_gap);
    objs[i].alloc = t;
    if (objs[i].free != UINT64_MAX) objs[i].free += t; /* free held the lifetime */
  }

  /* Sampling: one stream of words, a geometric gap to each sampled word. */
  uint64_t ss = seed ^ 0xa11ce, gap = 0;
  double l1m = log1p(-rate);
  for (size_t i = 0; i < nobj; i++) {
    if (rate >= 1) {
      objs[i].nsamples = objs[i].words;
      continue;
    }
    uint64_t left = objs[i].words, n = 0;
    for (;;) {
      if (gap == 0) gap = 1 + (uint64_t)floor(log1p(-unit(&ss)) / l1m);
      if (gap > left) {
        gap -= left;
        break;
      }
      left -= gap;
      gap = 0;
      n++;
    }
    objs[i].nsamples = n;
  }

  /* Events of the sampled objects, in time order with distinct times. */
  event *ev = malloc(3 * nobj * sizeof *ev);
  if (!ev) die("out of memory");
  size_t nev = 0;
  for (size_t i = 0; i < nobj; i++) {
    if (!objs[i].nsamples) continue;
    ev[nev++] = (event){objs[i].alloc, 0, i};
    uint64_t promote = objs[i].alloc + 50;
    if (sites[objs[i].site].source == MT_SOURCE_MINOR && promote < objs[i].free)
      ev[nev++] = (event){promote, 1, i};
    if (objs[i].free != UINT64_MAX) ev[nev++] = (event){objs[i].free, 2, i};
  }
  qsort(ev, nev, sizeof *ev, by_time);
  uint64_t last = 0;
  for (size_t e = 0; e < nev; e++) {
    if (e && ev[e].time <= last) ev[e].time = last + 1;
    last = ev[e].time;
    obj *o = &objs[ev[e].obj];
    if (ev[e].kind == 0) o->alloc = last;
    else if (ev[e].kind == 2) o->free = last;
  }

  int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die(strerror(errno));
  mt_trace_info info = {0};
  info.sample_rate = rate;
  info.word_size = 64;
  info.executable_name = "/usr/bin/synthetic";
  info.host_name = "testhost";
  info.runtime_params = "";
  info.pid = 4242;
  info.start_time = start;
  info.context = "mt_tools_synth";
  mt_writer_options opt = {.version = version, .fd = fd, .resolve = resolve};
  mt_writer *w;
  if (mt_writer_open(&w, &info, &opt) != MT_OK) die(mt_writer_error(w));
  for (size_t e = 0; e < nev; e++) {
    obj *o = &objs[ev[e].obj];
    const site *s = &sites[o->site];
    int rc;
    if (ev[e].kind == 0) {
      uint64_t bt[4];
      for (int k = 0; k < s->len; k++) bt[k] = codes[s->stack[k]].value;
      rc = mt_writer_alloc(w, start + ev[e].time, 0, o->length, o->nsamples, s->source, bt,
                           (size_t)s->len, &o->id);
    } else if (ev[e].kind == 1) {
      rc = mt_writer_promote(w, start + ev[e].time, 0, o->id);
    } else {
      rc = mt_writer_collect(w, start + ev[e].time, 0, o->id);
    }
    if (rc != MT_OK) die(mt_writer_error(w));
  }
  if (mt_writer_close(w) != MT_OK) die("closing the writer failed");
  close(fd);

  FILE *f = fopen(truth, "w");
  if (!f) die(strerror(errno));
  fprintf(f, "{\"rate\": %.17g, \"word_bytes\": 8, \"duration_us\": %llu,\n \"sites\": [", rate,
          (unsigned long long)last);
  for (size_t s = 0; s < NSITES; s++) {
    const site *st = &sites[s];
    char text[4096];
    fprintf(f, "%s\n  {", s ? "," : "");
    /* the site: innermost location of the last frame, skipping up to 2
     * undescribed frames */
    int k = st->len - 1, skipped = 0;
    while (k >= 0 && skipped <= 2 && codes[st->stack[k]].n == 0) k--, skipped++;
    if (st->len == 0) {
      fprintf(f, "\"site\": \"(no backtrace)\", ");
    } else if (k < 0 || skipped > 2) {
      fprintf(f, "\"site\": \"#%llx\", ", (unsigned long long)codes[st->stack[st->len - 1]].value);
    } else {
      const code *c = &codes[st->stack[k]];
      fprintf(f, "\"function\": ");
      json_str(f, fns[c->fn[c->n - 1]].name);
      fprintf(f, ", \"file\": ");
      json_str(f, fns[c->fn[c->n - 1]].file);
      fprintf(f, ", \"line\": %u, ", c->line[c->n - 1]);
    }
    fprintf(f, "\"source\": %d, \"frames\": [", (int)st->source);
    int first = 1;
    for (int j = st->len - 1; j >= 0; j--) {
      const code *c = &codes[st->stack[j]];
      if (c->n == 0) {
        snprintf(text, sizeof text, "#%llx", (unsigned long long)c->value);
        fprintf(f, "%s", first ? "" : ", ");
        json_str(f, text);
        first = 0;
      }
      for (int i = c->n - 1; i >= 0; i--) {
        frame_text(text, sizeof text, c->fn[i], c->line[i]);
        fprintf(f, "%s", first ? "" : ", ");
        json_str(f, text);
        first = 0;
      }
    }
    fprintf(f, "], \"names\": [");
    first = 1;
    for (int j = 0; j < st->len; j++)
      for (int i = 0; i < codes[st->stack[j]].n; i++) {
        fprintf(f, "%s", first ? "" : ", ");
        json_str(f, fns[codes[st->stack[j]].fn[i]].name);
        first = 0;
      }
    fprintf(f, "]}");
  }
  fprintf(f, "],\n \"totals\": [");
  for (size_t s = 0; s < NSITES; s++) {
    unsigned long long words = 0, n = 0, samples = 0, sampled = 0;
    for (size_t i = 0; i < nobj; i++)
      if (objs[i].site == (int)s) {
        words += objs[i].words;
        n++;
        samples += objs[i].nsamples;
        sampled += objs[i].nsamples > 0;
      }
    fprintf(f, "%s[%llu, %llu, %llu, %llu]", s ? ", " : "", words, n, samples, sampled);
  }
  fprintf(f, "]");
  if (!summary) {
    fprintf(f, ",\n \"objects\": [");
    for (size_t i = 0; i < nobj; i++) {
      const obj *o = &objs[i];
      fprintf(f, "%s\n  [%d, %llu, %llu, %llu, %d, %llu, %lld]", i ? "," : "", o->site,
              (unsigned long long)o->words, (unsigned long long)o->length,
              (unsigned long long)o->nsamples, (int)sites[o->site].source,
              (unsigned long long)o->alloc,
              o->free == UINT64_MAX ? -1LL : (long long)o->free);
    }
    fprintf(f, "]");
  }
  fprintf(f, "}\n");
  if (fclose(f) != 0) die("writing the truth failed");
  free(objs);
  free(ev);
  return 0;
}
