/* loccodec: location events (memtrace's location_codec.ml).
 *
 * Body: u64 code, u8 count, then per location a 48-bit little-endian word
 * (line: 20 bits, start_char: 8, end_char: 10, file MTF index: 5, function
 * MTF index: 5), then the file name if its index is 31 (not found), then
 * the function name if its index is 31. Files: 31 recent, each with its own
 * table of 31 recent function names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "format/loccodec.h"
#include "mt_test_util.h"

/* ---- an independent parse of one encoded event ---- */

typedef struct ploc {
  unsigned line, start, end, fcode, dcode;
  const char *file, *def; /* the inline strings, or NULL */
} ploc;

typedef struct pevent {
  uint64_t code;
  unsigned n;
  ploc l[256];
  size_t len; /* bytes */
} pevent;

static void parse_event(const uint8_t *b, size_t len, pevent *e) {
  size_t p = 0;
  assert_true(len >= 9);
  e->code = tu_ld64(b);
  e->n = b[8];
  p = 9;
  for (unsigned i = 0; i < e->n; i++) {
    assert_true(p + 6 <= len);
    uint64_t w = tu_ld32(b + p) | (uint64_t)tu_ld16(b + p + 4) << 32;
    p += 6;
    ploc *l = &e->l[i];
    l->line = w & 0xfffff;
    l->start = (w >> 20) & 0xff;
    l->end = (w >> 28) & 0x3ff;
    l->fcode = (w >> 38) & 0x1f;
    l->dcode = (w >> 43) & 0x1f;
    l->file = l->def = NULL;
    if (l->fcode == 31) {
      l->file = (const char *)b + p;
      p += strlen(l->file) + 1;
    }
    if (l->dcode == 31) {
      l->def = (const char *)b + p;
      p += strlen(l->def) + 1;
    }
    assert_true(p <= len);
  }
  e->len = p;
}

/* ---- an encoder and a decoder side by side ---- */

typedef struct pair {
  mt__mtf wm, rm;
  mt__strtab ws, rs;
  uint8_t buf[MT__LOC_MAX_LENGTH + 64];
  size_t len;
  pevent parsed;
  mt_location out[255];
  size_t nout;
  int unguarded; /* decode in place (fast); else behind a guard page */
} pair;

static pair *pair_new(void) {
  pair *p = calloc(1, sizeof *p);
  mt__mtf_init(&p->wm);
  mt__mtf_init(&p->rm);
  return p;
}

static void pair_free(pair *p) {
  mt__strtab_free(&p->ws);
  mt__strtab_free(&p->rs);
  free(p);
}

static unsigned clampu(uint32_t v, uint32_t lim) { return v > lim ? lim : v; }

/* Encodes, parses, decodes; checks the decode against the input (after
 * clamping) unless the encoder fell back to "unknown" (then *fell_back). */
