/* The sampling engine: geometric sampling of words, tracking of sampled
 * blocks, and the tracker callbacks.
 *
 * Nothing here calls malloc: the tables live in mmap'd memory, so the engine
 * works underneath a malloc interposer without recursion. Locks are taken
 * only on sampled allocations and on frees that pass the filter; callbacks
 * run with no engine lock held. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "engine_internal.h"
#include "mathlib.h"
#include "base/rng.h"
#include "ziggurat.h"

/* While the engine is stopped, threads look again after this many words
 * (128 KiB): a session started later (a tracing period, memtrace attach)
 * reaches every thread within that much allocation, and a stopped engine
 * costs a thread one slow-path check per 128 KiB it allocates. */
#define IDLE_WORDS ((int64_t)1 << 14)
#define DEFAULT_CALLSTACK 256
#define MAX_CALLSTACK 4096
/* Sample counts up to this mean are drawn exactly (by skipping geometric
 * gaps); above it the normal approximation to the binomial is used. */
#define EXACT_BINOMIAL_MEAN 256.0
/* From this mean up, exact counts are drawn by inversion of the binomial's
 * distribution function (one exp) rather than by skipping gaps (one log per
 * sample point, plus one): below it a gap or two is cheaper. */
#define INVERSION_MIN_MEAN 1.0
/* Steps of the inversion done with a multiply by a table's entry rather
 * than a divide (beyond it: the divide). */
#define INVERSION_TABLE 512

__thread mt__thread mt__tls __attribute__((tls_model("initial-exec")));
uint8_t mt__filter[1u << MT__FILTER_BITS];

/* ---- tracked blocks: open addressing over mmap'd memory ---- */

/* Keys are spread over SHARDS tables, each with its own lock, so that
 * threads sampling or freeing at the same time rarely wait for each other.
 * A key's shard is taken from the same address bits as its filter slot:
 * every filter byte belongs to one shard and changes only under its lock. */
#define SHARD_BITS 4
#define SHARDS (1u << SHARD_BITS)
#define EMPTY ((uintptr_t)0)

typedef struct slot {
  uintptr_t key;
  void *handle;
} slot;

typedef struct table {
  slot *slots;
  size_t cap, used;
} table;

/* A shard's lock is held for one table probe: a spin lock, whose release
 * is a plain store (a mutex's is an atomic read-modify-write: with two
 * shard locks per sample, a few percent of a sample's cost). A waiter
 * spins briefly, then yields, then sleeps, so that a holder that lost its
 * core (or has a lower real-time priority) always gets to run. */
typedef struct spin {
  _Atomic int held;
} spin;

