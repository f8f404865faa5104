/* Placeholder while the command is being written; replaced before release. */
#include <stdio.h>
#include "cli.h"
static int run(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "memtrace top: not built yet\n"); return 2; }
const mt_command mt_cmd_top = {"top", "(in progress)", "usage: memtrace top\n", run};