static void pair_round(pair *p, uint64_t code, const mt_location *locs, size_t n,
                       int *fell_back) {
  memset(p->buf, 0xee, sizeof p->buf);
  mt__wr w = {p->buf, p->buf + sizeof p->buf, p->buf};
  assert_int_equal(mt__loc_encode(&p->wm, &p->ws, &w, code, locs, n), 0);
  p->len = mt__wr_pos(&w);
  assert_true(p->len <= MT__LOC_MAX_LENGTH);
  assert_int_equal(p->buf[p->len], 0xee);
  parse_event(p->buf, p->len, &p->parsed);
  assert_int_equal(p->parsed.len, p->len);
  assert_int_equal(p->parsed.code, code);

  tu_guarded g = {0};
  const uint8_t *src = p->buf;
  if (!p->unguarded) {
    g = tu_guarded_copy(p->buf, p->len);
    src = g.p;
  }
  mt__rd r = {src, src + p->len, 0};
  uint64_t got_code = 0;
  const char *why = mt__loc_decode(&p->rm, &p->rs, &r, &got_code, p->out, &p->nout);
  if (why) fail_msg("decode failed: %s", why);
  assert_ptr_equal(r.p, r.end);
  if (!p->unguarded) tu_guarded_free(&g);
  assert_int_equal(got_code, code);

  /* memtrace's rule (Location_codec.Writer.put_location): more than 255
   * locations, or a worst case (no MTF hits) over 4096 bytes, falls back */
  size_t worst = 8 + 1;
  for (size_t i = 0; i < n; i++)
    worst += 6 + strlen(locs[i].filename) + 1 + strlen(locs[i].defname) + 1;
  int fb = n > 255 || worst > MT__LOC_MAX_LENGTH;
  if (!fb) assert_true(p->len <= worst);
  if (fell_back) *fell_back = fb;
  if (fb) {
    assert_int_equal(p->parsed.n, 1);
    assert_int_equal(p->nout, 1);
    assert_string_equal(p->out[0].filename, "<unknown>");
    assert_string_equal(p->out[0].defname, "??");
    assert_int_equal(p->out[0].line, 1);
    assert_int_equal(p->out[0].start_char, 1);
    assert_int_equal(p->out[0].end_char, 1);
    return;
  }
  assert_int_equal(p->nout, n);
  for (size_t i = 0; i < n; i++) {
    assert_string_equal(p->out[i].filename, locs[i].filename);
    assert_string_equal(p->out[i].defname, locs[i].defname);
    assert_int_equal(p->out[i].line, clampu(locs[i].line, 0xfffff));
    assert_int_equal(p->out[i].start_char, clampu(locs[i].start_char, 0xff));
    assert_int_equal(p->out[i].end_char, clampu(locs[i].end_char, 0x3ff));
    /* interned on the reader side */
    assert_ptr_equal(p->out[i].filename,
                     mt__strtab_intern(&p->rs, locs[i].filename, strlen(locs[i].filename)));
  }
}

static mt_location L(const char *f, const char *d, uint32_t line, uint32_t s, uint32_t e) {
  mt_location l = {f, d, line, s, e};
  return l;
}

/* ---- tests ---- */

/* Random lists (inlined frames), 50 files and 60 names per file (more
 * than the 31 slots), line numbers past their clamps. */
static void random_round_trip(void **state) {
  (void)state;
  pair *p = pair_new();
  p->unguarded = 1;
  tu_rng rng = {0x10c};
  enum { NF = 50, ND = 60 };
  static char fname[NF][32], dname[NF][ND][32];
  for (int f = 0; f < NF; f++) {
    snprintf(fname[f], sizeof fname[f], "src/dir%d/file%d.ml", f % 7, f);
    for (int d = 0; d < ND; d++) snprintf(dname[f][d], 32, "Module%d.fun_%d", f, d);
  }
  size_t total_locs = 0, hits_f = 0, hits_d = 0;
  for (int ev = 0; ev < 20000; ev++) {
    mt_location locs[12];
    char fb[12][32], db[12][32];
    size_t n = tu_below(&rng, 13);
    for (size_t i = 0; i < n; i++) {
      /* skewed: recent files and names come back often */
      int f = (int)(tu_chance(&rng, 70) ? tu_below(&rng, 8) : tu_below(&rng, NF));
      int d = (int)(tu_chance(&rng, 70) ? tu_below(&rng, 6) : tu_below(&rng, ND));
      /* fresh buffers: the encoder must compare contents, not addresses */
      strcpy(fb[i], fname[f]);
      strcpy(db[i], dname[f][d]);
      uint32_t line = (uint32_t)(tu_chance(&rng, 5) ? tu_next(&rng) : tu_below(&rng, 5000));
      uint32_t s = (uint32_t)(tu_chance(&rng, 5) ? tu_below(&rng, 100000) : tu_below(&rng, 120));
      uint32_t e = (uint32_t)(tu_chance(&rng, 5) ? tu_below(&rng, 100000) : tu_below(&rng, 200));
      locs[i] = L(fb[i], db[i], line, s, e);
    }
    uint64_t code = tu_next(&rng);
    pair_round(p, code, locs, n, NULL);
    assert_int_equal(p->parsed.n, n);
    for (size_t i = 0; i < n; i++) {
      hits_f += p->parsed.l[i].fcode != 31;
      hits_d += p->parsed.l[i].dcode != 31;
    }
    total_locs += n;
    /* both sides keep the same tables */
    for (int i = 0; i < MT__MTF_LEN; i++) {
      const char *a = p->wm.file[i], *b = p->rm.file[i];
      assert_true((a == NULL) == (b == NULL));
      if (a) assert_string_equal(a, b);
    }
  }
  assert_true(hits_f > total_locs / 2);
  assert_true(hits_d > total_locs / 3);
  assert_true(hits_f < total_locs); /* some evictions */
  pair_free(p);
}

