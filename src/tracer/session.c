/* Sessions: their sinks (file, TCP, listen), fork and exit, and the
 * public API (memtrace/tracer.h). The tracker's callbacks and their event
 * queues are in events.c, which sees a session through session.h; the
 * state itself is this file's.
 *
 * One lock (tr.lock) serializes the writer; it is adaptive (spins a little
 * before sleeping): it is held briefly, and threads that slept on it at
 * every contended batch cost more than the work itself. Lock order:
 * tr.lock, then the engine's lock (the engine never calls into the tracer
 * with its lock held), which the fork handlers follow too. Messages go
 * straight to fd 2 with write(2): the allocating thread may be inside
 * stdio. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "dest.h"
#include "environ.h"
#include "events.h"
#include "exec.h"
#include "interposer.h"
#include "runnotes.h"
#include "session.h"
#include "toggle.h"
#include "engine/engine_internal.h"
#include "format/writer_internal.h"
#include "memtrace/tracer.h"
#include "tracer/runtimes/cxxrt.h"
#include "tracer/runtimes/jitcodes.h"
#include "tracer/runtimes/rustrt.h"
#include "tracer/symbols/symbols.h"
#include "tracer/unwind/bigstack.h"
#include "tracer/unwind/unwind.h"

#define LIVE_FLUSH_MS 500 /* listen mode: how often a client sees new events */

static struct {
  /* What every sample reads without the lock (session.h): apart from the
   * lock, whose every taking would take this line away from the other
   * cores. */
  _Alignas(64) mt__session s;
  uint64_t session_pid; /* the process whose trace s.w writes */
  uint64_t tracing_pid; /* the process tracing: its own exec is followed (exec.c) */
  int fd;
  int fd_kind;     /* mt__dest_sink_kind: how mt__dest_write writes it */
  mt__fd_id fd_id; /* what fd named when opened (dest.h) */
  int fd_lost;     /* the program closed fd or put another file there */
  mt__dest dest;
  double rate;
  uint64_t seed; /* MEMTRACE_SEED: reproducible sampling, for tests */
  int separate_debuginfo;
  int version;
  mt_unwind unwind;
  size_t depth;
  char context[256];
  char params[256];
  char exe[PATH_MAX], host[256];
  char err[512];
  /* listen mode */
  int listening;
  int listen_fd, client_fd;
  mt__fd_id listen_id;
  int wake[2];
  mt__fd_id wake_id[2];
  pthread_t listener;
  int hooks_installed;
  _Alignas(64) pthread_mutex_t lock; /* serializes the writer and everything above */
} tr = {.lock = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP, .fd = -1, .listen_fd = -1,
        .client_fd = -1, .wake = {-1, -1}};

const mt__session *const mt__tr_session = &tr.s;

/* The session's state is written under tr.lock, and read without it by the
 * event queues' fast path (as hints, checked again under the lock): the
 * writes are atomic, so that those reads are not data races. */
static void set_active(int on) { __atomic_store_n(&tr.s.active, on, __ATOMIC_RELAXED); }
static void set_writer(mt_writer *w) { __atomic_store_n(&tr.s.w, w, __ATOMIC_RELAXED); }

/* Cancellation held off while the tracer works on a program's thread with
 * its lock held (session.h): around the locked parts only, taken once per
 * batch, not around every sample and sampled free. */
static int cancel_off(void) {
  int old = PTHREAD_CANCEL_ENABLE;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  return old;
}
static void cancel_restore(int old) { pthread_setcancelstate(old, NULL); }

int mt__tr_lock(void) {
  int cancel = cancel_off();
  pthread_mutex_lock(&tr.lock);
  return cancel;
}

int mt__tr_trylock(int *cancel) {
  *cancel = cancel_off();
  if (pthread_mutex_trylock(&tr.lock) == 0) return 1;
  cancel_restore(*cancel);
  return 0;
}

void mt__tr_unlock(int cancel) {
  pthread_mutex_unlock(&tr.lock);
  cancel_restore(cancel);
}

int mt__tr_here(void) {
  return __atomic_load_n(&tr.tracing_pid, __ATOMIC_RELAXED) == (uint64_t)getpid();
}

int mt__tr_tracing(uint64_t *pid, int *per_process) {
  *pid = __atomic_load_n(&tr.tracing_pid, __ATOMIC_RELAXED);
  *per_process = tr.dest.per_process;
  return __atomic_load_n(&tr.s.active, __ATOMIC_RELAXED);
}

