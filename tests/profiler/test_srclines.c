/* The tracer's line-table reader (src/tracer/dwline.c, through
 * srclines.c) against libdw's dwfl_module_getsrc and dwfl_lineinfo: the
 * same file, line and column at every third byte of every module of this
 * process that has DWARF: this program (C, and the C++ of scopes_cases.cpp
 * at -O2 -g), the two builds of lines_cases.c (DWARF 4; a library whose
 * line tables hold sequences of code the linker dropped), libmemtrace.so
 * (the format library, C at -O2 -g), and any library
 * named on the command line (dlopened first: a manual check on a big
 * one); and every file name of each unit's table, as an inlined call's
 * DW_AT_call_file names it (dwarf_getsrcfiles, dwarf_filesrc). Every unit of this program's own modules must be read by the
 * reader, not left to libdw. Also times both (informational). */
#include <dlfcn.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dwfl_self.h"
#include "srclines.h"

long scopes_cases_run(int n);

typedef struct totals {
  long addrs, rows, libdw_left, mismatches, modules, files;
  double t_libdw, t_reader;
  const char *own_dir; /* modules under it must have every unit read */
  long own_addrs, own_left;
} totals;

static int same_str(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

/* Every file of cu's table (and two past its end), by name, as
 * dwarf_getsrcfiles and dwarf_filesrc give them. */
static void check_files(mt__srclines *lines, Dwarf_Die *cu, const char *module, totals *t) {
  Dwarf_Files *files;
  size_t nfiles = 0;
  if (dwarf_getsrcfiles(cu, &files, &nfiles) != 0) files = NULL;
  for (size_t i = 0; i < nfiles + 2; i++) {
    char buf[4096];
    const char *want = files ? dwarf_filesrc(files, i, NULL, NULL) : NULL, *got = NULL;
    if (mt__srclines_file(lines, cu, i, buf, sizeof buf, &got) < 0) return; /* counted below */
    t->files++;
    if (!same_str(want, got)) {
      if (t->mismatches < 10)
        fprintf(stderr, "MISMATCH in %s, unit %s, file %zu: libdw %s, reader %s\n", module,
                dwarf_diename(cu), i, want ? want : "(null)", got ? got : "(null)");
      t->mismatches++;
    }
  }
}

static int check_module(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
                        void *arg) {
  (void)userdata;
  totals *t = arg;
  Dwarf_Addr bias, end = 0;
  if (!dwfl_module_getdwarf(mod, &bias)) return DWARF_CB_OK; /* no DWARF */
  dwfl_module_info(mod, NULL, NULL, &end, NULL, NULL, NULL, NULL);
  const char *main_file = NULL;
  dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &main_file, NULL);
  int own = main_file && strncmp(main_file, t->own_dir, strlen(t->own_dir)) == 0;
  mt__srclines lines = {0};
  long before = t->addrs;
  void *last_cu = NULL;
  for (Dwarf_Addr a = start; a < end; a += 3) {
    Dwarf_Addr cu_bias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, a, &cu_bias);
    if (!cu) continue;
    if (cu->addr != last_cu) check_files(&lines, cu, name, t);
    last_cu = cu->addr;
    const char *want_file = NULL, *got_file = NULL;
    int want_line = 0, want_col = 0, got_line = 0, got_col = 0;
    char buf[4096];
    double t0 = test_now();
    Dwfl_Line *l = dwfl_module_getsrc(mod, a);
    if (l) want_file = dwfl_lineinfo(l, NULL, &want_line, &want_col, NULL, NULL);
    double t1 = test_now();
    int r = mt__srclines_at(&lines, cu, a - cu_bias, buf, sizeof buf, &got_file, &got_line, &got_col);
    double t2 = test_now();
    t->t_libdw += t1 - t0;
    t->t_reader += t2 - t1;
    t->addrs++;
    if (own) t->own_addrs++;
    if (r < 0) {
      t->libdw_left++;
      if (own) t->own_left++;
      continue;
    }
    int same = (r == 1) == (l != NULL) &&
               (!l || (same_str(want_file, got_file) && want_line == got_line && want_col == got_col));
    if (l) t->rows++;
    if (!same) {
      if (t->mismatches < 10)
        fprintf(stderr, "MISMATCH in %s at +0x%llx: libdw %s %s:%d:%d, reader %s %s:%d:%d\n", name,
                (unsigned long long)(a - start), l ? "row" : "none", want_file ? want_file : "(null)",
                want_line, want_col, r ? "row" : "none", got_file ? got_file : "(null)", got_line,
                got_col);
      t->mismatches++;
    }
  }
  if (t->addrs > before) {
    t->modules++;
    printf("  %s: %ld addresses%s\n", name, t->addrs - before, own ? " (this build's)" : "");
  }
  mt__srclines_clear(&lines);
  return DWARF_CB_OK;
}

unsigned lines_cases_run(int rounds);

int main(int argc, char **argv) {
  if (scopes_cases_run(50) == 0) return 1; /* keeps the C++ unit */
  const char *libs[] = {MT_LINES_V4, MT_LINES_GC};
  for (size_t i = 0; i < 2; i++) {
    void *h = dlopen(libs[i], RTLD_NOW);
    unsigned (*run)(int) = h ? (unsigned (*)(int))dlsym(h, "lines_cases_run") : NULL;
    if (!run || run(3) == 0) {
      fprintf(stderr, "cannot load %s: %s\n", libs[i], dlerror());
      return 1;
    }
  }
  if (!dlopen(MT_LIBMEMTRACE, RTLD_NOW)) { /* more of this build's code: the format library */
    fprintf(stderr, "cannot load %s: %s\n", MT_LIBMEMTRACE, dlerror());
    return 1;
  }
  for (int i = 1; i < argc; i++)
    if (!dlopen(argv[i], RTLD_NOW | RTLD_GLOBAL)) fprintf(stderr, "(cannot load %s: %s)\n", argv[i], dlerror());
  Dwfl *dwfl = test_dwfl_self(NULL);
  if (!dwfl) return 1;
  totals t = {.own_dir = MT_BUILD_DIR};
  dwfl_getmodules(dwfl, check_module, &t, 0);
  dwfl_end(dwfl);
  printf("%ld modules with DWARF, %ld addresses, %ld with a row, %ld left to libdw (%ld of them in "
         "this build's %ld), %ld file names, %ld mismatches; per address: libdw %.2f us, reader "
         "%.2f us\n",
         t.modules, t.addrs, t.rows, t.libdw_left, t.own_left, t.own_addrs, t.files, t.mismatches,
         t.t_libdw * 1e6 / (double)t.addrs, t.t_reader * 1e6 / (double)t.addrs);
  if (t.modules < 3 || t.rows < 20000 || t.own_addrs < 20000 || t.files < 200) {
    fprintf(stderr, "too few addresses compared\n");
    return 1;
  }
  if (t.own_left) {
    fprintf(stderr, "units of this build were left to libdw\n");
    return 1;
  }
  return t.mismatches ? 1 : 0;
}
