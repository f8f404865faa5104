/* Allocates at one site, then replaces itself with its own child mode
 * through one of the C library's exec functions; the child allocates at
 * another site and prints the tracing settings it got.
 *   prog_exec VARIANT          exec with VARIANT (execve, execv, execvp,
 *                              execvpe, execl, execlp, execle, fexecve,
 *                              execveat); execvp and execlp find
 *                              "prog_exec" in PATH
 *   prog_exec fail             every variant on a missing file: each must
 *                              return -1 with ENOENT; then more allocations
 *   prog_exec vfork            a vfork child execs the child mode, the
 *                              parent waits and allocates more
 *   prog_exec spawn            the same with posix_spawn
 *   prog_exec system           the same with system() (sh execs the child)
 *   prog_exec popen            the same with popen(), reading the child's output
 *   prog_exec child            the child mode */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* noinline sites whose blocks escape through a volatile pointer: the
 * compiler may not elide the allocations */
static void *volatile escape;
__attribute__((noinline)) static void before_exec_site(void) {
  for (int i = 0; i < 300; i++) { escape = malloc(800); free(escape); }
}
__attribute__((noinline)) static void after_exec_site(void) {
  for (int i = 0; i < 200; i++) { escape = malloc(800); free(escape); }
}
__attribute__((noinline)) static void after_return_site(void) {
  for (int i = 0; i < 100; i++) { escape = malloc(800); free(escape); }
}

static const char *env_or_unset(const char *name) {
  const char *v = getenv(name);
  return v ? v : "(unset)";
}

/* Execs `path` (or, for the PATH-searching variants, prog_exec) with
 * VARIANT; returns only if that failed. */
static int run_variant(const char *v, const char *path) {
  char *argv[] = {"prog_exec", "child", NULL};
  const char *file = strchr(path, '/') ? path : "prog_exec";
  if (strcmp(v, "execve") == 0) return execve(path, argv, environ);
  if (strcmp(v, "execv") == 0) return execv(path, argv);
  if (strcmp(v, "execvp") == 0) return execvp(file, argv);
  if (strcmp(v, "execvpe") == 0) return execvpe(file, argv, environ);
  if (strcmp(v, "execl") == 0) return execl(path, "prog_exec", "child", (char *)NULL);
  if (strcmp(v, "execlp") == 0) return execlp(file, "prog_exec", "child", (char *)NULL);
  if (strcmp(v, "execle") == 0) return execle(path, "prog_exec", "child", (char *)NULL, environ);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1; /* errno: ENOENT for the missing file */
  int rc = strcmp(v, "fexecve") == 0 ? fexecve(fd, argv, environ)
           : strcmp(v, "execveat") == 0 ? execveat(fd, "", argv, environ, AT_EMPTY_PATH)
                                        : (errno = EINVAL, -1);
  int err = errno;
  close(fd);
  errno = err;
  return rc;
}

static const char *const variants[] = {"execve", "execv",   "execvp",  "execvpe", "execl",
                                       "execlp", "execle", "fexecve", "execveat"};

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  if (strcmp(argv[1], "child") == 0) {
    printf("child MEMTRACE=%s\n", env_or_unset("MEMTRACE"));
    printf("child LD_PRELOAD=%s\n", env_or_unset("LD_PRELOAD"));
    after_exec_site();
    return 0;
  }
  before_exec_site();
  fflush(stdout);
  if (strcmp(argv[1], "fail") == 0) {
    for (size_t i = 0; i < sizeof variants / sizeof *variants; i++) {
      errno = 0;
      int rc = run_variant(variants[i], "/nonexistent/prog_exec");
      if (rc != -1 || errno != ENOENT) {
        printf("ERROR %s on a missing file: %d, %s\n", variants[i], rc, strerror(errno));
        return 1;
      }
    }
    after_return_site();
    printf("failed execs returned\n");
    return 0;
  }
  if (strcmp(argv[1], "vfork") == 0 || strcmp(argv[1], "spawn") == 0) {
    char *cargv[] = {"prog_exec", "child", NULL};
    pid_t pid;
    if (argv[1][0] == 's') {
      if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, cargv, environ) != 0) return 1;
    } else if ((pid = vfork()) == 0) {
      execv("/proc/self/exe", cargv);
      _exit(127);
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
      return 1;
    after_return_site();
    return 0;
  }
  if (strcmp(argv[1], "system") == 0 || strcmp(argv[1], "popen") == 0) {
    /* the C library spawns sh, which runs us; popen's through a pipe */
    char self[4096], cmd[4200], line[256];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 1;
    self[n] = 0;
    snprintf(cmd, sizeof cmd, "exec '%s' child", self);
    int status;
    if (argv[1][0] == 's') {
      status = system(cmd);
    } else {
      FILE *f = popen(cmd, "r");
      if (!f) return 1;
      while (fgets(line, sizeof line, f)) fputs(line, stdout);
      status = pclose(f);
    }
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    after_return_site();
    return 0;
  }
  run_variant(argv[1], "/proc/self/exe");
  printf("ERROR %s: %s\n", argv[1], strerror(errno));
  return 1;
}
