/* bench/attach_load THREADS [PAIRS]: THREADS threads that allocate and free
 * blocks of mixed sizes, the load memtrace attach is measured on
 * (bench/attach.sh). It prints "ready" and waits for SIGUSR1; then each
 * thread makes PAIRS (default 4M) malloc/free pairs, keeping some blocks a
 * while; at the end it prints the CPU time of that work ("work-cpu-ms N"),
 * and waits for SIGUSR2 before it exits. With PAIRS 0 the threads allocate
 * a little and sleep, until SIGUSR2: a process to attach to and detach
 * from. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static long pairs;
static volatile int quit;

static void *work(void *arg) {
  uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)((long)arg + 1);
  void *keep[256] = {0};
  for (long i = 0; pairs ? i < pairs : !quit; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t n = 16 + (size_t)(x % 512);
    void *p = malloc(n);
    *(volatile char *)p = 1;
    unsigned slot = (unsigned)(x >> 32) & 255;
    free(keep[slot]);
    keep[slot] = p;
    if (!pairs && i % 64 == 0) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
  }
  for (int i = 0; i < 256; i++) free(keep[i]);
  return NULL;
}

static void wait_for(int sig) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, sig);
  int got;
  sigwait(&s, &got);
}

static double cpu_ms(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  pairs = argc > 2 ? atol(argv[2]) : 4000000;
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR1);
  sigaddset(&s, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &s, NULL);
  pthread_t *t = calloc((size_t)threads, sizeof *t);
  if (!pairs) /* idle threads, to attach to */
    for (long k = 0; k < threads; k++) pthread_create(&t[k], NULL, work, (void *)k);
  printf("ready\n");
  fflush(stdout);
  if (!pairs) {
    wait_for(SIGUSR2);
    quit = 1;
    for (int k = 0; k < threads; k++) pthread_join(t[k], NULL);
    return 0;
  }
  wait_for(SIGUSR1);
  double c0 = cpu_ms();
  for (long k = 0; k < threads; k++) pthread_create(&t[k], NULL, work, (void *)k);
  for (int k = 0; k < threads; k++) pthread_join(t[k], NULL);
  printf("work-cpu-ms %.1f\n", cpu_ms() - c0);
  fflush(stdout);
  wait_for(SIGUSR2);
  return 0;
}
