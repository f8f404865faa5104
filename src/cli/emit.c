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

/* ---- stacks ------------------------------------------------------------------ */

int emit_trie_init(emit_trie *t) {
  memset(t, 0, sizeof *t);
  t->cap = 1024;
  t->parent = malloc(t->cap * sizeof *t->parent);
  t->code = malloc(t->cap * sizeof *t->code);
  if (!t->parent || !t->code) {
    emit_trie_free(t);
    return -1;
  }
  t->parent[0] = t->code[0] = 0;
  t->n = 1;
  return 0;
}

static int trie_child(emit_trie *t, uint32_t parent, uint32_t code, uint32_t *out) {
  uint64_t key = (uint64_t)parent << 32 | code;
  uint32_t *ix = mt__u64map_get(&t->index, key);
  if (ix) {
    *out = *ix - 1;
    return 0;
  }
  if (t->n >= UINT32_MAX - 1) return -1;
  if (t->n == t->cap) {
    size_t cap = t->cap * 2;
    uint32_t *p = realloc(t->parent, cap * sizeof *p);
    if (!p) return -1;
    t->parent = p;
    uint32_t *c = realloc(t->code, cap * sizeof *c);
    if (!c) return -1;
    t->code = c;
    t->cap = cap;
  }
  t->parent[t->n] = parent;
  t->code[t->n] = code;
  if (mt__u64map_put(&t->index, key, (uint32_t)t->n)) return -1;
  *out = (uint32_t)t->n++;
  return 0;
}

int emit_trie_add(emit_trie *t, const uint32_t *codes, size_t n, uint32_t *node) {
  /* consecutive backtraces share prefixes: start after the shared part */
  size_t k = 0;
  while (k < n && k < t->last_n && codes[k] == t->last_codes[k]) k++;
  if (n > t->last_cap) {
    size_t cap = n * 2;
    uint32_t *l = realloc(t->last, cap * sizeof *l);
    if (!l) return -1;
    t->last = l;
    uint32_t *c = realloc(t->last_codes, cap * sizeof *c);
    if (!c) return -1;
    t->last_codes = c;
    t->last_cap = cap;
  }
  uint32_t at = k ? t->last[k - 1] : 0;
  for (size_t i = k; i < n; i++) {
    if (trie_child(t, at, codes[i], &at)) {
      t->last_n = 0; /* the saved path is incomplete */
      return -1;
    }
    t->last[i] = at;
    t->last_codes[i] = codes[i];
  }
  t->last_n = n;
  *node = at;
  return 0;
}

void emit_trie_done(emit_trie *t) {
  free(t->last);
  free(t->last_codes);
  mt__u64map_free(&t->index);
  t->last = t->last_codes = NULL;
  t->last_n = t->last_cap = 0;
}

void emit_trie_free(emit_trie *t) {
  free(t->parent);
  free(t->code);
  free(t->last);
  free(t->last_codes);
  mt__u64map_free(&t->index);
  memset(t, 0, sizeof *t);
}

static inline uint32_t st_parent(const emit_stacks *st, uint32_t s) {
  return st->trie ? st->trie->parent[s] : mt_analysis_stack_parent(st->a, s);
}
static inline uint32_t st_code(const emit_stacks *st, uint32_t s) {
  return st->trie ? st->trie->code[s] : mt_analysis_stack_code(st->a, s);
}

/* Walks a stack's printed frames innermost first without storing them. */
typedef struct frame_iter {
  const emit_stacks *st;
  uint32_t stack;         /* the next stack node to expand */
  const mt_frame *frames; /* the current code's locations (outermost first) */
  size_t left;            /* of them, still to give (from the end) */
  /* or, with st NULL, a backtrace as code ids: codes[0..ncodes) are still
   * to expand, from the end */
  const mt_analysis *a;
  const uint32_t *codes;
  size_t ncodes;
} frame_iter;

