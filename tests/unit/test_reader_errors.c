/* The reader on damaged traces: a small trace written by the writer is
 * corrupted one field at a time; each case checks the status, how many
 * events came out before it, and that the message names the file and the
 * byte offset of the damaged field.
 *
 * The base trace (v2), as the writer lays it out (checked in base_layout):
 *   P0 trace_info
 *   P1 locations of 0x100, 0x200, 0x300
 *   P2 events: short alloc 3 words [0x100 0x200] (26 bytes),
 *              alloc 100 words, major, [0x100 0x300] (20 bytes),
 *              promote 0 (5 bytes), collect 1 (5 bytes)
 *   P3 events: short alloc 2 words [0x100 0x200], collect 2  (real verifier)
 *   P4 location of 0x400
 *   P5 events: short alloc 5 words [0x400]                   (real verifier)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mt_test_util.h"

#define T0 1700000000000000ull

typedef struct base {
  tu_buf b;
  tu_packet pk[8];
  int npk;
  unsigned version;
} base;

static base B2, B3;

static void build(base *s, unsigned version) {
  memset(s, 0, sizeof *s);
  s->version = version;
  mt_writer *w = tu_writer(&s->b, (int)version, NULL);
  const uint64_t a[2] = {0x100, 0x200}, c[2] = {0x100, 0x300}, d[1] = {0x400};
  int rc = 0;
  rc |= mt_writer_alloc(w, T0 + 10, 0, 3, 1, MT_SOURCE_MINOR, a, 2, NULL);
  rc |= mt_writer_alloc(w, T0 + 20, 0, 100, 1, MT_SOURCE_MAJOR, c, 2, NULL);
  rc |= mt_writer_promote(w, T0 + 30, 0, 0);
  rc |= mt_writer_collect(w, T0 + 40, 0, 1);
  rc |= mt_writer_flush(w);
  rc |= mt_writer_alloc(w, T0 + 50, 0, 2, 1, MT_SOURCE_MINOR, a, 2, NULL);
  rc |= mt_writer_collect(w, T0 + 60, 0, 2);
  rc |= mt_writer_flush(w);
  rc |= mt_writer_alloc(w, T0 + 70, 0, 5, 1, MT_SOURCE_MINOR, d, 1, NULL);
  rc |= mt_writer_close(w);
  if (rc != 0) abort();
  s->npk = tu_packets(s->b.data, s->b.len, s->pk, 8);
}

static int setup(void **state) {
  (void)state;
  build(&B2, 2);
  build(&B3, 3);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tu_buf_free(&B2.b);
  tu_buf_free(&B3.b);
  rmdir(tu_tmpdir());
  return 0;
}

/* ---- running the reader on a damaged copy ---- */

typedef struct outcome {
  char path[256];
  int open_rc;   /* mt_reader_open's result */
  int rc;        /* the last mt_reader_next result */
  size_t nev;    /* events delivered */
  char err[1024];
  char warn[1024];
  int has_warn;
  uint64_t err_off;   /* mt_reader_error_offset */
  uint64_t trunc_off; /* mt_reader_truncated */
} outcome;

static void run(const char *name, const uint8_t *data, size_t len, outcome *o) {
  memset(o, 0, sizeof *o);
  snprintf(o->path, sizeof o->path, "%s/%s.ctf", tu_tmpdir(), name);
  tu_write_file(o->path, data, len);
  mt_reader *r = NULL;
  o->open_rc = mt_reader_open(&r, o->path);
  assert_non_null(r);
  if (o->open_rc == MT_OK) {
    mt_event ev;
    while ((o->rc = mt_reader_next(r, &ev)) == 1) o->nev++;
    /* the outcome sticks */
    assert_int_equal(mt_reader_next(r, &ev), o->rc);
    assert_int_equal(mt_reader_next(r, &ev), o->rc);
    const char *w = mt_reader_warning(r);
    o->has_warn = w != NULL;
    snprintf(o->warn, sizeof o->warn, "%s", w ? w : "");
  }
  o->trunc_off = mt_reader_truncated(r);
  o->err_off = mt_reader_error_offset(r);
  snprintf(o->err, sizeof o->err, "%s", mt_reader_error(r));
  mt_reader_close(r);
  unlink(o->path);
}

