/* libFuzzer target: writer -> reader round trip.
 *
 * The input is a little program of writer calls (format below). It is run
 * against a writer (to a memfd, or to an in-memory sink that may be told to
 * fail), the calls' results are checked against format.h, and the trace is
 * then read back: every event must come back as written, in each domain's
 * order, and every location code must resolve to what the resolver gave
 * (after the writer's documented clamping). Any difference aborts.
 *
 * Input format (missing bytes read as zeros, so every input is a program):
 *   flags        u8   bit 0: version 3 (else 2); bit 1: in-memory sink (else
 *                     memfd); bit 2: a location resolver; bit 3: the sink or
 *                     the resolver fails after a count read below; bit 4:
 *                     start time anywhere in 64 bits; bit 5: long names;
 *                     bit 6: the resolver gives code i one location of its
 *                     own, with names 2i and 2i+1 (else a hash picks 0-3)
 *   start time   u32 or u64 (bit 4)
 *   pid u32, sample rate u16 ((x + 1) / 65536), initial domain u8 (index
 *                into dom_pool; v3 only)
 *   4 strings    executable, host, runtime params, context: u8 length, bytes
 *   codes        u8 mode (code shapes), u8 count, u32 seed
 *   names        NNAMES lengths: u16 (long names) or u8
 *   resolver     u32 seed
 *   failure      u16 (bit 3): bit 0 picks the sink (if any) or the
 *                resolver, the rest is the count of calls that succeed
 *   then ops     u8 op (mod 16) and its operands, until the input ends:
 *                0-7 alloc, 8-9 promote, 10-11 collect, 12 flush, 13 a burst
 *                of allocs, 14 a call that breaks the contract, 15 time
 *                passes. Each op's operands are read by its function below.
 *
 * MT_FUZZ_AVOID=TAG[,TAG...] in the environment steers the programs around
 * known bugs of src/ (see README.md), so that a long run can look for new
 * ones instead of finding the same one again. Replays and CI leave it unset.
 */
#include <string.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "memtrace/format.h"

#define MAX_OPS 4000
#define MAX_EVENTS 30000
#define MAX_FRAMES_TOTAL (1u << 20) /* stored frames of expected events */
#define MAX_BT 1200                 /* frames in one backtrace */
#define MAX_CODES 48
#define NNAMES 40
#define NDOMS 8
/* Up to this many frames a backtrace always fits the writer's 4096-byte
 * limit (10 bytes a frame at worst), so it must come back whole. Longer ones
 * may be cut: see check_backtrace. */
#define SAFE_BT_LEN 400

/* A location event's body may take this much; a bigger list becomes one
 * "<unknown>" location (docs/format.md, 6.1). */
#define LOC_MAX_BYTES 4096

static const uint32_t dom_pool[NDOMS] = {0, 1, 2, 3, 7, 255, 256, 0xffff};

/* ---- input ---- */

typedef struct input {
  const uint8_t *p;
  size_t n;
} input;

static unsigned u8(input *in) {
  if (!in->n) return 0;
  in->n--;
  return *in->p++;
}

static uint64_t un(input *in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v |= (uint64_t)u8(in) << (8 * i);
  return v;
}

static uint64_t mix64(uint64_t x) { /* splitmix64's finalizer */
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* memcpy of frames; n may be 0 with NULL pointers (memcpy forbids it). */
static void copy_frames(uint64_t *dst, const uint64_t *src, size_t n) {
  if (n) memcpy(dst, src, n * sizeof *dst);
}

/* Whether MT_FUZZ_AVOID lists `tag`. */
static int avoid(const char *tag) {
  static const char *list;
  static int read;
  if (!read) {
    list = getenv("MT_FUZZ_AVOID");
    read = 1;
  }
  size_t n = strlen(tag);
  for (const char *p = list; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && memcmp(p, tag, n) == 0) return 1;
    p = end ? end + 1 : p + len;
  }
  return 0;
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return p;
  size_t nc = *cap ? *cap : 16;
  while (nc < need) nc *= 2;
  p = realloc(p, nc * elem);
  FUZZ_CHECK(p != NULL);
  *cap = nc;
  return p;
}

/* Stores src[0..n) at (*buf)[at..at+n), growing *buf. No arithmetic on a
 * NULL *buf when n is 0 (UBSan's pointer-overflow check forbids it). */
