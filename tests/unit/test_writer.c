/* The writer's API contracts (include/memtrace/format.h), checked by
 * reading back what it wrote. */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "mt_test_util.h"

#define T0 1700000000000000ull

static const uint64_t bt2[2] = {0x1000, 0x2000};

/* Reads b back; asserts a clean end. */
static mt_reader *read_back(const tu_buf *b, tu_trace *t) {
  mt_reader *r = tu_read_mem(b->data, b->len, t);
  if (!r) fail_msg("reading back failed: %s", t->error);
  if (t->status != 0) fail_msg("reading back failed after %zu events: %s", t->n, t->error);
  assert_int_equal(t->has_warning, 0);
  return r;
}

/* ---- invalid calls leave the writer usable ---- */

static void v2_rejects_domain(void **state) {
  (void)state;
  tu_buf b = {0};
  mt_writer *w = tu_writer(&b, 2, NULL);
  uint64_t id = 99;
  assert_int_equal(mt_writer_alloc(w, T0 + 1, 1, 4, 1, MT_SOURCE_MINOR, bt2, 2, &id),
                   MT_ERR_INVALID);
  assert_int_equal(id, 99); /* untouched */
  assert_non_null(strstr(mt_writer_error(w), "domain"));
  assert_int_equal(mt_writer_alloc(w, T0 + 2, 0, 4, 1, MT_SOURCE_MINOR, bt2, 2, &id), MT_OK);
  assert_int_equal(id, 0);
  assert_int_equal(mt_writer_promote(w, T0 + 3, 7, 0), MT_ERR_INVALID);
  assert_int_equal(mt_writer_collect(w, T0 + 3, 2, 0), MT_ERR_INVALID);
  assert_int_equal(mt_writer_collect(w, T0 + 4, 0, 0), MT_OK);
  assert_int_equal(mt_writer_close(w), MT_OK);
  tu_trace t;
  mt_reader *r = read_back(&b, &t);
  assert_int_equal(t.n, 2);
  assert_int_equal(t.ev[0].ev.kind, MT_EVENT_ALLOC);
  assert_int_equal(t.ev[0].ev.time, T0 + 2);
  assert_int_equal(t.ev[1].ev.kind, MT_EVENT_COLLECT);
  assert_int_equal(t.ev[1].ev.obj_id, 0);
  tu_done(r, &t);
  tu_buf_free(&b);
}

static void rejects_unknown_source_and_bad_args(void **state) {
  (void)state;
  tu_buf b = {0};
  mt_writer *w = tu_writer(&b, 2, NULL);
  assert_int_equal(mt_writer_alloc(w, T0, 0, 4, 1, (mt_source)3, bt2, 2, NULL), MT_ERR_INVALID);
  assert_non_null(strstr(mt_writer_error(w), "source"));
  assert_int_equal(mt_writer_alloc(w, T0, 0, 4, 1, (mt_source)-1, bt2, 2, NULL), MT_ERR_INVALID);
  assert_int_equal(mt_writer_alloc(w, T0, 0, 4, 1, MT_SOURCE_MINOR, NULL, 2, NULL), MT_ERR_INVALID);
  assert_int_equal(mt_writer_alloc(w, T0, 0, (uint64_t)INT64_MAX + 1, 1, MT_SOURCE_MINOR, bt2, 2, NULL),
                   MT_ERR_INVALID);
  assert_int_equal(mt_writer_alloc(w, T0, 0, 4, (uint64_t)INT64_MAX + 1, MT_SOURCE_MINOR, bt2, 2, NULL),
                   MT_ERR_INVALID);
  /* nothing of those reached the trace: the next id is still 0 */
  assert_int_equal(mt_writer_next_obj_id(w, 0), 0);
  uint64_t id;
  assert_int_equal(mt_writer_alloc(w, T0 + 5, 0, 4, 1, MT_SOURCE_EXTERNAL, bt2, 2, &id), MT_OK);
  assert_int_equal(id, 0);
  /* NULL backtrace with length 0 is fine */
  assert_int_equal(mt_writer_alloc(w, T0 + 6, 0, 4, 1, MT_SOURCE_MAJOR, NULL, 0, &id), MT_OK);
  assert_int_equal(mt_writer_close(w), MT_OK);
  tu_trace t;
  mt_reader *r = read_back(&b, &t);
  assert_int_equal(t.n, 2);
  assert_int_equal(t.ev[0].ev.source, MT_SOURCE_EXTERNAL);
  assert_int_equal(t.ev[0].ev.backtrace_len, 2);
  assert_int_equal(t.ev[1].ev.source, MT_SOURCE_MAJOR);
  assert_int_equal(t.ev[1].ev.backtrace_len, 0);
  tu_done(r, &t);
  tu_buf_free(&b);
}

static void promote_of_unallocated_id_v2(void **state) {
  (void)state;
  tu_buf b = {0};
  mt_writer *w = tu_writer(&b, 2, NULL);
  assert_int_equal(mt_writer_promote(w, T0 + 1, 0, 0), MT_ERR_INVALID);
  assert_non_null(strstr(mt_writer_error(w), "never allocated"));
  assert_int_equal(mt_writer_collect(w, T0 + 1, 0, 0), MT_ERR_INVALID);
  uint64_t id;
  assert_int_equal(mt_writer_alloc(w, T0 + 2, 0, 4, 1, MT_SOURCE_MINOR, bt2, 2, &id), MT_OK);
  assert_int_equal(mt_writer_promote(w, T0 + 3, 0, 1), MT_ERR_INVALID);
  assert_int_equal(mt_writer_promote(w, T0 + 3, 0, UINT64_MAX), MT_ERR_INVALID);
  assert_int_equal(mt_writer_collect(w, T0 + 3, 0, 5), MT_ERR_INVALID);
  assert_int_equal(mt_writer_promote(w, T0 + 4, 0, 0), MT_OK);
  assert_int_equal(mt_writer_collect(w, T0 + 5, 0, 0), MT_OK);
  assert_int_equal(mt_writer_close(w), MT_OK);
  tu_trace t;
  mt_reader *r = read_back(&b, &t);
  assert_int_equal(t.n, 3);
  assert_int_equal(t.ev[1].ev.kind, MT_EVENT_PROMOTE);
  assert_int_equal(t.ev[1].ev.obj_id, 0);
  assert_int_equal(t.ev[2].ev.kind, MT_EVENT_COLLECT);
  tu_done(r, &t);
  tu_buf_free(&b);
}

/* v3: an id this writer never returned (inside a chunk a domain claimed
 * but has not used) is no allocated object either. If the writer accepts
 * such a call, whatever it writes must still read back (memtrace's reader
 * rejects a negative promote delta). */
