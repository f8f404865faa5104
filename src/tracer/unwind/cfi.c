/* A step through one function's call-frame information (cfi.h).
 *
 * The FDE's rows are built by running its CIE's initial instructions, then
 * its own up to the address asked about (DWARF 5, section 6.4): a row says
 * how to compute the CFA (the caller's rsp on x86-64) and where each
 * register of the caller is kept. Three columns matter here: the CFA, rbp
 * (column 6) and the return address (the CIE's column, 16). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* REG_RIP and friends */
#endif
#include "cfi.h"

#include <stdatomic.h>
#include <stddef.h>
#include <sys/ucontext.h>

#include "ehframe.h"
#include "tracer/symbols/dwread.h"

enum { REG_BP = 6, REG_SP = 7 }; /* DWARF's x86-64 register numbers */

/* How a column of the caller's registers is found. */
enum { R_SAME, R_UNDEF, R_OFFSET, R_VAL_OFFSET, R_UNKNOWN };
typedef struct rule {
  uint8_t kind;
  int64_t off; /* from the CFA */
} rule;

typedef struct row {
  unsigned cfa_reg;
  int64_t cfa_off;
  int cfa_unknown; /* an expression */
  rule bp, ra;
} row;

#define MAX_REMEMBERED 8 /* DW_CFA_remember_state's stack */

/* The rule of column reg, if one of those kept; NULL for the others. */
static rule *column(row *r, uint64_t reg, unsigned ra_reg) {
  if (reg == REG_BP) return &r->bp;
  if (reg == ra_reg) return &r->ra;
  return NULL;
}

static void set(row *r, uint64_t reg, unsigned ra_reg, uint8_t kind, int64_t off) {
  rule *c = column(r, reg, ra_reg);
  if (c) *c = (rule){kind, off};
}

/* DW_CFA_restore: column reg's rule back to the CIE's, `init`. */
static void restore(row *r, const row *init, uint64_t reg, unsigned ra_reg) {
  if (reg == REG_BP) r->bp = init->bp;
  else if (reg == ra_reg) r->ra = init->ra;
}

/* An operand times the CIE's data alignment factor, wrapping as the
 * machine does: a corrupt table's huge operands give a rule that a step
 * then refuses (out of the stack's bounds), not an overflow. */
static inline int64_t scaled(uint64_t v, int64_t da) { return (int64_t)(v * (uint64_t)da); }

/* Runs the instructions in [p, end) on *r. From the FDE's (loc set), stops
 * before the first row that starts past `at`. `init`: the row after the
 * CIE's instructions (DW_CFA_restore's), NULL while running those.
 * 0, or -1 on an instruction not understood or data that runs out. */
