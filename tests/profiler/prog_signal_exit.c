/* Exits from a signal handler, as programs' SIGINT and SIGTERM handlers
 * often do: a SIGALRM after MICROSECONDS (first argument) calls exit(0)
 * while the main loop allocates and frees. Traced at rate 1, the signal
 * mostly lands inside the profiler, sometimes while it holds its lock.
 * Prints the pairs done at exit. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
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

__attribute__((noinline)) static void churn(void) {
  for (;;) {
    escape = malloc(100 + (size_t)(pairs % 5) * 200);
    free(escape);
    pairs++;
  }
}

int main(int argc, char **argv) {
  long us = argc > 1 ? atol(argv[1]) : 5000;
  struct sigaction sa = {.sa_handler = on_alarm};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 0}, {us / 1000000, us % 1000000}};
  setitimer(ITIMER_REAL, &it, NULL);
  churn();
}