static void promote_of_unallocated_id_v3(void **state) {
  (void)state;
  tu_buf b = {0};
  mt_writer *w = tu_writer(&b, 3, NULL);
  uint64_t id;
  assert_int_equal(mt_writer_alloc(w, T0 + 1, 0, 4, 1, MT_SOURCE_MINOR, bt2, 2, &id), MT_OK);
  assert_int_equal(id, 0);
  int rc = mt_writer_promote(w, T0 + 2, 0, 5); /* id 5: never returned */
  /* BUG found at 93d681d (src/format/writer.c relative_event): v3 checked
   * only obj_id >= global_ids, so this was accepted and wrote delta -5,
   * which the reader (like memtrace's) rejects: "negative object id
   * delta". */
  assert_int_equal(rc, MT_ERR_INVALID);
  /* the same for a collection (it would read back, naming an object that
   * never existed) */
  assert_int_equal(mt_writer_collect(w, T0 + 2, 0, 5), MT_ERR_INVALID);
  assert_int_equal(mt_writer_promote(w, T0 + 3, 0, 0), MT_OK);
  assert_int_equal(mt_writer_close(w), MT_OK);
  tu_trace t;
  mt_reader *r = read_back(&b, &t);
  assert_int_equal(t.n, 2);
  tu_done(r, &t);
  tu_buf_free(&b);
}

/* v3: promoting, from domain 0, an object domain 1 allocated (an id above
 * domain 0's last): the writer must reject it or write a trace that reads
 * back. */
static void promote_across_domains_v3(void **state) {
  (void)state;
  tu_buf b = {0};
  mt_writer *w = tu_writer(&b, 3, NULL);
  uint64_t a0, a1;
  assert_int_equal(mt_writer_alloc(w, T0 + 1, 0, 4, 1, MT_SOURCE_MINOR, bt2, 2, &a0), MT_OK);
  assert_int_equal(mt_writer_alloc(w, T0 + 2, 1, 4, 1, MT_SOURCE_MINOR, bt2, 2, &a1), MT_OK);
  assert_int_equal(a1, 10000);
  int rc = mt_writer_promote(w, T0 + 3, 0, a1);
  assert_int_equal(mt_writer_close(w), MT_OK);
  tu_trace t;
  mt_reader *r = tu_read_mem(b.data, b.len, &t);
  assert_non_null(r);
  if (rc == MT_OK) {
    /* BUG found at 93d681d, if this fails (src/format/writer.c
     * relative_event): accepted, but the promote delta is negative and
     * unreadable. */
    if (t.status != 0) fail_msg("promote accepted but the trace does not read: %s", t.error);
    assert_int_equal(t.n, 3);
  } else {
    assert_int_equal(rc, MT_ERR_INVALID);
    assert_int_equal(t.status, 0);
    assert_int_equal(t.n, 2);
  }
  tu_done(r, &t);
  tu_buf_free(&b);
}

/* v3: a domain may collect an object of another domain (memtrace's reader
 * allows a negative collect delta), even before its own first allocation. */
static void collect_across_domains_v3(void **state) {
  (void)state;
  tu_buf b = {0};
  mt_writer *w = tu_writer(&b, 3, NULL);
  uint64_t a0, a1;
  assert_int_equal(mt_writer_alloc(w, T0 + 1, 1, 4, 1, MT_SOURCE_MINOR, bt2, 2, &a1), MT_OK);
  assert_int_equal(a1, 10000);
  /* domain 0 has allocated nothing yet */
  assert_int_equal(mt_writer_collect(w, T0 + 2, 0, a1), MT_OK);
  assert_int_equal(mt_writer_alloc(w, T0 + 3, 0, 4, 1, MT_SOURCE_MINOR, bt2, 2, &a0), MT_OK);
  assert_int_equal(a0, 0);
  assert_int_equal(mt_writer_collect(w, T0 + 4, 0, a1), MT_OK); /* after: fine */
  assert_int_equal(mt_writer_close(w), MT_OK);
  tu_trace t;
  mt_reader *r = tu_read_mem(b.data, b.len, &t);
  assert_non_null(r);
  /* (regression: the reader once refused a negative delta while the
   * domain's last id was 0, though last - 1 - delta is the right id) */
  if (t.status != 0) fail_msg("cross-domain collect did not read back: %s", t.error);
  assert_int_equal(t.n, 4);
  size_t ncollect = 0;
  for (size_t i = 0; i < t.n; i++)
    if (t.ev[i].ev.kind == MT_EVENT_COLLECT) {
      assert_int_equal(t.ev[i].ev.obj_id, a1);
      assert_int_equal(t.ev[i].ev.domain, 0);
      ncollect++;
    }
  assert_int_equal(ncollect, 2);
  tu_done(r, &t);
  tu_buf_free(&b);
}

/* ---- the sink ---- */

static void sink_failure_io_then_closed(void **state) {
  (void)state;
  /* the trace_info write fails: open reports it */
  tu_buf b = {0};
  b.fail_at_call = 1;
  b.fail_errno = EIO;
  mt_writer_options o = {.version = 2, .sink = tu_buf_sink, .sink_ctx = &b, .fd = -1};
  mt_trace_info info = tu_info();
  mt_writer *w = NULL;
  assert_int_equal(mt_writer_open(&w, &info, &o), MT_ERR_IO);
  assert_non_null(w);
  assert_non_null(strstr(mt_writer_error(w), strerror(EIO)));
  assert_int_not_equal(mt_writer_close(w), MT_OK);
  tu_buf_free(&b);

  /* a later packet fails (call 2: the locations of the first flush) */
  for (int positive = 0; positive < 2; positive++) {
    memset(&b, 0, sizeof b);
    b.fail_at_call = 2;
    b.fail_errno = ENOSPC;
    b.fail_positive = positive;
    o.resolve = tu_resolve;
    assert_int_equal(mt_writer_open(&w, &info, &o), MT_OK);
    assert_int_equal(mt_writer_alloc(w, T0 + 1, 0, 4, 1, MT_SOURCE_MINOR, bt2, 2, NULL), MT_OK);
    assert_int_equal(mt_writer_flush(w), MT_ERR_IO);
    assert_non_null(strstr(mt_writer_error(w), positive ? "sink error" : strerror(ENOSPC)));
    size_t calls = b.ncalls;
    assert_int_equal(calls, 2);
    assert_int_equal(mt_writer_alloc(w, T0 + 2, 0, 4, 1, MT_SOURCE_MINOR, bt2, 2, NULL), MT_ERR_CLOSED);
    assert_int_equal(mt_writer_promote(w, T0 + 2, 0, 0), MT_ERR_CLOSED);
    assert_int_equal(mt_writer_collect(w, T0 + 2, 0, 0), MT_ERR_CLOSED);
    assert_int_equal(mt_writer_flush(w), MT_ERR_CLOSED);
    assert_int_equal(b.ncalls, calls); /* the sink is not called again */
    /* the first error's message stays */
    assert_non_null(strstr(mt_writer_error(w), positive ? "sink error" : strerror(ENOSPC)));
    assert_int_not_equal(mt_writer_close(w), MT_OK);
    assert_int_equal(b.ncalls, calls);
    tu_buf_free(&b);
  }
}

