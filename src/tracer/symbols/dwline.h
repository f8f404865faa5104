/* A compilation unit's DWARF line table (.debug_line, versions 2 to 5),
 * read for the row at an address as libdw's dwfl_module_getsrc finds it,
 * without libdw. Internal (mt__ prefix).
 *
 * Why: libdw builds a unit's whole table at its first lookup, a malloc'd
 * record per row, sorted, kept for the process's life: for a big unit
 * (CPython's unicodeobject.c has 71,000 rows) that is milliseconds and
 * megabytes to name one code (docs/benchmarks.md, "Naming code"). This
 * reads a table once, keeping a resume point every
 * LINE_POINT_EVERY rows (the decoder's registers and where it was); a
 * lookup then decodes at most that many rows from the nearest point.
 *
 * The answer is libdw's (elfutils 0.188 dwarf_getsrclines.c and
 * dwfl_module_getsrc.c, as facts): of the rows whose address is the
 * greatest at or below pc, the last one in the program, end-of-sequence
 * markers aside; none if only markers are there, or if that row is the
 * table's very last by address (libdw marks it end of sequence). File
 * names are joined to their directory as libdw joins them.
 *
 * Tables this reader does not take (mt__line_table_read returns NULL):
 * malformed ones, and the legal but rare shapes whose libdw answer would
 * need its whole sort: addresses going down within a sequence, rows after
 * the last end of sequence, DW_LNE_define_file, VLIW (more than one
 * operation per instruction), forms of DWARF 5 file entries other than
 * inline strings, .debug_str and .debug_line_str offsets and constants.
 * The caller then asks libdw. Every read is bounded by its section: the
 * bytes may be anything (tests/fuzz/fuzz_dwline.c). */
#ifndef MT_TRACER_DWLINE_H
#define MT_TRACER_DWLINE_H

#include <stddef.h>
#include <stdint.h>

/* The sections a table may refer to; a section absent: NULL, 0. */
typedef struct mt__line_sections {
  const unsigned char *line, *line_str, *str;
  size_t line_size, line_str_size, str_size;
} mt__line_sections;

typedef struct mt__line_table mt__line_table;

/* A row: its file (an index into the table's files, as the program set
 * it), line and column, as libdw gives them. */
typedef struct mt__line_row {
  uint64_t addr;
  uint32_t file;
  int line;
  int column;
} mt__line_row;

/* Reads the table at `offset` in sec->line. comp_dir: the unit's
 * DW_AT_comp_dir (NULL: none), directory 0 before DWARF 5; addr_size: the
 * unit's address size (4 or 8). NULL if the table is not one this reader
 * takes (see above), or out of memory. The table points into the
 * sections and comp_dir, which must outlive it. */
mt__line_table *mt__line_table_read(const mt__line_sections *sec, uint64_t offset,
                                    const char *comp_dir, unsigned addr_size);

/* The row for pc: 1 and *row, or 0 (libdw's dwfl_module_getsrc: NULL). */
int mt__line_table_find(const mt__line_table *t, uint64_t pc, mt__line_row *row);

/* The name of the table's file `file`, joined to its directory, into buf
 * (cap bytes): 1; 0 if there is no such file (libdw's dwfl_lineinfo gives
 * NULL then); -1 if the name does not fit. */
int mt__line_table_file(const mt__line_table *t, uint32_t file, char *buf, size_t cap);

/* Every row of the table in the program's order, end-of-sequence
 * markers included (end = 1): for tests, to find rows another way. */
void mt__line_table_each(const mt__line_table *t,
                         void (*fn)(void *arg, const mt__line_row *row, int end), void *arg);

/* How many rows the table has, and how many resume points it keeps. */
size_t mt__line_table_rows(const mt__line_table *t);
size_t mt__line_table_points(const mt__line_table *t);

void mt__line_table_free(mt__line_table *t);

#endif
