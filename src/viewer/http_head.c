/* The head of an HTTP/1.x request (RFC 9112), parsed in place. Strict
 * where a lenient reading could make two readers disagree on where a
 * request ends (folded lines, bare CR, control bytes, a bad
 * Content-Length), since the server keeps connections open. */
#include "http.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* RFC 9110's tchar: what a method and a field name are made of. */
static int tchar(unsigned char ch) {
  if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) return 1;
  return ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

static int token(const char *s) {
  if (!*s) return 0;
  for (; *s; s++)
    if (!tchar((unsigned char)*s)) return 0;
  return 1;
}

static int blank(char ch) { return ch == ' ' || ch == '\t'; }

int mt_http_started(const char *buf, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (buf[i] != '\r' && buf[i] != '\n') return 1;
  return 0;
}

size_t mt_http_head_end(const char *buf, size_t n, size_t *scanned) {
  size_t p = *scanned; /* always the start of a line */
  for (;;) {
    const char *nl = memchr(buf + p, '\n', n - p);
    if (!nl) {
      *scanned = p;
      return 0;
    }
    size_t end = (size_t)(nl - buf) + 1, len = end - p - 1;
    int empty = len == 0 || (len == 1 && buf[p] == '\r');
    /* blank lines before the request line are skipped, not its end */
    if (empty && mt_http_started(buf, p)) {
      *scanned = end;
      return end;
    }
    p = end;
  }
}

