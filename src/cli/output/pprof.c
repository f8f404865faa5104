/* pprof profiles: protobuf encoding by hand, streamed through zlib. */
#include "pprof.h"

#include "base/dlbind.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* ---- zlib, opened by the first profile ----
 *
 * Not linked: only this export needs it, and every other command would pay
 * to load it, `memtrace run` among them, whose CPU the profiler's overhead
 * budget counts (docs/benchmarks.md, "Loading libraries"; see also
 * mhd_load.c). */

#define ZLIB_SONAME "libz.so.1"

static struct {
  int (*deflate_init2_)(z_streamp, int, int, int, int, int, const char *, int);
  int (*deflate)(z_streamp, int);
  int (*deflate_end)(z_streamp);
} zl;
static pthread_once_t zl_once = PTHREAD_ONCE_INIT;
static char zl_failure[512]; /* empty once loaded */

static void zl_load(void) {
  const mt_dl_fn fns[] = {{"deflateInit2_", &zl.deflate_init2_},
                          {"deflate", &zl.deflate},
                          {"deflateEnd", &zl.deflate_end}};
  mt_dl_bind(ZLIB_SONAME, fns, sizeof fns / sizeof *fns,
             "pprof profiles are gzip-compressed with zlib: install it (Debian/Ubuntu: apt-get "
             "install zlib1g)",
             "not a zlib", zl_failure, sizeof zl_failure);
}

static int zl_ready(void) {
  pthread_once(&zl_once, zl_load);
  return !zl_failure[0];
}

int pprof_load_zlib(char *err, size_t n) {
  if (zl_ready()) return 0;
  snprintf(err, n, "%s", zl_failure);
  return -1;
}

/* ---- protobuf ---- */

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

static int pb_grow(pb_buf *b, size_t more) {
  if (b->failed) return -1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap - b->len < more) {
    if (cap > SIZE_MAX / 2) {
      b->failed = 1;
      return -1;
    }
    cap *= 2;
  }
  uint8_t *p = realloc(b->p, cap);
  if (!p) {
    b->failed = 1;
    return -1;
  }
  b->p = p;
  b->cap = cap;
  return 0;
}

static size_t varint_size(uint64_t v);

/* Room for `more` bytes: 0, or -1 (b->failed) when out of memory. */
static inline int pb_reserve(pb_buf *b, size_t more) {
  if (b->cap - b->len >= more && !b->failed) return 0;
  return pb_grow(b, more);
}

