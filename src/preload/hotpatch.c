/* Redirecting functions in memory (hotpatch.h): an x86-64 instruction
 * length decoder, trampolines of moved instructions, and the jumps over
 * the functions' first bytes.
 *
 * A redirected function starts with `jmp rel32` to the island, a page
 * mapped within rel32 reach of the function's object, where
 * `jmp *abs64` goes on to the wrapper (in this library, anywhere). The
 * instructions the jump covers move into a trampoline in the same island,
 * each fixed for its new address: a rip-relative operand gets its
 * displacement moved, a short branch becomes a long one, then a jump back
 * to the first byte not moved. Calling the trampoline is calling the
 * original function. Refused, and the function left as it was: an
 * instruction the decoder does not know, anywhere in the function (every
 * branch in it is checked not to land inside the moved bytes, which would
 * then hold the jump), a loop or jrcxz among the moved ones, a function
 * that ends before five bytes. */
#include "hotpatch.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define JMP_LEN 5   /* jmp rel32: what covers a function's first bytes */
#define ABS_JMP 14  /* jmp *0(%rip); .quad address */
#define SLOT 64     /* an island's room per function: trampoline, then jump */
#define MAX_INSN 15

/* ---- decoding ---- */

/* Two-byte opcodes (0F xx) without a ModRM byte. */
static int no_modrm_0f(uint8_t op) {
  return (op >= 0x05 && op <= 0x09) || op == 0x0b || op == 0x0e || (op >= 0x30 && op <= 0x37) ||
         op == 0x77 || op == 0xa0 || op == 0xa1 || op == 0xa2 || op == 0xa8 || op == 0xa9 ||
         op == 0xaa || (op >= 0xc8 && op <= 0xcf);
}

/* Two-byte opcodes (0F xx, and VEX's map 1) with an 8-bit immediate. */
static int imm8_0f(uint8_t op) {
  return (op >= 0x70 && op <= 0x73) || op == 0xa4 || op == 0xac || op == 0xba || op == 0xc2 ||
         (op >= 0xc4 && op <= 0xc6);
}

typedef struct decoding {
  const uint8_t *c;
  size_t avail, i;
} decoding;

static int take(decoding *d, uint8_t *b) {
  if (d->i >= d->avail || d->i >= MAX_INSN) return -1;
  *b = d->c[d->i++];
  return 0;
}

/* The ModRM byte and what follows it (SIB, displacement). */
static int modrm_operand(decoding *d, mt__insn *o) {
  uint8_t m, sib;
  if (take(d, &m)) return -1;
  unsigned mod = m >> 6, rm = m & 7, disp = 0;
  if (mod != 3) {
    if (rm == 4) {
      if (take(d, &sib)) return -1;
      if (mod == 0 && (sib & 7) == 5) disp = 4;
    }
    if (mod == 0 && rm == 5) {
      o->disp_at = (int)d->i; /* rip-relative */
      disp = 4;
    } else if (mod == 1) {
      disp = 1;
    } else if (mod == 2) {
      disp = 4;
    }
  }
  d->i += disp;
  return 0;
}

/* The one-byte opcode op's operands: whether a ModRM follows, the
 * immediate's size (-1: not an instruction known here). */
