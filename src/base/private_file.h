/* Opening a file to write a trace into: a trace names a program's
 * functions, files and allocation sizes, so it is created readable by its
 * owner only (0600, as memtrace's own traces; the umask still applies),
 * and never through a symbolic link at its path, so that a process
 * tracing to /tmp/x.ctf cannot be made to overwrite another file by a link
 * put there. The system's own names that are links (/dev/stdout,
 * /dev/fd/N, /proc/self/fd/N) open what they name, without creating
 * anything. FIFOs and devices open as themselves. libc only (the
 * interposer uses it). */
#ifndef MT_BASE_PRIVATE_FILE_H
#define MT_BASE_PRIVATE_FILE_H

#include <stddef.h>

/* open(path, O_WRONLY | O_CREAT | O_CLOEXEC | extra, 0600), refusing a
 * symbolic link at path. Returns the descriptor, or -1 with errno set and a
 * message naming path and the reason in err[0..n) (ELOOP for a link:
 * "refusing to write through the symbolic link PATH"). */
int mt_open_private(const char *path, int extra, char *err, size_t n);

/* Whether mt_open_private would refuse path as a symbolic link (for a
 * check before the work that would write it). */
int mt_private_link_refused(const char *path);

#endif