static void fd_failures(void **state) {
  (void)state;
  mt_trace_info info = tu_info();
  mt_writer *w = NULL;
  mt_writer_options o = {.version = 2, .fd = -1};
  assert_int_equal(mt_writer_open(&w, &info, &o), MT_ERR_IO);
  assert_non_null(strstr(mt_writer_error(w), strerror(EBADF)));
  mt_writer_close(w);

  /* a pipe whose reader went away */
  signal(SIGPIPE, SIG_IGN);
  int p[2];
  assert_int_equal(pipe(p), 0);
  close(p[0]);
  o.fd = p[1];
  assert_int_equal(mt_writer_open(&w, &info, &o), MT_ERR_IO);
  assert_non_null(strstr(mt_writer_error(w), strerror(EPIPE)));
  mt_writer_close(w);
  close(p[1]);
}

/* With check_pid, a forked child gets MT_ERR_FORKED at its first write and
 * writes nothing; the parent goes on. */
static void check_pid_after_fork(void **state) {
  (void)state;
  char path[256];
  snprintf(path, sizeof path, "%s/fork.ctf", tu_tmpdir());
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  assert_true(fd >= 0);
  mt_trace_info info = tu_info();
  info.pid = (uint64_t)getpid();
  mt_writer_options o = {.version = 2, .fd = fd, .resolve = tu_resolve, .check_pid = 1};
  mt_writer *w = NULL;
  assert_int_equal(mt_writer_open(&w, &info, &o), MT_OK);
  assert_int_equal(mt_writer_alloc(w, T0 + 1, 0, 4, 1, MT_SOURCE_MINOR, bt2, 2, NULL), MT_OK);
  assert_int_equal(mt_writer_flush(w), MT_OK);
  assert_int_equal(mt_writer_alloc(w, T0 + 2, 0, 5, 1, MT_SOURCE_MINOR, bt2, 2, NULL), MT_OK);
  off_t before = lseek(fd, 0, SEEK_END);
  pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    /* codes: 1 = flush not FORKED, 2 = later call not CLOSED, 3 = message */
    int code = 0;
    if (mt_writer_flush(w) != MT_ERR_FORKED) code = 1;
    else if (mt_writer_alloc(w, T0 + 3, 0, 4, 1, MT_SOURCE_MINOR, bt2, 2, NULL) != MT_ERR_CLOSED)
      code = 2;
    else if (!strstr(mt_writer_error(w), "fork"))
      code = 3;
    mt_writer_close(w);
    _exit(code);
  }
  int st = 0;
  assert_int_equal(waitpid(child, &st, 0), child);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_int_equal(lseek(fd, 0, SEEK_END), before); /* the child wrote nothing */
  /* the parent's writer is unaffected */
  assert_int_equal(mt_writer_alloc(w, T0 + 4, 0, 6, 1, MT_SOURCE_MINOR, bt2, 2, NULL), MT_OK);
  assert_int_equal(mt_writer_close(w), MT_OK);
  lseek(fd, 0, SEEK_SET);
  mt_reader *r = NULL;
  assert_int_equal(mt_reader_open_fd(&r, fd, path), MT_OK);
  tu_trace t;
  memset(&t, 0, sizeof t);
  tu_read_events(r, &t);
  assert_int_equal(t.status, 0);
  assert_int_equal(t.n, 3);
  assert_int_equal(t.ev[2].ev.length, 6);
  mt_reader_close(r);
  tu_trace_free(&t);
  close(fd);
  unlink(path);
}

/* ---- packets ---- */

static void flush_with_nothing_pending_writes_nothing(void **state) {
  (void)state;
  tu_buf b = {0};
  mt_writer *w = tu_writer(&b, 2, NULL);
  assert_int_equal(b.ncalls, 1); /* trace_info */
  assert_int_equal(mt_writer_flush(w), MT_OK);
  assert_int_equal(mt_writer_flush(w), MT_OK);
  assert_int_equal(b.ncalls, 1);
  /* an event with no backtrace: one packet, no location packet */
  assert_int_equal(mt_writer_alloc(w, T0 + 1, 0, 4, 1, MT_SOURCE_MINOR, NULL, 0, NULL), MT_OK);
  assert_int_equal(b.ncalls, 1); /* buffered */
  assert_int_equal(mt_writer_flush(w), MT_OK);
  assert_int_equal(b.ncalls, 2);
  assert_int_equal(mt_writer_flush(w), MT_OK);
  assert_int_equal(b.ncalls, 2);
  /* with new locations: a location packet, then the events */
  assert_int_equal(mt_writer_alloc(w, T0 + 2, 0, 4, 1, MT_SOURCE_MINOR, bt2, 2, NULL), MT_OK);
  assert_int_equal(mt_writer_flush(w), MT_OK);
  assert_int_equal(b.ncalls, 4);
  assert_int_equal(mt_writer_close(w), MT_OK);
  assert_int_equal(b.ncalls, 4); /* close had nothing to flush */
  tu_packet pk[8];
  assert_int_equal(tu_packets(b.data, b.len, pk, 8), 4);
  assert_int_equal(pk[0].first_code, 0);
  assert_int_equal(pk[1].first_code, 101 + 3); /* short alloc of 4 words */
  assert_int_equal(pk[2].first_code, 1);       /* locations */
  assert_int_equal(pk[3].first_code, 104);
  tu_buf_free(&b);
}

/* Location lists of 1 to 5, or 40 entries with long names (40 of them
 * come close to the 4096-byte limit of a location event). */
static char big_names[30][40][48];
static int big_resolve(void *ctx, uint64_t code, const mt_location **locs, size_t *n) {
  (void)ctx;
  static mt_location l[40];
  if (!big_names[0][0][0])
    for (int v = 0; v < 30; v++)
      for (int i = 0; i < 40; i++)
        snprintf(big_names[v][i], sizeof big_names[v][i], "%0*d_%d", 20 + v % 20, v, i);
  size_t k = code % 3 == 0 ? 40 : 1 + code % 5;
  for (size_t i = 0; i < k; i++)
    l[i] = (mt_location){big_names[code % 30][i], big_names[(code + 1) % 30][i],
                         (uint32_t)i + 1, 2, 3};
  *locs = l;
  *n = k;
  return 0;
}

/* Each sink call is one whole packet, at most 32 KiB (+8 for a location
 * packet's last event header, see writer.c), event packets at most 32 KiB;
 * the result reads back. */
