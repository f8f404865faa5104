/* The tracer when its process execs (exec.c): what the interposer's exec
 * wrappers call, and what tracing start keeps for them. */
#ifndef MT_TRACER_EXEC_H
#define MT_TRACER_EXEC_H

#define MT__EXEC_HIDDEN __attribute__((visibility("hidden")))

/* Before this process execs: writes what is buffered (exec runs no exit
 * handlers). Returns the environment the new image is to get when execs
 * are followed (envp plus the tracing settings, in a mapping of its own),
 * else NULL: exec with envp as it is. Takes no lock that may be held and
 * allocates with mmap only: exec may come from a signal handler. */
MT__EXEC_HIDDEN char **mt__before_exec(char *const envp[]);
/* The exec returned (it failed): releases what mt__before_exec made.
 * errno is kept. NULL: nothing. */
MT__EXEC_HIDDEN void mt__exec_failed(char **env);

/* At tracing start, once MEMTRACE and this library's LD_PRELOAD entry have
 * left the environment: keeps them (MEMTRACE=destination, the MEMTRACE_*
 * settings still there, the entry) for exec'd images to be given back. */
MT__EXEC_HIDDEN void mt__exec_follow_keep(const char *destination, const char *preload_entry);
/* Once tracing started (or not): whether the process's own execs follow. */
MT__EXEC_HIDDEN void mt__exec_follow_on(int on);

/* tracer.c: writes this process's buffered events (before _exit, exec). */
MT__EXEC_HIDDEN void mt__trace_before_exit(void);

#endif
