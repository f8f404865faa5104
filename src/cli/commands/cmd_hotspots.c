/* memtrace hotspots: the functions that allocate most, and the callers
 * through which they are reached; the output of memtrace's `hotspots` tool,
 * byte for byte.
 *
 * The analysis (memtrace's bin/hotspots.ml):
 *  - every location code is described once, on its first appearance: by the
 *    last of its inlined locations, or, when it has none, by the frame one or
 *    two positions further out (discarding at most two frames), or else as
 *    the function "#CODE" of file "??". A function is a (file, name) pair;
 *    functions are numbered in the order they are first met, reading each
 *    backtrace from the allocation point outwards.
 *  - each allocation counts its samples for its allocation point's location,
 *    and for every distinct function of the rest of its backtrace; each
 *    (caller function, allocating function) pair goes to a Misra-Gries
 *    heavy-hitters summary of 10000 counters.
 *  - the report lists the allocating functions above 0.5% of the samples,
 *    with their top locations and their callers that carry a large enough
 *    share.
 *
 * memtrace lists functions and callers of equal weight in the iteration
 * order of OCaml hash tables; that order is reproduced (ocaml_hashtbl.h),
 * along with the stable merge sort of List.sort and the order of OCaml lists
 * built by prepending, so that ties come out in the same order.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "code_table.h"
#include "hotspots_callers.h"
#include "hotspots_hh.h"
#include "hotspots_memo.h"
#include "ocaml_hashtbl.h"
#include "output.h"
#include "progress.h"
#include "base/containers.h"

static const char usage[] =
    "usage: memtrace hotspots TRACE\n"
    "\n"
    "Reports where TRACE's program allocates: the functions allocating more\n"
    "than 0.5% of the samples, heaviest first, each with its estimated bytes,\n"
    "its share, its top three source locations, and the callers through which\n"
    "most of its allocations come (\"via\", with the share of the caller's\n"
    "allocations that end there).\n"
    "\n"
    "The output is that of memtrace's `hotspots` tool, byte for byte.\n";

#define NONE UINT32_MAX

static void die_nomem(void) { mt_cli_nomem(&mt_cmd_hotspots); }

/* Grows *p (of *cap elements) to hold at least `need`. */
static void *grow_array(void *p, size_t *cap, size_t need, size_t elem) {
  if (mt__grow(&p, cap, need, elem, 256) != 0) die_nomem();
  return p;
}

/* ---- functions and locations ---- */

typedef struct loc_entry {
  uint32_t line, start_char, end_char;
  uint32_t func;
  uint32_t older; /* the previous location of the same function, or NONE */
} loc_entry;

typedef struct func {
  const char *name, *filename;
  uint32_t newest_loc; /* head of the function's list of locations */
  int64_t direct;      /* samples allocated at its own locations */
} func;

/* A code's numbers in the table of codes (code_table.h): its loc entry
 * and its function. */
enum { ENTRY, FUNC };

typedef struct state {
  const mt_reader *r;
  mt__strtab strings;
  mt__u64map string_ids; /* interned pointer -> string number */
  size_t nstrings;
  mt__u64map func_ids; /* (file number << 32 | name number) -> function */
  func *funcs;
  int64_t *total_count; /* per function: samples of allocations it is a caller in */
  size_t nfuncs, funcs_cap, total_cap;
  code_table codes; /* location code -> its loc entry and function */
  loc_entry *entries;
  int64_t *entry_count; /* per loc entry: samples allocated there */
  size_t nentries, entries_cap, entry_count_cap;
  heavy_hitters hh;
} state;

static uint32_t string_id(state *s, const char *str) {
  const char *p = mt__strtab_intern(&s->strings, str, strlen(str));
  if (!p) die_nomem();
  uint32_t *id = mt__u64map_get(&s->string_ids, (uint64_t)(uintptr_t)p);
  if (id) return *id - 1;
  uint32_t n = (uint32_t)s->nstrings++;
  if (mt__u64map_put(&s->string_ids, (uint64_t)(uintptr_t)p, n) != 0) die_nomem();
  return n;
}

