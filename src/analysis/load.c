/* The loading pass: one read of the trace into the analysis tables. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "load_pass.h"

static int fail(mt_analysis *a, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(mt_analysis *a, int status, const char *fmt, ...) {
  if (a->status < 0) return a->status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(a->err, sizeof a->err, fmt, ap);
  va_end(ap);
  a->status = status;
  return status;
}

static int nomem(mt_analysis *a) { return fail(a, MT_ERR_NOMEM, "out of memory"); }

int mt__grow_objects(mt_analysis *a, size_t need) {
  if (need <= a->obj_cap) return 0;
  size_t nc = a->obj_cap ? a->obj_cap * 2 : 65536;
  if (nc < need) nc = need;
  /* the trace of each object, last, only when there are several */
  void **const cols[] = {(void **)&a->alloc_t,  (void **)&a->free_t, (void **)&a->bt,
                         (void **)&a->nsamples, (void **)&a->length, (void **)&a->source,
                         (void **)&a->trace_of};
  const size_t sizes[] = {sizeof *a->alloc_t,  sizeof *a->free_t, sizeof *a->bt,
                          sizeof *a->nsamples, sizeof *a->length, sizeof *a->source,
                          sizeof *a->trace_of};
  if (mt__realloc_columns(cols, sizes, a->ntraces > 1 ? 7 : 6, nc, mt__realloc_big)) return -1;
  a->obj_cap = nc;
  return 0;
}

/* ---- functions and the codes' frames ---- */

static int function_id(mt_analysis *a, const char *name, const char *file, uint32_t *out) {
  /* Functions are identified by name and file, as memtrace's tools do. */
  size_t ln = strlen(name), lf = strlen(file);
  char small[512], *key = ln + lf + 2 <= sizeof small ? small : malloc(ln + lf + 2);
  if (!key) return -1;
  memcpy(key, name, ln);
  key[ln] = '\n'; /* names and files never hold a newline in practice */
  memcpy(key + ln + 1, file, lf + 1);
  const char *k = mt__strtab_intern(&a->strings, key, ln + lf + 1);
  if (key != small) free(key);
  if (!k) return -1;
  uint32_t *ix = mt__u64map_get(&a->fn_index, (uint64_t)(uintptr_t)k);
  if (ix) {
    *out = *ix - 1;
    return 0;
  }
  size_t cap = a->fn_cap;
  if (mt__load_grow((void **)&a->fn_name, &cap, a->nfn + 1, sizeof *a->fn_name) ||
      mt__load_grow((void **)&a->fn_file, &a->fn_cap, a->nfn + 1, sizeof *a->fn_file))
    return -1;
  a->fn_name[a->nfn] = mt__strtab_intern(&a->strings, name, ln);
  a->fn_file[a->nfn] = mt__strtab_intern(&a->strings, file, lf);
  if (!a->fn_name[a->nfn] || !a->fn_file[a->nfn]) return -1;
  if (mt__u64map_put(&a->fn_index, (uint64_t)(uintptr_t)k, (uint32_t)a->nfn)) return -1;
  *out = (uint32_t)a->nfn++;
  return 0;
}

/* Code c's locations from the reader's table, appended to the frames. */
static int describe(mt_analysis *a, const mt_reader *r, size_t c) {
  size_t n;
  const mt_location *l = mt_reader_lookup(r, a->code_val[c], &n);
  if (mt__load_grow((void **)&a->frames, &a->frames_cap, a->nframes + n + 1, sizeof *a->frames))
    return -1;
  a->code_first[c] = (uint32_t)a->nframes;
  a->code_n[c] = (uint32_t)n;
  for (size_t i = 0; i < n; i++) {
    mt_frame *f = &a->frames[a->nframes++];
    if (function_id(a, l[i].defname, l[i].filename, &f->function)) return -1;
    f->line = l[i].line;
    f->start_char = l[i].start_char;
    f->end_char = l[i].end_char;
  }
  return 0;
}

