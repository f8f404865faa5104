/*
 * memtrace/format.h - read and write memtrace traces.
 *
 * A memtrace trace is a sequence of CTF packets (see docs/format.md and the
 * TSDL files in the memtrace repository). This module reads every published
 * version of the format (1, 2 and 3) and writes versions 2 (the default:
 * readable by every released memtrace tool) and 3 (adds per-domain packet
 * streams). It depends on nothing beyond libc.
 *
 * Conventions of this header
 * --------------------------
 * - Every function that can fail returns an int status: MT_OK (0) on
 *   success, or a negative MT_ERR_* code. The object it acted on then holds a
 *   human-readable message (mt_reader_error / mt_writer_error) naming the
 *   file and, for corrupt data, the byte offset and what was wrong.
 * - Timestamps are microseconds since the Unix epoch (as in the trace).
 * - Lengths are in words of the trace's word size (64-bit words in every
 *   trace memtrace or memtrace-c writes).
 * - Backtraces are arrays of 64-bit location codes ordered from the
 *   outermost caller (main) to the allocation point, in the reader's events
 *   and in the writer's input alike.
 * - Objects are opaque; strings and arrays returned by a reader are owned by
 *   it and stay valid as documented at each function.
 * - Nothing here is thread-safe on a single object; distinct objects may be
 *   used from distinct threads.
 */
#ifndef MEMTRACE_FORMAT_H
#define MEMTRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef MT_API
#define MT_API __attribute__((visibility("default")))
#endif

/* ---- Status codes --------------------------------------------------------- */

enum {
  MT_OK = 0,
  MT_ERR_IO = -1,      /* a read or write failed (errno-derived message)    */
  MT_ERR_CORRUPT = -2, /* the trace is malformed; the message has the offset */
  MT_ERR_VERSION = -3, /* the trace has a format version this reader lacks  */
  MT_ERR_NOMEM = -4,   /* out of memory                                     */
  MT_ERR_INVALID = -5, /* the caller broke a documented contract            */
  MT_ERR_FORKED = -6,  /* writer: the process forked; this copy stopped     */
  MT_ERR_CLOSED = -7   /* writer: an earlier error stopped this writer      */
};

/* A static English name for a status code ("corrupt trace", ...). */
MT_API const char *mt_status_name(int status);

/* The library's version, "MAJOR.MINOR.PATCH". */
MT_API const char *mt_version(void);

/* ---- Data model ------------------------------------------------------------ */

/* The newest format version this library reads and writes. */
#define MT_FORMAT_VERSION_MAX 3

typedef enum mt_source {
  MT_SOURCE_MINOR = 0,   /* a language runtime's minor (young) heap          */
  MT_SOURCE_MAJOR = 1,   /* a language runtime's major heap                  */
  MT_SOURCE_EXTERNAL = 2 /* anything else: malloc, pools, mmap, GPU memory   */
} mt_source;

/* An anonymous mapping (mmap) traced by the malloc interposer is an
 * external allocation whose innermost frame is this location, a frame of
 * its own before the function that mapped it (docs/format.md, 13.4). */
#define MT_MAPPING_FILENAME "[anonymous mapping]"
#define MT_MAPPING_FUNCTION "mmap"

typedef enum mt_event_kind {
  MT_EVENT_ALLOC = 0,
  MT_EVENT_PROMOTE = 1,
  MT_EVENT_COLLECT = 2
} mt_event_kind;

/* One source location. A location code (a return address, say) stands for a
 * list of these: the function that contains the code and the functions
 * inlined into it at that point, outermost first. */
typedef struct mt_location {
  const char *filename;
  const char *defname; /* the function (OCaml: definition) name           */
  uint32_t line;       /* stored in 20 bits: larger values become 0xfffff  */
  uint32_t start_char; /* stored in 8 bits: larger values become 0xff      */
  uint32_t end_char;   /* stored in 10 bits: larger values become 0x3ff    */
} mt_location;

