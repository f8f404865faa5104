/* The trace reader: streams packets from a file descriptor, decodes their
 * events with per-domain state, and merges the domains in time order.
 *
 * Memory is bounded by the input buffer, the look-ahead of queued packets
 * (MAX_QUEUED bytes), one backtrace cache per domain, and the location
 * table; never by the trace's length. Every field read from the file is
 * checked before use, and every failure names the byte offset.
 *
 * This file holds the input, the packets, the domains and their merge, and
 * the API; the events are decoded by reader_fast.h (the common ones, on
 * their fast path) and reader_events.c (the checked path, which also keeps
 * the locations). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader_fast.h"
#include "bt_tags.h"
#include "reader_internal.h"

#define INBUF_SIZE (4u << 20)   /* the input buffer; > MT__MAX_PACKET */
#define INBUF_MIN 4096          /* a small file's buffer                    */
/* read() granularity: the bytes read stay in the L2 cache until the
 * packets they hold are copied out (a 4 MiB read took twice the kernel's
 * time on a 123 MB trace, and left the data to be fetched again) */
#define READ_CHUNK (256u << 10)
#define MAX_QUEUED (8u << 20)   /* look-ahead when merging domains */

/* ---- errors ---- */

int mt__reader_fail(mt_reader *r, int status, uint64_t off, const char *fmt, ...) {
  if (r->status < 0) return r->status;
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  r->err_off = status == MT_ERR_CORRUPT || status == MT_ERR_VERSION ? off : MT_NO_OFFSET;
  if (status == MT_ERR_CORRUPT)
    snprintf(r->err, sizeof r->err, "%s: corrupt trace at byte %llu: %s", r->name,
             (unsigned long long)off, what);
  else if (status == MT_ERR_VERSION)
    snprintf(r->err, sizeof r->err, "%s: at byte %llu: %s", r->name,
             (unsigned long long)off, what);
  else
    snprintf(r->err, sizeof r->err, "%s: %s", r->name, what);
  r->status = status;
  r->fast = NULL;
  return status;
}

int mt__reader_nomem(mt_reader *r) {
  return mt__reader_fail(r, MT_ERR_NOMEM, 0, "out of memory");
}

/* ---- input buffer ---- */

/* Makes at least `need` bytes available at in[in_pos] unless the file ends
 * first. Returns the bytes available, or a negative status. */
static long fill(mt_reader *r, size_t need) {
  size_t avail = r->in_end - r->in_pos;
  if (avail >= need || r->in_eof) return (long)avail;
  if (r->in_pos > 0) {
    memmove(r->in, r->in + r->in_pos, avail);
    r->in_off += r->in_pos;
    r->in_pos = 0;
    r->in_end = avail;
  }
  if (need > r->in_cap) {
    /* a small file's buffer was sized to it; grow (the file may be growing) */
    size_t cap = r->in_cap * 2 > need ? r->in_cap * 2 : need;
    if (cap > INBUF_SIZE) cap = INBUF_SIZE;
    uint8_t *in = realloc(r->in, cap);
    if (!in) return mt__reader_nomem(r);
    r->in = in;
    r->in_cap = cap;
  }
  while (r->in_end < need && !r->in_eof) {
    size_t want = r->in_cap - r->in_end;
    if (want > READ_CHUNK && need - r->in_end <= READ_CHUNK) want = READ_CHUNK;
    ssize_t got = read(r->fd, r->in + r->in_end, want);
    if (got < 0) {
      if (errno == EINTR) continue;
      return mt__reader_fail(r, MT_ERR_IO, 0, "read failed at byte %llu: %s",
                             (unsigned long long)(r->in_off + r->in_end), strerror(errno));
    }
    if (got == 0) r->in_eof = 1;
    r->in_end += (size_t)got;
  }
  return (long)(r->in_end - r->in_pos);
}

/* ---- packet headers ---- */

typedef struct header {
  uint32_t magic, size_bits;
  uint64_t time_begin, time_end, pid, alloc_begin, alloc_end;
  uint16_t version, domain, v_ix, v_pred;
  uint64_t v_val;
  size_t header_len, content_len;
} header;

