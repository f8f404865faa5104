/* The interposer's exec wrappers: the tracer writes what is buffered
 * before the process image goes (exec runs no exit handlers), and, when
 * execs are followed, the new image gets the tracing settings back in its
 * environment (src/tracer/exec.c).
 *
 * Every exec function of the C library is wrapped: they reach the kernel
 * through the library's internal execve, never through ours. Those without
 * an environment argument are their e-variant with `environ`, as in the C
 * library (execv -> execve, execvp -> execvpe: the same path search). The
 * list forms build their argument vector on the stack,
 * since exec may be called from a signal handler or a vfork child.
 * posix_spawn and posix_spawnp are wrapped too, for %p destinations;
 * system and popen, to tell `memtrace run` of the shell they start. */
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "preload.h"
#include "memtrace/tracer.h"
#include "tracer/environ.h"
#include "tracer/exec.h"
#include "tracer/runnotes.h"

#define EXPORT __attribute__((visibility("default")))

extern char **environ;

/* The C library's, looked up at load (preload_init): not in a vfork child,
 * where dlsym's allocations would land in the parent's heap. */
static struct {
  int (*execve)(const char *, char *const[], char *const[]);
  int (*execvpe)(const char *, char *const[], char *const[]);
  int (*fexecve)(int, char *const[], char *const[]);
  int (*execveat)(int, const char *, char *const[], char *const[], int);
  int (*posix_spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                     const posix_spawnattr_t *, char *const[], char *const[]);
  int (*posix_spawnp)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                      const posix_spawnattr_t *, char *const[], char *const[]);
  int (*system)(const char *);
  FILE *(*popen)(const char *, const char *);
} real;

void mt__exec_resolve(void) {
  *(void **)&real.execve = dlsym(RTLD_NEXT, "execve");
  *(void **)&real.execvpe = dlsym(RTLD_NEXT, "execvpe");
  *(void **)&real.fexecve = dlsym(RTLD_NEXT, "fexecve");
  *(void **)&real.execveat = dlsym(RTLD_NEXT, "execveat"); /* glibc 2.34 on */
  *(void **)&real.posix_spawn = dlsym(RTLD_NEXT, "posix_spawn");
  *(void **)&real.posix_spawnp = dlsym(RTLD_NEXT, "posix_spawnp");
  *(void **)&real.system = dlsym(RTLD_NEXT, "system");
  *(void **)&real.popen = dlsym(RTLD_NEXT, "popen");
}

/* Whether the C library's `fn` is known: looked up now if this library's
 * constructor has not run yet (another preloaded library's constructor,
 * run before ours, may exec). */
#define HAVE(fn) (real.fn || (mt__exec_resolve(), real.fn))

/* The environment an exec hands over, in `env`: NULL (envp as it is) or
 * envp plus the tracing settings, in a mapping of its own (mmap is
 * async-signal-safe; exec may come from a signal handler, whose stack may
 * be small), or in a vfork child, which may not map (the mapping would
 * stay in its parent), on this frame's stack when small enough. */
#define MAX_STACK_ENV (64 * 1024)
#define EXEC_ENV(env, need, envp)                                              \
  int vfork_child_ = 0; /* set by mt__before_exec */                           \
  size_t need_ = (need);                                                       \
  int on_stack_ = need_ && vfork_child_ && need_ <= MAX_STACK_ENV;            \
  uint64_t buf_[on_stack_ ? (need_ + 7) / 8 : 1];                             \
  char **env = !need_        ? NULL                                            \
               : on_stack_   ? mt__exec_env(buf_, need_, envp)                 \
               : vfork_child_ ? NULL                                           \
                             : mt__exec_env(NULL, need_, envp)

/* A wrapper's end: the exec failed (errno kept), or there is no function
 * to call. */
static int failed(char **env, int err) {
  mt__exec_done(env);
  if (err) errno = err;
  return -1;
}

/* Called directly by the forms without envp (not through the exported
 * names, which the program could define for itself). */
static int exec_path(const char *path, char *const argv[], char *const envp[]) {
  if (!HAVE(execve)) return failed(NULL, ENOSYS);
  EXEC_ENV(env, mt__before_exec(envp, &vfork_child_), envp);
  real.execve(path, argv, env ? env : envp);
  return failed(env, 0);
}

static int exec_file(const char *file, char *const argv[], char *const envp[]) {
  if (!HAVE(execvpe)) return failed(NULL, ENOSYS);
  EXEC_ENV(env, mt__before_exec(envp, &vfork_child_), envp);
  real.execvpe(file, argv, env ? env : envp);
  return failed(env, 0);
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
  return exec_path(path, argv, envp);
}

/* As the C library defines them: the e-variant with `environ`. */
EXPORT int execv(const char *path, char *const argv[]) { return exec_path(path, argv, environ); }

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
  return exec_file(file, argv, envp);
}

EXPORT int execvp(const char *file, char *const argv[]) { return exec_file(file, argv, environ); }

EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
  if (!HAVE(fexecve)) return failed(NULL, ENOSYS);
  EXEC_ENV(env, mt__before_exec(envp, &vfork_child_), envp);
  real.fexecve(fd, argv, env ? env : envp);
  return failed(env, 0);
}

EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                    int flags) {
  if (!HAVE(execveat)) return failed(NULL, ENOSYS);
  EXEC_ENV(env, mt__before_exec(envp, &vfork_child_), envp);
  real.execveat(dirfd, path, argv, env ? env : envp, flags);
  return failed(env, 0);
}

/* The list forms: arg0, ..., NULL (then envp for execle). The C library
 * declares arg0 non-null, but programs pass NULL now and then (an empty
 * argument vector): the pointer is laundered so that the test stays. */
static const char *launder(const char *p) {
  __asm__("" : "+r"(p));
  return p;
}

/* How many arguments, arg0 included, precede the terminating NULL. */
#define COUNT_ARGS(arg0, n)                                                    \
  do {                                                                         \
    va_list ap;                                                                \
    va_start(ap, arg0);                                                        \
    n = 0;                                                                     \
    if (launder(arg0))                                                         \
      for (n = 1; va_arg(ap, char *); n++) {                                   \
      }                                                                        \
    va_end(ap);                                                                \
  } while (0)

/* Fills argv (n + 1 slots) from arg0 and the va_list that follows it;
 * returns what follows the terminating NULL (execle's envp) when `more`. */
static char **fill_args(char **argv, size_t n, const char *arg0, va_list ap, int more) {
  for (size_t i = 0; i < n; i++) argv[i] = i ? va_arg(ap, char *) : (char *)arg0;
  argv[n] = NULL;
  if (n) (void)va_arg(ap, char *); /* the NULL (arg0 itself when n is 0) */
  return more ? va_arg(ap, char **) : NULL;
}

/* Declares argv, the vector of a list form's arguments from arg0 on, on
 * this frame's stack, and argv_envp: what follows their terminating NULL
 * when `more` (execle's envp), else NULL. */
#define LIST_ARGV(argv, arg0, more)                                            \
  size_t n_;                                                                   \
  COUNT_ARGS(arg0, n_);                                                        \
  char *argv[n_ + 1], **argv##_envp __attribute__((unused));                   \
  do {                                                                         \
    va_list ap_;                                                               \
    va_start(ap_, arg0);                                                       \
    argv##_envp = fill_args(argv, n_, arg0, ap_, more);                        \
    va_end(ap_);                                                               \
  } while (0)

EXPORT int execl(const char *path, const char *arg, ...) {
  LIST_ARGV(argv, arg, 0);
  return exec_path(path, argv, environ);
}

EXPORT int execlp(const char *file, const char *arg, ...) {
  LIST_ARGV(argv, arg, 0);
  return exec_file(file, argv, environ);
}

EXPORT int execle(const char *path, const char *arg, ...) {
  LIST_ARGV(argv, arg, 1);
  return exec_path(path, argv, argv_envp);
}

/* posix_spawn execs in the child inside the C library: with a %p
 * destination the child gets the settings here (src/tracer/exec.c).
 * posix_spawn returns once the child has exec'd or failed to. */
EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                       const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
  if (!HAVE(posix_spawn)) return ENOSYS;
  EXEC_ENV(env, mt__before_spawn(envp), envp);
  int rc = real.posix_spawn(pid, path, fa, attr, argv, env ? env : envp);
  if (rc == 0 && mt_trace_is_tracing()) mt__runnotes_child(env != NULL, pid ? (long)*pid : 0);
  mt__exec_done(env);
  return rc;
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                        const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
  if (!HAVE(posix_spawnp)) return ENOSYS;
  EXEC_ENV(env, mt__before_spawn(envp), envp);
  int rc = real.posix_spawnp(pid, file, fa, attr, argv, env ? env : envp);
  if (rc == 0 && mt_trace_is_tracing()) mt__runnotes_child(env != NULL, pid ? (long)*pid : 0);
  mt__exec_done(env);
  return rc;
}

/* system and popen start a shell inside the C library, through its own
 * posix_spawn, not ours: `memtrace run` counted no such child, and said
 * nothing of the work a program hands to commands. Told here, once the
 * shell has started, as a child of unknown pid ("u 0"): it runs untraced,
 * unless the environment it gets (environ) still asks for a trace
 * (MEMTRACE_KEEP_ENV=1), and then it tells run itself. */
static void told_of_shell(void) {
  const char *dest = mt__env_get("MEMTRACE"); /* environ's: bash's getenv is its own */
  if ((!dest || !*dest) && mt_trace_is_tracing()) mt__runnotes_child(0, 0);
}

EXPORT int system(const char *command) {
  if (!HAVE(system)) return -1;
  int rc = real.system(command);
  if (rc != -1) told_of_shell();
  return rc;
}

EXPORT FILE *popen(const char *command, const char *type) {
  if (!HAVE(popen)) return NULL;
  FILE *f = real.popen(command, type);
  if (f) told_of_shell();
  return f;
}
