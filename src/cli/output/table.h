/* Text outputs of the tools: aligned tables, CSV fields, and growing
 * strings for the text built from names of any length. */
#ifndef MT_CLI_TABLE_H
#define MT_CLI_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "output.h"

/* ---- CSV ---------------------------------------------------------------------- */

/* A CSV field (RFC 4180): quoted, with quotes doubled, when it holds a
 * comma, a quote, a line break or leading/trailing space. */
void mt_csv_str(mt_out *o, const char *s);
/* A CSV number: integers exactly, others with the shortest text that reads
 * back to the same double; empty for NaN and infinities. */
void mt_csv_num(mt_out *o, double v);

/* ---- growing strings ------------------------------------------------------------ */

/* Names from traces have no length limit (C++ names run to kilobytes), so
 * text built from them goes into these rather than fixed buffers. */
typedef struct mt_str {
  char *s; /* NUL-terminated once anything was added */
  size_t len, cap;
} mt_str;

/* Appends formatted text (exits 1 when out of memory). */
void mt_str_printf(mt_str *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void mt_str_clear(mt_str *b) {
  b->len = 0;
  if (b->s) b->s[0] = 0;
}
static inline const char *mt_str_get(const mt_str *b) { return b->s ? b->s : ""; }
void mt_str_free(mt_str *b);

/* ---- aligned text tables -------------------------------------------------------- */

/* Cells are copied. Only the last column may hold several lines ('\n'):
 * its later lines are printed under its start. Control characters in cells
 * are shown as '?', and widths count UTF-8 characters, not bytes. */
typedef struct mt_table {
  size_t ncols;
  const char *align; /* 'l' or 'r' per column */
  char **cells;      /* row-major, heads first */
  size_t nrows, cap; /* rows including the head row */
} mt_table;

void mt_table_init(mt_table *t, size_t ncols, const char *const *heads, const char *align);
/* Adds a row of ncols cells. */
void mt_table_row(mt_table *t, const char *const *cells);
void mt_table_print(const mt_table *t, mt_out *o, const char *indent);
void mt_table_free(mt_table *t);

#endif
