/* The viewer's HTTP server: one thread accepts, one thread per connection
 * reads heads, calls the handler and writes answers (an answer may compute
 * for seconds, and /api/status must stay quick meanwhile).
 *
 * A connection's thread keeps every deadline itself: a whole head within
 * head_seconds (a client sending one byte a second is cut like a silent
 * one), progress within idle_seconds while answering. A connection that
 * closes with input unread would be reset by the system, and the client's
 * system would drop the part of the answer it had not read yet: the thread
 * shuts the socket for writing and drains it first (a lingering close). */
#include "http.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

typedef struct conn {
  struct conn *next, *prev;
  mt_http_server *s;
  int fd;
  struct sockaddr_storage peer;
} conn;

struct mt_http_server {
  mt_http_config cfg;
  int lfd, wake[2];
  pthread_t acceptor;
  pthread_mutex_t lock;
  pthread_cond_t ended; /* the last connection closed */
  conn *list;
  unsigned nconns;
  int stopping;
};

static const char *reason(unsigned status) {
  switch (status) {
  case 200: return "OK";
  case 400: return "Bad Request";
  case 403: return "Forbidden";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 408: return "Request Timeout";
  case 414: return "URI Too Long";
  case 431: return "Request Header Fields Too Large";
  case 500: return "Internal Server Error";
  case 503: return "Service Unavailable";
  case 505: return "HTTP Version Not Supported";
  default: return "Unknown";
  }
}

/* Waits until fd is ready for events: 1, or 0 once the monotonic deadline
 * has passed. An error or a hang-up counts as ready: the call that
 * follows reports it. */
static int wait_fd(int fd, short events, double deadline) {
  for (;;) {
    double left = deadline - mt_monotonic_seconds();
    if (left <= 0) return 0;
    struct pollfd p = {.fd = fd, .events = events};
    int r = poll(&p, 1, (int)ceil(left * 1000));
    if (r > 0 || (r < 0 && errno != EINTR)) return 1;
  }
}

/* Sends iov[0..n) whole: 0, or -1 (the client went, or made no progress
 * for idle seconds). */
static int send_all(int fd, struct iovec *iov, int n, double idle) {
  while (n > 0) {
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      if (!wait_fd(fd, POLLOUT, mt_monotonic_seconds() + idle)) return -1;
      continue;
    }
    size_t k = (size_t)w;
    while (n > 0 && k >= iov->iov_len) {
      k -= iov->iov_len;
      iov++;
      n--;
    }
    if (n > 0) {
      iov->iov_base = (char *)iov->iov_base + k;
      iov->iov_len -= k;
    }
  }
  return 0;
}

/* Writes r (its body unless head_only), waiting at most idle seconds for
 * progress, and frees its body: 0 or -1. */
static int respond(int fd, mt_http_response *r, int head_only, int close, double idle) {
  char date[64], head[1024];
  time_t now = time(NULL);
  struct tm tm;
  strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&now, &tm));
  int len = snprintf(head, sizeof head,
                     "HTTP/1.1 %u %s\r\nDate: %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "X-Content-Type-Options: nosniff\r\n%s%s%s%s%s%s%s%s\r\n",
                     r->status, reason(r->status), date, r->type ? r->type : "text/plain", r->len,
                     r->cache ? "Cache-Control: " : "", r->cache ? r->cache : "",
                     r->cache ? "\r\n" : "", r->set_cookie ? "Set-Cookie: " : "",
                     r->set_cookie ? r->set_cookie : "", r->set_cookie ? "\r\n" : "",
                     r->status == 405 ? "Allow: GET, HEAD\r\n" : "",
                     close ? "Connection: close\r\n" : "");
  int rc = -1;
  if (len > 0 && (size_t)len < sizeof head) {
    struct iovec iov[2] = {{head, (size_t)len}, {(void *)r->body, head_only ? 0 : r->len}};
    rc = send_all(fd, iov, iov[1].iov_len ? 2 : 1, idle);
  }
  if (r->free_body) free((void *)r->body);
  r->body = NULL;
  return rc;
}

static int respond_error(conn *c, unsigned status, const char *msg) {
  mt_http_response r = {0};
  c->s->cfg.error(c->s->cfg.ctx, status, msg, &r);
  return respond(c->fd, &r, 0, 1, c->s->cfg.idle_seconds);
}

