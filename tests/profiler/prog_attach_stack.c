/* A program where memtrace attach may take aside only a thread with stack
 * to spare (e2e.sh, attach). A second thread, on the smallest stack
 * threads may have (PTHREAD_STACK_MIN), runs its own code all along, a
 * place safe but for its stack: the loader's work in dlopen would overflow
 * it. The main thread first waits 1.5 s for a mutex that thread holds (a
 * lock's wait: no place to be taken aside either), then runs its own code
 * for 1.5 s, where it may be taken. Prints "ready" once the mutex is held,
 * and "done" at the end. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop, locked;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Runs the program's own code for `seconds`. */
static void spin(double seconds) {
  for (double end = now() + seconds; now() < end;)
    for (volatile int i = 0; i < 100000; i++) continue;
}

static void *small(void *arg) {
  (void)arg;
  pthread_mutex_lock(&held);
  locked = 1;
  spin(1.5);
  pthread_mutex_unlock(&held);
  while (!stop)
    for (volatile int i = 0; i < 100000; i++) continue;
  return NULL;
}

int main(void) {
  pthread_attr_t attr;
  pthread_t t;
  if (pthread_attr_init(&attr) || pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN) ||
      pthread_create(&t, &attr, small, NULL)) {
    fprintf(stderr, "prog_attach_stack: cannot start a thread\n");
    return 1;
  }
  while (!locked) continue;
  printf("ready\n");
  fflush(stdout);
  pthread_mutex_lock(&held);
  spin(1.5);
  pthread_mutex_unlock(&held);
  stop = 1;
  pthread_join(t, NULL);
  printf("done\n");
  return 0;
}
