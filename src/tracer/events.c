/* The tracer's tracker callbacks: events of sampled blocks, queued per
 * thread and written in batches.
 *
 * Writing an event takes the session's lock (session.h). Taken at every
 * sample, that lock and the writer's state moving between cores would be
 * most of a sample's cost with several threads. So each thread queues its
 * events in its own ring, without a lock, and writes them all at once when
 * the ring is full, its oldest event is MAX_AGE_US old, or the thread takes
 * the lock anyway; any holder of the lock may write a ring's events too (a
 * sweep every SWEEP_US, trace stop, exit, the listener's periodic flush).
 *
 * An allocation's object id is its rank among the trace's alloc events, so
 * it is known only once the event is written. The handle given to the
 * engine is therefore a cell: it holds the id once written (and until then
 * the ring holding the event). A free or promotion that finds its cell
 * pending writes that ring's queued allocs first, so an event never names
 * an object before its allocation. Cells are owned by the tracer: a
 * thread pops them from its ring's own stack without a lock, the lock
 * holder that writes a collect pushes the cell onto a shared list, and a
 * thread refills its stack from that list whenever it holds the lock.
 *
 * A code must be described while its library is loaded. Under the
 * interposer, which wraps dlclose, every sample is queued, and dlclose
 * first writes what is queued and describes its codes
 * (mt__tr_before_dlclose). Linked into a program, only samples whose every
 * code was described already (the usual case: a program's stacks repeat)
 * are queued; a sample with a new code is written at once, under the lock.
 * Either way a dlclose since the last look sends a sample there, and
 * check_unloads writes every queued event before codes change their
 * generation.
 *
 * Order: a thread's allocs and collects are written in the order it
 * queued them; across threads the writer keeps times non-decreasing, so an
 * event written late takes the time of the last event before it (at most
 * about MAX_AGE_US late). */
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#include "events.h"

#include "clock.h"
#include "interposer.h"
#include "session.h"
#include "engine/engine_internal.h"
#include "format/writer_internal.h"
#include "tracer/runtimes/cxxrt.h"
#include "tracer/runtimes/jitcodes.h"
#include "tracer/unwind/bigstack.h"
#include "tracer/unwind/unwind.h"

/* A thread takes the lock when its queue, its collects or its cells run
 * out, whichever comes first. Taken often (every ~32 samples), a holder
 * preempted mid-batch makes the others sleep on the lock, with more
 * threads than cores. These sizes make it every ~128 samples, for about
 * 36 KiB per sampling thread (docs/decisions.md). */
#define QUEUE_WORDS 4096u    /* a thread's queued allocs: 32 KiB */
#define REC_HEAD 5           /* words of an alloc record before its codes */
#define COLLECTS 128         /* a thread's queued collects */
#define MAX_AGE_US 1000      /* a thread's queue is written at this age */
#define SWEEP_US 10000       /* every queue is written at least this often */
/* The writer's packet goes to the destination at least this often while
 * samples come: a process killed (Ctrl-C, SIGTERM) loses what is still
 * buffered, and a packet filled only when full or 30 s old (the format's
 * limit): at the default rate, a program interrupted after seconds left an
 * empty trace. At 1e-5 per word on a busy program that is a packet of a
 * few KiB a second instead of one of 28 KiB every ten or so. */
#define WRITE_US 1000000
#define CELLS_LOCAL 256      /* a thread's stack of free cells, refilled to this */
#define CELL_CHUNK 2048      /* cells mapped at once */

#define LOAD(p) atomic_load_explicit(p, memory_order_relaxed)
#define LOAD_ACQ(p) atomic_load_explicit(p, memory_order_acquire)
#define STORE(p, v) atomic_store_explicit(p, v, memory_order_relaxed)
#define STORE_REL(p, v) atomic_store_explicit(p, v, memory_order_release)

/* ---- codes described in this generation ---- */

/* A direct-mapped cache in front of the symbol table's hash map: written
 * under the lock, read without it by the queueing fast path. */