/* Where the messages go: the standard error the program had when tracing
 * started (or at the first message), kept on a descriptor of our own,
 * parked as the trace's is (dest.h). Descriptor 2 itself may have become
 * one of the program's files by the time tracing stops (a program that
 * closed it, then opened a file), and a message written there went into
 * that file. And a pipe's reader may have gone (`prog 2>&1 | head`): the
 * write is made as the trace's are, without SIGPIPE. Nothing is said where
 * neither descriptor names that file any more. */
static int say_fd = -1, say_kind;
static mt__fd_id say_id;

static void say_keep_stderr(void) {
  if (say_fd >= 0) return;
  int fd = fcntl(2, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return; /* closed: the messages go nowhere */
  say_fd = mt__dest_adopt(fd, &say_id);
  say_kind = mt__dest_sink_kind(say_fd);
}

void mt__tr_say(const char *fmt, ...) {
  char buf[768];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n > sizeof buf - 2) n = sizeof buf - 2;
  buf[n++] = '\n';
  say_keep_stderr();
  /* ours, or if the program closed it (a daemon closing every descriptor
   * from 3 up), descriptor 2 while it still names that same file */
  int fd = say_fd >= 0 && mt__dest_same(say_fd, &say_id) ? say_fd
           : say_fd >= 0 && mt__dest_same(2, &say_id)   ? 2
                                                        : -1;
  if (fd >= 0) mt__dest_write(fd, say_kind, buf, (size_t)n);
}

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* ---- sessions ---- */

/* Writes a packet (tr.lock held), if the descriptor is still the trace's
 * (dest.h): never into a file of the program's. */
static int sink(void *ctx, const void *buf, size_t len) {
  int fd = *(int *)ctx;
  if (!mt__dest_same(fd, &tr.fd_id)) {
    tr.fd_lost = 1;
    return -EBADF;
  }
  return mt__dest_write(fd, tr.fd_kind, buf, len);
}

/* Why the writer stopped, for a message. */
static const char *write_error(void) {
  static char lost[128];
  if (!tr.fd_lost) return mt_writer_error(tr.s.w);
  snprintf(lost, sizeof lost,
           "the program closed the trace's file descriptor %d, or put another file at "
           "its number",
           tr.fd);
  return lost;
}

/* Closes the trace's descriptor, unless the program put a file of its own
 * at its number. */
static void close_trace_fd(void) {
  mt__dest_close(tr.fd, &tr.fd_id);
  tr.fd = -1;
}

static int resolve(void *ctx, uint64_t code, const mt_location **locs, size_t *n) {
  (void)ctx;
  return mt__symbols_lookup(tr.s.syms, code, mt__jit_code_pc(code), locs, n) ? -1 : 0;
}

/* Ends the session (tr.lock held). `flush`: write what is buffered. */
static void session_end(int flush) {
  mt_writer *w = tr.s.w;
  if (!w) {
    if (tr.s.active) { /* a child that never sampled: no file to close */
      set_active(0);
      mt_engine_stop();
    }
    return;
  }
  mt__tls.busy++;
  set_active(0);
  set_writer(NULL); /* detached first: no callback may reach it while it closes */
  mt_engine_stop();
  if (flush) mt_writer_flush(w);
  mt_writer_close(w); /* after a failure or a fork this writes nothing */
  if (tr.client_fd == tr.fd) tr.client_fd = -1;
  close_trace_fd();
  mt__tls.busy--;
}

void mt__tr_session_failed(void) {
  snprintf(tr.err, sizeof tr.err, "%s", write_error());
  mt__tr_say("memtrace: tracing stopped: %s", tr.err);
  mt__runnotes_stopped(now_us(), tr.err);
  session_end(0);
}