static void put_frames(uint64_t **buf, size_t *cap, size_t at, const uint64_t *src, size_t n) {
  if (!n) return;
  *buf = grow(*buf, cap, at + n, sizeof **buf);
  memcpy(*buf + at, src, n * sizeof **buf);
}

/* ---- program state ---- */

typedef struct expected {
  mt_event_kind kind;
  mt_source source;
  uint64_t time, obj_id, length, nsamples;
  size_t bt_off, bt_len; /* in prog.frames */
} expected;

typedef struct dom_state {
  uint32_t id;
  uint64_t last_time;    /* the writer raises earlier times to this */
  size_t *events;        /* indices into prog.exp, in call order */
  size_t nevents, events_cap, cursor;
  uint64_t *ids;         /* objects this domain allocated */
  size_t nids, ids_cap;
  uint64_t *wbt;         /* the last backtrace written here */
  size_t wbt_len, wbt_cap;
  uint64_t *rbt;         /* the last backtrace read back here */
  size_t rbt_len, rbt_cap;
} dom_state;

typedef struct sink_buf {
  uint8_t *buf;
  size_t len, cap;
  long packets, fail_after; /* fail_after < 0: never */
} sink_buf;

typedef struct prog {
  int version, use_sink, use_resolver, simple_resolver;
  uint32_t init_dom;
  mt_trace_info info;
  char strs[4][32];
  mt_writer *w;
  int may_fail; /* the sink or resolver may fail: MT_ERR_IO is expected */
  int stopped;  /* the writer failed: every later call must say CLOSED */
  sink_buf sink;
  long resolver_calls, resolver_fail_after;

  uint64_t codes[MAX_CODES];
  size_t ncodes;
  uint64_t code_slot_key[4 * MAX_CODES]; /* code -> index, open addressing */
  int code_slot_val[4 * MAX_CODES];     /* index + 1; 0: empty */
  char checked[MAX_CODES];              /* locations verified */
  char *names[NNAMES];
  uint64_t resolver_seed;
  mt_location loc_out[3]; /* the resolver's answer, valid until its next call */

  uint64_t clock;
  dom_state doms[NDOMS];
  expected *exp;
  size_t nexp, exp_cap;
  uint64_t *all_ids; /* every allocated object, for collections */
  size_t nall, all_cap;
  uint64_t *frames;
  size_t nframes, frames_cap;
  uint64_t bt[MAX_BT]; /* the backtrace being built */
} prog;

/* ---- codes and the resolver ---- */

static void add_code_index(prog *g, size_t i) {
  size_t mask = 4 * MAX_CODES - 1, h = (size_t)mix64(g->codes[i]) & mask;
  while (g->code_slot_val[h]) {
    if (g->code_slot_key[h] == g->codes[i]) return; /* a duplicate code */
    h = (h + 1) & mask;
  }
  g->code_slot_key[h] = g->codes[i];
  g->code_slot_val[h] = (int)i + 1;
}

static int code_index(const prog *g, uint64_t code) {
  size_t mask = 4 * MAX_CODES - 1, h = (size_t)mix64(code) & mask;
  for (; g->code_slot_val[h]; h = (h + 1) & mask)
    if (g->code_slot_key[h] == code) return g->code_slot_val[h] - 1;
  return -1;
}

/* What the resolver says about `code`: out[0..n). */
static size_t resolve_model(const prog *g, uint64_t code, mt_location out[3]) {
  if (g->simple_resolver) {
    int i = code_index(g, code);
    FUZZ_CHECK(i >= 0);
    out[0] = (mt_location){g->names[(2 * i) % NNAMES], g->names[(2 * i + 1) % NNAMES],
                           (uint32_t)i + 1, (uint32_t)i, (uint32_t)i + 5};
    return 1;
  }
  uint64_t h = mix64(code ^ g->resolver_seed);
  size_t n = h & 3;
  for (size_t k = 0; k < n; k++) {
    uint64_t x = mix64(h + k + 1);
    /* Values beyond each field's width now and then, to check clamping. */
    uint32_t line = (x >> 16) & 3 ? (x >> 16) & 0xffff : (x >> 16) & 0x3fffff;
    out[k] = (mt_location){g->names[x % NNAMES], g->names[(x >> 8) % NNAMES], line,
                           (uint32_t)(x >> 40) & 0x1ff, (uint32_t)(x >> 50) & 0x7ff};
  }
  return n;
}

/* The bytes the writer reserves for a location event's body: code, count,
 * and each location with both its names. */
