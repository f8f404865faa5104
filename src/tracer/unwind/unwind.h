/* Capturing the current thread's return addresses for a sample. */
#ifndef MT_TRACER_UNWIND_H
#define MT_TRACER_UNWIND_H

#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

/* AUTO: the frame-pointer walk while every frame it passes through keeps a
 * frame record (its function starts by setting one up); from a function
 * without one (a C library helper, libstdc++'s operator new, a program
 * built without frame pointers), where following rbp would skip its
 * caller, the walk goes on by call-frame steps (cfi.h), and by libunwind
 * only where those cannot be taken. */
typedef enum {
  MT__UNWIND_LIBUNWIND = 0,
  MT__UNWIND_FRAME_POINTERS = 1,
  MT__UNWIND_AUTO = 2
} mt__unwind_mode;

/* Prepares unwinding (finds the profiler's own code to hide; in the
 * LIBUNWIND mode starts libunwind and loads the unwind tables of what is
 * mapped) so the first sample does no surprising work. AUTO starts
 * libunwind only if a sample comes to need it. Call with sampling
 * suspended. */
void mt__unwind_init(mt__unwind_mode mode);

/* Hides the frames of code in [lo, hi) from samples from now on (C++'s
 * allocation functions: cxxrt.h), until the next mt__unwind_init. Callers
 * hold the tracer's lock; walks under way read the ranges without it. */
void mt__unwind_hide(uintptr_t lo, uintptr_t hi);

/* The same for code learnt while samples may be queued (when a code is
 * named: a C++ runtime loaded since the session started, Rust's allocation
 * layer): those samples may hold frames of it, which the writer drops
 * from their inner end when mt__unwind_late is set (events.c). Only for
 * code that stays loaded for the process's life. */
void mt__unwind_hide_late(uintptr_t lo, uintptr_t hi);
extern _Atomic int mt__unwind_late;

/* Whether a sample hides the frame of return address pc. */
int mt__unwind_is_hidden(uintptr_t pc);

/* The loaded segment (PT_LOAD; executable ones only if exec_only) holding
 * addr: its object's load address and the segment's bounds. 0 if none. */
typedef struct mt__segment {
  uintptr_t base, lo, hi;
} mt__segment;
int mt__segment_of(uintptr_t addr, int exec_only, mt__segment *out);

/* Return addresses of the caller's stack, innermost first, without the
 * profiler's own frames nor operator new/new[] frames; returns the count.
 * Usable as an mt_callstack_fn (ctx unused). */
size_t mt__unwind(void *ctx, uint64_t *buf, size_t cap);

/* Where the walk of frame records starts, when the caller knows better
 * than mt__unwind's own frame: the malloc interposer sets it to the record
 * of its slow path (whose return address is the program's call, its fast
 * wrapper having tail-called it) around its sample, so the profiler's
 * frames are neither walked nor checked. 0: from mt__unwind's frame. The
 * libunwind mode ignores it. */
extern __thread uintptr_t mt__unwind_from
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* AUTO walks that left the frame records (for tests and statistics), and
 * those of them libunwind took on. */
extern _Atomic unsigned long mt__unwind_fallbacks __attribute__((visibility("hidden")));
extern _Atomic unsigned long mt__unwind_lu_walks __attribute__((visibility("hidden")));

/* Opens libunwind (unwlib.c; once, later calls return what the first
 * found): 0, or -1 when libunwind.so.8 cannot be loaded. Takes the
 * loader's lock: never with the tracer's held, never in a sample. Before a
 * session in the LIBUNWIND or AUTO mode; without it, AUTO does without. */
int mt__unw_load(void);
/* Whether it is loaded (lock-free: what a sample asks). */
int mt__unw_loaded(void);

/* Whether the calling thread's stack is short: less than 32 KiB below the
 * caller's frame, or not known (a coroutine's). Then the tracer runs what
 * goes deep on its own stack (bigstack.h), so that a sample takes a
 * bounded part of the thread's (docs/decisions.md). */
int mt__stack_short(void);

/* Forgets what AUTO learned of the code's frames (libraries were unloaded:
 * other code may come to the same addresses). */
void mt__unwind_forget(void);

#endif
