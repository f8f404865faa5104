/* Trace files on disk: one writer at a time, and the %p in their names.
 * Shared by the tracer (src/tracer/dest.c) and the commands that write a
 * traced program's trace (memtrace run's check, memtrace listen), so that
 * they all take and test the same lock and read a name alike. Internal
 * (mt__ prefix). */
#ifndef MT_FORMAT_TRACE_FILE_H
#define MT_FORMAT_TRACE_FILE_H

#include <stddef.h>

/* Two processes writing one trace interleave their packets, each emptying
 * the file under the other: neither trace can be read. So a writer holds
 * an exclusive flock on its file (the lock goes with the open file: with
 * its last descriptor, at close or at exec when close-on-exec). */
enum {
  MT__TRACE_FILE_OK,
  MT__TRACE_FILE_BUSY,       /* another holds the lock: the file untouched */
  MT__TRACE_FILE_NOT_EMPTIED /* locked, but ftruncate failed (errno) */
};

/* Takes the file open for writing at fd as a trace's: a regular file is
 * locked, then emptied if it is not empty. Anything else (a FIFO,
 * /dev/null), or a file system without the lock, is left as it is: OK.
 * The file must be opened without O_TRUNC, which would empty another
 * writer's trace before the lock is asked for. */
int mt__trace_file_claim(int fd);

/* Whether a regular file at path is a trace another process is writing
 * (its lock held). Takes nothing: the lock, free, is released at once. */
int mt__trace_file_busy(const char *path);

/* The name pattern read as the tracer reads MEMTRACE: %p is the pid, %%
 * is one %. */
void mt__trace_path_expand(const char *pattern, long pid, char *out, size_t n);
/* The destination of tracing period `period` of tracing toggled by a
 * signal (MEMTRACE_SIGNAL): "%n" in pattern becomes its number; else
 * ".N" goes before a final ".ctf", or at the end. */
void mt__trace_period_path(const char *pattern, unsigned period, char *out, size_t n);
/* Whether pattern holds a %p (not one of a %%). */
int mt__trace_path_has_pid(const char *pattern);
/* Whether a destination is a socket (tcp:HOST:PORT, listen:[HOST:]PORT),
 * not a file name. */
int mt__trace_dest_is_socket(const char *dest);

/* What the traced processes of a `memtrace run` tell it: run sets this
 * variable to the path of a file of its own, and each traced process
 * appends lines to it: "s PID" when it has started tracing, then one line
 * per child process it starts, "t PID" when the child traces into a file
 * of its own (the name has %p), "u PID" when it is not traced (PID 0: not
 * known). Children are seen at fork, at a vfork child's exec and at
 * posix_spawn; not those of the C library's system() and popen(), which
 * tell of themselves by their own "s" line if they trace. */
#define MT__RUN_NOTES_ENV "MEMTRACE_RUN_NOTES"

#endif
