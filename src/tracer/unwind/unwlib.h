/* libunwind, loaded when a session may need it rather than with the
 * profiler, started on first need, and its walks (unwlib.c). Include
 * instead of <libunwind.h>. Internal. */
#ifndef MT_TRACER_UNWLIB_H
#define MT_TRACER_UNWLIB_H

#ifndef UNW_LOCAL_ONLY
#define UNW_LOCAL_ONLY
#endif
#include <libunwind.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind.h" /* mt__unw_load */

/* libunwind's getcontext, called through a pointer from the function
 * whose registers it captures (a wrapper's frame would be gone when the
 * walk reads it). NULL until libunwind is loaded. */
extern int (*mt__unw_getcontext)(unw_context_t *) __attribute__((visibility("hidden")));
#undef unw_getcontext
#define unw_getcontext(uc) (mt__unw_getcontext ? mt__unw_getcontext(uc) : -1)

#pragma GCC visibility push(hidden)

/* Whether libunwind is loaded and started (its caching policy set, its
 * pipe kept off the low descriptor numbers), starting it on the first call
 * that finds it loaded. Never waits: a thread that finds another starting
 * it gets 0 (a fork child may have inherited the start half done). Never
 * loads the library (mt__unw_load does, at a session's start). */
int mt__unw_ready(void);

/* Up to `want` return addresses of the walk from the registers *uc, one
 * unw_step at a time, into pcs; returns how many. Call only when
 * mt__unw_ready. */
size_t mt__unw_walk_from(unw_context_t *uc, uintptr_t *pcs, size_t want);

/* The same from the caller's own frame (its callers' frames included).
 * `cached`: through unw_backtrace and its per-thread trace cache (256 KiB
 * mapped at a thread's first use), as the LIBUNWIND mode walks; otherwise
 * a thread's first walks go step by step, as most threads need few. */
size_t mt__unw_walk(uintptr_t *pcs, size_t want, int cached);

#pragma GCC visibility pop

#endif
