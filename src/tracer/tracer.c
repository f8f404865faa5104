/* The tracer: the engine's tracker, writing a memtrace trace.
 *
 * One lock (tr.lock) serializes the writer; it is adaptive (spins a little
 * before sleeping): it is held for well under a microsecond, and threads
 * that slept on it at every contended sample cost more than the work
 * itself (4 threads at 1e-3: 5.3 s of CPU instead of 3.6 s). Lock order: tr.lock, then the
 * engine's lock (the engine never calls into the tracer with its lock held),
 * which the fork handlers follow too. Messages go straight to fd 2 with
 * write(2): the allocating thread may be inside stdio. */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "dest.h"
#include "engine_internal.h"
#include "memtrace/tracer.h"
#include "symbols.h"
#include "unwind.h"

#define GEN_SHIFT 48 /* user-space addresses fit below bit 47 */
#define PC_MASK ((UINT64_C(1) << GEN_SHIFT) - 1)
#define MAX_DEPTH 4096
#define LIVE_FLUSH_MS 500 /* listen mode: how often a client sees new events */

static struct {
  pthread_mutex_t lock;
  int active; /* a session is writing events */
  uint32_t session;
  uint64_t session_pid; /* the process whose trace tr.w writes */
  mt_writer *w;
  int fd;
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
  mt__symbols *syms;
  uint64_t gen;
  unsigned long long dl_subs;
  char err[512];
  /* listen mode */
  int listening;
  int listen_fd, client_fd;
  int wake[2];
  pthread_t listener;
  int hooks_installed;
} tr = {.lock = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP, .fd = -1, .listen_fd = -1, .client_fd = -1,
        .wake = {-1, -1}};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  char buf[768];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n > sizeof buf - 2) n = sizeof buf - 2;
  buf[n++] = '\n';
  ssize_t ignored = write(2, buf, (size_t)n);
  (void)ignored;
}

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* ---- unloaded libraries: codes get a new generation ---- */

static int first_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  *(unsigned long long *)data = info->dlpi_subs;
  return 1;
}

/* The interposer wraps dlclose and counts the calls: then the loader's
 * list is consulted (dl_iterate_phdr takes the loader's lock) only after a
 * dlclose, not at every sample. Without it (the library linked into a
 * program), at every sample. */
_Atomic unsigned mt__dlclose_count;
int mt__dlclose_hooked;
static unsigned dlclose_seen;

/* Codes already described in this generation: a direct-mapped cache in
 * front of the symbol table's hash map (tr.lock held). */
#define DESCRIBED_BITS 12
static uint64_t described[1u << DESCRIBED_BITS];

static inline size_t described_slot(uint64_t code) {
  return (size_t)((code * 0x9e3779b97f4a7c15ull) >> (64 - DESCRIBED_BITS));
}

/* After a dlclose, an address may belong to a different function: codes
 * carry a generation in their top bits so that no code is ever described
 * twice differently. The codes still waiting for their location events
 * were described while their library was loaded: those events are written
 * before the descriptions are forgotten. Called with tr.lock held; returns
 * -1 if that write failed. */
static int check_unloads(void) {
  if (mt__dlclose_hooked) {
    unsigned n = atomic_load_explicit(&mt__dlclose_count, memory_order_acquire);
    if (n == dlclose_seen) return 0;
    dlclose_seen = n;
  }
  unsigned long long subs = 0;
  dl_iterate_phdr(first_object, &subs);
  if (subs == tr.dl_subs) return 0;
  tr.dl_subs = subs;
  tr.gen = (tr.gen + 1) & 0x7fff;
  if (tr.w && mt_writer_flush(tr.w) != MT_OK) return -1;
  mt__symbols_reset(tr.syms);
  memset(described, 0, sizeof described);
  mt__unwind_forget();
  return 0;
}

/* ---- sessions ---- */

static int sink(void *ctx, const void *buf, size_t len) {
  return mt__dest_write(*(int *)ctx, buf, len);
}

static int resolve(void *ctx, uint64_t code, const mt_location **locs, size_t *n) {
  (void)ctx;
  return mt__symbols_lookup(tr.syms, code, code & PC_MASK, locs, n) ? -1 : 0;
}