static int one_byte(uint8_t op, int opsize16, int rex_w, const decoding *d, int *modrm,
                    mt__insn *o) {
  int imm32 = opsize16 ? 2 : 4;
  *modrm = 0;
  if (op < 0x40) {
    switch (op & 7) {
    case 4: return 1;
    case 5: return imm32;
    case 6: case 7: return -1; /* segment pushes, daa...: not in 64-bit code */
    default: *modrm = 1; return 0;
    }
  }
  if (op >= 0x50 && op <= 0x5f) return 0;
  if (op >= 0x70 && op <= 0x7f) {
    o->kind = MT__INSN_JCC;
    o->rel_size = 1;
    return 0;
  }
  if (op >= 0x84 && op <= 0x8e) {
    *modrm = 1;
    return 0;
  }
  if (op >= 0x90 && op <= 0x99) return 0;
  if (op >= 0x9b && op <= 0x9f) return 0;
  if (op >= 0xb0 && op <= 0xb7) return 1;
  if (op >= 0xb8 && op <= 0xbf) return rex_w ? 8 : imm32;
  if (op >= 0xd8 && op <= 0xdf) { /* x87 */
    *modrm = 1;
    return 0;
  }
  switch (op) {
  case 0x63: *modrm = 1; return 0;
  case 0x68: return imm32;
  case 0x69: *modrm = 1; return imm32;
  case 0x6a: return 1;
  case 0x6b: *modrm = 1; return 1;
  case 0x6c: case 0x6d: case 0x6e: case 0x6f: return 0;
  case 0x80: case 0x83: *modrm = 1; return 1;
  case 0x81: *modrm = 1; return imm32;
  case 0x8f: /* pop r/m; with another reg field, XOP */
    if (d->i >= d->avail || (d->c[d->i] & 0x38)) return -1;
    *modrm = 1;
    return 0;
  case 0xa4: case 0xa5: case 0xa6: case 0xa7: return 0;
  case 0xa8: return 1;
  case 0xa9: return imm32;
  case 0xaa: case 0xab: case 0xac: case 0xad: case 0xae: case 0xaf: return 0;
  case 0xc0: case 0xc1: case 0xc6: *modrm = 1; return 1;
  case 0xc7: /* xbegin has a branch's displacement */
    if (d->i < d->avail && d->c[d->i] == 0xf8) return -1;
    *modrm = 1;
    return imm32;
  case 0xc2: case 0xca: o->kind = MT__INSN_RET; return 2;
  case 0xc3: case 0xcb: case 0xcc: case 0xcf: case 0xf4: o->kind = MT__INSN_RET; return 0;
  case 0xc8: return 3;
  case 0xc9: case 0xd7: case 0xf1: case 0xf5: return 0;
  case 0xcd: return 1;
  case 0xd0: case 0xd1: case 0xd2: case 0xd3: case 0xfe: case 0xff: *modrm = 1; return 0;
  case 0xe0: case 0xe1: case 0xe2: case 0xe3:
    o->kind = MT__INSN_OTHER_BRANCH;
    o->rel_size = 1;
    return 0;
  case 0xe4: case 0xe5: case 0xe6: case 0xe7: return 1;
  case 0xe8: o->kind = MT__INSN_CALL; o->rel_size = 4; return 0;
  case 0xe9: o->kind = MT__INSN_JMP; o->rel_size = 4; return 0;
  case 0xeb: o->kind = MT__INSN_JMP; o->rel_size = 1; return 0;
  case 0xec: case 0xed: case 0xee: case 0xef: return 0;
  case 0xf6: *modrm = 1; return d->i < d->avail && ((d->c[d->i] >> 3) & 7) < 2 ? 1 : 0;
  case 0xf7: *modrm = 1; return d->i < d->avail && ((d->c[d->i] >> 3) & 7) < 2 ? imm32 : 0;
  case 0xf8: case 0xf9: case 0xfa: case 0xfb: case 0xfc: case 0xfd: return 0;
  default: return -1;
  }
}

