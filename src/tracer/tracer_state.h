/* The tracer's state, shared by its two halves: sessions, sinks and the
 * public API (tracer.c), and the engine's tracker callbacks with their
 * per-thread event queues (events.c). */
#ifndef MT_TRACER_STATE_H
#define MT_TRACER_STATE_H

#include <limits.h>
#include <pthread.h>
#include <stdint.h>

#include "dest.h"
#include "memtrace/engine.h"
#include "memtrace/tracer.h"
#include "memtrace/format.h"
#include "symbols.h"

#define MT__HIDDEN_FN __attribute__((visibility("hidden")))

#define MT__GEN_SHIFT 48 /* user-space addresses fit below bit 47 */
#define MT__PC_MASK ((UINT64_C(1) << MT__GEN_SHIFT) - 1)
#define MT__MAX_DEPTH 4096

typedef struct mt__tracer {
  /* Read at every sample without the lock: apart from it, whose every
   * taking would take this line away from the other cores. */
  int active;           /* a session is writing events (read unlocked as a hint) */
  uint32_t session;     /* bumped by each session (likewise) */
  uint64_t session_pid; /* the process whose trace w writes */
  uint64_t tracing_pid; /* the process tracing: its own exec is followed (exec.c) */
  mt_writer *w;
  int fd;
  int fd_kind;      /* mt__dest_sink_kind: how mt__dest_write writes it */
  mt__fd_id fd_id;  /* what fd named when opened (dest.h) */
  int fd_lost;      /* the program closed fd or put another file there */
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
  uint64_t gen; /* codes' generation: bumped when a library is unloaded */
  unsigned long long dl_subs;
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
} mt__tracer;

extern mt__tracer mt__tr __attribute__((visibility("hidden")));

/* tracer.c: one line on stderr, written with write(2). */
MT__HIDDEN_FN void mt__tr_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* tracer.c: stops the session after a write failure, with one message
 * (tr.lock held). */
MT__HIDDEN_FN void mt__tr_session_failed(void);
/* tracer.c: a forked child's trace, opened at its first sample (tr.lock
 * held); -1 when it cannot be (tracing is then off). */
MT__HIDDEN_FN int mt__tr_open_child_trace(void);

/* events.c: the tracker's callbacks. */
MT__HIDDEN_FN void *mt__tr_on_alloc(void *ctx, const mt_alloc_info *info);
MT__HIDDEN_FN void *mt__tr_on_promote(void *ctx, void *handle);
MT__HIDDEN_FN void mt__tr_on_dealloc(void *ctx, void *handle);
/* events.c: writes every thread's queued events (tr.lock held). */
MT__HIDDEN_FN void mt__tr_flush_queues(void);
/* Called by the interposer's dlclose before the real one (see events.c). */
MT__HIDDEN_FN void mt__tr_before_dlclose(void);
/* events.c: once per process, before the first session (tr.lock held). */
MT__HIDDEN_FN void mt__tr_events_init(void);
/* events.c: at session start, the loaded libraries as they are now. */
MT__HIDDEN_FN void mt__tr_libraries_baseline(void);
/* events.c: in a forked child (tr.lock held): the queues hold the
 * parent's events; drop them, and free the other threads' queues. */
MT__HIDDEN_FN void mt__tr_queues_after_fork(void);

/* Cancellation held off while the tracer works on a program's thread with
 * its lock held: the writing of the trace, the opening of files, the
 * naming of codes (libdw reads files) make system calls that are
 * cancellation points, and a thread cancelled in one would leave the lock
 * held for good, every other thread's next sample waiting for it. malloc,
 * free and the other functions the profiler wraps are not cancellation
 * points, and under the profiler still are not. (Around the locked parts
 * only: around every sample and sampled free it cost 138 instructions a
 * sample at 1e-3, 8%; here 10, the lock being taken once per batch.) */
static inline int mt__cancel_off(void) {
  int old = PTHREAD_CANCEL_ENABLE;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  return old;
}
static inline void mt__cancel_restore(int old) { pthread_setcancelstate(old, NULL); }

/* mt__tr.lock taken and left that way: lock returns what unlock wants. */
static inline int mt__tr_lock(void) {
  int cancel = mt__cancel_off();
  pthread_mutex_lock(&mt__tr.lock);
  return cancel;
}
/* 1 and *cancel if the lock was free, else 0 (cancellation as it was). */
static inline int mt__tr_trylock(int *cancel) {
  *cancel = mt__cancel_off();
  if (pthread_mutex_trylock(&mt__tr.lock) == 0) return 1;
  mt__cancel_restore(*cancel);
  return 0;
}
static inline void mt__tr_unlock(int cancel) {
  pthread_mutex_unlock(&mt__tr.lock);
  mt__cancel_restore(cancel);
}

#endif
