/* Little-endian loads and stores, and the checked cursors the codecs use.
 *
 * The trace format is little-endian whatever the host; these helpers say so
 * explicitly (byte by byte, which compilers turn into single moves). */
#ifndef MT_FORMAT_BYTES_H
#define MT_FORMAT_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t mt__ld16(const uint8_t *p) {
  return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}
static inline uint32_t mt__ld32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}
static inline uint64_t mt__ld64(const uint8_t *p) {
  return (uint64_t)mt__ld32(p) | (uint64_t)mt__ld32(p + 4) << 32;
}
static inline void mt__st16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static inline void mt__st32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}
static inline void mt__st64(uint8_t *p, uint64_t v) {
  mt__st32(p, (uint32_t)v);
  mt__st32(p + 4, (uint32_t)(v >> 32));
}

/* A read cursor over untrusted bytes. Every getter checks the bound and
 * sets `bad` instead of reading past it; callers test `bad` once per field
 * group (a failed cursor yields zeros, which are always safe to use). */
typedef struct mt__rd {
  const uint8_t *p, *end;
  int bad;
} mt__rd;

static inline int mt__rd_need(mt__rd *c, size_t n) {
  if ((size_t)(c->end - c->p) < n) {
    c->bad = 1;
    c->p = c->end;
    return 0;
  }
  return 1;
}
static inline uint8_t mt__get8(mt__rd *c) {
  if (!mt__rd_need(c, 1)) return 0;
  return *c->p++;
}
static inline uint16_t mt__get16(mt__rd *c) {
  if (!mt__rd_need(c, 2)) return 0;
  uint16_t v = mt__ld16(c->p);
  c->p += 2;
  return v;
}
static inline uint32_t mt__get32(mt__rd *c) {
  if (!mt__rd_need(c, 4)) return 0;
  uint32_t v = mt__ld32(c->p);
  c->p += 4;
  return v;
}
static inline uint64_t mt__get64(mt__rd *c) {
  if (!mt__rd_need(c, 8)) return 0;
  uint64_t v = mt__ld64(c->p);
  c->p += 8;
  return v;
}
/* vint: one byte 0..252, or a tag 253/254/255 then a 16-bit unsigned,
 * 32-bit signed or 64-bit value (memtrace's encoding: negative numbers are
 * written as sign-extended 32 or 64-bit values). */
static inline int64_t mt__getvint(mt__rd *c) {
  uint8_t t = mt__get8(c);
  if (t < 253) return t;
  if (t == 253) return mt__get16(c);
  if (t == 254) return (int32_t)mt__get32(c);
  return (int64_t)mt__get64(c);
}
/* A NUL-terminated string inside the cursor's range; NULL (and `bad`) when
 * the terminator is missing, with the cursor left at the string's start so
 * that an error names where the string began. */
static inline const char *mt__getstr(mt__rd *c, size_t *len) {
  const uint8_t *z = memchr(c->p, 0, (size_t)(c->end - c->p));
  if (!z) {
    c->bad = 1;
    return NULL;
  }
  const char *s = (const char *)c->p;
  *len = (size_t)(z - c->p);
  c->p = z + 1;
  return s;
}

/* A write cursor into a buffer the writer sized so that no event can
 * overflow it (see writer.c); the asserts document that invariant. */
typedef struct mt__wr {
  uint8_t *p, *end, *start;
} mt__wr;

static inline size_t mt__wr_pos(const mt__wr *w) { return (size_t)(w->p - w->start); }
static inline size_t mt__wr_left(const mt__wr *w) { return (size_t)(w->end - w->p); }
static inline void mt__put8(mt__wr *w, uint8_t v) { *w->p++ = v; }
static inline void mt__put16(mt__wr *w, uint16_t v) { mt__st16(w->p, v); w->p += 2; }
static inline void mt__put32(mt__wr *w, uint32_t v) { mt__st32(w->p, v); w->p += 4; }
static inline void mt__put64(mt__wr *w, uint64_t v) { mt__st64(w->p, v); w->p += 8; }
static inline void mt__putvint(mt__wr *w, int64_t v) {
  if (v >= 0 && v <= 252) {
    mt__put8(w, (uint8_t)v);
  } else if (v >= 0 && v <= 0xffff) {
    mt__put8(w, 253);
    mt__put16(w, (uint16_t)v);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    mt__put8(w, 254);
    mt__put32(w, (uint32_t)(int32_t)v);
  } else {
    mt__put8(w, 255);
    mt__put64(w, (uint64_t)v);
  }
}
static inline void mt__putstr(mt__wr *w, const char *s, size_t len) {
  memcpy(w->p, s, len);
  w->p[len] = 0;
  w->p += len + 1;
}

#endif