#define DESCRIBED_BITS 12
static _Atomic uint64_t described[1u << DESCRIBED_BITS];

static inline size_t described_slot(uint64_t code) {
  return (size_t)((code * 0x9e3779b97f4a7c15ull) >> (64 - DESCRIBED_BITS));
}

/* The interposer wraps dlclose and counts the calls: then the loader's
 * list is consulted (dl_iterate_phdr takes the loader's lock) only after a
 * dlclose. Without it (the library linked into a program), at every
 * batch. Read at every sample without the lock, written only at a dlclose
 * or an unload: a line of its own. */
static struct {
  mt__dlcloses d;          /* the count and the hook (events.h) */
  _Atomic unsigned seen;   /* d.count when the loader's list was last looked at */
  uint64_t gen;            /* codes' generation (events.h): bumped at an unload */
  unsigned long long subs; /* the loader's count of unloads then (the lock held) */
} __attribute__((aligned(64))) loads;

const mt__dlcloses *const mt__dlclose = &loads.d;

void mt__tr_dlclose_hooked(void) { loads.d.hooked = 1; }

void mt__tr_after_dlclose(void) { atomic_fetch_add(&loads.d.count, 1); }

static int first_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  *(unsigned long long *)data = info->dlpi_subs;
  return 1;
}

void mt__tr_libraries_baseline(void) {
  unsigned long long subs = 0;
  STORE(&loads.seen, LOAD(&loads.d.count));
  dl_iterate_phdr(first_object, &subs);
  loads.subs = subs;
}

/* Writes every thread's queued events and flushes the writer, which
 * describes their allocs' new codes now (the lock held); -1 if the write
 * failed. The collects too: each after the allocs queued before it. */
static int write_queued_events(void) {
  mt__tr_flush_queues();
  mt_writer *w = mt__tr_writer();
  return w && mt_writer_flush(w) != MT_OK ? -1 : 0;
}

/* What the loader says of unloads, asked before the lock is taken: its
 * dl_iterate_phdr takes the loader's lock, which another thread may hold
 * while it waits for the tracer's (a free in a dl_iterate_phdr callback, its
 * queue full). With the interposer's dlclose, only after a dlclose; the
 * sample's own codes were live when it was unwound, before this look, so
 * a later unload cannot concern them. Linked into a program, looked at
 * under the lock (its allocations are not sampled there). */
typedef struct unloads {
  int look;          /* 1: a dlclose since the last look (or no hook) */
  unsigned closes;   /* loads.d.count when asked */
  unsigned long long subs; /* the loader's count of unloads */
} unloads;

static void unloads_ask(unloads *u) {
  u->closes = LOAD_ACQ(&loads.d.count);
  u->look = !loads.d.hooked || u->closes != LOAD(&loads.seen);
  u->subs = 0;
  if (u->look && loads.d.hooked) dl_iterate_phdr(first_object, &u->subs);
}

/* After a dlclose, an address may belong to a different function: codes
 * carry a generation in their top bits so that no code is ever described
 * twice differently. Events queued or buffered were described while their
 * library was loaded: they are written before the descriptions are
 * forgotten. Called with the lock held; returns -1 if that write failed. */
static int check_unloads(const unloads *u) {
  if (!u->look) return 0;
  unsigned long long subs = u->subs;
  if (loads.d.hooked) {
    /* another thread may have looked later, under the lock, first */
    if ((int)(u->closes - LOAD(&loads.seen)) <= 0) return 0;
    STORE(&loads.seen, u->closes);
    if (subs <= loads.subs) return 0;
  } else {
    dl_iterate_phdr(first_object, &subs);
    if (subs == loads.subs) return 0;
  }
  loads.subs = subs;
  if (write_queued_events() != 0) return -1;
  __atomic_store_n(&loads.gen, (loads.gen + 1) & 0x7fff, __ATOMIC_RELAXED);
  mt__symbols_reset(mt__tr_symbols());
  mt__jit_reset();
  for (size_t i = 0; i < sizeof described / sizeof *described; i++) STORE(&described[i], 0);
  mt__unwind_forget();
  return 0;
}

