/* Several traces read as one (reader_many.h).
 *
 * Each trace has its own reader; their events are merged by time (the
 * wall clock: event times are microseconds since the epoch), ties by the
 * traces' order, through a binary heap of each reader's next event. What
 * names things inside one trace is made unique across them:
 * - objects get merged ids in allocation order; each trace keeps the
 *   merged id of each of its own (4 bytes an allocation);
 * - a code c of trace k becomes (k + 1) << 48 | c when c fits 48 bits (a
 *   return address, a location code), else 1 << 63 | a number, with the
 *   trace and the code kept aside; lookups go to trace k's reader;
 * - an event's domain is k << 16 | its own domain, so that a consumer
 *   pairing an allocation with the previous one of its domain
 *   (common_prefix) pairs it within its trace.
 * Traces of different rates are read at the lowest: each sample of a trace
 * at rate r is kept with probability lowest / r (memtrace subsample's
 * thinning, with a fixed seed), and an allocation left with no sample is
 * dropped with its later events. */
#include "reader_many.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/containers.h"
#include "base/rng.h"

#define CODE_BITS 48
#define CODE_MASK ((UINT64_C(1) << CODE_BITS) - 1)
#define WIDE_CODE (UINT64_C(1) << 63)
#define NO_ID UINT32_MAX
#define DROPPED (UINT32_MAX - 1) /* thinned to no sample: its events go too */

typedef struct sub {
  mt_reader *r;
  const char *path;
  mt_event ev; /* its next event, when ready */
  int ready;
  uint64_t end; /* time of its last event read */
  double keep;  /* each sample's chance to stay: 1 at the lowest rate */
  uint64_t id_base;
  uint32_t *ids; /* its object id - id_base -> merged id */
  size_t nids, ids_cap;
  mt__u64map wide; /* codes past 48 bits -> their number + 1 */
} sub;

struct mt__many {
  sub *subs;
  size_t n;
  size_t *heap, nheap;
  size_t *finished, nfinished; /* traces read to their end, in that order */
  mt_trace_info info;
  char exe[256], host[256], context[160];
  uint64_t next_id;
  mt__rng rng; /* thinning */
  uint64_t *bt;
  size_t bt_cap;
  uint32_t *wide_sub; /* codes past 48 bits: their trace and value */
  uint64_t *wide_code;
  size_t nwide, wide_cap, wide_code_cap;
  int status;
  char err[1024];
  uint64_t err_off;
};

/* ---- the heap of next events ---- */

static int before(const mt__many *m, size_t a, size_t b) {
  uint64_t ta = m->subs[a].ev.time, tb = m->subs[b].ev.time;
  return ta < tb || (ta == tb && a < b);
}

static void heap_push(mt__many *m, size_t k) {
  size_t i = m->nheap++;
  m->heap[i] = k;
  while (i && before(m, m->heap[i], m->heap[(i - 1) / 2])) {
    size_t p = (i - 1) / 2, t = m->heap[p];
    m->heap[p] = m->heap[i];
    m->heap[i] = t;
    i = p;
  }
}

static size_t heap_pop(mt__many *m) {
  size_t top = m->heap[0], i = 0;
  m->heap[0] = m->heap[--m->nheap];
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, s = i;
    if (l < m->nheap && before(m, m->heap[l], m->heap[s])) s = l;
    if (r < m->nheap && before(m, m->heap[r], m->heap[s])) s = r;
    if (s == i) return top;
    size_t t = m->heap[s];
    m->heap[s] = m->heap[i];
    m->heap[i] = t;
    i = s;
  }
}

static int fail_from(mt__many *m, const sub *s, int rc) {
  m->status = rc;
  snprintf(m->err, sizeof m->err, "%s", mt_reader_error(s->r));
  m->err_off = mt_reader_error_offset(s->r);
  return rc;
}

/* Reads trace k's next event into its slot, and queues it. */
static int refill(mt__many *m, size_t k) {
  sub *s = &m->subs[k];
  int rc = mt_reader_next(s->r, &s->ev);
  if (rc < 0) return fail_from(m, s, rc);
  s->ready = rc > 0;
  if (rc > 0) {
    s->end = s->ev.time;
    heap_push(m, k);
  } else {
    m->finished[m->nfinished++] = k;
  }
  return 0;
}

