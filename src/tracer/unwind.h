/* Capturing the current thread's return addresses for a sample. */
#ifndef MT_TRACER_UNWIND_H
#define MT_TRACER_UNWIND_H

#include <stddef.h>
#include <stdint.h>

typedef enum { MT__UNWIND_LIBUNWIND = 0, MT__UNWIND_FRAME_POINTERS = 1 } mt__unwind_mode;

/* Prepares unwinding (loads unwind tables, finds the profiler's own code
 * and the C++ allocation functions to hide) so the first sample does no
 * surprising work. Call with sampling suspended. */
void mt__unwind_init(mt__unwind_mode mode);

/* Return addresses of the caller's stack, innermost first, without the
 * profiler's own frames nor operator new/new[] frames; returns the count.
 * Usable as an mt_callstack_fn (ctx unused). */
size_t mt__unwind(void *ctx, uint64_t *buf, size_t cap);

#endif
