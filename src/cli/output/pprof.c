/* pprof profiles: protobuf encoding by hand, streamed through gzip. */
#include "pprof.h"

#include "base/containers.h"
#include "gzip_out.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
  /* one and two bytes without a loop: most location ids and keys */
  if (v < 0x80) {
    *q = (uint8_t)v;
    return q + 1;
  }
  if (v < 0x4000) {
    q[0] = (uint8_t)(v | 0x80);
    q[1] = (uint8_t)(v >> 7);
    return q + 2;
  }
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
  /* 7 bits a byte: (significant bits + 6) / 7, and 1 byte for 0; by
   * table, from the count of leading zeros (most of a profile's bytes are
   * varints sized before they are written) */
  static const uint8_t bytes_by_clz[64] = {
      10, 9, 9, 9, 9, 9, 9, 9, 8, 8, 8, 8, 8, 8, 8, 7, 7, 7, 7, 7, 7, 7,
      6, 6, 6, 6, 6, 6, 6, 5, 5, 5, 5, 5, 5, 5, 4, 4, 4, 4, 4, 4, 4, 3,
      3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1};
  return bytes_by_clz[__builtin_clzll(v | 1)];
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

/* A sample's parts (its ids, values, labels) are copied 16 bytes a step
 * rather than by memcpy calls of varying length: up to 15 bytes past each
 * part are read and written, which every buffer involved has beyond its
 * end. */
#define COPY_SLACK 16

static inline uint8_t *copy_part(uint8_t *q, const uint8_t *from, size_t n) {
  for (size_t o = 0; o < n; o += 16) memcpy(q + o, from + o, 16);
  return q + n;
}

/* Uncompressed bytes gathered before they are handed to the compressor:
 * large enough that it is called rarely, small enough not to matter. */
#define FLUSH_AT (256 * 1024)

