/* Turning return addresses into source locations, once per address. */
#ifndef MT_TRACER_SYMBOLS_H
#define MT_TRACER_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/format.h"

typedef struct mt__symbols mt__symbols;

/* separate_debuginfo: also look for debug information in separate files
 * (/usr/lib/debug, build ids), as installed by -dbg packages. Off, only the
 * DWARF inside each module and its ELF symbols are used: loading a system
 * library's separate (compressed) DWARF costs ~0.1 s of CPU per run. */
mt__symbols *mt__symbols_new(int separate_debuginfo);
void mt__symbols_free(mt__symbols *s);

/* The locations of the code at return address `pc`, outermost first (the
 * function containing it, then the functions inlined into it down to the
 * innermost), with demangled names; code without debug information gets
 * its symbol (or "??") and its module's path. Computed on first use, then
 * cached: valid until mt__symbols_free. Returns -1 when out of memory. */
int mt__symbols_lookup(mt__symbols *s, uint64_t code, uint64_t pc,
                       const mt_location **locs, size_t *n);

/* Forgets the process's module list and cached results (after a library
 * was unloaded: its addresses may now mean something else). */
void mt__symbols_reset(mt__symbols *s);

/* Opens libdw, which the symbolizer loads only when tracing starts
 * (dwlib.c); once per process. Its functions open it on first use
 * otherwise. Call it without the tracer's lock. */
void mt__dw_load(void);

#endif