/* After the pass (after each step of one read in steps): the locations
 * of the codes seen since the last call. */
static int resolve_codes(mt_analysis *a, const mt_reader *r) {
  size_t cap = a->code_meta_cap;
  if (mt__load_grow((void **)&a->code_first, &cap, a->ncodes + 1, sizeof *a->code_first) ||
      mt__load_grow((void **)&a->code_n, &a->code_meta_cap, a->ncodes + 1, sizeof *a->code_n))
    return -1;
  for (size_t c = a->ncodes_resolved; c < a->ncodes; c++)
    if (describe(a, r, c)) return -1;
  a->ncodes_resolved = a->ncodes;
  return 0;
}

int mt__describe_late(mt_analysis *a, const mt_reader *r, uint32_t c) {
  if (a->code_n[c] || !mt_reader_lookup(r, a->code_val[c], &(size_t){0})) return 0;
  return describe(a, r, c) ? -1 : 1;
}

/* ---- live heap envelope ---- */

static void fill_bins(mt_analysis *a) {
  double prev = 0;
  for (size_t i = 0; i < a->nbins_used; i++) {
    mt__bin *b = &a->bins[i];
    if (!b->touched) *b = (mt__bin){prev, prev, prev, 1};
    prev = b->end;
  }
}

/* Halves the resolution: bins 2i and 2i+1 become bin i. */
static void coarsen(mt_analysis *a) {
  fill_bins(a);
  size_t n = (a->nbins_used + 1) / 2;
  for (size_t i = 0; i < n; i++) {
    mt__bin x = a->bins[2 * i];
    if (2 * i + 1 < a->nbins_used) {
      mt__bin y = a->bins[2 * i + 1];
      x.min = fmin(x.min, y.min);
      x.max = fmax(x.max, y.max);
      x.end = y.end;
    }
    a->bins[i] = x;
  }
  for (size_t i = n; i < MT__ENVELOPE_BINS; i++) a->bins[i].touched = 0;
  a->nbins_used = n;
  a->bin_width *= 2;
}

/* The bin of time t past the last one used (or before it): the bins
 * coarsened until it fits, those skipped over made flat at `before`. */
static __attribute__((noinline)) size_t bin_at(mt_analysis *a, uint64_t t, double before) {
  size_t i;
  while ((i = (size_t)(t / a->bin_width)) >= MT__ENVELOPE_BINS) coarsen(a);
  if (i >= a->nbins_used) {
    for (size_t j = a->nbins_used; j < i; j++) a->bins[j] = (mt__bin){before, before, before, 1};
    a->nbins_used = i + 1;
    a->bins[i].touched = 0;
  }
  return i;
}

/* Records that live samples went from `before` to `after` at time t. */
static inline void live_change(mt_analysis *a, uint64_t t, double before, double after) {
  /* events come in time order, bins are hundreds of them wide: t is
   * nearly always in the last bin used, found without a division */
  size_t i = a->nbins_used - 1;
  if (a->nbins_used == 0 || t - (uint64_t)i * a->bin_width >= a->bin_width)
    i = bin_at(a, t, before);
  mt__bin *b = &a->bins[i];
  if (!b->touched) *b = (mt__bin){before, before, before, 1};
  if (after < b->min) b->min = after;
  if (after > b->max) b->max = after;
  b->end = after;
}

/* ---- object times: 32 bits in a unit that grows with the trace ---- */

/* Returns t (us since the start) in the current unit, first coarsening the
 * unit (and every stored time) while t does not fit: exact to the
 * microsecond for traces under 71 minutes, then to 2 us, 4 us... */
