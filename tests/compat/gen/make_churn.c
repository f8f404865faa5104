/* A trace whose backtraces recur (memtrace-c's hotspots memoizes them) while
 * its (caller, allocator) pairs overflow memtrace's heavy-hitters summary
 * again and again (10000 counters; a pair added when it is full sweeps it):
 *   make_churn OUT
 * 4000 stacks of 6 to 15 frames over functions F0..F399 (some frames
 * repeated: recursion), drawn 12000 times with skewed weights (stack
 * floor(4000 u^2) for a uniform u), so that most allocations repeat a
 * known stack while rare stacks keep bringing new pairs, and pairs of
 * known stacks keep leaving the summary. One allocation in
 * eight has 1 to 4 samples (the others 1). The sample rate makes one
 * sample 0.1 kB, so every count shows in the report.
 * Not built: kept to say how tests/compat/data was made (see its README).
 * Build: cc -I include FILE.c libmemtrace_static.a -lm */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "memtrace/format.h"

enum { NF = 400, NSTACKS = 4000, NALLOCS = 12000, MAXD = 15 };
static mt_location locs[NF];
static char names[NF][8];
static uint64_t stacks[NSTACKS][MAXD];
static int depth[NSTACKS];
static mt_writer *w;
static uint64_t t = 1700000000000000ull;

static int resolve(void *ctx, uint64_t code, const mt_location **l, size_t *n) {
  (void)ctx;
  *l = &locs[code - 0x1000];
  *n = 1;
  return 0;
}

/* xorshift64*: the same trace on any libc */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1dull;
}
static double uniform(void) { return (double)(next() >> 11) / 9007199254740992.0; }

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  for (int i = 0; i < NF; i++) {
    snprintf(names[i], sizeof names[i], "F%d", i);
    locs[i] = (mt_location){"churn.ml", names[i], (uint32_t)i + 1, 0, 5};
  }
  for (int s = 0; s < NSTACKS; s++) {
    depth[s] = 6 + (int)(next() % 10);
    for (int i = 0; i < depth[s]; i++) {
      /* one frame in ten repeats an earlier one */
      int f = i > 0 && next() % 10 == 0 ? (int)(stacks[s][next() % (uint64_t)i] - 0x1000)
                                         : (int)(next() % NF);
      stacks[s][i] = 0x1000 + (uint64_t)f;
    }
  }
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  mt_trace_info info = {.sample_rate = 0.078125, .word_size = 64, .executable_name = "/bin/churn",
                        .host_name = "host", .runtime_params = "", .pid = 9,
                        .start_time = 1700000000000000ull, .context = ""};
  mt_writer_options opt = {.version = 2, .fd = fd, .resolve = resolve};
  if (mt_writer_open(&w, &info, &opt) != MT_OK) return 1;
  for (int k = 0; k < NALLOCS; k++) {
    double u = uniform();
    int s = (int)(NSTACKS * u * u);
    uint64_t nsamples = next() % 8 == 0 ? 1 + next() % 4 : 1;
    if (mt_writer_alloc(w, t++, 0, 2 * nsamples, nsamples, MT_SOURCE_MINOR, stacks[s],
                        (size_t)depth[s], NULL) != MT_OK)
      return 1;
  }
  if (mt_writer_close(w) != MT_OK) return 1;
  return close(fd);
}
