#include "emit.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tables.h"

void emit_nomem(const mt_command *cmd) {
  fflush(stdout);
  fprintf(stderr, "memtrace %s: out of memory\n", cmd->name);
  exit(1);
}

void *emit_xrealloc(const mt_command *cmd, void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) emit_nomem(cmd);
  return q;
}

/* ---- options ---------------------------------------------------------------- */

const char *emit_option_value(const mt_command *cmd, int argc, char **argv, int *i,
                              const char *name) {
  const char *o = argv[*i];
  size_t n = strlen(name);
  if (strncmp(o, name, n) != 0) return NULL;
  int is_long = name[1] == '-';
  if (o[n] == 0) {
    if (*i + 1 >= argc) mt_cli_usage_error(cmd, "%s needs a value", name);
    return argv[++*i];
  }
  if (is_long && o[n] == '=') return o + n + 1;
  if (!is_long && n == 2) return o + n; /* "-n5" */
  return NULL;
}

int emit_format_option(const mt_command *cmd, const char *v, unsigned allowed) {
  static const struct {
    const char *name;
    int bit;
  } formats[] = {{"table", EMIT_TABLE}, {"csv", EMIT_CSV}, {"json", EMIT_JSON}};
  char list[64] = "";
  for (size_t k = 0; k < sizeof formats / sizeof *formats; k++) {
    if (!(allowed & (unsigned)formats[k].bit)) continue;
    if (strcmp(v, formats[k].name) == 0) return formats[k].bit;
    if (list[0]) strcat(list, ", ");
    strcat(list, formats[k].name);
  }
  mt_cli_usage_error(cmd, "--format takes %s, not '%s'", list, v);
}

int emit_by_option(const mt_command *cmd, const char *v, int allow_stack) {
  if (strcmp(v, "function") == 0) return EMIT_BY_FUNCTION;
  if (strcmp(v, "line") == 0) return EMIT_BY_LINE;
  if (allow_stack && strcmp(v, "stack") == 0) return EMIT_BY_STACK;
  mt_cli_usage_error(cmd, "--by takes function, line%s, not '%s'",
                     allow_stack ? " or stack" : "", v);
}

const char *emit_by_name(int by) {
  return by == EMIT_BY_LINE ? "line" : by == EMIT_BY_STACK ? "stack" : "function";
}

size_t emit_count_option(const mt_command *cmd, const char *opt, const char *v) {
  char *end;
  errno = 0;
  unsigned long long n = v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
  if (v[0] < '0' || v[0] > '9' || *end || errno || n > SIZE_MAX / 2)
    mt_cli_usage_error(cmd, "%s wants a count (0 or more), not '%s'", opt, v);
  return (size_t)n;
}

/* ---- JSON and CSV ----------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if it is not one. */
static size_t utf8_len(const unsigned char *s) {
  unsigned c = s[0];
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return (s[1] & 0xc0) == 0x80 ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    unsigned lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    unsigned lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 && (s[3] & 0xc0) == 0x80 ? 4
                                                                                      : 0;
  }
  return 0;
}

void emit_json_str(mt_out *o, const char *str) {
  const unsigned char *s = (const unsigned char *)(str ? str : "");
  mt_out_char(o, '"');
  while (*s) {
    unsigned c = *s;
    if (c == '"' || c == '\\') {
      mt_out_char(o, '\\');
      mt_out_char(o, (char)c);
      s++;
    } else if (c < 0x20 || c == 0x7f) {
      static const char esc[] = "btn?fr";
      if (c >= 8 && c <= 13 && c != 11) {
        mt_out_char(o, '\\');
        mt_out_char(o, esc[c - 8]);
      } else {
        mt_out_printf(o, "\\u%04x", c);
      }
      s++;
    } else {
      /* the sequence is checked before its bytes are read further: a NUL
       * ends the string early and fails the continuation test */
      size_t n = utf8_len(s);
      if (n) mt_out_write(o, (const char *)s, n);
      else mt_out_str(o, "\\ufffd");
      s += n ? n : 1;
    }
  }
  mt_out_char(o, '"');
}

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