/* ---- cells ---- */

#define PENDING UINT64_MAX    /* the alloc event is queued */
#define DEAD (UINT64_MAX - 1) /* the alloc event was dropped: nothing to write */

typedef struct cell {
  uint64_t id;       /* the object's id once written; PENDING; DEAD */
  struct ring *ring; /* the ring whose owner took it (while PENDING: the
                        ring holding the alloc event); NULL: none */
  struct cell *next; /* free lists */
  uint32_t session;
} cell;

/* The writers' state (the lock held), written at every event written: on a
 * cache line of its own, away from what every sample reads without the
 * lock (it shared one with the dlclose counters, which took that line away
 * from the other cores at every event). */
static struct {
  struct ring *rings; /* all rings, pushed under the lock */
  /* The ring whose record was the last alloc the writer wrote: the next
   * record of that ring shares its first `same` codes with it, and the
   * writer need not compare them. NULL after any other alloc. */
  struct ring *last_alloc_ring;
  cell *free_cells;
  cell *fresh, *fresh_end; /* the mapped cells never handed out */
  uint64_t last_sweep, last_write;
} __attribute__((aligned(64))) drain;

static void cell_free(cell *c);

/* A cell from the shared list, else the next never used one, mapping more
 * when the chunk is spent (the lock held). Never used cells are handed out
 * in order, not threaded onto the list when mapped: each page is touched
 * when its cells are first needed (a traced program's start-up: 12 page
 * faults fewer). Cells are never unmapped: a late callback may still read
 * one. */
