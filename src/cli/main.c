/* memtrace-tools, the full memtrace command: dispatches to the subcommands.
 * (memtrace itself, src/launcher/launcher.c, runs `run` and execs this.) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "manual.h"
#include "suggest.h"

static const mt_command *const commands[] = {
#define MT_COMMAND(name) &mt_cmd_##name,
#include "commands.def"
#undef MT_COMMAND
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void overview(FILE *f) {
  fprintf(f,
          "usage: memtrace COMMAND [ARGS...]\n"
          "\n"
          "memtrace-c: statistical memory profiling with memtrace traces.\n"
          "\n"
          "Commands:\n");
  for (size_t i = 0; i < NCOMMANDS; i++)
    fprintf(f, "  %-12s %s\n", commands[i]->name, commands[i]->summary);
  fprintf(f,
          "\n"
          "`memtrace help COMMAND` or `memtrace COMMAND --help` describes one;\n"
          "`memtrace help --man` writes this manual as memtrace(1), `memtrace help\n"
          "--bash-completion` a completion script for bash.\n"
          "`memtrace --version` prints the version.\n");
}

static const mt_command *find(const char *name) {
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (strcmp(commands[i]->name, name) == 0) return commands[i];
  return NULL;
}

/* No such command: the nearest one when it is near, else the list. */
static int no_command(const char *name) {
  const char *names[NCOMMANDS + 1];
  for (size_t i = 0; i < NCOMMANDS; i++) names[i] = commands[i]->name;
  names[NCOMMANDS] = "help";
  const char *near = mt_cli_suggest(name, names, NCOMMANDS + 1);
  if (near) {
    fprintf(stderr, "memtrace: no command '%s'; did you mean '%s'?\nTry 'memtrace help'.\n", name,
            near);
    return 2;
  }
  fprintf(stderr, "memtrace: no command '%s'\n\n", name);
  overview(stderr);
  return 2;
}

/* An output that reaches the file size limit (ulimit -f): the write that
 * would cross it fails with EFBIG, and the command says so as it says any
 * failed write, naming the file, rather than dying of SIGXFSZ (its default
 * action). A handler, not SIG_IGN: a program the command starts gets the
 * default back at exec. */
static void on_file_size_limit(int sig) { (void)sig; }

int main(int argc, char **argv) {
  struct sigaction sa = {.sa_handler = on_file_size_limit};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGXFSZ, &sa, NULL);
  if (argc < 2) {
    overview(stderr);
    return 2;
  }
  const char *name = argv[1];
  if (mt_cli_is_help(name)) {
    overview(stdout);
    return 0;
  }
  if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
    printf("memtrace (memtrace-c) %s\n", mt_version());
    return 0;
  }
  if (strcmp(name, "help") == 0) {
    if (argc < 3) {
      overview(stdout);
      return 0;
    }
    if (strcmp(argv[2], "--man") == 0) {
      mt_cli_man(stdout, commands, NCOMMANDS, overview);
      return 0;
    }
    if (strcmp(argv[2], "--bash-completion") == 0) {
      mt_cli_bash_completion(stdout, commands, NCOMMANDS);
      return 0;
    }
    const mt_command *cmd = find(argv[2]);
    if (!cmd) return no_command(argv[2]);
    return mt_cli_help(cmd);
  }
  const mt_command *cmd = find(name);
  if (!cmd) return no_command(name);
  return cmd->run(argc - 1, argv + 1);
}