static uint32_t func_of(state *s, const char *filename, const char *name) {
  uint64_t key = (uint64_t)string_id(s, filename) << 32 | string_id(s, name);
  uint32_t *id = mt__u64map_get(&s->func_ids, key);
  if (id) return *id - 1;
  s->funcs = grow_array(s->funcs, &s->funcs_cap, s->nfuncs + 1, sizeof *s->funcs);
  s->total_count = grow_array(s->total_count, &s->total_cap, s->nfuncs + 1, sizeof *s->total_count);
  uint32_t f = (uint32_t)s->nfuncs++;
  func *fn = &s->funcs[f];
  fn->name = mt__strtab_intern(&s->strings, name, strlen(name));
  fn->filename = mt__strtab_intern(&s->strings, filename, strlen(filename));
  fn->newest_loc = NONE;
  fn->direct = 0;
  s->total_count[f] = 0;
  if (mt__u64map_put(&s->func_ids, key, f) != 0) die_nomem();
  return f;
}

/* The loc entry of bt[i] and its function, made on the code's first
 * appearance. */
static code_slot add_loc(state *s, const uint64_t *bt, size_t i) {
  const code_slot *known = code_find(&s->codes, bt[i]);
  if (known->v[ENTRY] != CODE_TABLE_EMPTY) return *known;

  const char *filename = "??", *name;
  uint32_t line = 0, start = 0, end = 0;
  char hex[24];
  size_t j = i, n = 0;
  const mt_location *l = mt_reader_lookup(s->r, bt[j], &n);
  for (int discard = 2; !l && j > 0 && discard > 0; discard--)
    l = mt_reader_lookup(s->r, bt[--j], &n);
  if (l && n > 0) {
    filename = l[n - 1].filename;
    name = l[n - 1].defname;
    line = l[n - 1].line;
    start = l[n - 1].start_char;
    end = l[n - 1].end_char;
  } else {
    /* OCaml's %x of the code as an OCaml int: its 63 low bits */
    snprintf(hex, sizeof hex, "#%" PRIx64, bt[j] & INT64_MAX);
    name = hex;
  }
  uint32_t f = func_of(s, filename, name);
  s->entries = grow_array(s->entries, &s->entries_cap, s->nentries + 1, sizeof *s->entries);
  s->entry_count = grow_array(s->entry_count, &s->entry_count_cap, s->nentries + 1,
                              sizeof *s->entry_count);
  uint32_t e = (uint32_t)s->nentries++;
  s->entries[e] = (loc_entry){line, start, end, f, s->funcs[f].newest_loc};
  s->entry_count[e] = 0;
  s->funcs[f].newest_loc = e;
  code_slot *c = code_add(&s->codes, bt[i], e, f);
  if (!c) die_nomem();
  return *c;
}

/* ---- the pass over the trace ---- */

/* Allocations whose memo probe waits (QUEUE at most, in a ring of RING
 * slots: the next slot is free before the oldest is resolved), and the new
 * frames each may bring (QUEUE_FRAMES at most; one bringing more is
 * resolved at once). None waits while the memo's table has fewer than
 * QUEUE_MIN_CAP records (1 MiB): the caches hold it, and waiting would only
 * cost a second copy of each backtrace's new frames. resolve copies
 * COPY_AHEAD frames into the last backtrace whatever their number. */
enum { QUEUE = 8, RING = 16, QUEUE_FRAMES = 64, QUEUE_MIN_CAP = 1 << 14, COPY_AHEAD = 8 };

/* An allocation waiting for its memo probe: its backtrace is the one
 * before it with frames k..n replaced by the n - k in the queue's frames;
 * `repeats` allocations of the same backtrace follow it, of
 * `repeat_samples` in all. */
typedef struct waiting {
  uint64_t hash1, hash2;
  int64_t nsamples, repeat_samples;
  size_t k, n, repeats;
  int same; /* its backtrace is the one before's */
} waiting;