/* Opens the writer on fd (tr.lock held); the engine is started apart. */
static int writer_begin(int fd) {
  mt_trace_info in = {.sample_rate = tr.rate,
                      .word_size = 64,
                      .executable_name = tr.exe,
                      .host_name = tr.host,
                      .runtime_params = tr.params,
                      .pid = (uint64_t)getpid(),
                      .start_time = now_us(),
                      .context = tr.context};
  tr.fd = fd = mt__dest_adopt(fd, &tr.fd_id);
  tr.fd_kind = mt__dest_sink_kind(fd);
  tr.fd_lost = 0;
  mt_writer_options wo = {.version = tr.version,
                          .sink = sink,
                          .sink_ctx = &tr.fd,
                          .resolve = resolve,
                          .check_pid = 1};
  mt_writer *w;
  int rc = mt_writer_open(&w, &in, &wo);
  if (rc != MT_OK) {
    snprintf(tr.err, sizeof tr.err, "%s", w ? mt_writer_error(w) : "out of memory");
    mt_writer_close(w);
    close_trace_fd();
    return rc;
  }
  mt__writer_place_by_address(w); /* codes are addresses here */
  set_writer(w);
  __atomic_store_n(&tr.s.id, tr.s.id + 1, __ATOMIC_RELAXED);
  __atomic_store_n(&tr.session_pid, in.pid, __ATOMIC_RELAXED); /* read unlocked before _exit */
  return MT_OK;
}

static int engine_begin(void) {
  mt_engine_params ep = {.rate = tr.rate,
                         .tracker = {mt__tr_on_alloc, mt__tr_on_promote, mt__tr_on_dealloc, NULL},
                         .callstack = mt__unwind,
                         .callstack_max = tr.depth,
                         .seed = tr.seed};
  if (mt_engine_start(&ep) != MT_OK) {
    snprintf(tr.err, sizeof tr.err, "the sampling engine is already in use");
    return MT_ERR_INVALID;
  }
  return MT_OK;
}

/* Starts a session writing to fd (tr.lock held). */
static int session_begin(int fd) {
  int rc = writer_begin(fd);
  if (rc != MT_OK) return rc;
  if ((rc = engine_begin()) != MT_OK) {
    mt_writer_close(tr.s.w);
    set_writer(NULL);
    close_trace_fd();
    return rc;
  }
  __atomic_store_n(&tr.tracing_pid, (uint64_t)getpid(), __ATOMIC_RELAXED);
  set_active(1);
  return MT_OK;
}

/* A forked child with a %p destination samples from the start but opens
 * its file at its first sample: a child that only execs leaves none. */
int mt__tr_open_child_trace(void) {
  char err[256];
  int fd = mt__dest_open(&tr.dest, err, sizeof err);
  if (fd < 0 || writer_begin(fd) != MT_OK) {
    mt__tr_say("memtrace: the child process %ld is not traced: %s", (long)getpid(),
        fd < 0 ? err : tr.err);
    set_active(0);
    mt_engine_stop();
    return -1;
  }
  return 0;
}

void mt__tr_before_credentials(void) {
  if (__atomic_load_n(&tr.tracing_pid, __ATOMIC_RELAXED) != (uint64_t)getpid() ||
      !__atomic_load_n(&tr.s.active, __ATOMIC_RELAXED) || tr.dest.kind != MT__DEST_FILE ||
      !tr.dest.per_process)
    return;
  int cancel = mt__tr_lock();
  mt__tls.busy++; /* the writer's allocations are the profiler's */
  if (tr.s.active && !tr.s.w) mt__tr_open_child_trace();
  mt__tls.busy--;
  mt__tr_unlock(cancel);
}

/* ---- listen mode ---- */

