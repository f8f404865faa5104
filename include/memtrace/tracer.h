/*
 * memtrace/tracer.h - write a memtrace trace of this process.
 *
 * The tracer connects the sampling engine (memtrace/engine.h) to the trace
 * writer (memtrace/format.h): each sampled allocation becomes an alloc event
 * with its backtrace, each free of a sampled block a collect event, and
 * every code in a backtrace gets a location event (function, file, line,
 * inlined frames) the first time it appears, so traces need no binary to
 * be analysed.
 *
 * Destinations (MEMTRACE, or mt_trace_options.destination):
 *   PATH               a file; "%p" in it becomes the pid. A relative PATH
 *                      is taken from the working directory when tracing
 *                      starts: children that change directory (a forked
 *                      child's %p file, programs exec'd under
 *                      MEMTRACE_FOLLOW_EXEC) write beside it
 *   tcp:HOST:PORT      connect to a listener (memtrace listen / view)
 *   listen:[HOST:]PORT serve one client at a time (HOST defaults to
 *                      127.0.0.1): tracing runs from its connect to its
 *                      disconnect; a second client meanwhile is refused
 *
 * Environment: MEMTRACE (destination), MEMTRACE_RATE (rate per word,
 * default 1e-5), MEMTRACE_UNWIND (auto (default) | libunwind | fp), MEMTRACE_DEPTH (frames,
 * default 256), MEMTRACE_FORMAT (2 or 3), MEMTRACE_DEBUGINFO (1: also read
 * separate debug-info files), MEMTRACE_SEED (a number: the
 * same sampling decisions on every run, for tests), MEMTRACE_KEEP_ENV (1: let
 * exec'd children inherit MEMTRACE; by default it is removed when tracing
 * starts, so children are not traced into the same destination, and so is
 * this library's own entry in LD_PRELOAD, so that untraced children do not
 * load it; other LD_PRELOAD entries stay), MEMTRACE_FOLLOW_EXEC (1, with
 * the malloc interposer and a file destination: when the tracing process
 * itself execs, without fork, as a wrapper script's `exec prog` does, the
 * new program gets the settings back and traces into the same file,
 * replacing the old trace; with %p, every child, started by fork, vfork or
 * posix_spawn, traces what it execs to its own file; `memtrace run` sets
 * it unless --no-follow-exec), MEMTRACE_SIGNAL (a signal, USR2 or SIGUSR2,
 * USR1, HUP, URG, WINCH, PWR, TTIN, TTOU, or a real-time signal's number:
 * each delivery ends the tracing period and starts the next, and each
 * period is a complete trace of its own, "%n" in MEMTRACE becoming the
 * period's number, else ".N" going before a final ".ctf"; the signal is
 * taken from the program only then, and a forked child ignores it),
 * MEMTRACE_PAUSED (1, with MEMTRACE_SIGNAL: no tracing until the first
 * signal), MEMTRACE_MAPPINGS (0: the malloc interposer leaves anonymous
 * mappings out; by default the program's mmap'd anonymous memory is
 * sampled with the heap: docs/format.md 13.4), MEMTRACE_REDIRECT (0: an
 * allocator bound ahead of the interposer, linked into the program or
 * preloaded before it, is left alone, its blocks untraced; by default its
 * functions are redirected to the interposer's wrappers).
 *
 * A trace file is written by one process at a time: the writer holds an
 * exclusive flock(2) on it, and a process whose destination is a file
 * another one is writing does not trace (MT_ERR_IO from mt_trace_start,
 * its message naming the file), rather than mix two traces into one.
 *
 * Failure never stops the program: a destination that cannot be opened, a
 * failed write or a dropped connection stops tracing with one message on
 * standard error. So do a listener that reads nothing for 10 s (stopped,
 * or its host gone), a FIFO (or /dev/stdout piped) whose reader has
 * gone, without SIGPIPE reaching the program, a FIFO nobody reads (not
 * waited for), and a file that would pass the process's RLIMIT_FSIZE
 * (without SIGXFSZ; the packets before the limit stay whole). After
 * fork(), the child stops tracing unless the path has %p (then it traces
 * to its own file). At exit, buffered events are written; packets are
 * written whole, and at least once a second while samples come, so a
 * killed process (Ctrl-C, SIGTERM) leaves a trace readable up to its last
 * packet, about its last second missing. exec runs no exit handlers: the malloc
 * interposer wraps the exec functions and writes buffered events first; a
 * program that links this library and execs should call mt_trace_stop()
 * before it does.
 */
#ifndef MEMTRACE_TRACER_H
#define MEMTRACE_TRACER_H

#include "memtrace/format.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MT_DEFAULT_RATE 1e-5

typedef enum mt_unwind {
  MT_UNWIND_LIBUNWIND = 0,      /* DWARF CFI, with libunwind's caches     */
  MT_UNWIND_FRAME_POINTERS = 1, /* needs -fno-omit-frame-pointer; cheaper */
  MT_UNWIND_AUTO = 2            /* the default of MEMTRACE_UNWIND: frame
                                   pointers through functions known to
                                   set up a frame record (from their
                                   first bytes, or learned by comparing
                                   walks), the function's DWARF CFI
                                   (.eh_frame) from any other on;
                                   libunwind only where that cannot be
                                   followed (started then, not before) */
} mt_unwind;

typedef struct mt_trace_options {
  const char *destination; /* required                                    */
  double rate;             /* 0: MT_DEFAULT_RATE                          */
  const char *context;     /* stored in the trace_info; may be NULL       */
  int format_version;      /* 0: 2                                        */
  mt_unwind unwind;
  size_t max_depth;        /* 0: 256                                      */
  int separate_debuginfo;  /* also read separate debug-info files (-dbg
                              packages): line numbers in system libraries,
                              at ~0.1 s of CPU per process                 */
} mt_trace_options;

/* Starts tracing if the MEMTRACE environment variable names a destination,
 * with MEMTRACE_RATE etc. as above (the environment wins over `rate`; pass
 * 0 for the default). Returns 1 if tracing started, 0 if not requested, or
 * a negative status after printing why (bad MEMTRACE_RATE, destination not
 * reachable): the program goes on untraced. */
MT_API int mt_trace_if_requested(const char *context, double rate);

/* Starts tracing. MT_ERR_INVALID if already tracing or an option is out of
 * range, or for MT_UNWIND_LIBUNWIND when libunwind.so.8 cannot be loaded
 * (it is opened here, not linked); MT_ERR_IO if the destination cannot be
 * opened. mt_trace_error() says why. */
MT_API int mt_trace_start(const mt_trace_options *options);

/* Stops tracing: writes what is buffered and closes the destination. */
MT_API int mt_trace_stop(void);

MT_API int mt_trace_is_tracing(void);

/* Why the last start failed or tracing stopped, or "". */
MT_API const char *mt_trace_error(void);

#ifdef __cplusplus
}
#endif

#endif /* MEMTRACE_TRACER_H */
