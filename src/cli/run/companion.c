/* The files installed with the memtrace command (cli.h). */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"

int mt_cli_find_companion(const char *file, char *out, size_t n) {
  char self[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return -1;
  self[len] = 0;
  const char *dir = dirname(self);
  /* beside the executable (the build directory), then as installed */
  static const char *const places[] = {"%s/%s", "%s/../lib/memtrace/%s", "%s/../lib/%s"};
  for (size_t i = 0; i < sizeof places / sizeof *places; i++) {
    int w = snprintf(out, n, places[i], dir, file);
    if (w > 0 && (size_t)w < n && access(out, R_OK) == 0) return 0;
  }
  return -1;
}

int mt_cli_find_preload(char *out, size_t n) {
  const char *env = getenv("MEMTRACE_PRELOAD");
  if (env && *env) {
    snprintf(out, n, "%s", env);
    return access(out, R_OK);
  }
  return mt_cli_find_companion("libmemtrace_preload.so", out, n);
}
