/* memtrace view: the HTTP side (GNU libmicrohttpd, loaded when the server
 * starts: see mhd_load.c). Only GET and HEAD; assets from memory; every
 * /api/ answer computed from the current snapshot, which a request holds a
 * reference to while it answers. Every request gets a status: the limits
 * below are answered in JSON, a token guards a server bound beyond
 * loopback (access.c), and slow clients are cut off (conns.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "access.h"
#include "answers.h"
#include "conns.h"
#include "live.h"
#include "mhd_load.h"
#include "base/private_file.h"
#include "base/tcp_listen.h"
#include "viewer.h"

/* The limits of a request (docs/viewer.md, "Limits"). A browser's
 * requests stay far below them: the longest query the page makes holds
 * three filter strings of 1024 bytes, under 10 KiB percent-encoded. */
#define MAX_ARGS 48              /* query parameters (each parsed once): 400 */
#define MAX_TARGET 16384         /* bytes of the request target: 414 */
#define MAX_HEADER_BYTES 16384   /* bytes of the header fields: 431 */
#define MAX_HEADERS 100          /* header fields: 431 */
/* libmicrohttpd's memory for one connection. It holds the request head
 * and the answer's header, so it has room for a head at the limits above
 * (32 KiB and 148 entries of 64 bytes) and an answer; a head that does
 * not fit gets libmicrohttpd's own 414 or 431. */
#define CONN_MEMORY ((size_t)64 * 1024)
/* A thread each (an answer may compute for seconds); beyond loopback no
 * single address may hold more than MAX_PER_ADDRESS of them. */
#define MAX_CONNECTIONS 256u
#define MAX_PER_ADDRESS 32u
#define HEAD_SECONDS 10.0  /* to send a whole request head */
#define LINGER_SECONDS 2.0 /* a closed connection drains its input at most this long */
#define IDLE_SECONDS 60u  /* libmicrohttpd's: without progress, once answering */

typedef struct server {
  mt_vlive *live;
  mt_vconns conns;
  int need_token;
  char token[MT_VTOKEN_LEN + 1];
  char cookie[40];      /* the cookie's name, with the port: ports share cookies */
  char set_cookie[160]; /* the header that sets it */
} server;

/* One request: from its request line (on_uri) to its end (on_done, or the
 * connection's close); held by the connection's entry (conns.h). */
typedef struct request {
  size_t target;   /* bytes of the request target, undecoded */
  unsigned params; /* query parameters */
  int answered;    /* a response is queued */
  int set_cookie;  /* the token came in the query: the answer sets the cookie */
} request;

const mt_vasset *mt_vasset_find(const char *path) {
  if (strcmp(path, "/") == 0) path = "/index.html";
  for (unsigned i = 0; i < mt_vassets_count; i++)
    if (strcmp(mt_vassets[i].path, path) == 0) return &mt_vassets[i];
  return NULL;
}

static enum MHD_Result reply(struct MHD_Connection *c, const server *sv, request *rq,
                            unsigned status, const char *mime, const void *data, size_t len,
                            enum MHD_ResponseMemoryMode mode, int api) {
  struct MHD_Response *r = mt_mhd.create_response_from_buffer(len, (void *)data, mode);
  if (!r) {
    if (mode == MHD_RESPMEM_MUST_FREE) free((void *)data);
    return MHD_NO;
  }
  if (rq) rq->answered = 1;
  if (rq && rq->set_cookie) mt_mhd.add_response_header(r, "Set-Cookie", sv->set_cookie);
  mt_mhd.add_response_header(r, "Content-Type", mime);
  mt_mhd.add_response_header(r, "X-Content-Type-Options", "nosniff");
  if (api) mt_mhd.add_response_header(r, "Cache-Control", "no-store");
  else mt_mhd.add_response_header(r, "Cache-Control", "no-cache");
  if (status == MHD_HTTP_METHOD_NOT_ALLOWED) mt_mhd.add_response_header(r, "Allow", "GET, HEAD");
  enum MHD_Result ok = mt_mhd.queue_response(c, status, r);
  mt_mhd.destroy_response(r);
  return ok;
}