/* A head that does not fit: 414 if its request line does not, else 431. */
static unsigned too_large(const char *buf, size_t n, char *msg, size_t msglen) {
  size_t start = 0;
  while (start < n && (buf[start] == '\r' || buf[start] == '\n')) start++;
  if (!memchr(buf + start, '\n', n - start)) {
    snprintf(msg, msglen, "request target too long: over %zu bytes in the request line", n - start);
    return 414;
  }
  snprintf(msg, msglen, "request header fields too large: over %zu bytes in the request head", n);
  return 431;
}

/* Reads a whole head into buf, after the len bytes already there: its
 * end, or 0 with *status the answer owed (0: none, the connection just
 * ends). */
static size_t read_head(conn *c, char *buf, size_t *len, unsigned *status, char *msg,
                        size_t msglen) {
  double deadline = mt_monotonic_seconds() + c->s->cfg.head_seconds;
  size_t scanned = 0, end;
  *status = 0;
  while (!(end = mt_http_head_end(buf, *len, &scanned))) {
    if (*len == MT_HTTP_HEAD_MAX) {
      *status = too_large(buf, *len, msg, msglen);
      return 0;
    }
    if (!wait_fd(c->fd, POLLIN, deadline)) {
      if (mt_http_started(buf, *len)) { /* a silent connection just ends */
        *status = 408;
        snprintf(msg, msglen, "the request head did not come whole within %g s",
                 c->s->cfg.head_seconds);
      }
      return 0;
    }
    ssize_t r = recv(c->fd, buf + *len, MT_HTTP_HEAD_MAX - *len, 0);
    if (r > 0) {
      *len += (size_t)r;
    } else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      if (r == 0 && mt_http_started(buf, *len)) { /* the client may still read */
        *status = 400;
        snprintf(msg, msglen, "the connection ended inside a request head");
      }
      return 0;
    }
  }
  return end;
}

/* Reads and drops what the client still sends, until it ends or for
 * linger_seconds at most. */
static void drain(conn *c, char *buf, size_t size) {
  shutdown(c->fd, SHUT_WR);
  double deadline = mt_monotonic_seconds() + c->s->cfg.linger_seconds;
  while (wait_fd(c->fd, POLLIN, deadline)) {
    ssize_t r = recv(c->fd, buf, size, 0);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) break;
  }
}

/* Takes c out of the server's list (closing its socket when close_fd)
 * and frees it. */
static void end_conn(conn *c, int close_fd) {
  mt_http_server *s = c->s;
  pthread_mutex_lock(&s->lock);
  if (close_fd) close(c->fd); /* under the lock: mt_http_stop never shuts a reused number */
  if (c->prev) c->prev->next = c->next;
  else s->list = c->next;
  if (c->next) c->next->prev = c->prev;
  if (--s->nconns == 0) pthread_cond_broadcast(&s->ended);
  pthread_mutex_unlock(&s->lock);
  free(c);
}

static void *serve(void *arg) {
  conn *c = arg;
  mt_http_server *s = c->s;
  char *buf = malloc(MT_HTTP_HEAD_MAX);
  mt_http_request *rq = malloc(sizeof *rq);
  size_t len = 0;
  int linger = 0;
  while (buf && rq) {
    char msg[256];
    unsigned status;
    size_t end = read_head(c, buf, &len, &status, msg, sizeof msg);
    if (!end) {
      linger = status != 0;
      if (status && respond_error(c, status, msg)) linger = 0;
      break;
    }
    status = mt_http_parse(buf, end, &s->cfg.limits, rq, msg, sizeof msg);
    int rc;
    if (status) { /* the framing of what follows is not to be trusted */
      rc = respond_error(c, status, msg);
      linger = 1;
    } else {
      mt_http_response r = {0};
      rq->peer = (const struct sockaddr *)&c->peer;
      s->cfg.handler(s->cfg.ctx, rq, &r);
      pthread_mutex_lock(&s->lock);
      linger = rq->close || s->stopping;
      pthread_mutex_unlock(&s->lock);
      rc = respond(c->fd, &r, strcmp(rq->method, "HEAD") == 0, linger, s->cfg.idle_seconds);
    }
    if (rc || linger) {
      linger = linger && rc == 0;
      break;
    }
    memmove(buf, buf + end, len - end); /* a request sent before this answer */
    len -= end;
  }
  if (linger) drain(c, buf, MT_HTTP_HEAD_MAX);
  free(rq);
  free(buf);
  end_conn(c, 1);
  return NULL;
}