static void *listener_main(void *arg) {
  (void)arg;
  mt__tls.busy++; /* this thread's own allocations are never sampled */
  uint64_t last_flush = now_us();
  for (;;) {
    pthread_mutex_lock(&tr.lock);
    int client = tr.s.active ? tr.client_fd : -1;
    pthread_mutex_unlock(&tr.lock);
    struct pollfd p[3] = {{tr.listen_fd, POLLIN, 0}, {tr.wake[0], POLLIN, 0}, {client, POLLIN, 0}};
    int rc = poll(p, client >= 0 ? 3 : 2, LIVE_FLUSH_MS);
    if (rc < 0 && errno != EINTR) break;
    if (p[1].revents) break; /* mt_trace_stop */
    if (p[0].revents & POLLNVAL) { /* the program closed the listening socket */
      mt__tr_say("memtrace: stopped listening: the program closed the listening socket's "
                 "file descriptor %d",
                 tr.listen_fd);
      break;
    }
    if (p[0].revents & POLLIN) {
      int fd = accept4(tr.listen_fd, NULL, NULL, SOCK_CLOEXEC);
      if (fd >= 0) {
        mt__dest_send_timeout(fd);
        pthread_mutex_lock(&tr.lock);
        if (tr.s.active) {
          static const char busy[] = "memtrace: already serving a client\n";
          mt__dest_write(fd, MT__SINK_SOCKET, busy, sizeof busy - 1);
          close(fd);
        } else if (session_begin(fd) == MT_OK) {
          tr.client_fd = tr.fd; /* moved (dest.h) */
        } else {
          mt__tr_say("memtrace: cannot start tracing for a client: %s", tr.err);
        }
        pthread_mutex_unlock(&tr.lock);
      }
    }
    if (client >= 0 && p[2].revents) {
      char buf[256];
      ssize_t got = recv(client, buf, sizeof buf, MSG_DONTWAIT);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
        pthread_mutex_lock(&tr.lock);
        if (tr.s.active && tr.client_fd == client) session_end(0); /* the client left */
        pthread_mutex_unlock(&tr.lock);
      }
    }
    if (now_us() - last_flush >= LIVE_FLUSH_MS * 1000) {
      last_flush = now_us();
      pthread_mutex_lock(&tr.lock);
      if (tr.s.active) mt__tr_flush_queues();
      if (tr.s.active && tr.s.w && mt_writer_flush(tr.s.w) != MT_OK)
        session_end(0); /* the client is gone */
      pthread_mutex_unlock(&tr.lock);
    }
  }
  mt__tls.busy--;
  return NULL;
}

/* ---- fork and exit ---- */

/* A fork from a signal handler that interrupted this thread inside the
 * profiler (fork is async-signal-safe) waited for ever for tr.lock, which
 * the interrupted code may hold (5 runs in 5 of a program forking from a
 * SIGALRM handler, traced at rate 1). Then no lock is taken, and the child
 * is not traced: its state stays as the interrupted code left it, which
 * finishes its work if the child returns from the handler (the writer,
 * seeing another pid, writes nothing). */
static __thread int fork_inside __attribute__((tls_model("initial-exec")));

/* A thread may be on the big stack (symbolizing, or walking a short
 * stack) when another forks: its lock is taken too, after the tracer's. */
static void fork_prepare(void) {
  if ((fork_inside = mt__tls.busy > 0)) return;
  pthread_mutex_lock(&tr.lock);
  mt__big_stack_fork(0);
}

static void fork_parent(void) {
  if (fork_inside) {
    fork_inside = 0;
    return;
  }
  mt__big_stack_fork(1);
  pthread_mutex_unlock(&tr.lock);
}

static void fork_child(void) {
  if (fork_inside) {
    fork_inside = 0;
    if (__atomic_load_n(&tr.s.active, __ATOMIC_RELAXED)) mt__runnotes_child(0, (long)getpid());
    set_active(0);
    return;
  }
  mt__big_stack_fork(1);
  mt__tr_queues_after_fork();
  pthread_mutex_unlock(&tr.lock);
  mt__tls.busy++; /* what follows allocates on the profiler's behalf */
  /* The parent's buffered events are the parent's: drop them unwritten
   * (the writer sees the new pid and writes nothing). */
  mt_writer *w = tr.s.w;
  int was_tracing = w || tr.s.active; /* a %p child itself: active, its file not yet open */
  if (w) {
    set_writer(NULL); /* detached first: nothing may reach it while it closes */
    set_active(0);
    mt_engine_stop();
    mt_writer_close(w);
    close_trace_fd();
  }
  if (tr.listening) { /* the listener thread stayed in the parent */
    mt__dest_close(tr.listen_fd, &tr.listen_id);
    tr.listen_fd = -1;
    tr.listening = 0;
    tr.client_fd = -1;
  } else if (tr.dest.kind == MT__DEST_FILE && tr.dest.per_process && was_tracing) {
    /* The file opens at the first sample. Without a writer the engine was
     * left running, and goes on. */
    if (!w || engine_begin() == MT_OK) {
      __atomic_store_n(&tr.tracing_pid, (uint64_t)getpid(), __ATOMIC_RELAXED);
      set_active(1);
    }
  }
  if (was_tracing) mt__runnotes_child(tr.s.active, (long)getpid());
  mt__tls.busy--;
}

/* exit's handler. A signal handler may call exit (a SIGINT or SIGTERM
 * handler often does) while the signal interrupted this thread inside the
 * profiler, maybe holding tr.lock: stop() waited for that lock for ever (9
 * runs in 30 of a program exiting from a SIGALRM handler at rate 1 hung).
 * From there, only what _exit's path does, which never waits: the queued
 * events written if the lock is free; else the trace ends at its last whole
 * packet, as a killed process's. */