/* Ends the session (tr.lock held). `flush`: write what is buffered. */
static void session_end(int flush) {
  mt_writer *w = tr.w;
  if (!w) {
    if (tr.active) { /* a child that never sampled: no file to close */
      tr.active = 0;
      mt_engine_stop();
    }
    return;
  }
  mt__tls.busy++;
  tr.active = 0;
  tr.w = NULL; /* detached first: no callback may reach it while it closes */
  mt_engine_stop();
  if (flush) mt_writer_flush(w);
  mt_writer_close(w); /* after a failure or a fork this writes nothing */
  if (tr.fd >= 0) close(tr.fd);
  if (tr.client_fd == tr.fd) tr.client_fd = -1;
  tr.fd = -1;
  mt__tls.busy--;
}

/* Stops the session after a write failure, with one message. */
static void session_failed(void) {
  say("memtrace: tracing stopped: %s", mt_writer_error(tr.w));
  snprintf(tr.err, sizeof tr.err, "%s", mt_writer_error(tr.w));
  session_end(0);
}

static void *on_alloc(void *ctx, const mt_alloc_info *info);
static void *on_promote(void *ctx, void *handle);
static void relative_event(void *handle, int promote);
static void on_dealloc(void *ctx, void *handle);
static void session_failed(void);

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
  tr.fd = fd;
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
    close(fd);
    tr.fd = -1;
    return rc;
  }
  tr.w = w;
  tr.session++;
  tr.session_pid = in.pid;
  return MT_OK;
}

static int engine_begin(void) {
  mt_engine_params ep = {.rate = tr.rate,
                         .tracker = {on_alloc, on_promote, on_dealloc, NULL},
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
    mt_writer_close(tr.w);
    tr.w = NULL;
    close(fd);
    tr.fd = -1;
    return rc;
  }
  tr.active = 1;
  return MT_OK;
}

/* A forked child with a %p destination samples from the start but opens
 * its file at its first sample: a child that only execs leaves none. */
static int open_child_trace(void) {
  char err[256];
  int fd = mt__dest_open(&tr.dest, err, sizeof err);
  if (fd < 0 || writer_begin(fd) != MT_OK) {
    say("memtrace: the child process %ld is not traced: %s", (long)getpid(),
        fd < 0 ? err : tr.err);
    tr.active = 0;
    mt_engine_stop();
    return -1;
  }
  return 0;
}

/* ---- the tracker ---- */

/* A handle names the session and the object id, so that a late callback
 * from an earlier session is recognized and ignored. */
static void *handle_of(uint64_t id) {
  return (void *)(uintptr_t)((uint64_t)(tr.session & 0xffffff) << 40 | (id + 1));
}
static int handle_id(void *h, uint64_t *id) {
  uint64_t v = (uint64_t)(uintptr_t)h;
  if ((v >> 40) != (tr.session & 0xffffff)) return -1;
  *id = (v & ((UINT64_C(1) << 40) - 1)) - 1;
  return 0;
}

/* ---- collect events, buffered per thread ----
 *
 * A sampled block's free is queued in its thread's ring, and written when
 * that thread next takes the writer's lock for an alloc event: one lock
 * per sampled block instead of two (the lock was the largest cost of a
 * sample with several threads). A collect always names an id the writer
 * already handed out, so a late write cannot put it before its alloc. The
 * ring is a single-producer queue: its thread appends without a lock; any
 * holder of tr.lock may write what was appended (the thread itself; a
 * sweep of every ring every SWEEP_US, so that a thread that stopped
 * allocating delays its collects little; trace stop, exit, the listener's
 * periodic flush). The writer keeps each domain's times non-decreasing: a
 * collect written late takes the time of the last event before it.
 * Rings are mmap'd and never unmapped: a thread's ring returns to the pool
 * at its exit, after a flush. */
#define RING 32
#define RING_MAX_AGE_US 1000 /* a thread's own queue is written at this age */
#define SWEEP_US 10000

