/* memtrace run's report on a process tree: the traces of every process of
 * the run ranked as one (mt_rank_traces), after the program's own report. */
#ifndef MT_CLI_RUN_TREE_H
#define MT_CLI_RUN_TREE_H

#include <stddef.h>

/* Ranks the traces at paths[0..n) as one and prints, on stderr, what the
 * run allocated and its top `top` sites by line, each matched by function,
 * file and line across processes; then the command that explores them
 * together (`pattern` with %p as *). Traces that cannot be read are
 * counted and named, not fatal. Returns 1 when some allocation was
 * sampled, 0 when none (nothing printed but the unreadable ones). */
int mt_cli_run_tree_report(char *const *paths, size_t n, const char *pattern, int top);

#endif
