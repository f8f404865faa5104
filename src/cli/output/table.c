/* Text outputs of the tools: aligned tables, CSV fields, growing strings
 * (table.h). */
#include "table.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void nomem(void) {
  fprintf(stderr, "memtrace: out of memory\n");
  exit(1);
}

/* ---- CSV ---------------------------------------------------------------------- */

static size_t fmt_num(char *buf, size_t n, double v) {
  if (!isfinite(v)) return 0;
  if (v == floor(v) && fabs(v) < 9007199254740992.0) /* 2^53: integers stay exact */
    return (size_t)snprintf(buf, n, "%.0f", v == 0 ? 0.0 : v);
  int len = 0;
  for (int p = 15; p <= 17; p++) {
    len = snprintf(buf, n, "%.*g", p, v);
    if (strtod(buf, NULL) == v) break;
  }
  return (size_t)len;
}

void mt_csv_str(mt_out *o, const char *s) {
  if (!s) s = "";
  size_t n = strlen(s);
  int quote = n && (s[0] == ' ' || s[n - 1] == ' ');
  for (size_t i = 0; i < n && !quote; i++)
    quote = s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r';
  if (!quote) {
    mt_out_write(o, s, n);
    return;
  }
  mt_out_char(o, '"');
  for (const char *p = s; *p; p++) {
    if (*p == '"') mt_out_char(o, '"');
    mt_out_char(o, *p);
  }
  mt_out_char(o, '"');
}

void mt_csv_num(mt_out *o, double v) {
  char buf[40];
  mt_out_write(o, buf, fmt_num(buf, sizeof buf, v));
}

/* ---- growing strings ---------------------------------------------------------- */

void mt_str_printf(mt_str *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (!b->s || (size_t)n >= b->cap - b->len) {
    size_t cap = b->cap ? b->cap : 128;
    while (cap - b->len <= (size_t)n) cap *= 2;
    char *p = realloc(b->s, cap);
    if (!p) nomem();
    b->s = p;
    b->cap = cap;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
  }
  b->len += (size_t)n;
}

void mt_str_free(mt_str *b) {
  free(b->s);
  memset(b, 0, sizeof *b);
}

/* ---- aligned text tables ---------------------------------------------------- */

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (!p) nomem();
  return memcpy(p, s, n);
}

void mt_table_init(mt_table *t, size_t ncols, const char *const *heads, const char *align) {
  memset(t, 0, sizeof *t);
  t->ncols = ncols;
  t->align = align;
  mt_table_row(t, heads);
}

void mt_table_row(mt_table *t, const char *const *cells) {
  if (t->nrows == t->cap) {
    t->cap = t->cap ? t->cap * 2 : 64;
    t->cells = realloc(t->cells, t->cap * t->ncols * sizeof *t->cells);
    if (!t->cells) nomem();
  }
  for (size_t c = 0; c < t->ncols; c++) t->cells[t->nrows * t->ncols + c] = xstrdup(cells[c]);
  t->nrows++;
}

/* Display width of a line: characters, not bytes (UTF-8 continuation bytes
 * take no column). */
static size_t width_of(const char *s, size_t n) {
  size_t w = 0;
  for (size_t i = 0; i < n; i++) w += ((unsigned char)s[i] & 0xc0) != 0x80;
  return w;
}

static void put_clean(mt_out *o, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    mt_out_char(o, c < 0x20 || c == 0x7f ? '?' : (char)c);
  }
}

static void pad(mt_out *o, size_t n) {
  while (n--) mt_out_char(o, ' ');
}

void mt_table_print(const mt_table *t, mt_out *o, const char *indent) {
  size_t *w = calloc(t->ncols, sizeof *w);
  if (!w) nomem();
  for (size_t r = 0; r < t->nrows; r++)
    for (size_t c = 0; c + 1 < t->ncols; c++) {
      const char *s = t->cells[r * t->ncols + c];
      size_t x = width_of(s, strlen(s));
      if (x > w[c]) w[c] = x;
    }
  size_t last_col = strlen(indent);
  for (size_t c = 0; c + 1 < t->ncols; c++) last_col += w[c] + 2;
  for (size_t r = 0; r < t->nrows; r++) {
    mt_out_str(o, indent);
    for (size_t c = 0; c < t->ncols; c++) {
      const char *s = t->cells[r * t->ncols + c];
      if (c + 1 == t->ncols) {
        /* the last column: no padding; later lines start under it */
        const char *nl;
        while ((nl = strchr(s, '\n'))) {
          put_clean(o, s, (size_t)(nl - s));
          mt_out_char(o, '\n');
          pad(o, last_col);
          s = nl + 1;
        }
        put_clean(o, s, strlen(s));
        break;
      }
      size_t x = width_of(s, strlen(s));
      if (t->align[c] == 'r') pad(o, w[c] - x);
      put_clean(o, s, strlen(s));
      if (t->align[c] != 'r') pad(o, w[c] - x);
      mt_out_str(o, "  ");
    }
    mt_out_char(o, '\n');
  }
  free(w);
}

void mt_table_free(mt_table *t) {
  for (size_t i = 0; i < t->nrows * t->ncols; i++) free(t->cells[i]);
  free(t->cells);
  memset(t, 0, sizeof *t);
}
