/* memtrace view --attach PID: the viewer's live mode on a process that
 * memtrace attach traces into it. */
#ifndef MT_CLI_ATTACH_VIEW_ATTACH_H
#define MT_CLI_ATTACH_VIEW_ATTACH_H

#include <sys/types.h>

/* A loopback port free now, for the viewer to receive the stream on: its
 * number, or -1. */
int mt_attach_free_port(void);

/* Forks a process that waits until something listens on 127.0.0.1:port
 * (the viewer, started next by the caller), then runs memtrace attach on
 * pid with its stream to that port (rate: NULL for the default), and exits
 * with attach's status. Call before any thread is started. 0 and *child,
 * or -1. */
int mt_attach_spawn_for_view(pid_t pid, const char *rate, int port, pid_t *child);

#endif
