/* --follow and --listen (docs/viewer.md, "Live views"): the trace followed
 * as it grows. One analysis (mt_follow) takes each new packet once, under
 * the write side of its lock, in steps of at most STEP_EVENTS events so
 * that answers wait little; each step that brought events is shown as a
 * new snapshot of the same analysis (a generation), whose answers hold the
 * read side. An update thus costs what arrived, not the whole trace. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "live.h"

#define STEP_EVENTS ((uint64_t)2 << 20) /* about 0.2 s of decoding */
#define UPDATE_EVERY 0.25               /* s between reads of a growing file */
#define CATCH_UP_SHOW 1.0               /* s between snapshots while behind */
#define HEAD_BYTES 64                   /* a trace's first bytes: its identity */

/* --listen: accepts one program and copies its stream into the file,
 * while the loader follows the file; says when the stream has ended. */
static void *receive(void *arg) {
  mt_vlive *l = arg;
  int fd = -1;
  while (!__atomic_load_n(&l->stop, __ATOMIC_RELAXED)) {
    struct pollfd p = {l->listen_fd, POLLIN, 0};
    if (poll(&p, 1, 200) > 0) {
      fd = accept4(l->listen_fd, NULL, NULL, SOCK_CLOEXEC);
      if (fd >= 0) break;
    }
  }
  close(l->listen_fd);
  l->listen_fd = -1;
  if (fd < 0) return NULL;
  int out = open(l->path, O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (out < 0) {
    char m[600];
    snprintf(m, sizeof m, "%s: cannot write: %s", l->path, strerror(errno));
    mt_vlive_set_state(l, "error", m);
    close(fd);
    return NULL;
  }
  mt_vlive_set_state(l, "loading", "a program is connected");
  static char buf[1 << 16];
  while (!__atomic_load_n(&l->stop, __ATOMIC_RELAXED)) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t o = 0; o < n;) {
      ssize_t w = write(out, buf + o, (size_t)(n - o));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        n = -1;
        break;
      }
      o += w;
    }
    if (n < 0) break;
  }
  close(fd);
  close(out);
  __atomic_store_n(&l->stream_ended, 1, __ATOMIC_RELEASE);
  return NULL;
}

/* The trace being followed. */
typedef struct follower {
  mt_vlive *l;
  mt_vshared *sh; /* NULL until the file holds a trace's first packet */
  dev_t dev;
  ino_t ino;
  uint8_t head[HEAD_BYTES]; /* its first bytes, to see it replaced */
  size_t head_len;
  int stopped; /* an error, or the end of the stream: nothing more read */
  uint64_t seen_size; /* the file's size at the last step */
  double last_show;
} follower;

static int read_head(const char *path, uint8_t *buf, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = pread(fd, buf, HEAD_BYTES, 0);
  close(fd);
  if (n < 0) return -1;
  *len = (size_t)n;
  return 0;
}

/* Whether the file at the path is no longer the trace followed: another
 * file, emptied, or written over by a new trace. */
static int replaced(const follower *fo, const struct stat *st) {
  if (st->st_dev != fo->dev || st->st_ino != fo->ino) return 1;
  if ((uint64_t)st->st_size < mt_follow_offset(fo->sh->fw)) return 1;
  uint8_t head[HEAD_BYTES];
  size_t n;
  return read_head(fo->l->path, head, &n) || n < fo->head_len ||
         memcmp(head, fo->head, fo->head_len) != 0;
}

static void drop(follower *fo) {
  mt_vshared_unref(fo->sh);
  fo->sh = NULL;
  fo->stopped = 0;
  fo->seen_size = 0;
}

static int has_snapshot(mt_vlive *l) {
  pthread_mutex_lock(&l->lock);
  int have = l->snap != NULL;
  pthread_mutex_unlock(&l->lock);
  return have;
}

/* Starts following the trace at the path: 0, or -1 (not a trace, or not
 * yet one: said on the page while nothing is shown; tried again later). */
static int start(follower *fo, const struct stat *st) {
  mt_vlive *l = fo->l;
  char err[1024];
  mt_follow *fw;
  if (mt_follow_open(&fw, l->path, err, sizeof err) != MT_OK) {
    if (!has_snapshot(l)) mt_vlive_set_state(l, "error", err);
    return -1;
  }
  if (!(fo->sh = mt_vshared_new(fw))) return -1;
  fo->dev = st->st_dev;
  fo->ino = st->st_ino;
  if (read_head(l->path, fo->head, &fo->head_len)) fo->head_len = 0;
  return 0;
}

/* The call tree after a step, under the write lock: extended by the new
 * backtraces, or built again when codes were described late. */
static int update_tree(mt_vshared *sh) {
  mt_analysis *a = mt_follow_analysis(sh->fw);
  if (sh->tree && !mt_follow_described_late(sh->fw) && mt_calltree_extend(sh->tree, a) == MT_OK)
    return 0;
  mt_calltree *t;
  if (mt_calltree_build(a, NULL, MT_TREE_MERGE_ADJACENT | MT_TREE_EXTENSIBLE, 0, &t) != MT_OK)
    return -1;
  if (sh->tree) { /* answers begun on it have ended: the lock is ours */
    mt_calltree **r = realloc(sh->retired, (sh->nretired + 1) * sizeof *r);
    if (!r) {
      mt_calltree_free(t);
      return -1;
    }
    sh->retired = r;
    sh->retired[sh->nretired++] = sh->tree;
  }
  sh->tree = t;
  return 0;
}