static uint32_t store_time(mt_analysis *a, uint64_t t) {
  if ((t >> a->time_shift) >= MT__T_NEVER) {
    unsigned by = mt__time_shift(t, a->time_shift) - a->time_shift;
    a->time_shift += by;
    for (size_t i = 0; i < a->nobj; i++) {
      a->alloc_t[i] >>= by;
      if (a->free_t[i] != MT__T_NEVER) a->free_t[i] >>= by;
    }
  }
  return (uint32_t)(t >> a->time_shift);
}

/* ---- the pass ---- */

static int find_object(const pass *p, uint64_t id, size_t nobj, size_t *out) {
  if (p->keep_live) return mt__live_find(p, id, nobj, out);
  uint32_t *ix = p->diverged ? mt__u64map_get(&p->ids, id) : NULL;
  if (ix) *out = *ix - 1;
  else if (id < (p->diverged ? p->diverged_at : nobj)) *out = (size_t)id;
  else return -1;
  return 0;
}

/* Object i has id ev->obj_id, for find_object. 0, or -1 (no memory). */
static int note_id(pass *p, const mt_event *ev, size_t i) {
  if (!p->keep_live && !p->diverged && ev->obj_id != i) {
    p->diverged = 1;
    p->diverged_at = i;
  }
  if (p->diverged && (i > UINT32_MAX - 2 || mt__u64map_put(&p->ids, ev->obj_id, (uint32_t)i)))
    return -1;
  return 0;
}

/* ---- MT_KEEP_PROFILE: each object's fate, and past the interning, nothing else ---- */

/* Room in a->gone_bits for object i's bit, new bits clear. 0, or -1. */
static int gone_room(mt_analysis *a, pass *p, size_t i) {
  size_t need = i / 64 + 1;
  if (need <= p->gone_cap) return 0;
  size_t nc = p->gone_cap ? p->gone_cap * 2 : 1024;
  if (nc < need) nc = need;
  uint64_t *g = realloc(a->gone_bits, nc * sizeof *g);
  if (!g) return -1;
  memset(g + p->gone_cap, 0, (nc - p->gone_cap) * sizeof *g);
  a->gone_bits = g;
  p->gone_cap = nc;
  return 0;
}

static void set_gone(mt_analysis *a, size_t i) { a->gone_bits[i / 64] |= 1ull << (i % 64); }

/* The backtraces proved nearly all distinct while object i is being
 * added: objects from the next on are not kept. The fates of those kept
 * so far become bits. 0, or -1 (no memory). */
static int start_fates(mt_analysis *a, pass *p, size_t i) {
  if (gone_room(a, p, i)) return -1;
  for (size_t j = 0; j < i; j++)
    if (a->free_t[j] != MT__T_NEVER) set_gone(a, j);
  p->fates = 1;
  return 0;
}

/* Object i, not kept: its codes, for the samples of mt_profile's second
 * read, and its id, for its collection. */
static int alloc_fate(mt_analysis *a, pass *p, const mt_reader *r, const mt_event *ev) {
  size_t i = a->nobj;
  if (mt__note_codes(a, p, r, ev) || note_id(p, ev, i) || gone_room(a, p, i)) return -1;
  a->nobj++;
  a->reread_samples += ev->nsamples;
  return 0;
}

/* At the end: the objects kept while interning go too. The analysis keeps
 * the trace's info, duration, codes and functions, and each object's
 * fate; mt_profile reads the trace again. */
static void keep_fates_only(mt_analysis *a, uint64_t events, int to_end) {
  void *arrays[] = {a->alloc_t, a->free_t, a->nsamples, a->length, a->source,
                    a->bt,      a->trace_of, a->bt_site, a->log,  a->checkpoints};
  for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++) free(arrays[i]);
  a->alloc_t = a->free_t = a->length = a->bt = a->bt_site = NULL;
  a->nsamples = a->trace_of = NULL;
  a->source = a->log = NULL;
  a->checkpoints = NULL;
  mt__side_free(&a->side);
  a->reread = 1;
  a->reread_objects = a->nobj;
  a->reread_events = events;
  a->reread_to_end = to_end;
  a->reread_samples += a->all.samples; /* the objects kept while interning */
  a->nobj = a->obj_cap = a->nbt = a->bt_cap = a->log_len = a->log_cap = 0;
  a->ncheckpoints = a->checkpoints_cap = a->bt_codes_total = 0;
  memset(&a->all, 0, sizeof a->all);
  a->any_runtime = a->any_mapping = 0;
  a->peak_time = a->peak_samples = 0;
  a->nbins_used = 0;
}

