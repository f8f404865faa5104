/* The tracer's sorted symbol tables (src/tracer/symbols/symtab.c) against elfutils'
 * dwfl_module_addrname, on all of this process's modules: the C library,
 * libm, libdw, libstdc++ if installed (stripped: ELF symbols only), this
 * program (a full .symtab with locals and sizeless labels) and
 * symtab_cases.c's library of unusual layouts. For every symbol: its start,
 * start + 1, its middle, last byte, the first byte past it and the byte
 * before it; then random addresses over each module (every address of the
 * cases library). Every answer must be the same string
 * (or both none). Also times both on the random addresses (informational). */
#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dwfl_self.h"
#include "tracer/symbols/symtab.h"

#define RANDOM_PER_MODULE 4000

typedef struct stats {
  long modules, queries, named, mismatches;
  int saw_libc, saw_libm, saw_libdw, saw_self, saw_cases;
  double t_elfutils, t_table; /* seconds, random addresses, all modules */
  long timed;
} stats;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_random(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ull;
}

static void check(stats *st, Dwfl_Module *mod, const mt__symtab *t, const char *modname,
                  uint64_t addr, const char *why) {
  const char *want = dwfl_module_addrname(mod, addr);
  const char *got = mt__symtab_name(t, addr);
  st->queries++;
  if (want) st->named++;
  if ((want == NULL) != (got == NULL) || (want && strcmp(want, got) != 0)) {
    if (st->mismatches < 20)
      fprintf(stderr, "MISMATCH %s 0x%llx (%s): elfutils %s, table %s\n", modname,
              (unsigned long long)addr, why, want ? want : "(none)", got ? got : "(none)");
    st->mismatches++;
  }
}

