/*
 * mt_bench_decode: how fast the library decodes a trace.
 *
 *   mt_bench_decode TRACE [--repeat N]
 *
 * Measures, on a warm page cache:
 *   1. the I/O baseline: read() of the whole file through a 1 MiB buffer,
 *      i.e. what any reader must pay before decoding a byte;
 *   2. decoding: mt_reader_open, then mt_reader_next over every event,
 *      touching each allocation's backtrace (a checksum of its codes, so
 *      that no work can be skipped), then mt_reader_close.
 * With --repeat N each is run N times and the fastest run is reported
 * (the machine may be shared; the minimum is the least disturbed run).
 *
 * Prints a human-readable summary, then one machine-readable line
 * ("RESULT key=value ...") that bench/run.sh parses. Peak RSS is the
 * process's high-water mark (getrusage ru_maxrss): reader state plus the
 * baseline's 1 MiB buffer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "memtrace/format.h"

#define BASELINE_BUF (1u << 20)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static long peak_rss_kib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss; /* KiB on Linux */
}

/* Reads the whole file; returns the bytes read. */
static uint64_t read_all(const char *path, char *buf) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    fprintf(stderr, "mt_bench_decode: %s: %s\n", path, strerror(errno));
    exit(1);
  }
  uint64_t total = 0;
  for (;;) {
    ssize_t n = read(fd, buf, BASELINE_BUF);
    if (n < 0) {
      if (errno == EINTR) continue;
      fprintf(stderr, "mt_bench_decode: %s: read: %s\n", path, strerror(errno));
      exit(1);
    }
    if (n == 0) break;
    total += (uint64_t)n;
  }
  close(fd);
  return total;
}

typedef struct counts {
  uint64_t events, allocs, promotes, collects, frames, checksum;
  size_t max_depth;
} counts;

static void decode(const char *path, counts *c) {
  memset(c, 0, sizeof *c);
  mt_reader *r;
  int rc = mt_reader_open(&r, path);
  if (rc != MT_OK) {
    fprintf(stderr, "mt_bench_decode: %s\n", r ? mt_reader_error(r) : "out of memory");
    mt_reader_close(r);
    exit(1);
  }
  mt_event ev;
  uint64_t sum = 0;
  while ((rc = mt_reader_next(r, &ev)) > 0) {
    c->events++;
    /* Mix the id and time in too: a wrong event order changes the sum. */
    sum = sum * 31 + ev.obj_id + ev.time;
    switch (ev.kind) {
    case MT_EVENT_ALLOC:
      c->allocs++;
      c->frames += ev.backtrace_len;
      if (ev.backtrace_len > c->max_depth) c->max_depth = ev.backtrace_len;
      for (size_t i = 0; i < ev.backtrace_len; i++) sum += ev.backtrace[i];
      sum += ev.length;
      break;
    case MT_EVENT_PROMOTE: c->promotes++; break;
    case MT_EVENT_COLLECT: c->collects++; break;
    }
  }
  if (rc < 0) {
    fprintf(stderr, "mt_bench_decode: %s\n", mt_reader_error(r));
    mt_reader_close(r);
    exit(1);
  }
  const char *warn = mt_reader_warning(r);
  if (warn) fprintf(stderr, "mt_bench_decode: warning: %s\n", warn);
  c->checksum = sum;
  mt_reader_close(r);
}

int main(int argc, char **argv) {
  const char *path = NULL;
  long repeat = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
      repeat = strtol(argv[++i], NULL, 10);
      if (repeat < 1) repeat = 1;
    } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      puts("usage: mt_bench_decode TRACE [--repeat N]");
      return 0;
    } else if (!path && argv[i][0] != '-') {
      path = argv[i];
    } else {
      fprintf(stderr, "usage: mt_bench_decode TRACE [--repeat N]\n");
      return 2;
    }
  }
  if (!path) {
    fprintf(stderr, "usage: mt_bench_decode TRACE [--repeat N]\n");
    return 2;
  }
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "mt_bench_decode: %s: %s\n", path, strerror(errno));
    return 1;
  }
  double mb = (double)st.st_size / 1e6;

  /* The baseline's buffer is small on purpose: a whole-file buffer would
   * dominate the peak RSS this program reports for the reader. */
  char *buf = malloc(BASELINE_BUF);
  if (!buf) return 1;
  read_all(path, buf); /* warm the page cache: both runs read from memory */
  double io_best = 1e30;
  for (long k = 0; k < repeat; k++) {
    double t0 = now_s();
    uint64_t n = read_all(path, buf);
    double t = now_s() - t0;
    if (n != (uint64_t)st.st_size) fprintf(stderr, "mt_bench_decode: short read\n");
    if (t < io_best) io_best = t;
  }
  free(buf);

  counts c = {0}, first = {0};
  double dec_best = 1e30, dec_cpu = 0;
  for (long k = 0; k < repeat; k++) {
    double t0 = now_s(), c0 = cpu_s();
    decode(path, &c);
    double t = now_s() - t0, cpu = cpu_s() - c0;
    if (k == 0) first = c;
    else if (c.checksum != first.checksum || c.events != first.events) {
      fprintf(stderr, "mt_bench_decode: runs disagree (checksum)\n");
      return 1;
    }
    if (t < dec_best) {
      dec_best = t;
      dec_cpu = cpu;
    }
  }
  long rss = peak_rss_kib();

  printf("trace:          %s (%.1f MB)\n", path, mb);
  printf("events:         %llu (%llu allocations, %llu promotions, %llu collections)\n",
         (unsigned long long)c.events, (unsigned long long)c.allocs,
         (unsigned long long)c.promotes, (unsigned long long)c.collects);
  printf("frames:         %llu (%.1f per allocation, deepest %zu); checksum %016llx\n",
         (unsigned long long)c.frames, c.allocs ? (double)c.frames / (double)c.allocs : 0.0,
         c.max_depth, (unsigned long long)c.checksum);
  printf("I/O baseline:   %.3f s  (%.0f MB/s, read() in 1 MiB blocks, warm cache)\n", io_best,
         mb / io_best);
  printf("decode:         %.3f s  (%.1f MB/s, %.2f M events/s, %.1f ns/event; cpu %.3f s)\n",
         dec_best, mb / dec_best, (double)c.events / dec_best / 1e6,
         dec_best * 1e9 / (double)c.events, dec_cpu);
  printf("decode / I/O:   %.1fx the time of reading the file\n", dec_best / io_best);
  printf("peak RSS:       %.1f MiB\n", (double)rss / 1024.0);
  printf("RESULT bytes=%lld events=%llu io_s=%.6f decode_s=%.6f decode_cpu_s=%.6f "
         "mbps=%.3f events_per_s=%.0f ratio=%.3f rss_kib=%ld checksum=%016llx\n",
         (long long)st.st_size, (unsigned long long)c.events, io_best, dec_best, dec_cpu,
         mb / dec_best, (double)c.events / dec_best, dec_best / io_best, rss,
         (unsigned long long)c.checksum);
  return 0;
}