static int on_alloc(mt_analysis *a, pass *p, const mt_reader *r, const mt_event *ev,
                    uint64_t t) {
  if (p->fates) return alloc_fate(a, p, r, ev);
  if (mt__grow_objects(a, a->nobj + 1)) return -1;
  size_t i = a->nobj;
  uint32_t bt;
  if (mt__intern_backtrace(a, p, r, ev, &bt) || note_id(p, ev, i)) return -1;
  if (p->keep_profile && p->no_intern && !p->fates && start_fates(a, p, i)) return -1;
  if (p->keep_live && mt__live_note(a, p, i, ev->obj_id)) return -1;
  uint8_t src = (uint8_t)ev->source;
  if (p->bt_mapping[bt / 8] & (1u << (bt % 8)) && ev->source == MT_SOURCE_EXTERNAL)
    src |= MT__OBJ_MAPPING;
  if (ev->length > UINT32_MAX) {
    src |= MT__OBJ_BIG_LENGTH;
    if (mt__side_put(a, i, MT__SIDE_LENGTH, ev->length)) return -1;
  }
  if (ev->nsamples > UINT16_MAX) { /* rare: > 64K samples in one block */
    src |= MT__OBJ_BIG_SAMPLES;
    if (mt__side_put(a, i, MT__SIDE_SAMPLES, ev->nsamples)) return -1;
  }
  a->alloc_t[i] = store_time(a, t);
  if (i && a->alloc_t[i] < a->alloc_t[i - 1]) a->alloc_sorted = 0;
  a->free_t[i] = MT__T_NEVER;
  a->bt[i] = bt;
  a->length[i] = (uint32_t)ev->length;
  a->nsamples[i] = (uint16_t)ev->nsamples;
  a->source[i] = src;
  if (a->trace_of) {
    a->trace_of[i] = (uint16_t)(ev->domain >> 16);
    p->live_by[a->trace_of[i]] += ev->nsamples;
  }
  a->nobj++;
  mt_tally one = {0};
  mt__tally_object(a, i, &one);
  mt_tally_add(&a->all, &one); /* the whole trace's, whatever is kept */
  a->any_runtime |= ev->source != MT_SOURCE_EXTERNAL;
  a->any_mapping |= (src & MT__OBJ_MAPPING) != 0;
  if (p->fold_at_alloc && mt__fold_alloc(a, p, i, t, &one)) return -1;
  uint64_t before = p->live;
  p->live += ev->nsamples;
  live_change(a, t, (double)before, (double)p->live);
  if (p->live > a->peak_samples) {
    a->peak_samples = p->live;
    a->peak_time = t;
  }
  return 0;
}

static int on_promote(mt_analysis *a, pass *p, const mt_event *ev, uint64_t t) {
  size_t i;
  if (find_object(p, ev->obj_id, a->nobj, &i)) {
    p->unknown_ids++;
    return 0;
  }
  if (p->fates) return 0; /* no profile value counts promotions */
  if (a->source[i] & MT__OBJ_PROMOTED) return 0;
  a->source[i] |= MT__OBJ_PROMOTED;
  return mt__side_put(a, i, MT__SIDE_PROMOTE, t);
}

/* A collection once objects are not kept: an object's first is its fate. */
static void collect_fate(mt_analysis *a, pass *p, const mt_event *ev, size_t nobj) {
  size_t i;
  if (find_object(p, ev->obj_id, nobj, &i)) p->unknown_ids++;
  else if (mt__reread_gone(a, i)) p->double_frees++;
  else set_gone(a, i);
}