static enum MHD_Result send_error(struct MHD_Connection *c, const server *sv, request *rq,
                                  unsigned status, const char *msg) {
  mt_json j;
  mt_json_init(&j);
  mt_json_obj(&j);
  mt_json_key(&j, "error");
  mt_json_str(&j, msg);
  mt_json_end_obj(&j);
  size_t len;
  char *text = mt_json_take(&j, &len);
  if (!text)
    return reply(c, sv, rq, 500, "application/json; charset=utf-8",
                 "{\"error\":\"out of memory\"}", 25, MHD_RESPMEM_PERSISTENT, 1);
  return reply(c, sv, rq, status, "application/json; charset=utf-8", text, len,
               MHD_RESPMEM_MUST_FREE, 1);
}

typedef struct args {
  mt_vquery q;
  unsigned allowed;
  char err[512];
  int bad;
  const char *name[MAX_ARGS]; /* every name given, to refuse a repeated one */
  int names;
  /* the parameters with a value, for the answer cache's key */
  const char *key[MAX_ARGS], *value[MAX_ARGS];
  int n;
} args;

static enum MHD_Result each_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value) {
  args *a = cls;
  (void)kind;
  if (a->bad) return MHD_NO;
  /* a repeated parameter is refused as an unknown one is: taking either
   * value would let a slip change the data shown */
  for (int i = 0; i < a->names; i++)
    if (strcmp(a->name[i], key) == 0) {
      snprintf(a->err, sizeof a->err, "repeated parameter '%.100s' (give each parameter once)",
               key);
      a->bad = 1;
      return MHD_NO;
    }
  if (a->names == MAX_ARGS) { /* on_uri counted them: not reached */
    snprintf(a->err, sizeof a->err, "too many query parameters (at most %d)", MAX_ARGS);
    a->bad = 1;
    return MHD_NO;
  }
  a->name[a->names++] = key;
  if (strcmp(key, "token") == 0) return MHD_YES; /* access, checked before (allowed) */
  if (mt_vquery_set(&a->q, a->allowed, key, value, a->err, sizeof a->err)) a->bad = 1;
  if (value && *value) { /* an empty value is an absent parameter */
    a->key[a->n] = key;
    a->value[a->n++] = value;
  }
  return a->bad ? MHD_NO : MHD_YES;
}

/* The cache key of a request: the path and its non-empty parameters sorted
 * by name (each name given once), each value prefixed by its length so
 * that no value can fake a separator. NULL when out of memory. */
static char *cache_key(const char *path, args *a) {
  int order[MAX_ARGS];
  size_t len = strlen(path) + 2;
  for (int i = 0; i < a->n; i++) {
    order[i] = i;
    len += strlen(a->key[i]) + strlen(a->value[i]) + 24;
  }
  for (int i = 1; i < a->n; i++) /* insertion sort: a few parameters */
    for (int k = i; k > 0 && strcmp(a->key[order[k - 1]], a->key[order[k]]) > 0; k--) {
      int t = order[k];
      order[k] = order[k - 1];
      order[k - 1] = t;
    }
  char *key = malloc(len), *w = key;
  if (!key) return NULL;
  w += sprintf(w, "%s?", path);
  for (int i = 0; i < a->n; i++) {
    const char *k = a->key[order[i]], *v = a->value[order[i]];
    w += sprintf(w, "%s%s=%zu:%s", i ? "&" : "", k, strlen(v), v);
  }
  return key;
}

static void status_json(mt_vlive *l, mt_json *j) {
  pthread_mutex_lock(&l->lock);
  mt_vsnap *s = l->snap;
  mt_json_obj(j);
  mt_json_key(j, "generation");
  mt_json_uint(j, s ? s->generation : 0);
  mt_json_key(j, "state");
  mt_json_str(j, l->state);
  if (l->message[0]) {
    mt_json_key(j, strcmp(l->state, "error") == 0 ? "error" : "message");
    mt_json_str(j, l->message);
  }
  mt_json_key(j, "objects");
  mt_json_uint(j, s ? s->nobj : 0);
  mt_json_key(j, "duration");
  mt_json_num(j, s ? s->duration : 0);
  mt_json_key(j, "live");
  mt_json_bool(j, l->live);
  mt_json_end_obj(j);
  pthread_mutex_unlock(&l->lock);
}

typedef struct header_size {
  size_t bytes;
  unsigned fields;
} header_size;

static enum MHD_Result each_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value) {
  header_size *h = cls;
  (void)kind;
  h->bytes += strlen(key) + (value ? strlen(value) : 0) + 4; /* ": " and CRLF */
  h->fields++;
  return MHD_YES;
}

