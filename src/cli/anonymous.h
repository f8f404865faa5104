/* The name the tracer gives a code in no symbol (a stripped program's, a
 * library's local function): "MODULE+0xOFFSET", the module's path as its
 * file (src/tracer/symbols/symbols.c). Read by memtrace run's report and by
 * memtrace symbolize. */
#ifndef MT_CLI_ANONYMOUS_H
#define MT_CLI_ANONYMOUS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Whether function is such a name; *offset (may be NULL) receives OFFSET. */
static inline int mt_cli_anonymous_name(const char *function, uint64_t *offset) {
  const char *plus = function ? strstr(function, "+0x") : NULL;
  if (!plus || !plus[3] || strspn(plus + 3, "0123456789abcdef") != strlen(plus + 3)) return 0;
  if (offset) *offset = strtoull(plus + 3, NULL, 16);
  return 1;
}

#endif