static uint8_t *dup_base(const base *s) {
  uint8_t *p = malloc(s->b.len);
  memcpy(p, s->b.data, s->b.len);
  return p;
}

/* An error from mt_reader_open. */
static void expect_open_error(const outcome *o, int status, unsigned long long byte) {
  if (o->open_rc != status)
    fail_msg("%s: open returned %d (%s), expected %d", o->path, o->open_rc, o->err, status);
  if (!strstr(o->err, o->path)) fail_msg("message lacks the file name: %s", o->err);
  if (!tu_has_byte(o->err, byte)) fail_msg("message lacks 'byte %llu': %s", byte, o->err);
  if (o->err_off != byte) fail_msg("error offset %llu, expected %llu", (unsigned long long)o->err_off, byte);
}

/* An error from mt_reader_next after `nev` events. */
static void expect_error(const outcome *o, size_t nev, int status, unsigned long long byte) {
  if (o->open_rc != MT_OK) fail_msg("%s: open failed: %s", o->path, o->err);
  if (o->rc != status)
    fail_msg("%s: next returned %d after %zu events (%s), expected %d after %zu", o->path,
             o->rc, o->nev, o->err, status, nev);
  if (o->nev != nev) fail_msg("%zu events before the error, expected %zu", o->nev, nev);
  if (!strstr(o->err, o->path)) fail_msg("message lacks the file name: %s", o->err);
  if (!tu_has_byte(o->err, byte)) fail_msg("message lacks 'byte %llu': %s", byte, o->err);
  if ((status == MT_ERR_CORRUPT || status == MT_ERR_VERSION) && o->err_off != byte)
    fail_msg("error offset %llu, expected %llu", (unsigned long long)o->err_off, byte);
}

static void expect_clean_end(const outcome *o, size_t nev) {
  if (o->open_rc != MT_OK) fail_msg("%s: open failed: %s", o->path, o->err);
  if (o->rc != 0) fail_msg("%s: next returned %d: %s", o->path, o->rc, o->err);
  assert_int_equal(o->nev, nev);
  assert_string_equal(o->err, "");
  assert_true(o->err_off == MT_NO_OFFSET);
}

/* offsets in the base trace */
#define P(s, i) ((s)->pk[i].off)
static size_t HL(const base *s) { return tu_hdr_len(s->version); }
/* P2's events */
static size_t ev1(const base *s) { return P(s, 2) + HL(s); }
static size_t ev2(const base *s) { return ev1(s) + 26; }
static size_t ev3(const base *s) { return ev2(s) + 20; }

/* ---- the undamaged trace ---- */

static void base_layout(void **state) {
  (void)state;
  const base *bases[2] = {&B2, &B3};
  for (int i = 0; i < 2; i++) {
    const base *s = bases[i];
    assert_int_equal(s->npk, 6);
    assert_int_equal(s->pk[0].first_code, 0);
    assert_int_equal(s->pk[1].first_code, 1);
    assert_int_equal(s->pk[2].first_code, 103);
    assert_int_equal(s->pk[2].size, HL(s) + 56);
    assert_int_equal(s->pk[3].first_code, 102);
    assert_int_equal(s->pk[3].v_ix, 4242);
    assert_int_equal(s->pk[4].first_code, 1);
    assert_int_equal(s->pk[5].first_code, 105);
    const uint8_t *d = s->b.data;
    assert_int_equal(tu_ld32(d + ev2(s)) >> 25, 2);  /* alloc */
    assert_int_equal(d[ev2(s) + 4], 100);            /* length */
    assert_int_equal(d[ev2(s) + 6], MT_SOURCE_MAJOR);
    assert_int_equal(tu_ld32(d + ev3(s)) >> 25, 3);  /* promote */
    assert_int_equal(tu_ld32(d + ev3(s) + 5) >> 25, 4); /* collect */
    outcome o;
    run("base", d, s->b.len, &o);
    expect_clean_end(&o, 7);
    assert_int_equal(o.has_warn, 0);
  }
}

/* ---- packet headers ---- */

