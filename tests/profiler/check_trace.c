/* Reads a trace the profiler wrote and prints what the tests compare:
 *   check_trace TRACE sites   one line per allocation site (the innermost
 *                             frame's function): name, sampled objects,
 *                             estimated bytes, its 99.99% band (lo hi),
 *                             estimated objects, objects never collected
 *   check_trace TRACE mappings the same, of the anonymous mappings only
 *   check_trace TRACE summary allocations, collections, pid, max depth
 *   check_trace TRACE frames  every function name in any stack
 *   check_trace TRACE peak    live samples at the trace's peak, and at its
 *                             end (objects never collected) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace/analysis.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: check_trace TRACE sites|mappings|summary|frames|peak\n");
    return 2;
  }
  mt_analysis *a;
  if (mt_analysis_load(&a, argv[1], NULL, NULL) != MT_OK) {
    fprintf(stderr, "check_trace: %s\n", mt_analysis_error(a));
    mt_analysis_free(a);
    return 1;
  }
  if (mt_analysis_warning(a)) fprintf(stderr, "check_trace: warning: %s\n", mt_analysis_warning(a));
  size_t nobj = mt_analysis_object_count(a), nfn = mt_analysis_function_count(a);
  const mt_trace_info *in = mt_analysis_info(a);
  if (strcmp(argv[2], "summary") == 0) {
    size_t freed = 0, depth = 0;
    for (size_t i = 0; i < nobj; i++) {
      mt_object o = mt_analysis_object(a, i);
      freed += o.free_time != MT_NEVER;
      size_t d = mt_analysis_object_backtrace(a, i, NULL, 0);
      if (d > depth) depth = d;
    }
    printf("allocations %zu\ncollections %zu\npid %llu\nmaxdepth %zu\nrate %g\nexe %s\n", nobj,
           freed, (unsigned long long)in->pid, depth, in->sample_rate, in->executable_name);
  } else if (strcmp(argv[2], "peak") == 0) {
    uint64_t t, peak, end = 0;
    mt_analysis_peak(a, &t, &peak);
    for (size_t i = 0; i < nobj; i++) {
      mt_object o = mt_analysis_object(a, i);
      if (o.free_time == MT_NEVER) end += o.nsamples;
    }
    printf("peak %llu end %llu\n", (unsigned long long)peak, (unsigned long long)end);
  } else if (strcmp(argv[2], "frames") == 0) {
    for (size_t f = 0; f < nfn; f++) printf("%s\n", mt_analysis_function_name(a, (uint32_t)f));
  } else if (strcmp(argv[2], "sites") == 0 || strcmp(argv[2], "mappings") == 0) {
    int mappings = strcmp(argv[2], "mappings") == 0;
    /* per function: tallies of all objects and of those never collected */
    mt_tally *all = calloc(nfn + 1, sizeof *all), *live = calloc(nfn + 1, sizeof *live);
    for (size_t i = 0; i < nobj; i++) {
      mt_object o = mt_analysis_object(a, i);
      if (mappings && !o.mapping) continue;
      uint32_t code = mt_analysis_object_site(a, i);
      size_t nf = 0;
      const mt_frame *fr = code == MT_NO_CODE ? NULL : mt_analysis_code_frames(a, code, &nf);
      size_t f = nf ? fr[nf - 1].function : nfn; /* the site's innermost location */
      mt_tally t = {0};
      t.samples = o.nsamples;
      t.objects = 1;
      /* at rate 1 every object is sampled: the count is exact */
      double w = (double)o.length;
      double p = in->sample_rate >= 1 ? 1 : -expm1(w * log1p(-in->sample_rate));
      mt_tally_add_weight(&t, 1 / p, (1 - p) / (p * p));
      mt_tally_add(&all[f], &t);
      if (o.free_time == MT_NEVER) mt_tally_add(&live[f], &t);
    }
    for (size_t f = 0; f <= nfn; f++) {
      if (!all[f].objects) continue;
      mt_estimate b = mt_estimate_bytes(a, &all[f]), c = mt_estimate_objects(a, &all[f]);
      /* a wide (4-sigma) band, so that a suite of checks rarely fails by chance */
      double sd = sqrt((double)all[f].samples * (1 - in->sample_rate)) *
                  mt_analysis_word_bytes(a) / in->sample_rate;
      printf("%s %llu %.0f %.0f %.0f %.0f %llu\n",
             f < nfn ? mt_analysis_function_name(a, (uint32_t)f) : "(unknown)",
             (unsigned long long)all[f].objects, b.value, b.value - 4 * sd - 8 / in->sample_rate,
             b.value + 4 * sd + 8 / in->sample_rate, c.value, (unsigned long long)live[f].objects);
    }
    free(all);
    free(live);
  } else {
    fprintf(stderr, "check_trace: unknown query %s\n", argv[2]);
    return 2;
  }
  mt_analysis_free(a);
  return 0;
}
