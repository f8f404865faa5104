/* The tracer's line-table reader (src/tracer/symbols/dwline.c, through
 * srclines.c) against libdw's dwfl_module_getsrc and dwfl_lineinfo: the
 * same file, line and column at every third byte of every module of this
 * process that has DWARF: this program (C, and the C++ of scopes_cases.cpp
 * at -O2 -g), the builds of lines_cases.c (DWARF 4; split DWARF, whose
 * skeleton units hold the line tables; a library whose
 * line tables hold sequences of code the linker dropped, and that one again
 * without its .debug_aranges, as clang builds), libmemtrace.so
 * (the format library, C at -O2 -g), and any library
 * named on the command line (dlopened first: a manual check on a big
 * one); and every file name of each unit's table, as an inlined call's
 * DW_AT_call_file names it (dwarf_getsrcfiles, dwarf_filesrc). The unit
 * of each address found by units.c must be libdwfl's, unless the address
 * is in a gap between libdwfl's ranges (it gives those to the unit before)
 * or two units' ranges hold it; a unit units.c finds must hold it, and
 * one libdwfl finds that holds it must be found. Where libdwfl finds none
 * (no .debug_aranges) the rows must be libdw's for the unit units.c found
 * (dwarf_getsrc_die). Every unit of this program's own modules must be read by the
 * reader, not left to libdw, but the two of refused_lines.S, whose tables
 * it must refuse (e2e.sh's refused-lines test names their code by libdw's
 * way). Also times both (informational). */
#include <dlfcn.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dwfl_self.h"
#include "tracer/symbols/srclines.h"
#include "tracer/symbols/units.h"

long scopes_cases_run(int n);