static int iter_next(frame_iter *it, emit_frame *out) {
  const mt_analysis *a = it->st ? it->st->a : it->a;
  for (;;) {
    if (it->left) {
      const mt_frame *f = &it->frames[--it->left];
      out->function = mt_analysis_function_name(a, f->function);
      out->file = mt_analysis_function_file(a, f->function);
      out->line = f->line;
      out->code = 0;
      return 1;
    }
    uint32_t c;
    if (!it->st) {
      if (it->ncodes == 0) return 0;
      c = it->codes[--it->ncodes];
    } else {
      if (it->stack == 0) return 0;
      c = st_code(it->st, it->stack);
      it->stack = st_parent(it->st, it->stack);
    }
    size_t n;
    it->frames = mt_analysis_code_frames(a, c, &n);
    it->left = n;
    if (n == 0) {
      out->function = out->file = NULL;
      out->line = 0;
      out->code = mt_analysis_code_value(a, c);
      return 1;
    }
  }
}

static size_t iter_frames(frame_iter it, size_t max, emit_frame **buf, size_t *cap) {
  emit_frame f;
  size_t n = 0;
  while (iter_next(&it, &f)) {
    if (max == 0 || n < max) {
      if (n == *cap) {
        *cap = *cap ? *cap * 2 : 32;
        *buf = realloc(*buf, *cap * sizeof **buf);
        if (!*buf) {
          fprintf(stderr, "memtrace: out of memory\n");
          exit(1);
        }
      }
      (*buf)[n] = f;
    }
    n++;
  }
  return n;
}

size_t emit_stack_frames(const emit_stacks *st, uint32_t stack, size_t max, emit_frame **buf,
                         size_t *cap) {
  frame_iter it = {st, stack, NULL, 0, NULL, NULL, 0};
  return iter_frames(it, max, buf, cap);
}

size_t emit_codes_frames(const mt_analysis *a, const uint32_t *codes, size_t n, size_t max,
                         emit_frame **buf, size_t *cap) {
  frame_iter it = {NULL, 0, NULL, 0, a, codes, n};
  return iter_frames(it, max, buf, cap);
}

void emit_frame_text(emit_str *b, const emit_frame *f) {
  if (f->function) emit_str_printf(b, "%s (%s:%" PRIu32 ")", f->function, f->file, f->line);
  else emit_str_printf(b, "#%" PRIx64, f->code);
}

void emit_json_frame(mt_out *o, const emit_frame *f) {
  if (!f->function) {
    char hex[24];
    snprintf(hex, sizeof hex, "%" PRIx64, f->code);
    mt_out_str(o, "{\"code\": ");
    emit_json_str(o, hex);
    mt_out_char(o, '}');
    return;
  }
  mt_out_str(o, "{\"function\": ");
  emit_json_str(o, f->function);
  mt_out_str(o, ", \"file\": ");
  emit_json_str(o, f->file);
  mt_out_printf(o, ", \"line\": %" PRIu32 "}", f->line);
}

static int frame_cmp(const emit_frame *x, const emit_frame *y) {
  if (!x->function || !y->function) {
    if (x->function) return -1;
    if (y->function) return 1;
    return x->code < y->code ? -1 : x->code > y->code;
  }
  int c = strcmp(x->function, y->function);
  if (!c) c = strcmp(x->file, y->file);
  if (!c) c = x->line < y->line ? -1 : x->line > y->line;
  return c;
}

static int iter_cmp(frame_iter ix, frame_iter iy) {
  for (;;) {
    emit_frame fx, fy;
    int hx = iter_next(&ix, &fx), hy = iter_next(&iy, &fy);
    if (!hx || !hy) return hx - hy;
    int c = frame_cmp(&fx, &fy);
    if (c) return c;
  }
}

int emit_stack_cmp(const emit_stacks *st, uint32_t x, uint32_t y) {
  frame_iter ix = {st, x, NULL, 0, NULL, NULL, 0}, iy = {st, y, NULL, 0, NULL, NULL, 0};
  return iter_cmp(ix, iy);
}

int emit_codes_cmp(const mt_analysis *a, const uint32_t *x, size_t nx, const uint32_t *y,
                   size_t ny) {
  frame_iter ix = {NULL, 0, NULL, 0, a, x, nx}, iy = {NULL, 0, NULL, 0, a, y, ny};
  return iter_cmp(ix, iy);
}

