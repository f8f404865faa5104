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

/* Code in no module named by a JIT compiler's perf map (or jitdump) is watched: a
 * runtime may free code and compile other code at the same addresses,
 * with a new line of the map for it. mt__symbols_jit_poll reads what the
 * map gained since it was last read and calls on_renamed with the return
 * address of each code described so far that the map now names otherwise.
 * mt__symbols_jit_watched: whether any code is watched (none: the poll
 * would do nothing). The watch ends with mt__symbols_reset, codes being
 * described again after it. */
int mt__symbols_jit_watched(const mt__symbols *s);
void mt__symbols_jit_poll(mt__symbols *s, void (*on_renamed)(void *ctx, uint64_t pc),
                          void *ctx);

/* Whether this process's jitdump was found: code in no module that its
 * perf map does not name is named by the jitdump's records (perfmap.h),
 * which are watched as the map's lines are. Looked for as such code is
 * described. */
int mt__symbols_jitdump_found(const mt__symbols *s);

/* Opens libdw, which the symbolizer loads only when tracing starts
 * (dwlib.c); once per process. Its functions open it on first use
 * otherwise. Call it without the tracer's lock. */
void mt__dw_load(void);

#endif