/* Move-to-front, by hand. */
static void mtf_hits_misses_and_order(void **state) {
  (void)state;
  pair *p = pair_new();
  ploc *l = p->parsed.l;

  mt_location e1[1] = {L("a.ml", "f", 10, 2, 3)};
  pair_round(p, 1, e1, 1, NULL);
  assert_int_equal(l[0].fcode, 31);
  assert_string_equal(l[0].file, "a.ml");
  assert_int_equal(l[0].dcode, 31);
  assert_string_equal(l[0].def, "f");
  assert_int_equal(l[0].line, 10);
  assert_int_equal(l[0].start, 2);
  assert_int_equal(l[0].end, 3);
  assert_int_equal(p->len, 9 + 6 + 5 + 2);

  mt_location e2[1] = {L("b.ml", "g", 1, 0, 0)};
  pair_round(p, 2, e2, 1, NULL);
  assert_int_equal(l[0].fcode, 31);
  assert_int_equal(l[0].dcode, 31);

  char a_copy[] = "a.ml", f_copy[] = "f";
  mt_location e3[1] = {L(a_copy, f_copy, 1, 0, 0)};
  pair_round(p, 3, e3, 1, NULL);
  assert_int_equal(l[0].fcode, 1); /* [b a] -> a at 1 */
  assert_int_equal(l[0].dcode, 0);
  assert_null(l[0].file);
  assert_null(l[0].def);
  assert_int_equal(p->len, 9 + 6);

  /* within one event: tables move between its locations */
  mt_location e4[3] = {L("b.ml", "h", 1, 0, 0), L("b.ml", "g", 1, 0, 0), L("a.ml", "f", 1, 0, 0)};
  pair_round(p, 4, e4, 3, NULL);
  assert_int_equal(l[0].fcode, 1); /* [a b] */
  assert_int_equal(l[0].dcode, 31);
  assert_string_equal(l[0].def, "h");
  assert_int_equal(l[1].fcode, 0); /* [b a] */
  assert_int_equal(l[1].dcode, 1); /* b's names: [h g] */
  assert_int_equal(l[2].fcode, 1);
  assert_int_equal(l[2].dcode, 0);

  /* function tables are per file: f is new for c.ml */
  mt_location e5[1] = {L("c.ml", "f", 1, 0, 0)};
  pair_round(p, 5, e5, 1, NULL);
  assert_int_equal(l[0].fcode, 31);
  assert_int_equal(l[0].dcode, 31);
  /* order now: c a b, on both sides */
  const char *want[3] = {"c.ml", "a.ml", "b.ml"};
  for (int i = 0; i < 3; i++) {
    assert_string_equal(p->wm.file[i], want[i]);
    assert_string_equal(p->rm.file[i], want[i]);
  }
  assert_null(p->wm.file[3]);
  assert_null(p->rm.file[3]);
  /* b's names are [g h]: g moved to the front by e4 */
  assert_string_equal(p->wm.defs[2]->name[0], "g");
  assert_string_equal(p->wm.defs[2]->name[1], "h");
  assert_string_equal(p->rm.defs[2]->name[0], "g");
  assert_string_equal(p->rm.defs[2]->name[1], "h");
  /* an empty list */
  pair_round(p, 6, NULL, 0, NULL);
  assert_int_equal(p->len, 9);
  assert_int_equal(p->nout, 0);
  pair_free(p);
}