typedef struct ring {
  _Atomic uint64_t n;    /* entries appended: the owner only */
  _Atomic uint64_t done; /* entries written: tr.lock held */
  _Atomic int owned;
  struct ring *next;     /* all rings, pushed under tr.lock */
  struct {
    void *handle;
    uint64_t time;
  } e[RING];
} ring;

static ring *rings;
static uint64_t last_sweep;
static pthread_key_t ring_key;
static __thread ring *my_ring __attribute__((tls_model("initial-exec")));

/* Writes the ring's queued collects (tr.lock held). Entries of an earlier
 * session, or of none, are dropped. */
static void ring_flush(ring *r) {
  uint64_t n = atomic_load_explicit(&r->n, memory_order_acquire);
  uint64_t d = atomic_load_explicit(&r->done, memory_order_relaxed);
  for (; d < n; d++) {
    uint64_t id;
    if (!tr.active || !tr.w || handle_id(r->e[d % RING].handle, &id) != 0) continue;
    int rc = mt_writer_collect(tr.w, r->e[d % RING].time, 0, id);
    if (rc != MT_OK && rc != MT_ERR_INVALID) session_failed();
  }
  atomic_store_explicit(&r->done, n, memory_order_release);
}

static void rings_flush(void) {
  for (ring *r = rings; r; r = r->next) ring_flush(r);
}

/* At thread exit (the key's destructor): flush, and give the ring back. */
static void ring_release(void *p) {
  ring *r = p;
  pthread_mutex_lock(&tr.lock);
  ring_flush(r);
  if (my_ring == r) my_ring = NULL;
  atomic_store_explicit(&r->owned, 0, memory_order_release);
  pthread_mutex_unlock(&tr.lock);
}

/* This thread's ring: a free one of the pool or a new one (NULL: none). */
static ring *ring_claim(void) {
  ring *r;
  pthread_mutex_lock(&tr.lock);
  for (r = rings; r; r = r->next)
    if (!atomic_load_explicit(&r->owned, memory_order_relaxed)) break;
  if (!r) {
    void *m = mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
      r = m; /* zeroed */
      r->next = rings;
      rings = r;
    }
  }
  if (r) {
    atomic_store_explicit(&r->owned, 1, memory_order_relaxed);
    my_ring = r;
    pthread_setspecific(ring_key, r);
  }
  pthread_mutex_unlock(&tr.lock);
  return r;
}

static void *on_alloc(void *ctx, const mt_alloc_info *info) {
  (void)ctx;
  uint64_t codes[MAX_DEPTH];
  size_t n = info->callstack_len < MAX_DEPTH ? info->callstack_len : MAX_DEPTH;
  void *h = NULL;
  uint64_t now = mt__clock_us(); /* before symbolizing: that can take a while */
  pthread_mutex_lock(&tr.lock);
  if (!tr.active) goto out;
  if (!tr.w && open_child_trace() != 0) goto out;
  if (check_unloads() != 0) {
    session_failed();
    goto out;
  }
  /* This thread's queued collects first: they happened before. */
  if (my_ring) ring_flush(my_ring);
  if ((int64_t)(now - last_sweep) > SWEEP_US) { /* now may be a little behind */
    last_sweep = now;
    rings_flush();
  }
  if (!tr.w) goto out; /* a write failed */
  for (size_t i = 0; i < n; i++) {
    uint64_t pc = info->callstack[i];
    uint64_t code = (pc & PC_MASK) | tr.gen << GEN_SHIFT;
    codes[n - 1 - i] = code; /* the writer wants the outermost frame first */
    /* Describe new codes now, while their library is surely loaded; the
     * writer asks again at flush time and finds the cached answer. */
    uint64_t *seen = &described[described_slot(code)];
    if (*seen == code) continue;
    const mt_location *l;
    size_t k;
    if (mt__symbols_lookup(tr.syms, code, pc & PC_MASK, &l, &k) == 0) *seen = code;
  }
  uint64_t id;
  if (mt_writer_alloc(tr.w, now, 0, info->words, info->nsamples, info->source, codes, n,
                      &id) != MT_OK) {
    session_failed();
    goto out;
  }
  h = handle_of(id);
out:
  pthread_mutex_unlock(&tr.lock);
  return h;
}

