/* memtrace strip-names: a copy of a trace without anything that names the
 * program or the machine (memtrace's `strip_names` tool): executable and
 * host "<anonymous>", pid 0, start time 0 (event times become relative to
 * the start), no context, and no backtraces, hence no locations. The sample
 * rate, word size, runtime parameters and every allocation's size, samples,
 * source and domain, every promotion and collection are kept.
 *
 * memtrace's tool writes format version 3 (its multi-domain writer); so do
 * we by default, and then the output is the same file, byte for byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rewrite.h"
#include "objmap.h"
#include "progress.h"

static const char usage[] =
    "usage: memtrace strip-names [--format-version 2|3] IN OUT\n"
    "\n"
    "Writes to OUT the events of IN without what could identify the program:\n"
    "executable and host become \"<anonymous>\", pid and start time 0 (times\n"
    "are kept relative to the start), the context is dropped, and so are the\n"
    "backtraces with their function and file names. Sizes, samples, sources,\n"
    "promotions, collections, the sample rate, word size and runtime\n"
    "parameters are kept.\n"
    "\n"
    "Options:\n"
    "  --format-version 2|3  OUT's format: 3 by default, as memtrace's\n"
    "                        strip_names writes it (the same file, byte for\n"
    "                        byte), or 2, which memtrace 0.2.3 also reads.\n";

static int run(int argc, char **argv) {
  const mt_command *cmd = &mt_cmd_strip_names;
  const char *pos[2];
  int vchoice = 1;
  const mt_option options[] = {
      {"--format-version", NULL, MT_OPT_CHOICE, &vchoice, "2|3", 0, 0, 0},
      {NULL, NULL, 0, NULL, NULL, 0, 0, 0}};
  mt_cli_spec spec = {options, NULL, pos, 2, 2, "IN and OUT", 0, 0, NULL};
  mt_cli_parse(cmd, argc, argv, &spec);
  const char *in = pos[0], *out = pos[1];
  int version = vchoice + 2;

  mt_cli_rewrite rw;
  if (mt_cli_rewrite_open(&rw, in, out)) return 1;
  mt_reader *r = rw.r;
  const mt_trace_info *in_info = mt_reader_info(r);
  uint64_t start = in_info->start_time;
  mt_trace_info info = {
      .sample_rate = in_info->sample_rate,
      .word_size = in_info->word_size,
      .executable_name = "<anonymous>",
      .host_name = "<anonymous>",
      .runtime_params = in_info->runtime_params,
      .pid = 0,
      .start_time = 0,
      .context = "",
      .initial_domain = 0,
  };
  mt_writer_options opt = {.version = version};
  mt_cli_rewrite_writer(&rw, &info, &opt);

  /* Input id -> output id, for the objects whose ids differ (only when the
   * input's ids have gaps). */
  mt_objmap remap = {0};
  mt_progress progress;
  mt_progress_start(&progress, r, "strip-names");
  mt_event ev;
  int rc = 0;
  while (rw.wrc == MT_OK && (rc = mt_reader_next(r, &ev)) > 0) {
    mt_progress_tick(&progress);
    uint64_t t = ev.time - start, id;
    if (!mt_cli_rewrite_domain_ok(&rw, version, ev.domain)) break;
    if (ev.kind == MT_EVENT_ALLOC) {
      rw.wrc = mt_writer_alloc(rw.w, t, ev.domain, ev.length, ev.nsamples, ev.source, NULL, 0, &id);
      if (rw.wrc == MT_OK && id != ev.obj_id) mt_objmap_put(&remap, ev.obj_id, id);
    } else {
      uint64_t *m = mt_objmap_get(&remap, ev.obj_id);
      id = m ? *m : ev.obj_id;
      if (m && ev.kind == MT_EVENT_COLLECT) mt_objmap_remove(&remap, ev.obj_id, NULL);
      rw.wrc = ev.kind == MT_EVENT_PROMOTE ? mt_writer_promote(rw.w, t, ev.domain, id)
                                           : mt_writer_collect(rw.w, t, ev.domain, id);
    }
  }
  mt_progress_end(&progress);
  mt_objmap_free(&remap);
  int status = mt_cli_rewrite_end(&rw, rc);
  mt_reader_close(r);
  return status;
}

const mt_command mt_cmd_strip_names = {
    "strip-names", "copy a trace without program, host or function names", usage, run};
