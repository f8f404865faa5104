/* The viewer's HTTP head parser (src/viewer/http_head.c): where a head
 * ends, what a good one holds, and the status and message of every bad
 * form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http.h"

static const mt_http_limits LIM = {16384, 48, 16384, 100};

typedef struct parsed {
  char buf[MT_HTTP_HEAD_MAX + 1];
  mt_http_request rq;
  char msg[256];
  unsigned status;
} parsed;

static parsed *parse_n(const char *head, size_t n) {
  static parsed p;
  assert_true(n <= MT_HTTP_HEAD_MAX);
  memcpy(p.buf, head, n + 1);
  p.msg[0] = 0;
  p.status = mt_http_parse(p.buf, n, &LIM, &p.rq, p.msg, sizeof p.msg);
  return &p;
}

static parsed *parse(const char *head) { return parse_n(head, strlen(head)); }

/* head gets status, with every word of words (NULL-ended) in its message. */
static void refused(const char *head, unsigned status, ...) {
  parsed *p = parse(head);
  if (p->status != status) fail_msg("%.80s: status %u (%s), want %u", head, p->status, p->msg, status);
  va_list ap;
  va_start(ap, status);
  for (const char *w; (w = va_arg(ap, const char *));)
    if (!strstr(p->msg, w)) fail_msg("%.80s: message '%s' lacks '%s'", head, p->msg, w);
  va_end(ap);
}

static void test_head_end(void **state) {
  (void)state;
  size_t sc = 0;
  const char *h = "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /next";
  assert_int_equal(mt_http_head_end(h, strlen(h), &sc), 27);
  sc = 0;
  assert_int_equal(mt_http_head_end(h, 26, &sc), 0);
  /* blank lines before a request are not its end */
  const char *lead = "\r\n\n\r\nGET / HTTP/1.0\n\n";
  sc = 0;
  assert_int_equal(mt_http_head_end(lead, strlen(lead), &sc), strlen(lead));
  sc = 0;
  assert_int_equal(mt_http_head_end(lead, 5, &sc), 0);
  assert_false(mt_http_started(lead, 5));
  assert_true(mt_http_started(lead, 6));
  /* a bare CR ends nothing */
  sc = 0;
  assert_int_equal(mt_http_head_end("GET / HTTP/1.1\r\r", 16, &sc), 0);
  /* fed a byte at a time, the same end, each byte looked at once */
  size_t n = strlen(h), got = 0;
  sc = 0;
  for (size_t k = 1; k <= n && !got; k++) {
    size_t before = sc;
    got = mt_http_head_end(h, k, &sc);
    assert_true(sc >= before && sc <= k);
  }
  assert_int_equal(got, 27);
}

static void test_good_request(void **state) {
  (void)state;
  parsed *p = parse("GET /api/sites?n=3&inside=a+b%2Bc&hide&x=&%6e%61me=%00z HTTP/1.1\r\n"
                    "Host: localhost:8080\r\n"
                    "X-Blank:   spaced value \t\r\n"
                    "cookie: a=1; memtrace_token_8080=\"abc\" ;b=2\r\n"
                    "Cookie: c=3\r\n"
                    "Content-Length: 0\r\n"
                    "\r\n");
  assert_int_equal(p->status, 0);
  const mt_http_request *rq = &p->rq;
  assert_string_equal(rq->method, "GET");
  assert_string_equal(rq->path, "/api/sites");
  assert_int_equal(rq->minor, 1);
  assert_int_equal(rq->target_len, strlen("/api/sites?n=3&inside=a+b%2Bc&hide&x=&%6e%61me=%00z"));
  assert_int_equal(rq->nargs, 5);
  assert_string_equal(rq->args[0].name, "n");
  assert_string_equal(rq->args[0].value, "3");
  assert_string_equal(rq->args[1].value, "a b+c"); /* '+' a space, %2B a plus */
  assert_string_equal(rq->args[2].name, "hide");
  assert_null(rq->args[2].value);
  assert_string_equal(rq->args[3].value, "");
  assert_string_equal(rq->args[4].name, "name");
  assert_string_equal(rq->args[4].value, "\x7fz"); /* %00 never ends a string */
  assert_string_equal(mt_http_field(rq, "x-blank"), "spaced value");
  assert_string_equal(mt_http_field(rq, "HOST"), "localhost:8080");
  assert_null(mt_http_field(rq, "Referer"));
  char c[8];
  assert_true(mt_http_cookie(rq, "memtrace_token_8080", c, sizeof c));
  assert_string_equal(c, "abc");
  assert_true(mt_http_cookie(rq, "c", c, sizeof c));
  assert_string_equal(c, "3");
  assert_true(mt_http_cookie(rq, "b", c, sizeof c));
  assert_false(mt_http_cookie(rq, "memtrace_token_808", c, sizeof c));
  assert_false(mt_http_cookie(rq, "a", c, 1)); /* does not fit */
  assert_false(rq->has_body);
  assert_false(rq->close);
}