/* ---- sites ------------------------------------------------------------------ */

emit_site emit_stack_site(const mt_analysis *a, uint32_t stack) {
  emit_site s = {EMIT_SITE_NONE, 0, 0, 0};
  mt_frame f;
  if (stack == 0) return s;
  if (mt_analysis_stack_site(a, stack, &f) == 0) {
    s.kind = EMIT_SITE_LOCATION;
    s.function = f.function;
    s.line = f.line;
  } else {
    s.kind = EMIT_SITE_CODE;
    s.code = mt_analysis_code_value(a, mt_analysis_stack_code(a, stack));
  }
  return s;
}

void emit_site_text(emit_str *b, const mt_analysis *a, const emit_site *s, int with_line) {
  if (s->kind == EMIT_SITE_NONE) emit_str_printf(b, "(no backtrace)");
  else if (s->kind == EMIT_SITE_CODE) emit_str_printf(b, "#%" PRIx64, s->code);
  else if (with_line)
    emit_str_printf(b, "%s (%s:%" PRIu32 ")", mt_analysis_function_name(a, s->function),
                    mt_analysis_function_file(a, s->function), s->line);
  else
    emit_str_printf(b, "%s (%s)", mt_analysis_function_name(a, s->function),
                    mt_analysis_function_file(a, s->function));
}

emit_site emit_code_site(const mt_analysis *a, uint32_t code) {
  emit_site s = {EMIT_SITE_NONE, 0, 0, 0};
  if (code >= mt_analysis_code_count(a)) return s;
  size_t n;
  const mt_frame *fr = mt_analysis_code_frames(a, code, &n);
  if (n) {
    s.kind = EMIT_SITE_LOCATION;
    s.function = fr[n - 1].function;
    s.line = fr[n - 1].line;
  } else {
    s.kind = EMIT_SITE_CODE;
    s.code = mt_analysis_code_value(a, code);
  }
  return s;
}

/* ---- stack conditions without the stack tree --------------------------------- */

static int code_has(const mt_analysis *a, uint32_t c, const char *needle) {
  size_t n;
  const mt_frame *fr = mt_analysis_code_frames(a, c, &n);
  for (size_t i = 0; i < n; i++)
    if (strstr(mt_analysis_function_name(a, fr[i].function), needle)) return 1;
  return 0;
}

int emit_stack_cond_init(const mt_analysis *a, const mt_filter *f, mt_filter *rest,
                         emit_stack_cond *c) {
  *rest = *f;
  rest->inside = rest->not_inside = NULL;
  memset(c, 0, sizeof *c);
  c->in = f->inside && f->inside[0];
  c->out = f->not_inside && f->not_inside[0];
  if (!c->in && !c->out) return 0;
  size_t ncodes = mt_analysis_code_count(a);
  c->code_bits = calloc(ncodes + 1, 1);
  if (!c->code_bits) return -1;
  for (size_t k = 0; k < ncodes; k++)
    c->code_bits[k] = (uint8_t)((c->in && code_has(a, (uint32_t)k, f->inside)) |
                                (c->out && code_has(a, (uint32_t)k, f->not_inside)) << 1);
  return 0;
}

int emit_stack_cond_pass(const emit_stack_cond *c, const uint32_t *codes, size_t n) {
  if (!c->in && !c->out) return 1;
  unsigned has = 0;
  for (size_t i = 0; i < n; i++) has |= c->code_bits[codes[i]];
  return (!c->in || (has & 1)) && (!c->out || !(has & 2));
}

void emit_stack_cond_free(emit_stack_cond *c) {
  free(c->code_bits);
  memset(c, 0, sizeof *c);
}

typedef struct site_pass {
  const mt_analysis *a;
  const emit_stack_cond *cond;
  mt_tally *per_code;
  size_t ncodes;
} site_pass;

static int tally_site(void *ctx, size_t i, const uint32_t *codes, size_t n) {
  site_pass *p = ctx;
  if (!emit_stack_cond_pass(p->cond, codes, n)) return 0;
  uint32_t c = mt_analysis_object_site(p->a, i);
  mt_tally_object(p->a, i, &p->per_code[c == MT_NO_CODE ? p->ncodes : c]);
  return 0;
}

