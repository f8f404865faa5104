/* The JSON answers of the viewer's API (docs/viewer.md, "Endpoints"): each
 * a call into the analysis library and its document (memtrace/json.h),
 * from a snapshot and a parsed query. They write into a writer and return
 * 0, or -1 when out of memory (flame: -2 for an unknown focus). */
#ifndef MT_VIEWER_ANSWERS_H
#define MT_VIEWER_ANSWERS_H

#include "memtrace/json.h"
#include "params.h"
#include "snapshot.h"

/* The answer cache's key of the unfiltered flame graph (server.c makes
 * keys as the path, '?', and the parameters sorted). */
#define MT_VFLAME_KEY "/api/flame?"

int mt_vanswer_info(const mt_vsnap *s, int live, mt_json *j);
int mt_vanswer_summary(const mt_vsnap *s, const mt_vquery *q, mt_json *j);
int mt_vanswer_timeline(const mt_vsnap *s, const mt_vquery *q, mt_json *j);
int mt_vanswer_flame(const mt_vsnap *s, const mt_vquery *q, mt_json *j);
int mt_vanswer_functions(const mt_vsnap *s, const mt_vquery *q, mt_json *j);
int mt_vanswer_paths(const mt_vsnap *s, const mt_vquery *q, mt_json *j);
int mt_vanswer_sites(const mt_vsnap *s, const mt_vquery *q, mt_json *j);
int mt_vanswer_leaks(const mt_vsnap *s, const mt_vquery *q, mt_json *j);
int mt_vanswer_histograms(const mt_vsnap *s, const mt_vquery *q, mt_json *j);
int mt_vanswer_stats(const mt_vsnap *s, const mt_vquery *q, mt_json *j);
int mt_vanswer_diff(const mt_vsnap *s, const mt_vquery *q, mt_json *j);

/* The API's endpoints: the server's routing, and the fuzz targets and
 * tests that call the answers as the server does. The answering ones come
 * first (MT_VANSWERS of them); info and status (answer NULL) are the
 * server's own. */
typedef struct mt_vendpoint {
  const char *path;
  unsigned params; /* MT_VP_ flags */
  int (*answer)(const mt_vsnap *s, const mt_vquery *q, mt_json *j);
  int tree; /* needs the call tree */
} mt_vendpoint;
#define MT_VANSWERS 10
#define MT_VENDPOINTS 12
extern const mt_vendpoint mt_vendpoints[MT_VENDPOINTS];

#endif