static int run(const mt__fde *f, const unsigned char *p, const unsigned char *end, row *r,
               const row *init, uintptr_t at) {
  cursor c = {p, end, 0};
  uintptr_t loc = f->start;
  row saved[MAX_REMEMBERED];
  size_t nsaved = 0;
  unsigned ra = f->ra_reg;
  int64_t da = f->data_align;
  while (c.p < c.end && !c.bad) {
    uint8_t op = u8(&c);
    uint64_t advance = 0, reg;
    switch (op >> 6) {
    case 1: advance = op & 0x3f; break; /* DW_CFA_advance_loc */
    case 2:                             /* DW_CFA_offset */
      set(r, op & 0x3f, ra, R_OFFSET, scaled(uleb(&c), da));
      continue;
    case 3: /* DW_CFA_restore */
      if (!init) return -1;
      restore(r, init, op & 0x3f, ra);
      continue;
    default: break;
    }
    if (op >> 6 == 0) switch (op) {
      case 0x00: continue; /* nop */
      case 0x01: {         /* set_loc */
        uintptr_t to = (uintptr_t)pointer(&c, f->enc, f->hdr);
        if (c.bad) return -1;
        if (init && to > at) return 0;
        loc = to;
        continue;
      }
      case 0x02: advance = u8(&c); break;
      case 0x03: {
        uint16_t v = 0;
        take(&c, &v, 2);
        advance = v;
        break;
      }
      case 0x04: {
        uint32_t v = 0;
        take(&c, &v, 4);
        advance = v;
        break;
      }
      case 0x05: /* offset_extended */
        reg = uleb(&c);
        set(r, reg, ra, R_OFFSET, scaled(uleb(&c), da));
        continue;
      case 0x06: /* restore_extended */
        reg = uleb(&c);
        if (!init) return -1;
        restore(r, init, reg, ra);
        continue;
      case 0x07: set(r, uleb(&c), ra, R_UNDEF, 0); continue;   /* undefined */
      case 0x08: set(r, uleb(&c), ra, R_SAME, 0); continue;    /* same_value */
      case 0x09:                                              /* register */
        reg = uleb(&c);
        uleb(&c);
        set(r, reg, ra, R_UNKNOWN, 0);
        continue;
      case 0x0a: /* remember_state */
        if (nsaved == MAX_REMEMBERED) return -1;
        saved[nsaved++] = *r;
        continue;
      case 0x0b: /* restore_state */
        if (nsaved == 0) return -1;
        *r = saved[--nsaved];
        continue;
      case 0x0c: /* def_cfa */
        r->cfa_reg = (unsigned)uleb(&c);
        r->cfa_off = (int64_t)uleb(&c);
        r->cfa_unknown = 0;
        continue;
      case 0x0d: /* def_cfa_register */
        r->cfa_reg = (unsigned)uleb(&c);
        r->cfa_unknown = 0;
        continue;
      case 0x0e: r->cfa_off = (int64_t)uleb(&c); continue; /* def_cfa_offset */
      case 0x0f: {                                         /* def_cfa_expression */
        uint64_t len = uleb(&c);
        if (len > (size_t)(c.end - c.p)) return -1;
        c.p += len;
        r->cfa_unknown = 1;
        continue;
      }
      case 0x10:   /* expression */
      case 0x16: { /* val_expression */
        reg = uleb(&c);
        uint64_t len = uleb(&c);
        if (c.bad || len > (size_t)(c.end - c.p)) return -1;
        c.p += len;
        set(r, reg, ra, R_UNKNOWN, 0);
        continue;
      }
      case 0x11: /* offset_extended_sf */
        reg = uleb(&c);
        set(r, reg, ra, R_OFFSET, scaled((uint64_t)sleb(&c), da));
        continue;
      case 0x12: /* def_cfa_sf */
        r->cfa_reg = (unsigned)uleb(&c);
        r->cfa_off = scaled((uint64_t)sleb(&c), da);
        r->cfa_unknown = 0;
        continue;
      case 0x13: r->cfa_off = scaled((uint64_t)sleb(&c), da); continue; /* def_cfa_offset_sf */
      case 0x14:                                       /* val_offset */
        reg = uleb(&c);
        set(r, reg, ra, R_VAL_OFFSET, scaled(uleb(&c), da));
        continue;
      case 0x15: /* val_offset_sf */
        reg = uleb(&c);
        set(r, reg, ra, R_VAL_OFFSET, scaled((uint64_t)sleb(&c), da));
        continue;
      case 0x2e: uleb(&c); continue; /* GNU_args_size */
      case 0x2f:                     /* GNU_negative_offset_extended */
        reg = uleb(&c);
        set(r, reg, ra, R_OFFSET, scaled(0 - uleb(&c), da));
        continue;
      default: return -1;
      }
    /* an advance: the row in effect at `at` is complete once the next one
     * would start past it */
    if (c.bad) return -1;
    if (!init) return -1; /* a CIE's instructions do not advance */
    uint64_t to = loc + advance * f->code_align;
    if (to > at) return 0;
    loc = (uintptr_t)to;
  }
  return c.bad ? -1 : 0;
}

/* The stack word at addr, if it lies in [lo, hi) and is aligned. */
static int read_word(uintptr_t addr, uintptr_t lo, uintptr_t hi, uintptr_t *out) {
  if ((addr & 7) || addr < lo || hi < 8 || addr > hi - 8) return 0;
  *out = *(const uintptr_t *)addr;
  return 1;
}

/* The C library's signal return trampoline (__restore_rt):
 * mov $15,%rax (rt_sigreturn); syscall. */