static cell *cell_take(void) {
  cell *c = drain.free_cells;
  if (c) {
    drain.free_cells = c->next;
    return c;
  }
  if (drain.fresh == drain.fresh_end) {
    cell *chunk = mmap(NULL, CELL_CHUNK * sizeof *chunk, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (chunk == MAP_FAILED) return NULL;
    drain.fresh = chunk;
    drain.fresh_end = chunk + CELL_CHUNK;
  }
  return drain.fresh++;
}

/* ---- per-thread rings ---- */

typedef struct ring {
  /* The owner's fields, read and written at every sample: one line. */
  _Atomic uint64_t head; /* queued allocs end here (the owner appends) */
  uint64_t first_time;   /* time of the record appended to an empty queue:
                            the oldest queued, or older if others wrote some */
  uint64_t prev, prev_n; /* the last queued record's codes: where, how many */
  unsigned ncells;       /* the owner's free cells (the next owner inherits them) */
  _Atomic uint64_t n;    /* queued collects end here (the owner appends) */
  _Atomic int owned;
  struct ring *next; /* all rings, pushed under the lock */
  /* The flushers' fields (the lock held), apart: no line ping-pong. */
  _Alignas(64) _Atomic uint64_t tail; /* queued allocs start here */
  _Atomic uint64_t done;              /* queued collects start here */
  struct cell *returned;              /* its owner's cells, given back */
  _Alignas(64) cell *cellv[CELLS_LOCAL];
  /* queued collects: entries [done, n) of e, modulo COLLECTS */
  struct {
    cell *c;
    uint64_t time;
    uint64_t after; /* the alloc queue's head then: the allocs before it */
  } e[COLLECTS];
  /* queued alloc events: words [tail, head) of q, modulo QUEUE_WORDS.
   * A record: source << 32 | same << 16 | depth (same: how many codes it
   * shares with the ring's record before it), cell, time, words, nsamples,
   * then the codes, outermost first. Records do not wrap around: SKIP in a record's
   * first word sends the reader to the start of q. */
  uint64_t q[QUEUE_WORDS];
} ring;

/* Gives a collected object's cell back (the lock held): to the ring whose
 * owner took it, which takes it again (with 4 threads, cells that went
 * round a shared list were cache misses in every thread that touched
 * them), or to the shared list. */
static void cell_free(cell *c) {
  cell **list = c->ring ? &c->ring->returned : &drain.free_cells;
  c->next = *list;
  *list = c;
}

static pthread_key_t ring_key;
static __thread ring *my_ring __attribute__((tls_model("initial-exec")));

#define SKIP UINT64_MAX

static inline uint64_t qword(const ring *r, uint64_t at) { return r->q[at & (QUEUE_WORDS - 1)]; }

/* Where the record at t really starts: past a SKIP, at the start of q. */
static inline uint64_t rec_start(const ring *r, uint64_t t) {
  return qword(r, t) == SKIP ? (t | (QUEUE_WORDS - 1)) + 1 : t;
}

static __attribute__((noinline)) void describe_new(_Atomic uint64_t *seen, uint64_t code) {
  const mt_location *l;
  size_t k;
  if (mt__symbols_lookup(mt__tr_symbols(), code, mt__jit_code_pc(code), &l, &k) == 0)
    STORE(seen, code);
}

/* Describes code now if it is new (the lock held): inline, as the writer
 * checks every sample's innermost code. */
static inline void describe_code(uint64_t code) {
  _Atomic uint64_t *seen = &described[described_slot(code)];
  if (LOAD(seen) != code) describe_new(seen, code);
}

/* The frames of codes[0..n) (outermost first) a sample keeps. Naming the
 * innermost code may find code to hide (mt__unwind_hide_late): a C++
 * runtime loaded since the session started (cxxrt.h), a function of
 * Rust's allocation layer (symbols.c). So it is named first: samples
 * unwound before then may hold such frames, dropped here. */
static inline size_t kept_frames(const uint64_t *codes, size_t n) {
  if (n) describe_code(codes[n - 1]);
  if (__builtin_expect(atomic_load_explicit(&mt__unwind_late, memory_order_relaxed), 0))
    while (n > 1 && mt__unwind_is_hidden(mt__jit_code_pc(codes[n - 1])))
      describe_code(codes[--n - 1]);
  return n;
}

/* A record's codes with their JIT aliases (jitcodes.h), under the lock: the
 * ring's own stay as queued (their owner compares its next sample's with
 * them, without the lock). */
static uint64_t mapped_codes[MT__MAX_DEPTH];

/* Writes the alloc event queued at r's tail, whose record starts at t
 * (the lock held). Its cell gets the object's id, or DEAD when the session
 * is gone or another's. */
static void write_one_alloc(ring *r, uint64_t t) {
  const uint64_t *rec = &r->q[t & (QUEUE_WORDS - 1)]; /* records do not wrap */
  uint64_t w0 = rec[0];
  size_t n = (uint16_t)w0, same = (uint16_t)(w0 >> 16);
  cell *c = (cell *)(uintptr_t)rec[1];
  uint64_t id = DEAD;
  size_t kept = n;
  mt_writer *w = mt__tr_writer();
  if (mt__tr_active() && w && c->session == mt__tr_session_id() && MT_BENCH_STAGE != 4) {
    uint64_t got;
    const uint64_t *codes = rec + REC_HEAD;
    if (__builtin_expect(mt__jit_watching, 0)) {
      /* Named now, not when the writer's packet ends (up to a second
       * later): by then the map may name other code at those addresses.
       * The codes shared with this ring's record written just before were
       * named with it (unless aliases may map them otherwise now). */
      size_t i = drain.last_alloc_ring == r && same <= n ? same : 0;
      if (mt__jit_aliased) { /* and the writer compares the prefix anew */
        codes = mt__jit_map(codes, n, rec[2], mapped_codes);
        same = i = 0;
      }
      for (; i < n; i++) describe_code(codes[i]);
    }
    kept = kept_frames(codes, n);
    /* `same` counts codes shared with the record before, as queued */
    size_t known = drain.last_alloc_ring == r && same <= kept ? same : 0;
    if (mt__writer_alloc_known(w, rec[2], 0, rec[3], rec[4], (mt_source)(w0 >> 32), codes,
                               kept, known, &got) == MT_OK)
      id = got;
    else
      mt__tr_session_failed();
  }
  drain.last_alloc_ring = id == DEAD || kept != n ? NULL : r;
  c->id = id;
  STORE_REL(&r->tail, t + REC_HEAD + n);
}

static void drain_allocs(ring *r) {
  uint64_t h = LOAD_ACQ(&r->head);
  for (uint64_t t; (t = LOAD(&r->tail)) < h;) write_one_alloc(r, rec_start(r, t));
}

/* Whether c's object has an id in this session's trace (the lock held),
 * its alloc event written first if still queued. */
static inline int has_id(cell *c) {
  if (c->id == PENDING && c->ring) drain_allocs(c->ring);
  return c->id < DEAD && c->session == mt__tr_session_id() && mt__tr_active() && mt__tr_writer();
}

/* Writes a collect and frees the cell: a handle is collected once. The
 * id came from this session's writer (the session is bumped with each). */
static void write_collect(cell *c, uint64_t time) {
  if (has_id(c) && mt__writer_collect_known(mt__tr_writer(), time, c->id) != MT_OK)
    mt__tr_session_failed();
  cell_free(c);
}

/* Writes r's queued allocs and collects in the order the thread queued
 * them (the lock held). Not by time: times are in microseconds, and many
 * events share one; a free and the next allocation written the other way
 * round would show a block more live than there was (a loop freeing each
 * block before the next, traced at rate 1: a peak of 60 KiB for 42).
 * The collects are loaded first: the allocs queued before the last of them
 * are then all in view. */
static void ring_drain(ring *r) {
  uint64_t n = LOAD_ACQ(&r->n), h = LOAD_ACQ(&r->head);
  for (;;) {
    uint64_t t = LOAD(&r->tail), d = LOAD(&r->done); /* write_collect may move t */
    int allocs = t < h, collects = d < n;
    if (!allocs && !collects) break;
    if (allocs && (!collects || t < r->e[d % COLLECTS].after)) {
      write_one_alloc(r, rec_start(r, t));
    } else {
      write_collect(r->e[d % COLLECTS].c, r->e[d % COLLECTS].time);
      STORE_REL(&r->done, d + 1);
    }
  }
}

/* Every ring's events, the perf map read first (jitcodes.h) by the caller. */
static void drain_rings(void) {
  for (ring *r = drain.rings; r; r = r->next) ring_drain(r);
}

void mt__tr_flush_queues(void) {
  mt__jit_poll(mt__clock_us(), loads.gen << MT__GEN_SHIFT);
  drain_rings();
}

/* The owner's cell stack back to CELLS_LOCAL (the lock held). */
static void cells_refill(ring *r) {
  while (r->ncells < CELLS_LOCAL) {
    cell *c = r->returned;
    if (c) r->returned = c->next;
    else if (!(c = cell_take())) break;
    r->cellv[r->ncells++] = c;
  }
}

/* What the owner does whenever it holds the lock: its own queue, every
 * queue if the last sweep is old, its cells. */
static void owner_flush(ring *r, uint64_t now) {
  mt__jit_poll(now, loads.gen << MT__GEN_SHIFT);
  if (r) {
    ring_drain(r);
    cells_refill(r);
  }
  if ((int64_t)(now - drain.last_sweep) > SWEEP_US) { /* now may be a little behind */
    drain.last_sweep = now;
    drain_rings(); /* the map was read above */
    if ((int64_t)(now - drain.last_write) > WRITE_US) {
      drain.last_write = now;
      mt_writer *w = mt__tr_writer();
      if (w && mt_writer_flush(w) != MT_OK) mt__tr_session_failed();
    }
  }
}

/* At thread exit (the key's destructor): flush, and give the ring back
 * with its cells. Busy: writing may describe new codes, which allocates,
 * and a sample taken here could want the lock this thread holds. */
static void ring_release(void *p) {
  ring *r = p;
  mt__tls.busy++;
  int cancel = mt__tr_lock();
  ring_drain(r);
  if (my_ring == r) my_ring = NULL;
  STORE_REL(&r->owned, 0);
  mt__tr_unlock(cancel);
  mt__tls.busy--;
}

/* This thread's ring: a free one of the pool or a new one (NULL: none). */
static ring *ring_claim(void) {
  ring *r;
  int cancel = mt__tr_lock();
  for (r = drain.rings; r; r = r->next)
    if (!LOAD(&r->owned)) break;
  if (!r) {
    void *m = mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
      r = m; /* zeroed */
      r->next = drain.rings;
      drain.rings = r;
    }
  }
  if (r) {
    STORE(&r->owned, 1);
    my_ring = r;
    pthread_setspecific(ring_key, r);
    cells_refill(r);
  }
  mt__tr_unlock(cancel);
  return r;
}

