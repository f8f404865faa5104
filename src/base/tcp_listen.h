/* A listening TCP socket for "[HOST:]PORT", the address syntax of
 * `memtrace listen` and `memtrace view --listen` (HOST defaults to
 * 127.0.0.1; PORT 0 takes any free port). */
#ifndef MT_BASE_TCP_LISTEN_H
#define MT_BASE_TCP_LISTEN_H

#include <stddef.h>
#include <sys/socket.h>

/* A close-on-exec socket bound to sa (SO_REUSEADDR) and listening with
 * `backlog`: the socket, or -1 with errno set (EADDRINUSE: another process
 * listens there). */
int mt_tcp_listen_on(const struct sockaddr *sa, socklen_t len, int backlog);

/* Returns the socket (close-on-exec, backlog 1: one traced program), with
 * "HOST:PORT" as bound in shown[0..n). On failure returns -2 when the spec
 * itself is malformed (a usage error) or -1 when the system refused (the
 * host does not resolve, the port is taken), with a message naming what in
 * err[0..errn). */
int mt_tcp_listen(const char *spec, char *shown, size_t n, char *err, size_t errn);

#endif
