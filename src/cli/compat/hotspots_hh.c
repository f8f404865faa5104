/* memtrace hotspots' heavy-hitters summary: the parts off the hot path
 * (hotspots_hh.h says what the summary does). */
#include "hotspots_hh.h"

#include <stdlib.h>
#include <string.h>

int hh_init(heavy_hitters *hh) {
  memset(hh, 0, sizeof *hh);
  hh->slots = malloc(HH_SLOTS * sizeof *hh->slots);
  hh->ctr = malloc(HH_K * sizeof *hh->ctr);
  hh->base = malloc(HH_K * sizeof *hh->base);
  hh->seq = malloc(HH_K * sizeof *hh->seq);
  hh->free_counters = malloc(HH_K * sizeof *hh->free_counters);
  if (!hh->slots || !hh->ctr || !hh->base || !hh->seq || !hh->free_counters) {
    hh_free(hh);
    return -1;
  }
  for (size_t i = 0; i < HH_SLOTS; i++) hh->slots[i] = HH_EMPTY;
  return 0;
}

void hh_free(heavy_hitters *hh) {
  free(hh->slots);
  free(hh->ctr);
  free(hh->base);
  free(hh->seq);
  free(hh->free_counters);
  memset(hh, 0, sizeof *hh);
}

/* A sweep frees about a third of the counters of a full summary (ordinary
 * traces sweep every few thousand allocations): the slots are rebuilt from
 * the survivors in the pass that finds them, which reads each key where the
 * score is, rather than deleting slot by slot (each deletion moving the
 * rest of its run back, reading their keys in random order). */
void hh_sweep(heavy_hitters *hh) {
  if (hh->before_sweep) hh->before_sweep(hh->ctx);
  int64_t sweeps = ++hh->sweeps;
  hh_counter *ctr = hh->ctr;
  uint16_t *s = hh->slots;
  memset(s, 0xff, HH_SLOTS * sizeof *s); /* HH_EMPTY */
  for (size_t c = 0; c < hh->nused; c++) {
    if (ctr[c].score == HH_FREE) continue;
    if (ctr[c].score <= sweeps) {
      ctr[c].score = HH_FREE;
      hh->free_counters[hh->nfree++] = (uint16_t)c;
      continue;
    }
    size_t i = hh_home(ctr[c].key);
    while (s[i] != HH_EMPTY) i = (i + 1) & HH_MASK;
    s[i] = (uint16_t)c;
  }
}

uint16_t hh_insert(heavy_hitters *hh, uint64_t key, size_t i) {
  uint16_t c = hh->nfree ? hh->free_counters[--hh->nfree] : (uint16_t)hh->nused++;
  hh->slots[i] = c;
  hh->ctr[c] = (hh_counter){1 + hh->sweeps, key};
  hh->base[c] = hh->sweeps;
  hh->seq[c] = hh->adds++;
  return c;
}
