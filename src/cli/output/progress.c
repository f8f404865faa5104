#include "progress.h"

#include <stdio.h>
#include <unistd.h>

#include "base/clock.h"

void mt_progress_start(mt_progress *p, const mt_reader *r, const char *label) {
  uint64_t done, total;
  mt_reader_progress(r, &done, &total);
  p->r = r;
  p->label = label;
  p->enabled = isatty(STDERR_FILENO) && total > 0;
  p->drawn = 0;
  p->ticks = 0;
  p->start = p->last = p->enabled ? mt_monotonic_seconds() : 0;
}

void mt_progress_update(mt_progress *p) {
  if (!p->enabled) return;
  double t = mt_monotonic_seconds();
  if (t - p->start < 0.5 || t - p->last < 0.1) return;
  p->last = t;
  uint64_t done, total;
  mt_reader_progress(p->r, &done, &total);
  if (total == 0) return;
  if (done > total) done = total;
  enum { WIDTH = 40 };
  int fill = (int)((double)done / (double)total * WIDTH);
  char bar[WIDTH + 1];
  for (int i = 0; i < WIDTH; i++) bar[i] = i < fill ? '#' : '.';
  bar[WIDTH] = 0;
  fprintf(stderr, "\r%s [%s] %5.1f%% of %.1f MB", p->label, bar,
          100.0 * (double)done / (double)total, (double)total / 1e6);
  fflush(stderr);
  p->drawn = 1;
}

void mt_progress_end(mt_progress *p) {
  if (p->drawn) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
  }
  p->drawn = 0;
  p->enabled = 0;
}