static void bad_magic(void **state) {
  (void)state;
  outcome o;
  uint8_t *d = dup_base(&B2);
  d[0] ^= 0x40;
  run("bad_magic_first", d, B2.b.len, &o);
  expect_open_error(&o, MT_ERR_CORRUPT, 0);
  assert_non_null(strstr(o.err, "magic"));
  free(d);

  d = dup_base(&B2);
  d[P(&B2, 3) + 3] = 0;
  run("bad_magic_later", d, B2.b.len, &o);
  expect_error(&o, 4, MT_ERR_CORRUPT, P(&B2, 3));
  assert_non_null(strstr(o.err, "magic"));
  free(d);
}

static void bad_version(void **state) {
  (void)state;
  const unsigned versions[2] = {0, 4};
  for (int i = 0; i < 2; i++) {
    outcome o;
    uint8_t *d = dup_base(&B2);
    tu_st16(d + TU_H_VERSION, (uint16_t)versions[i]);
    run("bad_version_first", d, B2.b.len, &o);
    expect_open_error(&o, MT_ERR_VERSION, TU_H_VERSION);
    free(d);

    d = dup_base(&B2);
    tu_st16(d + P(&B2, 3) + TU_H_VERSION, (uint16_t)versions[i]);
    run("bad_version_later", d, B2.b.len, &o);
    expect_error(&o, 4, MT_ERR_VERSION, P(&B2, 3) + TU_H_VERSION);
    free(d);
  }
}

static void packet_size_smaller_than_header(void **state) {
  (void)state;
  const uint32_t sizes[3] = {0, 8 * 8, 65 * 8};
  for (int i = 0; i < 3; i++) {
    outcome o;
    uint8_t *d = dup_base(&B2);
    tu_st32(d + P(&B2, 3) + TU_H_SIZE, sizes[i]);
    run("size_small", d, B2.b.len, &o);
    expect_error(&o, 4, MT_ERR_CORRUPT, P(&B2, 3) + TU_H_SIZE);
    free(d);
  }
  /* in the first packet */
  outcome o;
  uint8_t *d = dup_base(&B2);
  tu_st32(d + TU_H_SIZE, 10 * 8);
  run("size_small_first", d, B2.b.len, &o);
  expect_open_error(&o, MT_ERR_CORRUPT, TU_H_SIZE);
  free(d);
}

static void packet_size_over_limit(void **state) {
  (void)state;
  outcome o;
  uint8_t *d = dup_base(&B2);
  tu_st32(d + P(&B2, 3) + TU_H_SIZE, ((1u << 20) + 1) * 8);
  run("size_big", d, B2.b.len, &o);
  expect_error(&o, 4, MT_ERR_CORRUPT, P(&B2, 3) + TU_H_SIZE);
  free(d);
  /* 1 MiB itself is allowed: this file just ends before it */
  d = dup_base(&B2);
  tu_st32(d + P(&B2, 3) + TU_H_SIZE, (1u << 20) * 8);
  run("size_1mib", d, B2.b.len, &o);
  expect_clean_end(&o, 4);
  assert_int_equal(o.has_warn, 1);
  assert_non_null(strstr(o.warn, "truncated"));
  assert_true(tu_has_byte(o.warn, P(&B2, 3)));
  free(d);
}

/* A truncated last packet: every complete packet is delivered, then the
 * trace ends (0) with a warning naming the file and the packet. */
static void truncated_last_packet(void **state) {
  (void)state;
  const base *s = &B2;
  const struct {
    size_t len;
    size_t packet; /* which packet is cut */
  } cuts[] = {
      {P(s, 5) + s->pk[5].size - 1, 5}, {P(s, 5) + HL(s) + 2, 5}, {P(s, 5) + HL(s), 5},
      {P(s, 5) + 30, 5},                {P(s, 5) + 3, 5},         {P(s, 5) + 1, 5},
      {P(s, 4) + HL(s) + 20, 4},        {P(s, 4) + 70, 4},
  };
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    outcome o;
    run("truncated", s->b.data, cuts[i].len, &o);
    expect_clean_end(&o, 6);
    if (!o.has_warn) fail_msg("cut at %zu: no warning", cuts[i].len);
    assert_non_null(strstr(o.warn, "truncated"));
    assert_non_null(strstr(o.warn, o.path));
    if (!tu_has_byte(o.warn, P(s, cuts[i].packet)))
      fail_msg("cut at %zu: warning lacks byte %zu: %s", cuts[i].len, P(s, cuts[i].packet), o.warn);
    assert_int_equal(o.trunc_off, P(s, cuts[i].packet));
  }
  /* cut between packets: a clean end, no warning */
  outcome o;
  run("cut_between", s->b.data, P(s, 5), &o);
  expect_clean_end(&o, 6);
  assert_int_equal(o.has_warn, 0);
  assert_true(o.trunc_off == MT_NO_OFFSET);
  run("cut_between2", s->b.data, P(s, 3), &o);
  expect_clean_end(&o, 4);
  assert_int_equal(o.has_warn, 0);
}