static int on_collect(mt_analysis *a, pass *p, const mt_event *ev, uint64_t t) {
  if (p->fates) {
    collect_fate(a, p, ev, a->nobj);
    return 0;
  }
  size_t i;
  if (find_object(p, ev->obj_id, a->nobj, &i)) {
    p->unknown_ids++;
    return 0;
  }
  if (a->free_t[i] != MT__T_NEVER || (p->keep_live && p->gone[i])) {
    p->double_frees++;
    return 0;
  }
  if (!p->keep_live || p->fold || p->tl) a->free_t[i] = store_time(a, t);
  uint64_t ns = mt__obj_samples(a, i), before = p->live;
  p->live -= ns <= p->live ? ns : p->live;
  if (a->trace_of) {
    uint64_t *mine = &p->live_by[a->trace_of[i]];
    *mine -= ns <= *mine ? ns : *mine;
  }
  live_change(a, t, (double)before, (double)p->live);
  if (p->tl) mt__tl_fate(a, p->tl, i, t);
  if (p->fold && mt__fold_object(a, p, i)) return -1;
  return p->keep_live ? mt__live_collect(a, p, i) : 0;
}

/* Several traces read as one: a trace that has ended holds nothing from
 * the microsecond after its last event (a process frees everything as it
 * exits), so its live samples leave the live heap there, for the traces
 * that ended before `now` (us since the start). */
static void drop_ended(mt_analysis *a, pass *p, const mt_reader *r, uint64_t now) {
  uint64_t start = a->info.start_time;
  for (size_t k; (k = mt_reader_trace_finished(r, p->dropped)) != SIZE_MAX; p->dropped++) {
    uint64_t end = mt_reader_trace_end(r, k) - start;
    a->trace_end[k] = end;
    if (end + 1 > now) return; /* not yet: at a later event */
    uint64_t before = p->live;
    p->live -= p->live_by[k] <= p->live ? p->live_by[k] : p->live;
    p->live_by[k] = 0;
    live_change(a, end + 1, (double)before, (double)p->live);
  }
}

static void set_weights(mt_analysis *a) {
  double rate = a->info.sample_rate;
  a->word_bytes = a->info.word_size ? a->info.word_size / 8.0 : 8.0;
  a->log1m_rate = log1p(-rate);
  for (size_t w = 0; w < MT__HT_CACHE; w++) {
    double pr = w ? -expm1((double)w * a->log1m_rate) : 1.0;
    a->ht_w[w] = 1.0 / pr;
    mt__fx_of(1.0 / pr, a->ht_wfx[w]);
    mt__fx_of((1.0 - pr) / (pr * pr), a->ht_vfx[w]);
  }
}

static int copy_info(mt_analysis *a, const mt_trace_info *in) {
  a->info = *in;
  const char **s[] = {&a->info.executable_name, &a->info.host_name,
                      &a->info.runtime_params, &a->info.context};
  for (size_t i = 0; i < sizeof s / sizeof *s; i++)
    if (!(*s[i] = mt__strtab_intern(&a->strings, *s[i], strlen(*s[i])))) return -1;
  return 0;
}

mt_analysis *mt__analysis_new(void) {
  mt_analysis *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  a->bin_width = 250; /* us, doubled as the trace grows */
  a->err_off = a->truncated_off = MT_NO_OFFSET;
  a->bt_distinct = 1;
  a->alloc_sorted = 1;
  return a;
}

