/* The reader's two paths agree: the fast path, which decodes the common
 * events where the packet holds enough bytes, and the checked path, which
 * decodes every event and says what is wrong with a bad one
 * (mt__reader_checked_only). A trace of a few thousand events, in packets
 * long enough for the fast path, is damaged one byte at a time; read both
 * ways, each copy must give the same events and end the same way: the
 * same status, message, offset and warning, whether promotions and
 * collections are returned or skipped. A check the fast path lacks lets a
 * bad event through that the checked path stops at. Both paths give each
 * allocation's frames the backtrace cache slots they came from, whose
 * tags a user numbering codes finds again (format/bt_tags.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "format/bt_tags.h"
#include "format/format_internal.h"
#include "mt_test_util.h"

#define T0 1700000000000000ull
#define NSTACKS 40

/* Promotions and collections: the kinds a reader of allocations alone
 * skips, which the fast path passes over without filling an event. */
#define SKIP_MINOR (1u << MT_EVENT_PROMOTE | 1u << MT_EVENT_COLLECT)

/* How a read ended: the time of the last event read, returned or not, and
 * the count of those not returned (mt_reader_skipped). */
typedef struct read_end {
  uint64_t time, skipped;
} read_end;

/* The copy in `data` read to its end, through the checked path alone or
 * through both, skipping the kinds in `skip`. */
static void read_copy(const uint8_t *data, size_t len, int checked_only, unsigned skip,
                      tu_trace *t, read_end *end) {
  memset(t, 0, sizeof *t);
  t->fd = tu_memfd(data, len);
  mt_reader *r = NULL;
  assert_int_equal(mt_reader_open_fd(&r, t->fd, "damaged"), MT_OK);
  if (checked_only) mt__reader_checked_only(r);
  assert_int_equal(mt_reader_skip(r, skip), MT_OK);
  tu_read_events(r, t);
  end->time = mt_reader_trace_end(r, 0);
  end->skipped = mt_reader_skipped(r);
  mt_reader_close(r);
  close(t->fd);
  t->fd = -1;
}

/* Whether the two reads gave the same events and ended alike. */
static int same_reads(const tu_trace *fast, const tu_trace *checked) {
  int same = fast->status == checked->status && fast->n == checked->n &&
             strcmp(fast->error, checked->error) == 0 &&
             fast->error_offset == checked->error_offset &&
             strcmp(fast->warning, checked->warning) == 0;
  for (size_t i = 0; same && i < fast->n; i++)
    same = tu_same_event(&fast->ev[i].ev, &checked->ev[i].ev);
  return same;
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

  tu_trace fast, checked;
  read_end fast_end, checked_end;
  read_copy(b.data, b.len, 0, 0, &fast, &fast_end);
  read_copy(b.data, b.len, 1, 0, &checked, &checked_end);
  assert_int_equal(fast.status, 0);
  assert_true(fast.n > 2000);
  assert_true(same_reads(&fast, &checked));
  assert_int_equal(fast_end.time, checked_end.time);
  assert_int_equal(fast_end.skipped + checked_end.skipped, 0);
  size_t all = fast.n;
  tu_trace_free(&fast);
  tu_trace_free(&checked);
  read_copy(b.data, b.len, 0, SKIP_MINOR, &fast, &fast_end);
  read_copy(b.data, b.len, 1, SKIP_MINOR, &checked, &checked_end);
  assert_true(fast.n > 1000 && fast.n < all - 300); /* runs of skipped events */
  assert_true(same_reads(&fast, &checked));
  assert_int_equal(fast_end.time, checked_end.time);
  /* every event read: returned or skipped */
  assert_int_equal(fast.n + fast_end.skipped, all);
  assert_int_equal(checked.n + checked_end.skipped, all);
  tu_trace_free(&fast);
  tu_trace_free(&checked);

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
    /* every other copy read as a reader of allocations alone */
    unsigned skip = trial % 2 ? SKIP_MINOR : 0;
    read_copy(copy, b.len, 0, skip, &fast, &fast_end);
    read_copy(copy, b.len, 1, skip, &checked, &checked_end);
    if (!same_reads(&fast, &checked) || fast_end.time != checked_end.time ||
        fast_end.skipped != checked_end.skipped)
      fail_msg("byte %zu set to 0x%02x, skipping %#x: fast path %d after %zu events (%s), "
               "checked path %d after %zu (%s)",
               at, copy[at], skip, fast.status, fast.n, fast.error, checked.status, checked.n,
               checked.error);
    errors += checked.status < 0;
    tu_trace_free(&fast);
    tu_trace_free(&checked);
  }
  /* the damage reaches the checks: most bytes are fields a check reads */
  assert_true(errors > 300);
  free(copy);
  tu_buf_free(&b);
}

/* A user numbering codes through the tags, over both paths and every
 * domain: a number found is always the code's, and most frames find
 * theirs (300 codes, no evictions). */