typedef struct totals {
  long addrs, rows, libdw_left, mismatches, modules, files;
  long units_same, units_only; /* units.c's answer checked against libdwfl's; given alone */
  long units_gap;     /* libdwfl's unit only holds the address by its gap-filling */
  long units_overlap; /* the address in the ranges of both units, each its own answer */
  double t_libdw, t_reader;
  const char *own_dir; /* modules under it must have every unit read */
  long own_addrs, own_left;
  long refused_units; /* refused_lines.S's units refused, as they must be */
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

/* A row as one side gives it: found, and its file, line and column. */
typedef struct answer {
  int found;
  const char *file;
  int line, col;
} answer;

/* libdw's row (want) against the reader's (got) at offset off of module:
 * a mismatch counted and, for the first few, told. */
static void compare(totals *t, const char *module, Dwarf_Addr off, const char *how,
                    const answer *want, const answer *got) {
  if (want->found == got->found &&
      (!want->found || (same_str(want->file, got->file) && want->line == got->line &&
                        want->col == got->col)))
    return;
  if (t->mismatches < 10)
    fprintf(stderr, "MISMATCH in %s at +0x%llx%s: libdw %s %s:%d:%d, reader %s %s:%d:%d\n", module,
            (unsigned long long)off, how, want->found ? "row" : "none",
            want->file ? want->file : "(null)", want->line, want->col, got->found ? "row" : "none",
            got->file ? got->file : "(null)", got->line, got->col);
  t->mismatches++;
}

/* Where libdwfl finds no unit (no .debug_aranges), the row the reader
 * gives in the unit units.c found, against libdw's dwarf_getsrc_die on
 * that unit (dwfl_module_getsrc's search, by the unit given). */
static void check_unit_only(mt__srclines *lines, Dwarf_Die *cu, Dwarf_Addr pc, const char *module,
                            Dwarf_Addr off, totals *t) {
  Dwarf_Line *l = dwarf_getsrc_die(cu, pc);
  answer want = {l != NULL, NULL, 0, 0}, got = {0, NULL, 0, 0};
  char buf[4096];
  if (l) {
    want.file = dwarf_linesrc(l, NULL, NULL);
    dwarf_lineno(l, &want.line);
    dwarf_linecol(l, &want.col);
  }
  int r = mt__srclines_at(lines, cu, pc, buf, sizeof buf, &got.file, &got.line, &got.col);
  if (r < 0) return;
  got.found = r == 1;
  compare(t, module, off, " (unit found by units.c)", &want, &got);
}

/* refused_lines.S's library: each unit's table refused by the reader, for
 * addresses and file names alike. */
static void check_refused(Dwfl_Module *mod, const char *name, totals *t) {
  Dwarf_Addr bias;
  Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
  mt__srclines lines = {0};
  Dwarf_Off off = 0, next;
  size_t hsize;
  while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
    Dwarf_Die cu;
    Dwarf_Addr low = 0;
    char buf[4096];
    const char *file = NULL;
    int line, col;
    if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_lowpc(&cu, &low) == 0 &&
        mt__srclines_at(&lines, &cu, low, buf, sizeof buf, &file, &line, &col) < 0 &&
        mt__srclines_file(&lines, &cu, 1, buf, sizeof buf, &file) < 0) {
      t->refused_units++;
    } else {
      fprintf(stderr, "MISMATCH in %s: the unit at %#llx read, not refused\n", name,
              (unsigned long long)off);
      t->mismatches++;
    }
    off = next;
  }
  mt__srclines_clear(&lines);
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
  if (main_file && strstr(main_file, "libmt_refused_lines")) {
    check_refused(mod, name, t);
    return DWARF_CB_OK;
  }
  mt__srclines lines = {0};
  mt__units units = {0};
  long before = t->addrs;
  void *last_cu = NULL;
  for (Dwarf_Addr a = start; a < end; a += 3) {
    Dwarf_Addr cu_bias = 0, unit_bias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, a, &cu_bias), unit;
    Dwarf_Die *mine = mt__units_at(&units, mod, a, &unit, &unit_bias);
    if (cu) { /* the unit libdwfl finds through .debug_aranges, units.c by the units' ranges */
      int its = mt__units_hold(&units, cu, a - cu_bias);
      if (mine && dwarf_dieoffset(mine) == dwarf_dieoffset(cu) && unit_bias == cu_bias) {
        t->units_same++;
      } else if (mine ? mt__units_hold(&units, mine, a - unit_bias) : !its) {
        /* libdwfl gives the gaps between aranges to the unit before (no
         * unit holds the address, or another than that one); two units
         * may hold it (libasan's) */
        if (its) t->units_overlap++;
        else t->units_gap++;
      } else {
        if (t->mismatches < 10)
          fprintf(stderr, "MISMATCH in %s at +0x%llx: libdwfl's unit %#llx, units.c's %#llx\n", name,
                  (unsigned long long)(a - start), (unsigned long long)dwarf_dieoffset(cu),
                  mine ? (unsigned long long)dwarf_dieoffset(mine) : 0ull);
        t->mismatches++;
      }
    } else if (mine) { /* no .debug_aranges: libdw's lines by the unit units.c found */
      t->units_only++;
      t->addrs++;
      check_unit_only(&lines, mine, a - unit_bias, name, a - start, t);
      continue;
    }
    if (!cu) continue;
    if (cu->addr != last_cu) check_files(&lines, cu, name, t);
    last_cu = cu->addr;
    answer want = {0, NULL, 0, 0}, got = {0, NULL, 0, 0};
    char buf[4096];
    double t0 = test_now();
    Dwfl_Line *l = dwfl_module_getsrc(mod, a);
    if (l) want.file = dwfl_lineinfo(l, NULL, &want.line, &want.col, NULL, NULL);
    want.found = l != NULL;
    double t1 = test_now();
    int r = mt__srclines_at(&lines, cu, a - cu_bias, buf, sizeof buf, &got.file, &got.line, &got.col);
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
    got.found = r == 1;
    if (l) t->rows++;
    compare(t, name, a - start, "", &want, &got);
  }
  mt__units_clear(&units);
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
  const char *libs[] = {MT_LINES_V4, MT_LINES_SPLIT, MT_LINES_GC, MT_LINES_NOARANGES};
  for (size_t i = 0; i < sizeof libs / sizeof *libs; i++) {
    void *h = dlopen(libs[i], RTLD_NOW);
    unsigned (*run)(int) = h ? (unsigned (*)(int))dlsym(h, "lines_cases_run") : NULL;
    if (!run || run(3) == 0) {
      fprintf(stderr, "cannot load %s: %s\n", libs[i], dlerror());
      return 1;
    }
  }
  const char *more[] = {MT_LIBMEMTRACE /* more of this build's code: the format library */,
                        MT_REFUSED_LINES};
  for (size_t i = 0; i < sizeof more / sizeof *more; i++)
    if (!dlopen(more[i], RTLD_NOW)) {
      fprintf(stderr, "cannot load %s: %s\n", more[i], dlerror());
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
         "this build's %ld), %ld file names, units: %ld as libdwfl's, %ld where it has none, %ld "
         "in its gaps, %ld held by two; %ld units refused as they must be; %ld mismatches; per "
         "address: libdw %.2f us, reader %.2f us\n",
         t.modules, t.addrs, t.rows, t.libdw_left, t.own_left, t.own_addrs, t.files, t.units_same,
         t.units_only, t.units_gap, t.units_overlap, t.refused_units, t.mismatches,
         t.t_libdw * 1e6 / (double)t.addrs, t.t_reader * 1e6 / (double)t.addrs);
  if (t.modules < 3 || t.rows < 20000 || t.own_addrs < 20000 || t.files < 200 ||
      t.units_only < 100 || t.refused_units != 2) {
    fprintf(stderr, "too few addresses compared\n");
    return 1;
  }
  if (t.own_left) {
    fprintf(stderr, "units of this build were left to libdw\n");
    return 1;
  }
  return t.mismatches ? 1 : 0;
}