static size_t location_size(const mt_location *l, size_t n) {
  size_t size = 8 + 1;
  for (size_t i = 0; i < n; i++)
    size += 6 + strlen(l[i].filename) + 1 + strlen(l[i].defname) + 1;
  return size;
}

/* The resolver's answer, kept clear of the "locbuf-wrap" bug when asked:
 * only location events of 4094 to 4096 bytes can trigger it. */
static size_t resolve_checked(const prog *g, uint64_t code, mt_location out[3]) {
  size_t n = resolve_model(g, code, out);
  if (avoid("locbuf-wrap"))
    while (n > 0 && location_size(out, n) >= LOC_MAX_BYTES - 2 &&
           location_size(out, n) <= LOC_MAX_BYTES)
      n--;
  return n;
}

static int resolve(void *ctx, uint64_t code, const mt_location **locs, size_t *n) {
  prog *g = ctx;
  if (g->resolver_fail_after >= 0 && g->resolver_calls >= g->resolver_fail_after)
    return -1;
  g->resolver_calls++;
  *n = resolve_checked(g, code, g->loc_out);
  *locs = *n ? g->loc_out : NULL;
  return 0;
}

static uint32_t clamp(uint32_t v, uint32_t lim) { return v > lim ? lim : v; }

/* What the reader must return for `code`: the resolver's list, fields
 * clamped to their stored widths, or the single "unknown" location the
 * writer substitutes for a list too big for one location event. */
static size_t expected_locations(const prog *g, uint64_t code, mt_location out[3]) {
  if (!g->use_resolver) return 0;
  size_t n = resolve_checked(g, code, out);
  if (location_size(out, n) > LOC_MAX_BYTES) {
    out[0] = (mt_location){"<unknown>", "??", 1, 1, 1};
    return 1;
  }
  for (size_t i = 0; i < n; i++) {
    out[i].line = clamp(out[i].line, 0xfffff);
    out[i].start_char = clamp(out[i].start_char, 0xff);
    out[i].end_char = clamp(out[i].end_char, 0x3ff);
  }
  return n;
}

/* ---- the sink ---- */

static int sink(void *ctx, const void *buf, size_t len) {
  sink_buf *s = ctx;
  if (s->fail_after >= 0 && s->packets >= s->fail_after) return -EIO;
  /* "Receives each finished packet, whole": a packet header whose size
   * field (in bits) is this call's length. */
  const uint8_t *p = buf;
  FUZZ_CHECK(len >= 66);
  FUZZ_CHECK((p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24) == 0xc1fc1fc1u);
  FUZZ_CHECK((p[4] | p[5] << 8 | p[6] << 16 | (uint64_t)p[7] << 24) == (uint64_t)len * 8);
  s->packets++;
  s->buf = grow(s->buf, &s->cap, s->len + len, 1);
  memcpy(s->buf + s->len, buf, len);
  s->len += len;
  return 0;
}

/* ---- checking the writer's answers ---- */

/* The status a call must return when all its arguments are valid: MT_OK,
 * or MT_ERR_IO once when an injected failure strikes, then MT_ERR_CLOSED.
 * Returns whether the call succeeded. */
static int expect_ok(prog *g, int rc) {
  if (g->stopped) {
    FUZZ_CHECK(rc == MT_ERR_CLOSED);
    return 0;
  }
  if (rc == MT_OK) return 1;
  FUZZ_CHECK(rc == MT_ERR_IO && g->may_fail);
  FUZZ_CHECK(strlen(mt_writer_error(g->w)) > 0);
  g->stopped = 1;
  return 0;
}

/* A call that breaks the contract: MT_ERR_INVALID, and the writer stays
 * usable. Calls that reach the domain switch first may instead meet a
 * stopped writer (CLOSED) or fail flushing the previous domain (IO). */
static void expect_invalid(prog *g, int rc, int checks_state_first) {
  if (checks_state_first && rc != MT_ERR_INVALID) {
    expect_ok(g, rc);
    FUZZ_CHECK(rc != MT_OK);
    return;
  }
  FUZZ_CHECK(rc == MT_ERR_INVALID);
  FUZZ_CHECK(strlen(mt_writer_error(g->w)) > 0);
}

/* ---- operations ---- */

