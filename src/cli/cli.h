/* The memtrace command: its subcommands' table, their option tables, usage
 * errors (exit 2) and trace errors (exit 1).
 *
 * A subcommand is a declarative table of its options, a call into the
 * library, and a renderer (src/cli/output): see src/cli/commands. */
#ifndef MT_CLI_H
#define MT_CLI_H

#include <stddef.h>

#include "memtrace/analysis.h"
#include "memtrace/json.h"
#include "memtrace/rank.h"

typedef struct mt_command {
  const char *name;
  const char *summary; /* one line for `memtrace --help` */
  const char *usage;   /* full help for `memtrace help NAME` */
  int (*run)(int argc, char **argv); /* argv[0] is the command name */
} mt_command;

#define MT_COMMAND(name) extern const mt_command mt_cmd_##name;
#include "commands.def"
#undef MT_COMMAND

/* ---- options ---------------------------------------------------------------- */

enum {
  MT_OPT_FLAG,   /* no value: sets *(int *)dest to `value`                       */
  MT_OPT_COUNT,  /* a whole number into *(size_t *)dest, within [min, max]
                    (max 0: no bound)                                            */
  MT_OPT_TEXT,   /* any non-empty text: *(const char **)dest points into argv    */
  MT_OPT_CHOICE, /* one of `choices` ("a|b|c"): its index into *(int *)dest      */
  MT_OPT_LIST    /* any non-empty text, repeatable: appended to *(mt_cli_list *)dest */
};

/* The values of a repeatable option (MT_OPT_LIST), pointing into argv. */
typedef struct mt_cli_list {
  const char *v[64];
  size_t n;
} mt_cli_list;

typedef struct mt_option {
  const char *name;    /* "--by", "-n"                                          */
  const char *also;    /* another spelling ("--output"), or NULL                 */
  int kind;
  void *dest;
  const char *choices; /* MT_OPT_CHOICE                                          */
  int value;           /* MT_OPT_FLAG                                            */
  size_t min, max;     /* MT_OPT_COUNT                                           */
} mt_option;

/* What a command's arguments are: its options (a table ended by an entry
 * whose name is NULL), the filter options when `filter` is not NULL, and
 * between min and max positional arguments (named `what` in the error for
 * too few). */
typedef struct mt_cli_spec {
  const mt_option *options;
  mt_filter *filter;
  const char **positional;
  size_t min, max;
  const char *what; /* "TRACE" */
  int numbers;      /* "-5" is a positional argument, not an option */
  int command;      /* the first positional argument starts a command line,
                       whose arguments are not ours: they are left in rest */
  char *const *rest;
} mt_cli_spec;

/* Parses argv[1..argc): "--name VALUE", "--name=VALUE", "-nVALUE" for
 * one-letter options; "--" ends the options. -h and --help print the usage
 * and exit 0; a bad argument is a usage error. Returns the number of
 * positional arguments. */
size_t mt_cli_parse(const mt_command *cmd, int argc, char **argv, mt_cli_spec *spec);