static void relative_event(void *handle, int promote) {
  uint64_t id, now = mt__clock_us(); /* outside the lock: keep it short */
  pthread_mutex_lock(&tr.lock);
  if (tr.active && tr.w && handle_id(handle, &id) == 0) {
    int rc = promote ? mt_writer_promote(tr.w, now, 0, id) : mt_writer_collect(tr.w, now, 0, id);
    if (rc != MT_OK && rc != MT_ERR_INVALID) session_failed();
  }
  pthread_mutex_unlock(&tr.lock);
}

static void *on_promote(void *ctx, void *handle) {
  (void)ctx;
  relative_event(handle, 1);
  return handle;
}

static void on_dealloc(void *ctx, void *handle) {
  (void)ctx;
  uint64_t now = mt__clock_us();
  ring *r = my_ring ? my_ring : ring_claim();
  if (!r) {
    relative_event(handle, 0);
    return;
  }
  uint64_t n = atomic_load_explicit(&r->n, memory_order_relaxed);
  uint64_t d = atomic_load_explicit(&r->done, memory_order_acquire);
  /* Full, or the oldest entry is old: write them now. The slot the
   * owner fills next is one that every flusher has finished reading
   * (`done`, acquired, is past it). */
  if (n - d == RING || (n != d && (int64_t)(now - r->e[d % RING].time) > RING_MAX_AGE_US)) {
    pthread_mutex_lock(&tr.lock);
    ring_flush(r);
    pthread_mutex_unlock(&tr.lock);
  }
  r->e[n % RING].handle = handle;
  r->e[n % RING].time = now;
  atomic_store_explicit(&r->n, n + 1, memory_order_release);
}

/* ---- listen mode ---- */

static void *listener_main(void *arg) {
  (void)arg;
  mt__tls.busy++; /* this thread's own allocations are never sampled */
  uint64_t last_flush = now_us();
  for (;;) {
    pthread_mutex_lock(&tr.lock);
    int client = tr.active ? tr.client_fd : -1;
    pthread_mutex_unlock(&tr.lock);
    struct pollfd p[3] = {{tr.listen_fd, POLLIN, 0}, {tr.wake[0], POLLIN, 0}, {client, POLLIN, 0}};
    int rc = poll(p, client >= 0 ? 3 : 2, LIVE_FLUSH_MS);
    if (rc < 0 && errno != EINTR) break;
    if (p[1].revents) break; /* mt_trace_stop */
    if (p[0].revents & POLLIN) {
      int fd = accept4(tr.listen_fd, NULL, NULL, SOCK_CLOEXEC);
      if (fd >= 0) {
        pthread_mutex_lock(&tr.lock);
        if (tr.active) {
          static const char busy[] = "memtrace: already serving a client\n";
          mt__dest_write(fd, busy, sizeof busy - 1);
          close(fd);
        } else if (session_begin(fd) == MT_OK) {
          tr.client_fd = fd;
        } else {
          say("memtrace: cannot start tracing for a client: %s", tr.err);
        }
        pthread_mutex_unlock(&tr.lock);
      }
    }
    if (client >= 0 && p[2].revents) {
      char buf[256];
      ssize_t got = recv(client, buf, sizeof buf, MSG_DONTWAIT);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
        pthread_mutex_lock(&tr.lock);
        if (tr.active && tr.client_fd == client) session_end(0); /* the client left */
        pthread_mutex_unlock(&tr.lock);
      }
    }
    if (now_us() - last_flush >= LIVE_FLUSH_MS * 1000) {
      last_flush = now_us();
      pthread_mutex_lock(&tr.lock);
      if (tr.active) rings_flush();
      if (tr.active && tr.w && mt_writer_flush(tr.w) != MT_OK) session_end(0); /* client gone */
      pthread_mutex_unlock(&tr.lock);
    }
  }
  mt__tls.busy--;
  return NULL;
}

/* ---- fork and exit ---- */

static void fork_prepare(void) { pthread_mutex_lock(&tr.lock); }
static void fork_parent(void) { pthread_mutex_unlock(&tr.lock); }

