/* memtrace, the command users type. `memtrace run` is done here; every other
 * command by the full tool, memtrace-tools, exec'd in this process's place
 * with the same arguments.
 *
 * Why two executables: `memtrace run` stands before the profiled program,
 * whose CPU time it adds to, and linked dynamically it pays for the loader
 * mapping and relocating the C library and libm, and their page faults,
 * before the program starts (docs/benchmarks.md, "memtrace run itself").
 * The tools cannot be
 * static: they open libraries at run time (a compressor for
 * `export`). `run` needs none: it is linked statically into this small
 * executable, its report read with the same trace library.
 * (In sanitizer builds this executable is linked dynamically, as the
 * sanitizers' runtimes need: the same code, checked.) */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "run") == 0) return mt_cmd_run.run(argc - 1, argv + 1);
  char tools[PATH_MAX];
  if (mt_cli_find_companion("memtrace-tools", tools, sizeof tools) != 0) {
    fprintf(stderr, "memtrace: cannot find memtrace-tools (looked beside the memtrace "
                    "binary, and in ../lib/memtrace from it)\n");
    return 2;
  }
  execv(tools, argv);
  fprintf(stderr, "memtrace: cannot run %s: %s\n", tools, strerror(errno));
  return 2;
}
