/* The viewer's HTTP/1.1 server (docs/viewer.md, "HTTP" and "Limits"):
 * GET-style requests without bodies, a thread per connection, persistent
 * connections, and every request answered with a status.
 *
 * Two halves: the head parser (http_head.c), a pure function over bytes,
 * and the server (http_server.c), which owns sockets and threads and calls
 * a handler once per request whose head parsed. Requests beyond the limits
 * below never reach the handler: the server answers them through the
 * error callback, as it does malformed ones. */
#ifndef MT_VIEWER_HTTP_H
#define MT_VIEWER_HTTP_H

#include <stddef.h>
#include <sys/socket.h>

/* The most a head may hold: a head still incomplete at this size is
 * answered 414 (inside the request line) or 431 (inside the fields). It is
 * past every limit below together, so that a head just over them is
 * answered with its exact figures. */
#define MT_HTTP_HEAD_MAX ((size_t)64 * 1024)
/* Header fields kept for lookup; more are counted (and refused by the
 * max_headers limit, which must not exceed it). */
#define MT_HTTP_FIELDS_MAX 128
/* Query parameters kept; max_args must not exceed it. */
#define MT_HTTP_ARGS_MAX 64

typedef struct mt_http_limits {
  size_t max_target;       /* bytes of the request target, as sent: 414 */
  unsigned max_args;       /* query parameters: 400 */
  size_t max_header_bytes; /* bytes of the header fields (name, value, 4 each): 431 */
  unsigned max_headers;    /* header fields: 431 */
} mt_http_limits;

typedef struct mt_http_arg {
  const char *name;  /* decoded ('+' is a space, %XX a byte, %00 DEL) */
  const char *value; /* decoded; NULL for a parameter without '=' */
} mt_http_arg;

/* A request's head, parsed in place in the buffer it was read into: every
 * string points there, and lives as long as the request. */
typedef struct mt_http_request {
  const char *method;       /* as sent (case matters: "GET") */
  const char *path;         /* the target's path, decoded as an argument is, '+' kept */
  size_t target_len;        /* bytes of the target as sent, query included */
  unsigned minor;           /* HTTP/1.minor */
  mt_http_arg args[MT_HTTP_ARGS_MAX];
  unsigned nargs;           /* in the order sent (a repeated one is kept twice) */
  const char *field_name[MT_HTTP_FIELDS_MAX], *field_value[MT_HTTP_FIELDS_MAX];
  unsigned nfields;         /* kept; values without their surrounding blanks */
  int has_body;             /* Content-Length > 0 or Transfer-Encoding: never read */
  int close;                /* the connection ends after the answer (HTTP/1.0, a body,
                               "Connection: close") */
  const struct sockaddr *peer; /* set by the server */
} mt_http_request;

/* Parses the head in buf[0..n) (through its blank line; leading blank
 * lines are skipped), writing NULs and decoded bytes into buf. Returns 0,
 * or the HTTP status to answer (400, 414, 431, 505) with the reason in
 * msg[0..msglen); then rq is partly filled and must not be used. */
unsigned mt_http_parse(char *buf, size_t n, const mt_http_limits *lim, mt_http_request *rq,
                       char *msg, size_t msglen);

/* Where the head in buf[0..n) ends: the offset just past its blank line,
 * or 0 while it is incomplete. *scanned carries the offset up to which
 * the bytes were looked at before (0 at the start of a head), so that a
 * head read in many pieces is scanned once. */
size_t mt_http_head_end(const char *buf, size_t n, size_t *scanned);

/* Whether buf[0..n) holds anything but blank lines (the bytes a client may
 * send between requests). */
int mt_http_started(const char *buf, size_t n);

/* The value of the first header field named name (any case), or NULL. */
const char *mt_http_field(const mt_http_request *rq, const char *name);

/* The value of cookie `name` in the Cookie fields, copied into
 * buf[0..n): 1, or 0 when there is none or it does not fit. */
int mt_http_cookie(const mt_http_request *rq, const char *name, char *buf, size_t n);

/* ---- the server ---- */

typedef struct mt_http_response {
  unsigned status;
  const char *type;         /* Content-Type */
  const char *body;
  size_t len;
  int free_body;            /* body came from malloc: freed once sent */
  const char *cache;        /* Cache-Control, or NULL */
  const char *set_cookie;   /* Set-Cookie, or NULL */
} mt_http_response;

/* Answers rq into *out (zeroed before the call). A HEAD request's body is
 * not sent (its length is); 405 gets "Allow: GET, HEAD". Runs on the
 * connection's thread, possibly for seconds, beside other connections'. */
typedef void (*mt_http_handler)(void *ctx, const mt_http_request *rq, mt_http_response *out);
/* Fills *out with the answer to a request refused by the server itself
 * (status and message as for mt_http_parse, or 408 and 503). */
typedef void (*mt_http_error)(void *ctx, unsigned status, const char *msg,
                              mt_http_response *out);

typedef struct mt_http_config {
  mt_http_limits limits;
  double head_seconds;     /* to send a whole head, from the connection's start or
                              the end of its previous answer: else 408, closed */
  double idle_seconds;     /* sending an answer without progress: closed */
  double linger_seconds;   /* a closing connection drains its input this long at most */
  unsigned max_connections;  /* at once (a thread each): past it, 503 */
  unsigned max_per_address;  /* from one address; 0: no limit */
  mt_http_handler handler;
  mt_http_error error;
  void *ctx;
} mt_http_config;

typedef struct mt_http_server mt_http_server;

/* Serves the listening socket lfd (the server owns it from now on, and
 * closes it even on failure) on a thread of its own. Returns the server,
 * or NULL with why in err[0..n). */
mt_http_server *mt_http_start(int lfd, const mt_http_config *cfg, char *err, size_t n);

/* Stops accepting, ends every connection (an answer being computed ends
 * first) and frees the server. */
void mt_http_stop(mt_http_server *s);

#endif