void mt__tr_events_init(void) { pthread_key_create(&ring_key, ring_release); }

void mt__tr_queues_after_fork(void) {
  for (ring *r = drain.rings; r; r = r->next) {
    STORE(&r->tail, LOAD(&r->head));
    STORE(&r->done, LOAD(&r->n));
    if (r != my_ring) STORE(&r->owned, 0);
  }
}

/* ---- the tracker ---- */

/* What a sampling thread does holding the lock, wherever there is room.
 * Writing events may flush the writer's packet to the destination, read a
 * perf map, open a forked child's trace: several hundred bytes of stack
 * more than the queueing. On a short stack (unwind.h) that runs on the
 * tracer's own (bigstack.h, whose lock is taken after this one). */
typedef struct locked_job {
  void (*fn)(struct locked_job *);
  ring *r;
  uint64_t now;
  const mt_alloc_info *info; /* alloc: the sample, its n frames kept */
  size_t n;
  const unloads *u;
  cell *c; /* alloc: the cell given; collect, promote: the object's */
} locked_job;

static void locked_run(void *j) { ((locked_job *)j)->fn(j); }

/* A job that writes: never from a vfork child (mt__tr_here), whose
 * samples and frees are left out of the borrowed process's trace. */
static void run_locked(locked_job *j) {
  if (__builtin_expect(!mt__tr_here(), 0)) return;
  if (__builtin_expect(mt__stack_short(), 0)) mt__on_big_stack(locked_run, j);
  else j->fn(j);
}

