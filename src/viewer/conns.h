/* The server's connections, from accept to the socket's last byte
 * (docs/viewer.md, "Limits").
 *
 * A deadline on request heads: libmicrohttpd's own timeout counts idle
 * time, so a client sending one byte a second keeps its connection, and
 * its thread, forever; enough of them and no one else gets in. Here a
 * connection that has not sent a whole request head within `head_seconds`
 * of its start, or of the end of its previous request, is shut down.
 *
 * A lingering close: libmicrohttpd answers a request with a body, or one
 * followed by more, and closes with bytes unread; the system then resets
 * the connection, and the client's system drops the answer it had not read
 * yet. Here the closed socket lives on for a while, reading and dropping
 * what still comes, so that the client gets the answer and the end of the
 * stream. */
#ifndef MT_VIEWER_CONNS_H
#define MT_VIEWER_CONNS_H

#include <pthread.h>

#include "mhd_load.h"

#define MT_VCONNS_LINGER_MAX 256 /* sockets lingering at once; past it, closed */

typedef struct mt_vconn mt_vconn;

typedef struct mt_vconns {
  pthread_mutex_t lock;
  int wake[2];    /* a pipe: tells the thread that something changed */
  mt_vconn *list; /* every open connection */
  double head_seconds, linger_seconds;
  struct {
    int fd;
    double until;
  } linger[MT_VCONNS_LINGER_MAX];
  int nlinger;
  pthread_t thread;
  int running, stop;
} mt_vconns;

/* Starts the thread that shuts down late connections and lingers on
 * closed ones. 0, or -1 (no pipe or no thread). */
int mt_vconns_start(mt_vconns *w, double head_seconds, double linger_seconds);
/* Stops it and closes what lingers; after MHD_stop_daemon. */
void mt_vconns_stop(mt_vconns *w);

/* MHD_OPTION_NOTIFY_CONNECTION's callback, with w as its closure: keeps
 * the list of connections (socket_context is the connection's entry). */
void mt_vconns_notify(void *w, struct MHD_Connection *c, void **socket_context,
                      enum MHD_ConnectionNotificationCode toe);
/* The head of c's request is complete (its handler runs): no deadline
 * until the request ends. */
void mt_vconns_head_done(mt_vconns *w, struct MHD_Connection *c);
/* request (from malloc) is the record of c's request in progress, owned by
 * c's entry from now on: freed when the request ends or the connection
 * closes, whichever comes first (libmicrohttpd does not report the end of
 * a request whose head never completed), or when the next one is held.
 * 0, or -1 if c is untracked (request is then still the caller's). */
int mt_vconns_hold_request(struct MHD_Connection *c, void *request);
/* c's request ended: its record is freed, and the deadline of the next
 * head starts now. */
void mt_vconns_request_done(mt_vconns *w, struct MHD_Connection *c);

#endif
