/* memtrace(1) and the bash completion, from the help texts (manual.h). */
#include "manual.h"

#include <stdlib.h>
#include <string.h>

#include "memtrace/format.h"
#include "suggest.h"

/* Text as roff shows it verbatim: backslashes and dashes escaped (a
 * dash stays a dash, for options copied from the page), a line that would
 * start with a control character guarded. */
static void roff_text(FILE *f, const char *s) {
  int line_start = 1;
  for (; *s; s++) {
    if (line_start && (*s == '.' || *s == '\'')) fputs("\\&", f);
    line_start = *s == '\n';
    if (*s == '\\') fputs("\\e", f);
    else if (*s == '-') fputs("\\-", f);
    else fputc(*s, f);
  }
  if (!line_start) fputc('\n', f);
}

void mt_cli_man(FILE *f, const mt_command *const *cmds, size_t n, void (*overview)(FILE *)) {
  fprintf(f, ".TH MEMTRACE 1 \"\" \"memtrace-c %s\" \"User Commands\"\n", mt_version());
  fputs(".SH NAME\nmemtrace \\- statistical memory profiling of native programs, with "
        "memtrace's traces\n",
        f);
  fputs(".SH SYNOPSIS\n.B memtrace\n.I COMMAND\n[\\fIARGS\\fR...]\n", f);
  fputs(".SH DESCRIPTION\n.nf\n", f);
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (mem) {
    overview(mem);
    fclose(mem);
    roff_text(f, text ? text : "");
    free(text);
  }
  fputs(".fi\n.SH COMMANDS\n", f);
  for (size_t i = 0; i < n; i++) {
    fprintf(f, ".SS \"memtrace %s\"\n", cmds[i]->name);
    fputs(".nf\n", f);
    roff_text(f, cmds[i]->usage);
    fputs(".fi\n", f);
  }
  fputs(".SH SEE ALSO\n"
        "The project's README and docs/ (the viewer's API, the JSON schema, the trace "
        "format).\n",
        f);
}

void mt_cli_bash_completion(FILE *f, const mt_command *const *cmds, size_t n) {
  enum { MAX = 128 };
  static char names[MAX][MT_CLI_OPTION_MAX + 1];
  fprintf(f, "# bash completion for memtrace (memtrace-c %s), generated from its help texts\n",
          mt_version());
  fputs("_memtrace() {\n"
        "  local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]} opts i\n"
        "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
        "    COMPREPLY=($(compgen -W \"",
        f);
  for (size_t i = 0; i < n; i++) fprintf(f, "%s ", cmds[i]->name);
  fputs("help\" -- \"$cur\"))\n"
        "    return\n"
        "  fi\n"
        "  if [ \"$cmd\" = run ]; then # after `--`: the program, then its arguments\n"
        "    for ((i = 2; i < COMP_CWORD; i++)); do\n"
        "      if [ \"${COMP_WORDS[i]}\" = -- ]; then\n"
        "        if [ $((i + 1)) -eq \"$COMP_CWORD\" ]; then COMPREPLY=($(compgen -c -- \"$cur\"));\n"
        "        else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
        "        return\n"
        "      fi\n"
        "    done\n"
        "  fi\n"
        "  case $cmd in\n",
        f);
  for (size_t i = 0; i < n; i++) {
    size_t k = mt_cli_usage_options(cmds[i]->usage, names, MAX - 1);
    int help = 0;
    for (size_t j = 0; j < k; j++) help |= strcmp(names[j], "--help") == 0;
    if (!help) strcpy(names[k++], "--help");
    fprintf(f, "    %s) opts=\"", cmds[i]->name);
    for (size_t j = 0; j < k; j++) fprintf(f, "%s%s", j ? " " : "", names[j]);
    fputs("\" ;;\n", f);
  }
  fputs("    help) COMPREPLY=($(compgen -W \"", f);
  for (size_t i = 0; i < n; i++) fprintf(f, "%s ", cmds[i]->name);
  fputs("\" -- \"$cur\")); return ;;\n"
        "    *) opts=\"--help\" ;;\n"
        "  esac\n"
        "  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"));\n"
        "  else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
        "}\n"
        "complete -o filenames -F _memtrace memtrace\n",
        f);
}
