/* Helpers shared by the unit and property tests (header-only, static).
 *
 * Include after <cmocka.h>. Nothing here knows the library's internals
 * beyond the documented packet layout; tests that need internals include
 * the src/format headers themselves. */
#ifndef MT_TEST_UTIL_H
#define MT_TEST_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memtrace/format.h"

/* ---- a growable byte buffer that doubles as a writer sink ---- */

typedef struct tu_buf {
  uint8_t *data;
  size_t len, cap;
  /* one entry per sink call: offset and length of what it delivered */
  size_t *call_off, *call_len;
  size_t ncalls, calls_cap;
  int fail_at_call; /* 1-based call number that fails; 0: never */
  int fail_errno;   /* value returned (negated) when failing; >0 */
  int fail_positive; /* return +1 instead of -errno */
} tu_buf;

static inline void tu_buf_append(tu_buf *b, const void *p, size_t n) {
  if (b->len + n > b->cap) {
    size_t nc = b->cap ? b->cap : 4096;
    while (nc < b->len + n) nc *= 2;
    b->data = realloc(b->data, nc);
    if (!b->data) abort();
    b->cap = nc;
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
}

static inline void tu_buf_record(tu_buf *b, size_t n) {
  if (b->ncalls == b->calls_cap) {
    b->calls_cap = b->calls_cap ? b->calls_cap * 2 : 64;
    b->call_off = realloc(b->call_off, b->calls_cap * sizeof *b->call_off);
    b->call_len = realloc(b->call_len, b->calls_cap * sizeof *b->call_len);
    if (!b->call_off || !b->call_len) abort();
  }
  b->call_off[b->ncalls] = b->len;
  b->call_len[b->ncalls] = n;
  b->ncalls++;
}

/* The sink: records each call, appends its bytes; a failing call (see
 * fail_at_call) is recorded with length 0 and appends nothing. */
static inline int tu_buf_sink(void *ctx, const void *p, size_t n) {
  tu_buf *b = ctx;
  if (b->fail_at_call && (int)b->ncalls + 1 == b->fail_at_call) {
    tu_buf_record(b, 0);
    return b->fail_positive ? 1 : -b->fail_errno;
  }
  tu_buf_record(b, n);
  tu_buf_append(b, p, n);
  return 0;
}

static inline void tu_buf_free(tu_buf *b) {
  free(b->data);
  free(b->call_off);
  free(b->call_len);
  memset(b, 0, sizeof *b);
}

/* ---- packets of a written trace ---- */

#define TU_MAGIC 0xc1fc1fc1u

static inline uint16_t tu_ld16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t tu_ld32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t tu_ld64(const uint8_t *p) {
  return (uint64_t)tu_ld32(p) | (uint64_t)tu_ld32(p + 4) << 32;
}
static inline void tu_st16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static inline void tu_st32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void tu_st64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Packet header field offsets (CTF layout of memtrace's metadata). */
enum {
  TU_H_MAGIC = 0,
  TU_H_SIZE = 4,
  TU_H_TBEGIN = 8,
  TU_H_TEND = 16,
  TU_H_VERSION = 28,
  TU_H_PID = 30,
  TU_H_DOMAIN_V3 = 38
};
static inline size_t tu_hdr_len(unsigned version) { return version >= 3 ? 68 : 66; }
static inline size_t tu_h_verifier(unsigned version) { return version >= 3 ? 40 : 38; }
static inline size_t tu_h_alloc_begin(unsigned version) { return tu_hdr_len(version) - 16; }
static inline size_t tu_h_alloc_end(unsigned version) { return tu_hdr_len(version) - 8; }

typedef struct tu_packet {
  size_t off, size; /* file offset and total size (header included) */
  unsigned version, domain;
  uint64_t time_begin, time_end, pid, alloc_begin, alloc_end;
  uint16_t v_ix, v_pred;
  uint64_t v_val;
  /* first event code of the content (the packet's kind), or -1 if empty */
  int first_code;
} tu_packet;

/* Splits a well-formed trace into its packets. Returns the count (packets
 * stored up to max) or -1 if the bytes are not a sequence of whole
 * packets. */
static inline int tu_packets(const uint8_t *d, size_t len, tu_packet *out, int max) {
  size_t off = 0;
  int n = 0;
  while (off < len) {
    if (len - off < 66 || tu_ld32(d + off) != TU_MAGIC) return -1;
    tu_packet p;
    memset(&p, 0, sizeof p);
    p.off = off;
    p.size = tu_ld32(d + off + TU_H_SIZE) / 8;
    p.version = tu_ld16(d + off + TU_H_VERSION);
    size_t hl = tu_hdr_len(p.version);
    if (p.size < hl || p.size > len - off) return -1;
    p.time_begin = tu_ld64(d + off + TU_H_TBEGIN);
    p.time_end = tu_ld64(d + off + TU_H_TEND);
    p.pid = tu_ld64(d + off + TU_H_PID);
    p.domain = p.version >= 3 ? tu_ld16(d + off + TU_H_DOMAIN_V3) : 0;
    size_t v = tu_h_verifier(p.version);
    p.v_ix = tu_ld16(d + off + v);
    p.v_pred = tu_ld16(d + off + v + 2);
    p.v_val = tu_ld64(d + off + v + 4);
    p.alloc_begin = tu_ld64(d + off + tu_h_alloc_begin(p.version));
    p.alloc_end = tu_ld64(d + off + tu_h_alloc_end(p.version));
    p.first_code = p.size >= hl + 4 ? (int)(tu_ld32(d + off + hl) >> 25) : -1;
    if (n < max) out[n] = p;
    n++;
    off += p.size;
  }
  return n;
}

/* ---- files ---- */

/* An anonymous file holding `len` bytes, positioned at 0. */
static inline int tu_memfd(const void *data, size_t len) {
  int fd = memfd_create("mt-test", MFD_CLOEXEC);
  if (fd < 0) {
    perror("memfd_create");
    abort();
  }
  const uint8_t *p = data;
  size_t left = len;
  while (left) {
    ssize_t w = write(fd, p, left);
    if (w <= 0) abort();
    p += w;
    left -= (size_t)w;
  }
  if (lseek(fd, 0, SEEK_SET) != 0) abort();
  return fd;
}

static inline void tu_write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    perror(path);
    abort();
  }
  if (len && fwrite(data, 1, len, f) != len) abort();
  if (fclose(f) != 0) abort();
}

