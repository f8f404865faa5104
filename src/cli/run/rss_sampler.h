/* memtrace run's resident-memory sampler: every 50 ms, the resident memory
 * of the program and its descendants (RssAnon, RssFile, RssShmem of
 * /proc/PID/status), written beside the trace as TRACE.rss
 * (docs/format.md, "Resident memory beside the trace"), for `timeline`,
 * the viewer and the report to draw beside the estimated heap. It runs in
 * memtrace run, not in the program: the program's CPU and behaviour are
 * its own. */
#ifndef MT_CLI_RSS_SAMPLER_H
#define MT_CLI_RSS_SAMPLER_H

#include <pthread.h>
#include <sys/types.h>

/* A process being sampled: its status and children files, kept open (a
 * read at offset 0 refreshes them: one system call a file a sample). */
typedef struct mt_rss_proc {
  pid_t pid;
  int status_fd, children_fd;
  int seen; /* in the last sample's tree */
} mt_rss_proc;

enum { MT_RSS_MAX_PROCS = 256 };

typedef struct mt_rss_sampler {
  pthread_t thread;
  int running;
  int stop; /* atomic */
  pid_t root;
  int fd;
  mt_rss_proc procs[MT_RSS_MAX_PROCS];
  size_t nprocs;
  char buf[32768]; /* lines not written yet: written about once a second */
  size_t len;
} mt_rss_sampler;

/* Starts sampling `root` and its descendants into `trace_path`.rss. 0, or
 * -1 when the file cannot be created or the thread started (then there is
 * no resident-memory record, said on stderr unless quiet). */
int mt_rss_start(mt_rss_sampler *s, pid_t root, const char *trace_path, int quiet);
/* Stops and closes the file. */
void mt_rss_stop(mt_rss_sampler *s);

#endif
