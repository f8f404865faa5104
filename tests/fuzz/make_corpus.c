/* Writes the fuzzers' seed corpora (committed in tests/fuzz/corpus and
 * tests/fuzz/corpus_roundtrip), so that they can be regenerated:
 *
 *   mt_make_corpus TRACES_DIR READER_DIR ROUNDTRIP_DIR
 *
 * Reader seeds: the first packets of each reference trace in TRACES_DIR, cut
 * at packet boundaries, and small traces made with the writer that cover
 * each event kind and encoding, versions 1 to 3, prediction runs, cache
 * evictions, several domains, a forked child's packets and truncations.
 * Each file stays under 40 KB so that libFuzzer (-max_len=65536) can use it
 * whole. Roundtrip seeds: programs for fuzz_roundtrip.c, random bytes behind
 * a chosen flags byte (any input is a valid program there).
 *
 * Everything is deterministic: the same build writes the same bytes. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace/format.h"

#define MAGIC 0xc1fc1fc1u
#define MAX_SEED 40000     /* bytes per reader seed */
#define START 1700000000000000ull

static const char *reader_dir, *roundtrip_dir;

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "mt_make_corpus: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

/* ---- byte buffers ---- */

typedef struct buf {
  uint8_t *p;
  size_t len, cap;
} buf;

static void buf_add(buf *b, const void *data, size_t len) {
  if (b->len + len > b->cap) {
    size_t nc = b->cap ? b->cap : 4096;
    while (nc < b->len + len) nc *= 2;
    uint8_t *np = realloc(b->p, nc);
    if (!np) die("out of memory");
    b->p = np;
    b->cap = nc;
  }
  memcpy(b->p + b->len, data, len);
  b->len += len;
}

static uint32_t ld32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void st16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static void st32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Size in bytes of the packet at p (the header stores it in bits). */
static size_t packet_size(const uint8_t *p) { return ld32(p + 4) / 8; }

static void write_file(const char *dir, const char *name, const uint8_t *data, size_t len) {
  if (dir == reader_dir && len > MAX_SEED) die("%s would take %zu bytes", name, len);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
    die("cannot write %s: %s", path, strerror(errno));
}

/* ---- reference traces ---- */

static buf load(const char *path) {
  buf b = {0};
  FILE *f = fopen(path, "rb");
  if (!f) die("cannot open %s: %s", path, strerror(errno));
  uint8_t chunk[65536];
  size_t got;
  while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) buf_add(&b, chunk, got);
  fclose(f);
  return b;
}

/* The longest prefix of at most `budget` bytes and `max_packets` packets
 * that ends at a packet boundary. */
static size_t whole_packets(const buf *t, size_t budget, int max_packets) {
  size_t off = 0;
  for (int n = 0; n < max_packets && off + 8 <= t->len; n++) {
    if (ld32(t->p + off) != MAGIC) die("not a memtrace trace (bad magic)");
    size_t size = packet_size(t->p + off);
    if (size == 0 || off + size > t->len || off + size > budget) break;
    off += size;
  }
  return off;
}

static void reference_seeds(const char *traces) {
  static const char *names[] = {"ocamlopt", "workload-1e-4", "workload-1e-3"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char path[4096], name[256];
    snprintf(path, sizeof path, "%s/%s.ctf", traces, names[i]);
    buf t = load(path);
    /* A few packets (trace_info, locations, first events), and as many as
     * fit: the second starts with the cache warm, so verifiers are real. */
    size_t cuts[2] = {whole_packets(&t, MAX_SEED, 3), whole_packets(&t, 36000, 1000)};
    for (int k = 0; k < 2; k++) {
      if (k == 1 && cuts[1] == cuts[0]) break;
      snprintf(name, sizeof name, "ref-%s-%zu.ctf", names[i], cuts[k]);
      write_file(reader_dir, name, t.p, cuts[k]);
    }
    free(t.p);
  }
}

/* ---- traces made with the writer ---- */

static int sink(void *ctx, const void *data, size_t len) {
  buf_add(ctx, data, len);
  return 0;
}

/* Locations for any code: 0 to 3 of them, over 40 files (more than the
 * 31-entry move-to-front table holds) and fields beyond their widths now
 * and then, so that every branch of the location codec is exercised. */
