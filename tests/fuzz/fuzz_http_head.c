/* libFuzzer target: the viewer's HTTP head parser (src/viewer/http_head.c),
 * which reads whatever a client sends.
 *
 * Input: the bytes a connection receives. Where the head ends is found
 * twice, on the whole input and in two pieces (the scan resumed), and must
 * agree; a whole head (within MT_HTTP_HEAD_MAX) is parsed in a buffer of
 * its own size, and its fields and cookies looked up.
 * Checks: memory safety and UBSan; a documented status with a message, or
 * a request whose strings lie inside the head; no more arguments or fields
 * kept than the limits allow. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "viewer/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > MT_HTTP_HEAD_MAX) size = MT_HTTP_HEAD_MAX;
  const char *in = (const char *)data;
  size_t sc = 0, end = mt_http_head_end(in, size, &sc);
  size_t sc2 = 0, half = size / 2, end2 = mt_http_head_end(in, half, &sc2);
  if (!end2) end2 = mt_http_head_end(in, size, &sc2);
  if (end != end2 || sc > size) abort();
  if (!end) return 0;
  char *buf = malloc(end); /* exactly the head: a read past it is caught */
  if (!buf) return 0;
  memcpy(buf, in, end);
  static const mt_http_limits lim = {16384, 48, 16384, 100};
  static mt_http_request rq;
  char msg[256] = "";
  unsigned st = mt_http_parse(buf, end, &lim, &rq, msg, sizeof msg);
  if (st != 0 && st != 400 && st != 414 && st != 431 && st != 505) abort();
  if (st && !msg[0]) abort();
  if (!st) {
    if (rq.method < buf || rq.method >= buf + end || rq.path < buf || rq.path >= buf + end) abort();
    if (rq.nargs > lim.max_args || rq.nfields > lim.max_headers) abort();
    for (unsigned i = 0; i < rq.nargs; i++)
      if (strlen(rq.args[i].name) > end) abort();
    char c[64];
    mt_http_field(&rq, "host");
    mt_http_cookie(&rq, "memtrace_token_8080", c, sizeof c);
    mt_http_cookie(&rq, "a", c, 2);
  }
  free(buf);
  return 0;
}