int emit_tally_sites(const mt_analysis *a, const mt_filter *f, mt_tally *per_code,
                     mt_tally *total) {
  mt_filter rest;
  emit_stack_cond cond;
  if (emit_stack_cond_init(a, f, &rest, &cond)) return MT_ERR_NOMEM;
  if (!cond.in && !cond.out) return mt_analysis_tally_sites(a, f, per_code, total);
  size_t ncodes = mt_analysis_code_count(a);
  memset(per_code, 0, (ncodes + 1) * sizeof *per_code);
  site_pass p = {a, &cond, per_code, ncodes};
  int rc = mt_analysis_each_backtrace(a, &rest, tally_site, &p);
  emit_stack_cond_free(&cond);
  if (rc != MT_OK) return rc;
  if (total) {
    mt_tally sum = {0};
    for (size_t c = 0; c <= ncodes; c++) mt_tally_add(&sum, &per_code[c]);
    *total = sum;
  }
  return MT_OK;
}

/* The grouping key of the site of code id `code`: locations by function
 * (and line), undescribed codes by id, the empty backtrace alone. Function
 * ids are far below 2^31, so the top bit separates locations from codes. */
static uint64_t site_key(const emit_site *s, int by, uint32_t code) {
  if (s->kind == EMIT_SITE_NONE) return UINT64_MAX;
  if (s->kind == EMIT_SITE_CODE) return 1ull << 63 | code;
  return (uint64_t)s->function << 32 | (by == EMIT_BY_LINE ? s->line : 0);
}

/* For --by stack: merges the stacks that print alike. Stacks are distinct
 * code paths, but distinct paths can print the same frames: two codes whose
 * locations have the same functions and lines (columns are not printed),
 * or a code with inlined locations against the same locations as separate
 * codes. Neither can happen when no code has a twin and none has several
 * locations; then nothing is done. Otherwise every stack gets a hash of its
 * printed frames (from its parent's: parents have smaller ids), the stacks
 * with objects are radix-sorted by hash (millions of them: a comparison
 * sort costs seconds), and within a run of equal hashes the stacks that
 * really print alike are merged into the smallest: its per_stack entry
 * receives their tallies, and g->canon maps them to it. */
typedef struct hashed {
  uint64_t hash;
  uint32_t stack;
} hashed;

/* Stable LSD radix sort by hash, 16 bits a pass; tmp has n entries. */
static void radix_sort(hashed *v, hashed *tmp, size_t n) {
  static size_t count[1 << 16];
  for (int shift = 0; shift < 64; shift += 16) {
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++) count[(v[i].hash >> shift) & 0xffff]++;
    size_t sum = 0;
    for (size_t d = 0; d < 1 << 16; d++) {
      size_t c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; i++) tmp[count[(v[i].hash >> shift) & 0xffff]++] = v[i];
    hashed *t = v;
    v = tmp;
    tmp = t;
  }
  /* four passes: the sorted data is back in the caller's array */
}

/* Whether some code has a twin (another code with the same functions and
 * lines) or several locations. */
static int may_print_alike(const mt_analysis *a, int *result) {
  size_t ncodes = mt_analysis_code_count(a);
  mt__strtab keys = {0};
  mt__u64map seen = {0};
  char *text = NULL;
  size_t text_cap = 0;
  int rc = -1;
  *result = 0;
  for (size_t c = 0; c < ncodes && !*result; c++) {
    size_t n;
    const mt_frame *fr = mt_analysis_code_frames(a, (uint32_t)c, &n);
    if (n == 0) continue;
    if (n > 1) {
      *result = 1;
      break;
    }
    size_t need = 24, len;
    if (need > text_cap) {
      char *t = realloc(text, need);
      if (!t) goto out;
      text = t;
      text_cap = need;
    }
    len = (size_t)snprintf(text, text_cap, "%" PRIu32 ":%" PRIu32, fr[0].function, fr[0].line);
    const char *k = mt__strtab_intern(&keys, text, len);
    if (!k) goto out;
    if (mt__u64map_get(&seen, (uint64_t)(uintptr_t)k)) *result = 1;
    else if (mt__u64map_put(&seen, (uint64_t)(uintptr_t)k, 0)) goto out;
  }
  rc = 0;
out:
  free(text);
  mt__strtab_free(&keys);
  mt__u64map_free(&seen);
  return rc;
}

