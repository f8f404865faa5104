/* Usage errors and help, shared by the memtrace command's two executables
 * (src/launcher/launcher.c runs `memtrace run` itself). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void mt_cli_usage_error(const mt_command *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "memtrace %s: ", cmd->name);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry 'memtrace help %s'.\n", cmd->name);
  exit(2);
}

int mt_cli_is_help(const char *arg) {
  return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int mt_cli_help(const mt_command *cmd) {
  fputs(cmd->usage, stdout);
  return 0;
}
