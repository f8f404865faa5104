/* memtrace view: the HTTP side (GNU libmicrohttpd, loaded when the server
 * starts: see mhd_load.c). Only GET and HEAD; assets from memory; every
 * /api/ answer computed from the current snapshot, which a request holds a
 * reference to while it answers. */
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

#include "answers.h"
#include "live.h"
#include "mhd_load.h"
#include "base/tcp_listen.h"
#include "viewer.h"

const mt_vasset *mt_vasset_find(const char *path) {
  if (strcmp(path, "/") == 0) path = "/index.html";
  for (unsigned i = 0; i < mt_vassets_count; i++)
    if (strcmp(mt_vassets[i].path, path) == 0) return &mt_vassets[i];
  return NULL;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *mime,
                            const void *data, size_t len, enum MHD_ResponseMemoryMode mode,
                            int api) {
  struct MHD_Response *r = mt_mhd.create_response_from_buffer(len, (void *)data, mode);
  if (!r) return MHD_NO;
  mt_mhd.add_response_header(r, "Content-Type", mime);
  mt_mhd.add_response_header(r, "X-Content-Type-Options", "nosniff");
  if (api) mt_mhd.add_response_header(r, "Cache-Control", "no-store");
  else mt_mhd.add_response_header(r, "Cache-Control", "no-cache");
  if (status == MHD_HTTP_METHOD_NOT_ALLOWED) mt_mhd.add_response_header(r, "Allow", "GET, HEAD");
  enum MHD_Result ok = mt_mhd.queue_response(c, status, r);
  mt_mhd.destroy_response(r);
  return ok;
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *msg) {
  mt_json j;
  mt_json_init(&j);
  mt_json_obj(&j);
  mt_json_key(&j, "error");
  mt_json_str(&j, msg);
  mt_json_end_obj(&j);
  size_t len;
  char *text = mt_json_take(&j, &len);
  if (!text) return reply(c, 500, "application/json; charset=utf-8", "{\"error\":\"out of memory\"}",
                         25, MHD_RESPMEM_PERSISTENT, 1);
  return reply(c, status, "application/json; charset=utf-8", text, len, MHD_RESPMEM_MUST_FREE, 1);
}

#define MAX_ARGS 48

typedef struct args {
  mt_vquery q;
  unsigned allowed;
  char err[512];
  int bad;
  /* the parameters as given, for the answer cache's key */
  const char *key[MAX_ARGS], *value[MAX_ARGS];
  int n, many;
} args;

static enum MHD_Result each_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value) {
  args *a = cls;
  (void)kind;
  if (a->bad) return MHD_NO;
  if (mt_vquery_set(&a->q, a->allowed, key, value, a->err, sizeof a->err)) a->bad = 1;
  if (value && *value) { /* an empty value is an absent parameter */
    if (a->n < MAX_ARGS) {
      a->key[a->n] = key;
      a->value[a->n++] = value;
    } else {
      a->many = 1;
    }
  }
  return a->bad ? MHD_NO : MHD_YES;
}

/* The cache key of a request: the path and its non-empty parameters sorted
 * by name (stable: a repeated name keeps its order), each value prefixed
 * by its length so that no value can fake a separator. NULL when there are
 * too many parameters, or out of memory. */