static int merge_printed_alike(const emit_stacks *st, size_t nstacks, mt_tally *per_stack,
                               emit_groups *g) {
  const mt_analysis *a = st->a;
  size_t ncand = 0;
  int maybe;
  if (nstacks < 2) return 0;
  if (may_print_alike(a, &maybe)) return -1;
  if (!maybe) return 0;
  uint64_t *h = malloc(nstacks * sizeof *h);
  hashed *cand = NULL, *tmp = NULL;
  int rc = -1;
  if (!h) goto out;
  h[0] = 0x5bd1e995;
  for (size_t s = 1; s < nstacks; s++) {
    /* over the printed frames: function and line of each location, or the
     * value of an undescribed code */
    uint32_t c = st_code(st, (uint32_t)s);
    uint64_t x = h[st_parent(st, (uint32_t)s)];
    size_t n;
    const mt_frame *fr = mt_analysis_code_frames(a, c, &n);
    if (n == 0) x = mt__hash64(x * 0x100000001b3ull + (mt_analysis_code_value(a, c) ^ 0xc0de));
    for (size_t i = 0; i < n; i++)
      x = mt__hash64(x * 0x100000001b3ull + ((uint64_t)fr[i].function << 32 | fr[i].line));
    h[s] = x;
    ncand += per_stack[s].objects != 0;
  }
  cand = malloc((ncand + 1) * sizeof *cand);
  tmp = malloc((ncand + 1) * sizeof *tmp);
  if (!cand || !tmp) goto out;
  ncand = 0;
  for (size_t s = 1; s < nstacks; s++)
    if (per_stack[s].objects) cand[ncand++] = (hashed){h[s], (uint32_t)s};
  free(h);
  h = NULL;
  radix_sort(cand, tmp, ncand); /* stable: stack ids ascend within a hash */
  for (size_t i = 0; i < ncand;) {
    size_t j = i + 1;
    while (j < ncand && cand[j].hash == cand[i].hash) j++;
    /* each joins the first earlier one printing alike (a hash collision
     * merely fails that test) */
    for (size_t x = i + 1; x < j; x++)
      for (size_t y = i; y < x; y++) {
        if (emit_stack_cmp(st, cand[y].stack, cand[x].stack) != 0) continue;
        uint32_t to = emit_canon(g, cand[y].stack), from = cand[x].stack;
        mt_tally_add(&per_stack[to], &per_stack[from]);
        memset(&per_stack[from], 0, sizeof per_stack[from]);
        if (mt__u64map_put(&g->canon_map, from, to)) goto out;
        g->canon = &g->canon_map;
        break;
      }
    i = j;
  }
  rc = 0;
out:
  free(h);
  free(cand);
  free(tmp);
  return rc;
}

static int add_group(emit_groups *g, size_t *cap, uint32_t stack, const mt_tally *t,
                     const emit_site *site) {
  if (g->n == *cap) {
    *cap = *cap ? *cap * 2 : 256;
    if (site) {
      emit_site *s = realloc(g->site, *cap * sizeof *s);
      if (!s) return -1;
      g->site = s;
      mt_tally *nt = realloc(g->tally, *cap * sizeof *nt);
      if (!nt) return -1;
      g->tally = nt;
    } else {
      uint32_t *r = realloc(g->rep, *cap * sizeof *r);
      if (!r) return -1;
      g->rep = r;
    }
  }
  if (site) {
    g->site[g->n] = *site;
    g->tally[g->n] = *t;
  } else {
    g->rep[g->n] = stack;
  }
  g->n++;
  return 0;
}

