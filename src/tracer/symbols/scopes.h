/* The functions around an address, from an index of each compilation
 * unit's functions built once. Internal (mt__ prefix).
 *
 * libdw's dwarf_getscopes walks the unit's DIE tree from its root at every
 * call, and dwarf_getscopes_die (for the physical nesting of inlined code)
 * walks it again: each new code would cost a walk of its whole unit,
 * milliseconds in a C++ unit of 1 MB of DWARF (bench/cxx_symbols.cpp,
 * docs/benchmarks.md). This indexes a
 * unit's outer functions at its first code, and a function's own DIEs at
 * the first code in it, keeping each subprogram and inlined subroutine
 * with code (their address ranges and the one they lie in); a code is
 * then two binary searches and a short walk. */
#ifndef MT_TRACER_SCOPES_H
#define MT_TRACER_SCOPES_H

#include <elfutils/libdw.h>
#include <stddef.h>

#include "base/containers.h"

typedef struct mt__cu_scopes mt__cu_scopes;

/* The indexes of one Dwfl's units, built on first use. Zero-initialize;
 * clear before dwfl_end and whenever the Dwfl is replaced (they hold DIEs
 * of its modules). */
typedef struct mt__scopes {
  mt__u64map index; /* a unit DIE's address in the DWARF data -> position in v */
  mt__cu_scopes **v;
  size_t n, cap;
} mt__scopes;

/* The subprogram and inlined-subroutine DIEs whose code contains `pc` (an
 * address in the unit's own terms: the module's address less its bias),
 * innermost first, up to and including the first subprogram: the chain
 * dwarf_getscopes_die gives for the innermost scope dwarf_getscopes finds,
 * less its other DIEs (lexical blocks, the unit). Writes at most `max`
 * into out[] and returns how many (0: no function there); -1 when the unit
 * cannot be indexed (out of memory, imported units): the caller then asks
 * libdw itself. */
int mt__scopes_at(mt__scopes *s, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *out, int max);

/* The same by libdw's own search (dwarf_getscopes, then
 * dwarf_getscopes_die on the innermost scope: dwarf_getscopes continues
 * into an inlined function's abstract definition, the physical nesting is
 * the innermost DIE's own ancestry), keeping the subprograms and inlined
 * subroutines: for units the index does not take, and as the reference of
 * the index's test. Never -1. */
int mt__scopes_by_libdw(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *out, int max);

void mt__scopes_clear(mt__scopes *s);

#endif
