/* What a traced process tells `memtrace run` (MT__RUN_NOTES_ENV,
 * src/format/trace_file.h): that it traces, and the processes it starts.
 * Internal. */
#ifndef MT_TRACER_RUNNOTES_H
#define MT_TRACER_RUNNOTES_H

#define MT__RUNNOTES_HIDDEN __attribute__((visibility("hidden")))

/* At tracing start: opens the file the variable names, if set (a
 * descriptor of our own, parked as the trace's). */
MT__RUNNOTES_HIDDEN void mt__runnotes_open(void);
/* When tracing did not start: closes it. */
MT__RUNNOTES_HIDDEN void mt__runnotes_close(void);
/* Appends "s PID": this process has started tracing. */
MT__RUNNOTES_HIDDEN void mt__runnotes_started(void);
/* Appends "t PID" (traced: nonzero) or "u PID" for a child process.
 * Async-signal-safe (a fork handler, a fork from a signal handler). */
MT__RUNNOTES_HIDDEN void mt__runnotes_child(int traced, long pid);
/* Appends "x PID US WHY": this process stopped tracing before its end, at
 * US microseconds since the epoch, for the reason WHY (one line). */
MT__RUNNOTES_HIDDEN void mt__runnotes_stopped(unsigned long long us, const char *why);

#endif
