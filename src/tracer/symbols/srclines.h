/* The source position of an address, from its unit's line table read by
 * dwline.c rather than by libdw (see dwline.h for why). Internal (mt__
 * prefix). */
#ifndef MT_TRACER_SRCLINES_H
#define MT_TRACER_SRCLINES_H

#include <elfutils/libdw.h>
#include <stddef.h>

#include "base/containers.h"

typedef struct mt__line_table mt__line_table;
typedef struct mt__srclines_dw mt__srclines_dw;

/* The tables of one Dwfl's units, read on first use. Zero-initialize;
 * clear before dwfl_end and whenever the Dwfl is replaced (they point into
 * its modules' DWARF data). */
typedef struct mt__srclines {
  mt__u64map index; /* a unit DIE's address in the DWARF data -> position in v */
  mt__line_table **v; /* NULL: a unit left to libdw */
  size_t n, cap;
  mt__srclines_dw *dws; /* the sections of each DWARF data seen */
  size_t ndws, dws_cap;
} mt__srclines;

/* The row of unit cu's line table at pc (the module's address less its
 * bias), as libdw's dwfl_module_getsrc and dwfl_lineinfo give it: 1, with
 * *file (NULL when the row's file is not in the table; else the name
 * joined to its directory, in buf of cap bytes), *line and *col; 0 when
 * there is no row there; -1 when this unit's table is not read here
 * (dwline.h): the caller asks libdw. */
int mt__srclines_at(mt__srclines *s, Dwarf_Die *cu, Dwarf_Addr pc, char *buf, size_t cap,
                    const char **file, int *line, int *col);

/* The name of file idx of unit cu's line table (an inlined call's
 * DW_AT_call_file), as libdw's dwarf_getsrcfiles and dwarf_filesrc give
 * it: 0 and *name (NULL if there is no such file; else in buf); -1 when
 * this unit's table is not read here. */
int mt__srclines_file(mt__srclines *s, Dwarf_Die *cu, Dwarf_Word idx, char *buf, size_t cap,
                      const char **name);

void mt__srclines_clear(mt__srclines *s);

#endif