static int per_module(Dwfl_Module *mod, void **user, const char *name, Dwarf_Addr low,
                      void *arg) {
  (void)user;
  stats *st = arg;
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  if (base[0] == '[') return DWARF_CB_OK; /* [vdso] and the like */
  int is_self = strstr(base, "test_symtab") != NULL;
  int is_cases = strstr(base, "mt_symtab_cases") != NULL;
  mt__symtab *t = mt__symtab_build(mod);
  if (!t) {
    fprintf(stderr, "%s: no table (out of memory?)\n", base);
    st->mismatches++;
    return DWARF_CB_OK;
  }
  long q0 = st->queries, m0 = st->mismatches;
  int n = dwfl_module_getsymtab(mod);
  for (int i = 1; i < n; i++) {
    GElf_Sym sym;
    GElf_Addr v;
    if (!dwfl_module_getsym_info(mod, i, &sym, &v, NULL, NULL, NULL) || v == 0) continue;
    uint64_t sz = sym.st_size;
    check(st, mod, t, base, v, "start");
    check(st, mod, t, base, v + 1, "start+1");
    check(st, mod, t, base, v - 1, "start-1");
    if (sz > 1) {
      check(st, mod, t, base, v + sz / 2, "middle");
      check(st, mod, t, base, v + sz - 1, "last byte");
    }
    check(st, mod, t, base, v + sz, "past end");
  }
  Dwarf_Addr high = 0;
  dwfl_module_info(mod, NULL, NULL, &high, NULL, NULL, NULL, NULL);
  if (is_cases) /* small: every address */
    for (uint64_t a = low - 16; a < high + 16; a++) check(st, mod, t, base, a, "every");
  uint64_t addrs[RANDOM_PER_MODULE];
  for (int i = 0; i < RANDOM_PER_MODULE; i++) addrs[i] = low + next_random() % (high - low);
  for (int i = 0; i < RANDOM_PER_MODULE; i++) check(st, mod, t, base, addrs[i], "random");
  /* timing: each side alone, same addresses */
  uintptr_t sink = 0;
  double t0 = test_now();
  for (int i = 0; i < RANDOM_PER_MODULE; i++)
    sink += (uintptr_t)dwfl_module_addrname(mod, addrs[i]);
  double t1 = test_now();
  for (int i = 0; i < RANDOM_PER_MODULE; i++) sink += (uintptr_t)mt__symtab_name(t, addrs[i]);
  double t2 = test_now();
  mt__symtab *again = mt__symtab_build(mod); /* elfutils has read the symbols */
  double t3 = test_now();
  if (again && mt__symtab_count(again) != mt__symtab_count(t)) {
    fprintf(stderr, "%s: a second build kept %zu symbols, the first %zu\n", base,
            mt__symtab_count(again), mt__symtab_count(t));
    st->mismatches++;
  }
  mt__symtab_free(again);
  if (sink == 1) puts(""); /* keep the loops */
  printf("%-24s %6d symbols, %6zu kept, %7ld queries, %ld mismatches; random lookup: "
         "elfutils %.2f us, table %.3f us; build %.0f us\n",
         base, n, mt__symtab_count(t), st->queries - q0, st->mismatches - m0,
         (t1 - t0) * 1e6 / RANDOM_PER_MODULE, (t2 - t1) * 1e6 / RANDOM_PER_MODULE,
         (t3 - t2) * 1e6);
  st->t_elfutils += t1 - t0;
  st->t_table += t2 - t1;
  st->timed += RANDOM_PER_MODULE;
  st->modules++;
  st->saw_libc |= strncmp(base, "libc.so", 7) == 0;
  st->saw_libm |= strncmp(base, "libm.so", 7) == 0;
  st->saw_libdw |= strncmp(base, "libdw", 5) == 0;
  st->saw_self |= is_self;
  st->saw_cases |= is_cases;

  /* the per-Dwfl set: the table is built at the first lookup, once; the
   * same answers throughout */
  mt__symtabs set = {0};
  for (int i = 0; i < 64; i++) {
    if (mt__symtabs_name(&set, mod, addrs[i]) != mt__symtab_name(t, addrs[i])) {
      fprintf(stderr, "%s: the set answers differently at 0x%llx\n", base,
              (unsigned long long)addrs[i]);
      st->mismatches++;
    }
    if (set.n != 1 || set.tables[0] == NULL) {
      fprintf(stderr, "%s: after %d lookups the table is not built\n", base, i + 1);
      st->mismatches++;
    }
  }
  if (set.n != 1) {
    fprintf(stderr, "%s: the set holds %zu tables for one module\n", base, set.n);
    st->mismatches++;
  }
  mt__symtabs_clear(&set);
  mt__symtab_free(t);
  return DWARF_CB_OK;
}

int main(void) {
  volatile double x = 2.0;
  if (nextafter(x, 3.0) <= x) return 1; /* keeps libm loaded */
  /* symbol layouts for the rare rules (symtab_cases.c) */
  if (!dlopen(MT_SYMTAB_CASES, RTLD_NOW)) {
    fprintf(stderr, "cannot load %s: %s\n", MT_SYMTAB_CASES, dlerror());
    return 1;
  }
  /* C++'s library when installed: many weak symbols and aliases */
  if (!dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL)) printf("no libstdc++: %s\n", dlerror());
  Dwfl *dwfl = test_dwfl_self(mt__dwfl_embedded_only);
  if (!dwfl) return 1;
  stats st = {0};
  dwfl_getmodules(dwfl, per_module, &st, 0);
  dwfl_end(dwfl);
  printf("%ld modules, %ld queries (%ld named), %ld mismatches\n", st.modules, st.queries,
         st.named, st.mismatches);
  if (st.timed)
    printf("random lookups: elfutils %.2f us, table %.3f us each: %.0fx faster\n",
           st.t_elfutils * 1e6 / st.timed, st.t_table * 1e6 / st.timed,
           st.t_table > 0 ? st.t_elfutils / st.t_table : 0.0);
  if (!st.saw_libc || !st.saw_libm || !st.saw_libdw || !st.saw_self || !st.saw_cases) {
    fprintf(stderr, "missing modules: libc %d, libm %d, libdw %d, self %d, cases %d\n",
            st.saw_libc, st.saw_libm, st.saw_libdw, st.saw_self, st.saw_cases);
    return 1;
  }
  return st.mismatches ? 1 : 0;
}