static void time_begin_after_end(void **state) {
  (void)state;
  outcome o;
  uint8_t *d = dup_base(&B2);
  uint64_t end = tu_ld64(d + P(&B2, 3) + TU_H_TEND);
  tu_st64(d + P(&B2, 3) + TU_H_TBEGIN, end + 1);
  run("time_begin_after_end", d, B2.b.len, &o);
  expect_error(&o, 4, MT_ERR_CORRUPT, P(&B2, 3) + TU_H_TBEGIN);
  free(d);
}

static void alloc_id_range(void **state) {
  (void)state;
  const base *bases[2] = {&B2, &B3};
  for (int i = 0; i < 2; i++) {
    const base *s = bases[i];
    outcome o;
    /* begin after end: the begin field */
    uint8_t *d = dup_base(s);
    size_t ab = P(s, 3) + tu_h_alloc_begin(s->version);
    tu_st64(d + ab, tu_ld64(d + ab + 8) + 1);
    run("alloc_begin_after_end", d, s->b.len, &o);
    expect_error(&o, 4, MT_ERR_CORRUPT, ab);
    free(d);
    /* the header promises one allocation more than P3 holds: reported
     * when P3 is done, at its content */
    d = dup_base(s);
    size_t ae = P(s, 3) + tu_h_alloc_end(s->version);
    tu_st64(d + ae, tu_ld64(d + ae) + 1);
    run("alloc_end_too_big", d, s->b.len, &o);
    expect_error(&o, 6, MT_ERR_CORRUPT, P(s, 3) + HL(s));
    free(d);
    /* the same in the last packet: found at the end of the trace */
    d = dup_base(s);
    ae = P(s, 5) + tu_h_alloc_end(s->version);
    tu_st64(d + ae, tu_ld64(d + ae) + 1);
    run("alloc_end_last_packet", d, s->b.len, &o);
    expect_error(&o, 7, MT_ERR_CORRUPT, P(s, 5) + HL(s));
    free(d);
    /* P2 holds two allocations but its header allows one: the second */
    d = dup_base(s);
    ae = P(s, 2) + tu_h_alloc_end(s->version);
    tu_st64(d + ae, tu_ld64(d + ae) - 1);
    run("alloc_end_too_small", d, s->b.len, &o);
    expect_error(&o, 1, MT_ERR_CORRUPT, ev2(s) + 4);
    free(d);
  }
}

static void cache_verifier_mismatch(void **state) {
  (void)state;
  const base *bases[2] = {&B2, &B3};
  for (int i = 0; i < 2; i++) {
    const base *s = bases[i];
    size_t v = P(s, 3) + tu_h_verifier(s->version);
    for (int field = 0; field < 3; field++) {
      outcome o;
      uint8_t *d = dup_base(s);
      if (field == 0) tu_st16(d + v, 0x4000);            /* slot out of range */
      if (field == 1) tu_st16(d + v + 2, 1);             /* prediction */
      if (field == 2) tu_st64(d + v + 4, tu_ld64(d + v + 4) + 1); /* code */
      run("verifier", d, s->b.len, &o);
      expect_error(&o, 4, MT_ERR_CORRUPT, v);
      assert_non_null(strstr(o.err, "verif"));
      free(d);
    }
  }
}

/* Packets of another pid (a forked child writing to the same file) are
 * skipped, and the end says so. */