static void fork_child(void) {
  /* Queued collects are the parent's; the other threads' rings have no
   * owner here. */
  for (ring *r = rings; r; r = r->next) {
    atomic_store(&r->done, atomic_load(&r->n));
    if (r != my_ring) atomic_store(&r->owned, 0);
  }
  pthread_mutex_unlock(&tr.lock);
  mt__tls.busy++; /* what follows allocates on the profiler's behalf */
  /* The parent's buffered events are the parent's: drop them unwritten
   * (the writer sees the new pid and writes nothing). */
  mt_writer *w = tr.w;
  if (w) {
    tr.w = NULL; /* detached first: nothing may reach it while it closes */
    tr.active = 0;
    mt_engine_stop();
    mt_writer_close(w);
    if (tr.fd >= 0) close(tr.fd);
    tr.fd = -1;
  }
  if (tr.listening) { /* the listener thread stayed in the parent */
    close(tr.listen_fd);
    tr.listen_fd = -1;
    tr.listening = 0;
    tr.client_fd = -1;
  } else if (tr.dest.kind == MT__DEST_FILE && tr.dest.per_process && w) {
    if (engine_begin() == MT_OK) tr.active = 1; /* the file opens at the first sample */
  }
  mt__tls.busy--;
}

static void at_exit(void) { mt_trace_stop(); }

/* Before _exit: write the buffered events of this process's own session.
 * Only trylock (_exit may come from a signal handler that interrupted the
 * tracer), and nothing when the session is another process's (a vfork
 * child shares the parent's memory: it must not touch its writer). */
void mt__trace_before_exit(void) {
  if (pthread_mutex_trylock(&tr.lock) != 0) return;
  if (tr.active && tr.w && tr.session_pid == (uint64_t)getpid()) {
    mt__tls.busy++;
    rings_flush();
    if (tr.w) mt_writer_flush(tr.w);
    mt__tls.busy--;
  }
  pthread_mutex_unlock(&tr.lock);
}

/* ---- public API ---- */

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
}

