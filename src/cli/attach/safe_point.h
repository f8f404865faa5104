/* Where a thread of a running process may be taken aside to make memtrace
 * attach's calls (dlopen, starting and stopping tracing). Those calls take
 * the allocator's locks and the loader's; a thread stopped while it holds
 * one of them would wait for itself (or, in a program with one thread,
 * where glibc's malloc takes no lock, re-enter malloc half-way through an
 * update). So a thread is taken only where it holds none of them:
 * - running code outside the objects that take those locks: the C
 *   library, the dynamic loader, the C++ and unwinder runtimes (their
 *   callbacks run under the loader's lock), the profiler itself, and every
 *   object that defines malloc (an allocator, shared or linked into the
 *   program);
 * - or blocked, inside them, in a system call that waits for something
 *   outside the process holding none of them: epoll_wait, poll, select,
 *   nanosleep, sigtimedwait, wait4, accept, a read of a socket, pipe or
 *   terminal, a futex wait for a condition, a semaphore or a join (not for
 *   a lock), and their kind;
 * - and with room on its stack for the calls (dlopen runs the loader and
 *   the profiler's constructors there): MT_SAFE_POINT_STACK bytes below its
 *   stack pointer, or the main thread's stack, which grows. A thread with a
 *   small stack of its own would otherwise fault in the loader, and leave
 *   the loader's lock held. */
#ifndef MT_CLI_ATTACH_SAFE_POINT_H
#define MT_CLI_ATTACH_SAFE_POINT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#define MT_SAFE_POINT_STACK (64u << 10)

typedef struct mt_code_range {
  uint64_t lo, hi;
} mt_code_range;

typedef struct mt_safe_points {
  pid_t pid;
  mt_code_range *unsafe; /* code that may hold the locks, by address */
  size_t n, cap;
} mt_safe_points;

/* Reads process pid's map and the dynamic symbols of the objects it maps
 * (before any thread is stopped). `profiler`: the profiler's library as
 * the process maps it, or NULL. 0, or -1 (the map cannot be read, or no
 * memory). */
int mt_safe_points_load(mt_safe_points *sp, pid_t pid, const char *profiler);
void mt_safe_points_free(mt_safe_points *sp);

/* Whether a thread of the process, stopped with registers r, may be taken
 * aside there: 1, or 0 (0 too when its stack cannot be found in the
 * process's map). */
int mt_safe_point(const mt_safe_points *sp, const struct user_regs_struct *r);

#endif