/* Parses and checks the header at in[in_pos]. Returns 1 if a header is
 * there, 0 if the file ended cleanly or mid-header (then `*short_by` is the
 * number of bytes present), or a negative status. */
static int read_header(mt_reader *r, header *h, size_t *present) {
  long avail = fill(r, MT__HEADER_MAX);
  if (avail < 0) return (int)avail;
  *present = (size_t)avail;
  if (avail == 0) return 0;
  const uint8_t *p = r->in + r->in_pos;
  uint64_t off = r->in_off + r->in_pos;
  if (avail < 4) return 0;
  h->magic = mt__ld32(p);
  if (h->magic != MT__MAGIC)
    return mt__reader_fail(r, MT_ERR_CORRUPT, off,
                           "bad packet magic 0x%08x (expected 0x%08x): not a memtrace "
                           "trace, or a damaged one",
                           h->magic, MT__MAGIC);
  if (avail < MT__HEADER_V2) return 0;
  h->version = mt__ld16(p + 28);
  if (h->version < 1 || h->version > MT_FORMAT_VERSION_MAX)
    return mt__reader_fail(r, MT_ERR_VERSION, off + 28,
                           "unsupported trace format version %u (this reader knows 1 to %d)",
                           h->version, MT_FORMAT_VERSION_MAX);
  h->header_len = h->version >= 3 ? MT__HEADER_V3 : MT__HEADER_V2;
  if ((size_t)avail < h->header_len) return 0;
  mt__rd c = {p + 4, p + h->header_len, 0};
  h->size_bits = mt__get32(&c);
  h->time_begin = mt__get64(&c);
  h->time_end = mt__get64(&c);
  (void)mt__get32(&c); /* flush duration: unused */
  (void)mt__get16(&c); /* version, read above */
  h->pid = mt__get64(&c);
  h->domain = h->version >= 3 ? mt__get16(&c) : 0;
  h->v_ix = mt__get16(&c);
  h->v_pred = mt__get16(&c);
  h->v_val = mt__get64(&c);
  h->alloc_begin = mt__get64(&c);
  h->alloc_end = mt__get64(&c);

  size_t size = h->size_bits / 8;
  if (size < h->header_len)
    return mt__reader_fail(r, MT_ERR_CORRUPT, off + 4,
                           "packet size %zu bytes is smaller than its %zu-byte header", size,
                           h->header_len);
  if (size > MT__MAX_PACKET)
    return mt__reader_fail(r, MT_ERR_CORRUPT, off + 4,
                           "packet size %zu bytes exceeds the limit of %u", size,
                           MT__MAX_PACKET);
  if (h->time_begin > h->time_end)
    return mt__reader_fail(r, MT_ERR_CORRUPT, off + 8,
                           "packet ends (%llu us) before it begins (%llu us)",
                           (unsigned long long)h->time_end, (unsigned long long)h->time_begin);
  if (h->alloc_begin > h->alloc_end)
    return mt__reader_fail(r, MT_ERR_CORRUPT, off + h->header_len - 16,
                           "packet's object ids run backwards (%llu to %llu)",
                           (unsigned long long)h->alloc_begin, (unsigned long long)h->alloc_end);
  h->content_len = size - h->header_len;
  return 1;
}

static void set_warning(mt_reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_warning(mt_reader *r, const char *fmt, ...) {
  if (r->warn_set) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->warn, sizeof r->warn, fmt, ap);
  va_end(ap);
  r->warn_set = 1;
}

static void truncated(mt_reader *r, uint64_t off, size_t want, size_t present) {
  set_warning(r,
              "%s: trace truncated: the packet at byte %llu needs %zu bytes, "
              "only %zu remain; every complete packet before it was read",
              r->name, (unsigned long long)off, want, present);
  if (!r->truncated) r->truncated = 1, r->truncated_off = off;
  r->done = 1;
}

/* ---- domains and packets ---- */

