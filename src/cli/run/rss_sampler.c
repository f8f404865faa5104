/* memtrace run's resident-memory sampler (rss_sampler.h). */
#include "rss_sampler.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/private_file.h"

enum { PERIOD_MS = 50, FLUSH_TICKS = 1000 / PERIOD_MS };

/* The open files of pid, opening them the first time; NULL when the
 * process is gone or the table is full. */
static mt_rss_proc *proc(mt_rss_sampler *s, pid_t pid) {
  for (size_t i = 0; i < s->nprocs; i++)
    if (s->procs[i].pid == pid) return &s->procs[i];
  if (s->nprocs == MT_RSS_MAX_PROCS) return NULL;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  int st = open(path, O_RDONLY | O_CLOEXEC);
  if (st < 0) return NULL;
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
  mt_rss_proc *p = &s->procs[s->nprocs++];
  *p = (mt_rss_proc){pid, st, open(path, O_RDONLY | O_CLOEXEC), 0};
  return p;
}

/* Closes the files of the processes the last sample did not meet. */
static void forget_gone(mt_rss_sampler *s) {
  size_t k = 0;
  for (size_t i = 0; i < s->nprocs; i++) {
    mt_rss_proc *p = &s->procs[i];
    if (p->seen) {
      p->seen = 0;
      s->procs[k++] = *p;
      continue;
    }
    close(p->status_fd);
    if (p->children_fd >= 0) close(p->children_fd);
  }
  s->nprocs = k;
}

/* The file's content from its start, NUL-terminated; its length or -1. */
static ssize_t reread(int fd, char *buf, size_t n) {
  ssize_t got = fd < 0 ? -1 : pread(fd, buf, n - 1, 0);
  if (got >= 0) buf[got] = 0;
  return got;
}

/* RssAnon, RssFile and RssShmem in KiB: 0, or -1 when the process holds
 * no memory (a zombie) or is gone. */
static int read_rss(const mt_rss_proc *p, unsigned long long kib[3]) {
  char buf[4096];
  if (reread(p->status_fd, buf, sizeof buf) <= 0) return -1;
  static const char *const keys[3] = {"\nRssAnon:", "\nRssFile:", "\nRssShmem:"};
  for (int k = 0; k < 3; k++) {
    const char *at = strstr(buf, keys[k]);
    if (!at) return -1;
    kib[k] = strtoull(at + strlen(keys[k]), NULL, 10);
  }
  return 0;
}

/* pid's children, appended to out[*n..cap): those its main thread started
 * (its open file), and with `all` those of every thread too (a thread of
 * a process with many is as costly to ask as the process: every second). */
static void children(const mt_rss_proc *p, int all, pid_t *out, size_t *n, size_t cap) {
  char buf[4096];
  if (reread(p->children_fd, buf, sizeof buf) > 0)
    for (char *c = buf, *end; *n < cap; c = end) {
      long v = strtol(c, &end, 10);
      if (end == c) break;
      out[(*n)++] = (pid_t)v;
    }
  if (!all) return;
  char path[PATH_MAX];
  snprintf(path, sizeof path, "/proc/%d/task", (int)p->pid);
  DIR *d = opendir(path);
  for (struct dirent *e; d && (e = readdir(d));) {
    if (e->d_name[0] == '.' || atol(e->d_name) == (long)p->pid) continue;
    snprintf(path, sizeof path, "/proc/%d/task/%s/children", (int)p->pid, e->d_name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (reread(fd, buf, sizeof buf) > 0)
      for (char *c = buf, *end; *n < cap; c = end) {
        long v = strtol(c, &end, 10);
        if (end == c) break;
        out[(*n)++] = (pid_t)v;
      }
    if (fd >= 0) close(fd);
  }
  if (d) closedir(d);
}

static void flush(mt_rss_sampler *s) {
  if (s->len && write(s->fd, s->buf, s->len) < 0) {
    /* a full disk: the record ends there */
  }
  s->len = 0;
}

/* One line per process of the tree, all with the tick's time. */
static void sample(mt_rss_sampler *s, int all_threads) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned long long now =
      (unsigned long long)ts.tv_sec * 1000000 + (unsigned long long)ts.tv_nsec / 1000;
  pid_t pids[MT_RSS_MAX_PROCS];
  size_t n = 1;
  pids[0] = s->root;
  for (size_t i = 0; i < n; i++) {
    mt_rss_proc *p = proc(s, pids[i]);
    if (!p) continue;
    p->seen = 1;
    unsigned long long kib[3];
    if (s->len + 96 > sizeof s->buf) flush(s);
    if (read_rss(p, kib) == 0)
      s->len += (size_t)snprintf(s->buf + s->len, sizeof s->buf - s->len,
                                 "%llu %d %llu %llu %llu\n", now, (int)pids[i], kib[0], kib[1],
                                 kib[2]);
    children(p, all_threads, pids, &n, MT_RSS_MAX_PROCS);
  }
  forget_gone(s);
}

static void *run(void *arg) {
  mt_rss_sampler *s = arg;
  for (unsigned tick = 0; !__atomic_load_n(&s->stop, __ATOMIC_RELAXED); tick++) {
    sample(s, tick % FLUSH_TICKS == 0);
    if (tick % FLUSH_TICKS == FLUSH_TICKS - 1) flush(s);
    struct timespec d = {0, PERIOD_MS * 1000000L};
    while (nanosleep(&d, &d) < 0 && errno == EINTR) {
    }
  }
  return NULL;
}

int mt_rss_start(mt_rss_sampler *s, pid_t root, const char *trace_path, int quiet) {
  memset(s, 0, sizeof *s);
  s->root = root;
  char path[PATH_MAX], err[PATH_MAX + 128];
  snprintf(path, sizeof path, "%s.rss", trace_path);
  s->fd = mt_open_private(path, O_TRUNC, err, sizeof err);
  if (s->fd < 0) {
    if (!quiet) fprintf(stderr, "memtrace run: no resident-memory record: %s\n", err);
    return -1;
  }
  static const char head[] =
      "# memtrace-c resident memory: time_us pid rss_anon_kib rss_file_kib rss_shmem_kib\n";
  if (write(s->fd, head, sizeof head - 1) < 0 ||
      pthread_create(&s->thread, NULL, run, s) != 0) {
    close(s->fd);
    s->fd = -1;
    return -1;
  }
  s->running = 1;
  return 0;
}

void mt_rss_stop(mt_rss_sampler *s) {
  if (!s->running) return;
  __atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
  pthread_join(s->thread, NULL);
  flush(s);
  close(s->fd);
  for (size_t i = 0; i < s->nprocs; i++) s->procs[i].seen = 0;
  forget_gone(s); /* closes them all */
  s->running = 0;
}