/* Reads what arrived (at most STEP_EVENTS events), or the rest once the
 * stream has ended. Returns the events read, or -1 after an error (said
 * on the page; the last snapshot stays). */
static int64_t step(follower *fo, int end) {
  mt_vlive *l = fo->l;
  mt_vshared *sh = fo->sh;
  uint64_t got = 0;
  pthread_rwlock_wrlock(&sh->rw);
  int rc = end ? mt_follow_end(sh->fw, &got) : mt_follow_read(sh->fw, STEP_EVENTS, &got);
  if (rc == MT_OK && update_tree(sh)) rc = MT_ERR_NOMEM;
  pthread_rwlock_unlock(&sh->rw);
  if (rc == MT_OK) return end ? 1 : (int64_t)got;
  char m[1100];
  const char *why = rc == MT_ERR_NOMEM ? "out of memory" : mt_analysis_error(mt_follow_analysis(sh->fw));
  snprintf(m, sizeof m, "stopped following %s: %s", l->path, why);
  fprintf(stderr, "memtrace view: %s\n", m);
  if (has_snapshot(l)) mt_vlive_set_state(l, "ready", m);
  else mt_vlive_set_state(l, "error", why);
  return -1;
}

/* Shows the analysis as it is now. */
static void show(follower *fo, const char *message) {
  mt_vlive *l = fo->l;
  pthread_mutex_lock(&l->lock);
  uint64_t gen = ++l->generation;
  pthread_mutex_unlock(&l->lock);
  mt_vsnap *s = mt_vsnap_new_shared(fo->sh, l->name, gen);
  if (!s) return; /* out of memory: the last one stays */
  mt_rss_load(l->path, &s->rss); /* memtrace run's record beside it, if any */
  /* the loader is the only writer: it reads without the lock */
  mt_vlive_index_stacks(s);
  mt_vlive_install(l, s);
  if (message) mt_vlive_set_state(l, "ready", message);
  fo->last_show = mt_monotonic_seconds();
}

static void *follow(void *arg) {
  mt_vlive *l = arg;
  pthread_t rx;
  int has_rx = l->listen_fd >= 0 && pthread_create(&rx, NULL, receive, l) == 0;
  follower fo = {.l = l};
  double last_step = 0;
  int behind = 0;
  while (!__atomic_load_n(&l->stop, __ATOMIC_RELAXED)) {
    if (!behind) usleep(50000);
    double t = mt_monotonic_seconds();
    if (!behind && t - last_step < UPDATE_EVERY) continue;
    int ended = __atomic_load_n(&l->stream_ended, __ATOMIC_ACQUIRE);
    struct stat st;
    if (stat(l->path, &st) != 0) {
      if (!has_rx && !has_snapshot(l)) {
        char m[600];
        snprintf(m, sizeof m, "%s: %s (waiting for it)", l->path, strerror(errno));
        mt_vlive_set_state(l, "waiting", m);
      }
      last_step = t;
      continue;
    }
    if (fo.sh && replaced(&fo, &st)) drop(&fo);
    if (!fo.sh && (st.st_size == 0 || start(&fo, &st))) {
      last_step = t;
      continue;
    }
    last_step = t;
    if (fo.stopped || (!ended && !behind && (uint64_t)st.st_size == fo.seen_size)) continue;
    fo.seen_size = (uint64_t)st.st_size;
    int first = !has_snapshot(l);
    /* the stream's end, once what came before it is read */
    int end = ended && !behind;
    int64_t got = step(&fo, end);
    if (got < 0 || end) fo.stopped = 1;
    if (got < 0) continue;
    behind = !end && (uint64_t)got == STEP_EVENTS;
    if ((got > 0 || first) && (!behind || t - fo.last_show >= CATCH_UP_SHOW))
      show(&fo, end ? "the program's stream has ended" : NULL);
  }
  if (has_rx) pthread_join(rx, NULL);
  if (fo.sh) drop(&fo);
  return NULL;
}

int mt_vlive_start(mt_vlive *l, const char *path, const char *name, int listen_fd) {
  l->path = path;
  l->name = name;
  l->live = 1;
  l->listen_fd = listen_fd;
  /* The first state, before the page can ask (the server starts next):
   * set by the thread, a request could come first and see "loading" */
  if (listen_fd >= 0) {
    char m[400];
    snprintf(m, sizeof m, "waiting for a program on %s", l->listen_shown);
    mt_vlive_set_state(l, "waiting", m);
  } else {
    mt_vlive_set_state(l, "loading", "");
  }
  l->running = 1;
  if (pthread_create(&l->thread, NULL, follow, l) != 0) return l->running = 0, -1;
  return 0;
}
