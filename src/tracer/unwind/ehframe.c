/* The FDE around a code address, from its object's .eh_frame_hdr
 * (ehframe.h).
 *
 * .eh_frame_hdr (the LSB's "Exception Frame Header"): a version byte (1),
 * the encodings of eh_frame_ptr, fde_count and the table, eh_frame_ptr,
 * fde_count, then fde_count pairs (initial location, FDE address) sorted by
 * location. Linkers write the table as 4-byte signed offsets from the
 * header's start (DW_EH_PE_datarel | DW_EH_PE_sdata4); anything else is
 * left to the caller (libunwind). The FDE found gives the range: its
 * pc_begin (which must equal the table's location) and pc_range, in the
 * pointer encoding its CIE's "zR..." augmentation names; and, for cfi.c,
 * its CIE's alignment factors and both instruction streams.
 *
 * Every read is bounded to the object's mapping as the loader records it
 * (for the main program, the span of its segments: see main_span): the
 * tables of a loaded object are what its own exception handling reads,
 * but a table pointing elsewhere must not make a sample fault. */
#include "ehframe.h"
#include "tracer/symbols/dwread.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/auxv.h>

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define HAVE_FIND_OBJECT 1
#else
#define HAVE_FIND_OBJECT 0
#endif

/* Reads the CIE at cie into *out (its alignment factors, return address
 * column, FDE pointer encoding, "S" and initial instructions): 1 if its
 * FDEs carry augmentation data ("z"), else 0; -1 if it cannot be read. */
static int read_cie(const unsigned char *cie, const unsigned char *end, mt__fde *out) {
  cursor c = {cie, end, 0};
  uint32_t len32 = 0, id = 0;
  take(&c, &len32, 4);
  if (c.bad || len32 == 0xffffffffu) return -1; /* 64-bit DWARF: not emitted on x86-64 */
  if (len32 > (size_t)(end - c.p)) return -1;
  const unsigned char *cie_end = c.p + len32;
  c.end = cie_end;
  take(&c, &id, 4);
  if (c.bad || id != 0) return -1;
  uint8_t version = u8(&c);
  const unsigned char *aug = c.p;
  while (!c.bad && u8(&c) != 0) {} /* the augmentation string */
  if (c.bad || (version != 1 && version != 3)) return -1;
  if (aug[0] != 0 && aug[0] != 'z') return -1;
  out->code_align = uleb(&c);
  out->data_align = sleb(&c);
  out->ra_reg = version == 1 ? u8(&c) : (unsigned)uleb(&c);
  out->enc = PE_ABSPTR;
  out->signal = 0;
  if (aug[0] == 'z') {
    uint64_t len = uleb(&c); /* the augmentation data's length */
    if (c.bad || len > (size_t)(c.end - c.p)) return -1;
    const unsigned char *data_end = c.p + len;
    for (const unsigned char *a = aug + 1; *a && !c.bad; a++) {
      switch (*a) {
      case 'R': out->enc = u8(&c); break;
      case 'L': u8(&c); break;
      case 'P': {
        uint8_t penc = u8(&c);
        if (penc == PE_OMIT || (penc & 0x70) == 0x50) return -1; /* 0x50: aligned */
        value(&c, penc); /* the personality routine: skipped */
        break;
      }
      case 'S': out->signal = 1; break; /* a signal frame */
      case 'B': break;                  /* AArch64's B key */
      default: return -1;               /* its data's length unknown: stop */
      }
    }
    if (c.bad || c.p > data_end) return -1;
    c.p = data_end;
  }
  if (c.bad) return -1;
  out->cie_insns = c.p;
  out->cie_end = cie_end;
  return aug[0] == 'z';
}

#if HAVE_FIND_OBJECT
/* The span of the main program's loaded segments, from its program
 * headers (the auxiliary vector's: no lock). For the main program
 * _dl_find_object gives the bounds of the segment holding the address
 * only, where a non-PIE executable's tables lie in another (node's). */