void emit_json_num(mt_out *o, double v) {
  char buf[40];
  size_t n = fmt_num(buf, sizeof buf, v);
  if (n) mt_out_write(o, buf, n);
  else mt_out_str(o, "null");
}

void emit_json_estimate(mt_out *o, mt_estimate e) {
  mt_out_str(o, "{\"value\": ");
  emit_json_num(o, e.value);
  mt_out_str(o, ", \"lo\": ");
  emit_json_num(o, e.lo);
  mt_out_str(o, ", \"hi\": ");
  emit_json_num(o, e.hi);
  mt_out_char(o, '}');
}

static void json_field(mt_out *o, int *first, const char *key) {
  mt_out_str(o, *first ? "" : ", ");
  *first = 0;
  emit_json_str(o, key);
  mt_out_str(o, ": ");
}

static const char *const source_names[] = {"minor", "major", "external"};

void emit_json_filter(mt_out *o, const mt_filter *f) {
  int first = 1;
  mt_out_char(o, '{');
  if (f->alloc_from) {
    json_field(o, &first, "allocated_from_s");
    emit_json_num(o, (double)f->alloc_from / 1e6);
  }
  if (f->alloc_to != MT_NEVER) {
    json_field(o, &first, "allocated_to_s");
    emit_json_num(o, (double)f->alloc_to / 1e6);
  }
  if (f->live != MT_LIVE_ANY) {
    json_field(o, &first, "live");
    emit_json_str(o, f->live == MT_LIVE_AT ? "at" : f->live == MT_LIVE_AT_PEAK ? "peak" : "end");
    if (f->live == MT_LIVE_AT) {
      json_field(o, &first, "live_at_s");
      emit_json_num(o, (double)f->live_at / 1e6);
    }
  }
  if (f->collected != MT_COLLECTED_ANY) {
    json_field(o, &first, "collected");
    emit_json_str(o, f->collected == MT_COLLECTED_NEVER ? "never" : "in");
    if (f->collected == MT_COLLECTED_IN) {
      json_field(o, &first, "collected_from_s");
      emit_json_num(o, (double)f->collect_from / 1e6);
      if (f->collect_to != MT_NEVER) {
        json_field(o, &first, "collected_to_s");
        emit_json_num(o, (double)f->collect_to / 1e6);
      }
    }
  }
  if (f->size_min) {
    json_field(o, &first, "size_min");
    emit_json_num(o, (double)f->size_min);
  }
  if (f->size_max != UINT64_MAX) {
    json_field(o, &first, "size_max");
    emit_json_num(o, (double)f->size_max);
  }
  if (f->lifetime_min) {
    json_field(o, &first, "lifetime_min_s");
    emit_json_num(o, (double)f->lifetime_min / 1e6);
  }
  if (f->lifetime_max != UINT64_MAX) {
    json_field(o, &first, "lifetime_max_s");
    emit_json_num(o, (double)f->lifetime_max / 1e6);
  }
  if (f->sources) {
    json_field(o, &first, "sources");
    mt_out_char(o, '[');
    int k = 0;
    for (int s = 0; s < 3; s++)
      if (f->sources & (1u << s)) {
        if (k++) mt_out_str(o, ", ");
        emit_json_str(o, source_names[s]);
      }
    mt_out_char(o, ']');
  }
  if (f->inside && f->inside[0]) {
    json_field(o, &first, "inside");
    emit_json_str(o, f->inside);
  }
  if (f->not_inside && f->not_inside[0]) {
    json_field(o, &first, "not_inside");
    emit_json_str(o, f->not_inside);
  }
  mt_out_char(o, '}');
}

