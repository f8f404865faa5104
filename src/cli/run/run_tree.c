/* memtrace run's report on a process tree (run_tree.h). */
#include "run_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/human.h"
#include "memtrace/analysis.h"
#include "memtrace/rank.h"

/* pattern with each %p as '*', quoted for a shell: 'build.*.ctf'. */
static void glob_text(const char *pattern, char *out, size_t n) {
  size_t k = 0;
  if (k + 1 < n) out[k++] = '\'';
  for (const char *p = pattern; *p && k + 3 < n; p++) {
    if (p[0] == '%' && p[1] == 'p') {
      out[k++] = '*';
      p++;
    } else if (*p == '\'') { /* '\'' */
      if (k + 6 >= n) break;
      memcpy(out + k, "'\\''", 4);
      k += 4;
    } else {
      out[k++] = *p;
    }
  }
  if (k + 1 < n) out[k++] = '\'';
  out[k < n ? k : n - 1] = 0;
}

int mt_cli_run_tree_report(char *const *paths, size_t n, const char *pattern, int top) {
  mt_analysis **as = calloc(n ? n : 1, sizeof *as);
  size_t loaded = 0, unreadable = 0;
  if (!as) return 0;
  for (size_t i = 0; i < n; i++) {
    mt_analysis *a;
    if (mt_analysis_load(&a, paths[i], NULL, NULL) == MT_OK) {
      as[loaded++] = a;
      continue;
    }
    if (unreadable++ == 0)
      fprintf(stderr, "memtrace: left out of the whole run: %s\n", mt_analysis_error(a));
    mt_analysis_free(a);
  }
  if (unreadable > 1)
    fprintf(stderr, "memtrace: and %zu more traces that cannot be read\n", unreadable - 1);
  mt_filter f;
  mt_filter_init(&f);
  mt_rank_spec spec = {MT_BY_LINE, MT_ORDER_BYTES, (size_t)top, 0};
  mt_ranking *r = NULL;
  int sampled = 0;
  if (loaded && mt_rank_traces((const mt_analysis *const *)as, loaded, &f, &spec, 0, &r) == MT_OK &&
      r->total.objects) {
    char b1[32], b2[32], glob[4096];
    sampled = 1;
    fprintf(stderr,
            "memtrace: the whole run, %zu processes, allocated %s in %llu sampled allocation%s; "
            "top sites of them all:\n",
            loaded, mt_human_bytes(b1, sizeof b1, r->total_bytes.value),
            (unsigned long long)r->total.objects, mt_human_plural(r->total.objects));
    for (size_t i = 0; i < r->nrows; i++) {
      const mt_estimate *e = &r->rows[i].bytes;
      char where[1024];
      fprintf(stderr, "  %10s  %5.1f%%  (+-%s)  %s\n", mt_human_bytes(b1, sizeof b1, e->value),
              r->total_bytes.value > 0 ? 100 * e->value / r->total_bytes.value : 0,
              mt_human_bytes(b2, sizeof b2, (e->hi - e->lo) / 2),
              mt_site_text(&r->rows[i].site, 1, where, sizeof where));
    }
    glob_text(pattern, glob, sizeof glob);
    fprintf(stderr,
            "memtrace: explore them together with: memtrace top %s (or --by-process, leaks, "
            "flamegraph, timeline, export)\n",
            glob);
  }
  mt_ranking_free(r);
  for (size_t i = 0; i < loaded; i++) mt_analysis_free(as[i]);
  free(as);
  return sampled;
}