/* The cursor of a domain with no packet: no bytes, so that the fast path,
 * which needs some, leaves it to the checked path without testing for a
 * packet. */
static mt__rd no_packet(void) {
  static const uint8_t none[1];
  return (mt__rd){none, none, 0};
}

static domain *find_domain(mt_reader *r, uint32_t id, uint64_t off) {
  for (size_t i = 0; i < r->ndoms; i++)
    if (r->doms[i]->id == id) return r->doms[i];
  if (r->ndoms == MAX_DOMAINS) {
    mt__reader_fail(r, MT_ERR_CORRUPT, off, "more than %d distinct domains", MAX_DOMAINS);
    return NULL;
  }
  domain *d = calloc(1, sizeof *d);
  if (!d) {
    mt__reader_nomem(r);
    return NULL;
  }
  d->id = id;
  d->rd = no_packet();
  mt__bt_decoder_init(&d->bt);
  mt__mtf_init(&d->mtf);
  d->last_time = r->info.start_time;
  r->doms[r->ndoms++] = d;
  r->fast = r->ndoms == 1 && !r->checked_only && r->status >= 0 ? d : NULL;
  return d;
}

/* A packet holding the len bytes at content: a copy, or content itself
 * when `lend`. */
static packet *new_packet(mt_reader *r, const uint8_t *content, size_t len, int lend) {
  packet *p = r->free_packets;
  if (p) r->free_packets = p->next;
  else if (!(p = calloc(1, sizeof *p))) return NULL;
  if (lend) {
    p->data = content;
  } else {
    if (p->cap < len || p->cap == 0) {
      size_t cap = len > 32768 ? len : 32768;
      uint8_t *d = realloc(p->buf, cap);
      if (!d) {
        free(p->buf);
        free(p);
        return NULL;
      }
      p->buf = d;
      p->cap = cap;
    }
    memcpy(p->buf, content, len);
    p->data = p->buf;
  }
  p->len = len;
  p->next = NULL;
  return p;
}

static void recycle_packet(mt_reader *r, packet *p) {
  r->queued -= p->len;
  p->next = r->free_packets;
  r->free_packets = p;
}

/* Following a growing file, no whole packet is there yet: nothing was
 * consumed, and the next read() asks the file again. */
static int wait_for_more(mt_reader *r) {
  r->in_eof = 0;
  r->waiting = 1;
  return 0;
}

/* Reads the next packet of this process into its domain's queue. Returns 1
 * if one was queued, 0 at the end of the trace, or a negative status. */
static int read_packet(mt_reader *r) {
  while (!r->done) {
    header h;
    size_t present;
    uint64_t off = r->in_off + r->in_pos;
    int rc = read_header(r, &h, &present);
    if (rc < 0) return rc;
    if (rc == 0 && r->follow) return wait_for_more(r);
    if (rc == 0) {
      if (present == 0) r->done = 1;
      else truncated(r, off, MT__HEADER_V2, present);
      return 0;
    }
    size_t size = h.header_len + h.content_len;
    long avail = fill(r, size);
    if (avail < 0) return (int)avail;
    if ((size_t)avail < size && r->follow) return wait_for_more(r);
    if ((size_t)avail < size) {
      truncated(r, off, size, (size_t)avail);
      return 0;
    }
    const uint8_t *content = r->in + r->in_pos + h.header_len;
    r->in_pos += size;
    if (h.pid != r->info.pid) {
      /* A forked child's packets: memtrace skips them too. */
      r->skipped_pid++;
      r->skipped_pid_value = h.pid;
      continue;
    }
    domain *d = find_domain(r, h.domain, off + 38);
    if (!d) return r->status;
    /* A trace of one domain decodes its packet where it was read: the
     * next read waits until that packet is done (pick_domain reads only for
     * a domain with nothing left), so no read moves it meanwhile. With
     * several, packets wait in queues while others are read. */
    packet *p = new_packet(r, content, h.content_len, r->ndoms == 1);
    if (!p) return mt__reader_nomem(r);
    p->data_off = off + h.header_len;
    p->time_begin = h.time_begin;
    p->time_end = h.time_end;
    p->alloc_begin = h.alloc_begin;
    p->alloc_end = h.alloc_end;
    p->v_ix = h.v_ix;
    p->v_pred = h.v_pred;
    p->v_val = h.v_val;
    p->seq = r->seq++;
    if (d->qtail) d->qtail->next = p;
    else d->qhead = p;
    d->qtail = p;
    r->queued += p->len;
    return 1;
  }
  return 0;
}

