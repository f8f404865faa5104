/* The timeline made while a trace is read (mt_timeline_load): a live-only
 * load adds each object's life to the bins once its fate is known, on a
 * grid placed by the span the packet headers give; the answer is
 * mt_timeline_compute's on a whole load wherever the grid and the
 * objects' times are known to be a whole load's, and comes from a whole
 * load everywhere else. */
#include <stdlib.h>
#include <string.h>

#include "load_pass.h"
#include "memtrace/stats.h"

struct mt__tl_pass {
  double width;  /* us a bin */
  size_t nbins;
  unsigned shift; /* the precision of times a whole load ends with */
  double *all, *filt; /* nbins + 1 differences of live samples each */
  mt_filter f;        /* the conditions on objects (none on stacks) */
  mt__query cond;
  int every, ready;
};

int mt__tl_begin(mt_analysis *a, mt__tl_pass *tl) {
  if (mt__query_init(&tl->cond, a, &tl->f) != MT_OK) return -1;
  tl->ready = 1;
  tl->every = mt_filter_selects_all(&tl->f);
  return 0;
}

void mt__tl_fate(const mt_analysis *a, mt__tl_pass *tl, size_t i, uint64_t gone) {
  /* a whole load's times: stored at the precision it ends with */
  unsigned s = tl->shift;
  uint64_t at = mt__obj_alloc_time(a, i) >> s << s;
  size_t j0 = mt__timeline_bin(tl->width, 0, (double)at), j1 = tl->nbins;
  if (j0 >= tl->nbins) return;
  if (gone != MT_NEVER) j1 = mt__timeline_bin(tl->width, 0, (double)(gone >> s << s));
  if (j1 > tl->nbins) j1 = tl->nbins;
  if (j1 <= j0) return;
  double ns = (double)mt__obj_samples(a, i);
  tl->all[j0] += ns;
  tl->all[j1] -= ns;
  if (tl->every || mt__query_columns(&tl->cond, i)) {
    tl->filt[j0] += ns;
    tl->filt[j1] -= ns;
  }
}

/* The timeline read in one live-only pass; *whole set (*a NULL) when
 * the grid placed before reading is not known to be a whole load's. */
static int one_pass(mt_analysis **a, mt_timeline **out, const char *path, const mt_filter *f,
                    size_t nbins, mt_progress_fn progress, void *ctx, int *whole) {
  uint64_t first, last;
  *a = NULL;
  *whole = 1;
  if (f->live == MT_LIVE_AT_PEAK || mt__filter_on_stacks(f) ||
      mt_trace_span(path, &first, &last) != MT_OK || last < first)
    return MT_OK;
  uint64_t d = last - first;
  mt__tl_pass tl = {.width = mt__timeline_width(d, nbins), .nbins = nbins, .f = *f};
  /* decided on times finer than a whole load keeps them: not exactly its */
  if ((tl.shift = mt__time_shift(d, 0)) && mt__filter_on_times(f)) return MT_OK;
  *whole = 0;
  tl.f.hide = NULL;
  tl.all = calloc(nbins + 1, sizeof *tl.all);
  tl.filt = calloc(nbins + 1, sizeof *tl.filt);
  int rc = tl.all && tl.filt ? MT_OK : MT_ERR_NOMEM;
  if (rc == MT_OK) {
    mt__load_spec how = {MT_KEEP_LIVE, NULL, &tl};
    rc = mt__load_paths(a, &path, 1, &how, progress, ctx);
  }
  if (tl.ready) mt__query_free(&tl.cond);
  if (rc == MT_OK && (mt_analysis_duration(*a) != d || (*a)->time_shift != tl.shift)) {
    mt_analysis_free(*a); /* the span was not the events' */
    *a = NULL;
    *whole = 1;
  } else if (rc == MT_OK) {
    /* the differences into live samples at each bin's end */
    double run_all = 0, run_filt = 0;
    for (size_t j = 0; j < nbins; j++) {
      tl.all[j] = run_all += tl.all[j];
      tl.filt[j] = run_filt += tl.filt[j];
    }
    rc = mt__timeline_of_series(*a, f, nbins, tl.all, tl.filt, out);
  }
  free(tl.all);
  free(tl.filt);
  return rc;
}

int mt_timeline_load(mt_analysis **a, mt_timeline **out, const char *path, const mt_filter *f,
                     size_t nbins, mt_progress_fn progress, void *ctx) {
  *a = NULL;
  *out = NULL;
  if (nbins == 0) return MT_ERR_INVALID;
  int whole, rc = one_pass(a, out, path, f, nbins, progress, ctx, &whole);
  if (!whole) return rc;
  rc = mt_analysis_load(a, path, progress, ctx); /* the grid is known only at the end */
  return rc == MT_OK ? mt_timeline_compute(*a, f, nbins, out) : rc;
}