static void at_exit(void) {
  if (!mt__tls.busy) {
    mt_trace_stop();
    return;
  }
  if (!mt__trace_before_exit() && __atomic_load_n(&tr.s.active, __ATOMIC_RELAXED))
    mt__tr_say("memtrace: the program exited from a signal handler that interrupted the "
               "profiler's writing: the trace ends at its last whole packet");
}

/* Before _exit: write the buffered events of this process's own session.
 * Only trylock (_exit may come from a signal handler that interrupted the
 * tracer), and nothing when the session is another process's (a vfork
 * child shares the parent's memory: it must not touch its writer). */
int mt__trace_before_exit(void) {
  /* another process's session: not even the lock (a vfork child would
   * take it in the parent's memory, from under the parent's threads) */
  if (__atomic_load_n(&tr.session_pid, __ATOMIC_RELAXED) != (uint64_t)getpid()) return 1;
  int cancel;
  if (!mt__tr_trylock(&cancel)) return 0;
  if (tr.s.active && tr.s.w && tr.session_pid == (uint64_t)getpid()) {
    mt__tls.busy++;
    mt__tr_flush_queues();
    if (tr.s.w) mt_writer_flush(tr.s.w);
    mt__tls.busy--;
  }
  mt__tr_unlock(cancel);
  return 1;
}

/* ---- public API ---- */

/* The interposer's settings (interposer.h); NULL: no interposer. */
static const char *interposer;

void mt__tr_set_interposer(const char *settings) { interposer = settings; }

static void describe_process(void) {
  ssize_t n = readlink("/proc/self/exe", tr.exe, sizeof tr.exe - 1);
  tr.exe[n > 0 ? n : 0] = 0;
  if (gethostname(tr.host, sizeof tr.host) != 0) tr.host[0] = 0;
  tr.host[sizeof tr.host - 1] = 0;
  snprintf(tr.params, sizeof tr.params,
           "memtrace-c %s: rate=%g, unwind=%s, depth=%zu, format=%d, debuginfo=%s", mt_version(),
           tr.rate,
           tr.unwind == MT_UNWIND_FRAME_POINTERS ? "fp"
           : tr.unwind == MT_UNWIND_AUTO         ? "auto"
                                                 : "libunwind",
           tr.depth,
           tr.version, tr.separate_debuginfo ? "separate" : "embedded");
  if (interposer) {
    size_t len = strlen(tr.params);
    snprintf(tr.params + len, sizeof tr.params - len, ", %s", interposer);
  }
}

static int start_locked(const mt_trace_options *o) {
  char err[384];
  if (tr.s.active || tr.listening) {
    snprintf(tr.err, sizeof tr.err, "already tracing");
    return MT_ERR_INVALID;
  }
  tr.rate = o->rate > 0 ? o->rate : MT_DEFAULT_RATE;
  tr.version = o->format_version ? o->format_version : 2;
  tr.unwind = o->unwind;
  tr.depth = o->max_depth ? o->max_depth : 256;
  tr.separate_debuginfo = o->separate_debuginfo;
  if (!(tr.rate > 0 && tr.rate <= 1) || (tr.version != 2 && tr.version != 3) ||
      tr.depth > MT__MAX_DEPTH ||
      (o->unwind != MT_UNWIND_LIBUNWIND && o->unwind != MT_UNWIND_FRAME_POINTERS &&
       o->unwind != MT_UNWIND_AUTO)) {
    snprintf(tr.err, sizeof tr.err, "invalid options (rate %g, format %d, depth %zu)", tr.rate,
             tr.version, tr.depth);
    return MT_ERR_INVALID;
  }
  if (mt__dest_parse(o->destination, &tr.dest, err, sizeof err) != 0) {
    snprintf(tr.err, sizeof tr.err, "destination: %s", err);
    return MT_ERR_INVALID;
  }
  snprintf(tr.context, sizeof tr.context, "%s", o->context ? o->context : "");
  describe_process();
  mt__tls.busy++; /* the set-up allocates; none of it is the program's */
  if (!tr.s.syms) tr.s.syms = mt__symbols_new(o->separate_debuginfo);
  mt__unwind_init(tr.unwind == MT_UNWIND_FRAME_POINTERS ? MT__UNWIND_FRAME_POINTERS
                   : tr.unwind == MT_UNWIND_AUTO         ? MT__UNWIND_AUTO
                                                         : MT__UNWIND_LIBUNWIND);
  mt__cxxrt_probe();
  mt__rustrt_probe();
  mt__tr_libraries_baseline();
  if (!tr.hooks_installed) {
    tr.hooks_installed = 1;
    mt__tr_events_init();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    atexit(at_exit);
  }
  int rc = MT_OK;
  int fd = mt__dest_open(&tr.dest, err, sizeof err);
  if (fd < 0) {
    snprintf(tr.err, sizeof tr.err, "%s", err);
    rc = MT_ERR_IO;
  } else if (tr.dest.kind == MT__DEST_LISTEN) {
    tr.listen_fd = fd = mt__dest_adopt(fd, &tr.listen_id);
    int piped = pipe2(tr.wake, O_CLOEXEC) == 0;
    for (int k = 0; piped && k < 2; k++) tr.wake[k] = mt__dest_adopt(tr.wake[k], &tr.wake_id[k]);
    if (!piped || pthread_create(&tr.listener, NULL, listener_main, NULL) != 0) {
      snprintf(tr.err, sizeof tr.err, "cannot start the listener thread");
      if (piped) close(tr.wake[0]), close(tr.wake[1]);
      close(fd);
      tr.listen_fd = -1;
      rc = MT_ERR_IO;
    } else {
      tr.listening = 1;
    }
  } else {
    rc = session_begin(fd);
  }
  mt__tls.busy--;
  return rc;
}