/* Each allocation's memo record is probed a few allocations after the
 * reader decoded it: the record's cache line, prefetched when it was
 * decoded, has arrived meanwhile (a real program's distinct backtraces fill
 * megabytes of records, and a probe often reads one that thousands of
 * allocations since have not touched). The allocations are still analysed
 * in trace order, the one thing the analysis depends on; an allocation
 * that repeats the backtrace of the one before joins it. */
typedef struct pass {
  state *s;
  memo m;
  memo_sink sink;
  /* The backtrace of the last allocation resolved, the function of each of
   * its frames (those before func_valid), and the hashes of each prefix of
   * the last allocation's backtrace: a backtrace mostly repeats the
   * previous one's outer frames. The three arrays have bt_cap elements. */
  uint64_t *prev;
  uint32_t *func_at;
  memo_prefix *prefix_hash;
  size_t prev_len, func_valid, bt_cap;
  size_t last_len;      /* the length of the last allocation's backtrace */
  uint32_t last_domain; /* and its domain */
  /* The distinct functions of prev's first func_valid - 1 frames at most,
   * from the innermost out: the callers of an allocation at prev. */
  callers_list callers;
  /* The memo record of the last allocation resolved, or NULL. Records move
   * only when memo_add grows the table, which returns the new one. */
  memo_bt *last;
  /* A ring, from head, filled while the memo is on (it may turn off while
   * some wait), and each waiting allocation's new frames. */
  waiting queue[RING];
  uint64_t frames[RING][QUEUE_FRAMES];
  size_t head, nwaiting;
  int64_t total_samples;
} pass;

static void pass_init(pass *p, state *s) {
  memset(p, 0, sizeof *p);
  p->s = s;
  memo_init(&p->m, &s->hh);
  p->sink = (memo_sink){&s->entry_count, &s->total_count};
  p->last_domain = UINT32_MAX;
  callers_init(&p->callers);
}

static void pass_free(pass *p) {
  free(p->prev);
  free(p->func_at);
  free(p->prefix_hash);
  callers_free(&p->callers);
  memo_free(&p->m);
}

/* `count` recurrences, of nsamples in all, of the backtrace of memo record
 * b. */
static void hits(pass *p, memo_bt *b, size_t count, int64_t nsamples) {
  heavy_hitters *hh = &p->s->hh;
  b->samples += nsamples;
  for (; count; count--) {
    if (hh->sweeps < b->safe_until) {
      /* its pairs are all there: hits, held back (holding sweeps nothing,
       * so the rest are held too) */
      memo_hold(&p->m, b, count);
      return;
    }
    int64_t sweeps = hh->sweeps, low = INT64_MAX;
    uint32_t allocator = b->allocator;
    memo_caller *c = memo_callers(&p->m, b);
    for (uint32_t j = 0; j < b->ncallers; j++) {
      uint16_t got = hh_add_at(hh, c[j].func, allocator, (uint16_t)c[j].counter);
      c[j].counter = got;
      if (got != HH_EMPTY && hh->ctr[got].score < low) low = hh->ctr[got].score;
    }
    b->safe_until = hh->sweeps == sweeps ? low : 0; /* 0: a pair was left out */
  }
}

/* The full analysis of an allocation of nsamples at backtrace bt[0..n),
 * which shares its first k frames with prev (bt may be prev itself). While
 * the memo is on, the result is recorded under (hash1, hash2) if the
 * backtrace was met before: memo_met is asked last, its filter's word
 * fetched first, so that the analysis hides that word's cache miss. */
