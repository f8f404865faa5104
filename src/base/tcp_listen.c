#include "tcp_listen.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int mt_tcp_listen_on(const struct sockaddr *sa, socklen_t len, int backlog) {
  int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
  if (fd < 0) return -1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, sa, len) != 0 || listen(fd, backlog) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

int mt_tcp_listen(const char *spec, char *shown, size_t n, char *err, size_t errn) {
  char host[256] = "127.0.0.1";
  const char *port = spec, *colon = strrchr(spec, ':');
  if (colon) {
    size_t hl = (size_t)(colon - spec);
    if (hl >= sizeof host) {
      snprintf(err, errn, "host name too long in '%s'", spec);
      return -2;
    }
    if (hl) {
      memcpy(host, spec, hl);
      host[hl] = 0;
    }
    port = colon + 1;
  }
  char *end;
  long p = strtol(port, &end, 10);
  if (!*port || *end || p < 0 || p > 65535) {
    snprintf(err, errn, "invalid port '%s'", port);
    return -2;
  }
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res;
  int gai = getaddrinfo(host, port, &hints, &res);
  if (gai) {
    snprintf(err, errn, "cannot resolve %s: %s", host, gai_strerror(gai));
    return -1;
  }
  int fd = mt_tcp_listen_on(res->ai_addr, res->ai_addrlen, 1);
  if (fd < 0) {
    int e = errno;
    snprintf(err, errn, "cannot listen on %s:%s: %s%s", host, port, strerror(e),
             e == EADDRINUSE ? " (another process listens there: choose another port, or 0 "
                               "for any free one)"
                             : "");
    freeaddrinfo(res);
    return -1;
  }
  freeaddrinfo(res);
  struct sockaddr_storage sa;
  socklen_t sl = sizeof sa;
  char serv[16] = "?";
  if (getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
    getnameinfo((struct sockaddr *)&sa, sl, NULL, 0, serv, sizeof serv, NI_NUMERICSERV);
  snprintf(shown, n, "%s:%s", host, serv);
  return fd;
}
