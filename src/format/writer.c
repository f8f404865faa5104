/* The trace writer.
 *
 * Events are encoded into a 32 KiB packet buffer per domain; a packet goes
 * out, whole and in one sink call, when the next event might not fit, when
 * it would span more than 30 s (25-bit event timestamps must stay
 * unambiguous), when 128 new locations are pending, or (v3) when the
 * domain's chunk of object ids runs out. Locations that missed the
 * backtrace cache are written in packets of their own just before the
 * events that use them. These rules, the encodings and the cache policy are
 * memtrace's, so re-encoding a memtrace trace reproduces it byte for byte. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "btcodec.h"
#include "format_internal.h"
#include "loccodec.h"
#include "base/containers.h"
#include "writer_internal.h"

/* An event's fixed fields take at most 100 bytes; with the largest
 * backtrace or location, this much room must be left to start one. */
#define MAX_EVENT_SIZE (100 + MT__BT_MAX_LENGTH)
#define MAX_NEW_LOCS 128
#define IDS_PER_CHUNK 10000 /* v3: object ids a domain takes at a time */
#define MAX_DOMAINS 128

typedef struct wdomain {
  uint32_t id;
  mt__bt_encoder bt;
  mt__mtf mtf;
  uint64_t *last_bt; /* previous backtrace, for the common prefix */
  size_t last_len, last_cap;
  uint8_t packet[MT__PACKET_SIZE];
  mt__wr w;
  uint64_t time_start, time_end;
  uint64_t id_start, id_next, id_last; /* this packet's ids; chunk end */
  uint64_t *new_locs; /* codes that missed the cache in this packet */
  size_t nnew, new_cap;
  int nomem;
} wdomain;

struct mt_writer {
  int version;
  int fd;
  mt_sink_fn sink;
  void *sink_ctx;
  mt_resolve_fn resolve;
  void *resolve_ctx;
  int check_pid;
  int by_address; /* the encoders place codes by address */
  uint64_t pid, start_time;
  uint64_t global_ids; /* v3: next unclaimed chunk of ids */
  wdomain *doms[MAX_DOMAINS];
  size_t ndoms;
  wdomain *cur;
  mt__strtab strings; /* names the MTF tables point to */
  uint8_t locbuf[MT__PACKET_SIZE + 8]; /* +8: see flush_locations */
  int status;
  char err[512];
};

static int fail(mt_writer *w, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(mt_writer *w, int status, const char *fmt, ...) {
  if (w->status < 0) return w->status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->err, sizeof w->err, fmt, ap);
  va_end(ap);
  w->status = status;
  return status;
}

static int invalid(mt_writer *w, const char *what) {
  /* A contract breach leaves the writer usable: nothing was written. */
  snprintf(w->err, sizeof w->err, "invalid call: %s", what);
  return MT_ERR_INVALID;
}

