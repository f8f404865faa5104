/* Property tests: random traces written with the writer read back equal.
 *
 * Each iteration draws a trace from a seeded PRNG: format version 2 or 3
 * (v3 with up to four domains interleaved), a universe of location codes
 * with random location lists (inlined lists, empty lists, 31+ files and
 * function names, values past their bit-field clamps, lists that fall back
 * to "<unknown>"), and a stream of allocations (every source, lengths and
 * sample counts across the vint boundaries, short and long events, stacks
 * that grow and shrink with shared prefixes, long stacks, deep recursion
 * with repetitive frames, identical and empty stacks), promotions,
 * collections (v3: across domains), explicit flushes, small and huge time
 * steps, and (in some iterations) time going backwards.
 *
 * Read back, every event must equal what was written (times clamped to
 * monotone per domain, as documented), each domain's order kept, and the
 * whole order kept when the written times were monotone; every code used
 * must resolve to its locations (clamped, or the "<unknown>" fallback).
 *
 * On failure the seed is printed; rerun one random trace with
 *   MT_PROP_SEED=<seed> ./test_roundtrip
 * (the pipe cases take theirs from MT_PROP_PIPE_SEED, default 4242 and
 * 4243 for v2 and v3: MT_PROP_PIPE_SEED=<seed of v2 case>)
 * and change the amount of work with MT_PROP_ITERS=<n> (default 150, 60
 * under AddressSanitizer); MT_PROP_BASE_SEED=<n> draws other traces. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mt_test_util.h"

/* Sanitized builds run fewer traces by default (each costs ~5x more). */
#if defined(__SANITIZE_ADDRESS__)
#define DEFAULT_ITERS 60
#else
#define DEFAULT_ITERS 150
#endif

#define MAX_NEW_SUFFIX 400 /* frames: keeps every coding under the 4 KiB cut */
#define MAX_STACK 4000
#define MAX_DOMS 4

