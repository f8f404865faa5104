/* Tracing turned on and off by a signal (MEMTRACE_SIGNAL, `memtrace run
 * --toggle-signal`): each delivery of the signal starts a tracing period
 * or ends the running one, and each period writes a complete trace.
 * Internal to the tracer. */
#ifndef MT_TRACER_TOGGLE_H
#define MT_TRACER_TOGGLE_H

#include <stddef.h>

#include "memtrace/tracer.h"

/* The signal MEMTRACE_SIGNAL names ("USR2", "SIGUSR2", or a number), 0 for
 * none, or -1 for one that cannot be used (said). */
int mt__toggle_signal(const char *text);

/* Takes `sig` from the program: its deliveries toggle tracing with the
 * options o (copied; their destination a pattern, each period's named by
 * mt__trace_period_path).
 * Starts the first period at once unless paused. 1 when set up (tracing
 * or waiting for the signal), or a negative status, said. */
int mt__toggle_setup(int sig, const mt_trace_options *o, int paused);

#endif
