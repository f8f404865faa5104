/* CPython 3.12's and 3.13's perf trampoline on x86-64 (`-X perf`), for the
 * tests and benchmarks that need one where CPython puts them: in anonymous
 * memory made executable, one copy per Python function. Its bytes:
 * [endbr64;] sub $8,%rsp; call *%rcx; add $8,%rsp; ret (endbr64 when
 * CPython is built with -fcf-protection). No frame record, no unwind
 * tables. Header-only: each test program and benchmark is its own build. */
#ifndef MT_TEST_CPYTHON_TRAMPOLINE_H
#define MT_TEST_CPYTHON_TRAMPOLINE_H

#include <stddef.h>
#include <string.h>

/* Writes a trampoline at p, endbr64 first if cet: its size. The return
 * address into it (past the call) is p + size - 5. */
static inline size_t put_cpython_trampoline(unsigned char *p, int cet) {
  static const unsigned char endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
  static const unsigned char code[] = {0x48, 0x83, 0xec, 0x08, 0xff, 0xd1,
                                       0x48, 0x83, 0xc4, 0x08, 0xc3};
  size_t n = 0;
  if (cet) memcpy(p, endbr64, sizeof endbr64), n = sizeof endbr64;
  memcpy(p + n, code, sizeof code);
  return n + sizeof code;
}

#endif
