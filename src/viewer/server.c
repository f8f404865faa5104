/* memtrace view: the HTTP side (http.h: our own HTTP/1.1 server). Only
 * GET and HEAD; assets from memory; every /api/ answer computed from the
 * current snapshot, which a request holds a reference to while it answers.
 * Every request gets a status: the limits below are answered in JSON by
 * the HTTP layer, and a token guards a server bound beyond loopback
 * (access.c). */
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
#include "http.h"
#include "live.h"
#include "base/private_file.h"
#include "base/tcp_listen.h"
#include "viewer.h"

/* The limits of a request (docs/viewer.md, "Limits"). A browser's
 * requests stay far below them: the longest query the page makes holds
 * three filter strings of 1024 bytes, under 10 KiB percent-encoded. */
static const mt_http_limits LIMITS = {
    .max_target = 16384,       /* bytes of the request target: 414 */
    .max_args = 48,            /* query parameters (each parsed once): 400 */
    .max_header_bytes = 16384, /* bytes of the header fields: 431 */
    .max_headers = 100,        /* header fields: 431 */
};
/* A thread each (an answer may compute for seconds); beyond loopback no
 * single address may hold more than MAX_PER_ADDRESS of them. */
#define MAX_CONNECTIONS 256u
#define MAX_PER_ADDRESS 32u
#define HEAD_SECONDS 10.0   /* to send a whole request head */
#define LINGER_SECONDS 2.0  /* a closing connection drains its input at most this long */
#define IDLE_SECONDS 60.0   /* sending an answer without progress */

typedef struct server {
  mt_vlive *live;
  int need_token;
  char token[MT_VTOKEN_LEN + 1];
  char cookie[40];      /* the cookie's name, with the port: ports share cookies */
  char set_cookie[160]; /* the header that sets it */
} server;

const mt_vasset *mt_vasset_find(const char *path) {
  if (strcmp(path, "/") == 0) path = "/index.html";
  for (unsigned i = 0; i < mt_vassets_count; i++)
    if (strcmp(mt_vassets[i].path, path) == 0) return &mt_vassets[i];
  return NULL;
}

static void reply(mt_http_response *out, unsigned status, const char *mime, const char *data,
                  size_t len, int free_body, int api) {
  out->status = status;
  out->type = mime;
  out->body = data;
  out->len = len;
  out->free_body = free_body;
  out->cache = api ? "no-store" : "no-cache";
}

static void send_error(mt_http_response *out, unsigned status, const char *msg) {
  mt_json j;
  mt_json_init(&j);
  mt_json_obj(&j);
  mt_json_key(&j, "error");
  mt_json_str(&j, msg);
  mt_json_end_obj(&j);
  size_t len;
  char *text = mt_json_take(&j, &len);
  if (!text)
    reply(out, 500, "application/json; charset=utf-8", "{\"error\":\"out of memory\"}", 25, 0, 1);
  else reply(out, status, "application/json; charset=utf-8", text, len, 1, 1);
}

/* The HTTP layer's own refusals (mt_http_error). */
static void on_error(void *ctx, unsigned status, const char *msg, mt_http_response *out) {
  (void)ctx;
  send_error(out, status, msg);
}

typedef struct args {
  mt_vquery q;
  char err[512];
  /* the parameters with a value, for the answer cache's key (a request
   * holds MT_HTTP_ARGS_MAX at most) */
  const char *key[MT_HTTP_ARGS_MAX], *value[MT_HTTP_ARGS_MAX];
  int n;
} args;

/* Reads the query's parameters into a->q: 0, or -1 with why in a->err. A
 * repeated parameter is refused as an unknown one is: taking either value
 * would let a slip change the data shown. */
static int read_args(const mt_http_request *rq, unsigned allowed, args *a) {
  for (unsigned i = 0; i < rq->nargs; i++) {
    const char *key = rq->args[i].name, *value = rq->args[i].value;
    for (unsigned k = 0; k < i; k++)
      if (strcmp(rq->args[k].name, key) == 0) {
        snprintf(a->err, sizeof a->err,
                 "repeated parameter '%.100s' (give each parameter once)", key);
        return -1;
      }
    if (strcmp(key, "token") == 0) continue; /* access, checked before (allowed) */
    if (mt_vquery_set(&a->q, allowed, key, value, a->err, sizeof a->err)) return -1;
    if (value && *value) { /* an empty value is an absent parameter */
      a->key[a->n] = key;
      a->value[a->n++] = value;
    }
  }
  return 0;
}

