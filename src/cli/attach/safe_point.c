/* Where a thread may be taken aside (safe_point.h). */
#include "safe_point.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "elf_symbols.h"

/* The kernel's codes for a system call interrupted before it completed
 * (include/linux/errno.h, not exported to user space). */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

/* Objects that take, or run callbacks under, the allocator's and the
 * loader's locks, by the start of their file's name. */
static const char *const lock_holders[] = {"libc.so", "ld-linux", "libpthread.so", "libdl.so",
                                           "libgcc_s.so", "libstdc++.so"};

static int holds_locks(const char *path, const char *root_path, const char *profiler) {
  if (profiler && strcmp(path, profiler) == 0) return 1;
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  for (size_t k = 0; k < sizeof lock_holders / sizeof *lock_holders; k++)
    if (strncmp(base, lock_holders[k], strlen(lock_holders[k])) == 0) return 1;
  static const char *const malloc_name[1] = {"malloc"};
  uint64_t v;
  return mt_elf_dynsyms(root_path, malloc_name, 1, &v) == 0 ||
         mt_elf_dynsyms(path, malloc_name, 1, &v) == 0;
}

static int add_range(mt_safe_points *sp, uint64_t lo, uint64_t hi) {
  if (sp->n && sp->unsafe[sp->n - 1].hi == lo) { /* the same object's next mapping */
    sp->unsafe[sp->n - 1].hi = hi;
    return 0;
  }
  if (sp->n == sp->cap) {
    size_t cap = sp->cap ? 2 * sp->cap : 32;
    mt_code_range *v = realloc(sp->unsafe, cap * sizeof *v);
    if (!v) return -1;
    sp->unsafe = v;
    sp->cap = cap;
  }
  sp->unsafe[sp->n++] = (mt_code_range){lo, hi};
  return 0;
}

typedef struct loading {
  mt_safe_points *sp;
  const char *profiler;
  char last[4096]; /* the last file seen, and whether it holds locks */
  int last_unsafe;
} loading;

static int note_mapping(void *ctx, uint64_t lo, uint64_t hi, const char *perms, uint64_t off,
                        const char *path) {
  (void)off;
  loading *l = ctx;
  /* code only; [vdso] and code made at run time name no file (mt_maps_each
   * skips them) and take no lock of theirs */
  if (!strchr(perms, 'x')) return 0;
  if (strcmp(path, l->last) != 0) {
    char root_path[4096 + 64];
    snprintf(l->last, sizeof l->last, "%s", path);
    snprintf(root_path, sizeof root_path, "/proc/%d/root%s", (int)l->sp->pid, path);
    l->last_unsafe = holds_locks(path, root_path, l->profiler);
  }
  return l->last_unsafe ? add_range(l->sp, lo, hi) : 0;
}

int mt_safe_points_load(mt_safe_points *sp, pid_t pid, const char *profiler) {
  memset(sp, 0, sizeof *sp);
  sp->pid = pid;
  loading l = {sp, profiler, "", 0};
  int rc = mt_maps_each(pid, note_mapping, &l);
  if (rc != 0) mt_safe_points_free(sp);
  return rc;
}

void mt_safe_points_free(mt_safe_points *sp) {
  free(sp->unsafe);
  sp->unsafe = NULL;
  sp->n = sp->cap = 0;
}

/* Whether fd of the process reads from outside it, and so waits on
 * nothing of the process's: a socket, pipe, terminal or event. */
static int reads_outside(pid_t pid, unsigned long long fd) {
  char link[64], target[256];
  snprintf(link, sizeof link, "/proc/%d/fd/%llu", (int)pid, fd);
  ssize_t k = readlink(link, target, sizeof target - 1);
  if (k <= 0) return 0;
  target[k] = 0;
  return strncmp(target, "socket:", 7) == 0 || strncmp(target, "pipe:", 5) == 0 ||
         strncmp(target, "anon_inode:", 11) == 0 || strncmp(target, "/dev/", 5) == 0;
}

/* Whether system call nr (arguments in r) waits for something outside the
 * process while its caller holds none of the locks. */
static int waits_outside(pid_t pid, long nr, const struct user_regs_struct *r) {
  switch (nr) {
  case SYS_epoll_wait: case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
  case SYS_epoll_pwait2:
#endif
  case SYS_poll: case SYS_ppoll: case SYS_select: case SYS_pselect6:
  case SYS_nanosleep: case SYS_clock_nanosleep: case SYS_pause:
  case SYS_rt_sigsuspend: case SYS_rt_sigtimedwait:
  case SYS_wait4: case SYS_waitid:
  case SYS_accept: case SYS_accept4: case SYS_recvfrom: case SYS_recvmsg:
  case SYS_msgrcv: case SYS_semop: case SYS_semtimedop:
    return 1;
  case SYS_read: case SYS_readv:
    return reads_outside(pid, r->rdi);
  case SYS_futex: /* a lock waits with FUTEX_WAIT; conditions, semaphores and joins with _BITSET */
    return (r->rsi & FUTEX_CMD_MASK) == FUTEX_WAIT_BITSET;
  default:
    return 0;
  }
}

typedef struct stack_query {
  uint64_t sp;
  int room;
} stack_query;

static int stack_room_in(void *ctx, uint64_t lo, uint64_t hi, const char *perms, uint64_t off,
                         const char *path) {
  (void)perms, (void)off;
  stack_query *q = ctx;
  if (q->sp < lo || q->sp >= hi) return 0;
  q->room = strcmp(path, "[stack]") == 0 || q->sp - lo >= MT_SAFE_POINT_STACK;
  return 1;
}

/* Whether the stack at sp has room for the calls: MT_SAFE_POINT_STACK
 * bytes below sp in its mapping, or it is the main thread's, which grows
 * (to its limit: not checked). */
static int stack_has_room(pid_t pid, uint64_t sp) {
  stack_query q = {sp, 0};
  return mt_maps_each_any(pid, stack_room_in, &q) == 1 && q.room;
}

int mt_safe_point(const mt_safe_points *sp, const struct user_regs_struct *r) {
  int inside = 0;
  for (size_t k = 0; k < sp->n && !inside; k++) inside = r->rip >= sp->unsafe[k].lo && r->rip < sp->unsafe[k].hi;
  if (!inside) return stack_has_room(sp->pid, r->rsp);
  /* inside: only stopped in a waiting system call, right after its
   * instruction, the call interrupted */
  long long rax = (long long)r->rax;
  if ((long long)r->orig_rax < 0 ||
      !(rax == -EINTR || rax == -ERESTARTSYS || rax == -ERESTARTNOINTR ||
        rax == -ERESTARTNOHAND || rax == -ERESTART_RESTARTBLOCK))
    return 0;
  unsigned char insn[2];
  struct iovec local = {insn, 2}, remote = {(void *)(uintptr_t)(r->rip - 2), 2};
  if (process_vm_readv(sp->pid, &local, 1, &remote, 1, 0) != 2 || insn[0] != 0x0f || insn[1] != 0x05)
    return 0;
  return waits_outside(sp->pid, (long)r->orig_rax, r) && stack_has_room(sp->pid, r->rsp);
}
