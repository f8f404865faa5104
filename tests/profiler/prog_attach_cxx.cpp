// A C++ program memtrace attach traces for a window (e2e.sh, attach): it
// says "ready" and waits for SIGUSR1; in the window, operator new and
// delete (through the C++ runtime's, which call malloc and free) at
// cxx_site; it says "window done", waits for SIGUSR2 and prints the truth
// for the window at rate 1 ("SITE objects bytes live").
#include <csignal>
#include <cstdio>
#include <memory>
#include <pthread.h>

__attribute__((noinline)) static long *cxx_site() { return new long[25]; }

static void wait_for(int sig) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  int got;
  sigwait(&set, &got);
}

int main() {
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  sigaddset(&block, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &block, nullptr);
  std::printf("ready\n");
  std::fflush(stdout);
  wait_for(SIGUSR1);
  long sum = 0;
  for (int i = 0; i < 1000; i++) {
    std::unique_ptr<long[]> p(cxx_site());
    p[i % 25] = i;
    sum += p[i % 25];
  }
  std::printf("window done\n");
  std::fflush(stdout);
  wait_for(SIGUSR2);
  std::printf("cxx_site 1000 200000 0\n");
  return sum == 499500 ? 0 : 1;
}
