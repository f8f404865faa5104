/* Placeholder while the command is being written; replaced before release. */
#include <stdio.h>
#include "cli.h"
static int run(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "memtrace export: not built yet\n"); return 2; }
const mt_command mt_cmd_export = {"export", "(in progress)", "usage: memtrace export\n", run};
