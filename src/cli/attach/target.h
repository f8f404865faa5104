/* Whether memtrace attach can trace a process, and why not, in words a
 * user can act on. */
#ifndef MT_CLI_ATTACH_TARGET_H
#define MT_CLI_ATTACH_TARGET_H

#include <stddef.h>
#include <sys/types.h>

/* Checks process pid before anything is done to it: that it exists and is
 * a process (not a thread of one), is not this one, is not being traced
 * by a debugger, runs a 64-bit x86-64 program linked dynamically with the
 * C library, and lives in this PID and mount namespace. 0 and its name
 * (the executable's base name) in name; or -1 with the reason in why. */
int mt_attach_check_target(pid_t pid, char *name, size_t name_n, char *why, size_t n);

/* The state letter of process (or thread) pid in /proc/PID/stat ('R',
 * 'S', 'Z'...), or 0 when it is gone. */
char mt_attach_proc_state(pid_t pid);

/* Why ptrace(PTRACE_SEIZE) failed with err, and how to allow it: another
 * user's process, Yama's ptrace_scope, a process that is not dumpable. */
void mt_attach_explain_ptrace(pid_t pid, int err, const char *detail, char *why, size_t n);
/* The same for EPERM, from what decides it: the process's owner, this
 * process's effective user, and Yama's ptrace_scope (-1: no Yama). */
void mt_attach_explain_eperm(long owner, long me, long scope, const char *detail, char *why,
                             size_t n);

#endif