/* The trace_info event, first in every trace. */
typedef struct mt_trace_info {
  double sample_rate;         /* probability that a word is sampled          */
  uint32_t word_size;         /* bits per word: 64                           */
  const char *executable_name;
  const char *host_name;
  const char *runtime_params; /* OCaml: OCAMLRUNPARAM; memtrace-c: settings */
  uint64_t pid;
  uint64_t start_time;        /* microseconds since the epoch                */
  const char *context;        /* "" when absent (always absent in v1)        */
  uint32_t initial_domain;    /* domain of the trace_info packet (v3)        */
  uint32_t version;           /* format version of the trace_info packet     */
} mt_trace_info;

/* One event delivered by the reader. */
typedef struct mt_event {
  mt_event_kind kind;
  mt_source source;          /* alloc only                                   */
  uint32_t domain;           /* 0 before v3                                  */
  uint64_t time;             /* microseconds since the epoch                 */
  uint64_t obj_id;           /* the object allocated, promoted or collected  */
  uint64_t length;           /* alloc only: size in words                    */
  uint64_t nsamples;         /* alloc only: sample points in the block (>=1) */
  const uint64_t *backtrace; /* alloc only: outermost caller first; valid
                                until the next mt_reader_next call           */
  size_t backtrace_len;
  size_t common_prefix;      /* alloc only: leading frames shared with the
                                previous allocation of the same domain, as
                                encoded in the trace                         */
} mt_event;

/* ---- Reader ---------------------------------------------------------------- */

typedef struct mt_reader mt_reader;

/* Opens the trace at `path` and reads its trace_info packet.
 * On success *out is a reader and the result is MT_OK. On failure the result
 * is negative and *out is still a reader holding the error message (read it
 * with mt_reader_error, then mt_reader_close it), except for MT_ERR_NOMEM,
 * where *out may be NULL. */
MT_API int mt_reader_open(mt_reader **out, const char *path);

/* As mt_reader_open, for an already open descriptor positioned at the start
 * of a trace. `name` names it in messages. The reader does not close `fd`. */
MT_API int mt_reader_open_fd(mt_reader **out, int fd, const char *name);

/* Opens the traces at paths[0..n) as one (a process tree, a fleet): their
 * events merged by time (event times are since the epoch, so traces that
 * started at different times line up), ties in the order of paths; an
 * event comes earlier than the one before it only where its own trace's
 * events go back (see mt_reader_next). The
 * traces must share their word size; traces of different sample rates are
 * read at the lowest, each sample of a trace at rate r kept with
 * probability lowest / r (memtrace subsample's thinning, with a fixed
 * seed) and an allocation left with no sample dropped with its later
 * events. In the merged trace:
 * - object ids are new, in allocation order;
 * - a code c of trace k reads ((k + 1) << 48) | c when c < 2^48 (a return
 *   address, a location code), else (1 << 63) | a number; mt_reader_lookup
 *   and mt_reader_has_code take those codes;
 * - an event's domain is (k << 16) | its domain in trace k, so each event
 *   says its trace, and common_prefix pairs allocations within one trace;
 * - mt_reader_info gives the earliest start, the lowest sample rate, the
 *   word size, the executable and host when all traces agree (else a
 *   list), the first trace's pid, and a context saying how many traces
 *   (and the rates thinned).
 * Errors name the trace they come from. One path is mt_reader_open; MT_OK,
 * or a negative status (MT_ERR_INVALID for word sizes that differ) with
 * the reader holding the message, as for mt_reader_open. */
MT_API int mt_reader_open_many(mt_reader **out, const char *const *paths, size_t n);
/* The traces a reader reads: 1, or n for mt_reader_open_many. */
MT_API size_t mt_reader_trace_count(const mt_reader *r);
/* The time (us since the epoch) of trace k's last event read so far: its
 * end once the reader has returned 0. */
MT_API uint64_t mt_reader_trace_end(const mt_reader *r, size_t k);
/* The i-th trace of a merged reader to have been read to its end (its
 * events all returned), in the order they ended; SIZE_MAX while fewer
 * have ended, and always for a reader of one trace. */
MT_API size_t mt_reader_trace_finished(const mt_reader *r, size_t i);

