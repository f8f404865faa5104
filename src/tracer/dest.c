#include "dest.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/private_file.h"
#include "format/trace_file.h"

static int split_host_port(const char *s, int host_optional, mt__dest *d, char *err,
                           size_t errlen) {
  const char *colon = strrchr(s, ':');
  const char *host = s, *port = colon ? colon + 1 : s;
  size_t hlen = colon ? (size_t)(colon - s) : 0;
  if (!colon && !host_optional) {
    snprintf(err, errlen, "'%s' needs HOST:PORT", s);
    return -1;
  }
  if (host[0] == '[' && hlen >= 2 && host[hlen - 1] == ']') { /* [::1]:port */
    host++;
    hlen -= 2;
  }
  if (hlen >= sizeof d->host) {
    snprintf(err, errlen, "host name too long");
    return -1;
  }
  memcpy(d->host, host, hlen);
  d->host[hlen] = 0;
  if (!d->host[0]) snprintf(d->host, sizeof d->host, host_optional ? "127.0.0.1" : "");
  if (!d->host[0]) {
    snprintf(err, errlen, "'%s' has no host", s);
    return -1;
  }
  char *end;
  long p = strtol(port, &end, 10);
  if (!*port || *end || p < 0 || p > 65535) {
    snprintf(err, errlen, "invalid port '%s'", port);
    return -1;
  }
  snprintf(d->port, sizeof d->port, "%ld", p);
  return 0;
}

void mt__dest_anchor(const char *s, char *out, size_t n) {
  char cwd[PATH_MAX], dir[2 * PATH_MAX];
  if (!s[0] || s[0] == '/' || mt__trace_dest_is_socket(s) || !getcwd(cwd, sizeof cwd)) {
    if (out != s) snprintf(out, n, "%s", s);
    return;
  }
  /* the directory's own % doubled: expanded, %% gives % back, and a
   * directory named like 50%p stays itself */
  size_t k = 0;
  for (const char *c = cwd; *c && k + 2 < sizeof dir; c++) {
    if (*c == '%') dir[k++] = '%';
    dir[k++] = *c;
  }
  dir[k] = 0;
  if (k + 1 + strlen(s) >= n || k + 1 + strlen(s) >= PATH_MAX) { /* too long: as it is */
    if (out != s) snprintf(out, n, "%s", s);
    return;
  }
  char rel[PATH_MAX];
  snprintf(rel, sizeof rel, "%s", s); /* s may be out */
  snprintf(out, n, "%s%s%s", dir, strcmp(cwd, "/") ? "/" : "", rel);
}

int mt__dest_parse(const char *s, mt__dest *d, char *err, size_t errlen) {
  memset(d, 0, sizeof *d);
  if (!s || !*s) {
    snprintf(err, errlen, "empty destination");
    return -1;
  }
  if (strncmp(s, "tcp:", 4) == 0) {
    d->kind = MT__DEST_TCP;
    return split_host_port(s + 4, 0, d, err, errlen);
  }
  if (strncmp(s, "listen:", 7) == 0) {
    d->kind = MT__DEST_LISTEN;
    return split_host_port(s + 7, 1, d, err, errlen);
  }
  d->kind = MT__DEST_FILE;
  if (strlen(s) >= sizeof d->path) {
    snprintf(err, errlen, "path too long");
    return -1;
  }
  mt__dest_anchor(s, d->path, sizeof d->path);
  d->per_process = mt__trace_path_has_pid(s);
  return 0;
}

static int connect_timeout(int fd, const struct sockaddr *a, socklen_t len, int ms) {
  int flags = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int rc = connect(fd, a, len);
  if (rc != 0 && errno == EINPROGRESS) {
    struct pollfd p = {fd, POLLOUT, 0};
    rc = poll(&p, 1, ms);
    if (rc == 0) {
      errno = ETIMEDOUT;
      rc = -1;
    } else if (rc > 0) {
      int e = 0;
      socklen_t el = sizeof e;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el);
      errno = e;
      rc = e ? -1 : 0;
    }
  }
  fcntl(fd, F_SETFL, flags);
  return rc;
}

/* A trace file belongs to one process (MEMTRACE exported to both ends of
 * a pipeline, or MEMTRACE_KEEP_ENV=1 without %p, gave two processes one
 * file, and both traces were lost): it is claimed as trace_file.h says.
 * The lock goes with the open file: a forked child closes its copy
 * (session.c's fork_child), exec closes it (close-on-exec), and a program
 * that execs itself under `memtrace run` reopens the file. */
static int open_trace_file(const char *path, char *err, size_t errlen) {
  /* O_NONBLOCK: a FIFO no process reads would block the open, and the
   * program with it, until one came; it fails at once instead (ENXIO).
   * Writes block as usual: the flag is cleared once open. */
  int fd = mt_open_private(path, O_NONBLOCK, err, errlen);
  if (fd < 0 && errno == ENXIO) {
    snprintf(err, errlen, "cannot write to %s: no process is reading that FIFO", path);
    return -1;
  }
  if (fd < 0) return -1;
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  int claim = mt__trace_file_claim(fd);
  if (claim == MT__TRACE_FILE_BUSY)
    snprintf(err, errlen,
             "%s is being written by another traced process (put %%p in the path to give each "
             "process its own file)",
             path);
  else if (claim == MT__TRACE_FILE_NOT_EMPTIED)
    snprintf(err, errlen, "cannot empty %s: %s", path, strerror(errno));
  if (claim != MT__TRACE_FILE_OK) {
    close(fd);
    return -1;
  }
  return fd;
}