static dom_state *pick_domain(prog *g, input *in) {
  if (g->version < 3) return &g->doms[0];
  /* Mostly two domains: each new one costs the writer and the reader some
   * 500 KiB of caches to clear, which dominates a run under ASan. */
  unsigned c = u8(in);
  return &g->doms[c < 192 ? c & 1 : c % NDOMS];
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

static void advance_clock(prog *g, input *in) {
  /* Around the two limits that matter: a packet spans at most 30 s, and an
   * event's 25-bit timestamp wraps after 33.55 s. */
  static const uint64_t edges[8] = {29999999, 30000000, 30000001, 33554431,
                                    33554432, 33554433, 60000001, 67108864};
  unsigned c = u8(in);
  if (c < 160) g->clock = sat_add(g->clock, c);
  else if (c < 200) g->clock = sat_add(g->clock, un(in, 2));
  else if (c < 224) g->clock = sat_add(g->clock, un(in, 4));
  else if (c < 232) { /* backwards: the writer raises such times */
    uint64_t back = un(in, 2);
    g->clock -= back < g->clock ? back : g->clock;
  } else if (c < 248) g->clock = sat_add(g->clock, edges[c & 7]);
  else g->clock = sat_add(g->clock, un(in, 8) >> (8 * (c & 7)));
}

static expected *record(prog *g, dom_state *d, mt_event_kind kind, uint64_t time,
                        uint64_t obj_id) {
  g->exp = grow(g->exp, &g->exp_cap, g->nexp + 1, sizeof *g->exp);
  d->events = grow(d->events, &d->events_cap, d->nevents + 1, sizeof *d->events);
  d->events[d->nevents++] = g->nexp;
  expected *e = &g->exp[g->nexp++];
  memset(e, 0, sizeof *e);
  e->kind = kind;
  e->time = time;
  e->obj_id = obj_id;
  return e;
}

/* The time the writer gives an event of `d` asked for at the clock. */
static uint64_t event_time(prog *g, dom_state *d) {
  if (g->clock > d->last_time) d->last_time = g->clock;
  return d->last_time;
}

/* Builds a backtrace in g->bt; returns its length. */
static size_t build_backtrace(prog *g, dom_state *d, input *in) {
  size_t n = 0;
  unsigned k = u8(in);
  switch (k % 8) {
  case 0: case 1: case 2: /* a short one from the pool */
    n = u8(in) % 24;
    for (size_t i = 0; i < n; i++) g->bt[i] = g->codes[u8(in) % g->ncodes];
    break;
  case 3: { /* the previous one cut, plus a few frames: a common prefix */
    size_t keep = d->wbt_len ? u8(in) % (d->wbt_len + 1) : 0;
    copy_frames(g->bt, d->wbt, keep);
    n = keep;
    for (size_t extra = u8(in) % 8; extra > 0 && n < MAX_BT; extra--)
      g->bt[n++] = g->codes[u8(in) % g->ncodes];
    break;
  }
  case 4: /* the previous one again: all prefix, no codeword */
    copy_frames(g->bt, d->wbt, d->wbt_len);
    n = d->wbt_len;
    break;
  case 5: { /* a long cycle: prediction runs, runs past 255 frames */
    n = 200 + un(in, 2) % (MAX_BT - 199);
    size_t m = 1 + u8(in) % g->ncodes;
    size_t off = u8(in);
    for (size_t i = 0; i < n; i++) g->bt[i] = g->codes[(off + i) % m];
    break;
  }
  case 6: { /* long and irregular */
    n = un(in, 2) % (MAX_BT + 1);
    uint64_t seed = un(in, 4);
    for (size_t i = 0; i < n; i++) g->bt[i] = g->codes[mix64(seed + i) % g->ncodes];
    break;
  }
  default: /* none */
    break;
  }
  if (g->nframes + n > MAX_FRAMES_TOTAL) n = 0;
  return n;
}

static void do_alloc(prog *g, dom_state *d, uint64_t length, uint64_t nsamples,
                     mt_source source, size_t bt_len) {
  uint64_t time = g->clock; /* the writer raises it, as event_time models */
  uint64_t want_id = g->stopped ? 0 : mt_writer_next_obj_id(g->w, d->id);
  uint64_t id = ~(uint64_t)0;
  int rc = mt_writer_alloc(g->w, time, d->id, length, nsamples, source, g->bt,
                           bt_len, &id);
  if (!expect_ok(g, rc)) return;
  /* "next-obj-id": wrong for a domain's first allocation after another
   * domain used up its ids (v3). */
  if (!(d->nids == 0 && avoid("next-obj-id"))) FUZZ_CHECK(id == want_id);
  expected *e = record(g, d, MT_EVENT_ALLOC, event_time(g, d), id);
  e->length = length;
  e->nsamples = nsamples;
  e->source = source;
  e->bt_off = g->nframes;
  e->bt_len = bt_len;
  put_frames(&g->frames, &g->frames_cap, g->nframes, g->bt, bt_len);
  g->nframes += bt_len;
  put_frames(&d->wbt, &d->wbt_cap, 0, g->bt, bt_len);
  d->wbt_len = bt_len;
  d->ids = grow(d->ids, &d->ids_cap, d->nids + 1, sizeof *d->ids);
  d->ids[d->nids++] = id;
  g->all_ids = grow(g->all_ids, &g->all_cap, g->nall + 1, sizeof *g->all_ids);
  g->all_ids[g->nall++] = id;
}

static void op_alloc(prog *g, input *in) {
  dom_state *d = pick_domain(g, in);
  advance_clock(g, in);
  uint64_t length, nsamples = 1;
  mt_source source = MT_SOURCE_MINOR;
  unsigned c = u8(in);
  switch (c % 8) {
  case 0: case 1: case 2: case 3: /* the short encoding's range */
    length = 1 + (c >> 3) % 16;
    break;
  case 4:
    length = un(in, 2);
    nsamples = 1 + u8(in) % 4;
    source = (mt_source)(u8(in) % 3);
    break;
  case 5: { /* any size the format holds: every vint width */
    /* One read per statement: the order of reads within an expression is
     * unspecified, and the replay (any compiler) must agree with libFuzzer. */
    uint64_t bits = un(in, 8);
    length = (bits >> (u8(in) % 64)) & INT64_MAX;
    bits = un(in, 8);
    nsamples = 1 + ((bits >> (u8(in) % 64)) & (INT64_MAX >> 1));
    source = (mt_source)(u8(in) % 3);
    break;
  }
  case 6:
    length = 0;
    break;
  default: /* short lengths the short encoding can't carry */
    length = 1 + (c >> 3) % 16;
    if (c & 0x80) nsamples = 2;
    else source = c & 0x40 ? MT_SOURCE_EXTERNAL : MT_SOURCE_MAJOR;
    break;
  }
  do_alloc(g, d, length, nsamples, source, build_backtrace(g, d, in));
}

/* Many allocations at once: fills packets, and v3 domains' 10000-id chunks
 * (sizes just around 10000 now and then; most bursts are short, as big ones
 * slow the fuzzer down). */
static void op_burst(prog *g, input *in) {
  dom_state *d = pick_domain(g, in);
  unsigned c = u8(in);
  size_t n = c < 248 ? c : 9995 + 2 * (size_t)(c - 248);
  unsigned step = u8(in) % 3;
  size_t bt_len = u8(in) % 4;
  for (size_t i = 0; i < bt_len; i++) g->bt[i] = g->codes[i % g->ncodes];
  for (size_t i = 0; i < n && g->nexp < MAX_EVENTS; i++) {
    g->clock = sat_add(g->clock, step);
    if (g->nframes + bt_len > MAX_FRAMES_TOTAL) bt_len = 0;
    do_alloc(g, d, 1 + i % 20, 1, MT_SOURCE_MINOR, bt_len);
  }
}

static void op_relative(prog *g, input *in, int collect) {
  dom_state *d = pick_domain(g, in);
  advance_clock(g, in);
  uint64_t obj;
  /* Promotions name the domain's own objects (a minor heap is per domain);
   * collections any object. */
  if (!collect && d->nids) obj = d->ids[un(in, 2) % d->nids];
  else if (collect && g->nall) obj = g->all_ids[un(in, 2) % g->nall];
  else return;
  uint64_t time = g->clock;
  int rc = collect ? mt_writer_collect(g->w, time, d->id, obj)
                   : mt_writer_promote(g->w, time, d->id, obj);
  if (!expect_ok(g, rc)) return;
  record(g, d, collect ? MT_EVENT_COLLECT : MT_EVENT_PROMOTE, event_time(g, d), obj);
}

static void op_invalid(prog *g, input *in) {
  unsigned c = u8(in);
  dom_state *d = pick_domain(g, in);
  int rc;
  switch (c % 4) {
  case 0: /* checked before anything else */
    rc = mt_writer_alloc(g->w, g->clock, d->id, 1, 1, (mt_source)3, NULL, 0, NULL);
    expect_invalid(g, rc, 0);
    break;
  case 1:
    rc = mt_writer_alloc(g->w, g->clock, d->id, (uint64_t)INT64_MAX + 1, 1,
                         MT_SOURCE_MAJOR, NULL, 0, NULL);
    expect_invalid(g, rc, 0);
    break;
  case 2: /* a domain the version can't hold */
    rc = mt_writer_alloc(g->w, g->clock, g->version < 3 ? 1 : 0x10000, 1, 1,
                         MT_SOURCE_MINOR, NULL, 0, NULL);
    expect_invalid(g, rc, 1);
    break;
  default: /* an object never allocated */
    rc = mt_writer_promote(g->w, g->clock, d->id, UINT64_MAX);
    expect_invalid(g, rc, 1);
    break;
  }
}

/* ---- reading back ---- */

static void check_code(prog *g, const mt_reader *r, uint64_t code) {
  int i = code_index(g, code);
  FUZZ_CHECK(i >= 0); /* only pool codes were written */
  if (g->checked[i]) return;
  /* Every cache slot starts as code 0, so 0 hits without a location event
   * until its slot is taken by another code (docs/format.md, 7.2). */
  if (code == 0 && !mt_reader_has_code(r, code)) return;
  g->checked[i] = 1;
  FUZZ_CHECK(mt_reader_has_code(r, code));
  mt_location want[3];
  size_t nwant = expected_locations(g, code, want), n = 99;
  const mt_location *got = mt_reader_lookup(r, code, &n);
  FUZZ_CHECK(n == nwant);
  FUZZ_CHECK((got == NULL) == (n == 0));
  for (size_t k = 0; k < n; k++) {
    FUZZ_CHECK(strcmp(got[k].filename, want[k].filename) == 0);
    FUZZ_CHECK(strcmp(got[k].defname, want[k].defname) == 0);
    FUZZ_CHECK(got[k].line == want[k].line);
    FUZZ_CHECK(got[k].start_char == want[k].start_char);
    FUZZ_CHECK(got[k].end_char == want[k].end_char);
  }
}

/* A backtrace of at most SAFE_BT_LEN frames comes back whole. A longer one
 * may have been cut by the writer (its encoding is limited to 4096 bytes):
 * it then comes back as a prefix of at least SAFE_BT_LEN frames, or, when
 * its common prefix with the previous one exceeds what the reader got of
 * that one, as the previous backtrace read (memtrace's reader does the
 * same; format.h documents the prefix as "as encoded"). */
static void check_backtrace(const expected *e, const uint64_t *want, dom_state *d,
                            const mt_event *ev) {
  size_t n = ev->backtrace_len;
  FUZZ_CHECK(n == 0 || ev->backtrace != NULL);
  if (e->bt_len <= SAFE_BT_LEN) {
    FUZZ_CHECK(n == e->bt_len);
    FUZZ_CHECK(n == 0 || memcmp(ev->backtrace, want, n * sizeof *want) == 0);
  } else {
    int cut = n >= SAFE_BT_LEN && n <= e->bt_len &&
              memcmp(ev->backtrace, want, n * sizeof *want) == 0;
    int kept = n == d->rbt_len &&
               (n == 0 || memcmp(ev->backtrace, d->rbt, n * sizeof *want) == 0);
    FUZZ_CHECK(cut || kept);
  }
  put_frames(&d->rbt, &d->rbt_cap, 0, ev->backtrace, n);
  d->rbt_len = n;
}

static dom_state *domain_by_id(prog *g, uint32_t id) {
  for (int i = 0; i < NDOMS; i++)
    if (g->doms[i].id == id) return &g->doms[i];
  FUZZ_CHECK(!"an event of a domain never written");
  return NULL;
}

static void check_trace(prog *g, int fd, int wrote_info) {
  mt_reader *r = NULL;
  int rc = mt_reader_open_fd(&r, fd, "roundtrip");
  if (!wrote_info) { /* the sink failed on the first packet: nothing to read */
    FUZZ_CHECK(rc == MT_ERR_CORRUPT);
    mt_reader_close(r);
    return;
  }
  if (rc != MT_OK) fprintf(stderr, "reader: %s\n", mt_reader_error(r));
  FUZZ_CHECK(rc == MT_OK);
  const mt_trace_info *in = mt_reader_info(r), *out = &g->info;
  FUZZ_CHECK(in->sample_rate == out->sample_rate);
  FUZZ_CHECK(in->word_size == out->word_size);
  FUZZ_CHECK(strcmp(in->executable_name, out->executable_name) == 0);
  FUZZ_CHECK(strcmp(in->host_name, out->host_name) == 0);
  FUZZ_CHECK(strcmp(in->runtime_params, out->runtime_params) == 0);
  FUZZ_CHECK(strcmp(in->context, out->context) == 0);
  FUZZ_CHECK(in->pid == out->pid);
  FUZZ_CHECK(in->start_time == out->start_time);
  FUZZ_CHECK(in->version == (uint32_t)g->version);
  FUZZ_CHECK(in->initial_domain == (g->version >= 3 ? g->init_dom : 0));

  mt_event ev;
  while ((rc = mt_reader_next(r, &ev)) == 1) {
    dom_state *d = domain_by_id(g, ev.domain);
    if (d->cursor >= d->nevents) fprintf(stderr, "extra event in domain %u\n", d->id);
    FUZZ_CHECK(d->cursor < d->nevents);
    const expected *e = &g->exp[d->events[d->cursor++]];
    if (ev.kind != e->kind || ev.time != e->time || ev.obj_id != e->obj_id)
      fprintf(stderr,
              "domain %u event %zu: got kind %d time %llu id %llu, "
              "want kind %d time %llu id %llu\n",
              d->id, d->cursor - 1, ev.kind, (unsigned long long)ev.time,
              (unsigned long long)ev.obj_id, e->kind, (unsigned long long)e->time,
              (unsigned long long)e->obj_id);
    FUZZ_CHECK(ev.kind == e->kind);
    FUZZ_CHECK(ev.time == e->time);
    FUZZ_CHECK(ev.obj_id == e->obj_id);
    if (e->kind != MT_EVENT_ALLOC) continue;
    FUZZ_CHECK(ev.length == e->length);
    FUZZ_CHECK(ev.nsamples == e->nsamples);
    FUZZ_CHECK(ev.source == e->source);
    check_backtrace(e, e->bt_len ? g->frames + e->bt_off : NULL, d, &ev);
    /* New frames only: see fuzz_reader.c. */
    size_t from = ev.common_prefix < ev.backtrace_len ? ev.common_prefix : ev.backtrace_len;
    for (size_t i = from; i < ev.backtrace_len; i++) check_code(g, r, ev.backtrace[i]);
  }
  if (rc != 0) fprintf(stderr, "reader: %s\n", mt_reader_error(r));
  FUZZ_CHECK(rc == 0);
  FUZZ_CHECK(mt_reader_warning(r) == NULL);
  /* A writer that failed wrote whole packets up to the failure: each
   * domain's events are a prefix of what was asked. */
  if (!g->stopped)
    for (int i = 0; i < NDOMS; i++) FUZZ_CHECK(g->doms[i].cursor == g->doms[i].nevents);
  mt_reader_close(r);
}

/* ---- the program ---- */

static void read_string(input *in, char buf[32]) {
  size_t len = u8(in) % 32;
  for (size_t i = 0; i < len; i++) {
    unsigned ch = u8(in);
    buf[i] = (char)(ch ? ch : 'z'); /* no NUL inside */
  }
  buf[len] = 0;
}

static void read_header(prog *g, input *in) {
  unsigned flags = u8(in);
  g->version = flags & 1 ? 3 : 2;
  g->use_sink = (flags >> 1) & 1;
  g->use_resolver = (flags >> 2) & 1;
  int fail = (flags >> 3) & 1;
  uint64_t start = flags & 0x10 ? un(in, 8) : 1700000000000000ull + un(in, 4) * 1000;
  int long_names = (flags >> 5) & 1;
  g->simple_resolver = (flags >> 6) & 1;

  g->info.start_time = start;
  g->info.pid = un(in, 4);
  g->info.sample_rate = (double)(un(in, 2) + 1) / 65536.0;
  g->info.word_size = 64;
  g->init_dom = dom_pool[u8(in) % NDOMS];
  /* Ignored by the writer except initial_domain in v3 (format.h). */
  g->info.version = 99;
  g->info.initial_domain = g->version >= 3 ? g->init_dom : 12345;
  for (int i = 0; i < 4; i++) read_string(in, g->strs[i]);
  g->info.executable_name = g->strs[0];
  g->info.host_name = g->strs[1];
  g->info.runtime_params = g->strs[2];
  g->info.context = g->strs[3];

  /* Code shapes: random, or sharing the backtrace cache's first hash
   * (bits 11-24 of code * constant) or both hashes, to force evictions. */
  unsigned mode = u8(in) % 4;
  g->ncodes = 1 + u8(in) % MAX_CODES;
  uint64_t seed = un(in, 4);
  for (size_t i = 0; i < g->ncodes; i++) {
    switch (mode) {
    case 0: g->codes[i] = mix64(seed + i); break;
    case 1: g->codes[i] = (seed + i + 1) << 25; break;
    case 2: g->codes[i] = (seed + i + 1) << 35; break;
    default: g->codes[i] = seed + i - 1; break; /* includes UINT64_MAX for seed 0 */
    }
    add_code_index(g, i);
  }

  for (int i = 0; i < NNAMES; i++) {
    size_t len = long_names ? un(in, 2) % 4100 : u8(in) % 13;
    char *s = malloc(len + 16);
    FUZZ_CHECK(s != NULL);
    int pre = snprintf(s, 16, "%d:", i); /* distinct names, mostly */
    for (size_t k = (size_t)pre; k < len; k++) s[k] = (char)('a' + (k + (size_t)i) % 26);
    s[len] = 0;
    g->names[i] = s;
  }
  g->resolver_seed = un(in, 4);

  g->sink.fail_after = -1;
  g->resolver_fail_after = -1;
  if (fail) {
    long after = (long)un(in, 2);
    if (g->use_sink && (after & 1)) g->sink.fail_after = after >> 1;
    else if (g->use_resolver) g->resolver_fail_after = after >> 1;
    g->may_fail = g->sink.fail_after >= 0 || g->resolver_fail_after >= 0;
  }

  g->clock = start;
  for (int i = 0; i < NDOMS; i++) {
    g->doms[i].id = dom_pool[i];
    g->doms[i].last_time = start; /* a new domain starts at the trace's start */
  }
}

static void free_prog(prog *g) {
  for (int i = 0; i < NDOMS; i++) {
    dom_state *d = &g->doms[i];
    free(d->events);
    free(d->ids);
    free(d->wbt);
    free(d->rbt);
  }
  for (int i = 0; i < NNAMES; i++) free(g->names[i]);
  free(g->exp);
  free(g->all_ids);
  free(g->frames);
  free(g->sink.buf);
  free(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input in = {data, size};
  prog *g = calloc(1, sizeof *g);
  FUZZ_CHECK(g != NULL);
  read_header(g, &in);

  int fd = g->use_sink ? -1 : fuzz_memfd("", 0);
  mt_writer_options opt = {.version = g->version, .fd = fd};
  if (g->use_sink) {
    opt.sink = sink;
    opt.sink_ctx = &g->sink;
  }
  if (g->use_resolver) {
    opt.resolve = resolve;
    opt.resolve_ctx = g;
  }
  int rc = mt_writer_open(&g->w, &g->info, &opt);
  FUZZ_CHECK(g->w != NULL);
  int wrote_info = expect_ok(g, rc);

  for (int ops = 0; in.n > 0 && ops < MAX_OPS && g->nexp < MAX_EVENTS; ops++) {
    unsigned op = u8(&in) % 16;
    if (op < 8) op_alloc(g, &in);
    else if (op < 10) op_relative(g, &in, 0);
    else if (op < 12) op_relative(g, &in, 1);
    else if (op == 12) expect_ok(g, mt_writer_flush(g->w));
    else if (op == 13) op_burst(g, &in);
    else if (op == 14) op_invalid(g, &in);
    else advance_clock(g, &in);
  }
  /* Closing flushes, so it may meet the injected failure too; the writer
   * is gone afterwards, so expect_ok (which reads its message) can't be
   * used. */
  rc = mt_writer_close(g->w);
  g->w = NULL;
  if (g->stopped) {
    FUZZ_CHECK(rc < 0);
  } else if (rc != MT_OK) {
    FUZZ_CHECK(rc == MT_ERR_IO && g->may_fail);
    g->stopped = 1;
  }

  if (g->use_sink) fd = fuzz_memfd(g->sink.buf, g->sink.len);
  else FUZZ_CHECK(lseek(fd, 0, SEEK_SET) == 0);
  check_trace(g, fd, wrote_info);
  close(fd);
  free_prog(g);
  return 0;
}
