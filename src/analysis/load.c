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

/* Grows an array of `size`-byte elements to hold at least `need`. */
static int grow(void **p, size_t *cap, size_t need, size_t size) {
  return mt__grow(p, cap, need, size, 1024);
}

int mt__grow_objects(mt_analysis *a, size_t need) {
  if (need <= a->obj_cap) return 0;
  size_t nc = a->obj_cap ? a->obj_cap * 2 : 65536;
  if (nc < need) nc = need;
  uint32_t *at = realloc(a->alloc_t, nc * sizeof *at);
  if (at) a->alloc_t = at;
  uint32_t *ft = realloc(a->free_t, nc * sizeof *ft);
  if (ft) a->free_t = ft;
  uint32_t *st = realloc(a->bt, nc * sizeof *st);
  if (st) a->bt = st;
  uint16_t *ns = realloc(a->nsamples, nc * sizeof *ns);
  if (ns) a->nsamples = ns;
  uint32_t *ln = realloc(a->length, nc * sizeof *ln);
  if (ln) a->length = ln;
  uint8_t *so = realloc(a->source, nc * sizeof *so);
  if (so) a->source = so;
  if (!at || !ft || !st || !ns || !ln || !so) return -1;
  if (a->ntraces > 1) {
    uint16_t *tr = realloc(a->trace_of, nc * sizeof *tr);
    if (!tr) return -1;
    a->trace_of = tr;
  }
  a->obj_cap = nc;
  return 0;
}

/* An object's key in the side table: its index, or its id while a
 * live-only load moves objects (side_key). */
static uint64_t side_key(const mt_analysis *a, size_t obj, unsigned kind) {
  return (a->side_key ? a->side_key[obj] : (uint64_t)obj) << 2 | kind;
}

uint64_t mt__side_get(const mt_analysis *a, size_t obj, unsigned kind) {
  uint32_t *ix = mt__u64map_get(&a->side, side_key(a, obj, kind));
  return ix ? a->side_vals[*ix - 1] : 0;
}

int mt__side_put(mt_analysis *a, size_t obj, unsigned kind, uint64_t v) {
  if (grow((void **)&a->side_vals, &a->side_cap, a->nside + 1, sizeof *a->side_vals))
    return -1;
  a->side_vals[a->nside] = v;
  if (mt__u64map_put(&a->side, side_key(a, obj, kind), (uint32_t)a->nside)) return -1;
  a->nside++;
  return 0;
}

/* ---- codes, functions, stacks ---- */

static int code_id(mt_analysis *a, uint64_t value, uint32_t *out) {
  /* Most frames repeat recent codes: a direct-mapped cache answers them
   * without the hash map. */
  uint32_t *slot = &a->code_cache[mt__hash64(value) >> 48];
  if (*slot && a->code_val[*slot - 1] == value) {
    *out = *slot - 1;
    return 0;
  }
  uint32_t *ix = mt__u64map_get(&a->code_index, value);
  if (ix) {
    *out = *ix - 1;
    *slot = *ix;
    return 0;
  }
  size_t cap = a->code_cap;
  if (grow((void **)&a->code_val, &cap, a->ncodes + 1, sizeof *a->code_val) ||
      grow((void **)&a->code_described, &a->code_cap, a->ncodes + 1, 1))
    return -1;
  a->code_val[a->ncodes] = value;
  a->code_described[a->ncodes] = -1;
  if (mt__u64map_put(&a->code_index, value, (uint32_t)a->ncodes)) return -1;
  *out = (uint32_t)a->ncodes++;
  *slot = *out + 1;
  return 0;
}

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
  if (grow((void **)&a->fn_name, &cap, a->nfn + 1, sizeof *a->fn_name) ||
      grow((void **)&a->fn_file, &a->fn_cap, a->nfn + 1, sizeof *a->fn_file))
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
  if (grow((void **)&a->frames, &a->frames_cap, a->nframes + n + 1, sizeof *a->frames))
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
  if (grow((void **)&a->code_first, &cap, a->ncodes + 1, sizeof *a->code_first) ||
      grow((void **)&a->code_n, &a->code_meta_cap, a->ncodes + 1, sizeof *a->code_n))
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