static void spin_lock(spin *l) {
  for (unsigned n = 0;; n++) {
    if (!atomic_load_explicit(&l->held, memory_order_relaxed) &&
        !atomic_exchange_explicit(&l->held, 1, memory_order_acquire))
      return;
    if (n < 64) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else if (n < 128) {
      sched_yield();
    } else {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
  }
}

static inline void spin_unlock(spin *l) {
  atomic_store_explicit(&l->held, 0, memory_order_release);
}

typedef struct shard {
  spin lock;
  table t;
  uint64_t filter_hits; /* frees that took the slow path (under lock: no
                           cache line shared by all threads) */
  uint64_t sampled;     /* sampled blocks put here, counted likewise */
  _Atomic uint64_t sampled_unlocked; /* those of mt__track_handle (approximate) */
} __attribute__((aligned(64))) shard;

typedef struct ext_rec { /* a token of mt_external_alloc */
  uint32_t epoch;
  struct ext_rec *next_free;
  void *handle;
} ext_rec;

static struct {
  pthread_mutex_t lock; /* start, stop, external records */
  _Atomic uint32_t epoch; /* bumped by start and stop */
  _Atomic int running;
  double rate, log1m_rate;
  double gap_scale;      /* -1 / log1m_rate: a multiply per gap, not a divide */
  double odds;           /* rate / (1 - rate), for the binomial's recurrence */
  /* The inversion's tables (see draw_binomial): P(k = 0) = (1 - rate)^n
   * for n < 2^16 as p0_lo[n & 255] * p0_hi[n >> 8], and odds / (k + 1). */
  double p0_lo[256], p0_hi[256];
  double odds_over[INVERSION_TABLE];
  mt_tracker tracker;
  mt_callstack_fn callstack;
  void *callstack_ctx;
  size_t callstack_max;
  uint64_t seed;
  _Atomic uint64_t thread_seq;
  ext_rec *ext_free;
  size_t ext_bytes;
  _Atomic uint64_t sampled;
} eng = {.lock = PTHREAD_MUTEX_INITIALIZER};

static shard shards[SHARDS];

static shard *shard_of(uintptr_t key) {
  return &shards[mt__filter_slot(key) & (SHARDS - 1)];
}

static void lock_all(void) {
  for (unsigned i = 0; i < SHARDS; i++) spin_lock(&shards[i].lock);
}
static void unlock_all(void) {
  for (unsigned i = SHARDS; i-- > 0;) spin_unlock(&shards[i].lock);
}

static void *map(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static inline size_t slot_of(uintptr_t key, size_t cap) {
  return (size_t)(((uint64_t)key * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

static int table_resize(table *t, size_t ncap) {
  slot *ns = map(ncap * sizeof *ns);
  if (!ns) return -1;
  for (size_t i = 0; i < t->cap; i++) {
    uintptr_t k = t->slots[i].key;
    if (k == EMPTY) continue;
    size_t j = slot_of(k, ncap);
    while (ns[j].key != EMPTY) j = (j + 1) & (ncap - 1);
    ns[j] = t->slots[i];
  }
  if (t->slots) munmap(t->slots, t->cap * sizeof *t->slots);
  t->slots = ns;
  t->cap = ncap;
  return 0;
}

/* Inserts key -> handle; returns the handle it replaced (a block freed
 * behind the engine's back), or NULL. Returns `handle` itself when out of
 * memory (the caller then reports it untracked). Tables only grow: memory
 * is mapped and unmapped only when the number of tracked blocks doubles
 * (an unmap costs every core a TLB flush). */
static void *table_put(table *t, uintptr_t key, void *handle) {
  if ((t->used + 1) * 2 > t->cap && table_resize(t, t->cap ? t->cap * 2 : 256)) return handle;
  size_t i = slot_of(key, t->cap);
  for (;; i = (i + 1) & (t->cap - 1)) {
    uintptr_t k = t->slots[i].key;
    if (k == key) {
      void *old = t->slots[i].handle;
      t->slots[i].handle = handle;
      return old;
    }
    if (k == EMPTY) break;
  }
  t->slots[i] = (slot){key, handle};
  t->used++;
  uint8_t *f = &mt__filter[mt__filter_slot(key)];
  if (*f < MT__FILTER_MAX) __atomic_store_n(f, (uint8_t)(*f + 1), __ATOMIC_RELAXED);
  else __atomic_store_n(f, MT__FILTER_STICKY, __ATOMIC_RELAXED); /* can't count on */
  return NULL;
}

/* Removes key (linear probing with backward-shift deletion: no tombstones,
 * so the table never needs rebuilding however many blocks come and go). */
static void *table_take(table *t, uintptr_t key) {
  if (!t->cap) return NULL;
  size_t mask = t->cap - 1, i = slot_of(key, t->cap);
  for (;; i = (i + 1) & mask) {
    uintptr_t k = t->slots[i].key;
    if (k == EMPTY) return NULL;
    if (k == key) break;
  }
  void *h = t->slots[i].handle;
  /* Close the gap: move back each later entry of the run whose home slot
   * does not lie cyclically in (i, j]. */
  for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
    uintptr_t k = t->slots[j].key;
    if (k == EMPTY) break;
    size_t home = slot_of(k, t->cap);
    if (((j - home) & mask) >= ((j - i) & mask)) {
      t->slots[i] = t->slots[j];
      i = j;
    }
  }
  t->slots[i].key = EMPTY;
  t->slots[i].handle = NULL;
  t->used--;
  uint8_t *f = &mt__filter[mt__filter_slot(key)];
  /* a sticky slot stays set: the filter may only err towards "maybe" */
  if (*f && *f <= MT__FILTER_MAX) __atomic_store_n(f, (uint8_t)(*f - 1), __ATOMIC_RELAXED);
  return h;
}

/* Forgets every key (all shard locks held). The filter is cleared through
 * the keys themselves: every count in it is one of theirs, and walking the
 * whole megabyte would map all of its pages, at every stop (at exit, most
 * of a short traced program's overhead). Sticky marks stay. */
static void tables_clear(void) {
  for (unsigned s = 0; s < SHARDS; s++) {
    table *t = &shards[s].t;
    for (size_t i = 0; i < t->cap; i++) {
      if (t->slots[i].key == EMPTY) continue;
      uint8_t *f = &mt__filter[mt__filter_slot(t->slots[i].key)];
      if (*f != MT__FILTER_STICKY) __atomic_store_n(f, 0, __ATOMIC_RELAXED);
    }
    if (t->slots) munmap(t->slots, t->cap * sizeof *t->slots);
    memset(t, 0, sizeof *t);
  }
}

/* Puts key -> handle if the session `ep` is still running; returns the
 * handle replaced (see table_put), or NULL. `sampled`: counts a sample. */
static void *track_put(uintptr_t key, void *h, uint32_t ep, int sampled) {
  shard *sh = shard_of(key);
  void *old = NULL;
  spin_lock(&sh->lock);
  sh->sampled += (uint64_t)sampled;
  if (atomic_load(&eng.running) && atomic_load(&eng.epoch) == ep) {
    old = table_put(&sh->t, key, h);
    if (old == h) old = NULL; /* out of memory: untracked */
  }
  spin_unlock(&sh->lock);
  return old;
}

/* Removes key; `is_free`: counts a free that passed the filter. */
static void *track_take(uintptr_t key, int is_free) {
  shard *sh = shard_of(key);
  spin_lock(&sh->lock);
  sh->filter_hits += (uint64_t)is_free;
  void *h = table_take(&sh->t, key);
  spin_unlock(&sh->lock);
  return h;
}

/* ---- random numbers ---- */

static uint64_t next_u64(mt__thread *th) { /* xoroshiro128+ */
  uint64_t s0 = th->rng[0], s1 = th->rng[1], r = s0 + s1;
  s1 ^= s0;
  th->rng[0] = mt__rotl(s0, 24) ^ s1 ^ (s1 << 16);
  th->rng[1] = mt__rotl(s1, 37);
  return r;
}

static double uniform_open0(mt__thread *th) { /* in (0, 1] */
  return (double)((next_u64(th) >> 11) + 1) * 0x1.0p-53;
}

static void seed_thread(mt__thread *th) {
  uint64_t s = eng.seed;
  if (!s) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 32 ^ (uint64_t)(uintptr_t)th;
  }
  uint64_t seq = atomic_fetch_add(&eng.thread_seq, 1);
  th->slot = (uint32_t)seq;
  s ^= seq * 0xd1b54a32d192ed03ull;
  th->rng[0] = mt__splitmix64(&s);
  th->rng[1] = mt__splitmix64(&s) | 1;
}

static uint64_t next_u64_cb(void *th) { return next_u64(th); }

/* Words up to and including the next sample point: Geometric(rate) >= 1,
 * as floor(E / -log(1 - rate)) + 1 with E ~ Exp(1). */
static int64_t draw_gap(mt__thread *th) {
  if (eng.rate >= 1.0) return 1;
  /* >= 0: truncation is floor, one instruction */
  double g = mt__zig_exp(next_u64(th), next_u64_cb, th) * eng.gap_scale;
  return g < (double)(INT64_MAX / 4) ? (int64_t)g + 1 : INT64_MAX / 4;
}

/* Walks the sample points in n words, gap by gap: returns how many lie in
 * them, and sets *beyond to the distance from their end to the next one
 * (a Geometric(rate) draw in its own right: the points are one Bernoulli
 * process). */
static uint64_t walk_points(mt__thread *th, uint64_t n, uint64_t *beyond) {
  uint64_t k = 0, pos = (uint64_t)draw_gap(th);
  for (; pos <= n; pos += (uint64_t)draw_gap(th)) k++;
  *beyond = pos - n;
  return k;
}

/* Sampled words among n: Binomial(n, rate). */
static uint64_t draw_binomial(mt__thread *th, uint64_t n) {
  if (n == 0) return 0;
  if (eng.rate >= 1.0) return n;
  double mean = (double)n * eng.rate;
  double log_p0 = (double)n * eng.log1m_rate; /* log P(k = 0) */
  if (mean >= INVERSION_MIN_MEAN && mean < EXACT_BINOMIAL_MEAN && log_p0 > -700.0) {
    /* Inversion: the smallest k with P(K <= k) >= u, walking the
     * probabilities up by P(k+1) = P(k) (n-k)/(k+1) rate/(1-rate). One
     * exp and about `mean` multiplications, where skipping gaps takes
     * about `mean` logarithms (large blocks at high rates: most of the
     * draws). Exact but for double rounding, as the gaps are. */
    double u = uniform_open0(th), cdf;
    double pk = cdf = n < 65536 ? eng.p0_lo[n & 255] * eng.p0_hi[n >> 8] : mt__exp(log_p0);
    uint64_t k = 0;
    while (cdf < u && k < n) {
      pk *= (double)(n - k) * (k < INVERSION_TABLE ? eng.odds_over[k]
                                                   : eng.odds / (double)(k + 1));
      k++;
      if (pk == 0.0) break; /* past the tail: u was within rounding of 1 */
      cdf += pk;
    }
    return k;
  }
  if (mean < EXACT_BINOMIAL_MEAN) {
    uint64_t beyond;
    return walk_points(th, n, &beyond);
  }
  double u1 = uniform_open0(th), u2 = uniform_open0(th);
  double z = mt__sqrt(-2.0 * mt__log(u1)) * mt__cos_2pi(u2);
  double k = mean + z * mt__sqrt(mean * (1.0 - eng.rate));
  /* rounded to the nearest count (halves up), within [0, n] */
  return !(k >= 0.5) ? 0 : k >= (double)n ? n : (uint64_t)(k + 0.5);
}

/* ---- sampling ---- */

int mt__sample_slow(int64_t words, uint64_t *nsamples) {
  mt__thread *th = &mt__tls;
  int64_t before = th->countdown + words; /* the countdown before this block */
  uint32_t ep = atomic_load_explicit(&eng.epoch, memory_order_acquire);
  if (!atomic_load_explicit(&eng.running, memory_order_acquire)) {
    th->countdown = IDLE_WORDS;
    return 0;
  }
  if (th->epoch != ep) {
    /* A new session: draw this thread's first gap, and measure this block
     * against it (words before this point were allocated before the thread
     * joined; they are not sampled). */
    seed_thread(th);
    th->epoch = ep;
    before = draw_gap(th);
  }
  if (th->busy || th->unsampled) {
    th->countdown = draw_gap(th); /* memoryless: the profiler's own words skip */
    return 0;
  }
  if (before > words) {
    th->countdown = before - words;
    return 0;
  }
  /* The block holds the sample point at word `before`; the words after it
   * are sampled independently. */
  uint64_t rest = (uint64_t)(words - before);
  if (eng.rate < 1.0 && (double)rest * eng.rate < INVERSION_MIN_MEAN) {
    /* Few points expected: walk them; the walk's last gap, past the
     * block, gives the countdown (one logarithm fewer than a fresh draw). */
    uint64_t beyond;
    *nsamples = 1 + walk_points(th, rest, &beyond);
    th->countdown = (int64_t)beyond;
    return 1;
  }
  *nsamples = 1 + draw_binomial(th, rest);
  th->countdown = draw_gap(th);
  return 1;
}

/* The callbacks run inside the program's malloc and free: whatever they do
 * (a write to a trace, a failed socket call) must not show in its errno,
 * which a program may read after a successful allocation or a free.
 * errno's address is the C library's to give (a call through the PLT at
 * every callback); a thread's never changes, so it is asked once. */
static inline int *thread_errno(void) {
  mt__thread *th = &mt__tls;
  if (__builtin_expect(!th->errp, 0)) th->errp = &errno;
  return th->errp;
}

/* The callstack buffer: one per sampling thread, mapped at its first
 * sample and unmapped at its exit, not on the thread's stack. As an array
 * on the stack it took 2 KiB there at the default depth (32 KiB at the
 * deepest), below the program's deepest frame: on a 16 KiB thread (a
 * thread pool's, a coroutine's) that was the difference between a program
 * that ran and one that overflowed its stack under the profiler. Mapped,
 * not malloc'd: no allocation of the profiler's own moves the program's
 * countdown. */
static pthread_key_t cs_key;
static pthread_once_t cs_once = PTHREAD_ONCE_INIT;
static int cs_key_ok;

static size_t cs_bytes(size_t frames) {
  size_t page = 4096;
  return (frames * sizeof(uint64_t) + page - 1) & ~(page - 1);
}

/* At the thread's exit (the key's destructor). A sample taken by a later
 * destructor maps a new one, which the next round of destructors frees. */
static void cs_release(void *p) {
  mt__thread *th = &mt__tls;
  if (th->cs != p) return; /* not this thread's: a fork's leftover */
  munmap(p, cs_bytes(th->cs_cap));
  th->cs = NULL;
  th->cs_cap = 0;
}

static void cs_key_init(void) { cs_key_ok = pthread_key_create(&cs_key, cs_release) == 0; }

/* This thread's buffer, of `frames` at least (NULL if it cannot be had). */
static uint64_t *callstack_buffer(mt__thread *th, size_t frames) {
  if (__builtin_expect(th->cs_cap >= frames, 1)) return th->cs;
  pthread_once(&cs_once, cs_key_init);
  if (!cs_key_ok) return NULL;
  size_t bytes = cs_bytes(frames);
  void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  if (th->cs) munmap(th->cs, cs_bytes(th->cs_cap)); /* a session asking for more */
  th->cs = m;
  th->cs_cap = bytes / sizeof(uint64_t);
  pthread_setspecific(cs_key, m);
  return m;
}

/* Inlined into both callers: a sample makes one call and one set of
 * register saves fewer. */
static inline __attribute__((always_inline)) void *run_alloc(uint64_t words, uint64_t bytes,
                                                             uint64_t nsamples, mt_source source) {
  if (MT_BENCH_STAGE == 2) return NULL;
  int *err = thread_errno(), saved = *err;
  size_t n = 0;
  uint64_t *stack = eng.callstack ? callstack_buffer(&mt__tls, eng.callstack_max) : NULL;
  /* without a buffer (no memory to map one), the sample has no frames */
  if (stack) n = eng.callstack(eng.callstack_ctx, stack, eng.callstack_max);
  if (MT_BENCH_STAGE == 3) {
    *err = saved;
    return NULL;
  }
  mt_alloc_info info = {words, bytes, nsamples, source, stack, n};
  void *h = eng.tracker.alloc ? eng.tracker.alloc(eng.tracker.ctx, &info) : NULL;
  *err = saved;
  return h;
}

static void run_dealloc(void *h) {
  int *err = thread_errno(), saved = *err;
  eng.tracker.dealloc(eng.tracker.ctx, h);
  *err = saved;
}

void mt__track(uintptr_t key, uint64_t words, uint64_t bytes, uint64_t nsamples,
               mt_source source) {
  mt__tls.busy++;
  uint32_t ep = atomic_load(&eng.epoch);
  void *h = run_alloc(words, bytes, nsamples, source);
  /* Counted in the shard when tracked: a counter every thread bumps at
   * every sample would bounce between the cores. */
  if (!h) atomic_fetch_add_explicit(&eng.sampled, 1, memory_order_relaxed);
  if (h) {
    void *old = track_put(key, h, ep, 1);
    /* a block at this address was freed without our knowledge */
    if (old && eng.tracker.dealloc) run_dealloc(old);
  }
  mt__tls.busy--;
}

void *mt__track_handle(uint64_t words, uint64_t bytes, uint64_t nsamples, mt_source source,
                       uint32_t *epoch) {
  mt__thread *th = &mt__tls;
  th->busy++;
  *epoch = atomic_load_explicit(&eng.epoch, memory_order_acquire);
  void *h = run_alloc(words, bytes, nsamples, source);
  /* Counted in a shard picked by thread (a line shared by every thread
   * would bounce between the cores at every sample), without a locked
   * instruction (a few percent of a sample): two threads that share a
   * shard may lose a count now and then. The statistic is approximate.
   * The shard is the thread's rank, not its address: threads' stacks (and
   * thread-locals) lie 8 MiB apart, and every address would pick shard 0,
   * one line for every thread again. */
  _Atomic uint64_t *count = &shards[th->slot & (SHARDS - 1)].sampled_unlocked;
  atomic_store_explicit(count, atomic_load_explicit(count, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  th->busy--;
  return h;
}

/* The dealloc callback for a freed block's handle. None from inside the
 * profiler's own work (a free made by a callback): the tracker may hold its
 * locks or be mid-update. */
static void freed(void *h) {
  if (h && eng.tracker.dealloc && !mt__tls.busy) {
    mt__tls.busy++;
    run_dealloc(h);
    mt__tls.busy--;
  }
}

void mt__release_handle(void *h, uint32_t ep) {
  if (atomic_load_explicit(&eng.running, memory_order_acquire) &&
      atomic_load_explicit(&eng.epoch, memory_order_acquire) == ep)
    freed(h); /* else a stopped session's block: forgotten, as its table would be */
}

void mt__untrack(uintptr_t key) { freed(track_take(key, 1)); }

size_t mt__callstack_marked(uint64_t mark, const uint64_t **frames) {
  mt__thread *th = &mt__tls;
  size_t max = eng.callstack_max ? eng.callstack_max : DEFAULT_CALLSTACK, n = 1;
  uint64_t *stack = callstack_buffer(th, max);
  *frames = stack;
  if (!stack) return 0;
  stack[0] = mark;
  if (eng.callstack && max > 1) n += eng.callstack(eng.callstack_ctx, stack + 1, max - 1);
  return n;
}

void *mt__track_handle_frames(uint64_t bytes, uint64_t nsamples, const uint64_t *frames,
                              size_t n, uint32_t *epoch) {
  mt__thread *th = &mt__tls;
  th->busy++;
  *epoch = atomic_load_explicit(&eng.epoch, memory_order_acquire);
  int *err = thread_errno(), saved = *err;
  mt_alloc_info info = {(bytes + 7) >> 3, bytes, nsamples, MT_SOURCE_EXTERNAL, frames, n};
  void *h = eng.tracker.alloc ? eng.tracker.alloc(eng.tracker.ctx, &info) : NULL;
  *err = saved;
  atomic_fetch_add_explicit(&eng.sampled, 1, memory_order_relaxed);
  th->busy--;
  return h;
}

int mt__session_current(uint32_t epoch) {
  return atomic_load_explicit(&eng.running, memory_order_acquire) &&
         atomic_load_explicit(&eng.epoch, memory_order_acquire) == epoch;
}

/* Above this many points, the draw is the normal approximation to the
 * hypergeometric (a loop per point below it). */
#define EXACT_SPLIT_POINTS 4096

uint64_t mt__samples_within(uint64_t words, uint64_t nsamples, uint64_t part) {
  if (part >= words || nsamples == 0) return part >= words ? nsamples : 0;
  if (nsamples >= words) return part; /* every word is a point */
  mt__thread *th = &mt__tls;
  if (!th->rng[1]) seed_thread(th); /* a thread that never sampled */
  if (nsamples <= EXACT_SPLIT_POINTS) {
    /* each point in turn: it lies in the part with the part's share of the
     * words no earlier point took */
    uint64_t in = 0;
    for (uint64_t j = 0; j < nsamples; j++)
      if (uniform_open0(th) * (double)(words - j) <= (double)(part - in)) in++;
    return in;
  }
  double n = (double)words, k = (double)nsamples, p = (double)part / n;
  double var = k * p * (1 - p) * (n - k) / (n - 1);
  double u1 = uniform_open0(th), u2 = uniform_open0(th);
  double z = mt__sqrt(-2.0 * mt__log(u1)) * mt__cos_2pi(u2);
  double x = k * p + z * mt__sqrt(var);
  uint64_t hi = nsamples < part ? nsamples : part;
  /* rounded to the nearest count, within what the part can hold */
  uint64_t lo = nsamples > words - part ? nsamples - (words - part) : 0;
  uint64_t c = !(x >= 0.5) ? 0 : x >= (double)hi ? hi : (uint64_t)(x + 0.5);
  return c < lo ? lo : c;
}

/* ---- fork: no lock may be inherited held ---- */

/* A fork from a signal handler that interrupted this thread inside the
 * profiler (busy: fork is async-signal-safe) would wait for locks the
 * interrupted code may hold: none are taken then (the tracer's handlers
 * do the same), and the child is not traced. */
static __thread int fork_unlocked __attribute__((tls_model("initial-exec")));

pthread_mutex_t mt__maps_lock = PTHREAD_MUTEX_INITIALIZER;

static void fork_prepare(void) {
  if ((fork_unlocked = mt__tls.busy > 0)) return;
  pthread_mutex_lock(&eng.lock);
  lock_all();
  pthread_mutex_lock(&mt__maps_lock);
}
static void fork_release(void) {
  if (fork_unlocked) {
    fork_unlocked = 0;
    return;
  }
  pthread_mutex_unlock(&mt__maps_lock);
  unlock_all();
  pthread_mutex_unlock(&eng.lock);
}

/* Registered at load, before any tracer registers its own handlers, so
 * that at fork time the tracer's lock is taken first, then this one: the
 * order in which they are taken everywhere else. */
__attribute__((constructor(101))) static void engine_init(void) {
  pthread_atfork(fork_prepare, fork_release, fork_release);
}

/* The settings samples read without the lock. A sample of the previous
 * session may still be running when the next one starts (a thread past its
 * check of `running`, in its callback: stop does not wait for it), so each
 * is written only when it changes: a restart with the same settings (the
 * tracer's keep their tracker and callstack function) writes nothing under
 * it.
 * With other settings, such a late sample may mix the two sessions', each
 * valid. (Found by TSan in stress_sessions: the tracker rewritten with its
 * own value while a thread of the last session read it.) */
static void configure(const mt_engine_params *p) {
  if (eng.rate != p->rate) {
    eng.rate = p->rate;
    eng.log1m_rate = mt__log1p(-p->rate);
    eng.gap_scale = p->rate < 1 ? -1.0 / eng.log1m_rate : 0;
    eng.odds = p->rate < 1 ? p->rate / (1 - p->rate) : 0;
    for (int i = 0; i < 256; i++) {
      eng.p0_lo[i] = mt__exp(i * eng.log1m_rate);
      eng.p0_hi[i] = mt__exp(i * 256.0 * eng.log1m_rate);
    }
    for (int k = 0; k < INVERSION_TABLE; k++) eng.odds_over[k] = eng.odds / (k + 1);
  }
  mt__zig_init(); /* once per process */
  if (memcmp(&eng.tracker, &p->tracker, sizeof eng.tracker) != 0) eng.tracker = p->tracker;
  if (eng.callstack != p->callstack) eng.callstack = p->callstack;
  if (eng.callstack_ctx != p->callstack_ctx) eng.callstack_ctx = p->callstack_ctx;
  size_t max = p->callstack_max ? p->callstack_max : DEFAULT_CALLSTACK;
  if (eng.callstack_max != max) eng.callstack_max = max;
  if (eng.seed != p->seed) eng.seed = p->seed;
}

/* ---- public API ---- */

int mt_engine_start(const mt_engine_params *p) {
  if (!p || !(p->rate > 0 && p->rate <= 1) || p->callstack_max > MAX_CALLSTACK)
    return MT_ERR_INVALID;
  pthread_mutex_lock(&eng.lock);
  if (atomic_load(&eng.running)) {
    pthread_mutex_unlock(&eng.lock);
    return MT_ERR_INVALID;
  }
  configure(p);
  atomic_store(&eng.thread_seq, 0);
  atomic_fetch_add(&eng.epoch, 1);
  atomic_store(&eng.running, 1);
  /* This thread joins now rather than after IDLE_WORDS. */
  mt__tls.countdown = 0;
  pthread_mutex_unlock(&eng.lock);
  return MT_OK;
}

int mt_engine_stop(void) {
  pthread_mutex_lock(&eng.lock);
  if (!atomic_load(&eng.running)) {
    pthread_mutex_unlock(&eng.lock);
    return MT_ERR_INVALID;
  }
  lock_all();
  atomic_store(&eng.running, 0);
  atomic_fetch_add(&eng.epoch, 1);
  tables_clear();
  unlock_all();
  pthread_mutex_unlock(&eng.lock);
  return MT_OK;
}

int mt_engine_running(void) { return atomic_load(&eng.running); }

void mt_engine_suspended(void (*fn)(void *), void *arg) {
  mt__tls.busy++;
  fn(arg);
  mt__tls.busy--;
}

void mt_engine_malloc(void *ptr, size_t bytes) {
  uint64_t ns;
  if (__builtin_expect(!mt__sample(bytes, &ns), 1) || !ptr) return;
  mt__track((uintptr_t)ptr, (bytes + 7) >> 3, bytes, ns, MT_SOURCE_EXTERNAL);
}

void mt_engine_free(void *ptr) {
  if (ptr && __builtin_expect(mt__maybe_tracked((uintptr_t)ptr), 0)) mt__untrack((uintptr_t)ptr);
}

uintptr_t mt_external_alloc(size_t bytes) {
  uint64_t ns;
  if (__builtin_expect(!mt__sample(bytes, &ns), 1)) return 0;
  mt__tls.busy++;
  uint32_t ep = atomic_load(&eng.epoch);
  void *h = run_alloc((bytes + 7) >> 3, bytes, ns, MT_SOURCE_EXTERNAL);
  atomic_fetch_add_explicit(&eng.sampled, 1, memory_order_relaxed);
  ext_rec *r = NULL;
  if (h) {
    pthread_mutex_lock(&eng.lock);
    if (!eng.ext_free) {
      /* Records are never unmapped: a token stays safe to free forever. */
      size_t n = 4096 / sizeof(ext_rec);
      ext_rec *chunk = map(n * sizeof *chunk);
      for (size_t i = 0; chunk && i < n; i++) {
        chunk[i].next_free = eng.ext_free;
        eng.ext_free = &chunk[i];
      }
      if (chunk) eng.ext_bytes += n * sizeof *chunk;
    }
    if ((r = eng.ext_free)) {
      eng.ext_free = r->next_free;
      r->epoch = ep;
      r->handle = h;
    }
    pthread_mutex_unlock(&eng.lock);
  }
  mt__tls.busy--;
  return (uintptr_t)r;
}

void mt_external_free(uintptr_t token) {
  if (!token) return;
  ext_rec *r = (ext_rec *)token;
  pthread_mutex_lock(&eng.lock);
  void *h = r->handle;
  int live = r->epoch == atomic_load(&eng.epoch) && atomic_load(&eng.running) && h;
  r->handle = NULL;
  r->next_free = eng.ext_free;
  eng.ext_free = r;
  pthread_mutex_unlock(&eng.lock);
  if (live && eng.tracker.dealloc) {
    mt__tls.busy++;
    run_dealloc(h);
    mt__tls.busy--;
  }
}

void mt_runtime_alloc(uintptr_t id, size_t words, mt_source source) {
  uint64_t ns;
  if (__builtin_expect(!mt__sample((uint64_t)words * 8, &ns), 1)) return;
  mt__track(id, words, (uint64_t)words * 8, ns, source);
}

void mt_runtime_promote(uintptr_t old_id, uintptr_t new_id) {
  if (!__builtin_expect(mt__maybe_tracked(old_id), 0)) return;
  uint32_t ep = atomic_load(&eng.epoch);
  void *h = track_take(old_id, 0);
  if (!h) return;
  mt__tls.busy++;
  int saved = errno;
  void *nh = eng.tracker.promote ? eng.tracker.promote(eng.tracker.ctx, h) : h;
  errno = saved;
  if (nh) {
    void *old = track_put(new_id, nh, ep, 0);
    /* a block with that id was collected without our knowledge */
    if (old && eng.tracker.dealloc) run_dealloc(old);
  }
  mt__tls.busy--;
}

void mt_runtime_free(uintptr_t id) {
  if (__builtin_expect(mt__maybe_tracked(id), 0)) mt__untrack(id);
}

void mt_engine_get_stats(mt_engine_stats *s) {
  pthread_mutex_lock(&eng.lock);
  lock_all();
  s->sampled = atomic_load(&eng.sampled);
  s->tracked = 0;
  s->filter_hits = 0;
  s->table_bytes = sizeof mt__filter + sizeof shards + eng.ext_bytes;
  for (unsigned i = 0; i < SHARDS; i++) {
    s->tracked += shards[i].t.used;
    s->filter_hits += shards[i].filter_hits;
    s->sampled += shards[i].sampled + atomic_load(&shards[i].sampled_unlocked);
    s->table_bytes += shards[i].t.cap * sizeof(slot);
  }
  unlock_all();
  pthread_mutex_unlock(&eng.lock);
}
