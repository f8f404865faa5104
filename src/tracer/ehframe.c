/* The FDE range around a code address, from its object's .eh_frame_hdr
 * (ehframe.h).
 *
 * .eh_frame_hdr (the LSB's "Exception Frame Header"): a version byte (1),
 * the encodings of eh_frame_ptr, fde_count and the table, eh_frame_ptr,
 * fde_count, then fde_count pairs (initial location, FDE address) sorted by
 * location. Linkers write the table as 4-byte signed offsets from the
 * header's start (DW_EH_PE_datarel | DW_EH_PE_sdata4); anything else is
 * left to libunwind. The FDE found gives the range: its pc_begin (which
 * must equal the table's location) and pc_range, in the pointer encoding
 * its CIE's "zR..." augmentation names.
 *
 * Every read is bounded to the object's mapping as the loader records it:
 * the tables of a loaded object are what its own exception handling reads,
 * but a table pointing elsewhere must not make a sample fault. */
#include "ehframe.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define HAVE_FIND_OBJECT 1
#else
#define HAVE_FIND_OBJECT 0
#endif

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

static int take(cursor *c, void *out, size_t n) {
  if (c->bad || (size_t)(c->end - c->p) < n) return c->bad = 1, 0;
  memcpy(out, c->p, n);
  c->p += n;
  return 1;
}

static uint8_t u8(cursor *c) {
  uint8_t v = 0;
  take(c, &v, 1);
  return v;
}

static uint64_t uleb(cursor *c) {
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    uint8_t b = u8(c);
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  c->bad = 1;
  return 0;
}

static int64_t sleb(cursor *c) {
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
static uint64_t value(cursor *c, uint8_t enc) {
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
static uint64_t pointer(cursor *c, uint8_t enc, uintptr_t data) {
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

/* The FDE pointer encoding of the CIE at cie ("R" in its augmentation;
 * absolute without one); -1 if it cannot be read. */
static int fde_encoding(const unsigned char *cie, const unsigned char *end) {
  cursor c = {cie, end, 0};
  uint32_t len32 = 0, id = 0;
  take(&c, &len32, 4);
  if (len32 == 0xffffffffu) return -1; /* 64-bit DWARF: not emitted on x86-64 */
  take(&c, &id, 4);
  if (c.bad || id != 0) return -1;
  uint8_t version = u8(&c);
  const unsigned char *aug = c.p;
  while (!c.bad && u8(&c) != 0) {} /* the augmentation string */
  if (c.bad || (version != 1 && version != 3)) return -1;
  if (aug[0] == 0) return PE_ABSPTR;
  if (aug[0] != 'z') return -1;
  uleb(&c); /* code alignment */
  sleb(&c); /* data alignment */
  if (version == 1) u8(&c);
  else uleb(&c); /* return address register */
  uleb(&c);      /* the augmentation data's length */
  int enc = PE_ABSPTR;
  for (const unsigned char *a = aug + 1; *a && !c.bad; a++) {
    switch (*a) {
    case 'R': enc = u8(&c); break;
    case 'L': u8(&c); break;
    case 'P': {
      uint8_t penc = u8(&c);
      if (penc == PE_OMIT || (penc & 0x70) == 0x50) return -1; /* 0x50: aligned */
      value(&c, penc); /* the personality routine: skipped */
      break;
    }
    case 'S': /* a signal frame */
    case 'B': /* AArch64's B key */
      break;
    default: return -1; /* its data's length unknown: stop */
    }
  }
  return c.bad ? -1 : enc;
}

int mt__fde_range_of(uintptr_t pc, mt__fde_range *out) {
#if HAVE_FIND_OBJECT
  struct dl_find_object fo;
  if (_dl_find_object((void *)pc, &fo) != 0 || !fo.dlfo_eh_frame) return -1;
  const unsigned char *lo = fo.dlfo_map_start, *end = fo.dlfo_map_end;
  const unsigned char *hdr = fo.dlfo_eh_frame;
  if (hdr < lo || hdr >= end) return -1;
  cursor c = {hdr, end, 0};
  uint8_t version = u8(&c), ptr_enc = u8(&c), count_enc = u8(&c), table_enc = u8(&c);
  if (c.bad || version != 1 || table_enc != (PE_DATAREL | PE_SDATA4) || ptr_enc == PE_OMIT ||
      count_enc == PE_OMIT)
    return -1;
  pointer(&c, ptr_enc, (uintptr_t)hdr); /* eh_frame_ptr: not needed */
  uint64_t count = pointer(&c, count_enc, (uintptr_t)hdr);
  if (c.bad || count == 0 || count > (uint64_t)(end - c.p) / 8) return -1;
  const unsigned char *table = c.p;

  /* the last entry whose location is at or below pc */
  int32_t loc;
  size_t a = 0, b = (size_t)count; /* entries below a are at or below pc, from b on above */
  while (a < b) {
    size_t m = a + (b - a) / 2;
    memcpy(&loc, table + m * 8, 4);
    if ((uintptr_t)hdr + (intptr_t)loc <= pc) a = m + 1;
    else b = m;
  }
  if (a == 0) return 0; /* below the first function described */
  int32_t fde_off;
  memcpy(&loc, table + (a - 1) * 8, 4);
  memcpy(&fde_off, table + (a - 1) * 8 + 4, 4);
  uintptr_t start = (uintptr_t)hdr + (intptr_t)loc;

  /* addresses compared as integers: an offset may point anywhere */
  uintptr_t fde = (uintptr_t)hdr + (intptr_t)fde_off;
  if (fde < (uintptr_t)lo || fde >= (uintptr_t)end) return -1;
  cursor f = {(const unsigned char *)fde, end, 0};
  uint32_t len32 = 0, cie_off = 0;
  take(&f, &len32, 4);
  if (len32 == 0 || len32 == 0xffffffffu) return -1;
  const unsigned char *cie_field = f.p;
  take(&f, &cie_off, 4);
  if (f.bad || cie_off == 0) return -1; /* a CIE, not an FDE */
  uintptr_t cie = (uintptr_t)cie_field - cie_off;
  if (cie < (uintptr_t)lo || cie >= (uintptr_t)end) return -1;
  int enc = fde_encoding((const unsigned char *)cie, end);
  if (enc < 0) return -1;
  uint64_t begin = pointer(&f, (uint8_t)enc, (uintptr_t)hdr);
  uint64_t range = value(&f, (uint8_t)enc); /* a length: the format alone */
  if (f.bad || begin != start) return -1;
  out->start = start;
  out->end = start + range;
  return pc < out->end ? 1 : 0;
#else
  (void)pc;
  (void)out;
  return -1;
#endif
}