/* ---- opening ---- */

/* out = the traces' common value of a string field, or "N programs: a,
 * b, ..." (within n bytes) when they differ. */
static const char *common_text(mt__many *m, size_t field, char *out, size_t n,
                               const char *what) {
  const mt_trace_info *i0 = mt_reader_info(m->subs[0].r);
  const char *first = field ? i0->host_name : i0->executable_name;
  size_t k = 1;
  for (; k < m->n; k++) {
    const mt_trace_info *i = mt_reader_info(m->subs[k].r);
    if (strcmp(field ? i->host_name : i->executable_name, first) != 0) break;
  }
  if (k == m->n) return first;
  size_t at = (size_t)snprintf(out, n, "%zu traces of several %s:", m->n, what);
  for (k = 0; k < m->n && at + 1 < n; k++) {
    const mt_trace_info *i = mt_reader_info(m->subs[k].r);
    const char *v = field ? i->host_name : i->executable_name;
    int dup = 0;
    for (size_t j = 0; j < k && !dup; j++) {
      const mt_trace_info *o = mt_reader_info(m->subs[j].r);
      dup = strcmp(field ? o->host_name : o->executable_name, v) == 0;
    }
    if (!dup) at += (size_t)snprintf(out + at, n - at, " %s", v);
  }
  return out;
}

static int merge_info(mt__many *m) {
  const mt_trace_info *i0 = mt_reader_info(m->subs[0].r);
  m->info = *i0;
  double lowest = i0->sample_rate, highest = i0->sample_rate;
  for (size_t k = 1; k < m->n; k++) {
    const mt_trace_info *i = mt_reader_info(m->subs[k].r);
    if (i->word_size != i0->word_size) {
      snprintf(m->err, sizeof m->err,
               "%s and %s have different word sizes (%u and %u bits): they cannot be read as "
               "one trace",
               m->subs[0].path, m->subs[k].path, (unsigned)i0->word_size,
               (unsigned)i->word_size);
      m->err_off = MT_NO_OFFSET;
      return MT_ERR_INVALID;
    }
    if (i->sample_rate < lowest) lowest = i->sample_rate;
    if (i->sample_rate > highest) highest = i->sample_rate;
    if (i->start_time < m->info.start_time) m->info.start_time = i->start_time;
    if (i->version > m->info.version) m->info.version = i->version;
  }
  for (size_t k = 0; k < m->n; k++) m->subs[k].keep = lowest / mt_reader_info(m->subs[k].r)->sample_rate;
  m->info.sample_rate = lowest;
  mt__rng_seed(&m->rng, 0x6d656d7472616365ull);
  m->info.executable_name = common_text(m, 0, m->exe, sizeof m->exe, "programs");
  m->info.host_name = common_text(m, 1, m->host, sizeof m->host, "hosts");
  if (lowest < highest)
    snprintf(m->context, sizeof m->context,
             "%zu traces read as one, at rate %g (those at up to %g thinned to it)", m->n,
             lowest, highest);
  else
    snprintf(m->context, sizeof m->context, "%zu traces read as one", m->n);
  m->info.context = m->context;
  m->info.initial_domain = 0;
  return MT_OK;
}

int mt__many_open(mt__many **out, const char *const *paths, size_t n, char *err, size_t n_err,
                  uint64_t *err_off) {
  *out = NULL;
  *err_off = MT_NO_OFFSET;
  mt__many *m = calloc(1, sizeof *m);
  if (m) {
    m->subs = calloc(n, sizeof *m->subs);
    m->heap = malloc(n * sizeof *m->heap);
    m->finished = malloc(n * sizeof *m->finished);
  }
  if (!m || !m->subs || !m->heap || !m->finished || n > 0xffff) {
    snprintf(err, n_err, n > 0xffff ? "more than 65535 traces to read as one" : "out of memory");
    mt__many_free(m);
    return n > 0xffff ? MT_ERR_INVALID : MT_ERR_NOMEM;
  }
  m->n = n;
  m->err_off = MT_NO_OFFSET;
  int rc = MT_OK;
  for (size_t k = 0; k < n && rc == MT_OK; k++) {
    m->subs[k].path = paths[k];
    rc = mt_reader_open(&m->subs[k].r, paths[k]);
    if (rc != MT_OK) {
      if (m->subs[k].r) fail_from(m, &m->subs[k], rc);
      else snprintf(m->err, sizeof m->err, "out of memory");
    }
  }
  if (rc == MT_OK) rc = merge_info(m);
  for (size_t k = 0; k < n && rc == MT_OK; k++) rc = refill(m, k);
  if (rc != MT_OK) {
    snprintf(err, n_err, "%s", m->err);
    *err_off = m->err_off;
    mt__many_free(m);
    return rc;
  }
  *out = m;
  return MT_OK;
}

