/* A trace still being written, read as it grows (memtrace/analysis.h,
 * mt_follow): one loading pass kept open across steps, its reader
 * following the file, what queries read published after each step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load_pass.h"

struct mt_follow {
  mt_reader *r;
  mt_analysis *a;
  pass p;
  int status; /* MT_OK, or the error that stopped the reading */
  int late;   /* the last step described a code left undescribed */
  /* codes resolved with no locations: a later location event (a writer
   * describing a code after using it) may still name them */
  uint32_t *undescribed;
  size_t nundescribed, undescribed_cap, ncodes_seen;
};

mt_analysis *mt_follow_analysis(const mt_follow *f) { return f->a; }
int mt_follow_described_late(const mt_follow *f) { return f->late; }

uint64_t mt_follow_offset(const mt_follow *f) {
  uint64_t done;
  mt_reader_progress(f->r, &done, NULL);
  return done;
}

/* The codes still without locations get them if the trace named them
 * since; the codes resolved in the last step without any are listed. */
static int recheck_codes(mt_follow *f) {
  mt_analysis *a = f->a;
  size_t kept = 0;
  for (size_t k = 0; k < f->nundescribed; k++) {
    int got = mt__describe_late(a, f->r, f->undescribed[k]);
    if (got < 0) return -1;
    if (got) f->late = 1;
    else f->undescribed[kept++] = f->undescribed[k];
  }
  f->nundescribed = kept;
  for (size_t c = f->ncodes_seen; c < a->ncodes; c++) {
    if (a->code_n[c]) continue;
    if (mt__reserve((void **)&f->undescribed, f->nundescribed, &f->undescribed_cap,
                    sizeof *f->undescribed))
      return -1;
    f->undescribed[f->nundescribed++] = (uint32_t)c;
  }
  f->ncodes_seen = a->ncodes;
  return 0;
}

static int step(mt_follow *f, uint64_t limit, uint64_t *events) {
  mt_analysis *a = f->a;
  f->late = 0;
  int rc = mt__pass_read(a, &f->p, f->r, limit, NULL, NULL, events);
  if (rc >= 0 && (rc = mt__pass_publish(a, &f->p, f->r)) == MT_OK &&
      (recheck_codes(f) || mt__bt_all_extend(a)))
    rc = MT_ERR_NOMEM;
  mt__live_cache_drop(a); /* of the objects before this step */
  /* the stacks' index takes the new backtraces; codes described late
   * change the old ones' */
  if (a->bt_fp && (f->late || rc < 0 || mt__index_stacks_extend(a))) {
    free(a->bt_fp);
    a->bt_fp = NULL;
  }
  if (rc < 0) f->status = rc;
  return rc < 0 ? rc : MT_OK;
}

int mt_follow_open(mt_follow **out, const char *path, char *err, size_t n) {
  *out = NULL;
  mt_reader *r;
  int rc = mt_reader_open(&r, path);
  if (rc != MT_OK) {
    snprintf(err, n, "%s", r ? mt_reader_error(r) : "out of memory");
    mt_reader_close(r);
    return rc;
  }
  mt_follow *f = calloc(1, sizeof *f);
  mt__load_spec all = {MT_KEEP_ALL, NULL, NULL};
  if (!f || !(f->a = mt__analysis_new()) || mt_reader_follow(r, 1) != MT_OK ||
      mt__pass_begin(f->a, &f->p, r, &all, NULL) != MT_OK ||
      mt__pass_publish(f->a, &f->p, r) != MT_OK) {
    snprintf(err, n, "%s: out of memory", path);
    mt_reader_close(r);
    if (f) mt__pass_free(&f->p), mt_analysis_free(f->a);
    free(f);
    return MT_ERR_NOMEM;
  }
  f->r = r;
  *out = f;
  return MT_OK;
}

int mt_follow_read(mt_follow *f, uint64_t limit, uint64_t *events) {
  if (events) *events = 0;
  if (f->status < 0) return f->status;
  return step(f, limit, events);
}

int mt_follow_end(mt_follow *f, uint64_t *events) {
  if (events) *events = 0;
  if (f->status < 0) return f->status;
  mt_reader_follow(f->r, 0); /* refused by a reader already ended: nothing to do */
  return step(f, 0, events);
}

void mt_follow_close(mt_follow *f) {
  if (!f) return;
  mt__pass_free(&f->p);
  mt_reader_close(f->r);
  mt_analysis_free(f->a);
  free(f->undescribed);
  free(f);
}