static void tags_number_codes(int version, uint32_t ndomains, uint64_t seed) {
  tu_rng rng = {seed};
  tu_buf b = {0};
  write_trace(&b, version, ndomains, &rng);
  for (int checked_only = 0; checked_only <= 1; checked_only++) {
    int fd = tu_memfd(b.data, b.len);
    mt_reader *r = NULL;
    assert_int_equal(mt_reader_open_fd(&r, fd, "tags"), MT_OK);
    if (checked_only) mt__reader_checked_only(r);
    mt_event ev;
    mt__bt_tags_seen seen = {0};
    size_t found = 0, frames = 0;
    int rc;
    while ((rc = mt_reader_next(r, &ev)) > 0) {
      if (ev.kind != MT_EVENT_ALLOC) continue;
      /* asked each time, and through the last answer for its domain */
      mt__bt_decoder *t = mt__reader_bt_tags(r, &ev);
      assert_non_null(t);
      assert_ptr_equal(mt__bt_tags_of(&seen, r, &ev), t);
      assert_int_equal(mt__bt_tags_from(&ev), ev.common_prefix);
      for (size_t i = mt__bt_tags_from(&ev); i < ev.backtrace_len; i++) {
        uint64_t c = ev.backtrace[i];
        uint32_t want = (uint32_t)(c >> 4) + 1, n = mt__bt_tag_get(t, i, c);
        frames++;
        if (n) assert_int_equal(n, want);
        else mt__bt_tag_set(t, i, c, want);
        found += n != 0;
      }
    }
    assert_int_equal(rc, 0);
    assert_true(frames > 10000 && found > frames * 9 / 10);
    mt_reader_close(r);
    close(fd);
  }
  tu_buf_free(&b);
}

/* Backtraces tens of thousands of frames deep (a recursion, whose frames
 * take few codewords), growing and shrinking by up to 300 frames an
 * allocation: the decoder's buffer grows under both paths, the fast path
 * leaving to the checked one each allocation that could expand past it.
 * Both read every backtrace as written. */
static void deep_backtraces_agree(void **state) {
  (void)state;
  enum { DEEP = 30000, EVENTS = 1500 };
  tu_rng rng = {0x6a09e667};
  tu_buf b = {0};
  mt_writer *w = tu_writer(&b, 2, NULL);
  uint64_t *stack = malloc(DEEP * sizeof *stack);
  uint64_t **written = malloc(EVENTS * sizeof *written);
  size_t *depths = malloc(EVENTS * sizeof *depths);
  size_t depth = 0, deepest = 0;
  uint64_t t = T0;
  for (int k = 0; k < EVENTS; k++) {
    /* mostly deeper until the middle, then mostly shallower */
    int grow = tu_chance(&rng, k < EVENTS / 2 ? 80 : 20);
    size_t step = tu_below(&rng, 301);
    if (grow) {
      if (depth + step > DEEP) step = DEEP - depth;
      for (size_t i = 0; i < step; i++, depth++)
        stack[depth] = tu_below(&rng, 200) == 0 ? 0x100000 + tu_below(&rng, 1u << 20) * 16
                                                : 0x1000 + (depth % 3) * 16; /* the recursion's */
    } else {
      depth -= step < depth ? step : depth - 1;
    }
    if (depth == 0) stack[depth++] = 0x2000;
    if (depth > deepest) deepest = depth;
    uint64_t id;
    assert_int_equal(mt_writer_alloc(w, t += 7, 0, 1 + (uint64_t)k % 16, 1, MT_SOURCE_MINOR,
                                     stack, depth, &id),
                     MT_OK);
    written[k] = malloc(depth * sizeof **written);
    memcpy(written[k], stack, depth * sizeof *stack);
    depths[k] = depth;
  }
  assert_int_equal(mt_writer_close(w), MT_OK);
  assert_true(deepest > 20000);

  tu_trace read[2];
  read_end end[2];
  for (int checked_only = 0; checked_only <= 1; checked_only++) {
    read_copy(b.data, b.len, checked_only, 0, &read[checked_only], &end[checked_only]);
    tu_trace *r = &read[checked_only];
    assert_int_equal(r->status, 0);
    assert_int_equal(r->n, EVENTS);
    for (size_t k = 0; k < EVENTS; k++) {
      assert_int_equal(r->ev[k].ev.backtrace_len, depths[k]);
      assert_memory_equal(r->ev[k].bt, written[k], depths[k] * sizeof(uint64_t));
    }
  }
  assert_true(same_reads(&read[0], &read[1]));
  for (int i = 0; i < 2; i++) tu_trace_free(&read[i]);
  for (size_t k = 0; k < EVENTS; k++) free(written[k]);
  free(written);
  free(depths);
  free(stack);
  tu_buf_free(&b);
}

static void tags_v2(void **state) {
  (void)state;
  tags_number_codes(2, 1, 0x51ed270b);
}

static void tags_v3_domains(void **state) {
  (void)state;
  tags_number_codes(3, 3, 0x7fb5d329);
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
      cmocka_unit_test(deep_backtraces_agree),
      cmocka_unit_test(tags_v2),
      cmocka_unit_test(tags_v3_domains),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
