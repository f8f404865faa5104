/* Option tables, usage errors and help, shared by the memtrace command's
 * two executables (src/launcher/launcher.c runs `memtrace run` itself). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "suggest.h"

void mt_cli_usage_error(const mt_command *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fflush(stdout);
  fprintf(stderr, "memtrace %s: ", cmd->name);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry 'memtrace help %s'.\n", cmd->name);
  exit(2);
}

int mt_cli_is_help(const char *arg) {
  return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int mt_cli_help(const mt_command *cmd) {
  fputs(cmd->usage, stdout);
  return 0;
}

void mt_cli_nomem(const mt_command *cmd) {
  fflush(stdout);
  fprintf(stderr, "memtrace %s: out of memory\n", cmd->name);
  exit(1);
}

void *mt_cli_xrealloc(const mt_command *cmd, void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) mt_cli_nomem(cmd);
  return q;
}

/* The value of option o in argv[*i] ("--o v", "--o=v", "-nV"), advancing
 * *i past it; NULL when argv[*i] is not o. */
static const char *value_of(const mt_command *cmd, const char *name, int argc, char **argv,
                            int *i) {
  const char *arg = argv[*i];
  size_t n = strlen(name);
  if (strncmp(arg, name, n) != 0) return NULL;
  if (arg[n] == 0) {
    if (*i + 1 >= argc) mt_cli_usage_error(cmd, "%s needs a value", name);
    return argv[++*i];
  }
  if (name[1] == '-' && arg[n] == '=') return arg + n + 1;
  if (name[1] != '-' && n == 2) return arg + n; /* "-n5" */
  return NULL;
}

/* "a, b or c" of "a|b|c". */
static void choice_list(const char *choices, char *buf, size_t n) {
  size_t k = 0, count = 1;
  for (const char *c = choices; *c; c++) count += *c == '|';
  buf[0] = 0;
  for (const char *c = choices; *c && k + 8 < n;) {
    size_t len = strcspn(c, "|");
    count--;
    k += (size_t)snprintf(buf + k, n - k, "%.*s%s", (int)len, c,
                          count > 1 ? ", " : count == 1 ? " or " : "");
    c += len + (c[len] == '|');
  }
}

static int choice_index(const char *choices, const char *v) {
  int idx = 0;
  for (const char *c = choices; *c; idx++) {
    size_t len = strcspn(c, "|");
    if (strlen(v) == len && strncmp(c, v, len) == 0) return idx;
    c += len + (c[len] == '|');
  }
  return -1;
}

static void apply(const mt_command *cmd, const mt_option *o, const char *shown, const char *v) {
  if (o->kind == MT_OPT_TEXT) {
    if (!*v) mt_cli_usage_error(cmd, "%s needs a value", shown);
    *(const char **)o->dest = v;
  } else if (o->kind == MT_OPT_LIST) {
    mt_cli_list *l = o->dest;
    if (!*v) mt_cli_usage_error(cmd, "%s needs a value", shown);
    if (l->n == sizeof l->v / sizeof *l->v)
      mt_cli_usage_error(cmd, "%s given more than %zu times (name a directory of traces)", shown,
                         sizeof l->v / sizeof *l->v);
    l->v[l->n++] = v;
  } else if (o->kind == MT_OPT_CHOICE) {
    int k = choice_index(o->choices, v);
    if (k < 0) {
      char list[256];
      choice_list(o->choices, list, sizeof list);
      mt_cli_usage_error(cmd, "%s takes %s, not '%s'", shown, list, v);
    }
    *(int *)o->dest = k;
  } else { /* MT_OPT_COUNT */
    char *end;
    errno = 0;
    unsigned long long n = v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
    int bad = v[0] < '0' || v[0] > '9' || *end || errno || n > SIZE_MAX / 2 || n < o->min ||
              (o->max && n > o->max);
    if (bad && o->max)
      mt_cli_usage_error(cmd, "%s wants a number from %zu to %zu, not '%s'", shown, o->min,
                         o->max, v);
    if (bad) mt_cli_usage_error(cmd, "%s wants a count (%zu or more), not '%s'", shown, o->min, v);
    *(size_t *)o->dest = (size_t)n;
  }
}

/* Applies argv[*i] if it is one of the table's options; 1 if it was. */
static int option(const mt_command *cmd, const mt_option *opts, int argc, char **argv, int *i) {
  for (const mt_option *o = opts; o && o->name; o++) {
    const char *names[2] = {o->name, o->also};
    for (int k = 0; k < 2 && names[k]; k++) {
      if (o->kind == MT_OPT_FLAG) {
        if (strcmp(argv[*i], names[k]) != 0) continue;
        *(int *)o->dest = o->value ? o->value : 1;
        return 1;
      }
      const char *v = value_of(cmd, names[k], argc, argv, i);
      if (!v) continue;
      apply(cmd, o, names[k], v);
      return 1;
    }
  }
  return 0;
}

size_t mt_cli_parse(const mt_command *cmd, int argc, char **argv, mt_cli_spec *spec) {
  size_t npos = 0;
  int rest = 0; /* after "--": positional only */
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (!rest && mt_cli_is_help(arg)) {
      mt_cli_help(cmd);
      exit(0);
    }
    if (!rest && strcmp(arg, "--") == 0) {
      rest = 1;
      continue;
    }
    int number = spec->numbers && arg[0] == '-' && arg[1] >= '0' && arg[1] <= '9';
    if (!rest && arg[0] == '-' && arg[1] && !number) {
      if (option(cmd, spec->options, argc, argv, &i)) continue;
      char err[600];
      int f = spec->filter ? mt_filter_option(spec->filter, argc, argv, &i, err, sizeof err) : 0;
      if (f < 0) mt_cli_usage_error(cmd, "%s", err);
      if (f > 0) continue;
      char near[80];
      if (mt_cli_suggest_option(cmd->usage, arg, near, sizeof near))
        mt_cli_usage_error(cmd, "unknown option '%s'; did you mean '%s'?", arg, near);
      mt_cli_usage_error(cmd, "unknown option '%s'", arg);
    }
    if (spec->command) {
      spec->positional[npos++] = arg;
      spec->rest = argv + i;
      break;
    }
    if (npos == spec->max) mt_cli_usage_error(cmd, "unexpected argument '%s'", arg);
    spec->positional[npos++] = arg;
  }
  if (npos < spec->min) mt_cli_usage_error(cmd, "missing %s", spec->what ? spec->what : "TRACE");
  return npos;
}

void mt_cli_check_rate_depth(const mt_command *cmd, const char *rate, const char *depth) {
  char *end;
  if (rate) {
    double r = strtod(rate, &end);
    if (*end || !(r > 0 && r <= 1))
      mt_cli_usage_error(cmd, "--rate must be a number in (0, 1], not '%s'", rate);
  }
  if (depth) {
    long d = strtol(depth, &end, 10);
    if (*end || d < 1 || d > 4096) mt_cli_usage_error(cmd, "--depth must be 1 to 4096, not '%s'", depth);
  }
}