/* Makes d->cur a packet with an event left, finishing exhausted packets.
 * Returns 1 when d has an event ready, 0 when it needs more packets, or a
 * negative status. */
static int domain_ready(mt_reader *r, domain *d) {
  for (;;) {
    if (d->cur) {
      if (d->rd.p < d->rd.end) return 1;
      if (d->alloc_id != d->cur->alloc_end)
        return mt__reader_fail(r, MT_ERR_CORRUPT, d->cur->data_off,
                               "packet holds %llu allocations but its header says %llu",
                               (unsigned long long)(d->alloc_id - d->cur->alloc_begin),
                               (unsigned long long)(d->cur->alloc_end - d->cur->alloc_begin));
      recycle_packet(r, d->cur);
      d->cur = NULL;
      d->rd = no_packet();
    }
    packet *p = d->qhead;
    if (!p) return 0;
    d->qhead = p->next;
    if (!d->qhead) d->qtail = NULL;
    d->cur = p;
    d->rd = (mt__rd){p->data, p->data + p->len, 0};
    d->alloc_id = p->alloc_begin;
    if (!mt__bt_check_verifier(&d->bt, p->v_ix, p->v_pred, p->v_val))
      return mt__reader_fail(r, MT_ERR_CORRUPT, p->data_off - 28,
                             "backtrace cache verification failed (slot %u): the trace "
                             "is damaged or was written by a faulty encoder",
                             p->v_ix);
  }
}

/* Picks the domain whose next event comes first, reading packets ahead as
 * needed. Returns it, or NULL at the end (r->status set on error). */
static domain *pick_domain(mt_reader *r) {
  for (;;) {
    int missing = r->ndoms == 0;
    for (size_t i = 0; i < r->ndoms; i++) {
      int rc = domain_ready(r, r->doms[i]);
      if (rc < 0) return NULL;
      if (rc == 0) missing = 1;
    }
    /* Every domain seen so far needs a packet in hand before the earliest
     * event is known; a domain that stopped writing bounds the look-ahead
     * to MAX_QUEUED bytes instead. */
    if (missing && !r->done && r->queued < MAX_QUEUED) {
      int rc = read_packet(r);
      if (rc < 0) return NULL;
      /* following: the domains' order waits for the packet not yet
       * written, as a read of the whole file would have it */
      if (rc == 0 && r->waiting) return NULL;
      continue;
    }
    domain *best = NULL;
    uint64_t best_t = 0, best_seq = 0;
    for (size_t i = 0; i < r->ndoms; i++) {
      domain *d = r->doms[i];
      if (!d->cur || d->rd.p >= d->rd.end) continue;
      if (r->ndoms == 1) return d;
      uint64_t t = (size_t)(d->rd.end - d->rd.p) >= 4
                       ? event_time(d->cur, mt__ld32(d->rd.p))
                       : 0; /* too short: decoding reports it */
      if (!best || t < best_t || (t == best_t && d->cur->seq < best_seq)) {
        best = d;
        best_t = t;
        best_seq = d->cur->seq;
      }
    }
    return best;
  }
}

/* fast_event, noting the time of the last event it read, returned or
 * passed over, as the reader's last. */
static inline __attribute__((always_inline)) int fast_read(mt_reader *r, domain *d,
                                                           mt_event *ev, unsigned skip) {
  const uint8_t *at = d->rd.p;
  if (fast_event(d, ev, skip)) {
    r->last_event = ev->time;
    return 1;
  }
  if (d->rd.p != at) r->last_event = d->last_time; /* events passed over */
  return 0;
}