/* Whether the request may be answered: always on loopback (and with
 * --no-token); beyond, with the token in the cookie or in the query (then
 * the answer sets the cookie, so that the page's own requests pass). */
static int allowed(const server *sv, struct MHD_Connection *c, request *rq) {
  if (!sv->need_token) return 1;
  if (mt_vaccess_token_equal(mt_mhd.lookup_connection_value(c, MHD_COOKIE_KIND, sv->cookie),
                             sv->token))
    return 1;
  if (mt_vaccess_token_equal(mt_mhd.lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token"),
                             sv->token)) {
    rq->set_cookie = 1;
    return 1;
  }
  return 0;
}

static enum MHD_Result answer_api(server *sv, request *rq, struct MHD_Connection *c,
                                  const char *url);

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls) {
  server *sv = cls;
  request *rq = *con_cls;
  (void)version;
  (void)upload;
  /* Every request is answered at its first call, once its head is in: a
   * body is never read (libmicrohttpd then closes the connection after
   * the answer). */
  if (rq && rq->answered) {
    *upload_size = 0;
    return MHD_YES;
  }
  mt_vconns_head_done(&sv->conns, c);
  if (!rq) return send_error(c, sv, NULL, 500, "out of memory");
  char msg[200];
  if (rq->target > MAX_TARGET) {
    snprintf(msg, sizeof msg, "request target too long: %zu bytes (at most %d)", rq->target,
             MAX_TARGET);
    return send_error(c, sv, rq, MHD_HTTP_URI_TOO_LONG, msg);
  }
  if (rq->params > MAX_ARGS) {
    snprintf(msg, sizeof msg, "too many query parameters: %u (at most %d)", rq->params, MAX_ARGS);
    return send_error(c, sv, rq, MHD_HTTP_BAD_REQUEST, msg);
  }
  header_size h = {0, 0};
  mt_mhd.get_connection_values(c, MHD_HEADER_KIND, each_header, &h);
  if (h.bytes > MAX_HEADER_BYTES || h.fields > MAX_HEADERS) {
    snprintf(msg, sizeof msg,
             "request header fields too large: %zu bytes in %u fields (at most %d bytes in %d "
             "fields)",
             h.bytes, h.fields, MAX_HEADER_BYTES, MAX_HEADERS);
    return send_error(c, sv, rq, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE, msg);
  }
  if (!allowed(sv, c, rq))
    return send_error(c, sv, rq, MHD_HTTP_FORBIDDEN,
                      "this server needs its access token: open the URL memtrace view printed "
                      "(.../?token=...)");
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
    return send_error(c, sv, rq, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD");
  if (strncmp(url, "/api/", 5) != 0) {
    const mt_vasset *a = mt_vasset_find(url);
    if (!a) return send_error(c, sv, rq, MHD_HTTP_NOT_FOUND, "not found");
    return reply(c, sv, rq, MHD_HTTP_OK, a->mime, a->data, a->len, MHD_RESPMEM_PERSISTENT, 0);
  }
  return answer_api(sv, rq, c, url);
}

/* An /api/ request, answered from the current snapshot. */
static enum MHD_Result answer_api(server *sv, request *rq, struct MHD_Connection *c,
                                  const char *url) {
  mt_vlive *l = sv->live;
  const mt_vendpoint *e = NULL;
  for (size_t i = 0; i < MT_VENDPOINTS; i++)
    if (strcmp(url, mt_vendpoints[i].path) == 0) e = &mt_vendpoints[i];
  if (!e) return send_error(c, sv, rq, MHD_HTTP_NOT_FOUND, "no such endpoint");
  args *a = malloc(sizeof *a);
  if (!a) return send_error(c, sv, rq, 500, "out of memory");
  mt_vquery_init(&a->q);
  a->allowed = e->params;
  a->bad = 0;
  a->names = a->n = 0;
  mt_mhd.get_connection_values(c, MHD_GET_ARGUMENT_KIND, each_arg, a);
  if (a->bad) {
    enum MHD_Result r = send_error(c, sv, rq, MHD_HTTP_BAD_REQUEST, a->err);
    free(a);
    return r;
  }
  mt_json j;
  mt_json_init(&j);
  int rc = 0;
  mt_vsnap *s = NULL;
  double t0 = mt_vdebug() ? mt_monotonic_seconds() : 0;
  char *key = NULL, *text = NULL;
  size_t len = 0;
  if (strcmp(e->path, "/api/status") == 0) {
    status_json(l, &j);
  } else if (!(s = mt_vlive_get(l))) {
    free(a);
    char msg[1100];
    pthread_mutex_lock(&l->lock);
    snprintf(msg, sizeof msg, "no trace loaded yet%s%s", l->message[0] ? ": " : "", l->message);
    pthread_mutex_unlock(&l->lock);
    return send_error(c, sv, rq, MHD_HTTP_SERVICE_UNAVAILABLE, msg);
  } else if (!e->answer) {
    rc = mt_vanswer_info(s, l->live, &j);
  } else {
    key = cache_key(e->path, a);
    int cached = key ? mt_vsnap_cache_begin(s, key, &text, &len) : -1;
    if (cached == 1) {
      /* answered before for this snapshot */
    } else if (e->tree && mt_vsnap_wait(s)) {
      rc = -1;
    } else {
      rc = e->answer(s, &a->q, &j);
      if (rc == 0 && cached == 0) text = mt_json_take(&j, &len);
    }
    if (cached == 0) mt_vsnap_cache_end(s, key, rc == 0 ? text : NULL, len);
  }
  mt_vsnap_unref(s);
  if (mt_vdebug())
    fprintf(stderr, "memtrace view: [debug] %s %s %.3f s\n", url,
            key ? key + strlen(e->path) : "", mt_monotonic_seconds() - t0);
  free(key);
  if (rc == -2 || rc == -3 || rc == -4) {
    mt_json_free(&j);
    char msg[160];
    if (rc == -2)
      snprintf(msg, sizeof msg, "bad value for 'focus': '%lld' (no such function)",
               (long long)a->q.focus);
    else if (rc == -3)
      snprintf(msg, sizeof msg, "bad value for 'collected': a window of collection times "
                                "contradicts leaks (objects never collected)");
    else
      snprintf(msg, sizeof msg, "no base trace to compare with (memtrace view --base OLD NEW)");
    free(a);
    return send_error(c, sv, rq, rc == -4 ? MHD_HTTP_NOT_FOUND : MHD_HTTP_BAD_REQUEST, msg);
  }
  free(a);
  if (rc == 0 && !text) text = mt_json_take(&j, &len);
  mt_json_free(&j);
  if (!text) return send_error(c, sv, rq, 500, "out of memory");
  return reply(c, sv, rq, MHD_HTTP_OK, "application/json; charset=utf-8", text, len,
               MHD_RESPMEM_MUST_FREE, 1);
}

/* Decodes %XX in place, as libmicrohttpd would, except that %00 becomes
 * DEL instead of ending the string: "/app.js%00.txt" must not name
 * "/app.js". */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s) {
  (void)cls;
  (void)c;
  char *w = s;
  for (const char *r = s; *r; r++) {
    unsigned v;
    if (r[0] == '%' && r[1] && r[2] && sscanf(r + 1, "%2x", &v) == 1 &&
        strchr("0123456789abcdefABCDEF", r[1]) && strchr("0123456789abcdefABCDEF", r[2])) {
      *w++ = v ? (char)v : 0x7f;
      r += 2;
    } else {
      *w++ = *r;
    }
  }
  *w = 0;
  return (size_t)(w - s);
}

