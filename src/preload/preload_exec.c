/* The interposer's exec wrappers: the tracer writes what is buffered
 * before the process image goes (exec runs no exit handlers), and, when
 * execs are followed, the new image gets the tracing settings back in its
 * environment (src/tracer/exec.c).
 *
 * Every exec function of the C library is wrapped: they reach the kernel
 * through the library's internal execve, never through ours. Those without
 * an environment argument take `environ`; to hand over another one, they
 * become their e-variant (execv -> execve, execvp -> execvpe: the same
 * path search). The list forms build their argument vector on the stack,
 * since exec may be called from a signal handler or a vfork child. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

#include "exec.h"
#include "preload.h"

#define EXPORT __attribute__((visibility("default")))

extern char **environ;

/* The C library's, looked up at load (preload_init): not in a vfork child,
 * where dlsym's allocations would land in the parent's heap. */
static struct {
  int (*execve)(const char *, char *const[], char *const[]);
  int (*execv)(const char *, char *const[]);
  int (*execvp)(const char *, char *const[]);
  int (*execvpe)(const char *, char *const[], char *const[]);
  int (*fexecve)(int, char *const[], char *const[]);
  int (*execveat)(int, const char *, char *const[], char *const[], int);
} real;

void mt__exec_resolve(void) {
  *(void **)&real.execve = dlsym(RTLD_NEXT, "execve");
  *(void **)&real.execv = dlsym(RTLD_NEXT, "execv");
  *(void **)&real.execvp = dlsym(RTLD_NEXT, "execvp");
  *(void **)&real.execvpe = dlsym(RTLD_NEXT, "execvpe");
  *(void **)&real.fexecve = dlsym(RTLD_NEXT, "fexecve");
  *(void **)&real.execveat = dlsym(RTLD_NEXT, "execveat"); /* glibc 2.34 on */
}

/* Whether the C library's `fn` is known: looked up now if this library's
 * constructor has not run yet (another preloaded library's constructor,
 * run before ours, may exec). */
#define HAVE(fn) (real.fn || (mt__exec_resolve(), real.fn))

/* A wrapper's end: the exec failed (errno kept), or there is no function
 * to call. */
static int failed(char **env, int err) {
  mt__exec_failed(env);
  if (err) errno = err;
  return -1;
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
  if (!HAVE(execve)) return failed(NULL, ENOSYS);
  char **env = mt__before_exec(envp);
  real.execve(path, argv, env ? env : envp);
  return failed(env, 0);
}

EXPORT int execv(const char *path, char *const argv[]) {
  if (!HAVE(execve) || !HAVE(execv)) return failed(NULL, ENOSYS);
  char **env = mt__before_exec(environ);
  if (env) real.execve(path, argv, env);
  else real.execv(path, argv);
  return failed(env, 0);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
  if (!HAVE(execvpe)) return failed(NULL, ENOSYS);
  char **env = mt__before_exec(envp);
  real.execvpe(file, argv, env ? env : envp);
  return failed(env, 0);
}

EXPORT int execvp(const char *file, char *const argv[]) {
  if (!HAVE(execvpe) || !HAVE(execvp)) return failed(NULL, ENOSYS);
  char **env = mt__before_exec(environ);
  if (env) real.execvpe(file, argv, env);
  else real.execvp(file, argv);
  return failed(env, 0);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
  if (!HAVE(fexecve)) return failed(NULL, ENOSYS);
  char **env = mt__before_exec(envp);
  real.fexecve(fd, argv, env ? env : envp);
  return failed(env, 0);
}

EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                    int flags) {
  if (!HAVE(execveat)) return failed(NULL, ENOSYS);
  char **env = mt__before_exec(envp);
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

EXPORT int execl(const char *path, const char *arg, ...) {
  size_t n;
  COUNT_ARGS(arg, n);
  char *argv[n + 1];
  va_list ap;
  va_start(ap, arg);
  fill_args(argv, n, arg, ap, 0);
  va_end(ap);
  return execv(path, argv);
}

EXPORT int execlp(const char *file, const char *arg, ...) {
  size_t n;
  COUNT_ARGS(arg, n);
  char *argv[n + 1];
  va_list ap;
  va_start(ap, arg);
  fill_args(argv, n, arg, ap, 0);
  va_end(ap);
  return execvp(file, argv);
}

EXPORT int execle(const char *path, const char *arg, ...) {
  size_t n;
  COUNT_ARGS(arg, n);
  char *argv[n + 1];
  va_list ap;
  va_start(ap, arg);
  char **envp = fill_args(argv, n, arg, ap, 1);
  va_end(ap);
  return execve(path, argv, envp);
}