static void other_pid_skipped(void **state) {
  (void)state;
  const base *s = &B2;
  /* a copy of P3 with another pid, right after P3, and a foreign packet of
   * garbage at the end */
  size_t p3 = P(s, 3), n3 = s->pk[3].size;
  size_t len = s->b.len + n3 + 200;
  uint8_t *d = malloc(len);
  memcpy(d, s->b.data, p3 + n3);
  memcpy(d + p3 + n3, s->b.data + p3, n3);
  tu_st64(d + p3 + n3 + TU_H_PID, 777);
  memcpy(d + p3 + 2 * n3, s->b.data + p3 + n3, s->b.len - p3 - n3);
  uint8_t *g = d + s->b.len + n3;
  memset(g, 0xab, 200);
  memcpy(g, s->b.data + p3, 66);
  tu_st32(g + TU_H_SIZE, 200 * 8);
  tu_st64(g + TU_H_PID, 777);
  outcome o;
  run("other_pid", d, len, &o);
  expect_clean_end(&o, 7);
  assert_int_equal(o.has_warn, 1);
  assert_non_null(strstr(o.warn, o.path));
  assert_non_null(strstr(o.warn, "777"));
  assert_non_null(strstr(o.warn, "2 packets"));
  free(d);
}

/* ---- files ---- */

static void empty_and_missing_files(void **state) {
  (void)state;
  outcome o;
  run("empty", (const uint8_t *)"", 0, &o);
  expect_open_error(&o, MT_ERR_CORRUPT, 0);
  assert_non_null(strstr(o.err, "empty"));

  char path[256];
  snprintf(path, sizeof path, "%s/does-not-exist.ctf", tu_tmpdir());
  mt_reader *r = NULL;
  assert_int_equal(mt_reader_open(&r, path), MT_ERR_IO);
  assert_non_null(r);
  assert_non_null(strstr(mt_reader_error(r), path));
  assert_non_null(strstr(mt_reader_error(r), strerror(ENOENT)));
  mt_reader_close(r);

  /* a directory */
  assert_int_equal(mt_reader_open(&r, tu_tmpdir()), MT_ERR_IO);
  assert_non_null(strstr(mt_reader_error(r), tu_tmpdir()));
  mt_reader_close(r);

  /* cut inside the first header, and inside the trace_info packet */
  run("first_header_cut", B2.b.data, 30, &o);
  expect_open_error(&o, MT_ERR_CORRUPT, 30);
  run("first_packet_cut", B2.b.data, 100, &o);
  expect_open_error(&o, MT_ERR_CORRUPT, 100);
  run("first_packet_cut3", B2.b.data, 3, &o);
  expect_open_error(&o, MT_ERR_CORRUPT, 3);
  /* only the trace_info packet: no events */
  run("info_only", B2.b.data, P(&B2, 1), &o);
  expect_clean_end(&o, 0);
  assert_int_equal(o.has_warn, 0);
}

/* ---- events ---- */

static void unknown_event_code(void **state) {
  (void)state;
  const unsigned codes[] = {5, 50, 99, 100, 117, 127};
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    outcome o;
    uint8_t *d = dup_base(&B2);
    uint32_t h = tu_ld32(d + ev3(&B2));
    tu_st32(d + ev3(&B2), (h & 0x1ffffff) | codes[i] << 25);
    run("unknown_code", d, B2.b.len, &o);
    expect_error(&o, 2, MT_ERR_CORRUPT, ev3(&B2));
    assert_non_null(strstr(o.err, "event code"));
    free(d);
  }
  /* a second trace_info */
  outcome o;
  uint8_t *d = dup_base(&B2);
  uint32_t h = tu_ld32(d + ev3(&B2));
  tu_st32(d + ev3(&B2), h & 0x1ffffff);
  run("second_trace_info", d, B2.b.len, &o);
  expect_error(&o, 2, MT_ERR_CORRUPT, ev3(&B2));
  free(d);
}

static void unknown_alloc_source(void **state) {
  (void)state;
  const uint8_t srcs[] = {3, 4, 255};
  for (size_t i = 0; i < sizeof srcs; i++) {
    outcome o;
    uint8_t *d = dup_base(&B2);
    d[ev2(&B2) + 6] = srcs[i];
    run("unknown_source", d, B2.b.len, &o);
    expect_error(&o, 1, MT_ERR_CORRUPT, ev2(&B2) + 6);
    assert_non_null(strstr(o.err, "source"));
    free(d);
  }
}