static char names_store[3][64];
static int resolve(void *ctx, uint64_t code, const mt_location **locs, size_t *n) {
  static mt_location out[3];
  (void)ctx;
  size_t count = code % 4;
  for (size_t i = 0; i < count; i++) {
    uint64_t x = code * 2654435761u + i;
    snprintf(names_store[i], 32, "src/dir%u/file%u.ml", (unsigned)(x % 3), (unsigned)(x % 40));
    snprintf(names_store[i] + 32, 32, "Mod%u.fn_%u", (unsigned)(x % 40),
             (unsigned)(x / 40 % 7));
    out[i] = (mt_location){names_store[i], names_store[i] + 32,
                           (uint32_t)(x % 11 == 0 ? 0x123456 : x % 5000),
                           (uint32_t)(x % 13 == 0 ? 300 : x % 80),
                           (uint32_t)(x % 17 == 0 ? 2000 : x % 120)};
  }
  *locs = count ? out : NULL;
  *n = count;
  return 0;
}

typedef struct trace {
  mt_writer *w;
  buf out;
  uint64_t t; /* clock, microseconds */
} trace;

static void check(trace *tr, int rc) {
  if (rc != MT_OK) die("writer: %s", mt_writer_error(tr->w));
}

static void open_trace(trace *tr, int version, uint32_t domain, uint64_t pid,
                       int locations) {
  memset(tr, 0, sizeof *tr);
  mt_trace_info info = {
      .sample_rate = 1e-4,
      .word_size = 64,
      .executable_name = "/usr/bin/fuzz-seed",
      .host_name = "seedhost",
      .runtime_params = "s=32k",
      .pid = pid,
      .start_time = START,
      .context = version >= 3 ? "v3 seed" : "",
      .initial_domain = domain,
  };
  mt_writer_options opt = {.version = version, .sink = sink, .sink_ctx = &tr->out};
  if (locations) opt.resolve = resolve;
  tr->t = START;
  check(tr, mt_writer_open(&tr->w, &info, &opt));
}

static void close_trace(trace *tr) {
  check(tr, mt_writer_close(tr->w));
  tr->w = NULL;
}

static uint64_t alloc(trace *tr, uint32_t dom, uint64_t len, uint64_t nsamples,
                      mt_source src, const uint64_t *bt, size_t n) {
  uint64_t id;
  check(tr, mt_writer_alloc(tr->w, tr->t, dom, len, nsamples, src, bt, n, &id));
  return id;
}

/* Every event kind and field encoding, v2 or v3: short and long allocs of
 * every source, 1-to-9-byte integers, promotions, collections, and time
 * steps around the 30 s packet span and the 33.5 s timestamp wrap. */
static void kinds_trace(buf *out, int version) {
  trace tr;
  open_trace(&tr, version, 0, 4242, 1);
  uint64_t bt[8] = {0x401000, 0x401100, 0x401200, 0x402000, 0x402100, 0x403000, 7, 0};
  uint64_t ids[64];
  size_t nids = 0;
  for (unsigned len = 1; len <= 16; len++) {
    tr.t += len;
    ids[nids++] = alloc(&tr, 0, len, 1, MT_SOURCE_MINOR, bt, 3 + len % 5);
  }
  static const uint64_t sizes[] = {0, 17, 252, 253, 65535, 65536, 0x7fffffff,
                                   0x80000000ull, 0x7fffffffffffffffull};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    tr.t += 100;
    ids[nids++] = alloc(&tr, 0, sizes[i], 1 + i * 1000, (mt_source)(i % 3), bt + i % 4, 4);
  }
  ids[nids++] = alloc(&tr, 0, 3, 1, MT_SOURCE_MAJOR, bt, 8);    /* short size, not minor */
  ids[nids++] = alloc(&tr, 0, 3, 2, MT_SOURCE_MINOR, bt, 8);    /* short size, 2 samples */
  ids[nids++] = alloc(&tr, 0, 5, 1, MT_SOURCE_EXTERNAL, NULL, 0); /* no backtrace */
  for (size_t i = 0; i < nids; i += 3) {
    tr.t += 7;
    check(&tr, mt_writer_promote(tr.w, tr.t, 0, ids[i]));
  }
  static const uint64_t gaps[] = {29999999, 30000001, 33554432, 40000000, 1};
  for (size_t i = 0; i < sizeof gaps / sizeof *gaps; i++) {
    tr.t += gaps[i];
    ids[nids++] = alloc(&tr, 0, 2, 1, MT_SOURCE_MINOR, bt + 1, 5);
    check(&tr, mt_writer_collect(tr.w, tr.t, 0, ids[i]));
  }
  for (size_t i = 0; i < nids; i += 2) check(&tr, mt_writer_collect(tr.w, tr.t, 0, ids[i]));
  /* 45 new codes: more files than the move-to-front table holds. */
  for (uint64_t c = 0; c < 45; c++) {
    uint64_t one[2] = {0x500000 + c * 4 + 1, 0x500000 + c * 4 + 3};
    tr.t += 3;
    alloc(&tr, 0, 4, 1, MT_SOURCE_MINOR, one, 2);
  }
  close_trace(&tr);
  *out = tr.out;
}

