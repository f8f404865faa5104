/* memtrace subsample: a smaller trace of the same program, keeping each
 * sample with probability 1/FACTOR (memtrace's `subsample` tool).
 *
 * Each sample of an allocation is kept independently; an allocation keeping
 * none is dropped, with its promotion and collection. The output's sample
 * rate is the input's divided by FACTOR, so estimates of bytes stay
 * unbiased. With START and END, only the allocations made in [START, END)
 * (whole seconds since the trace's start, the time truncated) are kept.
 *
 * memtrace draws with OCaml's Random, seeded by nothing (a fixed sequence);
 * we use our own generator (xoshiro256**, seeded with splitmix64 from
 * --seed), so the samples kept differ from memtrace's, but a given seed
 * always gives the same output. FACTOR 1 keeps every event: the output is
 * then the input re-encoded with the same rate.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rewrite.h"
#include "objmap.h"
#include "progress.h"
#include "base/rng.h"

static const char usage[] =
    "usage: memtrace subsample [--seed N] [--format-version 2|3] IN OUT FACTOR\n"
    "                          [START END]\n"
    "\n"
    "Writes to OUT a trace of IN's events keeping each sample with\n"
    "probability 1/FACTOR (a positive integer): allocations left with no\n"
    "sample are dropped, with their promotions and collections. OUT's sample\n"
    "rate is IN's divided by FACTOR. With START and END (integers), only the\n"
    "allocations made from START to before END seconds after the trace's\n"
    "start are kept. FACTOR 1 re-encodes IN (as memtrace's subsample does).\n"
    "\n"
    "Options:\n"
    "  --seed N              seeds the random choices (an unsigned integer,\n"
    "                        default 0): a seed always gives the same OUT.\n"
    "  --format-version 2|3  OUT's format; by default IN's (memtrace 0.2.3's\n"
    "                        subsample writes 2, later releases 3).\n";

/* The project's generator (src/format/rng.h), under local names. */
typedef mt__rng rng;
#define rng_seed mt__rng_seed
#define rng_next mt__rng_next

/* Uniform in [0, bound), bound > 0, without bias (Lemire's method). */
static inline uint64_t rng_below(rng *g, uint64_t bound) {
  unsigned __int128 m = (unsigned __int128)rng_next(g) * bound;
  uint64_t low = (uint64_t)m;
  if (low < bound) {
    uint64_t threshold = -bound % bound;
    while (low < threshold) {
      m = (unsigned __int128)rng_next(g) * bound;
      low = (uint64_t)m;
    }
  }
  return (uint64_t)(m >> 64);
}

/* ---- arguments ---- */

static int parse_i64(const char *s, int64_t *out) {
  if (!*s) return -1;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end) return -1;
  *out = v;
  return 0;
}

static int parse_u64(const char *s, uint64_t *out) {
  if (!*s || *s == '-' || *s == '+') return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end) return -1;
  *out = v;
  return 0;
}

static int resolve(void *ctx, uint64_t code, const mt_location **locs, size_t *n) {
  *locs = mt_reader_lookup(ctx, code, n);
  if (!*locs) *n = 0;
  return 0;
}

static int run(int argc, char **argv) {
  const mt_command *cmd = &mt_cmd_subsample;
  const char *pos[5], *seed_text = NULL;
  int vchoice = -1; /* IN's version */
  uint64_t seed = 0;
  const mt_option options[] = {{"--seed", NULL, MT_OPT_TEXT, &seed_text, NULL, 0, 0, 0},
                               {"--format-version", NULL, MT_OPT_CHOICE, &vchoice, "2|3", 0, 0, 0},
                               {NULL, NULL, 0, NULL, NULL, 0, 0, 0}};
  mt_cli_spec spec = {options, NULL, pos, 0, 5, NULL, 0, 0, NULL};
  spec.numbers = 1; /* START may be negative */
  size_t npos = mt_cli_parse(cmd, argc, argv, &spec);
  if (npos != 3 && npos != 5)
    mt_cli_usage_error(cmd, "needs IN OUT FACTOR, or IN OUT FACTOR START END");
  if (seed_text && parse_u64(seed_text, &seed) != 0)
    mt_cli_usage_error(cmd, "--seed must be an unsigned integer, not '%s'", seed_text);
  int version = vchoice < 0 ? 0 : vchoice + 2;
  const char *in = pos[0], *out = pos[1];
  uint64_t factor;
  if (parse_u64(pos[2], &factor) != 0 || factor == 0)
    mt_cli_usage_error(cmd, "FACTOR must be a positive integer, not '%s'", pos[2]);
  int64_t tstart = INT64_MIN, tend = INT64_MAX;
  if (npos == 5) {
    if (parse_i64(pos[3], &tstart) != 0)
      mt_cli_usage_error(cmd, "START must be an integer (seconds), not '%s'", pos[3]);
    if (parse_i64(pos[4], &tend) != 0)
      mt_cli_usage_error(cmd, "END must be an integer (seconds), not '%s'", pos[4]);
  }

  mt_cli_rewrite rw;
  if (mt_cli_rewrite_open(&rw, in, out)) return 1;
  mt_reader *r = rw.r;
  const mt_trace_info *in_info = mt_reader_info(r);
  mt_trace_info info = *in_info;
  info.sample_rate = in_info->sample_rate / (double)factor;
  if (version == 0) version = in_info->version >= 3 ? 3 : 2;
  if (version < 3) info.initial_domain = 0;
  mt_writer_options opt = {.version = version, .resolve = resolve, .resolve_ctx = r};
  mt_cli_rewrite_writer(&rw, &info, &opt);

  rng g;
  rng_seed(&g, seed);
  mt_objmap remap = {0}; /* input id -> output id, of the objects kept */
  mt_progress progress;
  mt_progress_start(&progress, r, "subsample");
  mt_event ev;
  int rc = 0;
  while (rw.wrc == MT_OK && (rc = mt_reader_next(r, &ev)) > 0) {
    mt_progress_tick(&progress);
    uint64_t id;
    if (ev.kind == MT_EVENT_ALLOC) {
      int64_t now = (int64_t)(ev.time - in_info->start_time) / 1000000;
      if (!(tstart <= now && now < tend)) continue;
      uint64_t kept = ev.nsamples;
      if (factor > 1) {
        kept = 0;
        for (uint64_t i = 0; i < ev.nsamples; i++) kept += rng_below(&g, factor) == 0;
      }
      if (kept == 0) continue;
      if (!mt_cli_rewrite_domain_ok(&rw, version, ev.domain)) break;
      rw.wrc = mt_writer_alloc(rw.w, ev.time, ev.domain, ev.length, kept, ev.source, ev.backtrace,
                            ev.backtrace_len, &id);
      if (rw.wrc == MT_OK) mt_objmap_put(&remap, ev.obj_id, id);
    } else if (ev.kind == MT_EVENT_PROMOTE) {
      uint64_t *m = mt_objmap_get(&remap, ev.obj_id);
      if (m) rw.wrc = mt_writer_promote(rw.w, ev.time, ev.domain, *m);
    } else if (mt_objmap_remove(&remap, ev.obj_id, &id)) {
      rw.wrc = mt_writer_collect(rw.w, ev.time, ev.domain, id);
    }
  }
  mt_progress_end(&progress);
  mt_objmap_free(&remap);
  int status = mt_cli_rewrite_end(&rw, rc);
  mt_reader_close(r);
  return status;
}

const mt_command mt_cmd_subsample = {
    "subsample", "keep 1 sample in FACTOR (and a time window) of a trace", usage, run};