/* Prints "memtrace CMD: MESSAGE" and a hint to stderr, exits 2. */
void mt_cli_usage_error(const mt_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
/* Whether argv[i] asks for help (-h, --help). */
int mt_cli_is_help(const char *arg);
/* Prints the command's usage to stdout and returns 0. */
int mt_cli_help(const mt_command *cmd);
/* The tracer's --rate (a number in (0, 1]) and --depth (1 to 4096), as
 * run and attach take them (NULL: not given); a bad one is a usage error. */
void mt_cli_check_rate_depth(const mt_command *cmd, const char *rate, const char *depth);
/* Prints "memtrace CMD: out of memory" and exits 1. */
void mt_cli_nomem(const mt_command *cmd) __attribute__((noreturn));
/* realloc that exits on failure. */
void *mt_cli_xrealloc(const mt_command *cmd, void *p, size_t n);

/* ---- traces ------------------------------------------------------------------ */

/* Finds `file`, installed with the memtrace command: beside the running
 * executable, or in ../lib/memtrace or ../lib from its directory. Writes
 * its path to out (n bytes); 0, or -1 if none is readable. */
int mt_cli_find_companion(const char *file, char *out, size_t n);
/* The malloc interposer, libmemtrace_preload.so: $MEMTRACE_PRELOAD if set,
 * else the companion. 0, or -1 if it is not readable. */
int mt_cli_find_preload(char *out, size_t n);

/* Opens a trace or exits 1 with the reader's message. */
mt_reader *mt_cli_open(const char *path);
/* After the event loop: rc < 0 prints the error and exits 1; a warning
 * (truncated trace, skipped packets) is printed to stderr. */
void mt_cli_finish(mt_reader *r, int rc);
/* Whether MEMTRACE_LOAD=whole asks every load to keep every object (the
 * loads that keep less give the same answers: benchmarks and tests
 * compare the two). */
int mt_cli_load_whole(void);
/* Loads a trace into an analysis or exits 1 with a message naming it;
 * prints the analysis' warning (truncated trace...) on stderr. */
mt_analysis *mt_cli_load(const char *path);
/* The same, folded by fold's conditions on objects (mt_analysis_load_folded);
 * NULL: a whole load. */
mt_analysis *mt_cli_load_folded(const char *path, const mt_filter *fold);
/* The same, keeping `keep` (MT_KEEP_FOLDED and MT_KEEP_SITES under fold's
 * conditions, as mt_analysis_load_folded and mt_analysis_load_sites); every
 * object under MEMTRACE_LOAD=whole. */
mt_analysis *mt_cli_load_keep(const char *path, mt_keep keep, const mt_filter *fold);
/* As little as a ranking by spec under f needs (top, diff): sums by site
 * made while reading (mt_rank_folds; a ranking that still refuses them,
 * MT_ERR_INVALID, is made again on a whole load), or the objects never
 * collected, or every object. */
mt_keep mt_cli_rank_keep(const mt_filter *f, const mt_rank_spec *spec);

/* The traces named by the arguments: a file as it is, a directory as the
 * .ctf files in it (sorted). Returns how many, with their paths in *out
 * (each and the array to free); exits 1 when an argument names nothing
 * readable or a directory holds no trace. */
size_t mt_cli_traces(const mt_command *cmd, const char *const *args, size_t n, char ***out);
/* The .ctf files of directory dir, sorted, in *out (each and the array to
 * free; NULL when none): how many, or -1 with errno when dir is no
 * directory (ENOTDIR), cannot be read, or memory runs out (*out NULL). */
long mt_cli_trace_dir(const char *dir, char ***out);

/* The most trace arguments a command takes (a directory counts as one). */
enum { MT_CLI_MAX_TRACES = 4096 };

/* Several traces loaded for one answer (a process tree, a fleet). */
typedef struct mt_cli_trace_set {
  mt_analysis **as;
  char **paths;
  size_t n;
} mt_cli_trace_set;

/* Loads the traces the arguments name (mt_cli_traces) into t, keeping
 * `keep` of their objects (mt_analysis_load_keep; MT_KEEP_FOLDED and
 * MT_KEEP_SITES by fold's conditions: mt_analysis_load_folded,
 * mt_analysis_load_sites), on as many threads as
 * there are cores (at most one a trace); exits 1 naming the first, in the
 * arguments' order, that cannot be loaded. Warnings are printed in that
 * order too. */
void mt_cli_load_set(const mt_command *cmd, const char *const *args, size_t n, mt_keep keep,
                     const mt_filter *fold, mt_cli_trace_set *t);
void mt_cli_free_set(mt_cli_trace_set *t);
/* The function names of a filter's conditions (--inside, --not-inside,
 * --hide), each noted once a trace has a function with it in its name: a
 * name no trace has selects or hides nothing, and is most likely
 * misspelled. Names past the first MT_FILTER_NAMES_MAX are not looked at. */
typedef struct mt_cli_names {
  mt_filter_name name[MT_FILTER_NAMES_MAX];
  unsigned char found[MT_FILTER_NAMES_MAX];
  size_t n, traces;
} mt_cli_names;
void mt_cli_names_init(mt_cli_names *w, const mt_filter *f);
/* Notes the names trace a has. */
void mt_cli_names_look(mt_cli_names *w, const mt_analysis *a);
/* Warns on stderr, a line each, of the names no trace looked at has. */
void mt_cli_names_warn(const mt_command *cmd, const mt_cli_names *w);
/* The three for traces as[0..n), loaded together. */
void mt_cli_warn_unmatched(const mt_command *cmd, const mt_filter *f,
                           const mt_analysis *const *as, size_t n);

/* "[exe pid] " (the executable's base name) for trace k, in buf (n bytes);
 * "[exe pid@host] " when the set's traces come from several hosts. */
const char *mt_cli_process_text(char *buf, size_t n, const mt_cli_trace_set *t, size_t k);
/* "traces": [{trace, executable, pid, host, start_us}...], in a command's
 * JSON: of a loaded set, or of the traces at paths (their headers read). */
void mt_cli_json_set(mt_json *j, const mt_cli_trace_set *t);
void mt_cli_json_traces(mt_json *j, const char *const *paths, size_t n);
/* Whether the traces at paths[0..n) share their sample rate and word size
 * (their headers read; exits 1 on one that cannot be opened). */
int mt_cli_same_rate(const char *const *paths, size_t n);
/* The traces at paths[0..n) loaded as one analysis (mt_analysis_load_many),
 * or exits 1 with its message. */
mt_analysis *mt_cli_load_many(const mt_command *cmd, const char *const *paths, size_t n);
/* "Sample rate: R", or "Sample rates: LO to HI (...)" when they differ,
 * in buf (n bytes). */
const char *mt_cli_rates_text(char *buf, size_t n, const mt_cli_trace_set *t);

/* The filter in words (mt_filter_describe), in a string to free. */
char *mt_cli_filter_text(const mt_filter *f);
/* The same in a native program's words when `native` (every object
 * external: "never freed", "freed in", not "collected"). */
char *mt_cli_filter_words(const mt_filter *f, int native);

/* ---- JSON output ----------------------------------------------------------------- */

/* Starts a command's JSON document on stdout: a pretty writer with an open
 * object holding "command", and "trace" and "sample_rate" when a is not
 * NULL. */
void mt_cli_json_begin(mt_json *j, const mt_command *cmd, const char *path, const mt_analysis *a);
/* Closes the object and writes the document to stdout (exit 1 on failure). */
void mt_cli_json_end(mt_json *j, const mt_command *cmd);

#endif