/* The span of the trace file at `path` as its packet headers give it,
 * read without decoding a packet (a seek each): the first packet's start
 * (the trace's start_time) in *first, and the latest end among the whole
 * packets of that packet's process in *last (us since the epoch). Every
 * released writer ends a packet at its last event's time, so *last is
 * the time of the trace's last event, but a trace whose events go back in
 * time (mt_reader_next) may end earlier: check against the events read.
 * MT_OK; MT_ERR_INVALID when `path` is no regular file (a pipe, a
 * socket); MT_ERR_IO when it cannot be read (errno says why);
 * MT_ERR_CORRUPT when a header is not a memtrace packet's or the file
 * holds no whole packet. */
MT_API int mt_trace_span(const char *path, uint64_t *first, uint64_t *last);

/* Releases the reader (and closes the file mt_reader_open opened). NULL is
 * accepted. */
MT_API void mt_reader_close(mt_reader *r);

/* The trace_info event. Valid until mt_reader_close. */
MT_API const mt_trace_info *mt_reader_info(const mt_reader *r);

/* Reads the next event into *ev. Returns 1 when *ev holds an event, 0 at the
 * end of the trace, or a negative status on error (the reader is then
 * stopped: further calls return the same status).
 *
 * Location events are consumed here and fill the location table. Packets
 * written by another process (a forked child) are skipped. Events of several
 * domains (v3) are merged in time order as far as the reader has read ahead
 * (every domain seen so far with a packet in hand, or up to a bound of
 * queued bytes): a domain whose first packet comes later in the file than
 * others' later events yields an event earlier than the one before it.
 * Each domain's own order is kept.
 * A truncated last packet ends the trace (0) and sets mt_reader_warning. */
MT_API int mt_reader_next(mt_reader *r, mt_event *ev);

/* Events a reader need not return: mt_reader_next still reads and checks
 * the events of the kinds in `kinds` (a mask of 1u << mt_event_kind; 0,
 * the default, skips none), errors included, but returns only the others.
 * For a reader that wants allocations alone, it saves a call and a return
 * per event it would drop. MT_OK; MT_ERR_INVALID for bits that name no
 * kind. */
MT_API int mt_reader_skip(mt_reader *r, unsigned kinds);

/* The events mt_reader_skip's kinds made the reader pass over so far: with
 * the events mt_reader_next returned, every event read. */
MT_API uint64_t mt_reader_skipped(const mt_reader *r);

/* Reading a trace still being written: while `on`, the end of the file
 * is only the end for now. mt_reader_next then returns 0 after the last
 * whole packet written so far (a partial packet is left unread, and no
 * warning is set), and a later call reads what was appended since. With
 * several domains, events come in the order a read of the whole file
 * gives them: an event waits while a domain's next packet may still come
 * (up to the same bound of packets read ahead). Turned off, the next end
 * of the file is the trace's end (a partial last packet a truncation).
 * MT_OK; MT_ERR_INVALID for a reader of several traces, or one that has
 * already ended. */
MT_API int mt_reader_follow(mt_reader *r, int on);

/* The locations a code stands for, outermost first, or NULL when none are
 * known (no location event named the code, or one named it with an empty
 * list); *n receives the count. Valid until mt_reader_close. */
MT_API const mt_location *mt_reader_lookup(const mt_reader *r, uint64_t code,
                                           size_t *n);

/* Whether a location event has named `code` (possibly with no locations). */
MT_API int mt_reader_has_code(const mt_reader *r, uint64_t code);

/* Bytes of the file consumed so far, and its total size (0 when unknown,
 * e.g. for a pipe). */
MT_API void mt_reader_progress(const mt_reader *r, uint64_t *done,
                               uint64_t *total);

/* The message of the last error, or "" if none. */
MT_API const char *mt_reader_error(const mt_reader *r);

/* After mt_reader_next returned 0: a message saying what was left unread or
 * skipped (a truncated last packet, packets of another pid), or NULL when
 * the whole trace was read. */
MT_API const char *mt_reader_warning(const mt_reader *r);

/* An offset that names no place in the trace. */
#define MT_NO_OFFSET UINT64_MAX