void mt__many_free(mt__many *m) {
  if (!m) return;
  for (size_t k = 0; m->subs && k < m->n; k++) {
    mt_reader_close(m->subs[k].r);
    free(m->subs[k].ids);
    mt__u64map_free(&m->subs[k].wide);
  }
  free(m->subs);
  free(m->heap);
  free(m->finished);
  free(m->bt);
  free(m->wide_sub);
  free(m->wide_code);
  free(m);
}

/* ---- events ---- */

static uint64_t merged_code(mt__many *m, size_t k, uint64_t code) {
  if (code <= CODE_MASK) return (uint64_t)(k + 1) << CODE_BITS | code;
  uint32_t *ix = mt__u64map_get(&m->subs[k].wide, code);
  if (ix) return WIDE_CODE | (*ix - 1);
  if (mt__reserve((void **)&m->wide_sub, m->nwide, &m->wide_cap, sizeof *m->wide_sub) ||
      mt__reserve((void **)&m->wide_code, m->nwide, &m->wide_code_cap, sizeof *m->wide_code) ||
      mt__u64map_put(&m->subs[k].wide, code, (uint32_t)m->nwide))
    return 0;
  m->wide_sub[m->nwide] = (uint32_t)k;
  m->wide_code[m->nwide] = code;
  return WIDE_CODE | m->nwide++;
}

/* The merged id of trace s's object `id`, or NO_ID if it never saw it. */
static uint32_t id_of(const sub *s, uint64_t id) {
  if (!s->nids || id < s->id_base || id - s->id_base >= s->nids) return NO_ID;
  return s->ids[id - s->id_base];
}

static int note_alloc(mt__many *m, sub *s, uint64_t id, uint32_t merged) {
  if (!s->nids) s->id_base = id;
  /* ids run on from the trace's first: a gap of more than 2^24 (a corrupt
   * trace) is not followed; its objects are then unknown to the merge */
  if (id < s->id_base || id - s->id_base > s->nids + (1u << 24) || m->next_id >= DROPPED)
    return 0;
  size_t at = (size_t)(id - s->id_base);
  if (at >= s->nids) {
    if (mt__grow((void **)&s->ids, &s->ids_cap, at + 1, sizeof *s->ids, 4096)) return -1;
    for (size_t j = s->nids; j < at; j++) s->ids[j] = NO_ID;
    s->nids = at + 1;
  }
  s->ids[at] = merged;
  return 0;
}

/* Samples kept of n, each with chance p (a binomial draw). */
static uint64_t thin(mt__rng *g, uint64_t n, double p) {
  uint64_t kept = 0, cut = (uint64_t)(p * 18446744073709551616.0);
  for (uint64_t i = 0; i < n; i++) kept += mt__rng_next(g) < cut;
  return kept;
}

