/* The tracer's own stack for the calls that need a deep one.
 *
 * The tracer runs inside the program's malloc, on whatever thread called
 * it, and programs give threads small stacks: thread pools, coroutine and
 * green-thread runtimes ask for 16 to 64 KiB. Naming a new code calls
 * libdw, whose line-table reader keeps up to 4096 rows on the stack
 * (dwarf_getsrclines), far more than such a thread has: a 32 KiB thread
 * taking a sample would run into its guard page and die of SIGSEGV where
 * plain it runs fine. So symbolization switches to this stack, whichever
 * thread does it.
 *
 * Mapped on first use, MT__BIG_STACK bytes reserved with MAP_NORESERVE
 * (only the pages touched cost memory: those libdw would have touched on
 * the thread's stack) and a guard page below. The switch is a dozen
 * instructions (mt__call_on_stack, below), paid once per new code. On a
 * thread whose own stack is short (unwind.h), the other deep parts of a
 * sample run here too: a walk by libunwind or call-frame steps, the
 * examining of a new return address (unwind.c), the writing of events
 * (events.c); and on every thread the finding of its stack, whose room is
 * what is being asked (unwind.c). One stack for the
 * process, taken under a lock of its own: symbolization and the writing
 * take it holding the tracer's lock, the unwinder's parts without;
 * nothing waits for another lock holding it. */
#include "bigstack.h"

#if defined(__x86_64__)
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine/endbr.h"

/* the usable stack, [lo, hi): hi is NULL until mapped, published after lo
 * (read and written with the __atomic builtins) */
static char *lo, *hi;
static int failed; /* the mapping was refused: callers use their own stacks */
static pthread_mutex_t big_lock = PTHREAD_MUTEX_INITIALIZER;

/* mt__call_on_stack(fn, arg, top): fn(arg) with %rsp at top (16-byte
 * aligned). The caller's stack pointer is kept in %rbp, which fn
 * preserves; the CFI lets debuggers and unwinders walk back across. */
void mt__call_on_stack(void (*fn)(void *), void *arg, void *top);
__asm__(".text\n"
        ".p2align 4\n"
        ".globl mt__call_on_stack\n"
        ".hidden mt__call_on_stack\n"
        ".type mt__call_on_stack, @function\n"
        "mt__call_on_stack:\n"
        "  .cfi_startproc\n" MT__ENDBR
        "  pushq %rbp\n"
        "  .cfi_def_cfa_offset 16\n"
        "  .cfi_offset %rbp, -16\n"
        "  movq %rsp, %rbp\n"
        "  .cfi_def_cfa_register %rbp\n"
        "  movq %rdx, %rsp\n"
        "  movq %rdi, %rax\n"
        "  movq %rsi, %rdi\n"
        "  call *%rax\n"
        "  movq %rbp, %rsp\n"
        "  popq %rbp\n"
        "  .cfi_def_cfa %rsp, 8\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size mt__call_on_stack, .-mt__call_on_stack\n");

static int map_stack(void) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  char *m = mmap(NULL, MT__BIG_STACK + page, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (m == MAP_FAILED) return -1;
  if (mprotect(m, page, PROT_NONE) != 0) { /* the guard page */
    munmap(m, MT__BIG_STACK + page);
    return -1;
  }
  lo = m + page;
  __atomic_store_n(&hi, lo + MT__BIG_STACK, __ATOMIC_RELEASE);
  return 0;
}

int mt__big_stack_holds(uintptr_t addr) {
  char *top = __atomic_load_n(&hi, __ATOMIC_ACQUIRE);
  return top && addr >= (uintptr_t)lo && addr < (uintptr_t)top;
}

static int on_it(void) {
  char here;
  return mt__big_stack_holds((uintptr_t)&here);
}

int mt__big_stack_lock(void) {
  if (on_it()) return 0; /* its lock is ours */
  pthread_mutex_lock(&big_lock);
  return 1;
}

void mt__big_stack_unlock(int locked) {
  if (locked) pthread_mutex_unlock(&big_lock);
}

void mt__on_big_stack_locked(void (*fn)(void *), void *arg) {
  if (on_it()) {
    fn(arg);
    return;
  }
  if (!hi && !failed && map_stack() != 0) failed = 1;
  char *top = __atomic_load_n(&hi, __ATOMIC_RELAXED);
  if (top) mt__call_on_stack(fn, arg, (void *)((uintptr_t)top & ~(uintptr_t)15));
  else fn(arg); /* no big stack: on the caller's */
}

void mt__on_big_stack(void (*fn)(void *), void *arg) {
  int locked = mt__big_stack_lock();
  mt__on_big_stack_locked(fn, arg);
  mt__big_stack_unlock(locked);
}

void mt__big_stack_fork(int phase) {
  if (phase == 0) pthread_mutex_lock(&big_lock);
  else pthread_mutex_unlock(&big_lock);
}
#else
void mt__on_big_stack(void (*fn)(void *), void *arg) { fn(arg); }
int mt__big_stack_holds(uintptr_t addr) { (void)addr; return 0; }
int mt__big_stack_lock(void) { return 0; }
void mt__on_big_stack_locked(void (*fn)(void *), void *arg) { fn(arg); }
void mt__big_stack_unlock(int locked) { (void)locked; }
void mt__big_stack_fork(int phase) { (void)phase; }
#endif
