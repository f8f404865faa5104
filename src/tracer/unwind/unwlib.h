/* libunwind, loaded when a session may need it rather than with the
 * profiler (unwlib.c). Include instead of <libunwind.h>. Internal. */
#ifndef MT_TRACER_UNWLIB_H
#define MT_TRACER_UNWLIB_H

#ifndef UNW_LOCAL_ONLY
#define UNW_LOCAL_ONLY
#endif
#include <libunwind.h>

#include "unwind.h" /* mt__unw_load */

/* libunwind's getcontext, called through a pointer from the function
 * whose registers it captures (a wrapper's frame would be gone when the
 * walk reads it). NULL until libunwind is loaded. */
extern int (*mt__unw_getcontext)(unw_context_t *) __attribute__((visibility("hidden")));
#undef unw_getcontext
#define unw_getcontext(uc) (mt__unw_getcontext ? mt__unw_getcontext(uc) : -1)

#endif