/* Backtrace coding: 400 misses, then the same frames one call deeper (runs
 * of predictions, split at 255), then one too long for an event (cut by the
 * writer) and one sharing more than the cut prefix. */
static void backtrace_trace(buf *out) {
  trace tr;
  open_trace(&tr, 2, 0, 77, 0);
  static uint64_t bt[1001];
  for (size_t i = 0; i < 1000; i++) bt[i + 1] = 0x10000000 + i * 16;
  bt[0] = 0x9999;
  alloc(&tr, 0, 8, 1, MT_SOURCE_MINOR, bt + 1, 400);
  tr.t += 10;
  alloc(&tr, 0, 8, 1, MT_SOURCE_MINOR, bt, 401);
  tr.t += 10;
  alloc(&tr, 0, 8, 1, MT_SOURCE_MINOR, bt + 1, 400);
  tr.t += 10;
  alloc(&tr, 0, 8, 1, MT_SOURCE_MINOR, bt, 1001);
  tr.t += 10;
  bt[900] ^= 1;
  alloc(&tr, 0, 8, 1, MT_SOURCE_MINOR, bt, 950);
  tr.t += 10;
  alloc(&tr, 0, 8, 1, MT_SOURCE_MINOR, bt, 20);
  close_trace(&tr);
  *out = tr.out;
}

/* Codes that share both cache slots, over several packets: evictions, and
 * packet headers with real cache verifiers. */
static void eviction_trace(buf *out) {
  trace tr;
  open_trace(&tr, 2, 0, 78, 1);
  for (int round = 0; round < 6; round++) {
    for (uint64_t i = 0; i < 12; i++) {
      uint64_t bt[3] = {(i + 1) << 35, (i % 3 + 1) << 35, ((i * 7) % 5 + 1) << 25};
      tr.t += 5;
      alloc(&tr, 0, 2 + i % 3, 1, MT_SOURCE_MINOR, bt, 3);
    }
    check(&tr, mt_writer_flush(tr.w));
  }
  close_trace(&tr);
  *out = tr.out;
}

/* Version 3: several domains (one of them initial and not 0), interleaved,
 * with collections of other domains' objects. */
static void domains_trace(buf *out, int ndoms) {
  trace tr;
  open_trace(&tr, 3, 1, 4343, 1);
  uint64_t ids[256];
  size_t nids = 0;
  for (int round = 0; round < 6; round++)
    for (int d = 0; d < ndoms; d++) {
      uint32_t dom = (uint32_t)(d == ndoms - 1 ? 0xffff : d);
      uint64_t bt[4] = {0x700000, 0x700100 + (uint64_t)d * 16, 0x700200 + (uint64_t)round,
                        0x800000};
      tr.t += 50 + (uint64_t)d;
      ids[nids++] = alloc(&tr, dom, 1 + (uint64_t)round, 1, (mt_source)(round % 3), bt, 4);
      check(&tr, mt_writer_promote(tr.w, tr.t, dom, ids[nids - 1]));
      if (nids > 3) check(&tr, mt_writer_collect(tr.w, tr.t, dom, ids[nids - 3]));
    }
  close_trace(&tr);
  *out = tr.out;
}

/* The writer's limit of 128 domains, then a packet of a 129th (the last
 * packet again, its domain field changed): the reader's limit. */
static void too_many_domains_trace(buf *out) {
  trace tr;
  open_trace(&tr, 3, 0, 4444, 0);
  uint64_t bt[1] = {0x1234};
  for (uint32_t d = 0; d < 128; d++) {
    tr.t += 1;
    alloc(&tr, d, 1, 1, MT_SOURCE_MINOR, bt, 1);
  }
  close_trace(&tr);
  size_t last = 0;
  for (size_t off = 0; off < tr.out.len; off += packet_size(tr.out.p + off)) last = off;
  size_t size = tr.out.len - last;
  uint8_t pkt[4096];
  if (size > sizeof pkt) die("packet too big");
  memcpy(pkt, tr.out.p + last, size);
  st16(pkt + 38, 999); /* the v3 header's domain */
  buf_add(&tr.out, pkt, size);
  *out = tr.out;
}