int mt__dest_open(const mt__dest *d, char *err, size_t errlen) {
  if (d->kind == MT__DEST_FILE) {
    char path[PATH_MAX];
    mt__trace_path_expand(d->path, (long)getpid(), path, sizeof path);
    return open_trace_file(path, err, errlen);
  }
  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = d->kind == MT__DEST_LISTEN ? AI_PASSIVE : 0;
  int gai = getaddrinfo(d->host, d->port, &hints, &res);
  if (gai != 0) {
    snprintf(err, errlen, "cannot resolve %s: %s", d->host, gai_strerror(gai));
    return -1;
  }
  int fd = -1, e = 0;
  for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      e = errno;
      continue;
    }
    int ok;
    if (d->kind == MT__DEST_LISTEN) {
      int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      ok = bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 4) == 0;
    } else {
      ok = connect_timeout(fd, a->ai_addr, a->ai_addrlen, 5000) == 0;
      if (ok) mt__dest_send_timeout(fd);
    }
    if (!ok) {
      e = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0)
    snprintf(err, errlen, "cannot %s %s:%s: %s", d->kind == MT__DEST_LISTEN ? "listen on" : "connect to",
             d->host, d->port, strerror(e));
  return fd;
}

int mt__dest_sink_kind(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return MT__SINK_OTHER;
  return S_ISSOCK(st.st_mode)  ? MT__SINK_SOCKET
         : S_ISFIFO(st.st_mode) ? MT__SINK_PIPE
         : S_ISREG(st.st_mode)  ? MT__SINK_FILE
                                : MT__SINK_OTHER;
}

/* Whether len more bytes would take the regular file at fd past the
 * process's RLIMIT_FSIZE. The write that crosses it gets SIGXFSZ, whose
 * default action kills the process: a traced program under `ulimit -f`
 * died of its trace (status 153), where plain it ran to the end. So a
 * packet that would cross the limit is not written: the write fails with
 * EFBIG, as the kernel's would have without the signal, and tracing stops
 * with its message; the packets before it stay whole. Asked at every write
 * (a packet is tens of KiB): the program may change its limit at any
 * time. */
static int past_size_limit(int fd, size_t len) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 0;
  off_t at = lseek(fd, 0, SEEK_CUR);
  return at >= 0 && (unsigned long long)at + len > (unsigned long long)rl.rlim_cur;
}

void mt__dest_send_timeout(int fd) {
  struct timeval tv = {MT__SEND_TIMEOUT_S, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static int write_all(int fd, int is_socket, const char *p, size_t len) {
  while (len > 0) {
    double t0 = is_socket ? mt_monotonic_seconds() : 0;
    ssize_t n = is_socket ? send(fd, p, len, MSG_NOSIGNAL) : write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      /* SO_SNDTIMEO passed without a byte sent: the peer stopped reading */
      if (is_socket && (errno == EAGAIN || errno == EWOULDBLOCK)) return -ETIMEDOUT;
      return -errno;
    }
    /* ... or with some: what the buffers took before it stalled (else each
     * call would wait its own timeout) */
    if (is_socket && (size_t)n < len && mt_monotonic_seconds() - t0 >= MT__SEND_TIMEOUT_S)
      return -ETIMEDOUT;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* A pipe whose reader has gone (MEMTRACE=/dev/stdout into `| head`, a
 * FIFO's reader quitting): write raises SIGPIPE, whose default kills the
 * process, and a traced program died of its trace (status 141). There is
 * no MSG_NOSIGNAL for write, so SIGPIPE is blocked in this thread for the
 * write; if the write raised it (EPIPE), and the program had none pending
 * already, it is taken back before the mask is restored: the write fails
 * with EPIPE, and tracing stops with its message. */
static int write_to_pipe(int fd, const char *p, size_t len) {
  sigset_t pipe_only, old, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  int had = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  int rc = write_all(fd, 0, p, len);
  if (rc == -EPIPE && !had) {
    struct timespec now = {0, 0};
    while (sigtimedwait(&pipe_only, NULL, &now) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

int mt__dest_write(int fd, int kind, const void *buf, size_t len) {
  if (kind == MT__SINK_SOCKET) return write_all(fd, 1, buf, len);
  if (kind == MT__SINK_PIPE) return write_to_pipe(fd, buf, len);
  if (kind == MT__SINK_FILE && past_size_limit(fd, len)) return -EFBIG;
  return write_all(fd, 0, buf, len);
}

/* The lowest number the trace's descriptor is moved to. */
#define PARK_FLOOR 512

int mt__dest_park(int fd) {
  struct rlimit rl;
  long floor = PARK_FLOOR;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      (long)rl.rlim_cur < 2 * PARK_FLOOR)
    floor = (long)rl.rlim_cur / 2;
  if (fd < 0 || fd >= floor) return fd;
  int hi = fcntl(fd, F_DUPFD_CLOEXEC, (int)floor);
  if (hi < 0) return fd; /* every number above taken, or none allowed: keep it */
  close(fd);
  return hi;
}

int mt__dest_adopt(int fd, mt__fd_id *id) {
  fd = mt__dest_park(fd);
  struct stat st;
  *id = fstat(fd, &st) == 0 ? (mt__fd_id){st.st_dev, st.st_ino} : (mt__fd_id){0, 0};
  return fd;
}

int mt__dest_same(int fd, const mt__fd_id *id) {
  struct stat st;
  return fstat(fd, &st) == 0 && st.st_dev == id->dev && st.st_ino == id->ino;
}

void mt__dest_close(int fd, const mt__fd_id *id) {
  if (fd >= 0 && mt__dest_same(fd, id)) close(fd);
}
