/* The reader's two paths agree: the fast path, which decodes the common
 * events where the packet holds enough bytes, and the checked path, which
 * decodes every event and says what is wrong with a bad one
 * (mt__reader_checked_only). A trace of a few thousand events, in packets
 * long enough for the fast path, is damaged one byte at a time; read both
 * ways, each copy must give the same events and end the same way: the
 * same status, message and offset. A check the fast path lacks lets a bad
 * event through that the checked path stops at. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "format/format_internal.h"
#include "mt_test_util.h"

#define T0 1700000000000000ull
#define NSTACKS 40

typedef struct outcome {
  uint64_t digest, nev;
  int rc;
  char err[1024];
  uint64_t err_off;
} outcome;

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull; }

static void read_copy(const uint8_t *data, size_t len, int checked_only, outcome *o) {
  memset(o, 0, sizeof *o);
  o->digest = 0xcbf29ce484222325ull;
  int fd = tu_memfd(data, len);
  mt_reader *r = NULL;
  assert_int_equal(mt_reader_open_fd(&r, fd, "damaged"), MT_OK);
  if (checked_only) mt__reader_checked_only(r);
  mt_event ev;
  while ((o->rc = mt_reader_next(r, &ev)) == 1) {
    const uint64_t v[] = {ev.kind,   ev.time,   ev.obj_id,        ev.length,
                          ev.nsamples, ev.source, ev.domain, ev.backtrace_len,
                          ev.common_prefix};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) o->digest = mix(o->digest, v[i]);
    for (size_t i = 0; i < ev.backtrace_len; i++) o->digest = mix(o->digest, ev.backtrace[i]);
    o->nev++;
  }
  snprintf(o->err, sizeof o->err, "%s", mt_reader_error(r));
  o->err_off = mt_reader_error_offset(r);
  mt_reader_close(r);
  close(fd);
}

/* Allocations of every form (short and long, each source, several samples),
 * promotions and collections, over stacks sharing prefixes, in `ndomains`
 * domains taking turns (each turn a packet of its own). */
static void write_trace(tu_buf *b, int version, uint32_t ndomains, tu_rng *rng) {
  mt_writer *w = tu_writer(b, version, NULL);
  uint64_t stacks[NSTACKS][48];
  size_t depth[NSTACKS];
  for (size_t s = 0; s < NSTACKS; s++) {
    depth[s] = 1 + tu_below(rng, 40);
    size_t shared = s ? tu_below(rng, depth[s - 1] < depth[s] ? depth[s - 1] : depth[s]) : 0;
    for (size_t i = 0; i < depth[s]; i++)
      stacks[s][i] = i < shared ? stacks[s - 1][i] : 0x1000 + tu_below(rng, 300) * 16;
  }
  uint64_t live[64];
  size_t nlive = 0;
  uint64_t t = T0;
  uint32_t dom = 0;
  for (int k = 0; k < 3000; k++) {
    t += tu_below(rng, 50);
    if (tu_chance(rng, 3)) dom = (uint32_t)tu_below(rng, ndomains);
    int rc = MT_OK;
    if (dom == 0 && nlive && tu_chance(rng, 30)) {
      size_t i = tu_below(rng, nlive);
      if (tu_chance(rng, 30)) {
        rc = mt_writer_promote(w, t, 0, live[i]);
      } else {
        rc = mt_writer_collect(w, t, 0, live[i]);
        live[i] = live[--nlive];
      }
    } else {
      size_t s = tu_below(rng, NSTACKS);
      uint64_t len = tu_chance(rng, 70) ? 1 + tu_below(rng, 16) : 17 + tu_below(rng, 100000);
      uint64_t samples = tu_chance(rng, 80) ? 1 : 1 + tu_below(rng, 300);
      mt_source src = (mt_source)tu_below(rng, 3);
      uint64_t id;
      rc = mt_writer_alloc(w, t, dom, len, samples, src, stacks[s], depth[s], &id);
      if (dom == 0 && nlive < 64) live[nlive++] = id;
    }
    assert_int_equal(rc, MT_OK);
    if (tu_chance(rng, 1)) assert_int_equal(mt_writer_flush(w), MT_OK);
  }
  assert_int_equal(mt_writer_close(w), MT_OK);
}

static void paths_agree_on(int version, uint32_t ndomains, uint64_t seed) {
  tu_rng rng = {seed};
  tu_buf b = {0};
  write_trace(&b, version, ndomains, &rng);
  tu_packet pk[512];
  int npk = tu_packets(b.data, b.len, pk, 512);
  assert_true(npk > 4 && npk <= 512);

  outcome fast, checked;
  read_copy(b.data, b.len, 0, &fast);
  read_copy(b.data, b.len, 1, &checked);
  assert_int_equal(fast.rc, 0);
  assert_true(fast.nev > 2000);
  assert_true(fast.digest == checked.digest && fast.nev == checked.nev);

  /* Damage: one byte of an event packet (its header now and then), set to
   * a value a field's bounds turn on (vint tags; codes 0-5, 99-101 and
   * 116-117 as an event header's last byte), or to any value. */
  static const uint8_t values[] = {0,   1,   2,   3,   4,   5,   8,   10,  0x7f, 198,
                                   200, 202, 232, 234, 0xfc, 0xfd, 0xfe, 0xff};
  uint8_t *copy = malloc(b.len);
  int errors = 0;
  for (int trial = 0; trial < 1500; trial++) {
    const tu_packet *p = &pk[tu_below(&rng, (uint64_t)npk)];
    size_t hl = tu_hdr_len(p->version);
    if (p->first_code < 2 || p->size <= hl) {
      trial--;
      continue;
    }
    memcpy(copy, b.data, b.len);
    size_t at = tu_chance(&rng, 15) ? p->off + tu_below(&rng, hl)
                                    : p->off + hl + tu_below(&rng, p->size - hl);
    copy[at] = tu_chance(&rng, 60) ? values[tu_below(&rng, sizeof values)]
                                   : (uint8_t)tu_below(&rng, 256);
    read_copy(copy, b.len, 0, &fast);
    read_copy(copy, b.len, 1, &checked);
    if (fast.rc != checked.rc || fast.nev != checked.nev || fast.digest != checked.digest ||
        strcmp(fast.err, checked.err) != 0 || fast.err_off != checked.err_off)
      fail_msg("byte %zu set to 0x%02x: fast path %d after %llu events (%s), checked path %d "
               "after %llu (%s)",
               at, copy[at], fast.rc, (unsigned long long)fast.nev, fast.err, checked.rc,
               (unsigned long long)checked.nev, checked.err);
    errors += checked.rc < 0;
  }
  /* the damage reaches the checks: most bytes are fields a check reads */
  assert_true(errors > 300);
  free(copy);
  tu_buf_free(&b);
}

static void paths_agree_v2(void **state) {
  (void)state;
  paths_agree_on(2, 1, 0x9e3779b97f4a7c15ull);
}

static void paths_agree_v3_domains(void **state) {
  (void)state;
  paths_agree_on(3, 3, 0x2545f4914f6cdd1dull);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(paths_agree_v2),
      cmocka_unit_test(paths_agree_v3_domains),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
