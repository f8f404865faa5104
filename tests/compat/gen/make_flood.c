/* A trace whose hotspots output depends on the sweeps of memtrace's
 * heavy-hitters summary (at most 10000 counters; a pair added when it is
 * full is not counted but gives every counter a miss, and those with no
 * more hits than misses go):
 *   make_flood OUT
 * Functions F0..F299 are made first by one one-frame allocation each. Then
 * R = [F22, F12] twice; 9999 distinct pairs [F150.., F30..] (full); one
 * more (sweep 1: R keeps 2 hits > 1 miss, the others go); 9999 more (full);
 * one more (sweep 2: R goes, 2 hits = 2 misses); R 5 times (counted anew);
 * 9999 more (full); P = [F20, F10] and Q = [F21, F11] 400 times each,
 * taking turns (the first P sweeps and is not counted: P 399, Q 400); R 300
 * times (305). The sample rate makes one allocation 0.1 kB, so that every
 * count shows in the report. *
 * Not built: kept to say how tests/compat/data was made (see its README).
 * Build: cc -I include FILE.c libmemtrace_static.a */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "memtrace/format.h"

enum { NF = 300 };
static mt_location locs[NF];
static char names[NF][8];
static mt_writer *w;
static uint64_t t = 1700000000000000ull;

static int resolve(void *ctx, uint64_t code, const mt_location **l, size_t *n) {
  (void)ctx;
  *l = &locs[code - 0x1000];
  *n = 1;
  return 0;
}

static void alloc2(int caller, int allocator) {
  uint64_t bt[2] = {0x1000 + (uint64_t)caller, 0x1000 + (uint64_t)allocator};
  if (mt_writer_alloc(w, t++, 0, 2, 1, MT_SOURCE_MINOR, bt, 2, NULL) != MT_OK) exit(1);
}

/* the next distinct (caller, allocator) pair of the flood */
static int flood_i;
static void flood(int n) {
  for (int k = 0; k < n; k++, flood_i++) alloc2(150 + flood_i % 150, 30 + flood_i / 150);
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  for (int i = 0; i < NF; i++) {
    snprintf(names[i], sizeof names[i], "F%d", i);
    locs[i] = (mt_location){"flood.ml", names[i], (uint32_t)i + 1, 0, 5};
  }
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  mt_trace_info info = {.sample_rate = 0.078125, .word_size = 64, .executable_name = "/bin/flood",
                        .host_name = "host", .runtime_params = "", .pid = 8,
                        .start_time = 1700000000000000ull, .context = ""};
  mt_writer_options opt = {.version = 2, .fd = fd, .resolve = resolve};
  if (mt_writer_open(&w, &info, &opt) != MT_OK) return 1;
  for (int i = 0; i < NF; i++) {
    uint64_t bt[1] = {0x1000 + (uint64_t)i};
    mt_writer_alloc(w, t++, 0, 2, 1, MT_SOURCE_MINOR, bt, 1, NULL);
  }
  alloc2(22, 12);
  alloc2(22, 12);
  flood(9999);
  flood(1);
  flood(9999);
  flood(1);
  for (int i = 0; i < 5; i++) alloc2(22, 12);
  flood(9999);
  for (int i = 0; i < 400; i++) {
    alloc2(20, 10);
    alloc2(21, 11);
  }
  for (int i = 0; i < 300; i++) alloc2(22, 12);
  if (mt_writer_close(w) != MT_OK) return 1;
  return close(fd);
}