/* mt_reader_next past its common case: several traces or domains, a
 * packet to read, an event for the checked path, an error or the end. */
static __attribute__((noinline)) int next_event(mt_reader *r, mt_event *ev) {
  if (r->many) {
    int rc;
    while ((rc = mt__many_next(r->many, ev)) > 0 && (r->skip >> ev->kind & 1)) r->passed++;
    return rc;
  }
  if (r->status < 0) return r->status;
  for (;;) {
    /* One domain with an event ready in its packet (nearly always, in a
     * trace of one domain): the one pick_domain would pick. */
    domain *d = r->ndoms == 1 ? r->doms[0] : NULL;
    if (!d || !d->cur || d->rd.p >= d->rd.end) d = pick_domain(r);
    if (r->status < 0) return r->status;
    if (!d && r->waiting) {
      r->waiting = 0;
      return 0;
    }
    if (!d) {
      if (r->skipped_pid && !r->warn_set)
        set_warning(r,
                    "%s: skipped %llu packets written by another process (pid "
                    "%llu, a forked child)",
                    r->name, (unsigned long long)r->skipped_pid,
                    (unsigned long long)r->skipped_pid_value);
      return 0;
    }
    /* Skipped events are passed over on the fast path in a trace of one
     * domain only: with several, each event read must be the earliest of
     * the domains' next ones. */
    int rc = 0;
    if (r->checked_only || !fast_read(r, d, ev, r->ndoms == 1 ? r->skip : 0)) {
      if (d->rd.p >= d->rd.end) continue; /* passed over to the packet's end */
      rc = mt__read_event(r, d, ev);
      if (rc < 0) return rc;
      if (rc == 0) r->last_event = ev->time;
    }
    if (rc == 0 && !(r->skip >> ev->kind & 1)) return 1;
    if (rc == 0) r->passed++;
  }
}

int mt_reader_next(mt_reader *r, mt_event *ev) {
  /* The common case in few instructions: a trace of one domain (a reader
   * of several traces has none of its own), with events of the fast path
   * in its packet. */
  domain *d = r->fast;
  if (d && fast_read(r, d, ev, r->skip)) {
    if (!(r->skip >> ev->kind & 1)) return 1;
    r->passed++; /* an allocation skipped: fast_event returns them */
  }
  return next_event(r, ev);
}

/* ---- opening ---- */

