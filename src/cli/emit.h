/* Output helpers shared by the tools: option parsing, CSV and JSON
 * writing, growing strings, human-readable figures, aligned tables. The
 * stacks, frames and sites they print: sites.h. */
#ifndef MT_CLI_EMIT_H
#define MT_CLI_EMIT_H

#include <stddef.h>
#include <stdint.h>

#include "analysis_cli.h"
#include "output.h"
#include "tables.h"

/* ---- options ---------------------------------------------------------------- */

enum { EMIT_TABLE = 1, EMIT_CSV = 2, EMIT_JSON = 4 };
enum { EMIT_BY_FUNCTION = 0, EMIT_BY_LINE = 1, EMIT_BY_STACK = 2 };

/* If argv[*i] is the option `name` ("--by", "-n"), returns its value
 * ("--by=x", "--by x", and for one-letter options "-n5") and advances *i
 * past it; returns NULL when argv[*i] is another argument. A missing value
 * is a usage error. */
const char *emit_option_value(const mt_command *cmd, int argc, char **argv, int *i,
                              const char *name);
/* --format VALUE among the EMIT_* bits in `allowed`; otherwise a usage error. */
int emit_format_option(const mt_command *cmd, const char *v, unsigned allowed);
/* --by VALUE: function, line, or (if allow_stack) stack. */
int emit_by_option(const mt_command *cmd, const char *v, int allow_stack);
/* A count (-n, --depth): a non-negative decimal integer. */
size_t emit_count_option(const mt_command *cmd, const char *opt, const char *v);
const char *emit_by_name(int by);

/* ---- JSON and CSV ----------------------------------------------------------- */

/* A JSON string literal. Control characters are escaped; bytes that are not
 * valid UTF-8 become U+FFFD, so the document stays valid whatever names a
 * trace holds. */
void emit_json_str(mt_out *o, const char *s);
/* A JSON number: integers exactly, others with the shortest text that reads
 * back to the same double; NaN and infinities become null. */
void emit_json_num(mt_out *o, double v);
/* {"value": V, "lo": L, "hi": H} */
void emit_json_estimate(mt_out *o, mt_estimate e);
/* The filter as a JSON object of its active conditions ({} when none). */
void emit_json_filter(mt_out *o, const mt_filter *f);

/* A CSV field (RFC 4180): quoted, with quotes doubled, when it holds a
 * comma, a quote, a line break or leading/trailing space. */
void emit_csv_str(mt_out *o, const char *s);
/* A CSV number, formatted as emit_json_num (empty for NaN). */
void emit_csv_num(mt_out *o, double v);

/* ---- growing strings ---------------------------------------------------------- */

/* Names from traces have no length limit (C++ names run to kilobytes), so
 * text built from them goes into these rather than fixed buffers. */
typedef struct emit_str {
  char *s; /* NUL-terminated once anything was added */
  size_t len, cap;
} emit_str;

/* Appends formatted text. */
void emit_str_printf(emit_str *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void emit_str_clear(emit_str *b) {
  b->len = 0;
  if (b->s) b->s[0] = 0;
}
static inline const char *emit_str_get(const emit_str *b) { return b->s ? b->s : ""; }
void emit_str_free(emit_str *b);

/* ---- human-readable figures ------------------------------------------------- */

/* Bytes with three significant digits: "512 B", "1.23 KiB", "36.3 MiB". */
const char *emit_bytes(char *buf, size_t n, double bytes);
/* Bytes with an explicit sign: "+1.23 MiB", "-512 B", "0 B". */
const char *emit_signed_bytes(char *buf, size_t n, double bytes);
/* A count: exact below 10 000, then "12.3k", "4.56M", "1.20G". */
const char *emit_count(char *buf, size_t n, double count);
/* An estimate's interval: "[lo, hi]" (bytes when is_bytes), or "exact" when
 * it is a single point (sample rate 1). */
const char *emit_interval(char *buf, size_t n, mt_estimate e, int is_bytes);
/* As emit_interval, for running text: "[lo, hi]" or "(exact)". */
const char *emit_interval_note(char *buf, size_t n, mt_estimate e, int is_bytes);
/* "s" unless n is 1, for plurals. */
static inline const char *emit_plural(uint64_t n) { return n == 1 ? "" : "s"; }
/* A percentage: "45.1%", "<0.1%", "new" (base 0). */
const char *emit_percent(char *buf, size_t n, double part, double whole);
/* The filter in words: "none", or its conditions separated by "; ". */
const char *emit_filter_text(emit_str *b, const mt_filter *f);
/* Whether the filter keeps every object. */
int emit_filter_is_all(const mt_filter *f);

/* ---- aligned text tables ---------------------------------------------------- */

/* Cells are copied. Only the last column may hold several lines ('\n'):
 * its later lines are printed under its start. Control characters in cells
 * are shown as '?', and widths count UTF-8 characters, not bytes. */
typedef struct emit_table {
  size_t ncols;
  const char *align; /* 'l' or 'r' per column */
  char **cells;      /* row-major, heads first */
  size_t nrows, cap;  /* rows including the head row */
} emit_table;

void emit_table_init(emit_table *t, size_t ncols, const char *const *heads, const char *align);
/* Adds a row of ncols cells. */
void emit_table_row(emit_table *t, const char *const *cells);
void emit_table_print(const emit_table *t, mt_out *o, const char *indent);
void emit_table_free(emit_table *t);

/* Prints "memtrace CMD: out of memory" and exits 1. */
void emit_nomem(const mt_command *cmd) __attribute__((noreturn));
/* malloc/realloc that exit on failure. */
void *emit_xrealloc(const mt_command *cmd, void *p, size_t n);

#endif