/* Says 503 to a connection not taken, at once: the accepting thread does
 * not wait for a client to read. */
static void refuse(mt_http_server *s, int fd, const char *msg) {
  mt_http_response r = {0};
  s->cfg.error(s->cfg.ctx, 503, msg, &r);
  respond(fd, &r, 0, 1, 0);
  char buf[4096]; /* what came already: a reset would drop the answer */
  while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
  }
  shutdown(fd, SHUT_WR);
  close(fd);
}

static int same_address(const struct sockaddr_storage *a, const struct sockaddr_storage *b) {
  if (a->ss_family != b->ss_family) return 0;
  if (a->ss_family == AF_INET)
    return memcmp(&((const struct sockaddr_in *)a)->sin_addr,
                  &((const struct sockaddr_in *)b)->sin_addr, sizeof(struct in_addr)) == 0;
  if (a->ss_family == AF_INET6)
    return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                  &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
  return 0;
}

static void admit(mt_http_server *s, int fd, const struct sockaddr_storage *peer) {
  char msg[160] = "";
  pthread_mutex_lock(&s->lock);
  unsigned same = 0;
  for (conn *e = s->list; e; e = e->next) same += same_address(&e->peer, peer);
  if (s->nconns >= s->cfg.max_connections)
    snprintf(msg, sizeof msg, "too many connections: %u at once (at most %u)", s->nconns,
             s->cfg.max_connections);
  else if (s->cfg.max_per_address && same >= s->cfg.max_per_address)
    snprintf(msg, sizeof msg, "too many connections from this address: %u (at most %u)", same,
             s->cfg.max_per_address);
  conn *c = msg[0] ? NULL : calloc(1, sizeof *c);
  if (c) {
    c->s = s;
    c->fd = fd;
    c->peer = *peer;
    c->next = s->list;
    if (s->list) s->list->prev = c;
    s->list = c;
    s->nconns++;
  }
  pthread_mutex_unlock(&s->lock);
  if (!c) {
    refuse(s, fd, msg[0] ? msg : "out of memory");
    return;
  }
  pthread_attr_t attr;
  pthread_t t;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int err = pthread_create(&t, &attr, serve, c);
  pthread_attr_destroy(&attr);
  if (err) {
    end_conn(c, 0);
    refuse(s, fd, "cannot start a thread for the connection");
  }
}

static void *accept_loop(void *arg) {
  mt_http_server *s = arg;
  for (;;) {
    struct pollfd p[2] = {{.fd = s->lfd, .events = POLLIN}, {.fd = s->wake[0], .events = POLLIN}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[1].revents) break;
    struct sockaddr_storage peer;
    socklen_t plen = sizeof peer;
    memset(&peer, 0, sizeof peer);
    int fd = accept4(s->lfd, (struct sockaddr *)&peer, &plen, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) admit(s, fd, &peer);
    else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
      poll(NULL, 0, 100); /* until connections end and give descriptors back */
  }
  return NULL;
}

mt_http_server *mt_http_start(int lfd, const mt_http_config *cfg, char *err, size_t n) {
  mt_http_server *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, n, "out of memory");
    close(lfd);
    return NULL;
  }
  s->cfg = *cfg;
  s->lfd = lfd;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->ended, NULL);
  if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK)) {
    snprintf(err, n, "cannot make a pipe: %s", strerror(errno));
    close(lfd);
    free(s);
    return NULL;
  }
  if (pthread_create(&s->acceptor, NULL, accept_loop, s)) {
    snprintf(err, n, "cannot start a thread");
    close(s->wake[0]);
    close(s->wake[1]);
    close(lfd);
    free(s);
    return NULL;
  }
  return s;
}

void mt_http_stop(mt_http_server *s) {
  if (!s) return;
  pthread_mutex_lock(&s->lock);
  s->stopping = 1;
  pthread_mutex_unlock(&s->lock);
  char b = 1;
  if (write(s->wake[1], &b, 1) < 0) { /* a full pipe wakes it as well */
  }
  pthread_join(s->acceptor, NULL);
  close(s->lfd);
  pthread_mutex_lock(&s->lock);
  for (conn *c = s->list; c; c = c->next) shutdown(c->fd, SHUT_RDWR);
  while (s->nconns) pthread_cond_wait(&s->ended, &s->lock);
  pthread_mutex_unlock(&s->lock);
  close(s->wake[0]);
  close(s->wake[1]);
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->ended);
  free(s);
}
