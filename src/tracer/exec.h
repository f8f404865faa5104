/* The tracer when its process execs (exec.c): what the interposer's exec
 * wrappers call, and what tracing start keeps for them. */
#ifndef MT_TRACER_EXEC_H
#define MT_TRACER_EXEC_H

#include <stddef.h>

#define MT__EXEC_HIDDEN __attribute__((visibility("hidden")))

/* Before this process execs: writes what is buffered (exec runs no exit
 * handlers). Returns 0 to exec with envp as it is, or, when execs are
 * followed, the bytes that envp plus the tracing settings take: the caller
 * builds them with mt__exec_env. *vfork_child: this is not the tracing
 * process but a vfork child of it (with %p), sharing its memory: nothing
 * may be allocated. Takes no lock that may be held: exec may come from a
 * signal handler. */
MT__EXEC_HIDDEN size_t mt__before_exec(char *const envp[], int *vfork_child);
/* Before posix_spawn: as mt__before_exec, for the child (with %p only). */
MT__EXEC_HIDDEN size_t mt__before_spawn(char *const envp[]);
/* Builds envp plus the tracing settings in buf (`size` bytes, 8-aligned,
 * as mt__before_exec said), or in a mapping of its own when buf is NULL
 * (not in a vfork child: the mapping would stay in the parent). NULL if
 * that fails: exec with envp. */
MT__EXEC_HIDDEN char **mt__exec_env(void *buf, size_t size, char *const envp[]);
/* After the exec failed, or posix_spawn returned: unmaps what
 * mt__exec_env mapped (NULL, or built in a buffer: nothing). errno is
 * kept. */
MT__EXEC_HIDDEN void mt__exec_done(char **env);
#define MT__EXEC_ENV_HEAD 16 /* before the vector: its mapping's size, or 0 */

/* At tracing start, once MEMTRACE and this library's LD_PRELOAD entry have
 * left the environment: keeps them (MEMTRACE=destination, the MEMTRACE_*
 * settings still there, the entry) for exec'd images to be given back. */
MT__EXEC_HIDDEN void mt__exec_follow_keep(const char *destination, const char *preload_entry);
/* Once tracing started (or not): whether the process's own execs follow. */
MT__EXEC_HIDDEN void mt__exec_follow_on(int on);

#endif