int mt__pass_begin(mt_analysis *a, pass *p, mt_reader *r, const mt__load_spec *how,
                   mt__query *fq) {
  mt_keep keep = how->keep;
  if (copy_info(a, mt_reader_info(r))) return nomem(a);
  set_weights(a);
  /* the timeline's conditions are decided on objects before any is dropped */
  if (how->tl && mt__tl_begin(a, how->tl)) return nomem(a);
  p->tl = how->tl;
  if (keep == MT_KEEP_FOLDED || keep == MT_KEEP_SITES) { /* its stack's aside */
    mt_filter cols = *how->fold;
    cols.inside = cols.not_inside = cols.hide = NULL;
    if (mt__query_init(fq, a, &cols) != MT_OK) return nomem(a);
    a->fold_filter = cols;
    p->fold = fq;
    p->fold_at_alloc = mt_filter_decided_at_allocation(&cols);
    p->fold_rows = keep == MT_KEEP_FOLDED;
    p->keep_live = 1;
  }
  /* after the fold's query, which would refuse a live-only analysis */
  if (keep == MT_KEEP_LIVE || keep == MT_KEEP_SITES) a->live_only = p->keep_live = 1;
  p->keep_profile = keep == MT_KEEP_PROFILE;
  size_t ntraces = mt_reader_trace_count(r);
  if (ntraces > 1) {
    a->ntraces = ntraces;
    a->trace_end = calloc(ntraces, sizeof *a->trace_end);
    p->live_by = calloc(ntraces, sizeof *p->live_by);
    if (!a->trace_end || !p->live_by) return nomem(a);
  }
  return MT_OK;
}

int mt__pass_read(mt_analysis *a, pass *p, mt_reader *r, uint64_t limit,
                  mt_progress_fn progress, void *ctx, uint64_t *count) {
  uint64_t start = a->info.start_time, n = 0, unused;
  if (!count) count = &unused;
  *count = 0;
  mt_event ev;
  int rc;
  while ((rc = mt_reader_next(r, &ev)) > 0) {
    uint64_t t = ev.time - start;
    a->duration = t;
    if (p->live_by) drop_ended(a, p, r, t);
    int err = 0;
    if (ev.kind == MT_EVENT_ALLOC) err = on_alloc(a, p, r, &ev, t);
    else if (ev.kind == MT_EVENT_PROMOTE) err = on_promote(a, p, &ev, t);
    else err = on_collect(a, p, &ev, t);
    if (err) return nomem(a);
    *count = ++n;
    if (n == limit) return 1;
    if (progress && (n & 0xffff) == 0) {
      uint64_t done, total;
      mt_reader_progress(r, &done, &total);
      int go = progress(ctx, done, total);
      if (go == MT_PROGRESS_END) return 1; /* the trace as if it ended here */
      if (go) return fail(a, MT_ERR_INVALID, "loading cancelled");
    }
  }
  if (rc < 0 && a->status >= 0) {
    fail(a, rc, "%s", mt_reader_error(r));
    a->err_off = mt_reader_error_offset(r);
  }
  return rc < 0 ? a->status : 0;
}

void mt__pass_free(pass *p) {
  free(p->prev_codes);
  free(p->prev_ids);
  free(p->prefix_hash);
  free(p->last_ids);
  free(p->slots);
  free(p->bt_hash);
  free(p->bt_mapping);
  mt__u64map_free(&p->ids);
  free(p->live_by);
}

int mt__pass_publish(mt_analysis *a, const pass *p, const mt_reader *r) {
  if (resolve_codes(a, r) || mt__expand_backtraces(a)) return nomem(a);
  fill_bins(a);
  a->truncated_off = mt_reader_truncated(r);
  const char *w = mt_reader_warning(r);
  if (w) snprintf(a->warn, sizeof a->warn, "%s", w);
  else if (p->unknown_ids || p->double_frees)
    snprintf(a->warn, sizeof a->warn,
             "%llu promotions/collections named objects the trace never "
             "allocated, %llu objects were collected twice; those events were "
             "ignored",
             (unsigned long long)p->unknown_ids, (unsigned long long)p->double_frees);
  a->has_warn = a->warn[0] != 0;
  return MT_OK;
}