static void main_span(uintptr_t *lo, uintptr_t *hi) {
  static _Atomic uintptr_t span_lo, span_hi; /* the same in every thread */
  if ((*hi = atomic_load_explicit(&span_hi, memory_order_acquire)) != 0) {
    *lo = atomic_load_explicit(&span_lo, memory_order_relaxed);
    return;
  }
  const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
  size_t n = (size_t)getauxval(AT_PHNUM);
  uintptr_t bias = 0, l = UINTPTR_MAX, h = 0;
  for (size_t i = 0; ph && i < n; i++)
    if (ph[i].p_type == PT_PHDR) bias = (uintptr_t)ph - ph[i].p_vaddr;
  for (size_t i = 0; ph && i < n; i++) {
    if (ph[i].p_type != PT_LOAD) continue;
    if (ph[i].p_vaddr + bias < l) l = ph[i].p_vaddr + bias;
    if (ph[i].p_vaddr + ph[i].p_memsz + bias > h) h = ph[i].p_vaddr + ph[i].p_memsz + bias;
  }
  if (h <= l) l = h = 1; /* none: an empty span, found again never */
  atomic_store_explicit(&span_lo, l, memory_order_relaxed);
  atomic_store_explicit(&span_hi, h, memory_order_release);
  *lo = l, *hi = h;
}
#endif

int mt__fde_in(const unsigned char *hdr, const unsigned char *lo, const unsigned char *end,
               uintptr_t pc, mt__fde *out) {
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
  if (f.bad || len32 == 0 || len32 == 0xffffffffu || len32 > (size_t)(end - f.p)) return -1;
  f.end = f.p + len32;
  const unsigned char *cie_field = f.p;
  take(&f, &cie_off, 4);
  if (f.bad || cie_off == 0) return -1; /* a CIE, not an FDE */
  uintptr_t cie = (uintptr_t)cie_field - cie_off;
  if (cie < (uintptr_t)lo || cie >= (uintptr_t)end) return -1;
  int z = read_cie((const unsigned char *)cie, end, out);
  if (z < 0) return -1;
  uint64_t begin = pointer(&f, out->enc, (uintptr_t)hdr);
  uint64_t range = value(&f, out->enc); /* a length: the format alone */
  /* the code described lies in the object (is_sigreturn reads it) */
  if (f.bad || begin != start || start < (uintptr_t)lo || start >= (uintptr_t)end ||
      range > (uintptr_t)end - start)
    return -1;
  if (z) { /* the FDE's augmentation data (the LSDA): skipped */
    uint64_t len = uleb(&f);
    if (f.bad || len > (size_t)(f.end - f.p)) return -1;
    f.p += len;
  }
  out->start = start;
  out->end = start + range;
  out->insns = f.p;
  out->insns_end = f.end;
  out->hdr = (uintptr_t)hdr;
  out->obj_lo = lo;
  out->obj_hi = end;
  return pc < out->end ? 1 : 0;
}

int mt__fde_of(uintptr_t pc, mt__fde *out) {
#if HAVE_FIND_OBJECT
  struct dl_find_object fo;
  if (_dl_find_object((void *)pc, &fo) != 0 || !fo.dlfo_eh_frame) return -1;
  const unsigned char *lo = fo.dlfo_map_start, *end = fo.dlfo_map_end;
  const unsigned char *hdr = fo.dlfo_eh_frame;
  if (hdr < lo || hdr >= end) { /* the main program's tables, in another segment */
    uintptr_t mlo, mhi;
    main_span(&mlo, &mhi);
    if ((uintptr_t)hdr < mlo || (uintptr_t)hdr >= mhi || pc < mlo || pc >= mhi) return -1;
    lo = (const unsigned char *)mlo, end = (const unsigned char *)mhi;
  }
  return mt__fde_in(hdr, lo, end, pc, out);
#else
  (void)pc;
  (void)out;
  return -1;
#endif
}

int mt__fde_range_of(uintptr_t pc, mt__fde_range *out) {
  mt__fde f = {0};
  int found = mt__fde_of(pc, &f);
  if (found >= 0) *out = (mt__fde_range){f.start, f.end};
  return found;
}