/* The 32nd file pushes out the first; its function table is reused
 * cleared by the writer (memtrace's encoder starts a fresh one). */
static void files_evict(void **state) {
  (void)state;
  pair *p = pair_new();
  ploc *l = p->parsed.l;
  char names[32][16];
  for (int i = 0; i < 32; i++) snprintf(names[i], 16, "F%d.ml", i);
  for (int i = 0; i < 31; i++) {
    mt_location e[1] = {L(names[i], "x", 1, 1, 1)};
    pair_round(p, (uint64_t)i, e, 1, NULL);
    assert_int_equal(l[0].fcode, 31);
  }
  /* all 31 known: F0 is at index 30 */
  mt_location e0[1] = {L(names[0], "x", 1, 1, 1)};
  pair_round(p, 100, e0, 1, NULL);
  assert_int_equal(l[0].fcode, 30);
  assert_int_equal(l[0].dcode, 0);
  /* now F1 is last; F31 pushes it out and takes its table, cleared */
  mt_location e31[1] = {L(names[31], "x", 1, 1, 1)};
  pair_round(p, 101, e31, 1, NULL);
  assert_int_equal(l[0].fcode, 31);
  assert_int_equal(l[0].dcode, 31); /* "x" was in F1's table: not reused */
  mt_location e1[1] = {L(names[1], "x", 1, 1, 1)};
  pair_round(p, 102, e1, 1, NULL);
  assert_int_equal(l[0].fcode, 31); /* evicted: the name is sent again */
  assert_string_equal(l[0].file, "F1.ml");
  assert_int_equal(l[0].dcode, 31);
  /* order: F1 F31 F0 F30 ... F3; F2 fell off */
  mt_location e3[1] = {L(names[3], "x", 1, 1, 1)};
  pair_round(p, 103, e3, 1, NULL);
  assert_int_equal(l[0].fcode, 30);
  assert_int_equal(l[0].dcode, 0);
  mt_location e2[1] = {L(names[2], "x", 1, 1, 1)};
  pair_round(p, 104, e2, 1, NULL);
  assert_int_equal(l[0].fcode, 31);
  pair_free(p);
}

static void defnames_evict(void **state) {
  (void)state;
  pair *p = pair_new();
  ploc *l = p->parsed.l;
  char names[33][16];
  for (int i = 0; i < 33; i++) snprintf(names[i], 16, "d%d", i);
  for (int i = 0; i < 31; i++) {
    mt_location e[1] = {L("one.ml", names[i], 1, 1, 1)};
    pair_round(p, (uint64_t)i, e, 1, NULL);
    assert_int_equal(l[0].dcode, 31);
  }
  mt_location e0[1] = {L("one.ml", names[0], 1, 1, 1)};
  pair_round(p, 50, e0, 1, NULL);
  assert_int_equal(l[0].dcode, 30);
  mt_location e31[1] = {L("one.ml", names[31], 1, 1, 1)}; /* pushes d1 out */
  pair_round(p, 51, e31, 1, NULL);
  assert_int_equal(l[0].dcode, 31);
  mt_location e1[1] = {L("one.ml", names[1], 1, 1, 1)};
  pair_round(p, 52, e1, 1, NULL);
  assert_int_equal(l[0].dcode, 31);
  assert_string_equal(l[0].def, "d1");
  mt_location e3[1] = {L("one.ml", names[3], 1, 1, 1)};
  pair_round(p, 53, e3, 1, NULL);
  assert_int_equal(l[0].dcode, 30);
  mt_location e2[1] = {L("one.ml", names[2], 1, 1, 1)};
  pair_round(p, 54, e2, 1, NULL);
  assert_int_equal(l[0].dcode, 31);
  assert_int_equal(l[0].fcode, 0);
  pair_free(p);
}