void emit_csv_str(mt_out *o, const char *s) {
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

void emit_csv_num(mt_out *o, double v) {
  char buf[40];
  mt_out_write(o, buf, fmt_num(buf, sizeof buf, v));
}

/* ---- growing strings ---------------------------------------------------------- */

void emit_str_printf(emit_str *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (!b->s || (size_t)n >= b->cap - b->len) {
    size_t cap = b->cap ? b->cap : 128;
    while (cap - b->len <= (size_t)n) cap *= 2;
    char *p = realloc(b->s, cap);
    if (!p) {
      fprintf(stderr, "memtrace: out of memory\n");
      exit(1);
    }
    b->s = p;
    b->cap = cap;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
  }
  b->len += (size_t)n;
}

void emit_str_free(emit_str *b) {
  free(b->s);
  memset(b, 0, sizeof *b);
}

/* ---- human-readable figures ------------------------------------------------- */

static const char *three_digits(char *buf, size_t n, double v, const char *unit) {
  double a = fabs(v);
  /* 9.995 would print as "10.00": pick the precision after rounding */
  int prec = a < 9.995 ? 2 : a < 99.95 ? 1 : 0;
  snprintf(buf, n, "%.*f%s%s", prec, v, unit[0] ? " " : "", unit);
  return buf;
}

const char *emit_bytes(char *buf, size_t n, double b) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  double a = fabs(b);
  /* switch unit where the rounded figure would reach 1024 */
  while (a >= 1023.5 && u < 6) {
    a /= 1024;
    b /= 1024;
    u++;
  }
  if (u == 0) {
    snprintf(buf, n, "%.0f B", b == 0 ? 0.0 : b);
    return buf;
  }
  return three_digits(buf, n, b, units[u]);
}

const char *emit_signed_bytes(char *buf, size_t n, double b) {
  char tmp[32];
  emit_bytes(tmp, sizeof tmp, fabs(b));
  snprintf(buf, n, "%s%s", b > 0 ? "+" : b < 0 ? "-" : "", tmp);
  return buf;
}

const char *emit_count(char *buf, size_t n, double c) {
  static const char *units[] = {"", "k", "M", "G", "T", "P"};
  if (fabs(c) < 9999.5) {
    snprintf(buf, n, "%.0f", c == 0 ? 0.0 : c);
    return buf;
  }
  int u = 0;
  while (fabs(c) >= 999.5 && u < 5) {
    c /= 1000;
    u++;
  }
  char tmp[32];
  three_digits(tmp, sizeof tmp, c, "");
  snprintf(buf, n, "%s%s", tmp, units[u]);
  return buf;
}

const char *emit_interval(char *buf, size_t n, mt_estimate e, int is_bytes) {
  if (e.lo == e.value && e.hi == e.value) {
    snprintf(buf, n, "exact");
    return buf;
  }
  char lo[32], hi[32];
  if (is_bytes) {
    emit_bytes(lo, sizeof lo, e.lo);
    emit_bytes(hi, sizeof hi, e.hi);
  } else {
    emit_count(lo, sizeof lo, e.lo);
    emit_count(hi, sizeof hi, e.hi);
  }
  snprintf(buf, n, "[%s, %s]", lo, hi);
  return buf;
}

const char *emit_interval_note(char *buf, size_t n, mt_estimate e, int is_bytes) {
  if (e.lo == e.value && e.hi == e.value) snprintf(buf, n, "(exact)");
  else emit_interval(buf, n, e, is_bytes);
  return buf;
}

const char *emit_percent(char *buf, size_t n, double part, double whole) {
  if (!(whole > 0)) snprintf(buf, n, "-");
  else if (part > 0 && part / whole < 0.0005) snprintf(buf, n, "<0.1%%");
  else snprintf(buf, n, "%.1f%%", 100 * part / whole);
  return buf;
}

int emit_filter_is_all(const mt_filter *f) {
  mt_filter all;
  mt_filter_init(&all);
  return f->alloc_from == all.alloc_from && f->alloc_to == all.alloc_to &&
         f->live == MT_LIVE_ANY && f->collected == MT_COLLECTED_ANY &&
         f->size_min == all.size_min && f->size_max == all.size_max &&
         f->lifetime_min == all.lifetime_min && f->lifetime_max == all.lifetime_max &&
         f->sources == 0 && !(f->inside && f->inside[0]) &&
         !(f->not_inside && f->not_inside[0]);
}

/* Appends a clause to the filter text, with a "; " separator. */
#define CLAUSE(...)                                  \
  do {                                               \
    if (b->len) emit_str_printf(b, "; ");            \
    emit_str_printf(b, __VA_ARGS__);                 \
  } while (0)

static const char *secs(char *buf, size_t n, uint64_t us) {
  snprintf(buf, n, "%.6g s", (double)us / 1e6);
  return buf;
}