static void packets_bounded_and_whole(void **state) {
  (void)state;
  tu_buf b = {0};
  mt_trace_info info = tu_info();
  mt_writer_options o = {.version = 2, .sink = tu_buf_sink, .sink_ctx = &b,
                         .resolve = big_resolve, .fd = -1};
  mt_writer *w = NULL;
  assert_int_equal(mt_writer_open(&w, &info, &o), MT_OK);
  tu_rng rng = {99};
  uint64_t bt[500];
  size_t nev = 0;
  for (int i = 0; i < 2000; i++) {
    size_t len = tu_below(&rng, 500);
    for (size_t k = 0; k < len; k++)
      /* first many misses (big location packets), then hits only (full
       * event packets) */
      bt[k] = i >= 500 || tu_chance(&rng, 60) ? tu_below(&rng, 100) + 1 : tu_next(&rng) >> 4;
    assert_int_equal(mt_writer_alloc(w, T0 + (uint64_t)i, 0, 1 + tu_below(&rng, 100000), 1 + tu_below(&rng, 3),
                                     (mt_source)tu_below(&rng, 3), bt, len, NULL),
                     MT_OK);
    nev++;
  }
  assert_int_equal(mt_writer_close(w), MT_OK);
  size_t nloc_packets = 0, max_loc = 0, max_ev = 0;
  for (size_t c = 0; c < b.ncalls; c++) {
    const uint8_t *p = b.data + b.call_off[c];
    size_t len = b.call_len[c];
    assert_true(len >= 66);
    assert_int_equal(tu_ld32(p), TU_MAGIC);
    assert_int_equal(tu_ld32(p + 4), len * 8); /* one call = one whole packet */
    assert_true(len <= 32768 + 8);
    int code = (int)(tu_ld32(p + 66) >> 25);
    if (code == 1) {
      nloc_packets++;
      if (len > max_loc) max_loc = len;
    } else if (len > max_ev) {
      max_ev = len;
    }
  }
  if (max_ev > 32768 || max_ev <= 28000 || max_loc <= 28000)
    fail_msg("largest event packet %zu, location packet %zu", max_ev, max_loc);
  assert_true(nloc_packets > 10);
  tu_trace t;
  mt_reader *r = read_back(&b, &t);
  assert_int_equal(t.n, nev);
  tu_done(r, &t);
  tu_buf_free(&b);
}

/* Location packets: a location event starts only while more than its
 * maximum size (4096) is left of 32 KiB (memtrace's rule); its 4-byte
 * header may then pass 32 KiB by a few bytes. Locations of exact sizes
 * put the packet at 28671 bytes (4097 left: the 4096-byte one still goes
 * in, ending at 32771) or at 28679 (4089 left: it starts a new packet). */
typedef struct sized_locs {
  size_t first_body; /* body size of the first location event */
  char names[300][128];
  char big_file[4100];
  mt_location l;
} sized_locs;

static int sized_resolve(void *ctx, uint64_t code, const mt_location **locs, size_t *n) {
  sized_locs *s = ctx;
  /* body = 8 + 1 + 6 + (file + 1) + (def + 1), all names new */
  size_t body = code == 1 ? s->first_body : code == 1000 ? 4096 : 96;
  size_t def_len = 40, file_len = body - 17 - def_len;
  char *f = code == 1000 ? s->big_file : s->names[code % 300];
  snprintf(f, file_len + 1, "%0*llu", (int)file_len, (unsigned long long)code);
  static char def[64];
  snprintf(def, def_len + 1, "%0*llu", (int)def_len, (unsigned long long)code);
  s->l = (mt_location){f, def, 1, 1, 1};
  *locs = &s->l;
  *n = 1;
  return 0;
}

static void location_packet_boundary(void **state) {
  (void)state;
  const size_t first[2] = {105, 113};
  const size_t want_first_packet[2] = {66 + 105 + 285 * 100 + 4100, 66 + 113 + 285 * 100};
  for (int k = 0; k < 2; k++) {
    static sized_locs sl;
    memset(&sl, 0, sizeof sl);
    sl.first_body = first[k] - 4;
    tu_buf b = {0};
    mt_trace_info info = tu_info();
    mt_writer_options o = {.version = 2, .sink = tu_buf_sink, .sink_ctx = &b,
                           .resolve = sized_resolve, .resolve_ctx = &sl, .fd = -1};
    mt_writer *w = NULL;
    assert_int_equal(mt_writer_open(&w, &info, &o), MT_OK);
    /* codes 1..286 then 1000, all distinct cache slots: one miss each */
    uint64_t bt[287];
    for (int i = 0; i < 286; i++) bt[i] = (uint64_t)i + 1;
    bt[286] = 1000;
    assert_int_equal(mt_writer_alloc(w, T0 + 1, 0, 4, 1, MT_SOURCE_MINOR, bt, 287, NULL), MT_OK);
    assert_int_equal(mt_writer_close(w), MT_OK);
    tu_packet pk[8];
    int n = tu_packets(b.data, b.len, pk, 8);
    assert_int_equal(pk[1].first_code, 1);
    if (pk[1].size != want_first_packet[k])
      fail_msg("case %d: first location packet of %zu bytes, expected %zu", k, pk[1].size,
               want_first_packet[k]);
    assert_int_equal(n, k == 0 ? 3 : 4);
    if (k == 1) assert_int_equal(pk[2].size, 66 + 4100);
    tu_trace t;
    mt_reader *r = read_back(&b, &t);
    size_t nl = 0;
    const mt_location *l = mt_reader_lookup(r, 1000, &nl);
    assert_int_equal(nl, 1);
    assert_string_equal(l[0].filename, sl.big_file);
    tu_done(r, &t);
    tu_buf_free(&b);
  }
}

/* A packet spans at most 30 s: an event exactly 30 s after the packet's
 * start joins it, one microsecond later starts a new packet. Long gaps
 * (past the 25-bit wrap, 33.5 s) read back exactly. */