static void analyse(pass *p, const uint64_t *bt, size_t k, size_t n, int64_t nsamples,
                    uint64_t hash1, uint64_t hash2) {
  state *s = p->s;
  if (p->m.on) memo_met_prefetch(&p->m, hash1);
  uint32_t *func_at = p->func_at, allocpt = NONE; /* the allocation point's loc entry */
  /* The callers' list keeps the frames whose functions stay as they were,
   * outside the allocation point (n - 1 frames: bt may be a prefix of prev) */
  size_t keep = p->func_valid < k ? p->func_valid : k;
  callers_truncate(&p->callers, keep < n - 1 ? keep : n - 1);
  /* The frames the previous backtrace shares, already described, whose
   * functions were not noted on a memo hit. */
  for (size_t i = p->func_valid; i < k; i++) func_at[i] = code_find(&s->codes, bt[i])->v[FUNC];
  /* memtrace describes the allocation point first, then the callers from
   * the innermost out: new functions are numbered in that order. */
  for (size_t i = n; i-- > k;) {
    code_slot c = add_loc(s, bt, i);
    if (i == n - 1) allocpt = c.v[ENTRY];
    p->prev[i] = bt[i];
    func_at[i] = c.v[FUNC];
  }
  if (k == n) allocpt = add_loc(s, bt, n - 1).v[ENTRY]; /* a prefix of the last one */
  p->prev_len = p->func_valid = n;
  uint32_t allocator = func_at[n - 1];

  /* the callers: the frames before the allocation point */
  callers_list *cl = &p->callers;
  if (callers_reserve(cl, p->bt_cap, s->nfuncs) != 0) die_nomem();
  for (size_t i = cl->len; i < n - 1; i++) callers_push(cl, func_at[i]);
  if (p->m.on) {
    memo_caller *c = memo_open(&p->m, n);
    uint32_t nc = 0;
    int64_t sweeps = s->hh.sweeps, low = INT64_MAX;
    for (uint32_t x = callers_first(cl); x; x = callers_next(cl, x)) {
      uint32_t f = callers_func(cl, x);
      uint16_t got = hh_add(&s->hh, f, allocator);
      c[nc++] = (memo_caller){f, got};
      if (got != HH_EMPTY && s->hh.ctr[got].score < low) low = s->hh.ctr[got].score;
    }
    if (s->hh.sweeps != sweeps) low = 0; /* a pair was left out */
    p->last = memo_met(&p->m, hash1, hash2)
                  ? memo_add(&p->m, hash1, hash2, nc, allocpt, allocator, nsamples, low)
                  : NULL;
    if (!p->last) {
      /* not memoized: count now */
      s->entry_count[allocpt] += nsamples;
      for (uint32_t j = 0; j < nc; j++) s->total_count[c[j].func] += nsamples;
    }
    return;
  }
  s->entry_count[allocpt] += nsamples;
  for (uint32_t x = callers_first(cl); x; x = callers_next(cl, x)) {
    uint32_t f = callers_func(cl, x);
    s->total_count[f] += nsamples;
    hh_add(&s->hh, f, allocator);
  }
}

/* resolve's cases off the common path: an allocation to analyse, or a
 * recurrence whose pairs may have left the summary; prev is already its
 * backtrace. */
static void resolve_slow(pass *p, const waiting *w) {
  size_t k = w->k, n = w->n;
  /* The allocations left, the samples of the next and of those after it
   * (the repeats' are counted with the first repeat: only their sum
   * matters) */
  size_t left = 1 + w->repeats;
  int64_t next = w->nsamples, after = w->repeat_samples;
  int same = w->same;
  for (;;) {
    if (p->m.on) {
      memo_bt *b = same && p->last ? p->last : memo_find(&p->m, w->hash1, w->hash2);
      if (b) {
        p->last = b;
        hits(p, b, left, next + after);
        memo_check(&p->m, &p->sink, left, left); /* may free b */
        return;
      }
      p->last = NULL;
      memo_check(&p->m, &p->sink, 1, 0); /* may turn the memo off */
    }
    analyse(p, p->prev, k, n, next, w->hash1, w->hash2);
    if (--left == 0) return;
    k = n;
    same = 1;
    next = after;
    after = 0;
  }
}

/* Resolves allocation w, whose backtrace is prev with frames k..n replaced
 * by `frames`, and its repeats: recurrences of a memoized backtrace, or
 * allocations to analyse. */
