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
#include "hotspots_hh.h"
#include "hotspots_memo.h"
#include "ocaml_hashtbl.h"
#include "output.h"
#include "progress.h"
#include "tables.h"

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

static void die_nomem(void) {
  fputs("memtrace hotspots: out of memory\n", stderr);
  exit(1);
}

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

/* Location codes -> their loc entry and function: open addressing, linear
 * probing, one slot read per lookup. */
typedef struct code_slot {
  uint64_t code;
  uint32_t entry, func; /* entry NONE: an empty slot */
} code_slot;

typedef struct code_table {
  code_slot *slots;
  size_t cap, count;
} code_table;

/* The slot of code, or the empty slot where it would go. */
static code_slot *code_find(code_table *t, uint64_t code) {
  if (t->cap == 0) {
    static code_slot none = {0, NONE, NONE};
    return &none;
  }
  size_t mask = t->cap - 1;
  size_t i = (size_t)mt__hash64(code) & mask;
  while (t->slots[i].entry != NONE && t->slots[i].code != code) i = (i + 1) & mask;
  return &t->slots[i];
}

static code_slot code_add(code_table *t, uint64_t code, uint32_t entry, uint32_t func) {
  if ((t->count + 1) * 2 > t->cap) {
    code_table g = {NULL, t->cap ? t->cap * 2 : 1024, 0};
    g.slots = malloc(g.cap * sizeof *g.slots);
    if (!g.slots) die_nomem();
    for (size_t i = 0; i < g.cap; i++) g.slots[i].entry = NONE;
    for (size_t i = 0; i < t->cap; i++)
      if (t->slots[i].entry != NONE) *code_find(&g, t->slots[i].code) = t->slots[i];
    g.count = t->count;
    free(t->slots);
    *t = g;
  }
  code_slot *c = code_find(t, code);
  *c = (code_slot){code, entry, func};
  t->count++;
  return *c;
}

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
  code_slot *known = code_find(&s->codes, bt[i]);
  if (known->entry != NONE) return *known;

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
  return code_add(&s->codes, bt[i], e, f);
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

static void report(state *s, const mt_trace_info *info, int64_t total_samples, mt_out *o) {
  const double wordsize = 8.; /* as memtrace: not the trace's word size */
  func *fs = s->funcs;
  for (size_t e = 0; e < s->nentries; e++) fs[s->entries[e].func].direct += s->entry_count[e];
#define TOTAL_ALLOCS(f) (s->total_count[f] + fs[f].direct)

  mt_out_printf(o, "Trace for %s [%" PRId64 "]:\n   %" PRId64 " samples of ",
                info->executable_name, (int64_t)info->pid, total_samples);
  print_bytes(o, (double)total_samples / info->sample_rate * wordsize);
  mt_out_str(o, " allocations\n\n");

  /* The heavy hitters, in the iteration order of memtrace's table. */
  heavy_hitters *hh = &s->hh;
  size_t nlive = 0;
  mt_ocaml_binding *order = malloc((hh->nused + 1) * sizeof *order);
  if (!order) die_nomem();
  for (size_t c = 0; c < hh->nused; c++) {
    if (hh->ctr[c].score == HH_FREE) continue;
    uint64_t caller = hh->ctr[c].key >> 32, allocator = (uint32_t)hh->ctr[c].key;
    /* a.id * 1231441 + b.id * 3821 (an OCaml int: the low bits agree) */
    order[nlive++] = (mt_ocaml_binding){caller * 1231441u + allocator * 3821u, hh->seq[c], (uint32_t)c};
  }
  mt_ocaml_shape hh_shape = mt_ocaml_shape_create(HH_K); /* never grows: size <= k */
  mt_ocaml_hashtbl_order(order, nlive, hh_shape.nbuckets);

  /* The allocating functions above 0.5%, each with its callers: memtrace's
   * hot_allocs table (Func_tbl.create 100, keyed by function). */
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
    double fn_freq = (double)TOTAL_ALLOCS(fn);
    double bound = 0.10 >= alloc_prop * 1.2 ? 0.10 : alloc_prop * 1.2; /* max */
    if (pair_freq / fn_freq > bound && pair_freq / (double)total_samples > 0.005) {
      ho->callers = grow_array(ho->callers, &ho->cap, ho->ncallers + 1, sizeof *ho->callers);
      ho->callers[ho->ncallers++] = (ranked){d1, 0, fn};
    }
  }
  free(order);
  mt__u64map_free(&hot_index);

  /* Func_tbl.fold conses: the list is the iteration order reversed; then
   * List.sort by direct allocations, heaviest first. */
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

  ranked *locs = NULL;
  size_t locs_cap = 0;
  for (size_t k = 0; k < nhots; k++) {
    hot *ho = &hots[list[k].item];
    func *al = &fs[ho->func];
    double freq = (double)al->direct / (double)total_samples;
    double bytes = (double)al->direct / info->sample_rate * wordsize;
    print_bytes(o, bytes);
    mt_out_printf(o, " (%4.1f%%) at %s (%s:", 100. * freq, al->name, al->filename);

    /* the function's locations: consed (newest first), sorted by count */
    size_t nlocs = 0;
    for (uint32_t e = al->newest_loc; e != NONE; e = s->entries[e].older) {
      locs = grow_array(locs, &locs_cap, nlocs + 1, sizeof *locs);
      locs[nlocs++] = (ranked){s->entry_count[e], 0, e};
    }
    sort_ranked(locs, nlocs);
    int printed = 0;
    for (size_t i = 0; i < nlocs; i++) {
      const loc_entry *le = &s->entries[locs[i].item];
      if (s->entry_count[locs[i].item] <= 0) continue;
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
      double rfreq = (double)f / (double)TOTAL_ALLOCS(caller);
      double cbytes = (double)f / info->sample_rate * wordsize;
      if ((double)TOTAL_ALLOCS(caller) / (double)total_samples > 0.005) {
        if (first) mt_out_str(o, "      including:\n");
        first = 0;
        mt_out_str(o, "    ");
        print_bytes(o, cbytes);
        mt_out_printf(o, " via %s (%.0f%% of this)\n", fs[caller].name, 100. * rfreq);
      }
    }
    mt_out_char(o, '\n');
  }