int mt_trace_start(const mt_trace_options *o) {
  if (!o || !o->destination) return MT_ERR_INVALID;
  mt__dw_load(); /* not under the lock: dlopen takes the loader's */
  /* libunwind: the LIBUNWIND mode's walker, AUTO's last resort */
  int unw = o->unwind == MT_UNWIND_FRAME_POINTERS ? 0 : mt__unw_load();
  /* inside the profiler from before the lock: a signal handler that exits
   * meanwhile must not wait for it (at_exit) */
  mt__tls.busy++;
  int cancel = mt__tr_lock(); /* opening the destination: a cancellation point */
  tr.err[0] = 0;
  say_keep_stderr();
  int rc;
  if (unw != 0 && o->unwind == MT_UNWIND_LIBUNWIND) {
    snprintf(tr.err, sizeof tr.err,
             "cannot load libunwind.so.8, the libunwind unwinder's library "
             "(the auto and fp unwinders do without it)");
    rc = MT_ERR_INVALID;
  } else {
    rc = start_locked(o);
  }
  mt__tr_unlock(cancel);
  mt__tls.busy--;
  return rc;
}

static int stop(void);

int mt_trace_stop(void) {
  int cancel = cancel_off(); /* writing the end of the trace */
  int rc = stop();
  cancel_restore(cancel);
  return rc;
}

static int stop(void) {
  pthread_mutex_lock(&tr.lock);
  int was = tr.s.active || tr.listening;
  int listening = tr.listening;
  tr.listening = 0;
  pthread_mutex_unlock(&tr.lock);
  if (listening) {
    /* (a wake pipe the program closed: the listener saw it, and left) */
    if (mt__dest_same(tr.wake[1], &tr.wake_id[1])) {
      ssize_t ignored = write(tr.wake[1], "x", 1);
      (void)ignored;
    }
    pthread_join(tr.listener, NULL);
    mt__dest_close(tr.wake[0], &tr.wake_id[0]);
    mt__dest_close(tr.wake[1], &tr.wake_id[1]);
    tr.wake[0] = tr.wake[1] = -1;
    mt__dest_close(tr.listen_fd, &tr.listen_id);
    tr.listen_fd = -1;
  }
  pthread_mutex_lock(&tr.lock);
  mt__tls.busy++;
  mt__tr_flush_queues();
  if (tr.s.w && tr.s.active && mt_writer_flush(tr.s.w) != MT_OK && tr.dest.kind != MT__DEST_LISTEN)
    mt__tr_say("memtrace: writing the end of the trace failed: %s", write_error());
  session_end(0);
  tr.client_fd = -1;
  mt__tls.busy--;
  pthread_mutex_unlock(&tr.lock);
  return was ? MT_OK : MT_ERR_INVALID;
}