static int run_pass(mt_analysis *a, mt_reader *r, const mt__load_spec *how,
                    mt_progress_fn progress, void *ctx) {
  pass p = {0};
  mt__query fq;
  int rc = mt__pass_begin(a, &p, r, how, &fq);
  if (rc != MT_OK) {
    mt__pass_free(&p);
    return rc;
  }
  uint64_t events;
  rc = mt__pass_read(a, &p, r, 0, progress, ctx, &events);
  int ended = rc == 1;
  if (ended) rc = 0;
  if (p.live_by) { /* every trace's end, ended before the last event or not */
    drop_ended(a, &p, r, a->duration);
    for (size_t k = 0; k < a->ntraces; k++) {
      a->trace_end[k] = mt_reader_trace_end(r, k) - a->info.start_time;
      /* ended early: a trace's reader has read one event ahead */
      if (ended && a->trace_end[k] > a->duration) a->trace_end[k] = a->duration;
    }
  }
  if (p.tl && p.keep_live && rc >= 0) /* those never collected: their fate is known now */
    for (size_t i = 0; i < a->nobj; i++)
      if (!p.gone[i]) mt__tl_fate(a, p.tl, i, MT_NEVER);
  if (p.fold && p.fold_rows && rc >= 0 && mt__fold_finish(a, &p)) rc = nomem(a);
  if (p.fold && !p.fold_rows && rc >= 0) mt__fold_sites_finish(a);
  if (p.keep_live && mt__live_compact(a, &p, 1) && rc >= 0) rc = nomem(a);
  if (p.fold) {
    free(p.site_slot);
    free(p.bt_sum);
    mt__query_free(&fq);
    free(p.rows);
    free(p.row_of);
  }
  if (p.fates && rc >= 0) keep_fates_only(a, events, !ended);
  if (rc >= 0) rc = mt__pass_publish(a, &p, r);
  mt__pass_free(&p);
  return rc;
}

static int load_reader(mt_analysis **out, mt_reader *r, const mt__load_spec *how,
                       mt_progress_fn progress, void *ctx) {
  mt_analysis *a = mt__analysis_new();
  *out = a;
  if (!a) return MT_ERR_NOMEM;
  return run_pass(a, r, how, progress, ctx);
}

int mt_analysis_load_reader(mt_analysis **out, mt_reader *r, mt_progress_fn progress,
                            void *ctx) {
  mt__load_spec all = {MT_KEEP_ALL, NULL, NULL};
  return load_reader(out, r, &all, progress, ctx);
}

int mt_analysis_load_many(mt_analysis **out, const char *const *paths, size_t n,
                          mt_progress_fn progress, void *ctx) {
  return mt_analysis_load_keep(out, paths, n, MT_KEEP_ALL, progress, ctx);
}

mt_keep mt_analysis_keeps(const mt_analysis *a) {
  if (a->reread) return MT_KEEP_PROFILE;
  if (a->live_only) return a->fold_site ? MT_KEEP_SITES : MT_KEEP_LIVE;
  return a->fold_tally ? MT_KEEP_FOLDED : MT_KEEP_ALL;
}

/* The traces' paths, for mt_profile to read them again. 0, or -1. */
static int keep_paths(mt_analysis *a, const char *const *paths, size_t n) {
  if (!(a->reread_paths = calloc(n, sizeof *a->reread_paths))) return -1;
  a->nreread_paths = n;
  for (size_t i = 0; i < n; i++)
    if (!(a->reread_paths[i] = strdup(paths[i]))) return -1;
  return 0;
}