/* The cache key of a request: the path and its non-empty parameters sorted
 * by name (each name given once), each value prefixed by its length so
 * that no value can fake a separator. NULL when out of memory. */
static char *cache_key(const char *path, args *a) {
  int order[MT_HTTP_ARGS_MAX];
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

/* Whether the request may be answered: always on loopback (and with
 * --no-token); beyond, with the token in the cookie or in the query (then
 * the answer sets the cookie, so that the page's own requests pass). */
static int allowed(const server *sv, const mt_http_request *rq, int *set_cookie) {
  if (!sv->need_token) return 1;
  char given[MT_VTOKEN_LEN + 2];
  if (mt_http_cookie(rq, sv->cookie, given, sizeof given) &&
      mt_vaccess_token_equal(given, sv->token))
    return 1;
  const char *query = NULL;
  for (unsigned i = 0; i < rq->nargs; i++)
    if (strcmp(rq->args[i].name, "token") == 0) query = rq->args[i].value;
  if (mt_vaccess_token_equal(query, sv->token)) {
    *set_cookie = 1;
    return 1;
  }
  return 0;
}

static void answer_api(server *sv, const mt_http_request *rq, mt_http_response *out);

/* mt_http_handler: every request whose head is within the limits. */
static void handle(void *ctx, const mt_http_request *rq, mt_http_response *out) {
  server *sv = ctx;
  int set_cookie = 0;
  if (!allowed(sv, rq, &set_cookie))
    send_error(out, 403,
               "this server needs its access token: open the URL memtrace view printed "
               "(.../?token=...)");
  else if (strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "HEAD") != 0)
    send_error(out, 405, "only GET and HEAD");
  else if (strncmp(rq->path, "/api/", 5) == 0)
    answer_api(sv, rq, out);
  else {
    const mt_vasset *a = mt_vasset_find(rq->path);
    if (!a) send_error(out, 404, "not found");
    else reply(out, 200, a->mime, (const char *)a->data, a->len, 0, 0);
  }
  if (set_cookie) out->set_cookie = sv->set_cookie;
}

/* Why an answer was refused (its code: answers.h), or NULL. */
static const char *refusal(int rc, const args *a, char *msg, size_t n, unsigned *status) {
  *status = 400;
  if (rc == -2)
    snprintf(msg, n, "bad value for 'focus': '%lld' (no such function)", (long long)a->q.focus);
  else if (rc == -3)
    snprintf(msg, n, "bad value for 'collected': a window of collection times contradicts "
                     "leaks (objects never collected)");
  else if (rc == -4) {
    snprintf(msg, n, "no base trace to compare with (memtrace view --base OLD NEW)");
    *status = 404;
  } else
    return NULL;
  return msg;
}

/* An /api/ request, answered from the current snapshot. */
static void answer_api(server *sv, const mt_http_request *rq, mt_http_response *out) {
  mt_vlive *l = sv->live;
  const char *url = rq->path;
  const mt_vendpoint *e = NULL;
  for (size_t i = 0; i < MT_VENDPOINTS; i++)
    if (strcmp(url, mt_vendpoints[i].path) == 0) e = &mt_vendpoints[i];
  if (!e) return send_error(out, 404, "no such endpoint");
  args *a = malloc(sizeof *a);
  if (!a) return send_error(out, 500, "out of memory");
  mt_vquery_init(&a->q);
  a->n = 0;
  if (read_args(rq, e->params, a)) {
    send_error(out, 400, a->err);
    free(a);
    return;
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
    return send_error(out, 503, msg);
  } else if (!e->answer) {
    mt_vsnap_read_begin(s);
    rc = mt_vanswer_info(s, l->live, &j);
    mt_vsnap_read_end(s);
  } else {
    key = cache_key(e->path, a);
    int cached = key ? mt_vsnap_cache_begin(s, key, &text, &len) : -1;
    if (cached == 1) {
      /* answered before for this snapshot */
    } else if (e->tree && mt_vsnap_wait(s)) {
      rc = -1;
    } else {
      mt_vsnap_read_begin(s);
      rc = e->answer(s, &a->q, &j);
      mt_vsnap_read_end(s);
      if (rc == 0 && cached == 0) text = mt_json_take(&j, &len);
    }
    if (cached == 0) mt_vsnap_cache_end(s, key, rc == 0 ? text : NULL, len);
  }
  mt_vsnap_unref(s);
  if (mt_vdebug())
    fprintf(stderr, "memtrace view: [debug] %s %s %.3f s\n", url,
            key ? key + strlen(e->path) : "", mt_monotonic_seconds() - t0);
  free(key);
  char msg[160];
  unsigned status;
  if (refusal(rc, a, msg, sizeof msg, &status)) {
    mt_json_free(&j);
    free(a);
    return send_error(out, status, msg);
  }
  free(a);
  if (rc == 0 && !text) text = mt_json_take(&j, &len);
  mt_json_free(&j);
  if (!text) return send_error(out, 500, "out of memory");
  reply(out, 200, "application/json; charset=utf-8", text, len, 1, 1);
}

