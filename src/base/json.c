#include "memtrace/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mt_json_init(mt_json *j) { memset(j, 0, sizeof *j); }

void mt_json_free(mt_json *j) {
  free(j->buf);
  mt_json_init(j);
}

char *mt_json_take(mt_json *j, size_t *len) {
  char *b = j->buf;
  if (j->oom || !b) {
    free(b);
    b = NULL;
  }
  if (len) *len = b ? j->len : 0;
  int safe = j->script_safe, pretty = j->pretty;
  mt_json_init(j);
  j->script_safe = safe;
  j->pretty = pretty;
  return b;
}

static void put(mt_json *j, const char *s, size_t n) {
  if (j->oom) return;
  if (j->len + n + 1 > j->cap) {
    size_t nc = j->cap ? j->cap : 4096;
    while (nc < j->len + n + 1) nc *= 2;
    char *b = realloc(j->buf, nc);
    if (!b) {
      j->oom = 1;
      return;
    }
    j->buf = b;
    j->cap = nc;
  }
  memcpy(j->buf + j->len, s, n);
  j->len += n;
  j->buf[j->len] = 0;
}

static void putc1(mt_json *j, char c) { put(j, &c, 1); }

static void newline(mt_json *j) {
  static const char spaces[] = "                                ";
  putc1(j, '\n');
  for (int d = j->depth * 2; d > 0; d -= 32) put(j, spaces, d < 32 ? (size_t)d : 32);
}

/* Before any value: the comma that separates it from the previous one. */
static void sep(mt_json *j) {
  if (j->after_key) {
    j->after_key = 0;
  } else {
    if (j->need_comma) putc1(j, ',');
    if (j->pretty && j->depth) newline(j);
  }
  j->need_comma = 1;
}

static void open_container(mt_json *j, char c) {
  sep(j);
  putc1(j, c);
  j->need_comma = 0;
  j->depth++;
}

static void close_container(mt_json *j, char c) {
  j->depth--;
  if (j->pretty && j->need_comma) newline(j); /* not empty */
  putc1(j, c);
  j->need_comma = 1;
  if (j->pretty && j->depth == 0) putc1(j, '\n');
}

void mt_json_obj(mt_json *j) { open_container(j, '{'); }
void mt_json_end_obj(mt_json *j) { close_container(j, '}'); }
void mt_json_arr(mt_json *j) { open_container(j, '['); }
void mt_json_end_arr(mt_json *j) { close_container(j, ']'); }

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t len;
  unsigned min;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) len = 2, min = 0x80;
  else if (c >= 0xe0 && c <= 0xef) len = 3, min = 0x800;
  else if (c >= 0xf0 && c <= 0xf4) len = 4, min = 0x10000;
  else return 0;
  if (len > n) return 0;
  unsigned cp = c & (0x3f >> (len - 1));
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}

static void write_string(mt_json *j, const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  putc1(j, '"');
  size_t run = 0; /* bytes copied as they are, flushed in one go */
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    const char *esc = NULL;
    char tmp[8];
    size_t l = 1;
    if (c == '"') esc = "\\\"";
    else if (c == '\\') esc = "\\\\";
    else if (c == '\n') esc = "\\n";
    else if (c == '\t') esc = "\\t";
    else if (c == '\r') esc = "\\r";
    else if (c < 0x20 || c == 0x7f) {
      snprintf(tmp, sizeof tmp, "\\u%04x", c);
      esc = tmp;
    } else if (c == '/' && j->script_safe && i > 0 && s[i - 1] == '<') esc = "\\/";
    else if (c >= 0x80) {
      l = utf8_len(s + i, n - i);
      if (!l) {
        esc = "\xef\xbf\xbd"; /* U+FFFD for a byte that is not UTF-8 */
        l = 1;
      }
    }
    if (esc) {
      put(j, str + i - run, run);
      run = 0;
      put(j, esc, strlen(esc));
    } else {
      run += l;
    }
    i += l;
  }
  put(j, str + n - run, run);
  putc1(j, '"');
}

void mt_json_key(mt_json *j, const char *key) {
  sep(j);
  write_string(j, key, strlen(key));
  if (j->pretty) put(j, ": ", 2);
  else putc1(j, ':');
  j->after_key = 1;
}

void mt_json_strn(mt_json *j, const char *s, size_t n) {
  sep(j);
  write_string(j, s, n);
}

void mt_json_str(mt_json *j, const char *s) {
  if (!s) mt_json_null(j);
  else mt_json_strn(j, s, strlen(s));
}

void mt_json_num(mt_json *j, double v) {
  if (!isfinite(v)) {
    mt_json_null(j);
    return;
  }
  sep(j);
  char b[40];
  int n;
  if (v == floor(v) && fabs(v) < 9007199254740992.0) { /* 2^53: integers stay exact */
    n = snprintf(b, sizeof b, "%.0f", v == 0 ? 0.0 : v);
  } else {
    for (int p = 15; p <= 17; p++) { /* the shortest that reads back exactly */
      n = snprintf(b, sizeof b, "%.*g", p, v);
      if (strtod(b, NULL) == v) break;
    }
  }
  put(j, b, (size_t)n);
}

void mt_json_int(mt_json *j, int64_t v) {
  sep(j);
  char b[32];
  put(j, b, (size_t)snprintf(b, sizeof b, "%lld", (long long)v));
}

void mt_json_uint(mt_json *j, uint64_t v) {
  sep(j);
  char b[32];
  put(j, b, (size_t)snprintf(b, sizeof b, "%llu", (unsigned long long)v));
}

void mt_json_bool(mt_json *j, int v) {
  sep(j);
  if (v) put(j, "true", 4);
  else put(j, "false", 5);
}

void mt_json_null(mt_json *j) {
  sep(j);
  put(j, "null", 4);
}

void mt_json_raw(mt_json *j, const char *text, size_t n) {
  sep(j);
  put(j, text, n);
}