int mt__insn_decode(const uint8_t *code, size_t avail, mt__insn *o) {
  decoding d = {code, avail, 0};
  *o = (mt__insn){0, MT__INSN_PLAIN, -1, -1, 0, 0};
  int opsize16 = 0, rex_w = 0, modrm = 0, imm = 0;
  uint8_t b;
  for (;;) { /* legacy prefixes */
    if (take(&d, &b)) return -1;
    if (b == 0x66) opsize16 = 1;
    else if (!(b == 0x67 || b == 0xf0 || b == 0xf2 || b == 0xf3 || b == 0x2e || b == 0x3e ||
               b == 0x26 || b == 0x36 || b == 0x64 || b == 0x65))
      break;
  }
  if ((b & 0xf0) == 0x40) { /* REX */
    rex_w = (b >> 3) & 1;
    if (take(&d, &b)) return -1;
  }
  if (b == 0xc4 || b == 0xc5) { /* VEX */
    uint8_t v1, v2 = 0, op;
    if (take(&d, &v1) || (b == 0xc4 && take(&d, &v2)) || take(&d, &op)) return -1;
    unsigned map = b == 0xc5 ? 1 : v1 & 0x1f;
    if (map < 1 || map > 3) return -1;
    modrm = !(map == 1 && op == 0x77); /* vzeroupper, vzeroall */
    imm = map == 3 || (map == 1 && imm8_0f(op)) ? 1 : 0;
    o->opcode = op;
  } else if (b == 0x0f) {
    uint8_t op;
    if (take(&d, &op)) return -1;
    o->opcode = op;
    if (op == 0x38 || op == 0x3a) {
      uint8_t op3;
      if (take(&d, &op3)) return -1;
      modrm = 1;
      imm = op == 0x3a;
    } else if (op >= 0x80 && op <= 0x8f) {
      o->kind = MT__INSN_JCC;
      o->rel_size = 4;
    } else if (op == 0x0f || op == 0xff || op == 0x04 || op == 0x0a || op == 0x0c ||
               (op >= 0x24 && op <= 0x27) || op == 0x36 || op == 0x39 ||
               (op >= 0x3b && op <= 0x3f) || op == 0xa6 || op == 0xa7) {
      return -1; /* 3DNow!, reserved */
    } else if (!no_modrm_0f(op)) {
      modrm = 1;
      imm = imm8_0f(op);
    }
  } else {
    if (b == 0x62 || b == 0x60 || b == 0x61) return -1; /* EVEX, not in 64-bit code */
    o->opcode = b;
    imm = one_byte(b, opsize16, rex_w, &d, &modrm, o);
    if (imm < 0) return -1;
    if (b == 0xff && d.i < d.avail) {
      unsigned reg = (d.c[d.i] >> 3) & 7;
      if (reg == 4 || reg == 5) o->kind = MT__INSN_RET; /* an indirect jump ends the path */
    }
  }
  if (modrm && modrm_operand(&d, o)) return -1;
  if (o->rel_size) {
    o->rel_at = (int)d.i;
    d.i += o->rel_size;
  }
  d.i += (size_t)imm;
  if (d.i > avail || d.i > MAX_INSN) return -1;
  o->len = (unsigned)d.i;
  return 0;
}

/* ---- islands ---- */

struct mt__island {
  uint8_t *page;
  size_t size, used;
  uintptr_t lo, hi; /* the object whose functions it serves */
};

static int reaches(uintptr_t from, uintptr_t to) {
  intptr_t d = (intptr_t)(to - from);
  return d == (int32_t)d;
}

