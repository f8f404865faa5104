/* Tracing turned on and off by a signal (toggle.h).
 *
 * The handler only writes a byte to a pipe (async-signal-safe); a thread of
 * the tracer's, blocked on the pipe's other end, starts or stops tracing.
 * The handler acts only in the process that set it up: a forked child
 * inherits it and the pipe, but a signal sent to the child must not toggle
 * the parent, so there it does nothing. */
#include "toggle.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/trace_file.h"
#include "interposer.h"
#include "runnotes.h"

static struct {
  int pipe[2];
  pid_t pid;                /* the process the handler toggles */
  int sig;
  unsigned period;          /* the last period started */
  mt_trace_options options; /* pointing into the copies below */
  char destination[PATH_MAX + 16];
  char context[256];
} tg = {{-1, -1}, 0, 0, 0, {0}, "", ""};

int mt__toggle_signal(const char *text) {
  if (!text || !*text) return 0;
  const char *name = strncmp(text, "SIG", 3) == 0 ? text + 3 : text;
  static const struct {
    const char *name;
    int sig;
  } names[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP},   {"URG", SIGURG},
               {"WINCH", SIGWINCH}, {"PWR", SIGPWR}, {"TTIN", SIGTTIN}, {"TTOU", SIGTTOU}};
  int sig = 0;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strcmp(name, names[i].name) == 0) sig = names[i].sig;
  char *end;
  long v = sig ? sig : strtol(name, &end, 10);
  if (!sig && (*end || v < SIGRTMIN || v > SIGRTMAX)) v = 0;
  if (v <= 0) {
    mt__tr_say("memtrace: MEMTRACE_SIGNAL=%s is not a signal to toggle tracing with (USR1, "
               "USR2, HUP, URG, WINCH, PWR, TTIN, TTOU, or a real-time signal's number); not "
               "tracing",
               text);
    return -1;
  }
  return (int)v;
}

static void on_signal(int sig) {
  (void)sig;
  if (getpid() != tg.pid) return; /* a forked child's: not ours to toggle */
  int saved = errno;
  char c = 1;
  if (write(tg.pipe[1], &c, 1) < 0) {
    /* a full pipe: toggles are pending already */
  }
  errno = saved;
}

static void start_period(void) {
  char dest[PATH_MAX + 32];
  mt__trace_period_path(tg.destination, ++tg.period, dest, sizeof dest);
  mt_trace_options o = tg.options;
  o.destination = dest;
  mt__runnotes_open();
  if (mt_trace_start(&o) != MT_OK) {
    mt__tr_say("memtrace: tracing period %u not traced: %s", tg.period, mt_trace_error());
    return;
  }
  mt__runnotes_started();
  mt__tr_say("memtrace: tracing period %u begins (signal %d ends it)", tg.period, tg.sig);
}

static void *toggler(void *arg) {
  (void)arg;
  char c;
  for (;;) {
    ssize_t got = read(tg.pipe[0], &c, 1);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return NULL; /* the program closed the pipe: no more toggles */
    if (mt_trace_is_tracing()) {
      mt_trace_stop();
      mt__tr_say("memtrace: tracing period %u ended (signal %d starts the next)", tg.period, tg.sig);
    } else {
      start_period();
    }
  }
}

int mt__toggle_setup(int sig, const mt_trace_options *o, int paused) {
  tg.options = *o;
  snprintf(tg.destination, sizeof tg.destination, "%s", o->destination);
  snprintf(tg.context, sizeof tg.context, "%s", o->context ? o->context : "");
  tg.options.context = o->context ? tg.context : NULL;
  tg.sig = sig;
  tg.pid = getpid();
  if (pipe2(tg.pipe, O_CLOEXEC) != 0) {
    mt__tr_say("memtrace: cannot take signal %d to toggle tracing: %s; not tracing", sig,
               strerror(errno));
    return MT_ERR_IO;
  }
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  /* the thread takes no signal: the program's handlers run in its own */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&t, &attr, toggler, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (rc != 0 || sigaction(sig, &sa, NULL) != 0) {
    mt__tr_say("memtrace: cannot take signal %d to toggle tracing; not tracing", sig);
    return MT_ERR_IO;
  }
  if (!paused) start_period();
  else mt__tr_say("memtrace: paused: signal %d starts tracing", sig);
  return 1;
}