/* alloc_locked's codes, under the lock: not on the sampling thread's stack,
 * which may be a 16 KiB one (only the pages used are ever touched). */
static uint64_t locked_codes[MT__MAX_DEPTH];

static void alloc_job(locked_job *j) {
  ring *r = j->r;
  uint64_t now = j->now, *codes = locked_codes;
  const mt_alloc_info *info = j->info;
  size_t n = j->n;
  cell *c = NULL;
  if (!mt__tr_active()) goto out;
  if (!mt__tr_writer() && mt__tr_open_child_trace() != 0) goto out;
  if (check_unloads(j->u) != 0) {
    mt__tr_session_failed();
    goto out;
  }
  owner_flush(r, now); /* this thread's queued events first: they happened before */
  mt_writer *w = mt__tr_writer();
  if (!w) goto out; /* a write failed */
  for (size_t i = 0; i < n; i++) {
    uint64_t pc = info->callstack[i];
    uint64_t code = (pc & MT__PC_MASK) | loads.gen << MT__GEN_SHIFT;
    codes[n - 1 - i] = code; /* the writer wants the outermost frame first */
  }
  if (__builtin_expect(mt__jit_aliased, 0)) mt__jit_map(codes, n, now, codes);
  /* Describe new codes now, while their library is surely loaded; the
   * writer asks again at flush time and finds the cached answer. */
  for (size_t i = 0; i < n; i++) describe_code(codes[i]);
  n = kept_frames(codes, n);
  if (r && r->ncells) {
    c = r->cellv[--r->ncells];
  } else if (!(c = cell_take())) {
    goto out;
  }
  uint64_t id;
  drain.last_alloc_ring = NULL;
  if (mt_writer_alloc(w, now, 0, info->words, info->nsamples, info->source, codes, n, &id) !=
      MT_OK) {
    cell_free(c);
    c = NULL;
    mt__tr_session_failed();
    goto out;
  }
  *c = (cell){.id = id, .ring = r, .session = mt__tr_session_id()};
out:
  j->c = c;
}