static int is_sigreturn(const mt__fde *f, uintptr_t pc) {
  static const unsigned char code[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
  if (pc < f->start || pc > f->end || f->end - pc < sizeof code) return 0;
  return memcmp((const void *)pc, code, sizeof code) == 0;
}

/* At the trampoline, rsp points to the ucontext the kernel saved: the
 * interrupted registers are there. */
static int signal_step(mt__cfi_frame *f, uintptr_t lo, uintptr_t hi) {
  uintptr_t gregs = f->sp + offsetof(ucontext_t, uc_mcontext.gregs);
  uintptr_t pc, sp, fp;
  if (!read_word(gregs + REG_RIP * 8, lo, hi, &pc) ||
      !read_word(gregs + REG_RSP * 8, lo, hi, &sp) ||
      !read_word(gregs + REG_RBP * 8, lo, hi, &fp) || sp <= f->sp || sp > hi)
    return -1;
  *f = (mt__cfi_frame){pc, sp, fp, 1};
  return 1;
}

/* ---- the rows found, cached by address ----
 *
 * Finding a row (the object, its FDE by binary search, the CIE, the
 * instructions up to the address) costs several times a cached step; a
 * walk through a program built without frame pointers takes one per
 * frame. So each row used is
 * kept, packed into one word, in a table shared by all threads, lock-free:
 * an entry is two words, the row and the address XOR the row, and a reader
 * takes it only if the XOR of what it read is the address it asks about. A
 * torn entry (words of two writers, or of a writer and a forget) fails that
 * test unless both rows are the same, when it is right anyway. Rows that
 * do not fit the packing, signal frames and code without tables are not
 * kept. After a library is unloaded other code may come to its addresses:
 * mt__cfi_forget.
 *
 * Two entries a set, the newer first: direct-mapped, two addresses of a
 * walk whose hashes meet evict each other at every walk, and each step
 * then finds its row anew; where they meet depends on the libraries' load
 * addresses, so bench/unwind.sh would vary from run to run. */
#define CACHE_BITS 10 /* sets: 1024 of 2 entries, 32 KiB */
static _Atomic uint64_t cache[1u << CACHE_BITS][2][2];
static _Atomic int cache_used; /* forgetting an untouched table would map its pages */
_Atomic unsigned long mt__cfi_uncached;

/* A row packed: bit 0 set (0 is an empty entry), bit 1 the CFA's register
 * (rbp), bit 2 the return address undefined, bits 3-4 rbp's rule kind,
 * bits 8-15 the return address's offset from the CFA / 8, bits 16-27
 * rbp's / 8, bits 32-63 the CFA's offset. The row's CFA is rsp- or
 * rbp-based (row_at keeps no other). */
static int pack(const row *r, uint64_t *out) {
  if (r->cfa_off < INT32_MIN || r->cfa_off > INT32_MAX) return 0;
  int ra_undef = r->ra.kind == R_UNDEF;
  if (!ra_undef && r->ra.kind != R_OFFSET) return 0;
  if (r->bp.kind > R_VAL_OFFSET) return 0;
  int64_t ra8 = ra_undef ? 0 : r->ra.off / 8, bp8 = r->bp.off / 8;
  if ((!ra_undef && r->ra.off % 8) || r->bp.off % 8 || ra8 < -128 || ra8 > 127 || bp8 < -2048 ||
      bp8 > 2047)
    return 0;
  *out = 1 | (uint64_t)(r->cfa_reg == REG_BP) << 1 | (uint64_t)ra_undef << 2 |
         (uint64_t)r->bp.kind << 3 | (uint64_t)(uint8_t)ra8 << 8 |
         (uint64_t)((uint16_t)bp8 & 0xfff) << 16 | (uint64_t)(uint32_t)(int32_t)r->cfa_off << 32;
  return 1;
}

static void unpack(uint64_t w, row *r) {
  r->cfa_reg = w & 2 ? REG_BP : REG_SP;
  r->cfa_off = (int32_t)(uint32_t)(w >> 32);
  r->cfa_unknown = 0;
  r->ra = (w & 4) ? (rule){R_UNDEF, 0} : (rule){R_OFFSET, (int64_t)(int8_t)(uint8_t)(w >> 8) * 8};
  int64_t bp8 = (int64_t)((w >> 16) & 0xfff);
  if (bp8 & 0x800) bp8 -= 0x1000;
  r->bp = (rule){(uint8_t)((w >> 3) & 3), bp8 * 8};
}

unsigned mt__cfi_cache_set(uintptr_t at) {
  return (unsigned)(((uint64_t)at * 0x9e3779b97f4a7c15ull) >> (64 - CACHE_BITS));
}

static int cache_get(uintptr_t at, row *r) {
  _Atomic uint64_t(*set)[2] = cache[mt__cfi_cache_set(at)];
  for (int way = 0; way < 2; way++) {
    uint64_t w = atomic_load_explicit(&set[way][0], memory_order_relaxed);
    uint64_t x = atomic_load_explicit(&set[way][1], memory_order_relaxed);
    if (w && (x ^ w) == (uint64_t)at) {
      unpack(w, r);
      return 1;
    }
  }
  return 0;
}

/* The new entry goes first, the first one second (the second's is gone).
 * A reader meeting the move halfway reads a torn entry: refused, above. */
static void cache_put(uintptr_t at, const row *r) {
  uint64_t w;
  if (!pack(r, &w)) return;
  if (!atomic_load_explicit(&cache_used, memory_order_relaxed))
    atomic_store_explicit(&cache_used, 1, memory_order_relaxed);
  _Atomic uint64_t(*set)[2] = cache[mt__cfi_cache_set(at)];
  for (int i = 0; i < 2; i++)
    atomic_store_explicit(&set[1][i], atomic_load_explicit(&set[0][i], memory_order_relaxed),
                          memory_order_relaxed);
  atomic_store_explicit(&set[0][0], w, memory_order_relaxed);
  atomic_store_explicit(&set[0][1], w ^ (uint64_t)at, memory_order_relaxed);
}

void mt__cfi_forget(void) {
  if (!atomic_load_explicit(&cache_used, memory_order_relaxed)) return;
  for (size_t i = 0; i < sizeof cache / sizeof *cache; i++)
    for (int way = 0; way < 2; way++) {
      atomic_store_explicit(&cache[i][way][0], 0, memory_order_relaxed);
      atomic_store_explicit(&cache[i][way][1], 0, memory_order_relaxed);
    }
}

/* The row of fde in effect at `at` (the frame at pc's). 1; 0 for a signal
 * frame's trampoline; -1 where it cannot be told or its CFA is not rsp- or
 * rbp-based. */
static int fde_row(const mt__fde *fde, uintptr_t pc, uintptr_t at, row *r) {
  if (fde->signal && is_sigreturn(fde, pc)) return 0;
  *r = (row){.cfa_reg = REG_SP, .cfa_off = 0, .cfa_unknown = 1,
             .bp = {R_SAME, 0}, .ra = {R_UNKNOWN, 0}};
  if (run(fde, fde->cie_insns, fde->cie_end, r, NULL, at) != 0) return -1;
  row init = *r;
  if (run(fde, fde->insns, fde->insns_end, r, &init, at) != 0) return -1;
  if (r->cfa_unknown || (r->cfa_reg != REG_SP && r->cfa_reg != REG_BP)) return -1;
  return 1;
}

/* f's caller by row r (mt__cfi_step's answers). */
static inline int step_by(mt__cfi_frame *f, const row *r, uintptr_t lo, uintptr_t hi) {
  uintptr_t cfa = (r->cfa_reg == REG_SP ? f->sp : f->fp) + (uintptr_t)r->cfa_off;
  if (r->ra.kind == R_UNDEF) return 0;
  if (cfa <= f->sp || cfa > hi) return -1;
  uintptr_t ret, fp;
  if (r->ra.kind != R_OFFSET || !read_word(cfa + (uintptr_t)r->ra.off, lo, hi, &ret)) return -1;
  switch (r->bp.kind) {
  case R_SAME: fp = f->fp; break;
  case R_UNDEF: fp = 0; break;
  case R_OFFSET:
    if (!read_word(cfa + (uintptr_t)r->bp.off, lo, hi, &fp)) return -1;
    break;
  case R_VAL_OFFSET: fp = cfa + (uintptr_t)r->bp.off; break;
  default: return -1;
  }
  *f = (mt__cfi_frame){ret, cfa, fp, 0};
  return 1;
}

/* f's caller by fde's row at `at`, the row kept if `keep`. */
static int step_in(const mt__fde *fde, mt__cfi_frame *f, uintptr_t at, uintptr_t lo, uintptr_t hi,
                   int keep) {
  row r;
  int found = fde_row(fde, f->pc, at, &r);
  if (found == 0) return signal_step(f, lo, hi);
  if (found < 0) return found;
  if (keep) cache_put(at, &r);
  return step_by(f, &r, lo, hi);
}

/* A step whose row is not in the cache: found in the tables (out of line,
 * with the FDE and the interpreter's state on its frame, so that a cached
 * step, nearly every one, sets up no such frame). */
static __attribute__((noinline)) int step_uncached(mt__cfi_frame *f, uintptr_t at, uintptr_t lo,
                                                   uintptr_t hi) {
  atomic_fetch_add_explicit(&mt__cfi_uncached, 1, memory_order_relaxed);
  mt__fde fde;
  if (mt__fde_of(at, &fde) != 1) return MT__CFI_NO_INFO;
  return step_in(&fde, f, at, lo, hi, 1);
}

int mt__cfi_step_fde(const mt__fde *fde, mt__cfi_frame *f, uintptr_t lo, uintptr_t hi) {
  return step_in(fde, f, f->interrupted ? f->pc : f->pc - 1, lo, hi, 0);
}

int mt__cfi_step(mt__cfi_frame *f, uintptr_t lo, uintptr_t hi) {
  /* A return address may follow a call that ends its function: its row
   * is the call's, one byte before. */
  uintptr_t at = f->interrupted ? f->pc : f->pc - 1;
  row r;
  if (__builtin_expect(cache_get(at, &r), 1)) return step_by(f, &r, lo, hi);
  return step_uncached(f, at, lo, hi);
}