static void thirty_second_packets(void **state) {
  (void)state;
  tu_buf b = {0};
  mt_writer *w = tu_writer(&b, 2, NULL);
  const uint64_t times[] = {T0 + 1, T0 + 30000000, T0 + 30000001, T0 + 60000001,
                            T0 + 60000002, T0 + 3600000000ull, T0 + 3600000000ull + (1u << 25)};
  const size_t nt = sizeof times / sizeof times[0];
  for (size_t i = 0; i < nt; i++)
    assert_int_equal(mt_writer_alloc(w, times[i], 0, 4, 1, MT_SOURCE_MINOR, NULL, 0, NULL), MT_OK);
  assert_int_equal(mt_writer_close(w), MT_OK);
  tu_packet pk[16];
  int n = tu_packets(b.data, b.len, pk, 16);
  /* trace_info, [T0+1, T0+30s], [+30s+1, +60s+1], [+60s+2], [+1h], [+1h+2^25] */
  assert_int_equal(n, 6);
  assert_int_equal(pk[1].time_begin, T0);
  assert_int_equal(pk[1].time_end, T0 + 30000000);
  assert_int_equal(pk[1].alloc_end - pk[1].alloc_begin, 2);
  assert_int_equal(pk[2].time_begin, T0 + 30000001);
  assert_int_equal(pk[2].time_end, T0 + 60000001);
  assert_int_equal(pk[3].time_begin, T0 + 60000002);
  assert_int_equal(pk[4].time_begin, T0 + 3600000000ull);
  assert_int_equal(pk[5].time_begin, T0 + 3600000000ull + (1u << 25));
  for (int i = 1; i < n; i++) assert_true(pk[i].time_end - pk[i].time_begin <= 30000000);
  tu_trace t;
  mt_reader *r = read_back(&b, &t);
  assert_int_equal(t.n, nt);
  for (size_t i = 0; i < nt; i++) assert_int_equal(t.ev[i].ev.time, times[i]);
  tu_done(r, &t);
  tu_buf_free(&b);
}

/* Times going backwards are raised to the domain's last time. */
static void time_clamped_monotone(void **state) {
  (void)state;
  tu_buf b = {0};
  mt_writer *w = tu_writer(&b, 2, NULL);
  uint64_t id;
  assert_int_equal(mt_writer_alloc(w, T0 - 100, 0, 4, 1, MT_SOURCE_MINOR, NULL, 0, &id), MT_OK);
  assert_int_equal(mt_writer_alloc(w, T0 + 1000, 0, 4, 1, MT_SOURCE_MINOR, NULL, 0, &id), MT_OK);
  assert_int_equal(mt_writer_alloc(w, T0 + 500, 0, 4, 1, MT_SOURCE_MINOR, NULL, 0, &id), MT_OK);
  assert_int_equal(mt_writer_promote(w, T0 + 10, 0, 1), MT_OK);
  assert_int_equal(mt_writer_flush(w), MT_OK);
  assert_int_equal(mt_writer_collect(w, 5, 0, 1), MT_OK); /* after a flush too */
  assert_int_equal(mt_writer_alloc(w, T0 + 2000, 0, 4, 1, MT_SOURCE_MINOR, NULL, 0, &id), MT_OK);
  assert_int_equal(mt_writer_close(w), MT_OK);
  tu_trace t;
  mt_reader *r = read_back(&b, &t);
  const uint64_t want[6] = {T0, T0 + 1000, T0 + 1000, T0 + 1000, T0 + 1000, T0 + 2000};
  assert_int_equal(t.n, 6);
  for (int i = 0; i < 6; i++) assert_int_equal(t.ev[i].ev.time, want[i]);
  tu_done(r, &t);
  tu_buf_free(&b);

  /* v3: per domain */
  memset(&b, 0, sizeof b);
  w = tu_writer(&b, 3, NULL);
  assert_int_equal(mt_writer_alloc(w, T0 + 1000, 0, 4, 1, MT_SOURCE_MINOR, NULL, 0, NULL), MT_OK);
  assert_int_equal(mt_writer_alloc(w, T0 + 500, 1, 4, 1, MT_SOURCE_MINOR, NULL, 0, NULL), MT_OK);
  assert_int_equal(mt_writer_alloc(w, T0 + 400, 1, 4, 1, MT_SOURCE_MINOR, NULL, 0, NULL), MT_OK);
  assert_int_equal(mt_writer_alloc(w, T0 + 900, 0, 4, 1, MT_SOURCE_MINOR, NULL, 0, NULL), MT_OK);
  assert_int_equal(mt_writer_close(w), MT_OK);
  r = read_back(&b, &t);
  assert_int_equal(t.n, 4);
  uint64_t last[2] = {0, 0};
  size_t per[2] = {0, 0};
  for (size_t i = 0; i < t.n; i++) {
    unsigned d = t.ev[i].ev.domain;
    assert_true(d < 2);
    assert_true(t.ev[i].ev.time >= last[d]);
    last[d] = t.ev[i].ev.time;
    per[d]++;
  }
  assert_int_equal(per[0], 2);
  assert_int_equal(per[1], 2);
  assert_int_equal(last[0], T0 + 1000);
  assert_int_equal(last[1], T0 + 500);
  tu_done(r, &t);
  tu_buf_free(&b);
}

/* Object ids: v2 counts up; v3 gives each domain chunks of 10000. */
static void object_ids(void **state) {
  (void)state;
  tu_buf b = {0};
  mt_writer *w = tu_writer(&b, 2, NULL);
  assert_int_equal(mt_writer_next_obj_id(w, 0), 0);
  for (uint64_t i = 0; i < 5; i++) {
    uint64_t id;
    assert_int_equal(mt_writer_alloc(w, T0 + i, 0, 4, 1, MT_SOURCE_MINOR, NULL, 0, &id), MT_OK);
    assert_int_equal(id, i);
    assert_int_equal(mt_writer_next_obj_id(w, 0), i + 1);
  }
  mt_writer_close(w);
  tu_buf_free(&b);

  memset(&b, 0, sizeof b);
  w = tu_writer(&b, 3, NULL);
  assert_int_equal(mt_writer_next_obj_id(w, 0), 0);
  assert_int_equal(mt_writer_next_obj_id(w, 1), 10000); /* would claim the next chunk */
  uint64_t id;
  assert_int_equal(mt_writer_alloc(w, T0 + 1, 1, 4, 1, MT_SOURCE_MINOR, NULL, 0, &id), MT_OK);
  assert_int_equal(id, 10000);
  assert_int_equal(mt_writer_next_obj_id(w, 1), 10001);
  /* exhaust domain 0's chunk: the next one is 20000 (domain 1 has 10000s) */
  for (uint64_t i = 0; i < 10001; i++) {
    assert_int_equal(mt_writer_alloc(w, T0 + 2 + i / 100, 0, 4, 1, MT_SOURCE_MINOR, NULL, 0, &id), MT_OK);
    assert_int_equal(id, i < 10000 ? i : 20000);
  }
  assert_int_equal(mt_writer_collect(w, T0 + 200, 0, 9999), MT_OK);
  assert_int_equal(mt_writer_promote(w, T0 + 200, 0, 20000), MT_OK);
  assert_int_equal(mt_writer_close(w), MT_OK);
  tu_trace t;
  mt_reader *r = read_back(&b, &t);
  assert_int_equal(t.n, 10004);
  assert_int_equal(t.ev[0].ev.obj_id, 10000);
  assert_int_equal(t.ev[0].ev.domain, 1);
  assert_int_equal(t.ev[10001].ev.obj_id, 20000);
  assert_int_equal(t.ev[10002].ev.obj_id, 9999);
  assert_int_equal(t.ev[10002].ev.kind, MT_EVENT_COLLECT);
  assert_int_equal(t.ev[10003].ev.obj_id, 20000);
  tu_done(r, &t);
  tu_buf_free(&b);
}