static int read_trace_info(mt_reader *r) {
  header h;
  size_t present;
  int rc = read_header(r, &h, &present);
  if (rc < 0) return rc;
  if (rc == 0)
    return mt__reader_fail(r, MT_ERR_CORRUPT, present,
                           present == 0 ? "empty file: not a memtrace trace"
                                        : "file ends inside the first packet header");
  size_t size = h.header_len + h.content_len;
  long avail = fill(r, size);
  if (avail < 0) return (int)avail;
  if ((size_t)avail < size)
    return mt__reader_fail(r, MT_ERR_CORRUPT, (uint64_t)avail,
                           "file ends inside the trace_info packet (%zu of %zu bytes)",
                           (size_t)avail, size);
  const uint8_t *base = r->in + r->in_pos;
  mt__rd c = {base + h.header_len, base + size, 0};
#define OFF ((uint64_t)(c.p - base))
  uint32_t hdr = mt__get32(&c);
  if (c.bad || hdr >> MT__TIME_BITS != MT__EV_TRACE_INFO)
    return mt__reader_fail(r, MT_ERR_CORRUPT, h.header_len,
                           "the first event is not trace_info (code %u)", hdr >> MT__TIME_BITS);
  packet p = {.time_begin = h.time_begin, .time_end = h.time_end};
  if (event_time(&p, hdr) != h.time_begin)
    return mt__reader_fail(r, MT_ERR_CORRUPT, h.header_len,
                           "trace_info time differs from its packet's");
  mt_trace_info *in = &r->info;
  uint64_t rate_bits = mt__get64(&c);
  memcpy(&in->sample_rate, &rate_bits, sizeof rate_bits);
  in->word_size = mt__get8(&c);
  const char **fields[3] = {&in->executable_name, &in->host_name, &in->runtime_params};
  for (int i = 0; i < 3; i++) {
    size_t len = 0;
    const char *s = mt__getstr(&c, &len);
    if (!s) return mt__reader_fail(r, MT_ERR_CORRUPT, OFF, "unterminated string in trace_info");
    if (!(*fields[i] = mt__strtab_intern(&r->strings, s, len))) return mt__reader_nomem(r);
  }
  in->pid = mt__get64(&c);
  in->context = "";
  if (h.version >= 2) {
    size_t len = 0;
    const char *s = mt__getstr(&c, &len);
    if (!s) return mt__reader_fail(r, MT_ERR_CORRUPT, OFF, "unterminated context in trace_info");
    if (!(in->context = mt__strtab_intern(&r->strings, s, len))) return mt__reader_nomem(r);
  }
  if (c.bad) return mt__reader_fail(r, MT_ERR_CORRUPT, OFF, "trace_info event cut short");
  if (c.p != c.end)
    return mt__reader_fail(r, MT_ERR_CORRUPT, OFF, "%zu unexpected bytes after trace_info",
                           (size_t)(c.end - c.p));
  if (!(in->sample_rate > 0 && in->sample_rate <= 1))
    return mt__reader_fail(r, MT_ERR_CORRUPT, h.header_len + 4,
                           "sample rate %g is not a probability in (0, 1]", in->sample_rate);
#undef OFF
  in->start_time = h.time_begin;
  in->initial_domain = h.domain;
  in->version = h.version;
  r->in_pos += size;
  return MT_OK;
}

int mt_reader_open_fd(mt_reader **out, int fd, const char *name) {
  mt_reader *r = calloc(1, sizeof *r);
  *out = r;
  if (!r) return MT_ERR_NOMEM;
  r->fd = fd;
  r->name = strdup(name ? name : "(trace)");
  struct stat st;
  off_t pos = lseek(fd, 0, SEEK_CUR);
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && pos >= 0 && st.st_size >= pos)
    r->file_size = (uint64_t)(st.st_size - pos);
  /* A file smaller than the buffer gets a buffer its size (small traces,
   * fuzzing inputs); fill() grows it if the file turns out longer. */
  r->in_cap = INBUF_SIZE;
  if (r->file_size && r->file_size < INBUF_SIZE)
    r->in_cap = r->file_size < INBUF_MIN ? INBUF_MIN : (size_t)r->file_size;
  r->in = malloc(r->in_cap);
  if (!r->name || !r->in) {
    mt_reader_close(r);
    *out = NULL;
    return MT_ERR_NOMEM;
  }
  return read_trace_info(r);
}

int mt_reader_open(mt_reader **out, const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    mt_reader *r = calloc(1, sizeof *r);
    *out = r;
    if (!r) return MT_ERR_NOMEM;
    r->fd = -1;
    r->name = strdup(path);
    snprintf(r->err, sizeof r->err, "%s: cannot open: %s", path, strerror(e));
    r->err_off = MT_NO_OFFSET;
    r->status = MT_ERR_IO;
    return MT_ERR_IO;
  }
  int rc = mt_reader_open_fd(out, fd, path);
  if (*out) (*out)->own_fd = 1;
  else close(fd);
  return rc;
}

void mt_reader_close(mt_reader *r) {
  if (!r) return;
  mt__many_free(r->many);
  if (r->own_fd && r->fd >= 0) close(r->fd);
  for (size_t i = 0; i < r->ndoms; i++) {
    domain *d = r->doms[i];
    mt__bt_decoder_free(&d->bt);
    packet *lists[2] = {d->cur, d->qhead};
    for (int j = 0; j < 2; j++)
      for (packet *p = lists[j]; p;) {
        packet *n = j == 0 ? NULL : p->next;
        free(p->buf);
        free(p);
        p = n;
      }
    free(d);
  }
  for (packet *p = r->free_packets; p;) {
    packet *n = p->next;
    free(p->buf);
    free(p);
    p = n;
  }
  for (size_t i = 0; i < r->nloc_chunks; i++) free(r->loc_chunks[i]);
  free(r->loc_chunks);
  free(r->lists);
  mt__u64map_free(&r->loc_index);
  mt__strtab_free(&r->strings);
  free(r->in);
  free(r->name);
  free(r);
}