int mt_trace_is_tracing(void) {
  pthread_mutex_lock(&tr.lock);
  int on = tr.s.active || tr.listening;
  pthread_mutex_unlock(&tr.lock);
  return on;
}

const char *mt_trace_error(void) { return tr.err; }

int mt_trace_if_requested(const char *context, double rate) {
  const char *dest = mt__env_get("MEMTRACE");
  if (!dest || !*dest) return 0;
  mt_trace_options o = {
      .destination = dest, .rate = rate, .context = context, .unwind = MT_UNWIND_AUTO};
  const char *v;
  char *end;
  if ((v = mt__env_get("MEMTRACE_RATE")) && *v) {
    o.rate = strtod(v, &end);
    if (*end || !(o.rate > 0 && o.rate <= 1)) {
      mt__tr_say("memtrace: MEMTRACE_RATE=%s is not a sampling rate in (0, 1]; not tracing", v);
      return MT_ERR_INVALID;
    }
  }
  if ((v = mt__env_get("MEMTRACE_UNWIND")) && *v) {
    if (strcmp(v, "fp") == 0) o.unwind = MT_UNWIND_FRAME_POINTERS;
    else if (strcmp(v, "libunwind") == 0) o.unwind = MT_UNWIND_LIBUNWIND;
    else if (strcmp(v, "auto") == 0) o.unwind = MT_UNWIND_AUTO;
    else {
      mt__tr_say("memtrace: MEMTRACE_UNWIND=%s is not 'auto', 'libunwind' or 'fp'; not tracing", v);
      return MT_ERR_INVALID;
    }
  }
  if ((v = mt__env_get("MEMTRACE_DEPTH")) && *v) {
    long d = strtol(v, &end, 10);
    if (*end || d < 1 || d > MT__MAX_DEPTH) {
      mt__tr_say("memtrace: MEMTRACE_DEPTH=%s is not a depth from 1 to %d; not tracing", v, MT__MAX_DEPTH);
      return MT_ERR_INVALID;
    }
    o.max_depth = (size_t)d;
  }
  if ((v = mt__env_get("MEMTRACE_FORMAT")) && *v) {
    if (strcmp(v, "2") && strcmp(v, "3")) {
      mt__tr_say("memtrace: MEMTRACE_FORMAT=%s is not 2 or 3; not tracing", v);
      return MT_ERR_INVALID;
    }
    o.format_version = v[0] - '0';
  }
  if ((v = mt__env_get("MEMTRACE_SEED")) && *v) tr.seed = strtoull(v, NULL, 10);
  if ((v = mt__env_get("MEMTRACE_DEBUGINFO")) && *v) o.separate_debuginfo = strcmp(v, "0") != 0;
  char dest_copy[PATH_MAX + 16];
  /* anchored: the settings exec'd programs get back (follow mode) name the
   * same file whatever their directory */
  mt__dest_anchor(dest, dest_copy, sizeof dest_copy);
  o.destination = dest_copy;
  const char *keep = mt__env_get("MEMTRACE_KEEP_ENV");
  int follow = (v = mt__env_get("MEMTRACE_FOLLOW_EXEC")) && strcmp(v, "1") == 0;
  if (!keep || strcmp(keep, "1") != 0) {
    char entry[PATH_MAX];
    mt__env_drop_tracing(entry, sizeof entry);
    if (follow && entry[0]) mt__exec_follow_keep(dest_copy, entry);
  }
  /* MEMTRACE_SIGNAL: the signal starts and ends tracing periods, each a trace
   * (MEMTRACE_PAUSED=1: none until the first) */
  int sig = mt__toggle_signal(mt__env_get("MEMTRACE_SIGNAL"));
  if (sig < 0) return MT_ERR_INVALID;
  if (sig > 0) {
    const char *paused = mt__env_get("MEMTRACE_PAUSED");
    return mt__toggle_setup(sig, &o, paused && strcmp(paused, "1") == 0);
  }
  mt__runnotes_open();
  int rc = mt_trace_start(&o);
  mt__exec_follow_on(rc == MT_OK && tr.dest.kind == MT__DEST_FILE);
  if (rc != MT_OK) {
    mt__runnotes_close();
    mt__tr_say("memtrace: not tracing: %s", mt_trace_error());
    return rc;
  }
  mt__runnotes_started();
  return 1;
}
