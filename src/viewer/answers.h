/* The JSON answers of the viewer's API (docs/viewer.md, "Endpoints"), each
 * computed from a snapshot and a parsed query. They write into a writer
 * and return 0, or -1 when out of memory (flame: -2 for an unknown focus). */
#ifndef MT_VIEWER_ANSWERS_H
#define MT_VIEWER_ANSWERS_H

#include "json.h"
#include "params.h"
#include "snapshot.h"

/* The objects a query selects: mask[i] for object i. */
typedef struct mt_vsel {
  uint8_t *mask;
  size_t count;
  mt_tally total;
} mt_vsel;

int mt_vsel_make(const mt_vsnap *s, const mt_vquery *q, mt_vsel *sel);
void mt_vsel_free(mt_vsel *sel);

/* The call tree after `hide`: map[f] is base fnode f's node (NULL when
 * nothing is hidden: the snapshot's own tree). */
typedef struct mt_vtree {
  size_t n;
  const uint32_t *parent, *fn, *line;
  uint32_t *map;
  uint32_t *own; /* the arrays above when built here */
} mt_vtree;

int mt_vtree_make(const mt_vsnap *s, const mt_vquery *q, mt_vtree *t);
void mt_vtree_free(mt_vtree *t);
static inline uint32_t mt_vtree_node(const mt_vtree *t, uint32_t fnode) {
  return t->map ? t->map[fnode] : fnode;
}

/* The answer cache's key of the unfiltered flame graph (server.c makes
 * keys as the path, '?', and the parameters sorted). */
#define MT_VFLAME_KEY "/api/flame?"

/* {"v","lo","hi"} */
void mt_vjson_est(mt_json *j, mt_estimate e);
/* "bytes": EST, "objects": EST (inside an object) */
void mt_vjson_tally(mt_json *j, const mt_vsnap *s, const mt_tally *t);

int mt_vanswer_info(const mt_vsnap *s, int live, mt_json *j);
int mt_vanswer_summary(const mt_vsnap *s, const mt_vquery *q, mt_json *j);
int mt_vanswer_timeline(const mt_vsnap *s, const mt_vquery *q, mt_json *j);
int mt_vanswer_flame(const mt_vsnap *s, const mt_vquery *q, mt_json *j);
int mt_vanswer_functions(const mt_vsnap *s, const mt_vquery *q, mt_json *j);
int mt_vanswer_paths(const mt_vsnap *s, const mt_vquery *q, mt_json *j);
int mt_vanswer_sites(const mt_vsnap *s, const mt_vquery *q, mt_json *j);
int mt_vanswer_leaks(const mt_vsnap *s, const mt_vquery *q, mt_json *j);
int mt_vanswer_histograms(const mt_vsnap *s, const mt_vquery *q, mt_json *j);

/* The API's endpoints: the server's routing, and the fuzz targets and
 * tests that call the answers as the server does. The answering ones come
 * first (MT_VANSWERS of them); info and status (answer NULL) are the
 * server's own. */
typedef struct mt_vendpoint {
  const char *path;
  unsigned params; /* MT_VP_ flags */
  int (*answer)(const mt_vsnap *s, const mt_vquery *q, mt_json *j);
  int tree; /* needs the call tree (the others only with inside/not_inside) */
} mt_vendpoint;
#define MT_VANSWERS 8
#define MT_VENDPOINTS 10
extern const mt_vendpoint mt_vendpoints[MT_VENDPOINTS];

#endif