static const char *range_text(char *buf, size_t n, uint64_t lo, uint64_t hi, int is_time) {
  char a[32], b[32];
  if (is_time) {
    secs(a, sizeof a, lo);
    secs(b, sizeof b, hi);
  } else {
    emit_bytes(a, sizeof a, (double)lo);
    emit_bytes(b, sizeof b, (double)hi);
  }
  if (hi == UINT64_MAX) snprintf(buf, n, "%s or more", a);
  else if (lo == 0) snprintf(buf, n, "at most %s", b);
  else snprintf(buf, n, "%s to %s", a, b);
  return buf;
}

const char *emit_filter_text(emit_str *b, const mt_filter *f) {
  char r[96], t[32], t2[32];
  emit_str_clear(b);
  if (f->alloc_from || f->alloc_to != MT_NEVER) {
    if (f->alloc_to == MT_NEVER) CLAUSE("allocated from %s", secs(t, sizeof t, f->alloc_from));
    else
      CLAUSE("allocated in [%s, %s)", secs(t, sizeof t, f->alloc_from),
             secs(t2, sizeof t2, f->alloc_to));
  }
  if (f->live == MT_LIVE_AT) CLAUSE("live at %s", secs(t, sizeof t, f->live_at));
  else if (f->live == MT_LIVE_AT_PEAK) CLAUSE("live at the peak");
  else if (f->live == MT_LIVE_AT_END) CLAUSE("live at the end (never collected)");
  if (f->collected == MT_COLLECTED_NEVER) CLAUSE("never collected");
  else if (f->collected == MT_COLLECTED_IN) {
    if (f->collect_to == MT_NEVER) CLAUSE("collected from %s", secs(t, sizeof t, f->collect_from));
    else
      CLAUSE("collected in [%s, %s)", secs(t, sizeof t, f->collect_from),
             secs(t2, sizeof t2, f->collect_to));
  }
  if (f->size_min || f->size_max != UINT64_MAX)
    CLAUSE("size %s", range_text(r, sizeof r, f->size_min, f->size_max, 0));
  if (f->lifetime_min || f->lifetime_max != UINT64_MAX)
    CLAUSE("lifetime %s", range_text(r, sizeof r, f->lifetime_min, f->lifetime_max, 1));
  if (f->sources) {
    char srcs[64] = "";
    for (int k = 0; k < 3; k++)
      if (f->sources & (1u << k)) {
        if (srcs[0]) strcat(srcs, ",");
        strcat(srcs, source_names[k]);
      }
    CLAUSE("source %s", srcs);
  }
  if (f->inside && f->inside[0]) CLAUSE("inside \"%s\"", f->inside);
  if (f->not_inside && f->not_inside[0]) CLAUSE("not inside \"%s\"", f->not_inside);
  if (!b->len) emit_str_printf(b, "none");
  return b->s;
}
#undef CLAUSE

/* ---- aligned text tables ---------------------------------------------------- */

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (!p) {
    fprintf(stderr, "memtrace: out of memory\n");
    exit(1);
  }
  return memcpy(p, s, n);
}

void emit_table_init(emit_table *t, size_t ncols, const char *const *heads, const char *align) {
  memset(t, 0, sizeof *t);
  t->ncols = ncols;
  t->align = align;
  emit_table_row(t, heads);
}

void emit_table_row(emit_table *t, const char *const *cells) {
  if (t->nrows == t->cap) {
    t->cap = t->cap ? t->cap * 2 : 64;
    t->cells = realloc(t->cells, t->cap * t->ncols * sizeof *t->cells);
    if (!t->cells) {
      fprintf(stderr, "memtrace: out of memory\n");
      exit(1);
    }
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

void emit_table_print(const emit_table *t, mt_out *o, const char *indent) {
  size_t *w = calloc(t->ncols, sizeof *w);
  if (!w) {
    fprintf(stderr, "memtrace: out of memory\n");
    exit(1);
  }
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

void emit_table_free(emit_table *t) {
  for (size_t i = 0; i < t->nrows * t->ncols; i++) free(t->cells[i]);
  free(t->cells);
  memset(t, 0, sizeof *t);
}
