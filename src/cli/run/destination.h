/* Whether a trace can be written where a destination says (run_destination.c). */
#ifndef MT_CLI_RUN_DESTINATION_H
#define MT_CLI_RUN_DESTINATION_H

#include <stddef.h>

/* Whether the program's trace can be written where `pattern` says: a file
 * in a directory that exists and can be written in (not a directory of
 * that name, not a symbolic link, not a trace another process writes).
 * The traced process creates the file itself; a mistyped -o is caught
 * before it costs a run (or an attach). Sockets (tcp:, listen:) and a
 * directory part holding %p are left to the tracer. 0, or -1 with the
 * reason in why. */
int mt_cli_check_destination(const char *pattern, char *why, size_t n);

#endif
