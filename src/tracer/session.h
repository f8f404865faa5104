/* Sessions as the rest of the tracer sees them (session.c owns them).
 *
 * A session's state is written by session.c alone, under the session's
 * lock. The others read what they need through the functions below, and
 * the few fields that every sample reads without the lock through a
 * read-only view (mt__tr_session): hints there, checked again under the
 * lock. Internal (mt__ prefix). */
#ifndef MT_TRACER_SESSION_H
#define MT_TRACER_SESSION_H

#include <stdint.h>

#include "memtrace/format.h"
#include "tracer/symbols/symbols.h"

/* What the tracker (events.c) reads of a session. Written by session.c
 * under the lock, atomically: reads without it are not data races. */
typedef struct mt__session {
  int active;        /* a session is on (a %p child's too, its file not yet open) */
  uint32_t id;       /* bumped by each session's writer: whose an object's id is */
  mt_writer *w;      /* the session's writer; NULL before a %p child's first
                        sample, and once a write failed */
  mt__symbols *syms; /* the codes' names: made at the first start, kept for the
                        process's life (read under the lock) */
} mt__session;

/* The view: const, and the pointer too, so that nothing outside session.c
 * can write a session's state through it. */
extern const mt__session *const mt__tr_session __attribute__((visibility("hidden")));

/* Hints without the lock (the sampling path), exact under it. */
static inline int mt__tr_active(void) {
  return __atomic_load_n(&mt__tr_session->active, __ATOMIC_RELAXED);
}
static inline mt_writer *mt__tr_writer(void) {
  return __atomic_load_n(&mt__tr_session->w, __ATOMIC_RELAXED);
}
static inline uint32_t mt__tr_session_id(void) {
  return __atomic_load_n(&mt__tr_session->id, __ATOMIC_RELAXED);
}
/* Under the lock. */
static inline mt__symbols *mt__tr_symbols(void) { return mt__tr_session->syms; }

/* Whether the calling process is the one tracing. Not in a vfork child:
 * it runs in the tracing process's memory, on its thread, until it execs
 * (dash starts its commands so), and anything it wrote would stop the
 * session of the process it borrows (the writer sees another pid). */
int mt__tr_here(void);

/* The session's lock, which serializes the writer and everything above it,
 * taken with the calling thread's cancellation held off: the writing of
 * the trace, the opening of files, the naming of codes (libdw reads files)
 * make system calls that are cancellation points, and a thread cancelled
 * in one would leave the lock held for good, every other thread's next
 * sample waiting for it. malloc, free and the other functions the profiler
 * wraps are not cancellation points, and under the profiler still are
 * not. lock returns what unlock wants. */
int mt__tr_lock(void);
/* 1 and *cancel if the lock was free, else 0 (cancellation as it was). */
int mt__tr_trylock(int *cancel);
void mt__tr_unlock(int cancel);

/* Stops the session after a write failure, with one message (lock held). */
void mt__tr_session_failed(void);
/* A forked child's trace, opened at its first sample (lock held); -1 when
 * it cannot be (tracing is then off). */
int mt__tr_open_child_trace(void);

/* For exec and spawn (exec.c), without the lock: they may come from a
 * signal handler, or from a vfork child, which shares the tracing
 * process's memory and must write none of it. Whether a session is on;
 * *pid: the process tracing (its own exec is followed); *per_process: the
 * destination has %p (every process traces to its own file). */
int mt__tr_tracing(uint64_t *pid, int *per_process);

#endif