struct pprof {
  int err;
  gz_out *gz;
  pb_buf body;      /* top-level fields not yet compressed         */
  pb_buf sub, sub2; /* scratch for a sub-message and its children  */
  pb_buf *label_sets; /* pprof_label_set's, encoded */
  size_t nlabel_sets, label_sets_cap;
  uint64_t encoded;
  /* The last sample's stack (outermost first), its location ids' encoding
   * (leaf first) and, for each d, the bytes of its d outermost frames: a
   * sample mostly shares its outer frames with the previous one, whose
   * encoding ends with theirs. The encoding ends at the end of ids (of
   * ids_cap bytes), so that the next one's new frames are written in
   * front of the shared ones, where they are. */
  uint32_t *last_stack;
  uint8_t *ids;
  size_t ids_cap;
  uint32_t *last_outer; /* n + 1 entries */
  size_t last_n, last_cap;
  uint64_t last_base;

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

static void flush_body(pprof *p) {
  if (p->body.failed) fail(p, ENOMEM);
  if (p->err) return;
  p->encoded += p->body.len;
  gz_write(p->gz, p->body.p, p->body.len);
  fail(p, gz_error(p->gz));
  p->body.len = 0;
}

/* Appends the scratch message `sub` as field `field` of the profile. */
static void emit_sub(pprof *p, uint32_t field) {
  if (p->sub.failed || p->sub2.failed) fail(p, ENOMEM);
  if (p->err) return;
  pb_bytes(&p->body, field, p->sub.p, p->sub.len);
  p->sub.len = 0;
  if (p->body.len >= FLUSH_AT) flush_body(p);
}

pprof *pprof_open(int fd, int level) {
  pprof *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->gz = gz_open(fd, level);
  if (!p->gz || pprof_string(p, "") != 0 || p->err) {
    pprof_free(p);
    return NULL;
  }
  return p;
}

void pprof_free(pprof *p) {
  if (!p) return;
  gz_free(p->gz);
  pb_free(&p->body);
  pb_free(&p->sub);
  pb_free(&p->sub2);
  for (size_t i = 0; i < p->nlabel_sets; i++) pb_free(&p->label_sets[i]);
  free(p->label_sets);
  free(p->last_stack);
  free(p->ids);
  free(p->last_outer);
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

int pprof_label_set(pprof *p, const pprof_label *labels, size_t nlabels) {
  if (p->err) return -1;
  if (p->nlabel_sets >= INT_MAX ||
      mt__grow((void **)&p->label_sets, &p->label_sets_cap, p->nlabel_sets + 1,
               sizeof *p->label_sets, 4)) {
    fail(p, ENOMEM);
    return -1;
  }
  pb_buf *lb = &p->label_sets[p->nlabel_sets];
  memset(lb, 0, sizeof *lb);
  for (size_t i = 0; i < nlabels; i++) {
    pb_int(&p->sub2, 1, labels[i].key);
    pb_int(&p->sub2, 2, labels[i].str);
    pb_int(&p->sub2, 3, labels[i].num);
    pb_int(&p->sub2, 4, labels[i].num_unit);
    pb_bytes(lb, 3, p->sub2.p, p->sub2.len);
    p->sub2.len = 0;
  }
  p->nlabel_sets++;
  pb_reserve(lb, COPY_SLACK); /* for copy_part */
  if (lb->failed || p->sub2.failed) {
    fail(p, ENOMEM);
    return -1;
  }
  return (int)(p->nlabel_sets - 1);
}

/* Room for the ids of a stack of n frames; the last encoding kept at the
 * end. 0, or -1 when out of memory. */
static int ids_room(pprof *p, size_t n) {
  if (n <= p->last_cap && p->last_outer) return 0;
  size_t cap = n * 2 + 8;
  uint32_t *st = realloc(p->last_stack, cap * sizeof *st);
  if (st) p->last_stack = st;
  uint32_t *outer = realloc(p->last_outer, (cap + 1) * sizeof *outer);
  if (outer) p->last_outer = outer;
  uint8_t *ids = st && outer ? malloc(cap * 10 + COPY_SLACK) : NULL;
  if (!ids) return -1;
  size_t kept = p->last_outer && p->last_n ? p->last_outer[p->last_n] : 0;
  if (kept) memcpy(ids + cap * 10 - kept, p->ids + p->ids_cap - kept, kept);
  if (!p->last_n) p->last_outer[0] = 0;
  free(p->ids);
  p->ids = ids;
  p->ids_cap = cap * 10;
  p->last_cap = cap;
  return 0;
}

/* The location ids of stack[0..n) leaf first, kept as the last sample's:
 * the frames past those it shares with the last sample are encoded in
 * front of the shared ones' bytes. `known`: frames the caller knows are
 * shared. Returns where they start (they end at p->ids + p->ids_cap), the
 * frames shared in *shared; NULL when out of memory. */
static const uint8_t *put_ids(pprof *p, const uint32_t *stack, size_t n, size_t known,
                              uint64_t base, size_t *shared) {
  size_t k = 0;
  if (base == p->last_base) {
    /* Samples mostly share most of their frames: past those known, four
     * ids compared at a time (16 bytes, two words), then the rest one by
     * one. */
    size_t m = n < p->last_n ? n : p->last_n;
    const uint32_t *last = p->last_stack;
    k = known < m ? known : m;
    while (k + 4 <= m && memcmp(stack + k, last + k, 4 * sizeof *stack) == 0) k += 4;
    while (k < m && stack[k] == last[k]) k++;
  }
  if (ids_room(p, n)) return NULL;
  uint32_t *outer = p->last_outer;
  uint8_t *q = p->ids + p->ids_cap - (k ? outer[k] : 0);
  outer[0] = 0;
  for (size_t d = k; d < n; d++) {
    uint64_t v = stack[d] + base;
    size_t len = varint_size(v);
    q -= len;
    put_varint(q, v);
    p->last_stack[d] = stack[d];
    outer[d + 1] = outer[d] + (uint32_t)len;
  }
  p->last_n = n;
  p->last_base = base;
  *shared = k;
  return q;
}

/* Samples are most of a profile: each is written in one pass straight into
 * the body, its location ids copied from where put_ids encoded them. */
size_t pprof_sample(pprof *p, const uint32_t *stack, size_t n, size_t known, uint64_t id_base,
                    const int64_t *values, size_t nvalues, int label_set) {
  if (p->err) return 0;
  if (nvalues > PPROF_MAX_VALUES || label_set >= (int)p->nlabel_sets) {
    fail(p, EINVAL);
    return 0;
  }
  const pb_buf *lb = label_set >= 0 ? &p->label_sets[label_set] : NULL;
  size_t lb_len = lb ? lb->len : 0;
  pb_buf *b = &p->body;
  size_t shared = 0;
  const uint8_t *ids = put_ids(p, stack, n, known, id_base, &shared);
  if (!ids) {
    fail(p, ENOMEM);
    return 0;
  }
  /* int64 values are the varints of their two's complement */
  uint8_t vals[PPROF_MAX_VALUES * 10 + COPY_SLACK], *v = vals;
  for (size_t i = 0; i < nvalues; i++) v = put_varint(v, (uint64_t)values[i]);
  size_t ids_len = (size_t)(p->ids + p->ids_cap - ids), val_len = (size_t)(v - vals);
  size_t size = (n ? 1 + varint_size(ids_len) + ids_len : 0) +
                (nvalues ? 1 + varint_size(val_len) + val_len : 0) + lb_len;
  if (pb_reserve(b, 1 + 10 + size + COPY_SLACK)) {
    fail(p, ENOMEM);
    return 0;
  }
  uint8_t *q = put_varint(b->p + b->len, 2u << 3 | WIRE_LEN);
  q = put_varint(q, size);
  if (n) {
    q = put_varint(q, 1u << 3 | WIRE_LEN);
    q = put_varint(q, ids_len);
    q = copy_part(q, ids, ids_len);
  }
  if (nvalues) {
    q = put_varint(q, 2u << 3 | WIRE_LEN);
    q = put_varint(q, val_len);
    q = copy_part(q, vals, val_len);
  }
  q = copy_part(q, lb ? lb->p : NULL, lb_len);
  b->len = (size_t)(q - b->p);
  if (b->len >= FLUSH_AT) flush_body(p);
  return shared;
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
    if (p->body.len >= FLUSH_AT) flush_body(p);
  }
  flush_body(p);
  if (!p->err) fail(p, gz_finish(p->gz));
  return p->err;
}

void pprof_sizes(const pprof *p, uint64_t *compressed, uint64_t *encoded) {
  if (compressed) *compressed = gz_written(p->gz);
  if (encoded) *encoded = p->encoded;
}
