/* A stack of the tracer's own for its deep calls (bigstack.c). */
#ifndef MT_TRACER_BIGSTACK_H
#define MT_TRACER_BIGSTACK_H

#include <stddef.h>

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

/* fork: 0 before (takes the lock, after the tracer's), 1 after, in the
 * parent and in the child (releases it). */
void mt__big_stack_fork(int phase);

#endif
