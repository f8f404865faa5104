/* For the tests that compare the tracer's DWARF and ELF readers with
 * elfutils' own answers (test_scopes, test_srclines, test_symtab): this
 * process's modules as libdwfl lists them, and a clock for the
 * informational timings. */
#ifndef MT_TESTS_DWFL_SELF_H
#define MT_TESTS_DWFL_SELF_H

#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static inline double test_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A Dwfl of this process's modules, finding separate debug information as
 * find_debuginfo does (NULL: libdwfl's standard search); NULL, with a
 * message, if they cannot be listed. */
static inline Dwfl *test_dwfl_self(int (*find_debuginfo)(Dwfl_Module *, void **, const char *,
                                                         Dwarf_Addr, const char *,
                                                         const char *, GElf_Word, char **)) {
  static char *debuginfo_path;
  static Dwfl_Callbacks callbacks = {.find_elf = dwfl_linux_proc_find_elf,
                                     .debuginfo_path = &debuginfo_path};
  callbacks.find_debuginfo = find_debuginfo ? find_debuginfo : dwfl_standard_find_debuginfo;
  Dwfl *dwfl = dwfl_begin(&callbacks);
  if (dwfl) {
    dwfl_report_begin(dwfl);
    if (dwfl_linux_proc_report(dwfl, getpid()) == 0 && dwfl_report_end(dwfl, NULL, NULL) == 0)
      return dwfl;
    dwfl_end(dwfl);
  }
  fprintf(stderr, "cannot list this process's modules: %s\n", dwfl_errmsg(-1));
  return NULL;
}

#endif