/* A check that names the seed when it fails (use in per-seed code). */
#define SCHECK(seed, cond)                                                        \
  do {                                                                            \
    if (!(cond)) fail_msg("seed %llu: %s", (unsigned long long)(seed), #cond);    \
  } while (0)

/* ---- the universe of codes and their locations ---- */

typedef struct codeinfo {
  uint64_t code;
  mt_location *locs; /* what the resolver gives */
  size_t n;
  mt_location *want; /* what the reader must return (clamped / fallback) */
  size_t nwant;
  int used;
} codeinfo;

typedef struct universe {
  codeinfo *c; /* sorted by code */
  size_t n;
  char **strings; /* owned */
  size_t nstrings;
} universe;

static int cmp_code(const void *a, const void *b) {
  uint64_t x = ((const codeinfo *)a)->code, y = ((const codeinfo *)b)->code;
  return x < y ? -1 : x > y;
}

static char *own(universe *u, char *s) {
  u->strings = realloc(u->strings, (u->nstrings + 1) * sizeof *u->strings);
  u->strings[u->nstrings++] = s;
  return s;
}

static uint32_t rnd_field(tu_rng *r, uint32_t typical, uint32_t limit) {
  switch (tu_below(r, 20)) {
  case 0: return (uint32_t)tu_next(r);                  /* way past */
  case 1: return limit + (uint32_t)tu_below(r, 3) - 1;  /* at the edge */
  case 2: return 0;
  default: return (uint32_t)tu_below(r, typical);
  }
}

static void universe_make(universe *u, tu_rng *r, size_t ncodes) {
  memset(u, 0, sizeof *u);
  enum { NF = 40, ND = 50 };
  const char *files[NF], *defs[ND];
  for (int i = 0; i < NF; i++) {
    char *s = malloc(400);
    if (i == 0) snprintf(s, 400, "%s", "");
    else if (i == 1) snprintf(s, 400, "%s", "lib/\xc3\xbcn\xc3\xaf" "c\xc3\xb6" "d\xc3\xa9.ml");
    else if (i < 5) snprintf(s, 400, "src/very/long/path/%0300d/file%d.ml", i, i);
    else snprintf(s, 400, "src/dir%d/file_%d.ml", i % 6, i);
    files[i] = own(u, s);
  }
  for (int i = 0; i < ND; i++) {
    char *s = malloc(64);
    if (i == 0) snprintf(s, 64, "%s", "");
    else if (i == 1) snprintf(s, 64, "%s", "??");
    else snprintf(s, 64, "Module_%d.fun_%d", i % 9, i);
    defs[i] = own(u, s);
  }
  char *huge = malloc(5001);
  memset(huge, 'h', 5000);
  huge[5000] = 0;
  own(u, huge);

  u->n = ncodes;
  u->c = calloc(ncodes, sizeof *u->c);
  for (size_t i = 0; i < ncodes; i++) {
    codeinfo *c = &u->c[i];
    /* return-address-like codes, some small, some with the top bit; never 0 */
    do {
      c->code = tu_next(r) >> tu_below(r, 40);
    } while (c->code == 0);
    size_t n;
    unsigned k = (unsigned)tu_below(r, 1000);
    if (k < 50) n = 0;
    else if (k < 650) n = 1;
    else if (k < 950) n = 2 + tu_below(r, 4);
    else if (k < 990) n = 6 + tu_below(r, 25);
    else if (k < 995) n = 256 + tu_below(r, 40); /* too many: fallback */
    else n = 1;
    c->n = n;
    c->locs = n ? calloc(n, sizeof *c->locs) : NULL;
    for (size_t j = 0; j < n; j++) {
      mt_location *l = &c->locs[j];
      /* files cluster: consecutive locations of a list share files */
      l->filename = files[tu_chance(r, 60) ? tu_below(r, 10) : tu_below(r, NF)];
      l->defname = defs[tu_chance(r, 60) ? tu_below(r, 8) : tu_below(r, ND)];
      l->line = rnd_field(r, 20000, 0xfffff);
      l->start_char = rnd_field(r, 200, 0xff);
      l->end_char = rnd_field(r, 400, 0x3ff);
    }
    if (k >= 995) c->locs[0].filename = huge; /* too big: fallback */
    /* what the reader must give back: memtrace's rule and clamps */
    size_t worst = 9;
    for (size_t j = 0; j < n; j++)
      worst += 6 + strlen(c->locs[j].filename) + 1 + strlen(c->locs[j].defname) + 1;
    if (n > 255 || worst > 4096) {
      c->nwant = 1;
      c->want = malloc(sizeof *c->want);
      c->want[0] = (mt_location){"<unknown>", "??", 1, 1, 1};
    } else {
      c->nwant = n;
      c->want = n ? malloc(n * sizeof *c->want) : NULL;
      for (size_t j = 0; j < n; j++) {
        c->want[j] = c->locs[j];
        if (c->want[j].line > 0xfffff) c->want[j].line = 0xfffff;
        if (c->want[j].start_char > 0xff) c->want[j].start_char = 0xff;
        if (c->want[j].end_char > 0x3ff) c->want[j].end_char = 0x3ff;
      }
    }
  }
  qsort(u->c, u->n, sizeof *u->c, cmp_code);
  /* drop duplicates (vanishingly rare) by making them distinct */
  for (size_t i = 1; i < u->n; i++)
    if (u->c[i].code == u->c[i - 1].code) u->c[i].code = u->c[i - 1].code + 1;
  qsort(u->c, u->n, sizeof *u->c, cmp_code);
}

static void universe_free(universe *u) {
  for (size_t i = 0; i < u->n; i++) {
    free(u->c[i].locs);
    free(u->c[i].want);
  }
  free(u->c);
  for (size_t i = 0; i < u->nstrings; i++) free(u->strings[i]);
  free(u->strings);
  memset(u, 0, sizeof *u);
}

static codeinfo *find_code(const universe *u, uint64_t code) {
  codeinfo key = {.code = code};
  return bsearch(&key, u->c, u->n, sizeof *u->c, cmp_code);
}

typedef struct resolve_ctx {
  universe *u;
  size_t calls, unknown;
} resolve_ctx;

static int resolve(void *ctx, uint64_t code, const mt_location **locs, size_t *n) {
  resolve_ctx *rc = ctx;
  rc->calls++;
  codeinfo *c = find_code(rc->u, code);
  if (!c) {
    rc->unknown++;
    *locs = NULL;
    *n = 0;
    return 0;
  }
  *locs = c->locs;
  *n = c->n;
  return 0;
}

/* ---- the expected events ---- */

typedef struct xev {
  mt_event_kind kind;
  mt_source source;
  uint32_t domain;
  uint64_t time, obj_id, length, nsamples;
  size_t bt_off, bt_len, common;
} xev;

typedef struct model {
  xev *ev;
  size_t n, cap;
  uint64_t *bts;
  size_t bts_len, bts_cap;
  int monotone; /* the written times never went backwards */
} model;

static void model_free(model *m) {
  free(m->ev);
  free(m->bts);
  memset(m, 0, sizeof *m);
}

static xev *model_push(model *m) {
  if (m->n == m->cap) {
    m->cap = m->cap ? m->cap * 2 : 1024;
    m->ev = realloc(m->ev, m->cap * sizeof *m->ev);
  }
  xev *e = &m->ev[m->n++];
  memset(e, 0, sizeof *e);
  return e;
}

static size_t model_bt(model *m, const uint64_t *bt, size_t n) {
  if (n == 0) return m->bts_len;
  if (m->bts_len + n > m->bts_cap) {
    m->bts_cap = m->bts_cap ? m->bts_cap * 2 : 65536;
    while (m->bts_cap < m->bts_len + n) m->bts_cap *= 2;
    m->bts = realloc(m->bts, m->bts_cap * sizeof *m->bts);
  }
  memcpy(m->bts + m->bts_len, bt, n * sizeof *bt);
  m->bts_len += n;
  return m->bts_len - n;
}

/* coverage, over all iterations: a test that exercised nothing fails */
static struct {
  size_t short_alloc, long_alloc, src[3], promote, collect, cross_collect, flush;
  size_t v2, v3, multi_domain, deep, vint_len[4], nsamples_big, gap_30s, backwards;
  size_t empty_bt, same_bt, fallback_locs, empty_locs, max_depth, events;
} cov;

static unsigned vint_class(uint64_t v) {
  return v <= 252 ? 0 : v <= 0xffff ? 1 : v <= INT32_MAX ? 2 : 3;
}

/* ---- the generator ---- */

typedef struct gen_params {
  uint64_t seed;
  int version;
  size_t nevents;
  size_t ncodes;
  int ndoms;
  int chaos;   /* times may go backwards */
  int stop_domain_early; /* v3: the last domain stops after a few events */
  int fat; /* many fresh long stacks: megabytes of trace quickly */
} gen_params;

typedef struct domstate {
  uint32_t id;
  uint64_t stack[MAX_STACK];
  size_t len;
  uint64_t prev[MAX_STACK];
  size_t prev_len;
  int has_prev;
  uint64_t last_time;
  int recursing; /* steps of deep recursion left */
  size_t rec_base; /* stack length when it started */
  uint64_t pattern[3];
  int period;
} domstate;

static uint64_t pick_length(tu_rng *r) {
  static const uint64_t edges[] = {0,      1,       16,         17,         252,
                                   253,    254,     0xffff,     0x10000,    INT32_MAX,
                                   (uint64_t)INT32_MAX + 1, 0xffffffffull, 1ull << 40,
                                   (uint64_t)INT64_MAX};
  unsigned k = (unsigned)tu_below(r, 100);
  if (k < 50) return 1 + tu_below(r, 16);
  if (k < 75) return tu_below(r, 1000);
  if (k < 90) return edges[tu_below(r, sizeof edges / sizeof edges[0])];
  return tu_next(r) >> (1 + tu_below(r, 63));
}

static uint64_t pick_nsamples(tu_rng *r) {
  unsigned k = (unsigned)tu_below(r, 100);
  if (k < 70) return 1;
  if (k < 90) return 2 + tu_below(r, 300);
  static const uint64_t edges[] = {252, 253, 0xffff, 0x10000, INT32_MAX, (uint64_t)INT32_MAX + 1};
  return edges[tu_below(r, 6)];
}

/* Changes the domain's stack: pops, pushes, recursion, fresh stacks. */
static void next_stack(tu_rng *r, const universe *u, domstate *d, int fat) {
  const codeinfo *c = u->c;
  if (fat && tu_chance(r, 40)) {
    d->len = 0;
    size_t n = 100 + tu_below(r, 300);
    for (size_t i = 0; i < n; i++) d->stack[d->len++] = c[tu_below(r, u->n)].code;
    return;
  }
  size_t hot = u->n < 200 ? u->n : 200;
  if (d->recursing > 0) {
    /* descend: push another run of the repeating pattern */
    size_t add = 20 + tu_below(r, 300);
    for (size_t i = 0; i < add && d->len < MAX_STACK; i++)
      d->stack[d->len] = d->pattern[d->len % (size_t)d->period], d->len++;
    if (--d->recursing == 0) d->len = d->rec_base; /* unwind */
    return;
  }
  unsigned k = (unsigned)tu_below(r, 100);
  if (k < 10) return; /* the same stack again */
  if (k < 13) {
    d->len = 0; /* empty */
    return;
  }
  if (k < 15) {
    /* start a deep recursion */
    d->period = 1 + (int)tu_below(r, 3);
    for (int i = 0; i < 3; i++) d->pattern[i] = c[tu_below(r, u->n)].code;
    d->recursing = 2 + (int)tu_below(r, 14);
    d->rec_base = d->len;
    return;
  }
  if (k < 20) {
    /* a fresh stack, possibly long */
    d->len = 0;
    size_t n = tu_chance(r, 30) ? 100 + tu_below(r, 300) : tu_below(r, 40);
    for (size_t i = 0; i < n; i++) d->stack[d->len++] = c[tu_below(r, u->n)].code;
    return;
  }
  /* pop some, push some: shared prefixes */
  d->len -= tu_below(r, d->len < 8 ? d->len + 1 : 8);
  size_t push = tu_below(r, 8);
  for (size_t i = 0; i < push && d->len < MAX_STACK; i++)
    d->stack[d->len++] = c[tu_chance(r, 70) ? tu_below(r, hot) : tu_below(r, u->n)].code;
}

typedef struct alloc_rec {
  uint64_t id;
  uint32_t domain;
} alloc_rec;

/* Writes one random trace with `opts` (its sink), recording the expected
 * events in m. Returns 0, or fails the test. */
static void generate(const gen_params *gp, universe *u, model *m, mt_writer_options *opts,
                     mt_trace_info *info_out) {
  tu_rng rng = {gp->seed};
  tu_rng *r = &rng;
  universe_make(u, r, gp->ncodes);
  memset(m, 0, sizeof *m);
  m->monotone = 1;

  static domstate doms[MAX_DOMS];
  int nd = gp->version >= 3 ? gp->ndoms : 1;
  for (int i = 0; i < nd; i++) {
    memset(&doms[i], 0, sizeof doms[i]);
    uint32_t id;
    int dup;
    do {
      id = tu_chance(r, 80) ? (uint32_t)i : (uint32_t)tu_below(r, 0x10000);
      dup = 0;
      for (int j = 0; j < i; j++) dup |= doms[j].id == id;
    } while (dup);
    doms[i].id = gp->version >= 3 ? id : 0;
  }
  mt_trace_info info = tu_info();
  info.pid = 1000 + tu_below(r, 100000);
  info.start_time = 1600000000000000ull + tu_below(r, 1ull << 40);
  info.sample_rate = tu_chance(r, 50) ? 1e-5 : 1.0;
  info.context = tu_chance(r, 30) ? "" : "property test";
  info.initial_domain = doms[0].id;
  *info_out = info;
  for (int i = 0; i < nd; i++) doms[i].last_time = info.start_time;

  mt_writer *w = NULL;
  int rc = mt_writer_open(&w, &info, opts);
  if (rc != MT_OK) fail_msg("seed %llu: open: %s", (unsigned long long)gp->seed, mt_writer_error(w));

  alloc_rec *allocs = malloc((gp->nevents + 1) * sizeof *allocs);
  size_t nallocs = 0;
  uint64_t now = info.start_time + tu_below(r, 1000);
  int cur = 0;
  int stopped = gp->stop_domain_early && nd > 1 ? nd - 1 : -1;
  for (size_t step = 0; step < gp->nevents; step++) {
    /* time */
    unsigned tk = (unsigned)tu_below(r, 1000);
    if (tk < 50) {
    } else if (tk < 750) now += tu_below(r, 50);
    else if (tk < 960) now += tu_below(r, 5000);
    else if (tk < 990) now += 1000000 + tu_below(r, 40000000), cov.gap_30s++;
    else if (tk < 995) now += tu_below(r, 7200000000ull), cov.gap_30s++;
    else if (gp->chaos) {
      uint64_t back = tu_below(r, 10000000);
      now = now > back ? now - back : 0;
      m->monotone = 0;
      cov.backwards++;
    }
    /* domain */
    if (nd > 1 && tu_chance(r, 20)) {
      cur = (int)tu_below(r, (uint64_t)nd);
      if (cur == stopped && step > 50) cur = 0;
    }
    domstate *d = &doms[cur];
    uint64_t t = now > d->last_time ? now : d->last_time; /* documented clamp */

    unsigned kind = (unsigned)tu_below(r, 100);
    if (kind < 3) {
      rc = mt_writer_flush(w);
      SCHECK(gp->seed, rc == MT_OK);
      cov.flush++;
      continue;
    }
    if (kind < 65 || nallocs == 0) {
      next_stack(r, u, d, gp->fat);
      size_t common = 0;
      if (d->has_prev)
        while (common < d->len && common < d->prev_len && d->stack[common] == d->prev[common])
          common++;
      if (d->len - common > MAX_NEW_SUFFIX) d->len = common + MAX_NEW_SUFFIX;
      if (d->len == d->prev_len && common == d->len && d->has_prev) cov.same_bt++;
      if (d->len == 0) cov.empty_bt++;
      if (d->len > cov.max_depth) cov.max_depth = d->len;
      if (d->recursing) cov.deep++;
      uint64_t length = pick_length(r), nsamples = pick_nsamples(r);
      mt_source src = (mt_source)tu_below(r, 3);
      uint64_t id;
      rc = mt_writer_alloc(w, now, d->id, length, nsamples, src, d->stack, d->len, &id);
      if (rc != MT_OK)
        fail_msg("seed %llu: alloc: %s", (unsigned long long)gp->seed, mt_writer_error(w));
      xev *e = model_push(m);
      e->kind = MT_EVENT_ALLOC;
      e->source = src;
      e->domain = d->id;
      e->time = t;
      e->obj_id = id;
      e->length = length;
      e->nsamples = nsamples;
      e->bt_off = model_bt(m, d->stack, d->len);
      e->bt_len = d->len;
      e->common = common;
      memcpy(d->prev, d->stack, d->len * sizeof *d->stack);
      d->prev_len = d->len;
      d->has_prev = 1;
      allocs[nallocs++] = (alloc_rec){id, d->id};
      for (size_t i = 0; i < d->len; i++) find_code(u, d->stack[i])->used = 1;
      if (length >= 1 && length <= 16 && src == MT_SOURCE_MINOR && nsamples == 1) cov.short_alloc++;
      else cov.long_alloc++;
      cov.src[src]++;
      cov.vint_len[vint_class(length)]++;
      if (nsamples > 0xffff) cov.nsamples_big++;
    } else {
      /* an object: mostly recent ones, sometimes old */
      size_t ix = tu_chance(r, 70) ? nallocs - 1 - tu_below(r, nallocs < 300 ? nallocs : 300)
                                   : tu_below(r, nallocs);
      alloc_rec a = allocs[ix];
      int promote = kind < 80;
      if (promote) {
        /* a promotion names an id at most the domain's last: its own
         * objects, or another domain's older ones */
        if (a.id >= mt_writer_next_obj_id(w, d->id)) continue;
        rc = mt_writer_promote(w, now, d->id, a.id);
        cov.promote++;
      } else {
        rc = mt_writer_collect(w, now, d->id, a.id);
        cov.collect++;
        if (a.domain != d->id) cov.cross_collect++;
      }
      if (rc != MT_OK)
        fail_msg("seed %llu: %s of %llu: %s", (unsigned long long)gp->seed,
                 promote ? "promote" : "collect", (unsigned long long)a.id, mt_writer_error(w));
      xev *e = model_push(m);
      e->kind = promote ? MT_EVENT_PROMOTE : MT_EVENT_COLLECT;
      e->domain = d->id;
      e->time = t;
      e->obj_id = a.id;
    }
    d->last_time = t;
  }
  rc = mt_writer_close(w);
  if (rc != MT_OK) fail_msg("seed %llu: close failed", (unsigned long long)gp->seed);
  free(allocs);
  cov.events += m->n;
  if (gp->version >= 3) cov.v3++;
  else cov.v2++;
  if (nd > 1) cov.multi_domain++;
}

/* ---- checking ---- */

static void check_event(uint64_t seed, size_t i, const xev *x, const model *m, const mt_event *e) {
#define BAD(...)                                                                  \
  do {                                                                            \
    print_error("seed %llu: event %zu (domain %u, %s): ", (unsigned long long)seed, i, \
                x->domain, x->kind == MT_EVENT_ALLOC ? "alloc" : x->kind == MT_EVENT_PROMOTE ? "promote" : "collect"); \
    fail_msg(__VA_ARGS__);                                                         \
  } while (0)
  if (e->kind != x->kind) BAD("kind %d, expected %d", e->kind, x->kind);
  if (e->domain != x->domain) BAD("domain %u", e->domain);
  if (e->time != x->time)
    BAD("time %llu, expected %llu", (unsigned long long)e->time, (unsigned long long)x->time);
  if (e->obj_id != x->obj_id)
    BAD("obj_id %llu, expected %llu", (unsigned long long)e->obj_id, (unsigned long long)x->obj_id);
  if (x->kind != MT_EVENT_ALLOC) return;
  if (e->source != x->source) BAD("source %d, expected %d", e->source, x->source);
  if (e->length != x->length)
    BAD("length %llu, expected %llu", (unsigned long long)e->length, (unsigned long long)x->length);
  if (e->nsamples != x->nsamples)
    BAD("nsamples %llu, expected %llu", (unsigned long long)e->nsamples, (unsigned long long)x->nsamples);
  if (e->common_prefix != x->common) BAD("common prefix %zu, expected %zu", e->common_prefix, x->common);
  if (e->backtrace_len != x->bt_len) BAD("backtrace of %zu frames, expected %zu", e->backtrace_len, x->bt_len);
  const uint64_t *want = m->bts + x->bt_off;
  for (size_t k = 0; k < x->bt_len; k++)
    if (e->backtrace[k] != want[k])
      BAD("frame %zu is %llx, expected %llx", k, (unsigned long long)e->backtrace[k],
          (unsigned long long)want[k]);
#undef BAD
}

static void check_trace(uint64_t seed, const model *m, const universe *u, const mt_trace_info *info,
                        mt_reader *r, const tu_trace *t, uint64_t file_len) {
  if (t->status != 0)
    fail_msg("seed %llu: reading stopped after %zu of %zu events: %s", (unsigned long long)seed,
             t->n, m->n, t->error);
  if (t->has_warning) fail_msg("seed %llu: warning: %s", (unsigned long long)seed, t->warning);
  if (t->n != m->n)
    fail_msg("seed %llu: %zu events read, %zu written", (unsigned long long)seed, t->n, m->n);
  const mt_trace_info *ri = mt_reader_info(r);
  SCHECK(seed, strcmp(ri->executable_name, info->executable_name) == 0);
  SCHECK(seed, strcmp(ri->host_name, info->host_name) == 0);
  SCHECK(seed, strcmp(ri->runtime_params, info->runtime_params) == 0);
  SCHECK(seed, strcmp(ri->context, info->context) == 0);
  SCHECK(seed, (ri->pid) == (info->pid));
  SCHECK(seed, (ri->start_time) == (info->start_time));
  SCHECK(seed, ri->sample_rate == info->sample_rate);
  SCHECK(seed, (ri->word_size) == (64));

  /* each domain's events in order */
  uint32_t ids[MAX_DOMS + 1];
  size_t nids = 0;
  for (size_t i = 0; i < m->n; i++) {
    size_t k = 0;
    while (k < nids && ids[k] != m->ev[i].domain) k++;
    if (k == nids) ids[nids++] = m->ev[i].domain;
  }
  for (size_t k = 0; k < nids; k++) {
    size_t a = 0, b = 0;
    for (;;) {
      while (a < m->n && m->ev[a].domain != ids[k]) a++;
      while (b < t->n && t->ev[b].ev.domain != ids[k]) b++;
      if (a == m->n || b == t->n) {
        if (a != m->n || b != t->n)
          fail_msg("seed %llu: domain %u has %s events read than written", (unsigned long long)seed,
                   ids[k], a == m->n ? "more" : "fewer");
        break;
      }
      check_event(seed, a, &m->ev[a], m, &t->ev[b].ev);
      a++, b++;
    }
  }
  /* all of them in order, when the order is defined by the times */
  if (m->monotone)
    for (size_t i = 0; i < m->n; i++) check_event(seed, i, &m->ev[i], m, &t->ev[i].ev);

  /* every code used names its locations */
  for (size_t i = 0; i < u->n; i++) {
    const codeinfo *c = &u->c[i];
    if (!c->used) continue;
    if (!mt_reader_has_code(r, c->code))
      fail_msg("seed %llu: code %llx has no location event", (unsigned long long)seed,
               (unsigned long long)c->code);
    size_t n = 99;
    const mt_location *l = mt_reader_lookup(r, c->code, &n);
    if (n != c->nwant)
      fail_msg("seed %llu: code %llx: %zu locations, expected %zu", (unsigned long long)seed,
               (unsigned long long)c->code, n, c->nwant);
    if (n == 0) {
      SCHECK(seed, (l) == NULL);
      cov.empty_locs++;
      continue;
    }
    if (strcmp(c->want[0].filename, "<unknown>") == 0 && c->n != 1) cov.fallback_locs++;
    for (size_t j = 0; j < n; j++) {
      const mt_location *a = &l[j], *b = &c->want[j];
      if (strcmp(a->filename, b->filename) || strcmp(a->defname, b->defname) ||
          a->line != b->line || a->start_char != b->start_char || a->end_char != b->end_char)
        fail_msg("seed %llu: code %llx location %zu: %s %s %u %u %u, expected %s %s %u %u %u",
                 (unsigned long long)seed, (unsigned long long)c->code, j, a->filename, a->defname,
                 a->line, a->start_char, a->end_char, b->filename, b->defname, b->line,
                 b->start_char, b->end_char);
    }
  }
  size_t n = 1;
  SCHECK(seed, (mt_reader_lookup(r, 0, &n)) == NULL); /* 0 is never a code here */
  SCHECK(seed, (n) == (0));
  uint64_t done = 0, total = 0;
  mt_reader_progress(r, &done, &total);
  SCHECK(seed, (done) == (file_len));
}

/* ---- seeds ---- */

static uint64_t env_u64(const char *name, uint64_t def) {
  const char *s = getenv(name);
  return s && *s ? strtoull(s, NULL, 0) : def;
}

static void params_for(uint64_t seed, gen_params *gp) {
  tu_rng r = {seed ^ 0x5eedull};
  memset(gp, 0, sizeof *gp);
  gp->seed = seed;
  gp->version = tu_chance(&r, 50) ? 2 : 3;
  gp->ndoms = gp->version >= 3 ? 1 + (int)tu_below(&r, MAX_DOMS) : 1;
  unsigned k = (unsigned)tu_below(&r, 100);
  gp->nevents = k < 10 ? tu_below(&r, 10) : k < 90 ? 200 + tu_below(&r, 2000) : 5000 + tu_below(&r, 10000);
  gp->ncodes = k < 50 ? 50 + tu_below(&r, 300) : 500 + tu_below(&r, 20000);
  gp->chaos = tu_chance(&r, 30);
}

/* One seed: generate, write to memory, read back through a memfd, check. */
static void one_trace(uint64_t seed) {
  gen_params gp;
  params_for(seed, &gp);
  universe u;
  model m;
  tu_buf b = {0};
  resolve_ctx rc = {&u, 0, 0};
  mt_writer_options o = {.version = gp.version, .sink = tu_buf_sink, .sink_ctx = &b,
                         .resolve = resolve, .resolve_ctx = &rc, .fd = -1};
  mt_trace_info info;
  generate(&gp, &u, &m, &o, &info);
  SCHECK(seed, (rc.unknown) == (0));
  tu_trace t;
  mt_reader *r = tu_read_mem(b.data, b.len, &t);
  if (!r) fail_msg("seed %llu: open: %s", (unsigned long long)seed, t.error);
  SCHECK(seed, (mt_reader_info(r)->version) == ((uint32_t)gp.version));
  if (gp.version >= 3) SCHECK(seed, (mt_reader_info(r)->initial_domain) == (info.initial_domain));
  check_trace(seed, &m, &u, &info, r, &t, b.len);
  tu_done(r, &t);
  tu_buf_free(&b);
  model_free(&m);
  universe_free(&u);
}

static int random_ok; /* random_traces ran to the end */

static void random_traces(void **state) {
  (void)state;
  uint64_t only = env_u64("MT_PROP_SEED", 0);
  if (only) {
    print_message("MT_PROP_SEED=%llu\n", (unsigned long long)only);
    one_trace(only);
    return;
  }
  uint64_t base = env_u64("MT_PROP_BASE_SEED", 20261122);
  uint64_t iters = env_u64("MT_PROP_ITERS", DEFAULT_ITERS);
  for (uint64_t i = 0; i < iters; i++) one_trace(base + i);
  random_ok = 1;
  print_message("%llu traces, %zu events\n", (unsigned long long)iters, cov.events);
}

/* The generator covered what it claims (over the iterations above). */
static void coverage(void **state) {
  (void)state;
  if (env_u64("MT_PROP_SEED", 0) || !random_ok) skip(); /* nothing to judge */
#define NEED(x)                                                          \
  do {                                                                   \
    if (!(x)) fail_msg("the random traces never covered: %s", #x);       \
  } while (0)
  NEED(cov.short_alloc > 1000);
  NEED(cov.long_alloc > 1000);
  NEED(cov.src[0] && cov.src[1] && cov.src[2]);
  NEED(cov.promote > 100);
  NEED(cov.collect > 100);
  NEED(cov.cross_collect > 10);
  NEED(cov.flush > 10);
  NEED(cov.v2 > 10 && cov.v3 > 10);
  NEED(cov.multi_domain > 5);
  NEED(cov.deep > 100);
  NEED(cov.max_depth > 1500);
  NEED(cov.vint_len[0] && cov.vint_len[1] && cov.vint_len[2] && cov.vint_len[3]);
  NEED(cov.nsamples_big > 10);
  NEED(cov.gap_30s > 100);
  NEED(cov.backwards > 10);
  NEED(cov.empty_bt > 10);
  NEED(cov.same_bt > 10);
  NEED(cov.fallback_locs > 0);
  NEED(cov.empty_locs > 0);
#undef NEED
}

/* ---- streaming through a pipe ---- */

typedef struct pipe_job {
  int fd;              /* the pipe's write end */
  tu_buf copy;         /* everything written, for the memfd comparison */
  tu_rng rng;          /* chunking of the writes */
  gen_params gp;
  universe u;
  model m;
  mt_trace_info info;
  resolve_ctx rc;
  int failed;
} pipe_job;

/* Sends each packet in random small pieces: the reader sees short reads,
 * headers split across reads, and so on. */
static int pipe_sink(void *ctx, const void *buf, size_t len) {
  pipe_job *j = ctx;
  tu_buf_sink(&j->copy, buf, len);
  const uint8_t *p = buf;
  while (len) {
    size_t n = 1 + tu_below(&j->rng, tu_chance(&j->rng, 20) ? 7 : 9000);
    if (n > len) n = len;
    ssize_t w = write(j->fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

static void *pipe_writer(void *arg) {
  pipe_job *j = arg;
  mt_writer_options o = {.version = j->gp.version, .sink = pipe_sink, .sink_ctx = j,
                         .resolve = resolve, .resolve_ctx = &j->rc, .fd = -1};
  generate(&j->gp, &j->u, &j->m, &o, &j->info);
  close(j->fd);
  return NULL;
}

static void read_pipe_case(uint64_t seed, int version, int ndoms, size_t nevents, int stop_early,
                           size_t min_bytes) {
  pipe_job *j = calloc(1, sizeof *j);
  j->gp = (gen_params){.seed = seed, .version = version, .nevents = nevents, .ncodes = 30000,
                       .ndoms = ndoms, .chaos = 0, .stop_domain_early = stop_early, .fat = 1};
  j->rng.s = seed * 31;
  j->rc.u = &j->u;
  int p[2];
  assert_int_equal(pipe(p), 0);
  j->fd = p[1];
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, pipe_writer, j), 0);
  mt_reader *r = NULL;
  int rc = mt_reader_open_fd(&r, p[0], "pipe");
  tu_trace tp;
  memset(&tp, 0, sizeof tp);
  if (rc == MT_OK) tu_read_events(r, &tp);
  else snprintf(tp.error, sizeof tp.error, "%s", mt_reader_error(r));
  /* drain whatever is left so that the writer can finish either way */
  char sink[4096];
  while (read(p[0], sink, sizeof sink) > 0) {
  }
  assert_int_equal(pthread_join(th, NULL), 0);
  close(p[0]);
  if (rc != MT_OK) fail_msg("seed %llu: opening the pipe: %s", (unsigned long long)seed, tp.error);
  uint64_t done = 0, total = 1;
  mt_reader_progress(r, &done, &total);
  SCHECK(seed, (total) == (0)); /* a pipe has no size */
  /* the same bytes through a memfd */
  tu_trace tm;
  mt_reader *rm = tu_read_mem(j->copy.data, j->copy.len, &tm);
  SCHECK(seed, (rm) != NULL);
  check_trace(seed, &j->m, &j->u, &j->info, rm, &tm, j->copy.len);
  check_trace(seed, &j->m, &j->u, &j->info, r, &tp, j->copy.len);
  /* and identical decodes, event by event, location by location */
  SCHECK(seed, (tp.n) == (tm.n));
  for (size_t i = 0; i < tp.n; i++) {
    if (!tu_same_event(&tp.ev[i].ev, &tm.ev[i].ev))
      fail_msg("seed %llu: event %zu differs between the pipe and the file", (unsigned long long)seed, i);
  }
  for (size_t i = 0; i < j->u.n; i++) {
    size_t na = 0, nb = 0;
    const mt_location *la = mt_reader_lookup(r, j->u.c[i].code, &na);
    const mt_location *lb = mt_reader_lookup(rm, j->u.c[i].code, &nb);
    SCHECK(seed, (na) == (nb));
    SCHECK(seed, (mt_reader_has_code(r, j->u.c[i].code)) == (mt_reader_has_code(rm, j->u.c[i].code)));
    for (size_t k = 0; k < na; k++) {
      SCHECK(seed, strcmp(la[k].filename, lb[k].filename) == 0);
      SCHECK(seed, strcmp(la[k].defname, lb[k].defname) == 0);
      SCHECK(seed, (la[k].line) == (lb[k].line));
    }
  }
  print_message("pipe: %zu events, %zu bytes\n", tp.n, j->copy.len);
  SCHECK(seed, j->copy.len > min_bytes); /* the sizes this case is about */
  mt_reader_close(r);
  tu_trace_free(&tp);
  tu_done(rm, &tm);
  tu_buf_free(&j->copy);
  model_free(&j->m);
  universe_free(&j->u);
  free(j);
}

/* A trace larger than the reader's 4 MiB input buffer, streamed through a
 * pipe in pieces of 1 to 9000 bytes by a writer thread: the reader cannot
 * seek, and must decode exactly what it decodes from a file. */
static void pipe_stream_v2(void **state) {
  (void)state;
  read_pipe_case(env_u64("MT_PROP_PIPE_SEED", 4242), 2, 1, 3500, 0, 5u << 20);
}

/* v3, three domains, one of which stops writing early: the reader's
 * look-ahead across domains (bounded at 8 MiB: the trace is larger), on a
 * pipe. */
static void pipe_stream_v3(void **state) {
  (void)state;
  read_pipe_case(env_u64("MT_PROP_PIPE_SEED", 4242) + 1, 3, 3, 6500, 1, 9u << 20);
}

/* v3 merge: domain 1 logs at T0+10, domain 0 then logs several packets
 * from T0+1000 (a few hundred KiB), and domain 1 logs again at T0+20. The file
 * has domain 1's second packet after domain 0's; the reader, merging in
 * time order, must still give both domain 1 events before domain 0's. */
static void v3_merge_in_time_order(void **state) {
  (void)state;
  tu_buf b = {0};
  mt_writer *w = tu_writer(&b, 3, NULL);
  const uint64_t T0 = tu_info().start_time;
  uint64_t bt[64];
  for (int i = 0; i < 64; i++) bt[i] = 0x1000 + (uint64_t)i * 8;
  assert_int_equal(mt_writer_alloc(w, T0 + 10, 1, 4, 1, MT_SOURCE_MINOR, bt, 3, NULL), MT_OK);
  size_t n0 = 0;
  for (int p = 0; p < 40; p++) {
    for (int i = 0; i < 400; i++, n0++)
      assert_int_equal(mt_writer_alloc(w, T0 + 1000 + n0, 0, 100000, 7, MT_SOURCE_MAJOR, bt,
                                       (size_t)(i % 64), NULL), MT_OK);
    assert_int_equal(mt_writer_flush(w), MT_OK);
  }
  assert_int_equal(mt_writer_alloc(w, T0 + 20, 1, 5, 1, MT_SOURCE_MINOR, bt, 2, NULL), MT_OK);
  assert_int_equal(mt_writer_close(w), MT_OK);
  /* many packets in between, but within the reader's 8 MiB look-ahead */
  assert_true(b.len > (128u << 10) && b.len < (8u << 20));
  tu_trace t;
  mt_reader *r = tu_read_mem(b.data, b.len, &t);
  assert_non_null(r);
  assert_int_equal(t.status, 0);
  assert_int_equal(t.n, n0 + 2);
  assert_int_equal(t.ev[0].ev.domain, 1);
  assert_int_equal(t.ev[0].ev.time, T0 + 10);
  assert_int_equal(t.ev[1].ev.domain, 1);
  assert_int_equal(t.ev[1].ev.time, T0 + 20);
  for (size_t i = 2; i < t.n; i++) {
    assert_int_equal(t.ev[i].ev.domain, 0);
    assert_int_equal(t.ev[i].ev.time, T0 + 1000 + (i - 2));
  }
  tu_done(r, &t);
  tu_buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(random_traces),
      cmocka_unit_test(coverage),
      cmocka_unit_test(pipe_stream_v2),
      cmocka_unit_test(pipe_stream_v3),
      cmocka_unit_test(v3_merge_in_time_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
