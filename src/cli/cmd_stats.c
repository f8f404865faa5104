/* Placeholder while the command is being written; replaced before release. */
#include <stdio.h>
#include "cli.h"
static int run(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "memtrace stats: not built yet\n"); return 2; }
const mt_command mt_cmd_stats = {"stats", "(in progress)", "usage: memtrace stats\n", run};
