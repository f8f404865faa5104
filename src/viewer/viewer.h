/* memtrace view and memtrace report (docs/viewer.md): the entry points the
 * two commands call. */
#ifndef MT_VIEWER_H
#define MT_VIEWER_H

typedef struct mt_viewer_opts {
  const char *trace;  /* the trace (view, --follow), or NULL with listen */
  /* several traces read as one (view): traces[0..ntraces), trace the
   * first, or ntraces 1 */
  const char *const *traces;
  size_t ntraces;
  /* the differential view: the base traces (read as one), or nbase 0 */
  const char *const *base;
  size_t nbase;
  const char *host;   /* default 127.0.0.1; beyond loopback a token is needed */
  int port;           /* default 8080; the next 20 are tried if busy */
  int open;           /* run xdg-open on the URL */
  int no_token;       /* beyond loopback, serve anyone (with a warning) */
  int follow;         /* the trace is still being written */
  const char *listen; /* [HOST:]PORT to receive a program's stream on */
  const char *output; /* with listen: where the stream goes */
} mt_viewer_opts;

/* Serves until SIGINT/SIGTERM; returns the exit status. */
int mt_viewer_serve(const mt_viewer_opts *o);

/* Writes the self-contained HTML report of traces[0..n) (several read as
 * one), compared with base[0..nbase) when nbase > 0 (the differential
 * view); returns the exit status. */
int mt_viewer_report(const char *const *traces, size_t n, const char *const *base, size_t nbase,
                     const char *out, const char *title);

/* The embedded assets (assets.c, generated at build time). */
typedef struct mt_vasset {
  const char *path; /* "/app.js" */
  const char *mime;
  const unsigned char *data;
  unsigned long len;
} mt_vasset;
extern const mt_vasset mt_vassets[];
extern const unsigned mt_vassets_count;
const mt_vasset *mt_vasset_find(const char *path);

#endif
