/* The snapshot a server serves, and how it is kept current: loaded once,
 * or reloaded as a followed file grows (--follow, --listen). */
#ifndef MT_VIEWER_LIVE_H
#define MT_VIEWER_LIVE_H

#include <pthread.h>
#include <stdint.h>

#include "snapshot.h"

typedef struct mt_vlive {
  pthread_mutex_t lock;
  mt_vsnap *snap; /* current, or NULL */
  uint64_t generation;
  const char *state; /* "ready", "loading", "partial" (a preview), "waiting", "error" */
  char message[1024];
  int live;
  const char *path, *name;
  /* several traces read as one (paths[0] is path), or npaths 1 */
  const char *const *paths;
  size_t npaths;
  /* the differential view: the base trace(s), loaded with the first load
   * and kept (nbase 0: none) */
  const char *const *base_paths;
  size_t nbase;
  const char *base_name;
  mt_analysis *base;
  mt_calltree *base_tree;
  /* loader thread */
  pthread_t thread;
  int running, stop;
  /* --listen: the receiving socket, and where the stream goes */
  int listen_fd;
  char listen_shown[300];
  int tty;
  /* view of one trace: loaded in the background while the server already
   * answers (/api/status says "loading"); requests wait for it */
  pthread_cond_t changed; /* a snapshot was installed, or the load failed */
  /* a long trace's previews (live.c): a thread loading ever longer
   * prefixes while the whole loads; none once `complete` (the whole
   * trace's snapshot installed; read atomically) */
  pthread_t preview_thread;
  int previewing, complete;
  int failed;
  int stream_ended; /* --listen: the program's stream has ended (atomic) */
  pthread_t main_thread; /* told (SIGTERM) when the load fails */
} mt_vlive;

/* The name the page shows for paths[0..n): a trace's file name, or "N
 * traces"; "" for none. */
void mt_vlive_name(char *buf, size_t size, const char *const *paths, size_t n);
/* Loads `path` once (printing progress on a terminal). 0, or -1 after
 * printing the reader's message. */
int mt_vlive_load_once(mt_vlive *l, const char *path, const char *name);
/* Starts loading `path` once in a thread (the tree built after the
 * snapshot is installed, then the unfiltered flame graph cached). On
 * failure it prints the reader's message, sets `failed` and sends SIGTERM
 * to the process (the caller waits for it with sigwait). */
int mt_vlive_load_bg(mt_vlive *l, const char *path, const char *name);
/* Starts the loader thread following `path` (and receiving the stream on
 * listen_fd first when it is >= 0). */
int mt_vlive_start(mt_vlive *l, const char *path, const char *name, int listen_fd);
void mt_vlive_stop(mt_vlive *l);

/* For the loaders (live.c, live_follow.c): makes s (its reference taken)
 * the snapshot served; sets the state the page shows; indexes a
 * snapshot's stacks (by the loader, the analysis' only writer). */
void mt_vlive_install(mt_vlive *l, mt_vsnap *s);
void mt_vlive_set_state(mt_vlive *l, const char *state, const char *msg);
void mt_vlive_index_stacks(mt_vsnap *s);
/* The current snapshot with a reference (NULL if none): unref it. Loading
 * once in the background, it waits for the load. */
mt_vsnap *mt_vlive_get(mt_vlive *l);

#endif
