/* The resident memory recorded beside a trace (memtrace/stats.h,
 * docs/format.md "Resident memory beside the trace"), and the timeline's
 * resident series. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "memtrace/stats.h"

void mt_rss_free(mt_rss *r) {
  if (!r) return;
  free(r->time);
  free(r->anon);
  free(r->file);
  free(r->shmem);
  free(r);
}

/* Appends a tick (a time not seen yet) to r; 0 or -1. */
static int add_tick(mt_rss *r, size_t *cap, uint64_t t) {
  if (r->n == *cap) {
    size_t nc = *cap ? *cap * 2 : 256;
    void **const cols[] = {(void **)&r->time, (void **)&r->anon, (void **)&r->file,
                           (void **)&r->shmem};
    const size_t sizes[] = {sizeof *r->time, sizeof *r->anon, sizeof *r->file,
                            sizeof *r->shmem};
    if (mt__realloc_columns(cols, sizes, 4, nc, realloc)) return -1;
    *cap = nc;
  }
  r->time[r->n] = t;
  r->anon[r->n] = r->file[r->n] = r->shmem[r->n] = 0;
  r->n++;
  return 0;
}

int mt_rss_load(const char *trace_path, mt_rss **out) {
  *out = NULL;
  char path[4096];
  if ((size_t)snprintf(path, sizeof path, "%s.rss", trace_path) >= sizeof path)
    return MT_ERR_INVALID;
  FILE *f = fopen(path, "re");
  if (!f) return errno == ENOENT ? MT_ERR_INVALID : MT_ERR_IO;
  mt_rss *r = calloc(1, sizeof *r);
  size_t cap = 0;
  int rc = r ? MT_OK : MT_ERR_NOMEM;
  char line[256];
  while (rc == MT_OK && fgets(line, sizeof line, f)) {
    unsigned long long t, anon, file, shmem;
    int pid;
    if (line[0] == '#') continue;
    /* a line cut short (the run killed while writing it) ends the record */
    if (sscanf(line, "%llu %d %llu %llu %llu", &t, &pid, &anon, &file, &shmem) != 5) break;
    if (r->n && t < r->time[r->n - 1]) break; /* not a record of ours */
    if ((!r->n || t != r->time[r->n - 1]) && add_tick(r, &cap, t)) rc = MT_ERR_NOMEM;
    if (rc == MT_OK) {
      r->anon[r->n - 1] += (double)anon * 1024;
      r->file[r->n - 1] += (double)file * 1024;
      r->shmem[r->n - 1] += (double)shmem * 1024;
    }
  }
  fclose(f);
  if (rc == MT_OK && r->n == 0) rc = MT_ERR_INVALID;
  if (rc != MT_OK) {
    mt_rss_free(r);
    return rc;
  }
  *out = r;
  return MT_OK;
}

int mt_timeline_add_rss(mt_timeline *t, const mt_rss *r) {
  double *anon = calloc(t->nbins, sizeof *anon), *file = calloc(t->nbins, sizeof *file),
         *total = calloc(t->nbins, sizeof *total);
  if (!anon || !file || !total) {
    free(anon);
    free(file);
    free(total);
    return MT_ERR_NOMEM;
  }
  /* at each bin's end, the last sample at or before it (0 before the first) */
  size_t k = 0;
  for (size_t j = 0; j < t->nbins; j++) {
    double end = (double)t->start + t->end[j];
    while (k < r->n && (double)r->time[k] <= end) k++;
    if (k == 0) continue;
    anon[j] = r->anon[k - 1];
    file[j] = r->file[k - 1];
    total[j] = r->anon[k - 1] + r->file[k - 1] + r->shmem[k - 1];
  }
  free(t->rss_anon);
  free(t->rss_file);
  free(t->rss_total);
  t->rss_anon = anon;
  t->rss_file = file;
  t->rss_total = total;
  return MT_OK;
}