/* mt_writer_next_obj_id promises "the id the next allocation of `domain`
 * will get": it must hold even when another domain allocates in between
 * (memtrace's Multiplexed_domains.next_alloc_id claims the chunk at once
 * for this reason).
 *
 * BUG found at 93d681d (src/format/writer.c mt_writer_next_obj_id): for a
 * domain that has no writer yet it returns w->global_ids without claiming
 * that chunk; a new domain allocating first takes it, and the promised id
 * goes to another domain. (A used-up chunk is claimed when the writer switches
 * away from its domain, so next_obj_id_used_up_chunk holds.) */
static void next_obj_id_new_domain(void **state) {
  (void)state;
  tu_buf b = {0};
  mt_writer *w = tu_writer(&b, 3, NULL);
  uint64_t id;
  /* a domain not seen yet */
  uint64_t promised = mt_writer_next_obj_id(w, 2);
  assert_int_equal(mt_writer_alloc(w, T0 + 1, 3, 4, 1, MT_SOURCE_MINOR, NULL, 0, &id), MT_OK);
  assert_int_equal(mt_writer_alloc(w, T0 + 2, 2, 4, 1, MT_SOURCE_MINOR, NULL, 0, &id), MT_OK);
  assert_int_equal(id, promised);
  mt_writer_close(w);
  tu_buf_free(&b);
}

static void next_obj_id_used_up_chunk(void **state) {
  (void)state;
  tu_buf b = {0};
  mt_writer *w = tu_writer(&b, 3, NULL);
  uint64_t id, promised;
  /* a domain whose chunk is used up */
  for (int i = 0; i < 10000; i++)
    assert_int_equal(mt_writer_alloc(w, T0 + 1, 0, 4, 1, MT_SOURCE_MINOR, NULL, 0, &id), MT_OK);
  assert_int_equal(id, 9999);
  promised = mt_writer_next_obj_id(w, 0);
  assert_int_equal(mt_writer_alloc(w, T0 + 2, 1, 4, 1, MT_SOURCE_MINOR, NULL, 0, &id), MT_OK);
  assert_int_equal(mt_writer_alloc(w, T0 + 3, 0, 4, 1, MT_SOURCE_MINOR, NULL, 0, &id), MT_OK);
  assert_int_equal(id, promised);
  mt_writer_close(w);
  tu_buf_free(&b);
}

static void open_contracts(void **state) {
  (void)state;
  tu_buf b = {0};
  mt_trace_info info = tu_info();
  mt_writer_options o = {.sink = tu_buf_sink, .sink_ctx = &b, .fd = -1};
  mt_writer *w = NULL;
  const int versions[] = {1, 4, -1};
  for (int i = 0; i < 3; i++) {
    o.version = versions[i];
    assert_int_equal(mt_writer_open(&w, &info, &o), MT_ERR_INVALID);
    assert_non_null(strstr(mt_writer_error(w), "version"));
    mt_writer_close(w);
  }
  o.version = 0;
  const double rates[] = {0.0, -0.5, 1.5, NAN};
  for (int i = 0; i < 4; i++) {
    info.sample_rate = rates[i];
    assert_int_equal(mt_writer_open(&w, &info, &o), MT_ERR_INVALID);
    assert_non_null(strstr(mt_writer_error(w), "sample rate"));
    mt_writer_close(w);
  }
  info = tu_info();
  assert_int_equal(mt_writer_open(&w, NULL, &o), MT_ERR_INVALID);
  mt_writer_close(w);
  assert_int_equal(mt_writer_open(&w, &info, NULL), MT_ERR_INVALID);
  mt_writer_close(w);
  o.version = 3;
  info.initial_domain = 0x10000;
  assert_int_equal(mt_writer_open(&w, &info, &o), MT_ERR_INVALID);
  mt_writer_close(w);
  assert_int_equal(b.ncalls, 0); /* none of those wrote anything */
  /* v3 domain over 16 bits on an event: invalid, writer usable */
  info.initial_domain = 7;
  assert_int_equal(mt_writer_open(&w, &info, &o), MT_OK);
  assert_int_equal(mt_writer_alloc(w, T0, 0x10000, 4, 1, MT_SOURCE_MINOR, NULL, 0, NULL), MT_ERR_INVALID);
  assert_int_equal(mt_writer_alloc(w, T0, 7, 4, 1, MT_SOURCE_MINOR, NULL, 0, NULL), MT_OK);
  assert_int_equal(mt_writer_close(w), MT_OK);
  tu_trace t;
  mt_reader *r = read_back(&b, &t);
  assert_int_equal(mt_reader_info(r)->initial_domain, 7);
  assert_int_equal(mt_reader_info(r)->version, 3);
  assert_int_equal(t.n, 1);
  assert_int_equal(t.ev[0].ev.domain, 7);
  tu_done(r, &t);
  tu_buf_free(&b);
  assert_int_equal(mt_writer_close(NULL), MT_OK);
}

/* The trace_info packet, byte by byte (memtrace's put_ctf_header and
 * put_trace_info). */
static void trace_info_bytes(void **state) {
  (void)state;
  for (int version = 2; version <= 3; version++) {
    tu_buf b = {0};
    mt_trace_info info = tu_info();
    info.initial_domain = 5;
    mt_writer *w = tu_writer(&b, version, &info);
    mt_writer_close(w);
    assert_int_equal(b.ncalls, 1);
    const uint8_t *p = b.data;
    size_t hl = tu_hdr_len((unsigned)version);
    size_t body = 4 + 8 + 1 + strlen(info.executable_name) + 1 + strlen(info.host_name) + 1 +
                  strlen(info.runtime_params) + 1 + 8 + strlen(info.context) + 1;
    assert_int_equal(b.len, hl + body);
    assert_int_equal(tu_ld32(p), 0xc1fc1fc1u);
    assert_int_equal(tu_ld32(p + 4), (hl + body) * 8);
    assert_int_equal(tu_ld64(p + 8), info.start_time);
    assert_int_equal(tu_ld64(p + 16), info.start_time);
    assert_int_equal(tu_ld32(p + 24), 0);
    assert_int_equal(tu_ld16(p + 28), version);
    assert_int_equal(tu_ld64(p + 30), info.pid);
    if (version == 3) assert_int_equal(tu_ld16(p + 38), 5);
    size_t v = tu_h_verifier((unsigned)version);
    assert_int_equal(tu_ld16(p + v), 0xffff);
    assert_int_equal(tu_ld16(p + v + 2), 0);
    assert_int_equal(tu_ld64(p + v + 4), 0);
    assert_int_equal(tu_ld64(p + hl - 16), 0);
    assert_int_equal(tu_ld64(p + hl - 8), 0);
    const uint8_t *e = p + hl;
    assert_int_equal(tu_ld32(e), (uint32_t)(info.start_time & 0x1ffffff)); /* code 0 */
    uint64_t bits;
    memcpy(&bits, &info.sample_rate, 8);
    assert_int_equal(tu_ld64(e + 4), bits);
    assert_int_equal(e[12], 64);
    const char *s = (const char *)e + 13;
    assert_string_equal(s, info.executable_name);
    s += strlen(s) + 1;
    assert_string_equal(s, info.host_name);
    s += strlen(s) + 1;
    assert_string_equal(s, info.runtime_params);
    s += strlen(s) + 1;
    assert_int_equal(tu_ld64((const uint8_t *)s), info.pid);
    s += 8;
    assert_string_equal(s, info.context);
    tu_buf_free(&b);
  }
}

