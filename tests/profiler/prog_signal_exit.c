/* Exits from a signal handler, as programs' SIGINT and SIGTERM handlers
 * often do: a SIGALRM after MICROSECONDS (first argument) calls exit(0)
 * while the main loop allocates and frees. Traced at rate 1, the signal
 * mostly lands inside the profiler, sometimes while it holds its lock.
 * Prints the pairs done at exit.
 * With `fork PAIRS`: a SIGALRM a millisecond after the last one was
 * handled forks (fork is async-signal-safe), the child _exits, the parent
 * waits for it; the main loop does PAIRS pairs, then prints them and the
 * forks, and returns. The clock starts again at the handler's end: where a
 * fork and its wait take longer than a millisecond (a traced fork in a
 * virtual machine), a periodic clock would leave the loop no time at all.
 * With `end HOW`: 1000 pairs, then the end HOW names, which runs no exit
 * handler: abort, assert (a failed one), quick_exit. */
#include <assert.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile escape;
static volatile long pairs;

static void on_alarm(int sig) {
  (void)sig;
  char line[64];
  int n = snprintf(line, sizeof line, "pairs %ld\n", pairs);
  ssize_t ignored = write(1, line, (size_t)n);
  (void)ignored;
  exit(0);
}

static volatile long forks;
static const struct itimerval one_ms = {{0, 0}, {0, 1000}};

static void on_alarm_fork(int sig) {
  (void)sig;
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  if (pid > 0 && waitpid(pid, NULL, 0) == pid) forks++;
  setitimer(ITIMER_REAL, &one_ms, NULL); /* a system call, as fork is */
}

__attribute__((noinline)) static void churn(long n) {
  while (n < 0 || pairs < n) {
    escape = malloc(100 + (size_t)(pairs % 5) * 200);
    free(escape);
    pairs++;
  }
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "end") == 0) {
    churn(1000);
    if (strcmp(argv[2], "abort") == 0) abort();
    if (strcmp(argv[2], "quick_exit") == 0) quick_exit(0);
    assert(strcmp(argv[2], "assert") != 0);
    return 1;
  }
  if (argc > 2 && strcmp(argv[1], "fork") == 0) {
    struct sigaction sa = {.sa_handler = on_alarm_fork, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    setitimer(ITIMER_REAL, &one_ms, NULL);
    churn(atol(argv[2]));
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("pairs %ld forks %ld\n", pairs, forks);
    return 0;
  }
  long us = argc > 1 ? atol(argv[1]) : 5000;
  /* one pair before the clock starts: on a busy machine the process may
   * wait its turn for longer than MICROSECONDS before its first pair, and
   * the handler would then print "pairs 0", which says nothing of a signal
   * landing in the profiler */
  churn(1);
  struct sigaction sa = {.sa_handler = on_alarm};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 0}, {us / 1000000, us % 1000000}};
  setitimer(ITIMER_REAL, &it, NULL);
  churn(-1);
}