/* Writes a varint at q (room for 10 bytes); returns the end. */
static inline uint8_t *put_varint(uint8_t *q, uint64_t v) {
  while (v >= 0x80) {
    *q++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *q++ = (uint8_t)v;
  return q;
}

void pb_free(pb_buf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

void pb_varint(pb_buf *b, uint64_t v) {
  if (pb_reserve(b, 10)) return; /* a 64-bit varint takes at most 10 bytes */
  b->len = (size_t)(put_varint(b->p + b->len, v) - b->p);
}

static void pb_key(pb_buf *b, uint32_t field, int wire) {
  pb_varint(b, (uint64_t)field << 3 | (uint64_t)wire);
}

void pb_uint(pb_buf *b, uint32_t field, uint64_t v) {
  if (!v) return;
  pb_key(b, field, WIRE_VARINT);
  pb_varint(b, v);
}

void pb_int(pb_buf *b, uint32_t field, int64_t v) { pb_uint(b, field, (uint64_t)v); }

void pb_bool(pb_buf *b, uint32_t field, int v) { pb_uint(b, field, v != 0); }

void pb_bytes(pb_buf *b, uint32_t field, const void *data, size_t n) {
  pb_key(b, field, WIRE_LEN);
  pb_varint(b, n);
  if (n == 0 || pb_reserve(b, n)) return;
  memcpy(b->p + b->len, data, n);
  b->len += n;
}

static size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

/* The bytes of a packed field of n varints: its payload's length in *len. */
static size_t packed_size(uint32_t field, const uint64_t *v, size_t n, size_t *len) {
  *len = 0;
  if (n == 0) return 0;
  for (size_t i = 0; i < n; i++) *len += varint_size(v[i]);
  return varint_size((uint64_t)field << 3 | WIRE_LEN) + varint_size(*len) + *len;
}

/* Writes a packed field sized by packed_size at q; returns the end. */
static uint8_t *put_packed(uint8_t *q, uint32_t field, const uint64_t *v, size_t n, size_t len) {
  if (n == 0) return q;
  q = put_varint(q, (uint64_t)field << 3 | WIRE_LEN);
  q = put_varint(q, len);
  for (size_t i = 0; i < n; i++) q = put_varint(q, v[i]);
  return q;
}

void pb_packed(pb_buf *b, uint32_t field, const uint64_t *v, size_t n) {
  /* The length prefix comes first, so size the payload before writing it. */
  size_t len, size = packed_size(field, v, n, &len);
  if (size == 0 || pb_reserve(b, size)) return;
  b->len = (size_t)(put_packed(b->p + b->len, field, v, n, len) - b->p);
}

/* ---- the profile ---- */

/* Uncompressed bytes gathered before they are handed to zlib: large enough
 * that deflate is called rarely, small enough not to matter. */
#define FLUSH_AT (256 * 1024)

struct pprof {
  int fd, err;
  z_stream z;
  int z_live;
  pb_buf body;      /* top-level fields not yet compressed         */
  pb_buf sub, sub2; /* scratch for a sub-message and its children  */
  uint64_t encoded, written;
  uint8_t out[64 * 1024];

  /* String table: the bytes of every string (NUL-terminated) in `chars`,
   * each string's offset in `offs`, and an open-addressing hash of
   * (index + 1) for interning. */
  char *chars;
  size_t chars_len, chars_cap;
  size_t *offs;
  size_t nstr, offs_cap;
  uint32_t *slots;
  size_t nslots;

  uint64_t *comments;
  size_t ncomments, comments_cap;
};

static void fail(pprof *p, int err) {
  if (!p->err) p->err = err;
}

static int write_all(pprof *p, const uint8_t *buf, size_t n) {
  while (n) {
    ssize_t w = write(p->fd, buf, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail(p, errno);
      return -1;
    }
    buf += w;
    n -= (size_t)w;
    p->written += (uint64_t)w;
  }
  return 0;
}

/* Runs `len` bytes through deflate (with `flush`), writing what comes out. */
static void deflate_bytes(pprof *p, const uint8_t *data, size_t len, int flush) {
  if (p->err) return;
  p->z.next_in = (Bytef *)data;
  p->z.avail_in = (uInt)len; /* callers pass at most FLUSH_AT-ish chunks */
  for (;;) {
    p->z.next_out = p->out;
    p->z.avail_out = sizeof p->out;
    int rc = zl.deflate(&p->z, flush);
    if (rc == Z_STREAM_ERROR) {
      fail(p, EIO);
      return;
    }
    if (write_all(p, p->out, sizeof p->out - p->z.avail_out)) return;
    if (flush == Z_FINISH ? rc == Z_STREAM_END : p->z.avail_out != 0) return;
  }
}

static void flush_body(pprof *p, int finish) {
  if (p->body.failed) fail(p, ENOMEM);
  if (p->err) return;
  p->encoded += p->body.len;
  /* avail_in is a uInt: hand over huge bodies (one enormous sample) in
   * pieces so the count cannot be truncated. */
  size_t off = 0;
  const size_t piece = 1u << 30;
  while (p->body.len - off > piece) {
    deflate_bytes(p, p->body.p + off, piece, Z_NO_FLUSH);
    off += piece;
  }
  deflate_bytes(p, p->body.p + off, p->body.len - off, finish ? Z_FINISH : Z_NO_FLUSH);
  p->body.len = 0;
}

/* Appends the scratch message `sub` as field `field` of the profile. */
static void emit_sub(pprof *p, uint32_t field) {
  if (p->sub.failed || p->sub2.failed) fail(p, ENOMEM);
  if (p->err) return;
  pb_bytes(&p->body, field, p->sub.p, p->sub.len);
  p->sub.len = 0;
  if (p->body.len >= FLUSH_AT) flush_body(p, 0);
}

pprof *pprof_open(int fd, int level) {
  if (!zl_ready()) return NULL;
  pprof *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->fd = fd;
  /* windowBits 15 + 16: a gzip header and trailer rather than zlib's. */
  if (zl.deflate_init2_(&p->z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
                        (int)sizeof(z_stream)) != Z_OK) {
    free(p);
    return NULL;
  }
  p->z_live = 1;
  if (pprof_string(p, "") != 0 || p->err) {
    pprof_free(p);
    return NULL;
  }
  return p;
}

void pprof_free(pprof *p) {
  if (!p) return;
  if (p->z_live) zl.deflate_end(&p->z);
  pb_free(&p->body);
  pb_free(&p->sub);
  pb_free(&p->sub2);
  free(p->chars);
  free(p->offs);
  free(p->slots);
  free(p->comments);
  free(p);
}

static uint64_t hash_str(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3u;
  return h;
}

static int grow_slots(pprof *p) {
  size_t n = p->nslots ? p->nslots * 2 : 1024;
  uint32_t *slots = calloc(n, sizeof *slots);
  if (!slots) return -1;
  for (size_t i = 0; i < p->nstr; i++) {
    const char *s = p->chars + p->offs[i];
    size_t j = hash_str(s, strlen(s)) & (n - 1);
    while (slots[j]) j = (j + 1) & (n - 1);
    slots[j] = (uint32_t)(i + 1);
  }
  free(p->slots);
  p->slots = slots;
  p->nslots = n;
  return 0;
}

int64_t pprof_string(pprof *p, const char *s) {
  if (!s) s = "";
  if (p->err) return 0;
  size_t n = strlen(s);
  /* Keep the table at most half full so probe runs stay short. */
  if ((p->nstr + 1) * 2 > p->nslots && grow_slots(p)) goto nomem;
  size_t j = hash_str(s, n) & (p->nslots - 1);
  for (; p->slots[j]; j = (j + 1) & (p->nslots - 1)) {
    const char *t = p->chars + p->offs[p->slots[j] - 1];
    if (strcmp(s, t) == 0) return (int64_t)p->slots[j] - 1;
  }
  if (p->nstr >= UINT32_MAX - 1) goto nomem;
  if (p->nstr == p->offs_cap) {
    size_t cap = p->offs_cap ? p->offs_cap * 2 : 256;
    size_t *offs = realloc(p->offs, cap * sizeof *offs);
    if (!offs) goto nomem;
    p->offs = offs;
    p->offs_cap = cap;
  }
  if (p->chars_cap - p->chars_len < n + 1) {
    size_t cap = p->chars_cap ? p->chars_cap : 4096;
    while (cap - p->chars_len < n + 1) cap *= 2;
    char *chars = realloc(p->chars, cap);
    if (!chars) goto nomem;
    p->chars = chars;
    p->chars_cap = cap;
  }
  memcpy(p->chars + p->chars_len, s, n + 1);
  p->offs[p->nstr] = p->chars_len;
  p->chars_len += n + 1;
  p->slots[j] = (uint32_t)(++p->nstr);
  return (int64_t)p->nstr - 1;
nomem:
  fail(p, ENOMEM);
  return 0;
}

static void value_type(pprof *p, uint32_t field, const char *type, const char *unit) {
  int64_t t = pprof_string(p, type), u = pprof_string(p, unit);
  pb_int(&p->sub, 1, t);
  pb_int(&p->sub, 2, u);
  emit_sub(p, field);
}

void pprof_sample_type(pprof *p, const char *type, const char *unit) {
  value_type(p, 1, type, unit);
}

void pprof_period_type(pprof *p, const char *type, const char *unit) {
  value_type(p, 11, type, unit);
}

/* Samples are most of a profile: each is sized first and written straight
 * into the body, without a scratch copy. */
void pprof_sample(pprof *p, const uint64_t *location_ids, size_t nlocs, const int64_t *values,
                  size_t nvalues, const pprof_label *labels, size_t nlabels) {
  if (p->err) return;
  /* int64 values are encoded as the varint of their two's complement. */
  uint64_t small[16], *v = nvalues <= 16 ? small : malloc(nvalues * sizeof *v);
  if (!v) {
    fail(p, ENOMEM);
    return;
  }
  for (size_t i = 0; i < nvalues; i++) v[i] = (uint64_t)values[i];
  for (size_t i = 0; i < nlabels; i++) {
    pb_int(&p->sub2, 1, labels[i].key);
    pb_int(&p->sub2, 2, labels[i].str);
    pb_int(&p->sub2, 3, labels[i].num);
    pb_int(&p->sub2, 4, labels[i].num_unit);
    pb_bytes(&p->sub, 3, p->sub2.p, p->sub2.len);
    p->sub2.len = 0;
  }
  size_t loc_len, val_len;
  size_t size = packed_size(1, location_ids, nlocs, &loc_len) +
                packed_size(2, v, nvalues, &val_len) + p->sub.len;
  pb_buf *b = &p->body;
  if (!p->sub.failed && !p->sub2.failed &&
      pb_reserve(b, size + 2 * varint_size(size) + 1) == 0) {
    uint8_t *q = put_varint(b->p + b->len, 2u << 3 | WIRE_LEN);
    q = put_varint(q, size);
    q = put_packed(q, 1, location_ids, nlocs, loc_len);
    q = put_packed(q, 2, v, nvalues, val_len);
    if (p->sub.len) memcpy(q, p->sub.p, p->sub.len);
    b->len = (size_t)(q + p->sub.len - b->p);
  }
  p->sub.len = 0;
  if (v != small) free(v);
  if (b->failed || p->sub.failed || p->sub2.failed) fail(p, ENOMEM);
  else if (b->len >= FLUSH_AT) flush_body(p, 0);
}

void pprof_mapping_add(pprof *p, const pprof_mapping *m) {
  pb_uint(&p->sub, 1, m->id);
  pb_uint(&p->sub, 2, m->memory_start);
  pb_uint(&p->sub, 3, m->memory_limit);
  pb_uint(&p->sub, 4, m->file_offset);
  pb_int(&p->sub, 5, m->filename);
  pb_int(&p->sub, 6, m->build_id);
  pb_bool(&p->sub, 7, m->has_functions);
  pb_bool(&p->sub, 8, m->has_filenames);
  pb_bool(&p->sub, 9, m->has_line_numbers);
  pb_bool(&p->sub, 10, m->has_inline_frames);
  emit_sub(p, 3);
}

void pprof_location(pprof *p, uint64_t id, uint64_t mapping_id, uint64_t address,
                    const pprof_line *lines, size_t nlines) {
  pb_uint(&p->sub, 1, id);
  pb_uint(&p->sub, 2, mapping_id);
  pb_uint(&p->sub, 3, address);
  for (size_t i = 0; i < nlines; i++) {
    pb_uint(&p->sub2, 1, lines[i].function_id);
    pb_int(&p->sub2, 2, lines[i].line);
    pb_int(&p->sub2, 3, lines[i].column);
    pb_bytes(&p->sub, 4, p->sub2.p, p->sub2.len);
    p->sub2.len = 0;
  }
  emit_sub(p, 4);
}

void pprof_function(pprof *p, uint64_t id, const char *name, const char *system_name,
                    const char *filename, int64_t start_line) {
  int64_t n = pprof_string(p, name), s = pprof_string(p, system_name),
          f = pprof_string(p, filename);
  pb_uint(&p->sub, 1, id);
  pb_int(&p->sub, 2, n);
  pb_int(&p->sub, 3, s);
  pb_int(&p->sub, 4, f);
  pb_int(&p->sub, 5, start_line);
  emit_sub(p, 5);
}

void pprof_comment(pprof *p, const char *text) {
  int64_t s = pprof_string(p, text);
  if (p->err) return;
  /* Kept until the end to be written as one packed field. */
  if (p->ncomments == p->comments_cap) {
    size_t cap = p->comments_cap ? p->comments_cap * 2 : 8;
    uint64_t *c = realloc(p->comments, cap * sizeof *c);
    if (!c) {
      fail(p, ENOMEM);
      return;
    }
    p->comments = c;
    p->comments_cap = cap;
  }
  p->comments[p->ncomments++] = (uint64_t)s;
}

void pprof_scalar(pprof *p, uint32_t field, int64_t v) { pb_int(&p->body, field, v); }

int pprof_finish(pprof *p) {
  pb_packed(&p->body, 13, p->comments, p->ncomments);
  for (size_t i = 0; i < p->nstr && !p->err; i++) {
    const char *s = p->chars + p->offs[i];
    pb_bytes(&p->body, 6, s, strlen(s));
    if (p->body.len >= FLUSH_AT) flush_body(p, 0);
  }
  flush_body(p, 1);
  return p->err;
}

void pprof_sizes(const pprof *p, uint64_t *compressed, uint64_t *encoded) {
  if (compressed) *compressed = p->written;
  if (encoded) *encoded = p->encoded;
}
