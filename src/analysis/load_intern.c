/* Backtraces interned while loading (load.c's pass): each object's
 * backtrace as code ids, hashed from the previous object's shared prefix
 * and looked up in an open-addressing table of distinct backtraces; a new
 * one is appended to the delta log with its allocation site. */
#include <stdlib.h>
#include <string.h>

#include "load_pass.h"

/* A code new to the analysis: the next id. */
static __attribute__((noinline)) int code_new(mt_analysis *a, uint64_t value, uint32_t *out) {
  size_t cap = a->code_cap;
  if (mt__load_grow((void **)&a->code_val, &cap, a->ncodes + 1, sizeof *a->code_val) ||
      mt__load_grow((void **)&a->code_described, &a->code_cap, a->ncodes + 1, 1))
    return -1;
  a->code_val[a->ncodes] = value;
  a->code_described[a->ncodes] = -1;
  if (mt__u64map_put(&a->code_index, value, (uint32_t)a->ncodes)) return -1;
  *out = (uint32_t)a->ncodes++;
  a->code_cache[mt__hash64(value) >> 48] = *out + 1;
  return 0;
}

static inline int code_id(mt_analysis *a, uint64_t value, uint32_t *out) {
  uint32_t id = mt__code_find(a, a->code_cache, value);
  if (__builtin_expect(id != 0, 1)) {
    *out = id - 1;
    return 0;
  }
  return code_new(a, value, out);
}

/* code_id of frame i of an event whose frames from `from` on have slots
 * (t): looked up, and given to the slot's tag. */
static __attribute__((noinline)) int code_id_untagged(mt_analysis *a, mt__bt_decoder *t,
                                                      size_t from, size_t i, uint64_t value,
                                                      uint32_t *out) {
  if (code_id(a, value, out)) return -1;
  if (i >= from) mt__bt_tag_set(t, i, value, *out + 1);
  return 0;
}

/* code_id of frame i of the event whose slots are t: from its slot's tag
 * when it has one (i >= from) that the code was given before. */
static inline __attribute__((always_inline)) int code_id_tagged(mt_analysis *a,
                                                                mt__bt_decoder *t,
                                                                size_t from, size_t i,
                                                                uint64_t value, uint32_t *out) {
  uint32_t id = i >= from ? mt__bt_tag_get(t, i, value) : 0;
  if (__builtin_expect(id != 0, 1)) {
    *out = id - 1;
    return 0;
  }
  return code_id_untagged(a, t, from, i, value, out);
}

/* Appends an unsigned LEB128 number to the backtrace log. */
static int log_uint(mt_analysis *a, uint64_t v) {
  if (a->log_cap - a->log_len < 10 &&
      mt__load_grow((void **)&a->log, &a->log_cap, a->log_len + 10, 1))
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
 * backtraces: 4e-7 for 4 million). The code, spread by an odd multiplier
 * (distinct codes stay distinct), is folded into the state, which is then
 * mixed by one 64x64->128-bit multiply, its halves xored (as wyhash mixes):
 * a step waits on one multiply, not a chain of them. */
