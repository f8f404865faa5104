/* One step of a stack walk through a function's call-frame information
 * (its .eh_frame FDE, found by ehframe.c), for x86-64: how the AUTO
 * unwinder passes functions that keep no frame record (the C library's,
 * libstdc++'s, programs built without frame pointers) without libunwind.
 *
 * Only what such a step needs is tracked: the CFA (rsp- or rbp-based), the
 * caller's rbp and the return address. A rule that cannot be followed
 * here (a DWARF expression, a CFA on another register, a value kept in
 * another register) makes the step give up, and the caller asks libunwind.
 * Signal frames are recognized by the C library's trampoline
 * (mov $15,%rax; syscall, in an FDE marked "S"): the interrupted registers
 * are read from the ucontext the kernel left on the stack.
 *
 * Every stack read is checked against the bounds the caller gives, and
 * every table read against the object's mapping: a step never faults,
 * whatever the stack holds. Internal (mt__ prefix). */
#ifndef MT_TRACER_CFI_H
#define MT_TRACER_CFI_H

#include <stdint.h>

/* A frame's registers, as far as a walk knows them. */
typedef struct mt__cfi_frame {
  uintptr_t pc; /* the return address into the function (or, after a
                   signal frame, the interrupted instruction) */
  uintptr_t sp; /* rsp in the function at pc */
  uintptr_t fp; /* rbp in the function at pc */
  int interrupted; /* pc is the instruction itself, not a return address */
} mt__cfi_frame;

/* Replaces *f with its caller's frame, reading the stack only within
 * [lo, hi). 1: stepped (the caller's pc may be 0: the chain's end); 0: f
 * is the outermost frame (its return address is undefined: _start, a
 * thread's clone); -1: cannot tell (a rule not followed here, a read out
 * of bounds, a caller's CFA not above f's); MT__CFI_NO_INFO: no FDE holds
 * f's pc (code without unwind tables: hand-written, or generated at run
 * time). On any failure *f is unchanged. */
#define MT__CFI_NO_INFO (-2)

/* Forgets the rows kept (cfi.c): a library was unloaded, and other code
 * may come to its addresses. */
void mt__cfi_forget(void);
int mt__cfi_step(mt__cfi_frame *f, uintptr_t lo, uintptr_t hi);

/* The same step by the FDE given (found by mt__fde_in), without the kept
 * rows: for the fuzzer (tests/fuzz/fuzz_cfi.c). */
struct mt__fde;
int mt__cfi_step_fde(const struct mt__fde *fde, mt__cfi_frame *f, uintptr_t lo, uintptr_t hi);

/* For tests and benchmarks: the steps whose row was not kept (read from
 * the tables), and the set of kept rows an address's falls in (two rows
 * a set: a third address of the same set evicts the older). */
extern _Atomic unsigned long mt__cfi_uncached;
unsigned mt__cfi_cache_set(uintptr_t at);

#endif
