/* Whether `memtrace run` can trace a program at all: the interposer is an
 * LD_PRELOAD library, which the dynamic loader loads only into dynamically
 * linked programs of its own class, and not into set-user-ID or
 * set-group-ID ones run by another user (secure execution). A program of
 * another kind runs untraced: the user is told so before it starts, rather
 * than finding no trace after it ends. */
#ifndef MT_CLI_UNTRACEABLE_H
#define MT_CLI_UNTRACEABLE_H

#include <stddef.h>

/* Looks at the program `cmd` would run (searched in PATH as execvp does
 * when it holds no '/'). If the interposer cannot load into it, writes why
 * into why[cap] ("/bin/x is statically linked: ...") and returns 1.
 * Returns 0 otherwise, including when the file cannot be found or read
 * (the exec reports that) and for scripts (their interpreter is the
 * program). */
int mt_cli_untraceable(const char *cmd, char *why, size_t cap);

#endif
