/* The processes a traced process starts, told to `memtrace run`
 * (MT__RUN_CHILDREN_ENV, src/format/trace_file.h). Internal. */
#ifndef MT_TRACER_CHILDREN_H
#define MT_TRACER_CHILDREN_H

#define MT__CHILDREN_HIDDEN __attribute__((visibility("hidden")))

/* At tracing start: opens the file the variable names, if set (a
 * descriptor of our own, parked as the trace's). */
MT__CHILDREN_HIDDEN void mt__children_open(void);
/* When tracing did not start: closes it. */
MT__CHILDREN_HIDDEN void mt__children_close(void);
/* Appends "t PID" (traced: nonzero) or "u PID". Async-signal-safe (a fork
 * handler, a fork from a signal handler); writes nothing once the program
 * has closed the descriptor or put a file of its own at its number. */
MT__CHILDREN_HIDDEN void mt__children_note(int traced, long pid);

#endif