/* The query's parameters as libmicrohttpd splits them: at each '&', an
 * empty last one left out. */
static unsigned count_params(const char *q) {
  unsigned n = 0;
  while (*q) {
    n++;
    const char *amp = strchr(q, '&');
    if (!amp) break;
    q = amp + 1;
  }
  return n;
}

/* Called with the raw request target once the request line is in, before
 * libmicrohttpd splits the query: its record for each parameter (64 bytes,
 * even for an empty one) comes from the connection's memory, and
 * libmicrohttpd 0.9.75 fills that memory with a long query and then can
 * send no answer at all. A target past the limits is answered 400 or 414
 * (handle) without its query, which is cut here, in libmicrohttpd's
 * buffer, right after the '?' it found: it then parses an empty query. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
  (void)cls;
  size_t target = strlen(uri);
  char *q = strchr(uri, '?');
  unsigned params = q ? count_params(q + 1) : 0;
  if (q && (target > MAX_TARGET || params > MAX_ARGS)) q[1] = 0;
  request *rq = calloc(1, sizeof *rq);
  if (!rq) return NULL;
  rq->target = target;
  rq->params = params;
  if (mt_vconns_hold_request(c, rq) < 0) {
    free(rq);
    return NULL;
  }
  return rq;
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode toe) {
  server *sv = cls;
  (void)toe;
  *con_cls = NULL; /* the record is freed with the request's end below */
  mt_vconns_request_done(&sv->conns, c);
}