static inline __attribute__((always_inline)) void resolve(pass *p, const waiting *w,
                                                           const uint64_t *frames) {
  size_t k = w->k, n = w->n;
  /* Mostly a few new frames: COPY_AHEAD copied whatever their number
   * (prev has room for n + COPY_AHEAD, frames for QUEUE_FRAMES, or it is
   * prev itself), the rest after, rather than a loop whose length varies. */
  uint64_t *prev = p->prev;
  uint64_t ahead[COPY_AHEAD]; /* through registers: frames may be prev + k */
  memcpy(ahead, frames, sizeof ahead);
  memcpy(prev + k, ahead, sizeof ahead);
  for (size_t i = k + COPY_AHEAD; i < n; i++) prev[i] = frames[i - k];
  p->prev_len = n;
  if (p->func_valid > k) p->func_valid = k;
  memo_bt *b;
  if (p->m.on && (b = w->same && p->last ? p->last : memo_find(&p->m, w->hash1, w->hash2)) &&
      p->s->hh.sweeps < b->safe_until) {
    /* The common case: recurrences whose pairs are all in the summary
     * (hits), their hits held back. */
    size_t count = 1 + w->repeats;
    p->last = b;
    b->samples += w->nsamples + w->repeat_samples;
    memo_hold(&p->m, b, count);
    memo_check(&p->m, &p->sink, count, count); /* may free b */
    return;
  }
  resolve_slow(p, w);
}

/* Resolves the oldest waiting allocation and frees its slot; the count of
 * those waiting is the caller's. Inlined where a full ring makes room, once
 * an allocation: a call there would save and restore most of the registers
 * for a few stores. */
static inline __attribute__((always_inline)) void resolve_oldest(pass *p) {
  size_t h = p->head;
  p->head = (h + 1) % RING;
  resolve(p, &p->queue[h], p->frames[h]);
}

/* Resolves every waiting allocation: prev becomes the last backtrace. Out
 * of line: pass_alloc calls it on three paths that seldom run, which would
 * otherwise each hold a copy of resolve_oldest. */
static __attribute__((noinline)) void drain(pass *p) {
  while (p->nwaiting) {
    p->nwaiting--;
    resolve_oldest(p);
  }
}

static void pass_alloc(pass *p, const mt_event *ev) {
  const uint64_t *bt = ev->backtrace;
  size_t n = ev->backtrace_len;
  int64_t nsamples = (int64_t)ev->nsamples;
  p->total_samples += nsamples;
  int same_domain = ev->domain == p->last_domain;
  p->last_domain = ev->domain;
  if (n == 0) return; /* memtrace's tool fails on these; we skip them */
  if (n + COPY_AHEAD > p->bt_cap) { /* resolve copies COPY_AHEAD frames past k into prev */
    size_t cap = p->bt_cap;
    p->prev = grow_array(p->prev, &cap, n + COPY_AHEAD, sizeof *p->prev);
    cap = p->bt_cap;
    p->func_at = grow_array(p->func_at, &cap, n + COPY_AHEAD, sizeof *p->func_at);
    cap = p->bt_cap;
    p->prefix_hash = grow_array(p->prefix_hash, &cap, n + COPY_AHEAD, sizeof *p->prefix_hash);
    p->bt_cap = cap;
  }
  /* The frames shared with the last backtrace: the reader says how many
   * when that one was the domain's last (the trace encodes each backtrace
   * against its domain's previous one); it may say more than either has
   * when the writer cut a backtrace short. */
  size_t k;
  if (same_domain) {
    k = ev->common_prefix;
    if (k > n) k = n;
    if (k > p->last_len) k = p->last_len;
  } else {
    drain(p); /* prev is then the last backtrace */
    k = 0;
    while (k < n && k < p->prev_len && bt[k] == p->prev[k]) k++;
  }
  int same = k == n && n == p->last_len;
  p->last_len = n;
  if (!p->m.on) {
    drain(p); /* those that waited when it turned off come first */
    analyse(p, bt, k, n, nsamples, 0, 0);
    return;
  }
  if (same && p->nwaiting) { /* the last allocation's backtrace, waiting */
    waiting *t = &p->queue[(p->head + p->nwaiting - 1) % RING];
    t->repeats++;
    t->repeat_samples += nsamples;
    return;
  }
  if (n - k > QUEUE_FRAMES || p->m.cap < QUEUE_MIN_CAP) {
    drain(p); /* prev is then the last backtrace, its frames from k on free */
    waiting now = {0, 0, nsamples, 0, k, n, 0, same};
    memo_hash(bt, k, n, p->prefix_hash, p->prev + k, &now.hash1, &now.hash2);
    resolve(p, &now, p->prev + k); /* the new frames copied in place */
    return;
  }
  /* into the ring's next slot, free while the oldest waits */
  size_t t = (p->head + p->nwaiting) % RING;
  waiting *w = &p->queue[t];
  w->nsamples = nsamples;
  w->repeat_samples = 0;
  w->k = k;
  w->n = n;
  w->repeats = 0;
  w->same = same;
  memo_hash(bt, k, n, p->prefix_hash, p->frames[t], &w->hash1, &w->hash2);
  if (!same) memo_prefetch(&p->m, w->hash1); /* a repeat's record is the last one's */
  if (p->nwaiting < QUEUE) p->nwaiting++;
  else resolve_oldest(p); /* a full ring: the oldest makes room, the count stays */
}