/* ---- queries ---- */

const mt_trace_info *mt_reader_info(const mt_reader *r) {
  return r->many ? mt__many_info(r->many) : &r->info;
}

void mt_reader_progress(const mt_reader *r, uint64_t *done, uint64_t *total) {
  if (r->many) {
    mt__many_progress(r->many, done, total);
    return;
  }
  if (done) *done = r->in_off + r->in_pos;
  if (total) *total = r->file_size;
}

const char *mt_reader_error(const mt_reader *r) {
  if (!r) return "out of memory";
  return r->many ? mt__many_error(r->many) : r->err;
}

const char *mt_reader_warning(const mt_reader *r) {
  if (r->many) return mt__many_warning(r->many);
  return r->warn_set ? r->warn : NULL;
}

uint64_t mt_reader_error_offset(const mt_reader *r) {
  if (r->many) return mt__many_error_offset(r->many);
  return r->status < 0 ? r->err_off : MT_NO_OFFSET;
}

int mt_reader_skip(mt_reader *r, unsigned kinds) {
  if (kinds >> (MT_EVENT_COLLECT + 1)) return MT_ERR_INVALID;
  r->skip = kinds;
  return MT_OK;
}

mt__bt_decoder *mt__reader_bt_tags(const mt_reader *r, const mt_event *ev) {
  if (r->many || ev->kind != MT_EVENT_ALLOC) return NULL;
  for (size_t k = 0; k < r->ndoms; k++)
    if (r->doms[k]->id == ev->domain && ev->backtrace == r->doms[k]->bt.bt)
      return &r->doms[k]->bt;
  return NULL;
}

uint64_t mt_reader_skipped(const mt_reader *r) {
  uint64_t n = r->passed;
  for (size_t k = 0; k < r->ndoms; k++) n += r->doms[k]->passed;
  return n;
}

void mt__reader_checked_only(mt_reader *r) {
  r->checked_only = 1;
  r->fast = NULL;
}

int mt_reader_follow(mt_reader *r, int on) {
  if (r->many || r->done) return MT_ERR_INVALID;
  r->follow = on != 0;
  r->in_eof = 0; /* the file may have grown since it was seen to end */
  return MT_OK;
}

uint64_t mt_reader_truncated(const mt_reader *r) {
  if (r->many) return mt__many_truncated(r->many);
  return r->truncated ? r->truncated_off : MT_NO_OFFSET;
}

int mt_reader_open_many(mt_reader **out, const char *const *paths, size_t n) {
  if (n == 1) return mt_reader_open(out, paths[0]);
  mt_reader *r = calloc(1, sizeof *r);
  *out = r;
  if (!r) return MT_ERR_NOMEM;
  r->fd = -1;
  if (n == 0) {
    snprintf(r->err, sizeof r->err, "no trace to read");
    r->err_off = MT_NO_OFFSET;
    return r->status = MT_ERR_INVALID;
  }
  int rc = mt__many_open(&r->many, paths, n, r->err, sizeof r->err, &r->err_off);
  if (rc != MT_OK) r->status = rc;
  return rc;
}

size_t mt_reader_trace_finished(const mt_reader *r, size_t i) {
  return r->many ? mt__many_finished(r->many, i) : SIZE_MAX;
}

size_t mt_reader_trace_count(const mt_reader *r) {
  return r->many ? mt__many_count(r->many) : 1;
}

uint64_t mt_reader_trace_end(const mt_reader *r, size_t k) {
  return r->many ? mt__many_end(r->many, k) : k == 0 ? r->last_event : 0;
}