static int fd_sink(void *ctx, const void *buf, size_t len) {
  int fd = *(int *)ctx;
  const char *p = buf;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

static int emit(mt_writer *w, const uint8_t *buf, size_t len) {
  if (w->check_pid && (uint64_t)getpid() != w->pid)
    return fail(w, MT_ERR_FORKED,
                "the process forked: this copy (pid %ld) stops writing the trace "
                "of pid %llu",
                (long)getpid(), (unsigned long long)w->pid);
  int rc = w->sink ? w->sink(w->sink_ctx, buf, len) : fd_sink(&w->fd, buf, len);
  if (rc != 0)
    return fail(w, MT_ERR_IO, "writing the trace failed: %s",
                rc < 0 ? strerror(-rc) : "sink error");
  return MT_OK;
}

/* ---- packet headers ---- */

static size_t header_len(const mt_writer *w) {
  return w->version >= 3 ? MT__HEADER_V3 : MT__HEADER_V2;
}

/* Starts a packet: the fields known only at its end are left as zeros. */
static void put_header(mt_writer *w, mt__wr *b, uint32_t domain, mt__bt_encoder *verify) {
  mt__put32(b, MT__MAGIC);
  memset(b->p, 0, 4 + 8 + 8 + 4);
  b->p += 4 + 8 + 8 + 4;
  mt__put16(b, (uint16_t)w->version);
  mt__put64(b, w->pid);
  if (w->version >= 3) mt__put16(b, (uint16_t)domain);
  if (verify) mt__bt_put_verifier(verify, b);
  else mt__bt_put_dummy_verifier(b);
  memset(b->p, 0, 16);
  b->p += 16;
}

static void finish_header(const mt_writer *w, mt__wr *b, uint64_t t0, uint64_t t1,
                          uint64_t id0, uint64_t id1) {
  uint8_t *h = b->start;
  size_t hl = header_len(w);
  mt__st32(h + 4, (uint32_t)(mt__wr_pos(b) * 8));
  mt__st64(h + 8, t0);
  mt__st64(h + 16, t1);
  mt__st64(h + hl - 16, id0);
  mt__st64(h + hl - 8, id1);
}

static void put_event_header(mt__wr *b, unsigned code, uint64_t time) {
  mt__put32(b, (uint32_t)code << MT__TIME_BITS | ((uint32_t)time & MT__TIME_MASK));
}

/* ---- object ids ---- */

static int ids_left(const wdomain *d) { return d->id_next < d->id_last; }

/* At a packet boundary: v3 takes a new chunk when the old one is used up;
 * v2 ids simply run on. */
static void ids_new_packet(mt_writer *w, wdomain *d) {
  if (w->version >= 3 && !ids_left(d)) {
    d->id_next = w->global_ids;
    w->global_ids += IDS_PER_CHUNK;
    d->id_last = d->id_next + IDS_PER_CHUNK;
  }
  d->id_start = d->id_next;
}

/* ---- flushing ---- */

static void reset_packet(mt_writer *w, wdomain *d, int first) {
  d->w = (mt__wr){d->packet, d->packet + sizeof d->packet, d->packet};
  put_header(w, &d->w, d->id, first ? NULL : &d->bt);
}

static int flush_locations(mt_writer *w, wdomain *d) {
  size_t i = 0;
  while (i < d->nnew) {
    /* As memtrace: start a location only while more than its maximum size
     * is left. Its 4-byte event header may then pass the 32 KiB mark by a
     * few bytes; locbuf has room for that. */
    mt__wr b = {w->locbuf, w->locbuf + sizeof w->locbuf, w->locbuf};
    put_header(w, &b, d->id, NULL);
    while (i < d->nnew && mt__wr_left(&b) > MT__LOC_MAX_LENGTH + 8) {
      const mt_location *locs = NULL;
      size_t n = 0;
      if (w->resolve && w->resolve(w->resolve_ctx, d->new_locs[i], &locs, &n) != 0)
        return fail(w, MT_ERR_IO, "the location resolver failed for code 0x%llx",
                    (unsigned long long)d->new_locs[i]);
      put_event_header(&b, MT__EV_LOCATION, d->time_start);
      if (mt__loc_encode(&d->mtf, &w->strings, &b, d->new_locs[i], locs, n) != 0)
        return fail(w, MT_ERR_NOMEM, "out of memory");
      i++;
    }
    finish_header(w, &b, d->time_start, d->time_start, d->id_start, d->id_start);
    int rc = emit(w, b.start, mt__wr_pos(&b));
    if (rc) return rc;
  }
  return MT_OK;
}

static int flush_domain(mt_writer *w, wdomain *d, uint64_t now) {
  if (w->status < 0) return MT_ERR_CLOSED;
  if (d->nomem) return fail(w, MT_ERR_NOMEM, "out of memory");
  int rc = flush_locations(w, d);
  if (rc) return rc;
  finish_header(w, &d->w, d->time_start, d->time_end, d->id_start, d->id_next);
  rc = emit(w, d->w.start, mt__wr_pos(&d->w));
  if (rc) return rc;
  d->time_start = d->time_end = now;
  d->nnew = 0;
  ids_new_packet(w, d);
  reset_packet(w, d, 0);
  return MT_OK;
}

static inline __attribute__((always_inline)) int begin_event(mt_writer *w, wdomain *d, unsigned code,
                                                              uint64_t now) {
  if (mt__wr_left(&d->w) < MAX_EVENT_SIZE || d->nnew > MAX_NEW_LOCS ||
      now - d->time_start > MT__PACKET_MAX_TIME ||
      (w->version >= 3 && !ids_left(d))) {
    int rc = flush_domain(w, d, now);
    if (rc) return rc;
  }
  d->time_end = now;
  put_event_header(&d->w, code, now);
  return MT_OK;
}

/* ---- domains ---- */

static wdomain *new_domain(mt_writer *w, uint32_t id) {
  wdomain *d = calloc(1, sizeof *d); /* zeroed: the encoder's tables too */
  if (!d) return NULL;
  d->id = id;
  mt__bt_encoder_init_zeroed(&d->bt);
  d->bt.by_address = w->by_address;
  mt__mtf_init(&d->mtf);
  d->time_start = d->time_end = w->start_time;
  ids_new_packet(w, d);
  reset_packet(w, d, 1);
  w->doms[w->ndoms++] = d;
  return d;
}

/* The writer of `id`, switching to it. Packets of different domains never
 * interleave in time: the previous domain is flushed first (as memtrace's
 * multiplexed writer does). */
static __attribute__((noinline)) int domain_switch(mt_writer *w, uint32_t id, wdomain **out) {
  if (w->status < 0) return MT_ERR_CLOSED;
  if (w->version < 3 && id != 0) return invalid(w, "domain must be 0 in format version 2");
  if (id > 0xffff) return invalid(w, "domain does not fit in 16 bits");
  wdomain *d = NULL;
  for (size_t i = 0; i < w->ndoms; i++)
    if (w->doms[i]->id == id) d = w->doms[i];
  if (!d && w->ndoms == MAX_DOMAINS) return invalid(w, "more than 128 domains");
  if (w->cur) {
    int rc = flush_domain(w, w->cur, w->cur->time_end);
    if (rc) return rc;
  }
  if (!d && !(d = new_domain(w, id))) return fail(w, MT_ERR_NOMEM, "out of memory");
  w->cur = d;
  *out = d;
  return MT_OK;
}

/* The usual case inline: the current domain again. */
static inline int domain_for(mt_writer *w, uint32_t id, wdomain **out) {
  if (__builtin_expect(w->status >= 0 && w->cur && w->cur->id == id, 1)) {
    *out = w->cur;
    return MT_OK;
  }
  return domain_switch(w, id, out);
}

/* ---- events ---- */

static void log_miss(void *ctx, uint64_t code) {
  wdomain *d = ctx;
  if (d->nnew == d->new_cap) {
    size_t nc = d->new_cap ? d->new_cap * 2 : 64;
    uint64_t *n = realloc(d->new_locs, nc * sizeof *n);
    if (!n) {
      d->nomem = 1; /* reported at the next flush */
      return;
    }
    d->new_locs = n;
    d->new_cap = nc;
  }
  d->new_locs[d->nnew++] = code;
}

int mt_writer_alloc(mt_writer *w, uint64_t time, uint32_t domain, uint64_t length,
                    uint64_t nsamples, mt_source source, const uint64_t *bt,
                    size_t len, uint64_t *obj_id) {
  if ((unsigned)source > MT_SOURCE_EXTERNAL) return invalid(w, "unknown allocation source");
  if (len && !bt) return invalid(w, "NULL backtrace");
  if (length > INT64_MAX || nsamples > INT64_MAX) return invalid(w, "length or samples too large");
  return mt__writer_alloc_known(w, time, domain, length, nsamples, source, bt, len, 0, obj_id);
}

int mt__writer_alloc_known(mt_writer *w, uint64_t time, uint32_t domain, uint64_t length,
                           uint64_t nsamples, mt_source source, const uint64_t *bt, size_t len,
                           size_t known, uint64_t *obj_id) {
  wdomain *d;
  int rc = domain_for(w, domain, &d);
  if (rc) return rc;
  if (time < d->time_end) time = d->time_end;

  size_t lim = len < d->last_len ? len : d->last_len; /* what the two can share */
  size_t common = known < lim ? known : lim;
  while (common < lim && bt[common] == d->last_bt[common]) common++;
  size_t new_len = len - common;
  if (len > d->last_cap) {
    size_t nc = d->last_cap ? d->last_cap : 64;
    while (nc < len) nc *= 2;
    uint64_t *n = realloc(d->last_bt, nc * sizeof *n);
    if (!n) return fail(w, MT_ERR_NOMEM, "out of memory");
    d->last_bt = n;
    d->last_cap = nc;
  }

  int is_short = length >= 1 && length <= 16 && source == MT_SOURCE_MINOR &&
                 nsamples == 1 && new_len < 256;
  rc = begin_event(w, d, is_short ? MT__EV_SHORT_ALLOC_BASE + (unsigned)length
                                  : MT__EV_ALLOC, time);
  if (rc) return rc;
  if (new_len) memcpy(d->last_bt + common, bt + common, new_len * sizeof *bt); /* the rest is the same */
  d->last_len = len;
  uint64_t id = d->id_next++;
  mt__wr *b = &d->w;
  uint8_t *count_at;
  if (is_short) {
    mt__putvint(b, (int64_t)common);
    count_at = b->p;
    mt__put8(b, 0);
  } else {
    mt__putvint(b, (int64_t)length);
    mt__putvint(b, (int64_t)nsamples);
    mt__put8(b, (uint8_t)source);
    mt__putvint(b, (int64_t)common);
    count_at = b->p;
    mt__put16(b, 0);
  }
  /* the same backtrace as the last (a loop allocating): no call */
  size_t nencoded = common < len ? mt__bt_encode(&d->bt, b, id, bt, common, len, log_miss, d) : 0;
  /* At most MT__BT_MAX_LENGTH / 2 codewords fit: the 16-bit count can't
   * overflow, and a short event has < 256 frames to code. */
  if (is_short) *count_at = (uint8_t)nencoded;
  else mt__st16(count_at, (uint16_t)nencoded);
  if (obj_id) *obj_id = id;
  return MT_OK;
}

/* Whether obj_id names an object some domain allocated. Ids are handed out
 * in chunks (v3): every chunk but a domain's current one is used up. */
static int was_allocated(const mt_writer *w, uint64_t obj_id) {
  if (w->version < 3) return w->ndoms && obj_id < w->doms[0]->id_next;
  if (obj_id >= w->global_ids) return 0;
  for (size_t i = 0; i < w->ndoms; i++)
    if (obj_id >= w->doms[i]->id_next && obj_id < w->doms[i]->id_last) return 0;
  return 1;
}

/* An event naming obj_id, once checked. */
static inline __attribute__((always_inline)) int put_relative(mt_writer *w, wdomain *d,
                                                               unsigned code, uint64_t time,
                                                               uint64_t obj_id) {
  if (time < d->time_end) time = d->time_end;
  int rc = begin_event(w, d, code, time);
  if (rc) return rc;
  /* Relative to the last id allocated: usually small. Negative only for an
   * object of another domain (v3). */
  mt__putvint(&d->w, (int64_t)(d->id_next - 1 - obj_id));
  return MT_OK;
}

static int relative_event(mt_writer *w, unsigned code, uint64_t time, uint32_t domain,
                          uint64_t obj_id) {
  if (w->status < 0) return MT_ERR_CLOSED;
  if (!was_allocated(w, obj_id)) return invalid(w, "object id was never allocated");
  wdomain *d;
  int rc = domain_for(w, domain, &d);
  if (rc) return rc;
  /* Readers accept a later id (another domain's) only in a collection. */
  if (code == MT__EV_PROMOTE && obj_id >= d->id_next)
    return invalid(w, "a promotion must name an object allocated before this domain's last");
  return put_relative(w, d, code, time, obj_id);
}

void mt__writer_place_by_address(mt_writer *w) {
  w->by_address = 1;
  for (size_t i = 0; i < w->ndoms; i++) w->doms[i]->bt.by_address = 1;
}

int mt__writer_collect_known(mt_writer *w, uint64_t time, uint64_t obj_id) {
  wdomain *d;
  int rc = domain_for(w, 0, &d);
  if (rc) return rc;
  return put_relative(w, d, MT__EV_COLLECT, time, obj_id);
}

int mt_writer_promote(mt_writer *w, uint64_t time, uint32_t domain, uint64_t obj_id) {
  return relative_event(w, MT__EV_PROMOTE, time, domain, obj_id);
}

int mt_writer_collect(mt_writer *w, uint64_t time, uint32_t domain, uint64_t obj_id) {
  return relative_event(w, MT__EV_COLLECT, time, domain, obj_id);
}

uint64_t mt_writer_next_obj_id(mt_writer *w, uint32_t domain) {
  for (size_t i = 0; i < w->ndoms; i++) {
    wdomain *d = w->doms[i];
    if (d->id != domain) continue;
    if (w->version >= 3 && !ids_left(d)) return w->global_ids;
    return d->id_next;
  }
  /* A domain not seen yet claims its chunk now, so that the promise holds
   * whichever domain allocates first (memtrace's multiplexed writer does
   * the same). */
  if (w->version >= 3 && domain <= 0xffff && w->ndoms < MAX_DOMAINS && w->status >= 0) {
    wdomain *d = new_domain(w, domain);
    if (d) return d->id_next;
  }
  return w->version >= 3 ? w->global_ids : 0;
}

int mt_writer_flush(mt_writer *w) {
  if (w->status < 0) return MT_ERR_CLOSED;
  wdomain *d = w->cur;
  /* Nothing pending: write nothing (memtrace would write an empty packet;
   * packets its own rules force, below, are still written as it does). */
  if (!d || (mt__wr_pos(&d->w) == header_len(w) && d->nnew == 0)) return MT_OK;
  return flush_domain(w, d, d->time_end);
}

/* ---- opening and closing ---- */

static int write_trace_info(mt_writer *w, const mt_trace_info *in, uint32_t domain) {
  const char *strs[4] = {in->executable_name ? in->executable_name : "",
                         in->host_name ? in->host_name : "",
                         in->runtime_params ? in->runtime_params : "",
                         in->context ? in->context : ""};
  size_t need = MT__HEADER_MAX + 4 + 8 + 1 + 8;
  for (int i = 0; i < 4; i++) need += strlen(strs[i]) + 1;
  if (need > MT__PACKET_SIZE) return invalid(w, "trace_info strings longer than a packet");
  /* on the heap: a packet (32 KiB) is too much for a small thread's stack,
   * and a forked child's trace is opened by whichever thread samples first */
  uint8_t *buf = malloc(need);
  if (!buf) return fail(w, MT_ERR_NOMEM, "out of memory");
  mt__wr b = {buf, buf + need, buf};
  put_header(w, &b, domain, NULL);
  put_event_header(&b, MT__EV_TRACE_INFO, in->start_time);
  uint64_t rate_bits;
  memcpy(&rate_bits, &in->sample_rate, sizeof rate_bits);
  mt__put64(&b, rate_bits);
  mt__put8(&b, (uint8_t)in->word_size);
  for (int i = 0; i < 3; i++) mt__putstr(&b, strs[i], strlen(strs[i]));
  mt__put64(&b, in->pid);
  mt__putstr(&b, strs[3], strlen(strs[3]));
  finish_header(w, &b, in->start_time, in->start_time, 0, 0);
  int rc = emit(w, buf, mt__wr_pos(&b));
  free(buf);
  return rc;
}

int mt_writer_open(mt_writer **out, const mt_trace_info *info,
                   const mt_writer_options *opt) {
  mt_writer *w = calloc(1, sizeof *w);
  *out = w;
  if (!w) return MT_ERR_NOMEM;
  if (!info || !opt) return fail(w, MT_ERR_INVALID, "invalid call: NULL info or options");
  w->version = opt->version ? opt->version : 2;
  if (w->version != 2 && w->version != 3)
    return fail(w, MT_ERR_INVALID, "invalid call: cannot write format version %d (2 or 3)",
                opt->version);
  if (!(info->sample_rate > 0 && info->sample_rate <= 1))
    return fail(w, MT_ERR_INVALID, "invalid call: sample rate %g is not in (0, 1]",
                info->sample_rate);
  uint32_t domain = w->version >= 3 ? info->initial_domain : 0;
  if (domain > 0xffff)
    return fail(w, MT_ERR_INVALID, "invalid call: domain does not fit in 16 bits");
  w->fd = opt->fd;
  w->sink = opt->sink;
  w->sink_ctx = opt->sink_ctx;
  w->resolve = opt->resolve;
  w->resolve_ctx = opt->resolve_ctx;
  w->check_pid = opt->check_pid;
  w->pid = info->pid;
  w->start_time = info->start_time;
  int rc = write_trace_info(w, info, domain);
  if (rc) return rc;
  /* The first domain's ids are claimed now, as memtrace does. */
  if (!new_domain(w, domain)) return fail(w, MT_ERR_NOMEM, "out of memory");
  w->cur = w->doms[0];
  return MT_OK;
}

int mt_writer_close(mt_writer *w) {
  if (!w) return MT_OK;
  int rc = w->status < 0 ? w->status : mt_writer_flush(w);
  for (size_t i = 0; i < w->ndoms; i++) {
    free(w->doms[i]->last_bt);
    free(w->doms[i]->new_locs);
    free(w->doms[i]);
  }
  mt__strtab_free(&w->strings);
  free(w);
  return rc;
}

const char *mt_writer_error(const mt_writer *w) { return w ? w->err : "out of memory"; }