/* The sample written at once, under the lock (see the top of the file). Out
 * of line: the queueing path that falls back on it saves fewer registers. */
static __attribute__((noinline)) void *alloc_locked(ring *r, uint64_t now,
                                                    const mt_alloc_info *info, size_t n) {
  unloads u;
  unloads_ask(&u);
  locked_job j = {.fn = alloc_job, .r = r, .now = now, .info = info, .n = n, .u = &u};
  int cancel = mt__tr_lock();
  run_locked(&j);
  mt__tr_unlock(cancel);
  return j.c;
}

static void flush_job(locked_job *j) { owner_flush(j->r, j->now); }

static void collect_job(locked_job *j) { write_collect(j->c, j->now); }

static void promote_job(locked_job *j) {
  if (has_id(j->c)) {
    int rc = mt_writer_promote(mt__tr_writer(), j->now, 0, j->c->id);
    if (rc != MT_OK && rc != MT_ERR_INVALID) mt__tr_session_failed();
  }
}

void *mt__tr_on_alloc(void *ctx, const mt_alloc_info *info) {
  (void)ctx;
  size_t n = info->callstack_len < MT__MAX_DEPTH ? info->callstack_len : MT__MAX_DEPTH;
  uint64_t now = mt__clock_us(); /* before symbolizing: that can take a while */
  ring *r = my_ring ? my_ring : ring_claim();
  /* The queue, if everything is as usual: unlocked reads of the session's
   * state are hints, checked again when the event is written. */
  if (r && r->ncells && REC_HEAD + n <= QUEUE_WORDS / 2 && mt__tr_active() && mt__tr_writer() &&
      (!loads.d.hooked || LOAD(&loads.d.count) == LOAD(&loads.seen))) {
    uint64_t h = LOAD(&r->head), t = LOAD_ACQ(&r->tail);
    /* the record starts at h, or at the start of q if it would wrap */
    uint64_t at = (h & (QUEUE_WORDS - 1)) + REC_HEAD + n > QUEUE_WORDS ? (h | (QUEUE_WORDS - 1)) + 1 : h;
    if (at + REC_HEAD + n - t <= QUEUE_WORDS &&
        (h == t || (int64_t)(now - r->first_time) <= MAX_AGE_US)) {
      uint64_t gen = __atomic_load_n(&loads.gen, __ATOMIC_RELAXED) << MT__GEN_SHIFT;
      uint64_t *rec = &r->q[at & (QUEUE_WORDS - 1)], *codes = rec + REC_HEAD; /* no wrap */
      /* The codes it shares with the last record, from the outermost
       * (usually most of them), were described then; the others are
       * looked up. (That record is still intact: only this thread writes
       * q, and the new record ends within one lap of its start.) */
      size_t same = 0;
      if (r->prev_n && at + REC_HEAD + n - r->prev <= QUEUE_WORDS) {
        const uint64_t *prev = &r->q[r->prev & (QUEUE_WORDS - 1)];
        size_t m = n < r->prev_n ? n : r->prev_n;
        const uint64_t *pc = info->callstack + n - 1; /* outermost, walking in */
        if (!gen) /* no library was ever unloaded: a code is its address */
          while (same < m && pc[-(ptrdiff_t)same] == prev[same]) codes[same] = prev[same], same++;
        else
          while (same < m && ((pc[-(ptrdiff_t)same] & MT__PC_MASK) | gen) == prev[same])
            codes[same] = prev[same], same++;
      }
      size_t i = same;
      if (loads.d.hooked) /* new codes are described before any dlclose */
        for (; i < n; i++) codes[i] = (info->callstack[n - 1 - i] & MT__PC_MASK) | gen;
      else
        for (; i < n; i++) {
          uint64_t code = (info->callstack[n - 1 - i] & MT__PC_MASK) | gen;
          if (LOAD(&described[described_slot(code)]) != code) break;
          codes[i] = code;
        }
      if (i == n) {
        if (at != h) r->q[h & (QUEUE_WORDS - 1)] = SKIP;
        if (h == t) r->first_time = now;
        cell *c = r->cellv[--r->ncells];
        c->id = PENDING;
        c->ring = r;
        c->session = mt__tr_session_id();
        rec[0] = (uint64_t)info->source << 32 | (uint64_t)same << 16 | n;
        rec[1] = (uint64_t)(uintptr_t)c;
        rec[2] = now;
        rec[3] = info->words;
        rec[4] = info->nsamples;
        r->prev = at + REC_HEAD;
        r->prev_n = n;
        STORE_REL(&r->head, at + REC_HEAD + n);
        return c;
      }
    }
  }
  return alloc_locked(r, now, info, n);
}

