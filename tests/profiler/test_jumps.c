/* mt__jump_direct (src/preload/jumps.c), which rewrites the interposer's
 * `jmp *slot(%rip)` into a direct jump, on code built here in a mapped
 * page: [slot][...][ret][...][site: jmp *slot(%rip); int3; int3].
 * Calling the site runs the jump, which lands on the `ret`. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "preload.h"

#if defined(__x86_64__)

enum { PAGE = 4096, SLOT = 0, RET = 64, SITE = 128 };

/* The page's bytes: slot holding `target`, a ret, and the site. */
static void fill(unsigned char *p, uintptr_t target) {
  memset(p, 0xcc, PAGE);
  memcpy(p + SLOT, &target, sizeof target);
  p[RET] = 0xc3;
  int32_t disp = (int32_t)(SLOT - (SITE + 6));
  p[SITE] = 0xff;
  p[SITE + 1] = 0x25;
  memcpy(p + SITE + 2, &disp, sizeof disp);
}

static unsigned char *code_page(void) {
  unsigned char *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(p != MAP_FAILED);
  fill(p, (uintptr_t)(p + RET));
  assert_int_equal(mprotect(p, PAGE, PROT_READ | PROT_EXEC), 0);
  return p;
}

static void call_site(unsigned char *p) { ((void (*)(void))(void *)(p + SITE))(); }

static void rewrites_the_jump(void **state) {
  (void)state;
  unsigned char *p = code_page();
  call_site(p); /* indirect */
  assert_int_equal(mt__jump_direct(p + SITE, (void *const *)(void *)(p + SLOT)), 0);
  int32_t rel;
  memcpy(&rel, p + SITE + 1, sizeof rel);
  assert_int_equal(p[SITE], 0xe9);
  assert_int_equal(rel, RET - (SITE + 5));
  assert_int_equal(p[SITE + 5], 0xcc); /* the rest of the word: int3 */
  assert_int_equal(p[SITE + 6], 0xcc);
  assert_int_equal(p[SITE + 7], 0xcc);
  call_site(p); /* direct */
  /* once direct, it is no longer a jump through the slot: left alone */
  unsigned char before[8];
  memcpy(before, p + SITE, 8);
  assert_int_equal(mt__jump_direct(p + SITE, (void *const *)(void *)(p + SLOT)), -1);
  assert_memory_equal(before, p + SITE, 8);
  munmap(p, PAGE);
}

/* Each refusal leaves the site's bytes as they were. */
static void expect_refused(unsigned char *site, void *const *slot) {
  unsigned char before[16];
  memcpy(before, site, sizeof before);
  assert_int_equal(mt__jump_direct(site, slot), -1);
  assert_memory_equal(before, site, sizeof before);
}

static void refuses_what_it_cannot_rewrite(void **state) {
  (void)state;
  unsigned char *p = code_page();
  /* not an aligned word */
  expect_refused(p + SITE + 1, (void *const *)(void *)(p + SLOT));
  /* the jump goes through another slot than the one named */
  expect_refused(p + SITE, (void *const *)(void *)(p + SLOT + 8));
  /* not a jump through memory at all */
  expect_refused(p + RET, (void *const *)(void *)(p + SLOT)); /* a ret */
  expect_refused(p + 192, (void *const *)(void *)(p + SLOT)); /* int3s */
  munmap(p, PAGE);

  /* the target more than 2 GiB from the site */
  unsigned char *q = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(q != MAP_FAILED);
  uintptr_t far = (uintptr_t)q + SITE + 5 + ((uintptr_t)1 << 32);
  fill(q, far);
  assert_int_equal(mprotect(q, PAGE, PROT_READ | PROT_EXEC), 0);
  expect_refused(q + SITE, (void *const *)(void *)(q + SLOT));
  /* 2 GiB less one byte away: still in reach (not called) */
  uintptr_t near = (uintptr_t)q + SITE + 5 + INT32_MAX;
  assert_int_equal(mprotect(q, PAGE, PROT_READ | PROT_WRITE), 0);
  memcpy(q + SLOT, &near, sizeof near);
  assert_int_equal(mprotect(q, PAGE, PROT_READ | PROT_EXEC), 0);
  assert_int_equal(mt__jump_direct(q + SITE, (void *const *)(void *)(q + SLOT)), 0);
  assert_int_equal(q[SITE], 0xe9);
  munmap(q, PAGE);
}

/* Code the system will not make writable (a shared mapping of a file open
 * read-only: mprotect fails with EACCES, as SELinux's execmod would make
 * it fail): the indirect jump stays, and still runs. */
static void keeps_the_jump_when_writing_is_refused(void **state) {
  (void)state;
  int fd = memfd_create("jumps", 0);
  if (fd < 0) skip();
  unsigned char bytes[PAGE];
  fill(bytes, 0); /* the slot is fixed below, once the address is known */
  assert_int_equal(write(fd, bytes, PAGE), PAGE);
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  int ro = open(path, O_RDONLY);
  assert_true(ro >= 0);
  unsigned char *p = mmap(NULL, PAGE, PROT_READ | PROT_EXEC, MAP_SHARED, ro, 0);
  if (p == MAP_FAILED) skip(); /* memfds not executable here */
  uintptr_t target = (uintptr_t)(p + RET);
  assert_int_equal(pwrite(fd, &target, sizeof target, SLOT), (ssize_t)sizeof target);
  errno = 0;
  assert_int_not_equal(mprotect(p, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC), 0);
  expect_refused(p + SITE, (void *const *)(void *)(p + SLOT));
  call_site(p);
  munmap(p, PAGE);
  close(ro);
  close(fd);
}

/* Threads running the site while it is rewritten: every call returns. */
static _Atomic int stop_calling;
static void *caller(void *arg) {
  unsigned char *p = arg;
  long n = 0;
  while (!__atomic_load_n(&stop_calling, __ATOMIC_RELAXED)) call_site(p), n++;
  return (void *)n;
}

static void rewrites_while_threads_run_it(void **state) {
  (void)state;
  for (int round = 0; round < 50; round++) {
    unsigned char *p = code_page();
    stop_calling = 0;
    pthread_t t[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, caller, p), 0);
    usleep(200);
    assert_int_equal(mt__jump_direct(p + SITE, (void *const *)(void *)(p + SLOT)), 0);
    usleep(200);
    stop_calling = 1;
    for (int i = 0; i < 2; i++) {
      void *n;
      pthread_join(t[i], &n);
    }
    assert_int_equal(p[SITE], 0xe9);
    munmap(p, PAGE);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(rewrites_the_jump),
      cmocka_unit_test(refuses_what_it_cannot_rewrite),
      cmocka_unit_test(keeps_the_jump_when_writing_is_refused),
      cmocka_unit_test(rewrites_while_threads_run_it),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
int main(void) {
  puts("x86-64 only: skipped");
  return 77;
}
#endif
