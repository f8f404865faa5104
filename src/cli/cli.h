/* Shared by the memtrace subcommands: the command table, usage errors
 * (exit 2), trace errors (exit 1). */
#ifndef MT_CLI_H
#define MT_CLI_H

#include <stddef.h>

#include "memtrace/format.h"

typedef struct mt_command {
  const char *name;
  const char *summary; /* one line for `memtrace --help` */
  const char *usage;   /* full help for `memtrace help NAME` */
  int (*run)(int argc, char **argv); /* argv[0] is the command name */
} mt_command;

#define MT_COMMAND(name) extern const mt_command mt_cmd_##name;
#include "commands.def"
#undef MT_COMMAND

/* Prints "memtrace CMD: MESSAGE" and a hint to stderr, exits 2. */
void mt_cli_usage_error(const mt_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
/* Whether argv[i] asks for help (-h, --help). */
int mt_cli_is_help(const char *arg);
/* Prints the command's usage to stdout and returns 0. */
int mt_cli_help(const mt_command *cmd);

/* Finds `file`, installed with the memtrace command: beside the running
 * executable, or in ../lib/memtrace or ../lib from its directory. Writes
 * its path to out (n bytes); 0, or -1 if none is readable. */
int mt_cli_find_companion(const char *file, char *out, size_t n);

/* Opens a trace or exits 1 with the reader's message. */
mt_reader *mt_cli_open(const char *path);
/* After the event loop: rc < 0 prints the error and exits 1; a warning
 * (truncated trace, skipped packets) is printed to stderr. */
void mt_cli_finish(mt_reader *r, int rc);

#endif