/* A fresh directory for this process's files; removed by tu_rmdir. */
static inline const char *tu_tmpdir(void) {
  static char dir[64];
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/mt-test-XXXXXX");
    if (!mkdtemp(dir)) abort();
  }
  return dir;
}

/* Does `msg` contain "byte N" with exactly the number N? */
static inline int tu_has_byte(const char *msg, unsigned long long n) {
  char want[40];
  snprintf(want, sizeof want, "byte %llu", n);
  size_t wl = strlen(want);
  for (const char *p = msg; (p = strstr(p, want)) != NULL; p++)
    if (p[wl] < '0' || p[wl] > '9') return 1;
  return 0;
}

/* ---- a deterministic PRNG (splitmix64) ---- */

typedef struct tu_rng {
  uint64_t s;
} tu_rng;

static inline uint64_t tu_next(tu_rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
/* Uniform in [0, n) (n > 0). */
static inline uint64_t tu_below(tu_rng *r, uint64_t n) { return tu_next(r) % n; }
static inline int tu_chance(tu_rng *r, unsigned percent) { return tu_below(r, 100) < percent; }

/* ---- memory whose end is followed by an inaccessible page ---- */

/* Copies `n` bytes so that the byte after the last one is the first byte of
 * a PROT_NONE page: a read past the end faults even without ASan. Free with
 * tu_guarded_free. */
typedef struct tu_guarded {
  uint8_t *base;
  size_t maplen;
  uint8_t *p;
} tu_guarded;

static inline tu_guarded tu_guarded_copy(const void *src, size_t n) {
  long pg = sysconf(_SC_PAGESIZE);
  size_t pages = (n + (size_t)pg - 1) / (size_t)pg + 1;
  tu_guarded g;
  g.maplen = pages * (size_t)pg;
  g.base = mmap(NULL, g.maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g.base == MAP_FAILED) abort();
  uint8_t *guard = g.base + (pages - 1) * (size_t)pg;
  if (mprotect(guard, (size_t)pg, PROT_NONE) != 0) abort();
  g.p = guard - n;
  if (n) memcpy(g.p, src, n);
  return g;
}

static inline void tu_guarded_free(tu_guarded *g) { munmap(g->base, g->maplen); }

/* ---- default trace_info ---- */

static inline mt_trace_info tu_info(void) {
  mt_trace_info in;
  memset(&in, 0, sizeof in);
  in.sample_rate = 1e-4;
  in.word_size = 64;
  in.executable_name = "/usr/bin/test-program";
  in.host_name = "testhost";
  in.runtime_params = "s=4M";
  in.pid = 4242;
  in.start_time = 1700000000000000ull;
  in.context = "unit test";
  return in;
}

#endif

/* ---- reading a whole trace into memory ---- */

#ifndef MT_TEST_UTIL_READ
#define MT_TEST_UTIL_READ

/* One event, with its backtrace copied. */
typedef struct tu_event {
  mt_event ev;
  uint64_t *bt; /* owned copy of ev.backtrace */
} tu_event;

typedef struct tu_trace {
  tu_event *ev;
  size_t n, cap;
  int status;          /* the last mt_reader_next result (0 = clean end) */
  int open_status;
  char error[1024];
  uint64_t error_offset; /* mt_reader_error_offset */
  char warning[1024];
  int has_warning;
  int fd;
} tu_trace;

/* Whether two events say the same: every field, and the backtrace's
 * frames. */
static inline int tu_same_event(const mt_event *a, const mt_event *b) {
  return a->kind == b->kind && a->domain == b->domain && a->time == b->time &&
         a->obj_id == b->obj_id && a->length == b->length && a->nsamples == b->nsamples &&
         a->source == b->source && a->backtrace_len == b->backtrace_len &&
         a->common_prefix == b->common_prefix &&
         (a->backtrace_len == 0 ||
          memcmp(a->backtrace, b->backtrace, a->backtrace_len * sizeof *a->backtrace) == 0);
}

static inline void tu_trace_free(tu_trace *t) {
  for (size_t i = 0; i < t->n; i++) free(t->ev[i].bt);
  free(t->ev);
  memset(t, 0, sizeof *t);
  t->fd = -1;
}

/* Reads every event of an open reader (which it does not close). */
static inline void tu_read_events(mt_reader *r, tu_trace *t) {
  mt_event ev;
  int rc;
  while ((rc = mt_reader_next(r, &ev)) == 1) {
    if (t->n == t->cap) {
      t->cap = t->cap ? t->cap * 2 : 64;
      t->ev = realloc(t->ev, t->cap * sizeof *t->ev);
      if (!t->ev) abort();
    }
    tu_event *e = &t->ev[t->n++];
    e->ev = ev;
    e->bt = NULL;
    if (ev.backtrace_len) {
      e->bt = malloc(ev.backtrace_len * sizeof *e->bt);
      if (!e->bt) abort();
      memcpy(e->bt, ev.backtrace, ev.backtrace_len * sizeof *e->bt);
    }
    e->ev.backtrace = e->bt;
  }
  t->status = rc;
  snprintf(t->error, sizeof t->error, "%s", mt_reader_error(r));
  t->error_offset = mt_reader_error_offset(r);
  const char *w = mt_reader_warning(r);
  t->has_warning = w != NULL;
  snprintf(t->warning, sizeof t->warning, "%s", w ? w : "");
}

/* Reads the whole trace in `data` (through a memfd) into t. Returns the
 * reader, still open for lookups (release with tu_done), or NULL when
 * opening failed (t->open_status and t->error say why). */
static inline mt_reader *tu_read_mem(const void *data, size_t len, tu_trace *t) {
  memset(t, 0, sizeof *t);
  t->fd = tu_memfd(data, len);
  mt_reader *r = NULL;
  t->open_status = mt_reader_open_fd(&r, t->fd, "memtrace-test");
  if (t->open_status != MT_OK) {
    snprintf(t->error, sizeof t->error, "%s", mt_reader_error(r));
    mt_reader_close(r);
    close(t->fd);
    t->fd = -1;
    return NULL;
  }
  tu_read_events(r, t);
  return r;
}

/* Closes the reader and the memfd of tu_read_mem, frees the events. */
static inline void tu_done(mt_reader *r, tu_trace *t) {
  mt_reader_close(r);
  if (t->fd >= 0) close(t->fd);
  tu_trace_free(t);
}

#endif

/* ---- writers ---- */

#ifndef MT_TEST_UTIL_WRITE
#define MT_TEST_UTIL_WRITE

/* A resolver giving every code one location: test.ml, fun_<hex code>,
 * line = code & 0xfff, chars 1-2. Counts its calls in *ctx (an int) if
 * ctx is not NULL. */
static inline int tu_resolve(void *ctx, uint64_t code, const mt_location **locs, size_t *n) {
  static char def[64];
  static mt_location l;
  if (ctx) ++*(int *)ctx;
  snprintf(def, sizeof def, "fun_%llx", (unsigned long long)code);
  l.filename = "test.ml";
  l.defname = def;
  l.line = (uint32_t)(code & 0xfff);
  l.start_char = 1;
  l.end_char = 2;
  *locs = &l;
  *n = 1;
  return 0;
}

/* A writer into b (through its sink), with tu_resolve. */
static inline mt_writer *tu_writer(tu_buf *b, int version, const mt_trace_info *info) {
  mt_writer_options o;
  memset(&o, 0, sizeof o);
  o.version = version;
  o.sink = tu_buf_sink;
  o.sink_ctx = b;
  o.resolve = tu_resolve;
  o.fd = -1;
  mt_trace_info def = tu_info();
  mt_writer *w = NULL;
  int rc = mt_writer_open(&w, info ? info : &def, &o);
  if (rc != MT_OK) {
    fprintf(stderr, "mt_writer_open: %s\n", mt_writer_error(w));
    abort();
  }
  return w;
}

#endif
