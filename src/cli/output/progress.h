/* A progress bar on stderr for the commands that read a whole trace.
 *
 * It is drawn only when stderr is a terminal and the trace's size is known,
 * and only once the read has lasted half a second (short reads show
 * nothing); it is redrawn at most ten times a second and erased by
 * mt_progress_end. When stderr is not a terminal it prints nothing at all.
 *
 *   mt_progress p;
 *   mt_progress_start(&p, reader, "hotspots");
 *   while ((rc = mt_reader_next(r, &ev)) > 0) { mt_progress_tick(&p); ... }
 *   mt_progress_end(&p);
 */
#ifndef MT_CLI_PROGRESS_H
#define MT_CLI_PROGRESS_H

#include <stdint.h>

#include "memtrace/format.h"

typedef struct mt_progress {
  const mt_reader *r;
  const char *label;
  int enabled; /* stderr is a terminal and the size is known */
  int drawn;   /* something is on the line */
  uint32_t ticks;
  double start, last; /* seconds (monotonic clock) */
} mt_progress;

void mt_progress_start(mt_progress *p, const mt_reader *r, const char *label);
void mt_progress_update(mt_progress *p);
/* Erases the bar, if it was drawn. */
void mt_progress_end(mt_progress *p);

/* Call once per event: looks at the clock every 16384 events only. */
static inline void mt_progress_tick(mt_progress *p) {
  if (p->enabled && (++p->ticks & 0x3fff) == 0) mt_progress_update(p);
}

#endif
