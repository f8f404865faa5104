/* Read access to a loaded analysis' tables: the trace's info, objects,
 * backtraces, codes and functions. */
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"

const mt_trace_info *mt_analysis_info(const mt_analysis *a) { return &a->info; }
uint64_t mt_analysis_duration(const mt_analysis *a) { return a->duration; }
double mt_analysis_word_bytes(const mt_analysis *a) { return a->word_bytes; }
size_t mt_analysis_object_count(const mt_analysis *a) { return a->nobj; }

mt_object mt_analysis_object(const mt_analysis *a, size_t i) {
  mt_object o;
  o.alloc_time = mt__obj_alloc_time(a, i);
  o.free_time = mt__obj_free_time(a, i);
  o.promote_time = (a->source[i] & MT__OBJ_PROMOTED) ? mt__side_get(a, i, MT__SIDE_PROMOTE)
                                                      : MT_NEVER;
  o.length = mt__obj_length(a, i);
  o.nsamples = mt__obj_samples(a, i);
  o.backtrace = a->bt[i];
  o.source = (mt_source)(a->source[i] & 3);
  o.mapping = (a->source[i] & MT__OBJ_MAPPING) != 0;
  return o;
}

/* Noted as objects are allocated: a load that keeps fewer objects answers
 * for all of them. */
int mt_analysis_has_mappings(const mt_analysis *a) { return a->any_mapping; }
int mt_analysis_has_runtime_heap(const mt_analysis *a) { return a->any_runtime; }

size_t mt_analysis_code_count(const mt_analysis *a) { return a->ncodes; }
uint64_t mt_analysis_code_value(const mt_analysis *a, uint32_t c) { return a->code_val[c]; }

const mt_frame *mt_analysis_code_frames(const mt_analysis *a, uint32_t c, size_t *n) {
  *n = a->code_n[c];
  return *n ? &a->frames[a->code_first[c]] : NULL;
}

size_t mt_analysis_function_count(const mt_analysis *a) { return a->nfn; }
const char *mt_analysis_function_name(const mt_analysis *a, uint32_t f) { return a->fn_name[f]; }
const char *mt_analysis_function_file(const mt_analysis *a, uint32_t f) { return a->fn_file[f]; }

/* ---- distinct backtraces ---- */

size_t mt_analysis_backtrace_count(const mt_analysis *a) { return a->nbt; }

uint32_t mt_analysis_object_backtrace_id(const mt_analysis *a, size_t i) { return a->bt[i]; }

size_t mt_analysis_backtrace_codes(const mt_analysis *a, uint32_t bt, uint32_t *out,
                                   size_t cap) {
  return mt__bt_codes(a, bt, out, cap);
}

uint32_t mt_analysis_backtrace_site(const mt_analysis *a, uint32_t bt) {
  return a->bt_site[bt];
}

int mt_analysis_backtraces_distinct(const mt_analysis *a) { return a->bt_distinct; }

uint32_t mt_analysis_object_site(const mt_analysis *a, size_t i) { return a->bt_site[a->bt[i]]; }