int mt__load_paths(mt_analysis **out, const char *const *paths, size_t n,
                   const mt__load_spec *how, mt_progress_fn progress, void *ctx) {
  mt_reader *r;
  int rc = mt_reader_open_many(&r, paths, n);
  if (rc != MT_OK) {
    mt_analysis *a = mt__analysis_new();
    *out = a;
    if (a && r) {
      fail(a, rc, "%s", mt_reader_error(r));
      a->err_off = mt_reader_error_offset(r);
    }
    mt_reader_close(r);
    return a ? rc : MT_ERR_NOMEM;
  }
  rc = load_reader(out, r, how, progress, ctx);
  mt_reader_close(r);
  if (rc == MT_OK && (*out)->reread && keep_paths(*out, paths, n)) rc = nomem(*out);
  return rc;
}

/* An analysis that holds only why it was not loaded. */
static int refuse(mt_analysis **out, const char *why) {
  mt_analysis *a = mt__analysis_new();
  *out = a;
  return a ? fail(a, MT_ERR_INVALID, "%s", why) : MT_ERR_NOMEM;
}

int mt_analysis_load_keep(mt_analysis **out, const char *const *paths, size_t n, mt_keep keep,
                          mt_progress_fn progress, void *ctx) {
  if (keep != MT_KEEP_ALL && keep != MT_KEEP_LIVE && keep != MT_KEEP_PROFILE)
    return refuse(out, "a folded load takes its filter: mt_analysis_load_folded");
  mt__load_spec how = {keep, NULL, NULL};
  return mt__load_paths(out, paths, n, &how, progress, ctx);
}

int mt_analysis_load_folded(mt_analysis **out, const char *const *paths, size_t n,
                            const mt_filter *f, mt_progress_fn progress, void *ctx) {
  if (f->live == MT_LIVE_AT_PEAK)
    return refuse(out, "a folded load cannot select the objects live at the peak: the peak "
                       "is known only at the end");
  mt__load_spec how = {MT_KEEP_FOLDED, f, NULL};
  return mt__load_paths(out, paths, n, &how, progress, ctx);
}

int mt_analysis_load_sites(mt_analysis **out, const char *const *paths, size_t n,
                           const mt_filter *f, mt_progress_fn progress, void *ctx) {
  if (!mt_filter_decided_at_allocation(f))
    return refuse(out, "sums by site are made as objects are allocated: a condition on "
                       "being alive, collected or on lifetimes cannot be decided then");
  mt__load_spec how = {MT_KEEP_SITES, f, NULL};
  return mt__load_paths(out, paths, n, &how, progress, ctx);
}

int mt_analysis_load(mt_analysis **out, const char *path, mt_progress_fn progress,
                     void *ctx) {
  return mt_analysis_load_many(out, &path, 1, progress, ctx); /* one path: mt_reader_open */
}

void mt_analysis_free(mt_analysis *a) {
  if (!a) return;
  void *arrays[] = {a->alloc_t,  a->free_t,    a->nsamples,    a->length,   a->bt,
                    a->bt_site,  a->bt_flat,   a->bt_off,      a->log,      a->code_described,
                    a->checkpoints, a->source, a->code_val, a->code_first,
                    a->code_n,   a->frames,    a->fn_name,     a->fn_file,  a->bt_fp,
                    a->trace_of, a->trace_end, a->fold_tally, a->fold_site, a->fold_site_code,
                    a->bt_all, a->gone_bits};
  for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++) free(arrays[i]);
  for (size_t i = 0; i < a->nreread_paths; i++) free(a->reread_paths[i]);
  free(a->reread_paths);
  mt__live_cache_drop(a);
  mt__side_free(&a->side);
  mt__u64map_free(&a->code_index);
  mt__u64map_free(&a->fn_index);
  mt__strtab_free(&a->strings);
  free(a);
}

const char *mt_analysis_error(const mt_analysis *a) { return a ? a->err : "out of memory"; }
const char *mt_analysis_warning(const mt_analysis *a) { return a->has_warn ? a->warn : NULL; }
uint64_t mt_analysis_error_offset(const mt_analysis *a) { return a ? a->err_off : MT_NO_OFFSET; }
uint64_t mt_analysis_truncated(const mt_analysis *a) { return a->truncated_off; }