int mt__many_next(mt__many *m, mt_event *ev) {
  if (m->status < 0) return m->status;
again:
  if (m->nheap == 0) return 0;
  size_t k = heap_pop(m);
  sub *s = &m->subs[k];
  *ev = s->ev;
  ev->domain = (uint32_t)k << 16 | (s->ev.domain & 0xffff);
  if (ev->kind == MT_EVENT_ALLOC && s->keep < 1 &&
      (ev->nsamples = thin(&m->rng, s->ev.nsamples, s->keep)) == 0) {
    /* thinned away: the allocation and its later events go */
    if (note_alloc(m, s, s->ev.obj_id, DROPPED)) goto nomem;
    if (refill(m, k) < 0) return m->status;
    goto again;
  }
  if (ev->kind == MT_EVENT_ALLOC) {
    if (note_alloc(m, s, s->ev.obj_id, (uint32_t)m->next_id)) goto nomem;
    ev->obj_id = m->next_id++;
    if (ev->backtrace_len > m->bt_cap &&
        mt__grow((void **)&m->bt, &m->bt_cap, ev->backtrace_len, sizeof *m->bt, 64))
      goto nomem;
    for (size_t i = 0; i < ev->backtrace_len; i++) {
      m->bt[i] = merged_code(m, k, s->ev.backtrace[i]);
      if (!m->bt[i]) goto nomem;
    }
    ev->backtrace = m->bt;
  } else {
    uint32_t id = id_of(s, s->ev.obj_id);
    if (id == DROPPED) {
      if (refill(m, k) < 0) return m->status;
      goto again;
    }
    ev->obj_id = id == NO_ID ? UINT64_MAX : id;
  }
  /* the slot is read again only now: the event's backtrace stayed valid */
  int rc = refill(m, k);
  return rc < 0 ? rc : 1;
nomem:
  m->status = MT_ERR_NOMEM;
  snprintf(m->err, sizeof m->err, "out of memory merging %s", s->path);
  m->err_off = MT_NO_OFFSET;
  return MT_ERR_NOMEM;
}

/* ---- queries ---- */

const mt_trace_info *mt__many_info(const mt__many *m) { return &m->info; }

/* The trace and its own code of a merged code; 0, or -1 if none. */
static int split_code(const mt__many *m, uint64_t code, size_t *k, uint64_t *orig) {
  if (code & WIDE_CODE) {
    uint64_t ix = code & ~WIDE_CODE;
    if (ix >= m->nwide) return -1;
    *k = m->wide_sub[ix];
    *orig = m->wide_code[ix];
    return 0;
  }
  uint64_t t = code >> CODE_BITS;
  if (t == 0 || t > m->n) return -1;
  *k = (size_t)(t - 1);
  *orig = code & CODE_MASK;
  return 0;
}

const mt_location *mt__many_lookup(const mt__many *m, uint64_t code, size_t *n) {
  size_t k;
  uint64_t orig;
  if (split_code(m, code, &k, &orig)) {
    *n = 0;
    return NULL;
  }
  return mt_reader_lookup(m->subs[k].r, orig, n);
}

int mt__many_has_code(const mt__many *m, uint64_t code) {
  size_t k;
  uint64_t orig;
  return !split_code(m, code, &k, &orig) && mt_reader_has_code(m->subs[k].r, orig);
}

void mt__many_progress(const mt__many *m, uint64_t *done, uint64_t *total) {
  uint64_t d = 0, t = 0;
  for (size_t k = 0; k < m->n; k++) {
    uint64_t dk, tk;
    mt_reader_progress(m->subs[k].r, &dk, &tk);
    d += dk;
    t += tk;
  }
  if (done) *done = d;
  if (total) *total = t;
}

const char *mt__many_error(const mt__many *m) { return m->err; }

const char *mt__many_warning(const mt__many *m) {
  for (size_t k = 0; k < m->n; k++) {
    const char *w = mt_reader_warning(m->subs[k].r);
    if (w) return w; /* each names its trace */
  }
  return NULL;
}

uint64_t mt__many_error_offset(const mt__many *m) {
  return m->status < 0 ? m->err_off : MT_NO_OFFSET;
}

uint64_t mt__many_truncated(const mt__many *m) {
  for (size_t k = 0; k < m->n; k++) {
    uint64_t t = mt_reader_truncated(m->subs[k].r);
    if (t != MT_NO_OFFSET) return t;
  }
  return MT_NO_OFFSET;
}

size_t mt__many_count(const mt__many *m) { return m->n; }

uint64_t mt__many_end(const mt__many *m, size_t k) {
  return k < m->n ? m->subs[k].end : 0;
}

size_t mt__many_finished(const mt__many *m, size_t i) {
  return i < m->nfinished ? m->finished[i] : SIZE_MAX;
}