static int start_locked(const mt_trace_options *o) {
  char err[384];
  if (tr.active || tr.listening) {
    snprintf(tr.err, sizeof tr.err, "already tracing");
    return MT_ERR_INVALID;
  }
  tr.rate = o->rate > 0 ? o->rate : MT_DEFAULT_RATE;
  tr.version = o->format_version ? o->format_version : 2;
  tr.unwind = o->unwind;
  tr.depth = o->max_depth ? o->max_depth : 256;
  tr.separate_debuginfo = o->separate_debuginfo;
  if (!(tr.rate > 0 && tr.rate <= 1) || (tr.version != 2 && tr.version != 3) ||
      tr.depth > MAX_DEPTH ||
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
  if (!tr.syms) tr.syms = mt__symbols_new(o->separate_debuginfo);
  mt__unwind_init(tr.unwind == MT_UNWIND_FRAME_POINTERS ? MT__UNWIND_FRAME_POINTERS
                   : tr.unwind == MT_UNWIND_AUTO         ? MT__UNWIND_AUTO
                                                         : MT__UNWIND_LIBUNWIND);
  unsigned long long subs = 0;
  dlclose_seen = atomic_load(&mt__dlclose_count);
  dl_iterate_phdr(first_object, &subs);
  tr.dl_subs = subs;
  if (!tr.hooks_installed) {
    tr.hooks_installed = 1;
    pthread_key_create(&ring_key, ring_release);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    atexit(at_exit);
  }
  int rc = MT_OK;
  int fd = mt__dest_open(&tr.dest, err, sizeof err);
  if (fd < 0) {
    snprintf(tr.err, sizeof tr.err, "%s", err);
    rc = MT_ERR_IO;
  } else if (tr.dest.kind == MT__DEST_LISTEN) {
    tr.listen_fd = fd;
    if (pipe2(tr.wake, O_CLOEXEC) != 0 ||
        pthread_create(&tr.listener, NULL, listener_main, NULL) != 0) {
      snprintf(tr.err, sizeof tr.err, "cannot start the listener thread");
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
  pthread_mutex_lock(&tr.lock);
  tr.err[0] = 0;
  int rc = start_locked(o);
  pthread_mutex_unlock(&tr.lock);
  return rc;
}

int mt_trace_stop(void) {
  pthread_mutex_lock(&tr.lock);
  int was = tr.active || tr.listening;
  int listening = tr.listening;
  tr.listening = 0;
  pthread_mutex_unlock(&tr.lock);
  if (listening) {
    ssize_t ignored = write(tr.wake[1], "x", 1);
    (void)ignored;
    pthread_join(tr.listener, NULL);
    close(tr.wake[0]);
    close(tr.wake[1]);
    tr.wake[0] = tr.wake[1] = -1;
    close(tr.listen_fd);
    tr.listen_fd = -1;
  }
  pthread_mutex_lock(&tr.lock);
  mt__tls.busy++;
  rings_flush();
  if (tr.w && tr.active && mt_writer_flush(tr.w) != MT_OK && tr.dest.kind != MT__DEST_LISTEN)
    say("memtrace: writing the end of the trace failed: %s", mt_writer_error(tr.w));
  session_end(0);
  tr.client_fd = -1;
  mt__tls.busy--;
  pthread_mutex_unlock(&tr.lock);
  return was ? MT_OK : MT_ERR_INVALID;
}

int mt_trace_is_tracing(void) {
  pthread_mutex_lock(&tr.lock);
  int on = tr.active || tr.listening;
  pthread_mutex_unlock(&tr.lock);
  return on;
}

const char *mt_trace_error(void) { return tr.err; }

int mt_trace_if_requested(const char *context, double rate) {
  const char *dest = getenv("MEMTRACE");
  if (!dest || !*dest) return 0;
  mt_trace_options o = {
      .destination = dest, .rate = rate, .context = context, .unwind = MT_UNWIND_AUTO};
  const char *v;
  char *end;
  if ((v = getenv("MEMTRACE_RATE")) && *v) {
    o.rate = strtod(v, &end);
    if (*end || !(o.rate > 0 && o.rate <= 1)) {
      say("memtrace: MEMTRACE_RATE=%s is not a sampling rate in (0, 1]; not tracing", v);
      return MT_ERR_INVALID;
    }
  }
  if ((v = getenv("MEMTRACE_UNWIND")) && *v) {
    if (strcmp(v, "fp") == 0) o.unwind = MT_UNWIND_FRAME_POINTERS;
    else if (strcmp(v, "libunwind") == 0) o.unwind = MT_UNWIND_LIBUNWIND;
    else if (strcmp(v, "auto") == 0) o.unwind = MT_UNWIND_AUTO;
    else {
      say("memtrace: MEMTRACE_UNWIND=%s is not 'auto', 'libunwind' or 'fp'; not tracing", v);
      return MT_ERR_INVALID;
    }
  }
  if ((v = getenv("MEMTRACE_DEPTH")) && *v) {
    long d = strtol(v, &end, 10);
    if (*end || d < 1 || d > MAX_DEPTH) {
      say("memtrace: MEMTRACE_DEPTH=%s is not a depth from 1 to %d; not tracing", v, MAX_DEPTH);
      return MT_ERR_INVALID;
    }
    o.max_depth = (size_t)d;
  }
  if ((v = getenv("MEMTRACE_FORMAT")) && *v) {
    if (strcmp(v, "2") && strcmp(v, "3")) {
      say("memtrace: MEMTRACE_FORMAT=%s is not 2 or 3; not tracing", v);
      return MT_ERR_INVALID;
    }
    o.format_version = v[0] - '0';
  }
  if ((v = getenv("MEMTRACE_SEED")) && *v) tr.seed = strtoull(v, NULL, 10);
  if ((v = getenv("MEMTRACE_DEBUGINFO")) && *v) o.separate_debuginfo = strcmp(v, "0") != 0;
  char dest_copy[PATH_MAX + 16];
  snprintf(dest_copy, sizeof dest_copy, "%s", dest);
  o.destination = dest_copy;
  const char *keep = getenv("MEMTRACE_KEEP_ENV");
  if (!keep || strcmp(keep, "1") != 0) unsetenv("MEMTRACE");
  int rc = mt_trace_start(&o);
  if (rc != MT_OK) {
    say("memtrace: not tracing: %s", mt_trace_error());
    return rc;
  }
  return 1;
}