static void event_times(void **state) {
  (void)state;
  outcome o;
  /* after the packet's end */
  uint8_t *d = dup_base(&B2);
  uint64_t end = B2.pk[2].time_end;
  tu_st32(d + ev1(&B2), 103u << 25 | (uint32_t)((end + 1) & 0x1ffffff));
  run("time_after_packet", d, B2.b.len, &o);
  expect_error(&o, 0, MT_ERR_CORRUPT, ev1(&B2));
  free(d);
  /* before the previous event */
  d = dup_base(&B2);
  tu_st32(d + ev2(&B2), 2u << 25 | (uint32_t)((T0 + 5) & 0x1ffffff));
  run("time_backwards", d, B2.b.len, &o);
  expect_error(&o, 1, MT_ERR_CORRUPT, ev2(&B2));
  free(d);
}

/* The string a packet ends with (its last byte is the NUL): where it
 * starts. */
static size_t last_string_start(const uint8_t *d, size_t packet_end) {
  size_t i = packet_end - 1;
  assert_int_equal(d[i], 0);
  while (i > 0 && d[i - 1] != 0) i--;
  return i;
}

/* An unterminated string: the byte named is where the string starts.
 *
 * BUG found at 93d681d (src/format/bytes.h mt__getstr + its callers in
 * reader.c and loccodec.c): on a missing terminator mt__getstr pinned the
 * cursor to the end of the packet, and the callers computed the offset
 * afterwards, so the message named the first byte after the packet (the
 * next packet's magic, or the end of the file) instead of the string. */
static void unterminated_string_trace_info(void **state) {
  (void)state;
  outcome o;
  /* trace_info's context: the last field of the first packet */
  uint8_t *d = dup_base(&B2);
  size_t end = B2.pk[0].size;
  size_t start = last_string_start(d, end);
  assert_string_equal((const char *)d + start, "unit test");
  d[end - 1] = 'x';
  run("unterminated_context", d, B2.b.len, &o);
  assert_non_null(strstr(o.err, "unterminated"));
  expect_open_error(&o, MT_ERR_CORRUPT, start);
  free(d);
}

static void unterminated_string_location(void **state) {
  (void)state;
  outcome o;
  /* the function name that ends the location packet P1: walk its events */
  uint8_t *d = dup_base(&B2);
  size_t end = P(&B2, 1) + B2.pk[1].size;
  size_t pos = P(&B2, 1) + HL(&B2), start = 0;
  while (pos < end) {
    assert_int_equal(tu_ld32(d + pos) >> 25, 1);
    unsigned n = d[pos + 12];
    pos += 13;
    for (unsigned i = 0; i < n; i++) {
      uint64_t w = tu_ld32(d + pos) | (uint64_t)tu_ld16(d + pos + 4) << 32;
      pos += 6;
      for (int k = 0; k < 2; k++)
        if (((w >> (k ? 43 : 38)) & 31) == 31) {
          start = pos;
          pos += strlen((const char *)d + pos) + 1;
        }
    }
  }
  assert_int_equal(pos, end);
  assert_memory_equal(d + start, "fun_", 4);
  d[end - 1] = 'x';
  run("unterminated_defname", d, B2.b.len, &o);
  assert_non_null(strstr(o.err, "unterminated"));
  expect_error(&o, 0, MT_ERR_CORRUPT, start);
  free(d);
}

/* A location's file index pointing at an empty move-to-front slot. */
static void mtf_index_to_empty_slot(void **state) {
  (void)state;
  outcome o;
  uint8_t *d = dup_base(&B2);
  size_t at = P(&B2, 1) + HL(&B2) + 4 + 8 + 1; /* first location's packed word */
  uint64_t w = tu_ld32(d + at) | (uint64_t)tu_ld16(d + at + 4) << 32;
  assert_int_equal((w >> 38) & 31, 31); /* a new file */
  w = (w & ~(31ull << 38)) | 5ull << 38;
  tu_st32(d + at, (uint32_t)w);
  tu_st16(d + at + 4, (uint16_t)(w >> 32));
  run("mtf_empty_slot", d, B2.b.len, &o);
  expect_error(&o, 0, MT_ERR_CORRUPT, at);
  assert_non_null(strstr(o.err, "move-to-front"));
  free(d);
}

/* A version 1 trace (no context in trace_info) reads: the base trace with
 * its context removed and every packet marked version 1. */
