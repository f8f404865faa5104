/* memtrace run's closing report (run_report.c). */
#ifndef MT_CLI_RUN_REPORT_H
#define MT_CLI_RUN_REPORT_H

#include <sys/types.h>

/* After the program (process pid) has ended: says on stderr where its
 * trace went (pattern: the destination, %p not yet expanded), which traces
 * the run's other processes wrote or how many ran untraced (from what its
 * traced processes wrote in notes_fd, MT__RUN_NOTES_ENV; -1: nothing), and
 * the trace's top sites. A trace that cannot be read is said so, and one
 * that ends early (its process stopped tracing: a full disk) says where, of
 * the program's run, which ended at end_us (microseconds since the epoch).
 * command: what the user ran (argv[0]), to say when it became another
 * program by exec. */
void mt_cli_run_report(int notes_fd, const char *pattern, pid_t pid, unsigned long long end_us,
                       const char *command);

#endif
