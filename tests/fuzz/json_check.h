/* A JSON checker for the fuzz targets' answers (fuzz_viewer_api.c,
 * fuzz_analysis.c): strict enough to catch an unescaped byte, a missing
 * comma or an unclosed bracket; no more than that (numbers are checked by
 * their characters only). */
#ifndef MT_FUZZ_JSON_CHECK_H
#define MT_FUZZ_JSON_CHECK_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Whether ch is one of set's characters (strchr alone would take NUL). */
static inline int json_in(const char *set, char ch) { return ch && strchr(set, ch); }

typedef struct json_cursor {
  const char *p, *end;
} json_cursor;

/* The two classes met at every byte of an answer, tested without a call:
 * the answers of a small trace run to megabytes, checked under ASan. */
static inline int json_is_ws(char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n'; }
static inline int json_is_num(char ch) {
  return (ch >= '0' && ch <= '9') || ch == '.' || ch == 'e' || ch == 'E' || ch == '+' || ch == '-';
}

static inline void json_ws(json_cursor *c) {
  while (c->p < c->end && json_is_ws(*c->p)) c->p++;
}

static inline int json_lit(json_cursor *c, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0) return 0;
  c->p += n;
  return 1;
}

static inline int json_string(json_cursor *c) {
  if (c->p >= c->end || *c->p != '"') return 0;
  for (c->p++; c->p < c->end; c->p++) {
    unsigned char ch = (unsigned char)*c->p;
    if (ch == '"') return c->p++, 1;
    if (ch < 0x20) return 0;
    if (ch == '\\') {
      if (++c->p >= c->end) return 0;
      if (*c->p == 'u') {
        for (int i = 0; i < 4; i++)
          if (++c->p >= c->end || !json_in("0123456789abcdefABCDEF", *c->p)) return 0;
      } else if (!json_in("\"\\/bfnrt", *c->p)) {
        return 0;
      }
    }
  }
  return 0;
}

static inline int json_number(json_cursor *c) {
  const char *s = c->p;
  if (c->p < c->end && *c->p == '-') c->p++;
  while (c->p < c->end && json_is_num(*c->p)) c->p++;
  return c->p > s && (c->p[-1] >= '0' && c->p[-1] <= '9');
}

/* One value, its nesting followed with a stack of the open brackets (the
 * viewer's flame graph nests as deep as the trace's stacks). */
static inline int json_value(json_cursor *c) {
  size_t n = 0, cap = 64;
  char *open = malloc(cap);
  int ok = 0;
  if (!open) return 0;
  for (;;) {
    json_ws(c);
    if (c->p >= c->end) goto out;
    char ch = *c->p;
    if (ch == '{' || ch == '[') { /* open; an empty one closes at once */
      c->p++;
      json_ws(c);
      if (c->p < c->end && *c->p == (ch == '{' ? '}' : ']')) {
        c->p++;
      } else {
        if (n == cap) {
          char *more = realloc(open, cap * 2);
          if (!more) goto out;
          open = more;
          cap *= 2;
        }
        open[n++] = ch;
        if (ch == '{') {
          if (!json_string(c)) goto out;
          json_ws(c);
          if (c->p >= c->end || *c->p++ != ':') goto out;
        }
        continue; /* its first value */
      }
    } else if (!(ch == '"' ? json_string(c)
                 : json_lit(c, "true") || json_lit(c, "false") || json_lit(c, "null") ||
                       json_number(c))) {
      goto out;
    }
    /* a value ended: a comma and the next, or the closing brackets */
    for (;;) {
      if (n == 0) {
        ok = 1;
        goto out;
      }
      json_ws(c);
      if (c->p >= c->end) goto out;
      char close = open[n - 1] == '{' ? '}' : ']';
      if (*c->p == close) {
        c->p++;
        n--;
        continue;
      }
      if (*c->p++ != ',') goto out;
      if (open[n - 1] == '{') {
        json_ws(c);
        if (!json_string(c)) goto out;
        json_ws(c);
        if (c->p >= c->end || *c->p++ != ':') goto out;
      }
      break;
    }
  }
out:
  free(open);
  return ok;
}

/* Whether text[0..len) is one JSON object and nothing else but blanks;
 * if not, *at is where the checker stopped. */
static inline int fuzz_json_ok(const char *text, size_t len, size_t *at) {
  json_cursor c = {text, text + len};
  json_ws(&c);
  int ok = c.p < c.end && *c.p == '{' && json_value(&c);
  if (ok) json_ws(&c);
  *at = (size_t)(c.p - text);
  return ok && c.p == c.end;
}

#endif
