/* libFuzzer target: the unwinder's reading of an object's unwind tables
 * (src/tracer/unwind/ehframe.c: .eh_frame_hdr's search table, the FDE and its CIE)
 * and its step by their call-frame instructions (src/tracer/unwind/cfi.c). Those
 * tables are read inside the profiled program, at its samples, from
 * whatever objects it maps: a corrupt one must not make a sample fault.
 *
 * Input: a 16-byte header, then the object's image (its bytes as mapped,
 * offsets being addresses from its start). The header, little-endian: the
 * offset of .eh_frame_hdr (u32) and of the code address asked about (u32),
 * a flags byte (bit 0: the frame was interrupted there, not a call's return
 * address), the offsets of the frame's rsp and rbp in the stack (u16 each,
 * in bytes), and 3 bytes unused. The stack, 4 KiB, is the image's first
 * 4 KiB again (whatever is there: table bytes, code, zeros), its words read
 * as return addresses and saved rbp values. A step that gives a caller in
 * the image is followed by a step from there, up to 8.
 *
 * Checks: memory safety and UBSan (the image and the stack are each
 * allocated at their exact size, so a read past either is caught); an FDE
 * found holds the address and points into the image; a step taken moves
 * to a CFA above the frame's and within the stack; a step refused leaves
 * the frame as it was. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/unwind/cfi.h"
#include "tracer/unwind/ehframe.h"

#define HEADER 16
#define STACK_BYTES 4096
#define MAX_STEPS 8

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static int in(const void *p, const unsigned char *lo, const unsigned char *hi) {
  return (const unsigned char *)p >= lo && (const unsigned char *)p <= hi;
}

/* The FDE for pc, checked; 1 if one holds it. */
static int find(const unsigned char *obj, size_t n, uintptr_t hdr_off, uintptr_t pc, mt__fde *fde) {
  const unsigned char *end = obj + n;
  if (mt__fde_in(obj + hdr_off, obj, end, pc, fde) != 1) return 0;
  if (pc < fde->start || pc >= fde->end || fde->start < (uintptr_t)obj ||
      fde->end > (uintptr_t)end || fde->obj_lo != obj || fde->obj_hi != end ||
      !in(fde->cie_insns, obj, fde->cie_end) || !in(fde->cie_end, obj, end) ||
      !in(fde->insns, obj, fde->insns_end) || !in(fde->insns_end, obj, end))
    abort();
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size <= HEADER) return 0;
  size_t n = size - HEADER;
  unsigned char *obj = malloc(n);
  uintptr_t *stack = malloc(STACK_BYTES);
  if (!obj || !stack) abort();
  memcpy(obj, data + HEADER, n);
  memset(stack, 0, STACK_BYTES);
  memcpy(stack, obj, n < STACK_BYTES ? n : STACK_BYTES);
  uintptr_t lo = (uintptr_t)stack, hi = lo + STACK_BYTES;

  uintptr_t hdr_off = le32(data) % n;
  mt__cfi_frame f = {(uintptr_t)obj + le32(data + 4) % n, lo + le16(data + 9) % STACK_BYTES,
                     lo + le16(data + 11) % STACK_BYTES, data[8] & 1};
  for (int i = 0; i < MAX_STEPS; i++) {
    mt__fde fde;
    uintptr_t at = f.interrupted ? f.pc : f.pc - 1;
    if (at < (uintptr_t)obj || at >= (uintptr_t)obj + n || !find(obj, n, hdr_off, at, &fde)) break;
    mt__cfi_frame before = f;
    int r = mt__cfi_step_fde(&fde, &f, lo, hi);
    if (r != 1) {
      if (f.pc != before.pc || f.sp != before.sp || f.fp != before.fp ||
          f.interrupted != before.interrupted)
        abort();
      break;
    }
    if (f.sp <= before.sp || f.sp > hi) abort();
    if (f.pc == 0) break;
  }
  free(stack);
  free(obj);
  return 0;
}
