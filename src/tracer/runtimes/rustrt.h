/* Rust's allocation layer: the functions between a Rust program's code and
 * malloc (the global allocator's shims __rust_alloc and __rdl_alloc,
 * alloc::alloc::alloc, <Global as Allocator>::allocate, System's
 * GlobalAlloc), left out of samples as C++'s operator new is (cxxrt.h), so
 * that a sample's innermost frame is the code that asked for memory: a
 * Vec's growth (alloc::raw_vec::finish_grow), Box::new, the program's own
 * function. Internal (mt__ prefix).
 *
 * In a build with optimization these functions are inlined: their frames
 * are the inner part of the location of the code that calls malloc, and
 * are cut from it. Without, each is a function of its own: its code is
 * hidden from the walks (mt__unwind_hide_late), in the main program only
 * (a library could be unloaded, and other code come to its addresses). */
#ifndef MT_TRACER_RUSTRT_H
#define MT_TRACER_RUSTRT_H

#include <elfutils/libdwfl.h>
#include <stddef.h>

#include "memtrace/format.h"

/* Whether `name`, demangled (rustdemangle.h), is a function of the layer. */
int mt__rustrt_is_layer(const char *name);

/* From the naming of the code at addr in `mod`: its locations out[0..n),
 * innermost first, without the layer's inner frames; returns how many are
 * left (at least 1). A code all of whose frames are the layer's keeps
 * them, and its function is hidden if in the main program. Called under
 * the tracer's lock. */
size_t mt__rustrt_trim(Dwfl_Module *mod, uint64_t addr, mt_location *out, size_t n);

/* At a session's start, after mt__unwind_init (which forgets every range
 * hidden before): hides again the functions earlier sessions found. */
void mt__rustrt_probe(void);

#endif