/* ---- the report ---- */

/* Stable sort by descending weight (List.sort with compare w' w). */
typedef struct ranked {
  int64_t weight;
  uint32_t pos; /* position in the list before sorting */
  uint32_t item;
} ranked;

static int by_weight_desc(const void *pa, const void *pb) {
  const ranked *a = pa, *b = pb;
  if (a->weight != b->weight) return a->weight > b->weight ? -1 : 1;
  return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static void sort_ranked(ranked *v, size_t n) {
  for (size_t i = 0; i < n; i++) v[i].pos = (uint32_t)i;
  if (n) qsort(v, n, sizeof *v, by_weight_desc); /* qsort(NULL, 0) is undefined */
}

static void print_bytes(mt_out *o, double n) {
  if (n < 100.) mt_out_printf(o, "%4.0f B", n);
  else if (n < 100. * 1024.) mt_out_printf(o, "%4.1f kB", n / 1024.);
  else if (n < 100. * 1024. * 1024.) mt_out_printf(o, "%4.1f MB", n / 1024. / 1024.);
  else if (n < 100. * 1024. * 1024. * 1024.)
    mt_out_printf(o, "%4.1f GB", n / 1024. / 1024. / 1024.);
  else mt_out_printf(o, "%4.1f TB", n / 1024. / 1024. / 1024. / 1024.);
}

typedef struct hot {
  uint32_t func;
  uint64_t seq; /* when it entered memtrace's hot_allocs table */
  ranked *callers; /* in the order memtrace conses them: reversed */
  size_t ncallers, cap;
} hot;

#define TOTAL_ALLOCS(s, f) ((s)->total_count[f] + (s)->funcs[f].direct)

/* The allocating functions above 0.5%, each with its callers, as
 * memtrace's hot_allocs table (Func_tbl.create 100, keyed by function)
 * holds them: its hot functions in *hots, and their order (Func_tbl.fold
 * conses: the table's iteration order reversed; then List.sort by direct
 * allocations, heaviest first) in the returned list of *nhots. */
static ranked *hot_functions(state *s, int64_t total_samples, hot **hots_out, size_t *nhots_out) {
  func *fs = s->funcs;
  /* The heavy hitters, in the iteration order of memtrace's table. */
  heavy_hitters *hh = &s->hh;
  size_t nlive = 0;
  mt_ocaml_binding *order = malloc((hh->nused + 1) * sizeof *order);
  if (!order) die_nomem();
  for (size_t c = 0; c < hh->nused; c++) {
    if (hh->ctr[c].score == HH_FREE) continue;
    uint64_t caller = hh->ctr[c].key >> 32, allocator = (uint32_t)hh->ctr[c].key;
    /* a.id * 1231441 + b.id * 3821 (an OCaml int: the low bits agree) */
    order[nlive++] =
        (mt_ocaml_binding){caller * 1231441u + allocator * 3821u, hh->seq[c], (uint32_t)c};
  }
  mt_ocaml_shape hh_shape = mt_ocaml_shape_create(HH_K); /* never grows: size <= k */
  mt_ocaml_hashtbl_order(order, nlive, hh_shape.nbuckets);

  mt_ocaml_shape hot_shape = mt_ocaml_shape_create(100);
  mt__u64map hot_index = {0}; /* function -> hot */
  hot *hots = NULL;
  size_t nhots = 0, hots_cap = 0;
  for (size_t k = 0; k < nlive; k++) {
    uint32_t c = order[k].item;
    uint32_t fn = (uint32_t)(hh->ctr[c].key >> 32), al = (uint32_t)hh->ctr[c].key;
    int64_t d1 = hh->ctr[c].score - hh->base[c];
    double alloc_prop = (double)fs[al].direct / (double)total_samples;
    if (!(alloc_prop > 0.005)) continue;
    uint32_t *hi = mt__u64map_get(&hot_index, al);
    if (!hi) {
      hots = grow_array(hots, &hots_cap, nhots + 1, sizeof *hots);
      hots[nhots] = (hot){al, nhots, NULL, 0, 0};
      mt_ocaml_shape_add(&hot_shape);
      if (mt__u64map_put(&hot_index, al, (uint32_t)nhots) != 0) die_nomem();
      hi = mt__u64map_get(&hot_index, al);
      nhots++;
    }
    hot *ho = &hots[*hi - 1];
    double pair_freq = (double)d1;
    double fn_freq = (double)TOTAL_ALLOCS(s, fn);
    double bound = 0.10 >= alloc_prop * 1.2 ? 0.10 : alloc_prop * 1.2; /* max */
    if (pair_freq / fn_freq > bound && pair_freq / (double)total_samples > 0.005) {
      ho->callers = grow_array(ho->callers, &ho->cap, ho->ncallers + 1, sizeof *ho->callers);
      ho->callers[ho->ncallers++] = (ranked){d1, 0, fn};
    }
  }
  free(order);
  mt__u64map_free(&hot_index);

  mt_ocaml_binding *hot_order = malloc((nhots + 1) * sizeof *hot_order);
  ranked *list = malloc((nhots + 1) * sizeof *list);
  if (!hot_order || !list) die_nomem();
  for (size_t h = 0; h < nhots; h++)
    hot_order[h] = (mt_ocaml_binding){(uint64_t)hots[h].func * 21089245u, hots[h].seq, (uint32_t)h};
  mt_ocaml_hashtbl_order(hot_order, nhots, hot_shape.nbuckets); /* f.id * 21089245 */
  for (size_t k = 0; k < nhots; k++) {
    uint32_t h = hot_order[nhots - 1 - k].item;
    list[k] = (ranked){fs[hots[h].func].direct, 0, h};
  }
  free(hot_order);
  sort_ranked(list, nhots);
  *hots_out = hots;
  *nhots_out = nhots;
  return list;
}

/* A hot function's lines: its bytes and share, its top locations, and
 * the callers that carry enough of its allocations. *locs is scratch. */
static void print_hot(state *s, const mt_trace_info *info, int64_t total_samples, hot *ho,
                      ranked **locs, size_t *locs_cap, mt_out *o) {
  const double wordsize = 8.; /* as memtrace: not the trace's word size */
  func *fs = s->funcs, *al = &fs[ho->func];
  double freq = (double)al->direct / (double)total_samples;
  double bytes = (double)al->direct / info->sample_rate * wordsize;
  print_bytes(o, bytes);
  mt_out_printf(o, " (%4.1f%%) at %s (%s:", 100. * freq, al->name, al->filename);

  /* the function's locations: consed (newest first), sorted by count */
  size_t nlocs = 0;
  for (uint32_t e = al->newest_loc; e != NONE; e = s->entries[e].older) {
    *locs = grow_array(*locs, locs_cap, nlocs + 1, sizeof **locs);
    (*locs)[nlocs++] = (ranked){s->entry_count[e], 0, e};
  }
  sort_ranked(*locs, nlocs);
  int printed = 0;
  for (size_t i = 0; i < nlocs; i++) {
    const loc_entry *le = &s->entries[(*locs)[i].item];
    if (s->entry_count[(*locs)[i].item] <= 0) continue;
    if (printed < 3)
      mt_out_printf(o, "%s%u:%u-%u", printed ? ", " : "", le->line, le->start_char, le->end_char);
    else if (printed == 3)
      mt_out_str(o, "...");
    printed++;
  }
  mt_out_str(o, ")\n");

  /* callers: consed, so reversed, then sorted by frequency */
  ranked *c = ho->callers;
  for (size_t i = 0, j = ho->ncallers; i + 1 < j; i++, j--) {
    ranked t = c[i];
    c[i] = c[j - 1];
    c[j - 1] = t;
  }
  sort_ranked(c, ho->ncallers);
  int first = 1;
  for (size_t i = 0; i < ho->ncallers; i++) {
    uint32_t caller = c[i].item;
    int64_t f = c[i].weight;
    double rfreq = (double)f / (double)TOTAL_ALLOCS(s, caller);
    double cbytes = (double)f / info->sample_rate * wordsize;
    if ((double)TOTAL_ALLOCS(s, caller) / (double)total_samples > 0.005) {
      if (first) mt_out_str(o, "      including:\n");
      first = 0;
      mt_out_str(o, "    ");
      print_bytes(o, cbytes);
      mt_out_printf(o, " via %s (%.0f%% of this)\n", fs[caller].name, 100. * rfreq);
    }
  }
  mt_out_char(o, '\n');
}

static void report(state *s, const mt_trace_info *info, int64_t total_samples, mt_out *o) {
  const double wordsize = 8.; /* as memtrace: not the trace's word size */
  for (size_t e = 0; e < s->nentries; e++)
    s->funcs[s->entries[e].func].direct += s->entry_count[e];
  mt_out_printf(o, "Trace for %s [%" PRId64 "]:\n   %" PRId64 " samples of ",
                info->executable_name, (int64_t)info->pid, total_samples);
  print_bytes(o, (double)total_samples / info->sample_rate * wordsize);
  mt_out_str(o, " allocations\n\n");

  hot *hots;
  size_t nhots;
  ranked *list = hot_functions(s, total_samples, &hots, &nhots), *locs = NULL;
  size_t locs_cap = 0;
  for (size_t k = 0; k < nhots; k++)
    print_hot(s, info, total_samples, &hots[list[k].item], &locs, &locs_cap, o);
  free(locs);
  free(list);
  for (size_t k = 0; k < nhots; k++) free(hots[k].callers);
  free(hots);
}
#undef TOTAL_ALLOCS

static int run(int argc, char **argv) {
  const char *path;
  mt_cli_spec spec = {NULL, NULL, &path, 1, 1, "TRACE", 0, 0, NULL};
  mt_cli_parse(&mt_cmd_hotspots, argc, argv, &spec);

  mt_reader *r = mt_cli_open(path);
  mt_reader_skip(r, 1u << MT_EVENT_PROMOTE | 1u << MT_EVENT_COLLECT); /* allocations alone */
  state s = {0};
  s.r = r;
  if (hh_init(&s.hh) != 0) die_nomem();

  pass p;
  pass_init(&p, &s);
  mt_progress progress;
  mt_progress_start(&progress, r, "hotspots");
  mt_event ev;
  int rc;
  while ((rc = mt_reader_next(r, &ev)) > 0) {
    mt_progress_tick(&progress);
    if (ev.kind == MT_EVENT_ALLOC) pass_alloc(&p, &ev);
  }
  drain(&p);
  memo_flush(&p.m, &p.sink);
  mt_progress_end(&progress);
  mt_cli_finish(r, rc);

  mt_out out;
  mt_out_init(&out, STDOUT_FILENO);
  report(&s, mt_reader_info(r), p.total_samples, &out);
  mt_out_flush(&out);
  mt_out_free(&out);

  pass_free(&p);
  free(s.funcs);
  free(s.total_count);
  free(s.entries);
  free(s.entry_count);
  hh_free(&s.hh);
  code_table_free(&s.codes);
  mt__u64map_free(&s.func_ids);
  mt__u64map_free(&s.string_ids);
  mt__strtab_free(&s.strings);
  mt_reader_close(r);
  return 0;
}

const mt_command mt_cmd_hotspots = {
    "hotspots", "the functions that allocate most, and through which callers", usage, run};
