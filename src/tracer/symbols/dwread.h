/* Bounded readers of the DWARF data in a loaded object's unwind tables
 * (.eh_frame_hdr, .eh_frame): shared by ehframe.c, which finds a code
 * address's FDE, and cfi.c, which runs its call-frame instructions. A
 * cursor never reads past its end: a read that would sets `bad`, and
 * returns 0. Internal. */
#ifndef MT_TRACER_DWREAD_H
#define MT_TRACER_DWREAD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* DWARF pointer encodings: the value's format (low 4 bits), and what it is
 * relative to (the next 3) */
enum {
  PE_ABSPTR = 0x00, PE_ULEB128 = 0x01, PE_UDATA2 = 0x02, PE_UDATA4 = 0x03, PE_UDATA8 = 0x04,
  PE_SLEB128 = 0x09, PE_SDATA2 = 0x0a, PE_SDATA4 = 0x0b, PE_SDATA8 = 0x0c,
  PE_PCREL = 0x10, PE_DATAREL = 0x30, PE_OMIT = 0xff
};

/* A reader over [p, end) of the object's mapping. */
typedef struct cursor {
  const unsigned char *p, *end;
  int bad;
} cursor;

static inline int take(cursor *c, void *out, size_t n) {
  if (c->bad || (size_t)(c->end - c->p) < n) return c->bad = 1, 0;
  memcpy(out, c->p, n);
  c->p += n;
  return 1;
}

static inline uint8_t u8(cursor *c) {
  uint8_t v = 0;
  take(c, &v, 1);
  return v;
}

static inline uint64_t uleb(cursor *c) {
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    uint8_t b = u8(c);
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  c->bad = 1;
  return 0;
}

static inline int64_t sleb(cursor *c) {
  uint64_t v = 0;
  unsigned shift = 0;
  uint8_t b;
  do {
    if (shift >= 64) return c->bad = 1, 0;
    b = u8(c);
    v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
  } while (b & 0x80);
  if (shift < 64 && (b & 0x40)) v |= ~UINT64_C(0) << shift;
  return (int64_t)v;
}

/* A value of format enc & 0x0f; its application is the caller's. The
 * fixed-size formats come in pairs, the signed one with bit 3 set. */
static inline uint64_t value(cursor *c, uint8_t enc) {
  int is_signed = (enc & 0x08) != 0;
  switch (enc & 0x0f) {
  case PE_ABSPTR:
  case PE_UDATA8:
  case PE_SDATA8: {
    uint64_t v = 0;
    take(c, &v, 8);
    return v;
  }
  case PE_UDATA4:
  case PE_SDATA4: {
    uint32_t v = 0;
    take(c, &v, 4);
    return is_signed ? (uint64_t)(int64_t)(int32_t)v : v;
  }
  case PE_UDATA2:
  case PE_SDATA2: {
    uint16_t v = 0;
    take(c, &v, 2);
    return is_signed ? (uint64_t)(int64_t)(int16_t)v : v;
  }
  case PE_ULEB128: return uleb(c);
  case PE_SLEB128: return (uint64_t)sleb(c);
  default: c->bad = 1; return 0;
  }
}

/* An encoded pointer: absolute, or relative to where it is stored (pcrel)
 * or to `data` (datarel). Other applications are not handled. */
static inline uint64_t pointer(cursor *c, uint8_t enc, uintptr_t data) {
  if (enc & 0x80) return c->bad = 1, 0; /* indirect: never in these tables */
  uintptr_t at = (uintptr_t)c->p;
  uint64_t v = value(c, enc);
  switch (enc & 0x70) {
  case 0: return v;
  case PE_PCREL: return v + at;
  case PE_DATAREL: return v + data;
  default: c->bad = 1; return 0;
  }
}

#endif