/* Records that live samples went from `before` to `after` at time t. */
static void live_change(mt_analysis *a, uint64_t t, double before, double after) {
  size_t i;
  while ((i = (size_t)(t / a->bin_width)) >= MT__ENVELOPE_BINS) coarsen(a);
  if (i >= a->nbins_used) {
    /* bins skipped over stay flat at the last value */
    for (size_t j = a->nbins_used; j < i; j++) a->bins[j] = (mt__bin){before, before, before, 1};
    a->nbins_used = i + 1;
    a->bins[i].touched = 0;
  }
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


/* Appends an unsigned LEB128 number to the backtrace log. */
static int log_uint(mt_analysis *a, uint64_t v) {
  if (a->log_cap - a->log_len < 10 &&
      grow((void **)&a->log, &a->log_cap, a->log_len + 10, 1))
    return -1;
  uint8_t *p = a->log + a->log_len;
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  a->log_len = (size_t)(p - a->log);
  return 0;
}

/* One step of the backtrace hash: a full 64-bit mix per code, so that
 * sequences collide only by chance (about n^2 / 2^65 for n distinct
 * backtraces: 4e-7 for 4 million). */
static inline uint64_t hash_step(uint64_t h, uint32_t code) {
  h ^= code + 0x9e3779b97f4a7c15ull + (h << 6);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

static int grow_u32(uint32_t **p, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  size_t nc = need * 2;
  uint32_t *q = realloc(*p, nc * sizeof *q);
  if (!q) return -1;
  *p = q;
  *cap = nc;
  return 0;
}

/* A hash's home slot among cap: its high bits scaled (any cap works, so the
 * table grows by half, not double: on a trace of millions of distinct
 * backtraces the table is the load's largest transient). */
static inline size_t home_slot(uint64_t h, size_t cap) {
  return (size_t)(((unsigned __int128)h * cap) >> 64);
}

static int rehash(pass *p, size_t nbt) {
  size_t cap = p->nslots ? p->nslots + p->nslots / 2 : 4096;
  uint32_t *s = calloc(cap, sizeof *s);
  if (!s) return -1;
  for (size_t b = 0; b < nbt; b++) {
    size_t j = home_slot(p->bt_hash[b], cap);
    while (s[j]) j = j + 1 == cap ? 0 : j + 1;
    s[j] = (uint32_t)b + 1;
  }
  free(p->slots);
  p->slots = s;
  p->nslots = cap;
  return 0;
}

enum { CODE_UNDESCRIBED = 0, CODE_DESCRIBED = 1, CODE_MAPPING = 2 };

/* What code id c, the frame `back` places from the innermost of ev's
 * backtrace, is: asked of the reader once (a code's location event
 * precedes its first use). */
static int code_kind(mt_analysis *a, const mt_reader *r, const mt_event *ev, uint32_t c,
                     size_t back) {
  if (a->code_described[c] < 0) {
    size_t nl;
    const mt_location *l = mt_reader_lookup(r, ev->backtrace[ev->backtrace_len - 1 - back], &nl);
    a->code_described[c] = !nl ? CODE_UNDESCRIBED
                           : nl == 1 && strcmp(l->filename, MT_MAPPING_FILENAME) == 0 &&
                                   strcmp(l->defname, MT_MAPPING_FUNCTION) == 0
                               ? CODE_MAPPING
                               : CODE_DESCRIBED;
  }
  return a->code_described[c];
}

/* A new distinct backtrace (p->prev_ids[0..n)): logs it against the last
 * one and finds its site: the last frame the trace describes, skipping at
 * most 2 undescribed ones as memtrace does (else the last frame). */
static int add_backtrace(mt_analysis *a, pass *p, const mt_reader *r, const mt_event *ev,
                         uint64_t hash, size_t slot, uint32_t *out) {
  size_t n = ev->backtrace_len, b = a->nbt, k = 0;
  if (b >= UINT32_MAX - 2) return -1;
  if (b == a->bt_cap) {
    size_t nc = a->bt_cap ? a->bt_cap * 2 : 4096;
    uint32_t *si = realloc(a->bt_site, nc * sizeof *si);
    if (si) a->bt_site = si;
    uint64_t *h = p->no_intern ? NULL : realloc(p->bt_hash, nc * sizeof *h);
    if (h) p->bt_hash = h;
    if (!si || (!h && !p->no_intern)) return -1;
    a->bt_cap = nc;
  }
  if (b % MT__LOG_CHECKPOINT != 0) {
    while (k < n && k < p->last_len && p->prev_ids[k] == p->last_ids[k]) k++;
  } else {
    if (grow((void **)&a->checkpoints, &a->checkpoints_cap, a->ncheckpoints + 1,
             sizeof *a->checkpoints))
      return -1;
    a->checkpoints[a->ncheckpoints++] = a->log_len;
  }
  if (grow_u32(&p->last_ids, &p->last_cap, n) || log_uint(a, k) || log_uint(a, n - k))
    return -1;
  for (size_t i = k; i < n; i++) {
    if (log_uint(a, p->prev_ids[i])) return -1;
    p->last_ids[i] = p->prev_ids[i];
  }
  p->last_len = n;
  a->bt_codes_total += n;
  /* an anonymous mapping's own frame, innermost: the site is its caller */
  size_t from = n && code_kind(a, r, ev, p->prev_ids[n - 1], 0) == CODE_MAPPING && n > 1;
  if (p->bt_mapping_cap <= b / 8 &&
      grow((void **)&p->bt_mapping, &p->bt_mapping_cap, b / 8 + 1, 1))
    return -1;
  if (!(b % 8)) p->bt_mapping[b / 8] = 0;
  if (from) p->bt_mapping[b / 8] |= (uint8_t)(1u << (b % 8));
  uint32_t site = MT__NO_SITE;
  for (size_t back = from; back < from + 3 && back < n; back++) {
    if (code_kind(a, r, ev, p->prev_ids[n - 1 - back], back) != CODE_UNDESCRIBED) {
      site = p->prev_ids[n - 1 - back];
      break;
    }
  }
  if (site == MT__NO_SITE && n) site = p->prev_ids[n - 1 - from];
  a->bt_site[b] = site;
  a->nbt++;
  *out = (uint32_t)b;
  if (p->no_intern) return 0;
  p->bt_hash[b] = hash;
  p->slots[slot] = (uint32_t)b + 1;
  if (a->nbt * 4 <= p->nslots * 3) return 0; /* load <= 3/4 keeps probes short */
  if (a->nbt >= MT__INTERN_TRIAL && a->nbt * 2 > a->nobj + 1) {
    /* Most backtraces are new (a trace of nearly all distinct stacks):
     * interning would cost more (~14 bytes per backtrace while loading)
     * than it saves. From here on, an object shares a backtrace id only
     * with the object before it when their backtraces are equal. */
    free(p->slots);
    free(p->bt_hash);
    p->slots = NULL;
    p->bt_hash = NULL;
    p->nslots = 0;
    p->no_intern = 1;
    a->bt_distinct = 0;
    return 0;
  }
  return rehash(p, a->nbt);
}

/* The backtrace id of the object being added: its codes' hash (from the
 * previous object's prefix hashes, so only frames past the shared prefix
 * cost anything) looked up in the intern table. */
static int intern_backtrace(mt_analysis *a, pass *p, const mt_reader *r, const mt_event *ev,
                            uint32_t *out) {
  size_t n = ev->backtrace_len, k = 0;
  while (k < n && k < p->prev_len && ev->backtrace[k] == p->prev_codes[k]) k++;
  if (n + 1 > p->prev_cap) {
    size_t nc = (n + 1) * 2;
    uint64_t *c = realloc(p->prev_codes, nc * sizeof *c);
    if (c) p->prev_codes = c;
    uint32_t *d = realloc(p->prev_ids, nc * sizeof *d);
    if (d) p->prev_ids = d;
    uint64_t *h = realloc(p->prefix_hash, nc * sizeof *h);
    if (h) p->prefix_hash = h;
    if (!c || !d || !h) return -1;
    p->prev_cap = nc;
  }
  p->prefix_hash[0] = 0x243f6a8885a308d3ull;
  for (size_t i = k; i < n; i++) {
    uint32_t code;
    if (code_id(a, ev->backtrace[i], &code)) return -1;
    p->prev_codes[i] = ev->backtrace[i];
    p->prev_ids[i] = code;
    p->prefix_hash[i + 1] = hash_step(p->prefix_hash[i], code);
  }
  int same = k == n && n == p->prev_len && a->nobj > 0;
  p->prev_len = n;
  if (p->no_intern) {
    if (same) *out = p->prev_bt;
    else if (add_backtrace(a, p, r, ev, 0, 0, out)) return -1;
    p->prev_bt = *out;
    return 0;
  }
  uint64_t h = hash_step(p->prefix_hash[n], (uint32_t)n ^ 0x5bd1e995u);
  if (!p->slots && rehash(p, 0)) return -1;
  size_t cap = p->nslots, j = home_slot(h, cap);
  for (; p->slots[j]; j = j + 1 == cap ? 0 : j + 1) {
    uint32_t b = p->slots[j] - 1;
    if (p->bt_hash[b] == h) {
      *out = p->prev_bt = b;
      return 0;
    }
  }
  if (add_backtrace(a, p, r, ev, h, j, out)) return -1;
  p->prev_bt = *out;
  return 0;
}

static int find_object(const pass *p, uint64_t id, size_t nobj, size_t *out) {
  if (p->keep_live) return mt__live_find(p, id, nobj, out);
  uint32_t *ix = p->diverged ? mt__u64map_get(&p->ids, id) : NULL;
  if (ix) *out = *ix - 1;
  else if (id < (p->diverged ? p->diverged_at : nobj)) *out = (size_t)id;
  else return -1;
  return 0;
}

static int on_alloc(mt_analysis *a, pass *p, const mt_reader *r, const mt_event *ev,
                    uint64_t t) {
  if (mt__grow_objects(a, a->nobj + 1)) return -1;
  size_t i = a->nobj;
  uint32_t bt;
  if (intern_backtrace(a, p, r, ev, &bt)) return -1;
  if (!p->keep_live && !p->diverged && ev->obj_id != i) {
    p->diverged = 1;
    p->diverged_at = i;
  }
  if (p->diverged && (i > UINT32_MAX - 2 || mt__u64map_put(&p->ids, ev->obj_id, (uint32_t)i)))
    return -1;
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
  if (a->source[i] & MT__OBJ_PROMOTED) return 0;
  a->source[i] |= MT__OBJ_PROMOTED;
  return mt__side_put(a, i, MT__SIDE_PROMOTE, t);
}

static int on_collect(mt_analysis *a, pass *p, const mt_event *ev, uint64_t t) {
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
    a->ht_v[w] = (1.0 - pr) / (pr * pr);
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
  rc = mt__pass_read(a, &p, r, 0, progress, ctx, NULL);
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
  }
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
  if (a->live_only) return a->fold_site ? MT_KEEP_SITES : MT_KEEP_LIVE;
  return a->fold_tally ? MT_KEEP_FOLDED : MT_KEEP_ALL;
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
  if (keep != MT_KEEP_ALL && keep != MT_KEEP_LIVE)
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
                    a->checkpoints, a->source, a->side_vals,   a->code_val, a->code_first,
                    a->code_n,   a->frames,    a->fn_name,     a->fn_file,  a->bt_fp,
                    a->trace_of, a->trace_end, a->fold_tally, a->fold_site, a->fold_site_code,
                    a->bt_all};
  for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++) free(arrays[i]);
  mt__live_cache_drop(a);
  mt__u64map_free(&a->side);
  mt__u64map_free(&a->code_index);
  mt__u64map_free(&a->fn_index);
  mt__strtab_free(&a->strings);
  free(a);
}

const char *mt_analysis_error(const mt_analysis *a) { return a ? a->err : "out of memory"; }
const char *mt_analysis_warning(const mt_analysis *a) { return a->has_warn ? a->warn : NULL; }
uint64_t mt_analysis_error_offset(const mt_analysis *a) { return a ? a->err_off : MT_NO_OFFSET; }
uint64_t mt_analysis_truncated(const mt_analysis *a) { return a->truncated_off; }
