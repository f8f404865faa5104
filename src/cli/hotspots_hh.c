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
  hh->slot = malloc(HH_K * sizeof *hh->slot);
  hh->free_counters = malloc(HH_K * sizeof *hh->free_counters);
  if (!hh->slots || !hh->ctr || !hh->base || !hh->seq || !hh->slot || !hh->free_counters) {
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
  free(hh->slot);
  free(hh->free_counters);
  memset(hh, 0, sizeof *hh);
}

/* Empties slot i, moving later entries of its run back into the hole when
 * their home is not between the hole and them. */
static void hh_unslot(heavy_hitters *hh, size_t i) {
  uint16_t *s = hh->slots;
  for (size_t j = (i + 1) & HH_MASK; s[j] != HH_EMPTY; j = (j + 1) & HH_MASK) {
    size_t home = hh_home(hh->ctr[s[j]].key);
    if (((j - home) & HH_MASK) >= ((j - i) & HH_MASK)) {
      s[i] = s[j];
      hh->slot[s[i]] = (uint16_t)i;
      i = j;
    }
  }
  s[i] = HH_EMPTY;
}

void hh_sweep(heavy_hitters *hh) {
  if (hh->before_sweep) hh->before_sweep(hh->ctx);
  int64_t sweeps = ++hh->sweeps;
  hh_counter *ctr = hh->ctr;
  for (size_t c = 0; c < hh->nused; c++) {
    if (ctr[c].score > sweeps) continue; /* free counters too: HH_FREE */
    ctr[c].score = HH_FREE;
    hh_unslot(hh, hh->slot[c]);
    hh->free_counters[hh->nfree++] = (uint16_t)c;
  }
}

uint16_t hh_insert(heavy_hitters *hh, uint64_t key, size_t i) {
  uint16_t c = hh->nfree ? hh->free_counters[--hh->nfree] : (uint16_t)hh->nused++;
  hh->slots[i] = c;
  hh->slot[c] = (uint16_t)i;
  hh->ctr[c] = (hh_counter){1 + hh->sweeps, key};
  hh->base[c] = hh->sweeps;
  hh->seq[c] = hh->adds++;
  return c;
}