/* A socket listening on sa at port (set in sa here): the socket, or -1
 * with errno (EADDRINUSE: another process listens there). */
static int listen_on(struct sockaddr_storage *sa, int port) {
  int v6 = sa->ss_family == AF_INET6;
  if (v6) ((struct sockaddr_in6 *)sa)->sin6_port = htons((uint16_t)port);
  else ((struct sockaddr_in *)sa)->sin_port = htons((uint16_t)port);
  return mt_tcp_listen_on((struct sockaddr *)sa,
                          v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in), 128);
}

/* Serves on the address sa at port, or on the next 20 if busy; the port
 * taken in *got. */
static mt_http_server *start(server *sv, struct sockaddr_storage *sa, const char *host, int port,
                             int *got) {
  int fd = -1, p = port, e = 0;
  for (; p <= port + 20 && p <= 65535; p++) {
    if ((fd = listen_on(sa, p)) >= 0 || errno != EADDRINUSE || port == 0) break;
  }
  e = errno;
  if (fd < 0) {
    if (e == EADDRINUSE)
      fprintf(stderr, "memtrace view: cannot listen on %s ports %d to %d (other processes listen "
                      "there: choose another port with --port, or 0 for any free one)\n",
              host, port, port + 20);
    else fprintf(stderr, "memtrace view: cannot listen on %s port %d: %s\n", host, p, strerror(e));
    return NULL;
  }
  struct sockaddr_storage bound;
  socklen_t blen = sizeof bound;
  if (getsockname(fd, (struct sockaddr *)&bound, &blen) == 0)
    p = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                          : ((struct sockaddr_in *)&bound)->sin_port);
  snprintf(sv->cookie, sizeof sv->cookie, "memtrace_token_%d", p);
  snprintf(sv->set_cookie, sizeof sv->set_cookie, "%s=%s; Path=/; HttpOnly; SameSite=Strict",
           sv->cookie, sv->token);
  /* on loopback the clients share one address: a limit per address would
   * be the total limit */
  mt_http_config cfg = {.limits = LIMITS,
                        .head_seconds = HEAD_SECONDS,
                        .idle_seconds = IDLE_SECONDS,
                        .linger_seconds = LINGER_SECONDS,
                        .max_connections = MAX_CONNECTIONS,
                        .max_per_address =
                            mt_vaccess_loopback((struct sockaddr *)sa) ? 0 : MAX_PER_ADDRESS,
                        .handler = handle,
                        .error = on_error,
                        .ctx = sv};
  char err[200];
  mt_http_server *h = mt_http_start(fd, &cfg, err, sizeof err);
  if (!h) {
    fprintf(stderr, "memtrace view: %s\n", err);
    return NULL;
  }
  *got = p;
  if (port && p != port)
    fprintf(stderr, "memtrace view: port %d is taken (another process listens there): "
                    "serving on %d\n",
            port, p);
  return h;
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
  mt_http_server *d = start(&sv, &sa, host, o->port, &port);
  if (!d) {
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
  mt_http_stop(d);
  mt_vlive_stop(&l);
  if (tmp) unlink(tmp);
  return l.failed ? 1 : 0;
}