/* Binds the address sa (port set here) on port, or on the next 20 if
 * busy. */
static struct MHD_Daemon *start(server *sv, struct sockaddr_storage *sa, const char *host,
                                int port, int *got) {
  int v6 = sa->ss_family == AF_INET6;
  for (int p = port; p <= port + 20 && p <= 65535; p++) {
    if (v6) ((struct sockaddr_in6 *)sa)->sin6_port = htons((uint16_t)p);
    else ((struct sockaddr_in *)sa)->sin_port = htons((uint16_t)p);
    snprintf(sv->cookie, sizeof sv->cookie, "memtrace_token_%d", p);
    snprintf(sv->set_cookie, sizeof sv->set_cookie, "%s=%s; Path=/; HttpOnly; SameSite=Strict",
             sv->cookie, sv->token);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_POLL | (v6 ? MHD_USE_IPv6 : 0);
    /* on loopback the clients share one address: a limit per address
     * would be the total limit */
    unsigned per_address = mt_vaccess_loopback((struct sockaddr *)sa) ? 0 : MAX_PER_ADDRESS;
    struct MHD_Daemon *d = mt_mhd.start_daemon(
        flags, (uint16_t)p, NULL, NULL, handle, sv, MHD_OPTION_SOCK_ADDR, sa,
        MHD_OPTION_CONNECTION_LIMIT, MAX_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        per_address, MHD_OPTION_CONNECTION_TIMEOUT, IDLE_SECONDS,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, CONN_MEMORY, MHD_OPTION_URI_LOG_CALLBACK, on_uri,
        sv, MHD_OPTION_NOTIFY_COMPLETED, on_done, sv, MHD_OPTION_NOTIFY_CONNECTION,
        mt_vconns_notify, &sv->conns, MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
        MHD_OPTION_END);
    if (d) {
      *got = p;
      if (p != port)
        fprintf(stderr, "memtrace view: port %d is taken (another process listens there): "
                        "serving on %d\n",
                port, p);
      return d;
    }
    if (port == 0) break;
  }
  fprintf(stderr, "memtrace view: cannot listen on %s ports %d to %d (other processes listen "
                  "there: choose another port with --port, or 0 for any free one)\n",
          host, port, port + 20);
  return NULL;
}