/* line 20 bits, start 8 bits, end 10 bits: larger values become all ones. */
static void clamps(void **state) {
  (void)state;
  pair *p = pair_new();
  ploc *l = p->parsed.l;
  const struct {
    uint32_t line, s, e, wl, ws, we;
  } cases[] = {
      {0xfffff, 0xff, 0x3ff, 0xfffff, 0xff, 0x3ff},
      {0xffffe, 0xfe, 0x3fe, 0xffffe, 0xfe, 0x3fe},
      {0x100000, 0x100, 0x400, 0xfffff, 0xff, 0x3ff},
      {UINT32_MAX, UINT32_MAX, UINT32_MAX, 0xfffff, 0xff, 0x3ff},
      {0, 0, 0, 0, 0, 0},
      {0x12345, 0x200, 0x3ff, 0x12345, 0xff, 0x3ff},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mt_location e[1] = {L("c.ml", "f", cases[i].line, cases[i].s, cases[i].e)};
    pair_round(p, i, e, 1, NULL);
    assert_int_equal(l[0].line, cases[i].wl);
    assert_int_equal(l[0].start, cases[i].ws);
    assert_int_equal(l[0].end, cases[i].we);
    /* the clamp never spills into the MTF indexes */
    assert_int_equal(l[0].fcode, i == 0 ? 31 : 0);
    assert_int_equal(l[0].dcode, i == 0 ? 31 : 0);
  }
  pair_free(p);
}

static void check_unknown_bytes(const pair *p, uint64_t code, int first) {
  /* code, count 1, line 1 | start 1 << 20 | end 1 << 28 | 31 << 38 | 31 << 43 */
  uint8_t want[28];
  tu_st64(want, code);
  want[8] = 1;
  uint64_t w = 1 | 1ull << 20 | 1ull << 28 | (first ? 31ull << 38 | 31ull << 43 : 0);
  tu_st32(want + 9, (uint32_t)w);
  tu_st16(want + 13, (uint16_t)(w >> 32));
  memcpy(want + 15, "<unknown>\0??", 13);
  size_t n = first ? 28 : 15;
  assert_int_equal(p->len, n);
  assert_memory_equal(p->buf, want, n);
}

/* More than 255 locations, or a worst case over 4096 bytes, become the
 * single location <unknown>, ??, 1, 1, 1 (memtrace's Location.unknown). */
static void fallback_to_unknown(void **state) {
  (void)state;
  pair *p = pair_new();
  static mt_location many[256];
  for (int i = 0; i < 256; i++) many[i] = L("m.ml", "g", (uint32_t)i, 0, 0);
  int fb = -1;
  pair_round(p, 77, many, 256, &fb);
  assert_int_equal(fb, 1);
  check_unknown_bytes(p, 77, 1);
  /* again: the unknown names are now MTF hits */
  pair_round(p, 78, many, 256, &fb);
  assert_int_equal(fb, 1);
  check_unknown_bytes(p, 78, 0);
  /* 255 is fine */
  pair_round(p, 79, many, 255, &fb);
  assert_int_equal(fb, 0);
  assert_int_equal(p->nout, 255);

  /* size: 9 + 6 + (len(file) + 1) + (len("f") + 1) = 18 + L */
  static char big[4200];
  memset(big, 'z', sizeof big);
  big[4078] = 0;
  mt_location one[1] = {L(big, "f", 5, 6, 7)};
  pair_round(p, 80, one, 1, &fb);
  assert_int_equal(fb, 0);
  assert_int_equal(p->len, 4096); /* exactly the maximum */
  big[4078] = 'z';
  big[4079] = 0;
  one[0].filename = big;
  pair_round(p, 81, one, 1, &fb);
  assert_int_equal(fb, 1);
  /* the worst case counts full names even when MTF would hit: a list of
   * known names whose sum is too big still falls back */
  static char f2[2100];
  memset(f2, 'q', sizeof f2);
  f2[2040] = 0;
  mt_location two[2] = {L(f2, "f", 1, 1, 1), L(f2, "f", 2, 2, 2)};
  pair_round(p, 82, two, 1, &fb); /* one: 9 + 6 + 2041 + 2 = 2058 */
  assert_int_equal(fb, 0);
  pair_round(p, 83, two, 2, &fb); /* two: 9 + 2 * 2049 = 4107 > 4096 */
  assert_int_equal(fb, 1);
  pair_free(p);
}