/* A version-1 trace: version 2 with each header's version set to 1 and no
 * context string in trace_info (its only difference on disk). */
static buf to_v1(const buf *v2) {
  buf out = {0};
  size_t off = 0;
  int first = 1;
  while (off < v2->len) {
    size_t size = packet_size(v2->p + off);
    uint8_t pkt[65536];
    if (size > sizeof pkt) die("packet too big");
    memcpy(pkt, v2->p + off, size);
    off += size;
    st16(pkt + 28, 1);
    if (first) { /* drop the empty context: its terminating NUL */
      if (pkt[size - 1] != 0) die("unexpected trace_info layout");
      size--;
      st32(pkt + 4, (uint32_t)size * 8);
      first = 0;
    }
    buf_add(&out, pkt, size);
  }
  return out;
}

static void writer_seeds(void) {
  buf b;
  kinds_trace(&b, 2);
  write_file(reader_dir, "w2-kinds.ctf", b.p, b.len);
  /* Truncated: mid-packet, and mid-header of the next packet. */
  size_t last = 0;
  for (size_t off = 0; off < b.len; off += packet_size(b.p + off)) last = off;
  write_file(reader_dir, "w2-truncated-packet.ctf", b.p, last + (b.len - last) / 2);
  write_file(reader_dir, "w2-truncated-header.ctf", b.p, last + 30);
  buf v1 = to_v1(&b);
  write_file(reader_dir, "w1-kinds.ctf", v1.p, v1.len);
  free(v1.p);

  /* A forked child's packets after the parent's: skipped by the reader. */
  buf child;
  trace tr;
  open_trace(&tr, 2, 0, 4243, 1);
  uint64_t bt[2] = {0x401000, 0x999000};
  alloc(&tr, 0, 3, 1, MT_SOURCE_MINOR, bt, 2);
  close_trace(&tr);
  child = tr.out;
  size_t info = packet_size(child.p);
  buf_add(&b, child.p + info, child.len - info);
  write_file(reader_dir, "w2-forked.ctf", b.p, b.len);
  free(child.p);
  free(b.p);

  kinds_trace(&b, 3);
  write_file(reader_dir, "w3-kinds.ctf", b.p, b.len);
  free(b.p);
  backtrace_trace(&b);
  write_file(reader_dir, "w2-long-backtraces.ctf", b.p, b.len);
  free(b.p);
  eviction_trace(&b);
  write_file(reader_dir, "w2-evictions.ctf", b.p, b.len);
  free(b.p);
  domains_trace(&b, 4);
  write_file(reader_dir, "w3-domains.ctf", b.p, b.len);
  free(b.p);
  domains_trace(&b, 20);
  write_file(reader_dir, "w3-many-domains.ctf", b.p, b.len);
  free(b.p);
  too_many_domains_trace(&b);
  write_file(reader_dir, "w3-129-domains.ctf", b.p, b.len);
  free(b.p);

  /* trace_info alone, and the bare magic. */
  open_trace(&tr, 2, 0, 1, 0);
  close_trace(&tr);
  write_file(reader_dir, "w2-info-only.ctf", tr.out.p, tr.out.len);
  write_file(reader_dir, "magic-only.ctf", tr.out.p, 4);
  free(tr.out.p);
}

/* ---- roundtrip programs ---- */

static void roundtrip_seeds(void) {
  /* Flags bytes (see fuzz_roundtrip.c): v2/v3, memfd/sink, with or without
   * locations, the simple resolver, long names, injected failures. */
  static const uint8_t flags[] = {0x00, 0x01, 0x04, 0x05, 0x06, 0x07,
                                  0x0e, 0x0d, 0x25, 0x44, 0x45, 0x13};
  uint64_t x = 0x2545f4914f6cdd1dull;
  for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) {
    uint8_t prog[3000];
    size_t len = 600 + 200 * i;
    prog[0] = flags[i];
    for (size_t k = 1; k < len; k++) { /* xorshift64 */
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      prog[k] = (uint8_t)(x >> 32);
    }
    char name[64];
    snprintf(name, sizeof name, "prog-%02zu-flags-%02x", i, flags[i]);
    write_file(roundtrip_dir, name, prog, len);
  }
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s TRACES_DIR READER_DIR ROUNDTRIP_DIR\n", argv[0]);
    return 2;
  }
  reader_dir = argv[2];
  roundtrip_dir = argv[3];
  reference_seeds(argv[1]);
  writer_seeds();
  roundtrip_seeds();
  return 0;
}