/* host's address in sa; 0, or -1 after saying why. */
static int resolve(const char *host, struct sockaddr_storage *sa) {
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res;
  int gai = getaddrinfo(host, "0", &hints, &res);
  if (gai) {
    fprintf(stderr, "memtrace view: cannot resolve %s: %s\n", host, gai_strerror(gai));
    return -1;
  }
  memset(sa, 0, sizeof *sa);
  memcpy(sa, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  return 0;
}

/* Beyond loopback the server needs a token, unless --no-token. 0, or -1
 * after saying why. */
static int set_access(server *sv, const struct sockaddr_storage *sa, const char *host,
                      int no_token) {
  if (mt_vaccess_loopback((const struct sockaddr *)sa)) return 0;
  if (no_token) {
    fprintf(stderr,
            "memtrace view: WARNING: --no-token: %s is not a loopback address, and anyone who "
            "can reach it\n"
            "memtrace view: WARNING: can read this trace (its functions, files, sizes) and "
            "make this server work\n",
            host);
    return 0;
  }
  char err[200];
  if (mt_vaccess_new_token(sv->token, err, sizeof err)) {
    fprintf(stderr, "memtrace view: %s\n", err);
    return -1;
  }
  sv->need_token = 1;
  return 0;
}

/* Whether the traces at paths[0..n) open (read as one): 0, or -1 after
 * saying why (what: a prefix naming them). None is fine. */
static int readable(const char *const *paths, size_t n, const char *what) {
  if (n == 0) return 0;
  mt_reader *r;
  int rc = mt_reader_open_many(&r, paths, n);
  if (rc != MT_OK) fprintf(stderr, "memtrace view: %s%s\n", what, mt_reader_error(r));
  mt_reader_close(r);
  return rc == MT_OK ? 0 : -1;
}

int mt_viewer_serve(const mt_viewer_opts *o) {
  static mt_vlive l = {.lock = PTHREAD_MUTEX_INITIALIZER,
                       .changed = PTHREAD_COND_INITIALIZER,
                       .state = "loading",
                       .listen_fd = -1};
  static server sv = {.live = &l};
  const char *host = o->host ? o->host : "127.0.0.1";
  char why[600];
  if (mt_mhd_load(why, sizeof why)) { /* before any work: nothing to undo */
    fprintf(stderr, "memtrace view: %s\n", why);
    return 1;
  }
  struct sockaddr_storage sa;
  if (resolve(host, &sa) || set_access(&sv, &sa, host, o->no_token)) return 1;
  /* Signals are taken by sigwait below, in this thread only. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  signal(SIGPIPE, SIG_IGN);
  char tmpl[] = "/tmp/memtrace-view-XXXXXX";
  const char *path = o->trace, *tmp = NULL;
  int lfd = -1;
  if (o->listen) {
    char err[512];
    lfd = mt_tcp_listen(o->listen, l.listen_shown, sizeof l.listen_shown, err, sizeof err);
    if (lfd < 0) fprintf(stderr, "memtrace view: --listen %s: %s\n", o->listen, err);
    if (lfd < 0) return 1;
    int fd;
    char ferr[600] = "";
    if (o->output) { /* a trace: private, never through a link (private_file.h) */
      path = o->output;
      fd = mt_open_private(path, O_TRUNC, ferr, sizeof ferr);
    } else {
      fd = mkstemp(tmpl);
      path = tmp = tmpl;
    }
    if (fd < 0) {
      if (errno == ELOOP) fprintf(stderr, "memtrace view: %s\n", ferr);
      else fprintf(stderr, "memtrace view: %s: cannot create: %s\n", path, strerror(errno));
      return 1;
    }
    close(fd);
    fprintf(stderr, "memtrace view: waiting for a program on %s (MEMTRACE=tcp:%s)\n",
            l.listen_shown, l.listen_shown);
  }
  char many[64];
  snprintf(many, sizeof many, "%zu traces", o->ntraces);
  const char *name = o->ntraces > 1 ? many : strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  l.paths = o->traces;
  l.npaths = o->traces ? o->ntraces : 1;
  char base_name[300];
  mt_vlive_name(base_name, sizeof base_name, o->base, o->nbase);
  l.base_paths = o->base;
  l.nbase = o->nbase;
  l.base_name = base_name;
  /* A trace that cannot be read is said before anything is served (the
   * load itself runs while the server answers). */
  if (!o->listen && !o->follow &&
      (readable(o->base, o->nbase, "--base: ") || readable(l.npaths > 1 ? l.paths : &path, l.npaths, "")))
    return 1;
  if (o->listen || o->follow) {
    if (mt_vlive_start(&l, path, o->listen ? "(live)" : name, lfd)) return 1;
  } else if (mt_vlive_load_bg(&l, path, name)) {
    fprintf(stderr, "memtrace view: cannot start a thread\n");
    return 1;
  }
  int port = 0;
  struct MHD_Daemon *d = NULL;
  if (mt_vconns_start(&sv.conns, HEAD_SECONDS, LINGER_SECONDS))
    fprintf(stderr, "memtrace view: cannot start a thread\n");
  else d = start(&sv, &sa, host, o->port, &port);
  if (!d) {
    mt_vconns_stop(&sv.conns);
    mt_vlive_stop(&l);
    if (tmp) unlink(tmp);
    return 1;
  }
  char url[400];
  snprintf(url, sizeof url, strchr(host, ':') ? "http://[%s]:%d/%s%s" : "http://%s:%d/%s%s", host,
           port, sv.need_token ? "?token=" : "", sv.need_token ? sv.token : "");
  printf("memtrace view: serving %s at %s\n", o->listen ? l.listen_shown : path, url);
  fflush(stdout);
  if (o->open) {
    pid_t pid = fork();
    if (pid == 0) {
      pthread_sigmask(SIG_UNBLOCK, &set, NULL);
      execlp("xdg-open", "xdg-open", url, (char *)NULL);
      _exit(127);
    }
    if (pid < 0) fprintf(stderr, "memtrace view: warning: cannot run xdg-open\n");
  }
  int sig;
  sigwait(&set, &sig);
  mt_mhd.stop_daemon(d);
  mt_vconns_stop(&sv.conns);
  mt_vlive_stop(&l);
  if (tmp) unlink(tmp);
  return l.failed ? 1 : 0;
}
