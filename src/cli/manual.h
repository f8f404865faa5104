/* The manual page and the shell completion, generated from the commands'
 * own help texts (one source for `memtrace help`, memtrace(1) and the
 * completion): `memtrace help --man`, `memtrace help --bash-completion`.
 * The build writes both; `cmake --install` installs them. */
#ifndef MT_CLI_MANUAL_H
#define MT_CLI_MANUAL_H

#include <stddef.h>
#include <stdio.h>

#include "cli.h"

/* memtrace(1) in roff: the overview (written by `overview`), then each
 * command's help text. */
void mt_cli_man(FILE *f, const mt_command *const *cmds, size_t n, void (*overview)(FILE *));

/* A bash completion script: command names, each command's options (as its
 * help text names them), file names for the rest, commands after `run --`. */
void mt_cli_bash_completion(FILE *f, const mt_command *const *cmds, size_t n);

#endif
