/* memtrace info: what a trace is (its trace_info) and a summary of its
 * events: counts by kind and source, samples, estimated bytes. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char usage[] =
    "usage: memtrace info TRACE\n"
    "\n"
    "Prints the trace's header (program, host, pid, start, sampling rate,\n"
    "format version) and a summary of its events: allocations by source,\n"
    "promotions, collections, samples, and the estimated bytes allocated\n"
    "(samples / rate x word size).\n";

static void human_bytes(char *buf, size_t n, double b) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (b >= 1024 && u < 5) {
    b /= 1024;
    u++;
  }
  snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", b, units[u]);
}

static int run(int argc, char **argv) {
  const char *path;
  mt_cli_spec spec = {NULL, NULL, &path, 1, 1, "TRACE", 0, 0, NULL};
  mt_cli_parse(&mt_cmd_info, argc, argv, &spec);
  mt_reader *r = mt_cli_open(path);
  const mt_trace_info *in = mt_reader_info(r);

  uint64_t allocs[3] = {0}, samples[3] = {0}, words[3] = {0}, promotes = 0, collects = 0;
  uint64_t last_time = in->start_time, max_depth = 0, domains_seen = 0;
  uint32_t domain_bits[4] = {0}; /* which of the first 128 domains appeared */
  mt_event ev;
  int rc;
  while ((rc = mt_reader_next(r, &ev)) > 0) {
    last_time = ev.time;
    if (ev.domain < 128 && !(domain_bits[ev.domain / 32] & (1u << ev.domain % 32))) {
      domain_bits[ev.domain / 32] |= 1u << ev.domain % 32;
      domains_seen++;
    }
    if (ev.kind == MT_EVENT_ALLOC) {
      allocs[ev.source]++;
      samples[ev.source] += ev.nsamples;
      words[ev.source] += ev.length;
      if (ev.backtrace_len > max_depth) max_depth = ev.backtrace_len;
    } else if (ev.kind == MT_EVENT_PROMOTE) {
      promotes++;
    } else {
      collects++;
    }
  }
  mt_cli_finish(r, rc);
  uint64_t done, total;
  mt_reader_progress(r, &done, &total);

  time_t start = (time_t)(in->start_time / 1000000);
  struct tm tm;
  char when[64];
  gmtime_r(&start, &tm);
  strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
  double bytes_per_word = in->word_size / 8.0;

  printf("trace:           %s (%" PRIu64 " bytes, format version %u)\n", path, done,
         in->version);
  printf("executable:      %s\n", in->executable_name);
  printf("host:            %s\n", in->host_name);
  printf("pid:             %" PRIu64 "\n", in->pid);
  printf("started:         %s\n", when);
  printf("duration:        %.3f s\n", (double)(last_time - in->start_time) / 1e6);
  printf("sample rate:     %g per word (one sample per %.0f bytes)\n", in->sample_rate,
         bytes_per_word / in->sample_rate);
  printf("word size:       %u bits\n", in->word_size);
  if (in->context[0]) printf("context:         %s\n", in->context);
  if (in->runtime_params[0]) printf("runtime params:  %s\n", in->runtime_params);
  if (domains_seen > 1) printf("domains:         %" PRIu64 "\n", domains_seen);
  uint64_t all_allocs = allocs[0] + allocs[1] + allocs[2];
  uint64_t all_samples = samples[0] + samples[1] + samples[2];
  char est[32];
  human_bytes(est, sizeof est, (double)all_samples / in->sample_rate * bytes_per_word);
  if (allocs[0] == 0 && allocs[1] == 0 && promotes == 0) {
    /* a native program's trace (every block external): malloc's words */
    char sampled[32];
    human_bytes(sampled, sizeof sampled, (double)words[2] * bytes_per_word);
    printf("\nallocations:     %" PRIu64 " sampled (%" PRIu64 " %s, %s in the sampled blocks)\n",
           all_allocs, all_samples, all_samples == 1 ? "sample" : "samples", sampled);
    printf("estimated:       %s allocated\n", est);
    printf("frees:           %" PRIu64 " (%" PRIu64 " sampled %s never freed)\n", collects,
           all_allocs > collects ? all_allocs - collects : 0,
           all_allocs - collects == 1 ? "block" : "blocks");
  } else {
    printf("\n%-10s %12s %12s %14s %16s\n", "source", "allocations", "samples", "sampled words",
           "estimated bytes");
    static const char *names[] = {"minor", "major", "external"};
    for (int s = 0; s < 3; s++) {
      char e[32];
      human_bytes(e, sizeof e, (double)samples[s] / in->sample_rate * bytes_per_word);
      printf("%-10s %12" PRIu64 " %12" PRIu64 " %14" PRIu64 " %16s\n", names[s], allocs[s],
             samples[s], words[s], e);
    }
    printf("%-10s %12" PRIu64 " %12" PRIu64 " %14s %16s\n", "total", all_allocs, all_samples, "",
           est);
    printf("\npromotions:      %" PRIu64 "\n", promotes);
    printf("collections:     %" PRIu64 " (%" PRIu64 " sampled objects never collected)\n",
           collects, all_allocs > collects ? all_allocs - collects : 0);
  }
  printf("deepest stack:   %" PRIu64 " frames\n", max_depth);
  mt_reader_close(r);
  return 0;
}

const mt_command mt_cmd_info = {"info", "summarize a trace: header, event counts, estimated bytes", usage, run};
