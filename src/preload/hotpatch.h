/* Redirecting a function already in memory (x86-64): its first
 * instructions are moved into a trampoline near it, and replaced by a jump
 * to a wrapper, which reaches the original through the trampoline. How the
 * interposer traces an allocator linked into the program (or loaded ahead
 * of it), whose malloc the dynamic loader binds every call to before this
 * library's (preload_redirect.c). Internal (mt__ prefix). */
#ifndef MT_PRELOAD_HOTPATCH_H
#define MT_PRELOAD_HOTPATCH_H

#include <stddef.h>
#include <stdint.h>

/* One decoded instruction: its length, and what moving it elsewhere must
 * fix: a rip-relative operand (its disp32 at disp_at), or a relative
 * branch (its displacement at rel_at, rel_size bytes). */
typedef enum {
  MT__INSN_PLAIN,   /* nothing to fix, execution goes on after it */
  MT__INSN_JMP,     /* jmp rel8 / rel32 */
  MT__INSN_JCC,     /* jcc rel8 / rel32 */
  MT__INSN_CALL,    /* call rel32 */
  MT__INSN_RET,     /* ret, or an indirect jump: execution does not go on */
  MT__INSN_OTHER_BRANCH /* loop, jrcxz: rel8 only, not movable */
} mt__insn_kind;

typedef struct mt__insn {
  unsigned len;
  mt__insn_kind kind;
  int disp_at;     /* offset of a rip-relative disp32, or -1 */
  int rel_at;      /* offset of a branch's displacement, or -1 */
  unsigned rel_size; /* 1 or 4 */
  uint8_t opcode;  /* the branch's opcode (the last opcode byte) */
} mt__insn;

/* Decodes the instruction at code (at most avail bytes readable). 0 and
 * *out; -1 when it is not one this decoder knows (the caller then leaves
 * the function alone). General-purpose, SSE and AVX (VEX) encodings;
 * EVEX, 3DNow! and XOP are refused. */
int mt__insn_decode(const uint8_t *code, size_t avail, mt__insn *out);

/* A redirection prepared but not applied. */
typedef struct mt__patch {
  uint8_t *target;     /* the function */
  size_t moved;        /* its first bytes, moved into the trampoline */
  size_t size;         /* the function's size */
  void *trampoline;    /* runs them, then jumps back to target + moved */
  void *wrapper;       /* where calls of the function go */
  uint8_t *jump;       /* where the function's first bytes jump: the wrapper,
                          or (out of rel32 reach) `jmp *wrapper` in the
                          island */
} mt__patch;

/* An executable page near an object's code (within rel32 reach of every
 * byte of [lo, hi)), which holds the trampolines and jumps of its
 * functions. NULL when no such place could be mapped. */
typedef struct mt__island mt__island;
mt__island *mt__island_near(uintptr_t lo, uintptr_t hi);

/* Prepares redirecting the function at target, of `size` bytes (its
 * symbol's size: every branch in it is checked not to land inside the
 * moved bytes), to wrapper: writes its trampoline and jump into the
 * island. 0, or -1 with nothing to undo (an instruction not known, a
 * branch into the first bytes, a function shorter than a jump, the island
 * full). */
int mt__patch_prepare(mt__island *is, void *target, size_t size, void *wrapper, mt__patch *out);

/* Writes at `at` (at most `room` bytes) what p's trampoline does: its
 * moved instructions, fixed for `at`, and the jump back. So a wrapper's
 * jump to the trampoline can become the trampoline itself, one jump fewer.
 * The bytes written, or 0 (too long, or out of rel32 reach); the caller
 * makes `at` writable, and no thread may run it meanwhile. */
size_t mt__patch_inline(const mt__patch *p, uint8_t *at, size_t room);

/* The most bytes a patch writes over its function. */
#define MT__PATCH_MAX 20

/* mprotect of the pages holding [code, code + n): 0 or -1. */
int mt__protect_code(void *code, size_t n, int prot);

/* Makes the island executable (after the last mt__patch_prepare): 0 or -1. */
int mt__island_seal(mt__island *is);

/* The bytes to write over p->target (p->moved of them): the jump to the
 * island, then int3s. */
void mt__patch_bytes(const mt__patch *p, uint8_t out[MT__PATCH_MAX]);

/* Seals the island and writes each patch's jump over its function's first
 * bytes: all or none (-1: the system refused to make some code writable;
 * nothing was changed). Not atomic against threads running the functions
 * meanwhile: for the process's start (a debugger-style attacher writes
 * mt__patch_bytes itself, every thread stopped). */
int mt__patch_apply(mt__island *is, mt__patch *patches, size_t n);

#endif