/* Crafted events that point at empty MTF slots: an error, never a crash,
 * with the cursor left at the bad location's packed field. */
static void empty_slot_is_error(void **state) {
  (void)state;
  mt__mtf m;
  mt__strtab s = {0};
  mt_location out[255];
  size_t n;
  uint64_t code;
  uint8_t b[64];

  for (unsigned fc = 0; fc < 31; fc++) {
    mt__mtf_init(&m);
    tu_st64(b, 9);
    b[8] = 1;
    uint64_t w = 1 | (uint64_t)fc << 38 | 31ull << 43;
    tu_st32(b + 9, (uint32_t)w);
    tu_st16(b + 13, (uint16_t)(w >> 32));
    memcpy(b + 15, "f\0", 2);
    tu_guarded g = tu_guarded_copy(b, 17);
    mt__rd r = {g.p, g.p + 17, 0};
    const char *why = mt__loc_decode(&m, &s, &r, &code, out, &n);
    assert_non_null(why);
    assert_non_null(strstr(why, "file name index"));
    assert_non_null(strstr(why, "empty"));
    assert_ptr_equal(r.p, g.p + 9);
    tu_guarded_free(&g);
  }
  /* a function index to an empty slot of a fresh file's table */
  mt__mtf_init(&m);
  tu_st64(b, 9);
  b[8] = 2;
  uint64_t w = 1 | 31ull << 38 | 31ull << 43; /* new file, new name */
  tu_st32(b + 9, (uint32_t)w);
  tu_st16(b + 13, (uint16_t)(w >> 32));
  memcpy(b + 15, "a.ml\0f\0", 7);
  w = 1 | 0ull << 38 | 1ull << 43; /* a.ml, name slot 1: empty */
  tu_st32(b + 22, (uint32_t)w);
  tu_st16(b + 26, (uint16_t)(w >> 32));
  tu_guarded g = tu_guarded_copy(b, 28);
  mt__rd r = {g.p, g.p + 28, 0};
  const char *why = mt__loc_decode(&m, &s, &r, &code, out, &n);
  assert_non_null(why);
  assert_non_null(strstr(why, "function name index"));
  assert_ptr_equal(r.p, g.p + 22);
  tu_guarded_free(&g);
  /* slot 0 of that table is fine, though */
  w = 1 | 0ull << 38 | 0ull << 43;
  tu_st32(b + 22, (uint32_t)w);
  tu_st16(b + 26, (uint16_t)(w >> 32));
  mt__mtf_init(&m);
  r = (mt__rd){b, b + 28, 0};
  assert_null(mt__loc_decode(&m, &s, &r, &code, out, &n));
  assert_int_equal(n, 2);
  assert_string_equal(out[1].defname, "f");
  mt__strtab_free(&s);
}

/* Every cut of a valid event is reported, never read past. */
static void truncated_events(void **state) {
  (void)state;
  pair *p = pair_new();
  mt_location e[3] = {L("a.ml", "f", 1, 2, 3), L("b.ml", "g", 4, 5, 6), L("a.ml", "f", 7, 8, 9)};
  pair_round(p, 5, e, 3, NULL);
  for (size_t cut = 0; cut < p->len; cut++) {
    mt__mtf m;
    mt__mtf_init(&m);
    mt__strtab s = {0};
    mt_location out[255];
    size_t n;
    uint64_t code;
    tu_guarded g = tu_guarded_copy(p->buf, cut);
    mt__rd r = {g.p, g.p + cut, 0};
    const char *why = mt__loc_decode(&m, &s, &r, &code, out, &n);
    if (!why) fail_msg("cut at %zu of %zu decoded", cut, p->len);
    assert_true(strstr(why, "cut short") || strstr(why, "unterminated"));
    tu_guarded_free(&g);
    mt__strtab_free(&s);
  }
  pair_free(p);
}