/* The interposer's dlclose, before the library may go: queued samples
 * were not checked for new codes, so every queued event is written and the
 * writer's pending codes are described, now that they surely are loaded.
 * Not from inside the profiler (busy), which may hold the lock. */
void mt__tr_before_dlclose(void) {
  if (!mt__tls.busy && mt__tr_active() && mt__tr_here()) {
    mt__tls.busy++;
    int cancel = mt__tr_lock();
    if (mt__tr_active() && mt__tr_writer() && write_queued_events() != 0)
      mt__tr_session_failed();
    mt__tr_unlock(cancel);
    mt__tls.busy--;
  }
  /* after: describing what was queued may have found a C++ runtime */
  mt__cxxrt_pin();
}

/* A promotion (runtime blocks), written at once: promotions are rare. */
void *mt__tr_on_promote(void *ctx, void *handle) {
  (void)ctx;
  uint64_t now = mt__clock_us(); /* outside the lock: keep it short */
  locked_job j = {.fn = promote_job, .c = handle, .now = now};
  int cancel = mt__tr_lock();
  run_locked(&j);
  mt__tr_unlock(cancel);
  return handle;
}

void mt__tr_on_dealloc(void *ctx, void *handle) {
  (void)ctx;
  uint64_t now = mt__clock_us();
  ring *r = my_ring ? my_ring : ring_claim();
  if (!r) {
    locked_job j = {.fn = collect_job, .c = handle, .now = now};
    int cancel = mt__tr_lock();
    run_locked(&j);
    mt__tr_unlock(cancel);
    return;
  }
  uint64_t n = LOAD(&r->n), d = LOAD_ACQ(&r->done);
  /* Full, or the oldest entry is old: write the queues now. The slot the
   * owner fills next is one that every flusher has finished reading
   * (`done`, acquired, is past it). */
  if (__builtin_expect(n - d >= COLLECTS - COLLECTS / 4, 0) ||
      (n != d && (int64_t)(now - r->e[d % COLLECTS].time) > MAX_AGE_US)) {
    /* Three quarters full: write them if the lock is free; wait for it
     * only when full (a holder preempted mid-batch would otherwise put
     * every other sampling thread to sleep). */
    int cancel;
    if (n - d == COLLECTS) cancel = mt__tr_lock();
    else if (!mt__tr_trylock(&cancel)) goto queue;
    locked_job j = {.fn = flush_job, .r = r, .now = now};
    run_locked(&j);
    mt__tr_unlock(cancel);
  }
queue:
  r->e[n % COLLECTS].c = handle;
  r->e[n % COLLECTS].time = now;
  r->e[n % COLLECTS].after = LOAD(&r->head);
  STORE_REL(&r->n, n + 1);
}