/* The writer cuts a backtrace whose coding would pass 4096 bytes (409
 * fresh frames), yet takes the next common prefix against the whole one;
 * the reader then keeps the previous backtrace, as memtrace's does, and
 * stays in step for the following ones. */
static void cut_backtrace_then_longer_prefix(void **state) {
  (void)state;
  tu_buf b = {0};
  mt_writer *w = tu_writer(&b, 2, NULL);
  static uint64_t bt[1001];
  /* distinct codes in distinct cache slots (a miss each) */
  static uint8_t used[1 << 14];
  size_t k = 0;
  for (uint64_t c = 1; k < 1001; c++) {
    uint32_t h1 = (uint32_t)((c * 0x4983723u) >> 11) & 0x3fff;
    uint32_t h2 = (uint32_t)((c * 0xfdea731u) >> 21) & 0x3fff;
    if (h1 == h2 || used[h1] || used[h2] || !h1 || !h2) continue;
    used[h1] = used[h2] = 1;
    bt[k++] = c;
  }
  assert_int_equal(mt_writer_alloc(w, T0 + 1, 0, 4, 1, MT_SOURCE_MINOR, bt, 1000, NULL), MT_OK);
  static uint64_t b2[901];
  memcpy(b2, bt, 900 * sizeof *b2);
  b2[900] = bt[1000];
  assert_int_equal(mt_writer_alloc(w, T0 + 2, 0, 4, 1, MT_SOURCE_MINOR, b2, 901, NULL), MT_OK);
  uint64_t b3[2] = {bt[1000], bt[5]};
  assert_int_equal(mt_writer_alloc(w, T0 + 3, 0, 4, 1, MT_SOURCE_MINOR, b3, 2, NULL), MT_OK);
  assert_int_equal(mt_writer_close(w), MT_OK);
  tu_trace t;
  mt_reader *r = read_back(&b, &t);
  assert_int_equal(t.n, 3);
  assert_int_equal(t.ev[0].ev.backtrace_len, 409);
  assert_memory_equal(t.ev[0].bt, bt, 409 * sizeof *bt);
  assert_int_equal(t.ev[1].ev.common_prefix, 900);
  assert_int_equal(t.ev[1].ev.backtrace_len, 409); /* the previous one */
  assert_memory_equal(t.ev[1].bt, bt, 409 * sizeof *bt);
  assert_int_equal(t.ev[2].ev.common_prefix, 0);
  assert_int_equal(t.ev[2].ev.backtrace_len, 2);
  assert_memory_equal(t.ev[2].bt, b3, sizeof b3);
  /* only the coded frames were resolved */
  assert_true(mt_reader_has_code(r, bt[408]));
  assert_false(mt_reader_has_code(r, bt[409]));
  assert_true(mt_reader_has_code(r, bt[1000]));
  tu_done(r, &t);
  tu_buf_free(&b);
}

static int failing_resolve(void *ctx, uint64_t code, const mt_location **locs, size_t *n) {
  (void)ctx;
  (void)code;
  *locs = NULL;
  *n = 0;
  return -1;
}

/* The resolver: once per new code per packet; its failure stops the
 * writer. */
static void resolver_calls_and_failure(void **state) {
  (void)state;
  tu_buf b = {0};
  int calls = 0;
  mt_trace_info info = tu_info();
  mt_writer_options o = {.version = 2, .sink = tu_buf_sink, .sink_ctx = &b,
                         .resolve = tu_resolve, .resolve_ctx = &calls, .fd = -1};
  mt_writer *w = NULL;
  assert_int_equal(mt_writer_open(&w, &info, &o), MT_OK);
  const uint64_t s1[4] = {0xa1, 0xb2, 0xa1, 0xc3};
  const uint64_t s2[3] = {0xa1, 0xd4, 0xb2};
  assert_int_equal(mt_writer_alloc(w, T0 + 1, 0, 4, 1, MT_SOURCE_MINOR, s1, 4, NULL), MT_OK);
  assert_int_equal(mt_writer_alloc(w, T0 + 2, 0, 4, 1, MT_SOURCE_MINOR, s2, 3, NULL), MT_OK);
  assert_int_equal(calls, 0); /* resolved at the flush */
  assert_int_equal(mt_writer_flush(w), MT_OK);
  assert_int_equal(calls, 4); /* a1 b2 c3 d4 */
  assert_int_equal(mt_writer_alloc(w, T0 + 3, 0, 4, 1, MT_SOURCE_MINOR, s1, 4, NULL), MT_OK);
  assert_int_equal(mt_writer_close(w), MT_OK);
  assert_int_equal(calls, 4); /* cached since */
  tu_trace t;
  mt_reader *r = read_back(&b, &t);
  size_t n = 0;
  const mt_location *l = mt_reader_lookup(r, 0xd4, &n);
  assert_int_equal(n, 1);
  assert_string_equal(l[0].defname, "fun_d4");
  assert_int_equal(l[0].line, 0xd4);
  tu_done(r, &t);
  tu_buf_free(&b);

  memset(&b, 0, sizeof b);
  o.resolve = failing_resolve;
  assert_int_equal(mt_writer_open(&w, &info, &o), MT_OK);
  assert_int_equal(mt_writer_alloc(w, T0 + 1, 0, 4, 1, MT_SOURCE_MINOR, s1, 4, NULL), MT_OK);
  int rc = mt_writer_flush(w);
  assert_true(rc < 0);
  assert_non_null(strstr(mt_writer_error(w), "resolver"));
  assert_int_equal(mt_writer_alloc(w, T0 + 1, 0, 4, 1, MT_SOURCE_MINOR, s1, 4, NULL), MT_ERR_CLOSED);
  assert_int_equal(b.ncalls, 1); /* only trace_info went out */
  assert_int_not_equal(mt_writer_close(w), MT_OK);
  tu_buf_free(&b);
}