static inline uint64_t hash_step(uint64_t h, uint64_t code) {
  unsigned __int128 x =
      (unsigned __int128)(h ^ (uint64_t)code * 0x9e3779b97f4a7c15ull) * 0xd6e8feb86659fd93ull;
  return (uint64_t)x ^ (uint64_t)(x >> 64);
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

/* A new distinct backtrace (p->prev_ids[0..n)), which shares `shared`
 * frames with the last one logged when that was the last object's
 * (SIZE_MAX: not known): logs it against the last one and finds its site:
 * the last frame the trace describes, skipping at most 2 undescribed ones
 * as memtrace does (else the last frame). */
static int add_backtrace(mt_analysis *a, pass *p, const mt_reader *r, const mt_event *ev,
                         size_t shared, uint64_t hash, size_t slot, uint32_t *out) {
  size_t n = ev->backtrace_len, b = a->nbt, k = 0;
  if (b >= UINT32_MAX - 2) return -1;
  if (b == a->bt_cap) {
    size_t nc = a->bt_cap ? a->bt_cap * 2 : 4096;
    uint32_t *si = mt__realloc_big(a->bt_site, nc * sizeof *si);
    if (si) a->bt_site = si;
    uint64_t *h = p->no_intern ? NULL : realloc(p->bt_hash, nc * sizeof *h);
    if (h) p->bt_hash = h;
    if (!si || (!h && !p->no_intern)) return -1;
    a->bt_cap = nc;
  }
  if (b % MT__LOG_CHECKPOINT != 0) {
    if (shared != SIZE_MAX) k = shared;
    else
      while (k < n && k < p->last_len && p->prev_ids[k] == p->last_ids[k]) k++;
  } else {
    if (mt__load_grow((void **)&a->checkpoints, &a->checkpoints_cap, a->ncheckpoints + 1,
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
  p->logged_last = 1;
  a->bt_codes_total += n;
  /* an anonymous mapping's own frame, innermost: the site is its caller */
  size_t from = n && code_kind(a, r, ev, p->prev_ids[n - 1], 0) == CODE_MAPPING && n > 1;
  if (p->bt_mapping_cap <= b / 8 &&
      mt__load_grow((void **)&p->bt_mapping, &p->bt_mapping_cap, b / 8 + 1, 1))
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

/* Room for a backtrace of n frames in the previous object's arrays; 0, or
 * -1 (no memory). */
static __attribute__((noinline)) int prev_grow(pass *p, size_t n) {
  size_t nc = (n + 1) * 2;
  void **const cols[] = {(void **)&p->prev_codes, (void **)&p->prev_ids,
                         (void **)&p->prefix_hash};
  const size_t sizes[] = {sizeof *p->prev_codes, sizeof *p->prev_ids, sizeof *p->prefix_hash};
  if (mt__realloc_columns(cols, sizes, 3, nc, realloc)) return -1;
  p->prev_cap = nc;
  return 0;
}

static inline int prev_room(pass *p, size_t n) {
  return n + 1 <= p->prev_cap ? 0 : prev_grow(p, n);
}

/* The codes of ev's frames from `lo` on, in p->prev_codes, and their ids,
 * in p->prev_ids: those of the frames ev's event decoded from their slots'
 * tags, the others looked up (frames an earlier event decoded, shared by
 * ev). 0, or -1 (no memory). */
static inline __attribute__((always_inline)) int take_ids(mt_analysis *a, pass *p,
                                                      const mt_reader *r,
                                                      const mt_event *ev, size_t lo) {
  size_t n = ev->backtrace_len;
  mt__bt_decoder *t = lo < n ? mt__bt_tags_of(&p->tags_seen, r, ev) : NULL;
  size_t from = t ? mt__bt_tags_from(ev) : n;
  for (size_t i = lo; i < n; i++) {
    p->prev_codes[i] = ev->backtrace[i];
    if (code_id_tagged(a, t, from, i, ev->backtrace[i], &p->prev_ids[i])) return -1;
  }
  p->ids_valid = n;
  return 0;
}

/* ev's backtrace becomes the previous object's, with its code ids, given
 * the k frames it shares with it. 0, or -1 (no memory). */
static inline __attribute__((always_inline)) int take_codes(mt_analysis *a, pass *p,
                                                        const mt_reader *r,
                                                        const mt_event *ev, size_t k) {
  size_t n = ev->backtrace_len;
  if (prev_room(p, n)) return -1;
  if (take_ids(a, p, r, ev, p->ids_valid < k ? p->ids_valid : k)) return -1;
  p->prev_domain = ev->domain;
  p->prev_len = n;
  return 0;
}

int mt__note_codes(mt_analysis *a, pass *p, const mt_reader *r, const mt_event *ev) {
  size_t n = ev->backtrace_len, from = mt__bt_tags_from(ev);
  mt__bt_decoder *t = mt__bt_tags_of(&p->tags_seen, r, ev);
  if (!t) /* a reader of several traces: no slots, the codes compared */
    return take_codes(a, p, r, ev, mt__frames_shared(ev, p->prev_domain, p->prev_codes, p->prev_len));
  /* The frames the event decoded: those before them were decoded for an
   * earlier allocation of the domain, whose codes have ids. The previous
   * object's arrays are not kept: nothing reads them once objects are no
   * longer interned (when the reader gives slots, it always does). */
  for (size_t i = from; i < n; i++) {
    uint32_t id;
    if (code_id_tagged(a, t, from, i, ev->backtrace[i], &id)) return -1;
  }
  return 0;
}

/* The backtrace id of the object being added: the hash of its codes (from
 * the previous object's prefix hashes, so only frames past the shared
 * prefix cost anything) looked up in the intern table. The hash is of the
 * codes themselves, not their ids: a backtrace met before needs no id,
 * and on a trace whose backtraces recur, as most do, finding the ids
 * frame by frame would be most of the lookup's cost. The ids are found for
 * a new backtrace, which is logged by them: its frames from where they
 * were last known (ids_valid), every frame past it since being one of an
 * interned backtrace, or of this one. */
int mt__intern_backtrace(mt_analysis *a, pass *p, const mt_reader *r, const mt_event *ev,
                            uint32_t *out) {
  size_t n = ev->backtrace_len,
         k = mt__frames_shared(ev, p->prev_domain, p->prev_codes, p->prev_len);
  int same = k == n && n == p->prev_len && a->nobj > 0;
  /* the frames shared with the last backtrace logged, if known */
  size_t shared = p->logged_last ? k : SIZE_MAX;
  if (p->no_intern) { /* no lookup: no hash */
    if (take_codes(a, p, r, ev, k)) return -1;
    if (same) *out = p->prev_bt;
    else if (add_backtrace(a, p, r, ev, shared, 0, 0, out)) return -1;
    p->prev_bt = *out;
    return 0;
  }
  if (prev_room(p, n)) return -1;
  if (k < p->ids_valid) p->ids_valid = k;
  /* the chain through a register, not through the stored prefix hashes:
   * a store and its reload would add their latency to every step */
  uint64_t h = k ? p->prefix_hash[k] : 0x243f6a8885a308d3ull;
  for (size_t i = k; i < n; i++) {
    uint64_t code = ev->backtrace[i];
    p->prev_codes[i] = code;
    h = hash_step(h, code);
    p->prefix_hash[i + 1] = h;
  }
  p->prev_domain = ev->domain;
  p->prev_len = n;
  h = hash_step(h, (uint32_t)n ^ 0x5bd1e995u);
  if (!p->slots && rehash(p, 0)) return -1;
  size_t cap = p->nslots, j = home_slot(h, cap);
  for (; p->slots[j]; j = j + 1 == cap ? 0 : j + 1) {
    uint32_t b = p->slots[j] - 1;
    if (p->bt_hash[b] == h) {
      *out = p->prev_bt = b;
      p->logged_last = b + 1 == a->nbt; /* the last logged, again */
      return 0;
    }
  }
  if (take_ids(a, p, r, ev, p->ids_valid) || add_backtrace(a, p, r, ev, shared, h, j, out))
    return -1;
  p->prev_bt = *out;
  return 0;
}
