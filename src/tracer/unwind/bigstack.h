/* A stack of the tracer's own for its deep calls (bigstack.c). */
#ifndef MT_TRACER_BIGSTACK_H
#define MT_TRACER_BIGSTACK_H

#include <stddef.h>
#include <stdint.h>

/* Bytes reserved for it: mapped without committing memory, so only the
 * pages the calls touch cost anything. */
#define MT__BIG_STACK (2u << 20)

/* Runs fn(arg) on the big stack, mapped on first use, and returns when fn
 * does. On the caller's own stack instead when already on the big one (a
 * nested call), where it could not be mapped, or on an architecture
 * without the switch (x86-64 only). One big stack for the process: callers
 * queue on its lock (taken after the tracer's, never before), and fn must
 * not wait for another thread's sample. */
void mt__on_big_stack(void (*fn)(void *), void *arg);

/* The same in three steps, for a caller that prepares fn's work in memory
 * the lock guards (unwind.c: a thread's registers, captured into a buffer
 * of the tracer's rather than onto a short stack). lock returns 0 when the
 * caller is on the big stack already (its lock is then the caller's): the
 * call runs fn there, and unlock wants that 0. */
int mt__big_stack_lock(void);
void mt__on_big_stack_locked(void (*fn)(void *), void *arg);
void mt__big_stack_unlock(int locked);

/* Whether addr lies on the big stack. */
int mt__big_stack_holds(uintptr_t addr);

/* fork: 0 before (takes the lock, after the tracer's), 1 after, in the
 * parent and in the child (releases it). */
void mt__big_stack_fork(int phase);

#endif