/* memtrace's v1 encoder could rely on the reader reusing, for a new file,
 * the function table of the file it pushes out. The reader keeps it. */
static void v1_reuse_of_dropped_table(void **state) {
  (void)state;
  static uint8_t b[4096];
  size_t n = 0;
  /* 31 files F0..F30 with names D0..D30, one location each */
  tu_st64(b, 1);
  b[8] = 32;
  n = 9;
  for (int i = 0; i < 31; i++) {
    uint64_t w = 1 | 31ull << 38 | 31ull << 43;
    tu_st32(b + n, (uint32_t)w);
    tu_st16(b + n + 4, (uint16_t)(w >> 32));
    n += 6;
    n += (size_t)sprintf((char *)b + n, "F%d", i) + 1;
    n += (size_t)sprintf((char *)b + n, "D%d", i) + 1;
  }
  /* a new file F31 whose name index 0 refers to F0's table (F0 is last) */
  uint64_t w = 1 | 31ull << 38 | 0ull << 43;
  tu_st32(b + n, (uint32_t)w);
  tu_st16(b + n + 4, (uint16_t)(w >> 32));
  n += 6;
  n += (size_t)sprintf((char *)b + n, "F31") + 1;

  mt__mtf m;
  mt__mtf_init(&m);
  mt__strtab s = {0};
  mt_location out[255];
  size_t cnt;
  uint64_t code;
  mt__rd r = {b, b + n, 0};
  const char *why = mt__loc_decode(&m, &s, &r, &code, out, &cnt);
  if (why) fail_msg("v1 reuse: %s", why);
  assert_int_equal(cnt, 32);
  assert_string_equal(out[31].filename, "F31");
  assert_string_equal(out[31].defname, "D0");
  assert_string_equal(out[30].defname, "D30");
  /* F0 is gone */
  for (int i = 0; i < 31; i++) assert_string_not_equal(m.file[i], "F0");
  mt__strtab_free(&s);

  /* with fewer than 31 files the new file's table is fresh: index 0 empty */
  b[8] = 4;
  n = 9;
  for (int i = 0; i < 3; i++) {
    w = 1 | 31ull << 38 | 31ull << 43;
    tu_st32(b + n, (uint32_t)w);
    tu_st16(b + n + 4, (uint16_t)(w >> 32));
    n += 6;
    n += (size_t)sprintf((char *)b + n, "G%d", i) + 1;
    n += (size_t)sprintf((char *)b + n, "E%d", i) + 1;
  }
  w = 1 | 31ull << 38 | 0ull << 43;
  tu_st32(b + n, (uint32_t)w);
  tu_st16(b + n + 4, (uint16_t)(w >> 32));
  n += 6;
  n += (size_t)sprintf((char *)b + n, "G3") + 1;
  mt__mtf_init(&m);
  mt__strtab s2 = {0};
  r = (mt__rd){b, b + n, 0};
  why = mt__loc_decode(&m, &s2, &r, &code, out, &cnt);
  assert_non_null(why);
  assert_non_null(strstr(why, "function name index"));
  mt__strtab_free(&s2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(random_round_trip),
      cmocka_unit_test(mtf_hits_misses_and_order),
      cmocka_unit_test(files_evict),
      cmocka_unit_test(defnames_evict),
      cmocka_unit_test(clamps),
      cmocka_unit_test(fallback_to_unknown),
      cmocka_unit_test(empty_slot_is_error),
      cmocka_unit_test(truncated_events),
      cmocka_unit_test(v1_reuse_of_dropped_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