static void v1_trace_reads(void **state) {
  (void)state;
  const base *s = &B2;
  size_t ctx_len = strlen("unit test") + 1;
  size_t len = s->b.len - ctx_len;
  uint8_t *d = malloc(len);
  size_t p0 = s->pk[0].size;
  memcpy(d, s->b.data, p0 - ctx_len);
  memcpy(d + p0 - ctx_len, s->b.data + p0, s->b.len - p0);
  tu_st32(d + TU_H_SIZE, (uint32_t)(p0 - ctx_len) * 8);
  tu_packet pk[8];
  assert_int_equal(tu_packets(d, len, pk, 8), 6);
  for (int i = 0; i < 6; i++) tu_st16(d + pk[i].off + TU_H_VERSION, 1);
  outcome o;
  run("v1", d, len, &o);
  expect_clean_end(&o, 7);
  mt_reader *r = NULL;
  int fd = tu_memfd(d, len);
  assert_int_equal(mt_reader_open_fd(&r, fd, "v1"), MT_OK);
  assert_int_equal(mt_reader_info(r)->version, 1);
  assert_string_equal(mt_reader_info(r)->context, "");
  assert_string_equal(mt_reader_info(r)->host_name, "testhost");
  mt_reader_close(r);
  close(fd);
  /* with the context left in, a v1 reader finds bytes after trace_info */
  d = realloc(d, s->b.len);
  memcpy(d, s->b.data, s->b.len);
  tu_st16(d + TU_H_VERSION, 1);
  run("v1_with_context", d, s->b.len, &o);
  expect_open_error(&o, MT_ERR_CORRUPT, p0 - ctx_len);
  free(d);
}

/* A file that grows after the reader opened it (a trace still being
 * written): the reader sized its buffer to the file at open time and must
 * grow it when a later packet is larger than what was there. */
static void file_grows_after_open(void **state) {
  (void)state;
  tu_buf b = {0};
  mt_writer *w = tu_writer(&b, 2, NULL);
  uint64_t bt[40];
  int rc = 0;
  for (uint64_t i = 0; i < 3000; i++) {
    for (size_t k = 0; k < 40; k++) bt[k] = 0x1000 + (i * 7 + k * 13) % 5000;
    rc |= mt_writer_alloc(w, T0 + 10 * i, 0, 1 + i % 50, 1, MT_SOURCE_MINOR, bt, 40, NULL);
  }
  rc |= mt_writer_close(w);
  assert_int_equal(rc, 0);
  tu_packet pk[64];
  int npk = tu_packets(b.data, b.len, pk, 64);
  assert_true(npk >= 3);
  size_t first = pk[1].off; /* trace_info only */
  assert_true(b.len - first > 8192);

  char path[256];
  snprintf(path, sizeof path, "%s/growing.ctf", tu_tmpdir());
  tu_write_file(path, b.data, first);
  mt_reader *r = NULL;
  assert_int_equal(mt_reader_open(&r, path), MT_OK);
  FILE *f = fopen(path, "ab");
  assert_non_null(f);
  assert_int_equal(fwrite(b.data + first, 1, b.len - first, f), b.len - first);
  fclose(f);
  mt_event ev;
  size_t n = 0;
  while ((rc = mt_reader_next(r, &ev)) == 1) n++;
  assert_int_equal(rc, 0);
  assert_int_equal(n, 3000);
  assert_null(mt_reader_warning(r));
  mt_reader_close(r);
  unlink(path);
  tu_buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(base_layout),
      cmocka_unit_test(bad_magic),
      cmocka_unit_test(bad_version),
      cmocka_unit_test(packet_size_smaller_than_header),
      cmocka_unit_test(packet_size_over_limit),
      cmocka_unit_test(truncated_last_packet),
      cmocka_unit_test(time_begin_after_end),
      cmocka_unit_test(alloc_id_range),
      cmocka_unit_test(cache_verifier_mismatch),
      cmocka_unit_test(other_pid_skipped),
      cmocka_unit_test(empty_and_missing_files),
      cmocka_unit_test(unknown_event_code),
      cmocka_unit_test(unknown_alloc_source),
      cmocka_unit_test(event_times),
      cmocka_unit_test(unterminated_string_trace_info),
      cmocka_unit_test(unterminated_string_location),
      cmocka_unit_test(mtf_index_to_empty_slot),
      cmocka_unit_test(v1_trace_reads),
      cmocka_unit_test(file_grows_after_open),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