static char *cache_key(const char *path, args *a) {
  if (a->many) return NULL;
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

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls) {
  mt_vlive *l = cls;
  (void)version;
  (void)upload;
  (void)con_cls;
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
    if (*upload_size) *upload_size = 0; /* ignore any body */
    return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD");
  }
  if (strncmp(url, "/api/", 5) != 0) {
    const mt_vasset *a = mt_vasset_find(url);
    if (!a) return send_error(c, MHD_HTTP_NOT_FOUND, "not found");
    return reply(c, MHD_HTTP_OK, a->mime, a->data, a->len, MHD_RESPMEM_PERSISTENT, 0);
  }
  const mt_vendpoint *e = NULL;
  for (size_t i = 0; i < MT_VENDPOINTS; i++)
    if (strcmp(url, mt_vendpoints[i].path) == 0) e = &mt_vendpoints[i];
  if (!e) return send_error(c, MHD_HTTP_NOT_FOUND, "no such endpoint");
  args *a = malloc(sizeof *a);
  if (!a) return send_error(c, 500, "out of memory");
  mt_vquery_init(&a->q);
  a->allowed = e->params;
  a->bad = 0;
  a->n = a->many = 0;
  mt_mhd.get_connection_values(c, MHD_GET_ARGUMENT_KIND, each_arg, a);
  if (a->bad) {
    enum MHD_Result r = send_error(c, MHD_HTTP_BAD_REQUEST, a->err);
    free(a);
    return r;
  }
  mt_json j;
  mt_json_init(&j);
  int rc = 0;
  mt_vsnap *s = NULL;
  double t0 = mt_vdebug() ? mt_vnow() : 0;
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
    return send_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, msg);
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
            key ? key + strlen(e->path) : "", mt_vnow() - t0);
  free(key);
  if (rc == -2 || rc == -3) {
    mt_json_free(&j);
    char msg[160];
    if (rc == -2)
      snprintf(msg, sizeof msg, "bad value for 'focus': '%lld' (no such function)",
               (long long)a->q.focus);
    else
      snprintf(msg, sizeof msg, "bad value for 'collected': a window of collection times "
                                "contradicts leaks (objects never collected)");
    free(a);
    return send_error(c, MHD_HTTP_BAD_REQUEST, msg);
  }
  free(a);
  if (rc == 0 && !text) text = mt_json_take(&j, &len);
  mt_json_free(&j);
  if (!text) return send_error(c, 500, "out of memory");
  return reply(c, MHD_HTTP_OK, "application/json; charset=utf-8", text, len,
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

/* Binds host:port, or the next 20 ports if busy. */
static struct MHD_Daemon *start(mt_vlive *l, const char *host, int port, int *got) {
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res;
  int gai = getaddrinfo(host, "0", &hints, &res);
  if (gai) {
    fprintf(stderr, "memtrace view: cannot resolve %s: %s\n", host, gai_strerror(gai));
    return NULL;
  }
  struct sockaddr_storage sa;
  memcpy(&sa, res->ai_addr, res->ai_addrlen);
  int v6 = res->ai_family == AF_INET6;
  freeaddrinfo(res);
  for (int p = port; p <= port + 20 && p <= 65535; p++) {
    if (v6) ((struct sockaddr_in6 *)&sa)->sin6_port = htons((uint16_t)p);
    else ((struct sockaddr_in *)&sa)->sin_port = htons((uint16_t)p);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_POLL | (v6 ? MHD_USE_IPv6 : 0);
    struct MHD_Daemon *d =
        mt_mhd.start_daemon(flags, (uint16_t)p, NULL, NULL, handle, l, MHD_OPTION_SOCK_ADDR, &sa,
                         MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_CONNECTION_TIMEOUT, 60u,
                         MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
                         MHD_OPTION_END);
    if (d) {
      *got = p;
      return d;
    }
    if (port == 0) break;
  }
  fprintf(stderr, "memtrace view: cannot listen on %s ports %d to %d\n", host, port, port + 20);
  return NULL;
}

int mt_viewer_serve(const mt_viewer_opts *o) {
  static mt_vlive l = {.lock = PTHREAD_MUTEX_INITIALIZER,
                       .changed = PTHREAD_COND_INITIALIZER,
                       .state = "loading",
                       .listen_fd = -1};
  const char *host = o->host ? o->host : "127.0.0.1";
  char why[600];
  if (mt_mhd_load(why, sizeof why)) { /* before any work: nothing to undo */
    fprintf(stderr, "memtrace view: %s\n", why);
    return 1;
  }
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
    if (o->output) {
      path = o->output;
      fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    } else {
      fd = mkstemp(tmpl);
      path = tmp = tmpl;
    }
    if (fd < 0) {
      fprintf(stderr, "memtrace view: %s: cannot create: %s\n", path, strerror(errno));
      return 1;
    }
    close(fd);
    fprintf(stderr, "memtrace view: waiting for a program on %s (MEMTRACE=tcp:%s)\n",
            l.listen_shown, l.listen_shown);
  }
  const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  if (o->listen || o->follow) {
    if (mt_vlive_start(&l, path, o->listen ? "(live)" : name, lfd)) return 1;
  } else if (mt_vlive_load_bg(&l, path, name)) {
    fprintf(stderr, "memtrace view: cannot start a thread\n");
    return 1;
  }
  int port = 0;
  struct MHD_Daemon *d = start(&l, host, o->port, &port);
  if (!d) {
    mt_vlive_stop(&l);
    if (tmp) unlink(tmp);
    return 1;
  }
  char url[400];
  snprintf(url, sizeof url, strchr(host, ':') ? "http://[%s]:%d/" : "http://%s:%d/", host, port);
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
  mt_vlive_stop(&l);
  if (tmp) unlink(tmp);
  return l.failed ? 1 : 0;
}