int emit_group_sites(const mt_analysis *a, int by, const mt_tally *per_code, emit_groups *g) {
  size_t ncodes = mt_analysis_code_count(a), cap = 0;
  mt__u64map groups = {0};
  memset(g, 0, sizeof *g);
  g->by = by;
  /* codes first, the empty backtrace (index ncodes) last */
  for (size_t c = 0; c <= ncodes; c++) {
    if (per_code[c].objects == 0) continue;
    emit_site site = emit_code_site(a, (uint32_t)c);
    uint64_t key = site_key(&site, by, (uint32_t)c);
    uint32_t *ix = mt__u64map_get(&groups, key);
    if (ix) {
      mt_tally_add(&g->tally[*ix - 1], &per_code[c]);
      continue;
    }
    if (add_group(g, &cap, 0, &per_code[c], &site) ||
        mt__u64map_put(&groups, key, (uint32_t)(g->n - 1))) {
      mt__u64map_free(&groups);
      emit_groups_free(g);
      return -1;
    }
  }
  mt__u64map_free(&groups);
  return 0;
}

int emit_group_stacks(const emit_stacks *st, size_t nstacks, mt_tally *per_stack,
                      emit_groups *g) {
  size_t cap = 0;
  memset(g, 0, sizeof *g);
  g->by = EMIT_BY_STACK;
  g->per_stack = per_stack;
  g->stacks = *st;
  if (merge_printed_alike(st, nstacks, per_stack, g)) goto fail;
  for (size_t s = 0; s < nstacks; s++)
    if (per_stack[s].objects && add_group(g, &cap, (uint32_t)s, NULL, NULL)) goto fail;
  return 0;
fail:
  emit_groups_free(g);
  return -1;
}

void emit_groups_free(emit_groups *g) {
  free(g->rep);
  free(g->site);
  free(g->tally);
  mt__u64map_free(&g->canon_map);
  memset(g, 0, sizeof *g);
}

/* Sifts idx[i] down a heap ordered so that the root is the greatest. */
static void sift_down(uint32_t *h, size_t n, size_t i,
                      int (*cmp)(const void *, const void *, void *), void *ctx) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && cmp(&h[l], &h[m], ctx) > 0) m = l;
    if (r < n && cmp(&h[r], &h[m], ctx) > 0) m = r;
    if (m == i) return;
    uint32_t t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}

void emit_select(uint32_t *idx, size_t n, size_t k,
                 int (*cmp)(const void *, const void *, void *), void *ctx) {
  if (k == 0 || k >= n) {
    qsort_r(idx, n, sizeof *idx, cmp, ctx);
    return;
  }
  /* idx[0..k) is a heap of the k first seen so far, greatest at the root;
   * a later element enters when it comes before the root */
  for (size_t i = k / 2; i-- > 0;) sift_down(idx, k, i, cmp, ctx);
  for (size_t i = k; i < n; i++) {
    if (cmp(&idx[i], &idx[0], ctx) >= 0) continue;
    uint32_t t = idx[0];
    idx[0] = idx[i];
    idx[i] = t;
    sift_down(idx, k, 0, cmp, ctx);
  }
  qsort_r(idx, k, sizeof *idx, cmp, ctx);
}

static int site_cmp(const mt_analysis *a, const emit_site *x, const emit_site *y, int by) {
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  if (x->kind == EMIT_SITE_CODE) return x->code < y->code ? -1 : x->code > y->code;
  if (x->kind == EMIT_SITE_NONE) return 0;
  int c = strcmp(mt_analysis_function_name(a, x->function),
                 mt_analysis_function_name(a, y->function));
  if (!c)
    c = strcmp(mt_analysis_function_file(a, x->function),
               mt_analysis_function_file(a, y->function));
  if (!c && by == EMIT_BY_LINE) c = x->line < y->line ? -1 : x->line > y->line;
  return c;
}

int emit_group_name_cmp(const mt_analysis *a, const emit_groups *g, uint32_t x, uint32_t y) {
  if (g->by == EMIT_BY_STACK) return emit_stack_cmp(&g->stacks, g->rep[x], g->rep[y]);
  return site_cmp(a, &g->site[x], &g->site[y], g->by);
}