#undef TOTAL_ALLOCS
  free(locs);
  free(list);
  for (size_t k = 0; k < nhots; k++) free(hots[k].callers);
  free(hots);
}

static int run(int argc, char **argv) {
  const char *path = NULL;
  for (int i = 1; i < argc; i++) {
    if (mt_cli_is_help(argv[i])) return mt_cli_help(&mt_cmd_hotspots);
    if (strcmp(argv[i], "--") == 0 && i + 1 < argc && !path) path = argv[++i];
    else if (argv[i][0] == '-' && argv[i][1])
      mt_cli_usage_error(&mt_cmd_hotspots, "unknown option '%s'", argv[i]);
    else if (!path) path = argv[i];
    else mt_cli_usage_error(&mt_cmd_hotspots, "unexpected argument '%s'", argv[i]);
  }
  if (!path) mt_cli_usage_error(&mt_cmd_hotspots, "missing TRACE");

  mt_reader *r = mt_cli_open(path);
  state s = {0};
  s.r = r;
  if (hh_init(&s.hh) != 0) die_nomem();

  /* The previous backtrace, the function of each of its frames (those
   * before func_valid) and the hashes of each of its prefixes: a backtrace
   * mostly repeats the previous one's outer frames. */
  uint64_t *prev = NULL;
  memo_prefix *prefix_hash = NULL;
  uint32_t *func_at = NULL;
  size_t prev_len = 0, prev_cap = 0, func_at_cap = 0, hash_cap = 0, func_valid = 0;
  uint32_t *seen = NULL; /* per function: the allocation that last counted it */
  size_t seen_cap = 0;
  uint32_t stamp = 0, allocpt = NONE; /* the allocation point's loc entry */
  int64_t total_samples = 0;
  memo m;
  memo_init(&m, &s.hh);
  const memo_sink sink = {&s.entry_count, &s.total_count};
  mt_progress progress;
  mt_progress_start(&progress, r, "hotspots");
  mt_event ev;
  int rc;
  while ((rc = mt_reader_next(r, &ev)) > 0) {
    mt_progress_tick(&progress);
    if (ev.kind != MT_EVENT_ALLOC) continue;
    const uint64_t *bt = ev.backtrace;
    size_t n = ev.backtrace_len;
    int64_t nsamples = (int64_t)ev.nsamples;
    total_samples += nsamples;
    if (n == 0) continue; /* memtrace's tool fails on these; we skip them */
    prev = grow_array(prev, &prev_cap, n, sizeof *prev);
    func_at = grow_array(func_at, &func_at_cap, n, sizeof *func_at);
    size_t k = 0;
    while (k < n && k < prev_len && bt[k] == prev[k]) k++;

    uint64_t hash1 = 0, hash2 = 0;
    if (m.on) {
      prefix_hash = grow_array(prefix_hash, &hash_cap, n, sizeof *prefix_hash);
      memo_hash(bt, k, n, prefix_hash, &hash1, &hash2);
      memo_bt *b = memo_find(&m, hash1, hash2);
      if (b) {
        memcpy(prev + k, bt + k, (n - k) * sizeof *bt);
        prev_len = n;
        if (func_valid > k) func_valid = k;
        b->samples += nsamples;
        if (s.hh.sweeps < b->safe_until) {
          memo_hold(&m, b); /* its pairs are all there: hits, held back */
        } else {
          int64_t sweeps = s.hh.sweeps, low = INT64_MAX;
          uint32_t allocator = b->allocator;
          memo_caller *c = memo_callers(&m, b);
          for (uint32_t j = 0; j < b->ncallers; j++) {
            uint16_t got = hh_add_at(&s.hh, c[j].func, allocator, (uint16_t)c[j].counter);
            c[j].counter = got;
            if (got != HH_EMPTY && s.hh.ctr[got].score < low) low = s.hh.ctr[got].score;
          }
          b->safe_until = s.hh.sweeps == sweeps ? low : 0; /* 0: a pair was left out */
        }
        memo_check(&m, &sink, 1); /* may free b */
        continue;
      }
      memo_check(&m, &sink, 0);
    }

    /* The frames the previous backtrace shares, already described, whose
     * functions were not noted on a memo hit. */
    for (size_t i = func_valid; i < k; i++) func_at[i] = code_find(&s.codes, bt[i])->func;
    /* memtrace describes the allocation point first, then the callers from
     * the innermost out: new functions are numbered in that order. */
    for (size_t i = n; i-- > k;) {
      code_slot c = add_loc(&s, bt, i);
      if (i == n - 1) allocpt = c.entry;
      prev[i] = bt[i];
      func_at[i] = c.func;
    }
    if (k == n) allocpt = add_loc(&s, bt, n - 1).entry; /* a prefix of the last one */
    prev_len = func_valid = n;
    uint32_t allocator = func_at[n - 1];

    if (s.nfuncs > seen_cap) {
      size_t old = seen_cap;
      seen = grow_array(seen, &seen_cap, s.nfuncs, sizeof *seen);
      memset(seen + old, 0, (seen_cap - old) * sizeof *seen);
    }
    if (++stamp == 0) { /* wrapped: forget every mark */
      memset(seen, 0, seen_cap * sizeof *seen);
      stamp = 1;
    }
    if (m.on) {
      memo_caller *c = memo_open(&m, n);
      uint32_t nc = 0;
      int64_t sweeps = s.hh.sweeps, low = INT64_MAX;
      for (size_t i = n - 1; i-- > 0;) {
        uint32_t f = func_at[i];
        if (seen[f] == stamp) continue;
        seen[f] = stamp;
        uint16_t got = hh_add(&s.hh, f, allocator);
        c[nc++] = (memo_caller){f, got};
        if (got != HH_EMPTY && s.hh.ctr[got].score < low) low = s.hh.ctr[got].score;
      }
      if (s.hh.sweeps != sweeps) low = 0; /* a pair was left out */
      if (!memo_add(&m, hash1, hash2, nc, allocpt, allocator, nsamples, low)) {
        /* not memoized: count now */
        s.entry_count[allocpt] += nsamples;
        for (uint32_t j = 0; j < nc; j++) s.total_count[c[j].func] += nsamples;
      }
      continue;
    }
    s.entry_count[allocpt] += nsamples;
    for (size_t i = n - 1; i-- > 0;) {
      uint32_t f = func_at[i];
      if (seen[f] == stamp) continue;
      seen[f] = stamp;
      s.total_count[f] += nsamples;
      hh_add(&s.hh, f, allocator);
    }
  }
  memo_flush(&m, &sink);
  mt_progress_end(&progress);
  mt_cli_finish(r, rc);

  mt_out out;
  mt_out_init(&out, STDOUT_FILENO);
  report(&s, mt_reader_info(r), total_samples, &out);
  mt_out_flush(&out);
  mt_out_free(&out);

  free(prev);
  free(prefix_hash);
  free(func_at);
  memo_free(&m);
  free(seen);
  free(s.funcs);
  free(s.total_count);
  free(s.entries);
  free(s.entry_count);
  hh_free(&s.hh);
  free(s.codes.slots);
  mt__u64map_free(&s.func_ids);
  mt__u64map_free(&s.string_ids);
  mt__strtab_free(&s.strings);
  mt_reader_close(r);
  return 0;
}

const mt_command mt_cmd_hotspots = {
    "hotspots", "the functions that allocate most, and through which callers", usage, run};
