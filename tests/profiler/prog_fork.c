/* fork without exec (the child allocates at its own site), then exec of a
 * child that allocates (env check: MEMTRACE and the interposer's LD_PRELOAD
 * entry are gone unless kept). `prog_fork drop` (as root): the forked
 * child gives up root for nobody before it allocates, as a server's worker
 * does, and skips the exec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

/* noinline sites whose blocks escape through a volatile pointer: the
 * compiler may not elide the allocations */
static void *volatile escape;
__attribute__((noinline)) static void parent_site(void) {
  for (int i = 0; i < 500; i++) { escape = malloc(800); free(escape); }
}
__attribute__((noinline)) static void child_site(void) {
  for (int i = 0; i < 700; i++) { escape = malloc(800); free(escape); }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "exec-child") == 0) {
    printf("exec-child MEMTRACE=%s\n", getenv("MEMTRACE") ? getenv("MEMTRACE") : "(unset)");
    printf("exec-child LD_PRELOAD=%s\n", getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : "(unset)");
    child_site();
    return 0;
  }
  int drop = argc > 1 && strcmp(argv[1], "drop") == 0;
  parent_site();
  pid_t pid = fork();
  if (pid == 0) {
    if (drop && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) {
      perror("prog_fork: dropping root");
      _exit(3);
    }
    child_site();
    _exit(0);
  }
  int status;
  waitpid(pid, &status, 0);
  if (drop) {
    parent_site();
    printf("parent pid %ld child status %d\n", (long)getpid(), status);
    return 0;
  }
  pid = fork();
  if (pid == 0) {
    execl("/proc/self/exe", argv[0], "exec-child", (char *)NULL);
    _exit(127);
  }
  waitpid(pid, NULL, 0);
  parent_site();
  printf("parent pid %ld\n", (long)getpid());
  return 0;
}
