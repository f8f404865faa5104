/* libFuzzer target: Rust symbol names (src/tracer/runtimes/rustdemangle.h).
 *
 * The input, cut at its first NUL, is tried as it is, after "_R" and after
 * "_ZN" (so that most inputs reach the readers' depths). Every call must
 * return within bounds and, when it accepts a name, agree with itself: the
 * length returned is the string written, the same name fits exactly in
 * that length plus its NUL and not in one byte less. Anything else aborts;
 * the sanitizers catch reads out of bounds and stack overflows. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/runtimes/rustdemangle.h"

#define CAP 4096

static void check(const char *sym) {
  static char out[CAP], again[CAP];
  long n = mt__rust_demangle(sym, out, CAP);
  if (n < 0) return;
  if (n >= CAP || strlen(out) != (size_t)n) abort();
  if (mt__rust_demangle(sym, again, (size_t)n + 1) != n || memcmp(out, again, (size_t)n + 1) != 0)
    abort();
  if (mt__rust_demangle(sym, again, (size_t)n) != -1) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char sym[8 + 65536];
  if (size > 65536) size = 65536;
  memcpy(sym, data, size);
  sym[size] = 0;
  check(sym);
  size_t len = strlen(sym);
  memmove(sym + 2, sym, len + 1);
  memcpy(sym, "_R", 2);
  check(sym);
  memmove(sym + 3, sym + 2, len + 1);
  memcpy(sym, "_ZN", 3);
  check(sym);
  return 0;
}
