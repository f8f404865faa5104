/* mt_bench_load TRACE: loads TRACE with the analysis library, as every
 * query tool does first, and prints "seconds kib objects": the load's CPU
 * time (user + system) and the process's peak RSS. The baseline of
 * bench/python.sh. */
#include <stdio.h>
#include <sys/resource.h>

#include "memtrace/analysis.h"

static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: mt_bench_load TRACE\n");
    return 2;
  }
  double t0 = cpu_seconds();
  mt_analysis *a;
  if (mt_analysis_load(&a, argv[1], NULL, NULL) != MT_OK) {
    fprintf(stderr, "mt_bench_load: %s\n", mt_analysis_error(a));
    return 1;
  }
  double t1 = cpu_seconds();
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  printf("%.6f %ld %zu\n", t1 - t0, u.ru_maxrss, mt_analysis_object_count(a));
  mt_analysis_free(a);
  return 0;
}