/* Where the last error was found: the byte offset in the trace of the
 * corrupt or unreadable part (MT_ERR_CORRUPT, MT_ERR_VERSION), else
 * MT_NO_OFFSET (an I/O error, out of memory, or no error). */
MT_API uint64_t mt_reader_error_offset(const mt_reader *r);

/* After mt_reader_next returned 0: the byte offset of the truncated packet
 * that ended the trace, or MT_NO_OFFSET when the trace ended whole. */
MT_API uint64_t mt_reader_truncated(const mt_reader *r);

/* ---- Writer ---------------------------------------------------------------- */

typedef struct mt_writer mt_writer;

/* Receives each finished packet, whole. Returns 0, or a negative errno value
 * on failure (the writer then stops: MT_ERR_IO, and MT_ERR_CLOSED after). */
typedef int (*mt_sink_fn)(void *ctx, const void *buf, size_t len);

/* Gives the locations of a code that a trace is about to mention for the
 * first time (or again after the writer's cache evicted it). Code 0 is never
 * asked for: the cache starts zero-filled, so memtrace's encoding treats it
 * as already present (give real codes non-zero values). Sets *locs and
 * *n (NULL and 0 for no locations); *locs must stay valid until the call
 * returns to the writer. Returns 0; any other value stops the writer. Called
 * during flushes, never twice for one code in one packet unless the code
 * itself was logged twice. */
typedef int (*mt_resolve_fn)(void *ctx, uint64_t code,
                             const mt_location **locs, size_t *n);

typedef struct mt_writer_options {
  int version;           /* 2 (default when 0) or 3                         */
  int fd;                /* destination when sink is NULL; not closed       */
  mt_sink_fn sink;       /* destination callback, or NULL to write to fd    */
  void *sink_ctx;
  mt_resolve_fn resolve; /* NULL: codes get no locations                    */
  void *resolve_ctx;
  int check_pid;         /* non-zero: before each write, compare getpid()
                            with info->pid and stop with MT_ERR_FORKED if
                            they differ (the child of a fork)               */
} mt_writer_options;

/* Creates a writer and writes the trace_info packet. `info` is copied; its
 * version is ignored (options decide); initial_domain names the domain of
 * the trace_info packet and of the first events in version 3 (it must fit
 * in 16 bits) and is ignored in version 2. `options`
 * is required: it names the destination. On failure *out is still a writer holding the message (close it), except
 * for MT_ERR_NOMEM where it may be NULL. */
MT_API int mt_writer_open(mt_writer **out, const mt_trace_info *info,
                          const mt_writer_options *options);

/* Records an allocation of `length` words carrying `nsamples` sample points
 * (>= 1), at `time`, with a backtrace of `len` codes, outermost first.
 * The object's id is stored in *obj_id (may be NULL). `domain` must be 0 for
 * version 2. A time earlier than the domain's last event is raised to it, so
 * timestamps stay monotone. */
MT_API int mt_writer_alloc(mt_writer *w, uint64_t time, uint32_t domain,
                           uint64_t length, uint64_t nsamples,
                           mt_source source, const uint64_t *backtrace,
                           size_t len, uint64_t *obj_id);

/* Records that object `obj_id` (an id this writer returned) was promoted /
 * collected. */
MT_API int mt_writer_promote(mt_writer *w, uint64_t time, uint32_t domain,
                             uint64_t obj_id);
MT_API int mt_writer_collect(mt_writer *w, uint64_t time, uint32_t domain,
                             uint64_t obj_id);

/* The id the next allocation of `domain` will get. */
MT_API uint64_t mt_writer_next_obj_id(mt_writer *w, uint32_t domain);

/* Writes the buffered events as whole packets. */
MT_API int mt_writer_flush(mt_writer *w);

/* Flushes, then releases the writer (the fd stays open). Returns the flush's
 * status. NULL is accepted. */
MT_API int mt_writer_close(mt_writer *w);

/* The message of the last error, or "" if none. */
MT_API const char *mt_writer_error(const mt_writer *w);

#ifdef __cplusplus
}
#endif

#endif /* MEMTRACE_FORMAT_H */
