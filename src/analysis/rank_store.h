/* What a ranking keeps beside its rows (rank.c, callers.c). */
#ifndef MT_ANALYSIS_RANK_STORE_H
#define MT_ANALYSIS_RANK_STORE_H

#include <stdint.h>

#include "memtrace/rank.h"

struct mt__rank_store {
  mt_stack_frame *frames;   /* the rows' frames, by stack             */
  mt_site_callers *callers; /* the rows' callers, after mt_rank_callers */
  uint32_t *row_code;       /* by site: a site code of each row's group  */
};

/* The grouping key of a site code (a code id, or MT__NO_SITE): locations
 * by function (and line), undescribed codes by id, empty backtraces
 * together. Function ids are far below 2^31, so the top bit separates
 * locations from codes. */
uint64_t mt__site_key(const mt_analysis *a, uint32_t code, int by_line);

#endif
