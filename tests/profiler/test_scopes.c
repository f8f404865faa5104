/* The tracer's per-unit function index (src/tracer/symbols/scopes.c) against
 * libdw's own search (mt__scopes_by_libdw: dwarf_getscopes, then
 * dwarf_getscopes_die on the innermost scope, keeping its subprograms and
 * inlined subroutines up to the first subprogram), at
 * addresses all over this program: its C units (this file and the
 * profiler's, built with -g) and scopes_cases.cpp (C++ at -O2 -g: deep
 * inlining, lexical blocks in inlined code, lambdas, namespaces). Every
 * address must give the same DIEs. Also times both (informational). */
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dwfl_self.h"
#include "tracer/symbols/scopes.h"

#define MAX 64

long scopes_cases_run(int n);

int main(void) {
  if (scopes_cases_run(50) == 0) return 1; /* keeps the C++ unit */
  Dwfl *dwfl = test_dwfl_self(NULL);
  if (!dwfl) return 1;
  Dwfl_Module *mod = dwfl_addrmodule(dwfl, (Dwarf_Addr)(uintptr_t)&scopes_cases_run);
  Dwarf_Addr low = 0, high = 0;
  if (!mod || !dwfl_module_info(mod, NULL, &low, &high, NULL, NULL, NULL, NULL)) {
    fprintf(stderr, "no module for this program\n");
    return 1;
  }
  Dwarf_Addr cases = (Dwarf_Addr)(uintptr_t)&scopes_cases_run;
  mt__scopes idx = {0};
  long addrs = 0, named = 0, inlined = 0, deep = 0, cases_inlined = 0, mismatches = 0;
  double t_libdw = 0, t_index = 0;
  /* every 3rd byte of the program, every byte of scopes_cases_run */
  for (Dwarf_Addr a = low; a < high; a += (a >= cases && a < cases + 4096) ? 1 : 3) {
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, a, &bias);
    if (!cu) continue;
    Dwarf_Die want[MAX], got[MAX];
    double t0 = test_now();
    int nw = mt__scopes_by_libdw(cu, a - bias, want, MAX);
    double t1 = test_now();
    int ng = mt__scopes_at(&idx, cu, a - bias, got, MAX);
    double t2 = test_now();
    t_libdw += t1 - t0;
    t_index += t2 - t1;
    addrs++;
    int same = nw == ng;
    for (int i = 0; same && i < nw; i++) same = dwarf_dieoffset(&want[i]) == dwarf_dieoffset(&got[i]);
    if (!same) {
      if (mismatches < 10) {
        fprintf(stderr, "MISMATCH at 0x%llx: libdw %d DIEs [", (unsigned long long)a, nw);
        for (int i = 0; i < nw; i++) fprintf(stderr, " %#llx", (unsigned long long)dwarf_dieoffset(&want[i]));
        fprintf(stderr, " ], index %d [", ng);
        for (int i = 0; i < ng; i++) fprintf(stderr, " %#llx", (unsigned long long)dwarf_dieoffset(&got[i]));
        fprintf(stderr, " ]\n");
      }
      mismatches++;
    }
    if (nw > 0) named++;
    if (nw > 1) inlined++;
    if (nw > 3) deep++;
    if (nw > 1 && a >= cases && a < cases + 4096) cases_inlined++;
  }
  printf("%ld addresses, %ld in a function, %ld in inlined code (%ld of them in scopes_cases_run), "
         "%ld 4 or more deep, %ld mismatches; per address: libdw %.1f us, index %.3f us (%zu units)\n",
         addrs, named, inlined, cases_inlined, deep, mismatches, t_libdw * 1e6 / (double)addrs,
         t_index * 1e6 / (double)addrs, idx.n);
  mt__scopes_clear(&idx);
  dwfl_end(dwfl);
  /* the test covers what it is about */
  if (named < 5000 || inlined < 1000 || cases_inlined < 100 || deep < 100) {
    fprintf(stderr, "too few addresses of each kind\n");
    return 1;
  }
  return mismatches ? 1 : 0;
}
