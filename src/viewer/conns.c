#include "conns.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"

struct mt_vconn {
  mt_vconn *next, *prev;
  int fd;
  double deadline; /* of the head being received; 0 while a request is answered */
  int cut;         /* shut down: waiting for libmicrohttpd to close it */
  void *request;   /* the record of the request in progress (owned) */
};

static void wake(mt_vconns *w) {
  char b = 1;
  if (write(w->wake[1], &b, 1) < 0) { /* full: the thread wakes anyway */
  }
}

static void soonest(double *next, double t) {
  if (*next == 0 || t < *next) *next = t;
}

/* Shutting a socket down makes its connection's thread see the end of
 * the stream and close it: libmicrohttpd has no call to close a
 * connection from outside, and the socket stays open (so its number
 * cannot be reused) until the CLOSED notification, which takes the lock
 * held here. */
static void cut_late(mt_vconns *w, double t, double *next) {
  for (mt_vconn *e = w->list; e; e = e->next) {
    if (e->deadline <= 0 || e->cut) continue;
    if (e->deadline <= t) {
      shutdown(e->fd, SHUT_RDWR);
      e->cut = 1;
    } else {
      soonest(next, e->deadline);
    }
  }
}

static void unlinger(mt_vconns *w, int i) {
  close(w->linger[i].fd);
  w->linger[i] = w->linger[--w->nlinger];
}

/* Reads and drops what came: 0 at the end of the stream (or an error), 1
 * while it may go on. */
static int drop_input(int fd) {
  char buf[16384];
  for (int k = 0; k < 16; k++) {
    ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (r > 0) continue;
    if (r < 0 && errno == EINTR) continue;
    return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
  return 1;
}

static void *watch(void *arg) {
  mt_vconns *w = arg;
  struct pollfd p[1 + MT_VCONNS_LINGER_MAX];
  pthread_mutex_lock(&w->lock);
  while (!w->stop) {
    double t = mt_monotonic_seconds(), next = 0;
    cut_late(w, t, &next);
    for (int i = w->nlinger - 1; i >= 0; i--)
      if (w->linger[i].until <= t) unlinger(w, i);
      else soonest(&next, w->linger[i].until);
    int n = w->nlinger;
    p[0] = (struct pollfd){.fd = w->wake[0], .events = POLLIN};
    for (int i = 0; i < n; i++) p[1 + i] = (struct pollfd){.fd = w->linger[i].fd, .events = POLLIN};
    int ms = next == 0 ? -1 : (int)ceil((next - t) * 1000);
    pthread_mutex_unlock(&w->lock);
    int ready = poll(p, (nfds_t)(1 + n), ms);
    pthread_mutex_lock(&w->lock);
    if (ready <= 0) continue;
    if (p[0].revents) {
      char buf[64];
      while (read(w->wake[0], buf, sizeof buf) > 0) {
      }
    }
    /* only this thread removes: the first n are still those polled */
    for (int i = n - 1; i >= 0; i--)
      if (p[1 + i].revents && !drop_input(w->linger[i].fd)) unlinger(w, i);
  }
  while (w->nlinger) unlinger(w, 0);
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

int mt_vconns_start(mt_vconns *w, double head_seconds, double linger_seconds) {
  pthread_mutex_init(&w->lock, NULL);
  w->list = NULL;
  w->head_seconds = head_seconds;
  w->linger_seconds = linger_seconds;
  w->nlinger = 0;
  w->stop = 0;
  w->running = 0;
  if (pipe2(w->wake, O_CLOEXEC | O_NONBLOCK)) return -1;
  w->running = pthread_create(&w->thread, NULL, watch, w) == 0;
  if (!w->running) {
    close(w->wake[0]);
    close(w->wake[1]);
  }
  return w->running ? 0 : -1;
}

void mt_vconns_stop(mt_vconns *w) {
  if (!w->running) return;
  pthread_mutex_lock(&w->lock);
  w->stop = 1;
  wake(w);
  pthread_mutex_unlock(&w->lock);
  pthread_join(w->thread, NULL);
  close(w->wake[0]);
  close(w->wake[1]);
  w->running = 0;
}

static mt_vconn *entry(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *i =
      mt_mhd.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return i ? i->socket_context : NULL;
}

static void set_deadline(mt_vconns *w, mt_vconn *e, double deadline) {
  pthread_mutex_lock(&w->lock);
  e->deadline = deadline;
  if (deadline > 0) wake(w);
  pthread_mutex_unlock(&w->lock);
}

/* libmicrohttpd closes its descriptor after the CLOSED notification; a
 * duplicate keeps the socket (already shut for writing: the client sees
 * the end of the answer) for the thread to drain. */
static void linger(mt_vconns *w, int fd) {
  if (w->nlinger == MT_VCONNS_LINGER_MAX) return;
  int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (d < 0) return;
  shutdown(d, SHUT_WR);
  w->linger[w->nlinger].fd = d;
  w->linger[w->nlinger++].until = mt_monotonic_seconds() + w->linger_seconds;
  wake(w);
}

void mt_vconns_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                      enum MHD_ConnectionNotificationCode toe) {
  mt_vconns *w = cls;
  if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *i =
        mt_mhd.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    mt_vconn *e = calloc(1, sizeof *e);
    *socket_context = e;
    if (!e || !i) {
      /* untracked, it would escape the deadline: refuse it */
      if (i) shutdown(i->connect_fd, SHUT_RDWR);
      free(e);
      *socket_context = NULL;
      return;
    }
    e->fd = i->connect_fd;
    pthread_mutex_lock(&w->lock);
    e->deadline = mt_monotonic_seconds() + w->head_seconds;
    e->next = w->list;
    if (w->list) w->list->prev = e;
    w->list = e;
    wake(w);
    pthread_mutex_unlock(&w->lock);
  } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
    mt_vconn *e = *socket_context;
    if (!e) return;
    pthread_mutex_lock(&w->lock);
    if (e->prev) e->prev->next = e->next;
    else w->list = e->next;
    if (e->next) e->next->prev = e->prev;
    if (!e->cut && !w->stop) linger(w, e->fd);
    pthread_mutex_unlock(&w->lock);
    free(e->request);
    free(e);
    *socket_context = NULL;
  }
}

void mt_vconns_head_done(mt_vconns *w, struct MHD_Connection *c) {
  mt_vconn *e = entry(c);
  if (e) set_deadline(w, e, 0);
}

int mt_vconns_hold_request(struct MHD_Connection *c, void *request) {
  mt_vconn *e = entry(c);
  if (!e) return -1;
  free(e->request);
  e->request = request;
  return 0;
}

void mt_vconns_request_done(mt_vconns *w, struct MHD_Connection *c) {
  mt_vconn *e = entry(c);
  if (!e) return;
  free(e->request);
  e->request = NULL;
  set_deadline(w, e, mt_monotonic_seconds() + w->head_seconds);
}