static int hex(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

/* Decodes s in place: %XX to its byte, '+' to a space when plus. %00
 * becomes DEL rather than ending the string, so that "/app.js%00.txt"
 * cannot name "/app.js"; a '%' not followed by two hex digits stays. */
static void decode(char *s, int plus) {
  char *w = s;
  for (const char *r = s; *r; r++) {
    int hi, lo;
    if (r[0] == '%' && (hi = hex(r[1])) >= 0 && (lo = hex(r[2])) >= 0) {
      int v = hi * 16 + lo;
      *w++ = v ? (char)v : 0x7f;
      r += 2;
    } else {
      *w++ = plus && *r == '+' ? ' ' : *r;
    }
  }
  *w = 0;
}

/* Parameters in a query: its '&'-separated parts, an empty last one left
 * out (a trailing '&'). */
static unsigned count_params(const char *q) {
  unsigned n = 0;
  while (*q) {
    n++;
    const char *amp = strchr(q, '&');
    if (!amp) break;
    q = amp + 1;
  }
  return n;
}

static void split_args(char *q, mt_http_request *rq) {
  while (*q && rq->nargs < MT_HTTP_ARGS_MAX) {
    char *amp = strchr(q, '&');
    if (amp) *amp = 0;
    char *eq = strchr(q, '=');
    if (eq) *eq = 0;
    decode(q, 1);
    if (eq) decode(eq + 1, 1);
    rq->args[rq->nargs].name = q;
    rq->args[rq->nargs++].value = eq ? eq + 1 : NULL;
    if (!amp) break;
    q = amp + 1;
  }
}

/* The next line of buf[*p..n), ended by LF (a CR before it dropped) and
 * NUL-terminated in place. */
static char *next_line(char *buf, size_t n, size_t *p) {
  char *line = buf + *p, *nl = memchr(line, '\n', n - *p);
  if (!nl) { /* mt_http_head_end found the end: not reached */
    *p = n;
    return NULL;
  }
  *p = (size_t)(nl - buf) + 1;
  if (nl > line && nl[-1] == '\r') nl--;
  *nl = 0;
  return line;
}

static unsigned request_line(char *line, const mt_http_limits *lim, mt_http_request *rq,
                             char *msg, size_t msglen) {
  char *sp1 = strchr(line, ' '), *sp2 = strrchr(line, ' ');
  if (!sp1 || sp1 == sp2) {
    snprintf(msg, msglen, "malformed request line (want METHOD TARGET HTTP/1.1)");
    return 400;
  }
  *sp1 = *sp2 = 0;
  char *target = sp1 + 1, *version = sp2 + 1;
  int bad_target = !*target;
  for (const unsigned char *t = (const unsigned char *)target; *t; t++)
    if (*t <= ' ' || *t == 0x7f) bad_target = 1;
  if (!token(line) || bad_target) {
    snprintf(msg, msglen, "malformed request line (want METHOD TARGET HTTP/1.1)");
    return 400;
  }
  if (strlen(version) != 8 || strncmp(version, "HTTP/", 5) != 0 || hex(version[5]) < 0 ||
      hex(version[5]) > 9 || version[6] != '.' || hex(version[7]) < 0 || hex(version[7]) > 9) {
    snprintf(msg, msglen, "malformed HTTP version '%.20s' (want HTTP/1.1)", version);
    return 400;
  }
  if (version[5] != '1') {
    snprintf(msg, msglen, "HTTP version not supported: %s (this server speaks HTTP/1.0 and 1.1)",
             version);
    return 505;
  }
  rq->method = line;
  rq->minor = version[7] == '0' ? 0 : 1; /* a later 1.x is read as 1.1 */
  rq->target_len = strlen(target);
  if (rq->target_len > lim->max_target) {
    snprintf(msg, msglen, "request target too long: %zu bytes (at most %zu)", rq->target_len,
             lim->max_target);
    return 414;
  }
  char *q = strchr(target, '?');
  unsigned params = q ? count_params(q + 1) : 0, max_args = lim->max_args;
  if (max_args > MT_HTTP_ARGS_MAX) max_args = MT_HTTP_ARGS_MAX;
  if (params > max_args) {
    snprintf(msg, msglen, "too many query parameters: %u (at most %u)", params, max_args);
    return 400;
  }
  if (q) {
    *q = 0;
    split_args(q + 1, rq);
  }
  /* the absolute form (a request to a proxy) names the same path */
  if (strncasecmp(target, "http://", 7) == 0 || strncasecmp(target, "https://", 8) == 0) {
    char *slash = strchr(strchr(target, ':') + 3, '/');
    if (slash) {
      target = slash;
    } else { /* no path: "/", written over the scheme */
      target[0] = '/';
      target[1] = 0;
    }
  }
  decode(target, 0);
  rq->path = target;
  return 0;
}

typedef struct framing {
  unsigned hosts;
  const char *length; /* the first Content-Length */
} framing;

/* What the fields that frame the request say: a body, a close. 0 or a
 * status. */
static unsigned frame_field(const char *name, const char *value, framing *f, mt_http_request *rq,
                            char *msg, size_t msglen) {
  if (strcasecmp(name, "Host") == 0) {
    f->hosts++;
  } else if (strcasecmp(name, "Content-Length") == 0) {
    int digits = *value != 0;
    for (const char *v = value; *v; v++)
      if (*v < '0' || *v > '9') digits = 0;
    if (!digits || (f->length && strcmp(f->length, value) != 0)) {
      snprintf(msg, msglen, "bad Content-Length '%.40s'", value);
      return 400;
    }
    f->length = value;
    if (value[strspn(value, "0")]) rq->has_body = 1;
  } else if (strcasecmp(name, "Transfer-Encoding") == 0) {
    rq->has_body = 1;
  } else if (strcasecmp(name, "Connection") == 0) {
    for (const char *v = value;; v++) { /* a list of options */
      size_t n = strcspn(v, ",");
      const char *s = v, *e = v + n;
      while (s < e && blank(*s)) s++;
      while (e > s && blank(e[-1])) e--;
      if (e - s == 5 && strncasecmp(s, "close", 5) == 0) rq->close = 1;
      v += n;
      if (!*v) break;
    }
  }
  return 0;
}

unsigned mt_http_parse(char *buf, size_t n, const mt_http_limits *lim, mt_http_request *rq,
                       char *msg, size_t msglen) {
  memset(rq, 0, sizeof *rq);
  size_t p = 0;
  while (p < n && (buf[p] == '\r' || buf[p] == '\n')) p++;
  /* the lines are read as C strings: a NUL would hide what follows it */
  const char *nul = memchr(buf + p, 0, n - p);
  if (nul) {
    snprintf(msg, msglen, "a NUL byte in the request head, at byte %zu", (size_t)(nul - buf));
    return 400;
  }
  char *line = next_line(buf, n, &p);
  if (!line) {
    snprintf(msg, msglen, "no request line");
    return 400;
  }
  unsigned st = request_line(line, lim, rq, msg, msglen);
  if (st) return st;
  size_t bytes = 0;
  unsigned fields = 0;
  framing f = {0, NULL};
  while ((line = next_line(buf, n, &p)) && *line) {
    if (blank(*line)) {
      snprintf(msg, msglen, "a folded header line (obsolete line folding is refused)");
      return 400;
    }
    char *colon = strchr(line, ':');
    if (colon) *colon = 0;
    if (!colon || !token(line)) {
      snprintf(msg, msglen, "malformed header field '%.40s' (want NAME: VALUE)", line);
      return 400;
    }
    char *value = colon + 1, *end = value + strlen(value);
    while (blank(*value)) value++;
    while (end > value && blank(end[-1])) end--;
    *end = 0;
    for (const unsigned char *v = (const unsigned char *)value; *v; v++)
      if ((*v < ' ' && *v != '\t') || *v == 0x7f) {
        snprintf(msg, msglen, "a control byte in header field '%.40s'", line);
        return 400;
      }
    bytes += strlen(line) + strlen(value) + 4; /* ": " and CRLF */
    fields++;
    if (rq->nfields < MT_HTTP_FIELDS_MAX) {
      rq->field_name[rq->nfields] = line;
      rq->field_value[rq->nfields++] = value;
    }
    if ((st = frame_field(line, value, &f, rq, msg, msglen))) return st;
  }
  unsigned max_headers = lim->max_headers;
  if (max_headers > MT_HTTP_FIELDS_MAX) max_headers = MT_HTTP_FIELDS_MAX;
  if (bytes > lim->max_header_bytes || fields > max_headers) {
    snprintf(msg, msglen,
             "request header fields too large: %zu bytes in %u fields (at most %zu bytes in %u "
             "fields)",
             bytes, fields, lim->max_header_bytes, max_headers);
    return 431;
  }
  if (f.hosts > 1 || (f.hosts == 0 && rq->minor == 1)) {
    snprintf(msg, msglen, f.hosts ? "more than one Host header field"
                                   : "no Host header field (an HTTP/1.1 request needs one)");
    return 400;
  }
  if (rq->minor == 0 || rq->has_body) rq->close = 1;
  return 0;
}

const char *mt_http_field(const mt_http_request *rq, const char *name) {
  for (unsigned i = 0; i < rq->nfields; i++)
    if (strcasecmp(rq->field_name[i], name) == 0) return rq->field_value[i];
  return NULL;
}

int mt_http_cookie(const mt_http_request *rq, const char *name, char *buf, size_t n) {
  size_t name_len = strlen(name);
  for (unsigned i = 0; i < rq->nfields; i++) {
    if (strcasecmp(rq->field_name[i], "Cookie") != 0) continue;
    for (const char *c = rq->field_value[i]; *c;) {
      size_t len = strcspn(c, ";");
      const char *e = c + len, *s = c;
      while (s < e && blank(*s)) s++;
      if ((size_t)(e - s) > name_len && strncmp(s, name, name_len) == 0 && s[name_len] == '=') {
        const char *v = s + name_len + 1, *ve = e;
        while (ve > v && blank(ve[-1])) ve--;
        if (ve - v >= 2 && *v == '"' && ve[-1] == '"') v++, ve--;
        if ((size_t)(ve - v) >= n) return 0;
        memcpy(buf, v, (size_t)(ve - v));
        buf[ve - v] = 0;
        return 1;
      }
      c = e + (*e == ';');
    }
  }
  return 0;
}