static void test_paths(void **state) {
  (void)state;
  parsed *p = parse("GET /app.js%00.txt HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_int_equal(p->status, 0);
  assert_string_equal(p->rq.path, "/app.js\x7f.txt");
  p = parse("GET /a+b%2f%zz% HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_string_equal(p->rq.path, "/a+b/%zz%"); /* a path keeps '+' */
  p = parse("GET http://example.org:80/api/status?n=1 HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_int_equal(p->status, 0);
  assert_string_equal(p->rq.path, "/api/status");
  assert_int_equal(p->rq.nargs, 1);
  p = parse("GET HTTPS://example.org HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_string_equal(p->rq.path, "/");
  p = parse("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_string_equal(p->rq.path, "*");
  /* a query's parts: '&&' is an empty one, a trailing '&' none */
  p = parse("GET /?a&&b& HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_int_equal(p->rq.nargs, 3);
  assert_string_equal(p->rq.args[1].name, "");
}

static void test_framing(void **state) {
  (void)state;
  parsed *p = parse("\r\n\r\nGET / HTTP/1.0\n\n"); /* blank lines first, bare LFs */
  assert_int_equal(p->status, 0);
  assert_int_equal(p->rq.minor, 0);
  assert_true(p->rq.close); /* 1.0: no Host needed, and the connection closes */
  p = parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Close\r\n\r\n");
  assert_true(p->rq.close);
  p = parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n");
  assert_false(p->rq.close);
  p = parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n");
  assert_int_equal(p->status, 0);
  assert_true(p->rq.has_body);
  assert_true(p->rq.close);
  p = parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 000\r\n\r\n");
  assert_false(p->rq.has_body);
  p = parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n");
  assert_true(p->rq.has_body);
  p = parse("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  assert_true(p->rq.has_body && p->rq.close);
  p = parse("GET / HTTP/1.7\r\nHost: x\r\n\r\n");
  assert_int_equal(p->status, 0);
  assert_int_equal(p->rq.minor, 1); /* a later 1.x is read as 1.1 */
}

static void test_bad_request_lines(void **state) {
  (void)state;
  refused("GET /\r\nHost: x\r\n\r\n", 400, "malformed request line", NULL);
  refused("GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400, "malformed request line", NULL);
  refused("GET /a b HTTP/1.1\r\nHost: x\r\n\r\n", 400, "malformed request line", NULL);
  refused("G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400, "malformed request line", NULL);
  refused(" / HTTP/1.1\r\nHost: x\r\n\r\n", 400, "malformed request line", NULL);
  refused("GET /\x01 HTTP/1.1\r\nHost: x\r\n\r\n", 400, "malformed request line", NULL);
  refused("GET / http/1.1\r\nHost: x\r\n\r\n", 400, "malformed HTTP version", NULL);
  refused("GET / HTTP/1.10\r\nHost: x\r\n\r\n", 400, "malformed HTTP version", NULL);
  refused("GET / HTTP/1.1\rX\r\nHost: x\r\n\r\n", 400, "malformed HTTP version", NULL);
  refused("GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, "HTTP/2.0", "1.1", NULL);
  refused("GET / HTTP/0.9\r\nHost: x\r\n\r\n", 505, "not supported", NULL);
}

static char *repeat(const char *prefix, const char *unit, unsigned n, const char *suffix) {
  size_t len = strlen(prefix) + strlen(unit) * n + strlen(suffix) + 1;
  char *s = malloc(len), *w = s;
  w += sprintf(w, "%s", prefix);
  for (unsigned i = 0; i < n; i++) w += sprintf(w, "%s", unit);
  sprintf(w, "%s", suffix);
  return s;
}

static void test_limits(void **state) {
  (void)state;
  /* the target: at its limit read, past it 414 with its length */
  char *h = repeat("GET /", "a", 16383, " HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_int_equal(parse(h)->status, 0);
  free(h);
  h = repeat("GET /", "a", 16384, " HTTP/1.1\r\nHost: x\r\n\r\n");
  refused(h, 414, "request target too long: 16385 bytes", "16384", NULL);
  free(h);
  /* the parameters: 48 read, 49 refused, counted as sent */
  h = repeat("GET /?x", "&x", 47, " HTTP/1.1\r\nHost: x\r\n\r\n");
  parsed *p = parse(h);
  assert_int_equal(p->status, 0);
  assert_int_equal(p->rq.nargs, 48);
  free(h);
  h = repeat("GET /?x", "&x", 48, " HTTP/1.1\r\nHost: x\r\n\r\n");
  refused(h, 400, "too many query parameters: 49", "48", NULL);
  free(h);
  h = repeat("GET /?", "&", 3000, " HTTP/1.1\r\nHost: x\r\n\r\n");
  refused(h, 400, "too many query parameters: 3000", NULL);
  free(h);
  /* the fields: 100 read, 101 refused; and their bytes */
  h = repeat("GET / HTTP/1.1\r\nHost: x\r\n", "X: v\r\n", 99, "\r\n");
  p = parse(h);
  assert_int_equal(p->status, 0);
  assert_int_equal(p->rq.nfields, 100);
  free(h);
  h = repeat("GET / HTTP/1.1\r\nHost: x\r\n", "X: v\r\n", 100, "\r\n");
  refused(h, 431, "request header fields too large", "101 fields", NULL);
  free(h);
  h = repeat("GET / HTTP/1.1\r\nHost: x\r\nX-Big: ", "b", 16400, "\r\n\r\n");
  refused(h, 431, "request header fields too large", "16384 bytes", NULL);
  free(h);
}

static void test_bad_fields(void **state) {
  (void)state;
  refused("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400, "folded", NULL);
  refused("GET / HTTP/1.1\r\nHost: x\r\n\tfolded\r\n\r\n", 400, "folded", NULL);
  refused("GET / HTTP/1.1\r\nHost: x\r\nName-only\r\n\r\n", 400, "malformed header field 'Name-only'",
          NULL);
  refused("GET / HTTP/1.1\r\nHost: x\r\n: v\r\n\r\n", 400, "malformed header field", NULL);
  refused("GET / HTTP/1.1\r\nHost: x\r\nSp ace: v\r\n\r\n", 400, "malformed header field", NULL);
  refused("GET / HTTP/1.1\r\nHost: x\r\nName : v\r\n\r\n", 400, "malformed header field", NULL);
  refused("GET / HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n", 400, "control byte", "'X'", NULL);
  refused("GET / HTTP/1.1\r\nHost: x\r\nX: a\x7f\r\n\r\n", 400, "control byte", NULL);
  refused("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400, "bad Content-Length '-1'",
          NULL);
  refused("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\n", 400, "Content-Length", NULL);
  refused("GET / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n", 400, "Content-Length", NULL);
  refused("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400,
          "Content-Length '4'", NULL);
  refused("GET / HTTP/1.1\r\n\r\n", 400, "no Host", NULL);
  refused("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "more than one Host", NULL);
  /* a NUL anywhere: what follows it would go unread */
  static const char nul_line[] = "CONNECT /x HTTP/1.1\0\rHost: x\r\r\nGET / HTTP/1.1\r\n\r\n";
  parsed *p = parse_n(nul_line, sizeof nul_line - 1);
  assert_int_equal(p->status, 400);
  assert_non_null(strstr(p->msg, "a NUL byte in the request head, at byte 19"));
  static const char nul_field[] = "GET / HTTP/1.1\r\nHost: x\0y\r\n\r\n";
  p = parse_n(nul_field, sizeof nul_field - 1);
  assert_int_equal(p->status, 400);
  assert_non_null(strstr(p->msg, "NUL byte"));
  /* bytes past 0x7f are text in a value */
  assert_int_equal(parse("GET / HTTP/1.1\r\nHost: x\r\nX: caf\xc3\xa9\r\n\r\n")->status, 0);
}

/* Random heads: a status among those documented, and a request whose
 * strings are all inside the buffer when it is 0. */
static void test_random_heads(void **state) {
  (void)state;
  static const char *pieces[] = {"GET", "HEAD", " ", "/", "/api/status", "?", "&", "=", "%",
                                 "%4", "%41", "+", "HTTP/1.1", "HTTP/1.0", "HTTP/2", "\r\n", "\n",
                                 "\r", ":", "Host", "Host: x\r\n", "Cookie: a=\"b", ";",
                                 "Content-Length: ", "7", "Connection: close", "\t", "\x01",
                                 "\xff", "token=", "x"};
  static parsed p;
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (int round = 0; round < 20000; round++) {
    size_t n = 0;
    int parts = 1 + (int)(seed >> 60);
    for (int k = 0; k < parts * 3; k++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      const char *s = pieces[(seed >> 33) % (sizeof pieces / sizeof *pieces)];
      memcpy(p.buf + n, s, strlen(s));
      n += strlen(s);
    }
    memcpy(p.buf + n, "\r\n\r\n", 4);
    n += 4;
    size_t sc = 0, end = mt_http_head_end(p.buf, n, &sc);
    if (!end) continue;
    unsigned st = mt_http_parse(p.buf, end, &LIM, &p.rq, p.msg, sizeof p.msg);
    assert_true(st == 0 || st == 400 || st == 414 || st == 431 || st == 505);
    if (st) {
      assert_true(p.msg[0] != 0);
      continue;
    }
    const char *strs[] = {p.rq.method, p.rq.path};
    for (int k = 0; k < 2; k++) assert_true(strs[k] >= p.buf && strs[k] < p.buf + end);
    for (unsigned i = 0; i < p.rq.nfields; i++)
      assert_true(p.rq.field_value[i] >= p.buf && p.rq.field_value[i] < p.buf + end);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_head_end),         cmocka_unit_test(test_good_request),
      cmocka_unit_test(test_paths),            cmocka_unit_test(test_framing),
      cmocka_unit_test(test_bad_request_lines), cmocka_unit_test(test_limits),
      cmocka_unit_test(test_bad_fields),       cmocka_unit_test(test_random_heads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