mt__island *mt__island_near(uintptr_t lo, uintptr_t hi) {
  size_t size = (size_t)sysconf(_SC_PAGESIZE);
  if (!size) size = 4096;
  uintptr_t step = 1u << 20; /* free holes near an object: a MiB apart */
  for (uintptr_t k = 1; k < 1024; k++) {
    for (int side = 0; side < 2; side++) {
      uintptr_t at = side ? ((hi + step - 1) & ~(step - 1)) + k * step : (lo & ~(step - 1)) - k * step;
      /* every byte of the island within reach of every byte of the object */
      if (at < (1u << 20) || !reaches(at, hi) || !reaches(at + size, lo)) continue;
      void *p = mmap((void *)at, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
      if (p == MAP_FAILED) continue;
      if ((uintptr_t)p != at) { /* a kernel that took the address as a hint */
        munmap(p, size);
        continue;
      }
      /* the island's first bytes hold its own record */
      mt__island *is = p;
      *is = (mt__island){p, size, (sizeof *is + SLOT - 1) / SLOT * SLOT, lo, hi};
      return is;
    }
  }
  return NULL;
}

/* ---- patches ---- */

static void put_rel32(uint8_t *at, uintptr_t next, uintptr_t dest) {
  int32_t rel = (int32_t)(intptr_t)(dest - next);
  memcpy(at, &rel, 4);
}

static uintptr_t branch_dest(const uint8_t *insn, const mt__insn *in) {
  intptr_t rel;
  if (in->rel_size == 1) {
    rel = (int8_t)insn[in->rel_at];
  } else {
    int32_t r;
    memcpy(&r, insn + in->rel_at, 4);
    rel = r;
  }
  return (uintptr_t)insn + in->len + (uintptr_t)rel;
}

/* Every branch of the function: none may land inside (target, target +
 * moved), where the jump will be. */
static int branches_clear(const uint8_t *f, size_t size, size_t moved) {
  for (size_t at = 0; at < size;) {
    mt__insn in;
    if (mt__insn_decode(f + at, size - at, &in)) return -1;
    if (in.rel_size) {
      uintptr_t dest = branch_dest(f + at, &in);
      if (dest > (uintptr_t)f && dest < (uintptr_t)f + moved) return -1;
    }
    at += in.len;
  }
  return 0;
}

/* Writes the moved instruction `in` (at old) at out, fixed for its new
 * place `at` (where out's bytes will run): returns its new length, or 0
 * when it cannot move. */
static size_t relocate(const uint8_t *old, const mt__insn *in, uint8_t *out, uintptr_t at) {
  if (in->kind == MT__INSN_OTHER_BRANCH) return 0;
  if (in->rel_size) {
    uintptr_t dest = branch_dest(old, in);
    size_t n;
    if (in->kind == MT__INSN_JMP || in->kind == MT__INSN_CALL) {
      out[0] = in->kind == MT__INSN_JMP ? 0xe9 : 0xe8;
      n = 5;
    } else { /* jcc: its condition is the opcode's low nibble */
      out[0] = 0x0f;
      out[1] = (uint8_t)(0x80 | (in->opcode & 0x0f));
      n = 6;
    }
    if (in->rel_at != (int)(in->len - in->rel_size) || !reaches(at + n, dest)) return 0;
    /* prefixes before a branch (bnd, notrack hints) are dropped */
    put_rel32(out + n - 4, at + n, dest);
    return n;
  }
  memcpy(out, old, in->len);
  if (in->disp_at >= 0) {
    int32_t disp;
    memcpy(&disp, old + in->disp_at, 4);
    uintptr_t dest = (uintptr_t)old + in->len + (uintptr_t)(intptr_t)disp;
    if (!reaches(at + in->len, dest)) return 0;
    put_rel32(out + in->disp_at, at + in->len, dest);
  }
  return in->len;
}

/* Writes at t the instructions of f that cover at least `least` bytes,
 * fixed for their new place, then a jump back to the first byte not moved
 * unless they end the path; at most `room` bytes. Returns the bytes
 * written, the bytes of f moved in *moved; 0 when they cannot move. */
static size_t move_into(const uint8_t *f, size_t size, size_t least, uint8_t *t, size_t room,
                        size_t *moved) {
  uint8_t buf[4 * MAX_INSN + JMP_LEN], *b = buf;
  size_t m = 0;
  int ended = 0; /* the moved bytes end the path (a jump, a return) */
  while (m < least) {
    mt__insn in;
    if (ended || mt__insn_decode(f + m, size - m, &in)) return 0;
    /* relocated, a branch takes at most 6 bytes, another instruction its
     * own length; the jump back must fit after */
    if ((size_t)(b - buf) + (in.len > 6 ? in.len : 6) + JMP_LEN > sizeof buf) return 0;
    size_t n = relocate(f + m, &in, b, (uintptr_t)t + (size_t)(b - buf));
    if (!n) return 0;
    b += n;
    m += in.len;
    ended = in.kind == MT__INSN_JMP || in.kind == MT__INSN_RET;
  }
  if (!ended) { /* on to the first byte not moved */
    uintptr_t at = (uintptr_t)t + (size_t)(b - buf);
    if (!reaches(at + 5, (uintptr_t)f + m)) return 0;
    b[0] = 0xe9;
    put_rel32(b + 1, at + 5, (uintptr_t)f + m);
    b += 5;
  }
  size_t len = (size_t)(b - buf);
  if (len > room) return 0;
  memcpy(t, buf, len);
  *moved = m;
  return len;
}

int mt__patch_prepare(mt__island *is, void *target, size_t size, void *wrapper, mt__patch *out) {
  uint8_t *f = target;
  if (!is || is->used + SLOT > is->size || size < JMP_LEN || !reaches((uintptr_t)is->page, (uintptr_t)f) ||
      !reaches((uintptr_t)is->page + is->size, (uintptr_t)f))
    return -1;
  uint8_t *tramp = is->page + is->used;
  uint8_t *jump = tramp + SLOT - ABS_JMP;
  size_t moved;
  if (!move_into(f, size, JMP_LEN, tramp, (size_t)(jump - tramp), &moved) ||
      branches_clear(f, size, moved))
    return -1;
  static const uint8_t jmp_abs[6] = {0xff, 0x25, 0, 0, 0, 0};
  memcpy(jump, jmp_abs, sizeof jmp_abs);
  uint64_t w = (uint64_t)(uintptr_t)wrapper;
  memcpy(jump + 6, &w, 8);
  /* a wrapper within reach (a library mapped near the allocator's) is
   * jumped to directly, one indirect jump fewer */
  if (reaches((uintptr_t)f + JMP_LEN, (uintptr_t)wrapper)) jump = wrapper;
  is->used += SLOT;
  *out = (mt__patch){f, moved, size, tramp, wrapper, jump};
  return 0;
}

size_t mt__patch_inline(const mt__patch *p, uint8_t *at, size_t room) {
  size_t moved;
  size_t n = move_into(p->target, p->size, p->moved, at, room, &moved);
  return n && moved == p->moved ? n : 0;
}

int mt__protect_code(void *code, size_t n, int prot) {
  uint8_t *p = code;
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = (uintptr_t)p & ~(page - 1), hi = ((uintptr_t)p + n + page - 1) & ~(page - 1);
  return mprotect((void *)lo, hi - lo, prot);
}

int mt__island_seal(mt__island *is) {
  __builtin___clear_cache((char *)is->page, (char *)is->page + is->size);
  return mprotect(is->page, is->size, PROT_READ | PROT_EXEC);
}

void mt__patch_bytes(const mt__patch *p, uint8_t out[MT__PATCH_MAX]) {
  memset(out, 0xcc, MT__PATCH_MAX); /* int3 after the jump: never reached */
  out[0] = 0xe9;
  put_rel32(out + 1, (uintptr_t)p->target + JMP_LEN, (uintptr_t)p->jump);
}

int mt__patch_apply(mt__island *is, mt__patch *patches, size_t n) {
  size_t made = 0;
  for (; made < n; made++)
    if (mt__protect_code(patches[made].target, patches[made].moved, PROT_READ | PROT_WRITE | PROT_EXEC))
      break;
  if (made < n || mt__island_seal(is)) { /* refused (W^X): none is written */
    while (made--) mt__protect_code(patches[made].target, patches[made].moved, PROT_READ | PROT_EXEC);
    return -1;
  }
  for (size_t k = 0; k < n; k++) {
    uint8_t code[MT__PATCH_MAX];
    mt__patch_bytes(&patches[k], code);
    memcpy(patches[k].target, code, patches[k].moved);
  }
  for (size_t k = 0; k < n; k++) mt__protect_code(patches[k].target, patches[k].moved, PROT_READ | PROT_EXEC);
  return 0;
}