/* ---- mt_reader_skip ---- */

/* A trace of allocations (backtraces of 1 to 6 frames), promotions and
 * collections in random order, ending with collections. */
static void mixed_trace(tu_buf *b, unsigned seed) {
  mt_writer *w = tu_writer(b, 2, NULL);
  tu_rng g = {seed};
  uint64_t t = T0, live[64], nlive = 0, bt[6];
  for (int i = 0; i < 3000; i++) {
    t += tu_below(&g, 3);
    unsigned what = (unsigned)tu_below(&g, 10);
    if (what < 5 || nlive == 0) {
      size_t n = 1 + tu_below(&g, 6);
      for (size_t k = 0; k < n; k++) bt[k] = 0x1000 + 0x10 * tu_below(&g, 20);
      uint64_t id;
      assert_int_equal(mt_writer_alloc(w, t, 0, 1 + tu_below(&g, 50), 1, MT_SOURCE_MINOR, bt, n, &id), MT_OK);
      if (nlive < 64) live[nlive++] = id;
    } else {
      size_t k = tu_below(&g, nlive);
      if (what < 7) {
        assert_int_equal(mt_writer_promote(w, t, 0, live[k]), MT_OK);
      } else {
        assert_int_equal(mt_writer_collect(w, t, 0, live[k]), MT_OK);
        live[k] = live[--nlive];
      }
    }
  }
  while (nlive) assert_int_equal(mt_writer_collect(w, ++t, 0, live[--nlive]), MT_OK);
  assert_int_equal(mt_writer_close(w), MT_OK);
}

/* The events of `all` whose kind is not in `skip`, against `got`. */
static void assert_filtered(const tu_trace *all, const tu_trace *got, unsigned skip) {
  size_t j = 0;
  for (size_t i = 0; i < all->n; i++) {
    const mt_event *a = &all->ev[i].ev;
    if (skip >> a->kind & 1) continue;
    if (j >= got->n) fail_msg("mask %#x: %zu events, more expected", skip, got->n);
    const mt_event *e = &got->ev[j++].ev;
    assert_int_equal(e->kind, a->kind);
    assert_int_equal(e->time, a->time);
    assert_int_equal(e->obj_id, a->obj_id);
    assert_int_equal(e->backtrace_len, a->backtrace_len);
    if (a->backtrace_len)
      assert_memory_equal(e->backtrace, a->backtrace, a->backtrace_len * sizeof *a->backtrace);
  }
  assert_int_equal(got->n, j);
}

static void reader_skips_kinds(void **state) {
  (void)state;
  tu_buf b = {0};
  mixed_trace(&b, 7);
  tu_trace all;
  mt_reader *r = read_back(&b, &all);
  uint64_t end = mt_reader_trace_end(r, 0);
  assert_int_equal(end, all.ev[all.n - 1].ev.time);
  unsigned masks[] = {0, 1u << MT_EVENT_PROMOTE, 1u << MT_EVENT_COLLECT,
                      1u << MT_EVENT_PROMOTE | 1u << MT_EVENT_COLLECT, 1u << MT_EVENT_ALLOC,
                      7};
  for (size_t m = 0; m < sizeof masks / sizeof *masks; m++) {
    tu_trace got;
    memset(&got, 0, sizeof got);
    got.fd = tu_memfd(b.data, b.len);
    mt_reader *s = NULL;
    assert_int_equal(mt_reader_open_fd(&s, got.fd, "skip"), MT_OK);
    assert_int_equal(mt_reader_skip(s, masks[m]), MT_OK);
    tu_read_events(s, &got);
    assert_int_equal(got.status, 0);
    assert_filtered(&all, &got, masks[m]);
    /* the events skipped at the end were read all the same */
    assert_int_equal(mt_reader_trace_end(s, 0), end);
    tu_done(s, &got);
  }
  assert_int_equal(mt_reader_skip(r, 1u << 3), MT_ERR_INVALID);
  size_t want = 0;
  for (size_t i = 0; i < all.n; i++) want += all.ev[i].ev.kind != MT_EVENT_COLLECT;
  tu_done(r, &all);

  /* several traces read as one: the same filter */
  char p1[128], p2[128];
  snprintf(p1, sizeof p1, "%s/skip1.ctf", tu_tmpdir());
  snprintf(p2, sizeof p2, "%s/skip2.ctf", tu_tmpdir());
  tu_write_file(p1, b.data, b.len);
  tu_write_file(p2, b.data, b.len);
  const char *paths[2] = {p1, p2};
  mt_reader *many = NULL;
  assert_int_equal(mt_reader_open_many(&many, paths, 2), MT_OK);
  assert_int_equal(mt_reader_skip(many, 1u << MT_EVENT_COLLECT), MT_OK);
  tu_trace got;
  memset(&got, 0, sizeof got);
  got.fd = -1;
  tu_read_events(many, &got);
  assert_int_equal(got.status, 0);
  assert_int_equal(got.n, 2 * want);
  for (size_t i = 0; i < got.n; i++) assert_int_not_equal(got.ev[i].ev.kind, MT_EVENT_COLLECT);
  tu_trace_free(&got);
  mt_reader_close(many);
  unlink(p1);
  unlink(p2);
  tu_buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(v2_rejects_domain),
      cmocka_unit_test(rejects_unknown_source_and_bad_args),
      cmocka_unit_test(promote_of_unallocated_id_v2),
      cmocka_unit_test(promote_of_unallocated_id_v3),
      cmocka_unit_test(promote_across_domains_v3),
      cmocka_unit_test(collect_across_domains_v3),
      cmocka_unit_test(sink_failure_io_then_closed),
      cmocka_unit_test(fd_failures),
      cmocka_unit_test(check_pid_after_fork),
      cmocka_unit_test(flush_with_nothing_pending_writes_nothing),
      cmocka_unit_test(packets_bounded_and_whole),
      cmocka_unit_test(location_packet_boundary),
      cmocka_unit_test(thirty_second_packets),
      cmocka_unit_test(time_clamped_monotone),
      cmocka_unit_test(object_ids),
      cmocka_unit_test(next_obj_id_new_domain),
      cmocka_unit_test(next_obj_id_used_up_chunk),
      cmocka_unit_test(open_contracts),
      cmocka_unit_test(trace_info_bytes),
      cmocka_unit_test(cut_backtrace_then_longer_prefix),
      cmocka_unit_test(resolver_calls_and_failure),
      cmocka_unit_test(reader_skips_kinds),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  rmdir(tu_tmpdir());
  return rc;
}
