/* The mapping that holds an address (stackmap.h), by PROCMAP_QUERY and by
 * the map's text, on mappings made to measure: the two must agree with
 * each other and with what was mapped. And code of this program mapped
 * again, told as the program's (remaps.h). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include <elfutils/libdwfl.h>

#include "map_again.h"
#include "tracer/runtimes/remaps.h"
#include "tracer/unwind/stackmap.h"

typedef int (*finder)(uintptr_t, mt__mapping *);
static const finder finders[] = {mt__mapping_of, mt__mapping_of_text};
#define EACH_FINDER for (size_t f = 0; f < sizeof finders / sizeof *finders; f++)
#define FIND(addr, m) finders[f]((uintptr_t)(addr), m)

static size_t page;

/* Pages [0, n) of a fresh mapping, all without access, at a place free
 * of neighbours: a whole reserved span, the caller's pages carved out of
 * its middle (the span's edges stay unmapped or without access). */
static char *reserve(size_t n) {
  char *p = mmap(NULL, (n + 4) * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(p != MAP_FAILED);
  munmap(p, page);                     /* a gap below the first guard page... */
  munmap(p + (n + 3) * page, page);    /* ...and above the last */
  return p + 2 * page;
}

static void release(char *p, size_t n) { munmap(p - page, (n + 2) * page); }

/* rw pages over a guard page: a thread stack as the C library makes it */
static void test_guarded(void **state) {
  (void)state;
  char *p = reserve(4);
  assert_int_equal(mprotect(p, 4 * page, PROT_READ | PROT_WRITE), 0);
  EACH_FINDER {
    mt__mapping m = {0};
    assert_true(FIND(p + 3 * page + 100, &m));
    assert_ptr_equal(m.lo, p);
    assert_ptr_equal(m.hi, p + 4 * page);
    assert_int_equal(m.guarded, 1);
  }
  release(p, 4);
}

/* rw pages over a gap, and over a readable page: no guard */
static void test_unguarded(void **state) {
  (void)state;
  char *p = reserve(4);
  assert_int_equal(mprotect(p, page, PROT_READ), 0);
  assert_int_equal(mprotect(p + page, 3 * page, PROT_READ | PROT_WRITE), 0);
  EACH_FINDER {
    mt__mapping m = {0};
    assert_true(FIND(p + page, &m));
    assert_ptr_equal(m.lo, p + page);
    assert_ptr_equal(m.hi, p + 4 * page);
    assert_int_equal(m.guarded, 0);
    assert_false(FIND(p + 10, &m)); /* read-only: not a stack */
  }
  munmap(p - page, page); /* the guard under it: now a gap */
  EACH_FINDER {
    mt__mapping m = {0};
    assert_true(FIND(p + 2 * page, &m));
    assert_ptr_equal(m.lo, p + page);
    assert_int_equal(m.guarded, 0);
  }
  release(p, 4);
}

/* Writable neighbours the kernel keeps apart (one has other flags, one
 * is also executable) are one region, upwards: a walk is not cut there. */
static void test_joined(void **state) {
  (void)state;
  char *p = reserve(6);
  assert_int_equal(mprotect(p, 6 * page, PROT_READ | PROT_WRITE), 0);
  assert_int_equal(madvise(p + 2 * page, page, MADV_DONTDUMP), 0);
  assert_int_equal(mprotect(p + 4 * page, page, PROT_READ | PROT_WRITE | PROT_EXEC), 0);
  EACH_FINDER {
    mt__mapping m = {0};
    assert_true(FIND(p + page, &m));
    assert_ptr_equal(m.lo, p);
    assert_ptr_equal(m.hi, p + 6 * page);
    assert_true(FIND(p + 5 * page, &m));
    assert_ptr_equal(m.lo, p + 5 * page); /* not downwards */
    assert_ptr_equal(m.hi, p + 6 * page);
    assert_int_equal(m.guarded, 0);
  }
  release(p, 6);
}

static void test_unmapped(void **state) {
  (void)state;
  char *p = reserve(1);
  EACH_FINDER {
    mt__mapping m = {0};
    assert_false(FIND(p - 2 * page + 8, &m)); /* the gap */
    assert_false(FIND(p, &m));                /* no access */
    assert_false(FIND(0, &m));
    assert_false(FIND(UINTPTR_MAX - 7, &m));
  }
  release(p, 1);
}

/* Readable ranges (code a walk reads outside every loaded object): r-x and
 * rw- pages count, joined; a page without access, a gap, a range wrapping
 * or empty do not. */
typedef int (*reader)(uintptr_t, size_t);
static const reader readers[] = {mt__readable, mt__readable_text};

static void test_readable(void **state) {
  (void)state;
  char *p = reserve(4);
  assert_int_equal(mprotect(p, page, PROT_READ | PROT_EXEC), 0);
  assert_int_equal(mprotect(p + page, page, PROT_READ | PROT_WRITE), 0);
  assert_int_equal(mprotect(p + 2 * page, page, PROT_READ), 0); /* p + 3 pages: no access */
  for (size_t f = 0; f < sizeof readers / sizeof *readers; f++) {
    uintptr_t a = (uintptr_t)p;
    assert_true(readers[f](a + 100, 11));
    assert_true(readers[f](a, 3 * page));                /* three mappings joined */
    assert_true(readers[f](a + page - 6, 11));           /* across two */
    assert_true(readers[f](a + 3 * page - 11, 11));      /* up to the last byte */
    assert_false(readers[f](a + 3 * page - 6, 11));      /* into no access */
    assert_false(readers[f](a + 3 * page, 1));
    assert_false(readers[f](a - 6, 11));                 /* from the guard below */
    assert_false(readers[f](a - 2 * page + 8, 8));       /* the gap */
    assert_false(readers[f](a + 100, 0));
    assert_false(readers[f](UINTPTR_MAX - 4, 11));
    assert_false(readers[f](0, 11));
  }
  release(p, 4);
}

/* The file mapped at an address: its offset, device and inode, whether
 * executable; anonymous memory has inode 0; a gap, nothing. */
typedef int (*file_finder)(uintptr_t, mt__file_mapping *);
static const file_finder file_finders[] = {mt__file_mapping_of, mt__file_mapping_of_text};

static void test_file_mapping(void **state) {
  (void)state;
  char path[] = "/tmp/mt-stackmap-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  unlink(path);
  assert_int_equal(ftruncate(fd, (off_t)(4 * page)), 0);
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  char *p = reserve(3);
  assert_true(mmap(p, 2 * page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd, (off_t)page) == p);
  assert_int_equal(mprotect(p + 2 * page, page, PROT_READ | PROT_WRITE), 0); /* anonymous */
  close(fd);
  for (size_t f = 0; f < sizeof file_finders / sizeof *file_finders; f++) {
    mt__file_mapping m = {0};
    assert_true(file_finders[f]((uintptr_t)p + page + 5, &m));
    assert_ptr_equal(m.lo, p);
    assert_ptr_equal(m.hi, p + 2 * page);
    assert_int_equal(m.offset, page);
    assert_int_equal(m.inode, st.st_ino);
    assert_int_equal(m.dev_major, major(st.st_dev));
    assert_int_equal(m.dev_minor, minor(st.st_dev));
    assert_int_equal(m.exec, 1);
    assert_true(file_finders[f]((uintptr_t)p + 2 * page, &m));
    assert_int_equal(m.inode, 0);
    assert_int_equal(m.exec, 0);
    assert_true(file_finders[f]((uintptr_t)p - page, &m)); /* the guard: no access */
    assert_int_equal(m.exec, 0);
    assert_false(file_finders[f]((uintptr_t)p - 2 * page + 8, &m)); /* the gap */
  }
  release(p, 3);
}

/* mt__maps_find's matcher in the tests: the mapping whose path is ctx's,
 * from the address above ctx's `after` on; every path given is checked
 * for being one (not empty). */
typedef struct path_query {
  const char *path;
  uintptr_t after;
  int empty_seen;
} path_query;

static int path_is(const mt__file_mapping *m, const char *path, void *ctx) {
  path_query *q = ctx;
  if (!path[0]) q->empty_seen = 1;
  return strcmp(path, q->path) == 0 && m->lo >= q->after;
}

/* A file mapped twice, at two places, under a name with spaces: found by
 * its path, the lower place first, the higher one past it; not when the
 * buffer is one byte short of the path; and a pseudo-path, the stack's. */
static void test_maps_find(void **state) {
  (void)state;
  char dir[] = "/tmp/mt-stackmap-XXXXXX", path[128], got[128];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/a lib (1).so", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, (off_t)(2 * page)), 0);
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  char *p = reserve(3);
  assert_true(mmap(p, page, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == p);
  assert_true(mmap(p + 2 * page, page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd,
                   (off_t)page) == p + 2 * page);
  close(fd);
  path_query q = {.path = path};
  mt__file_mapping m = {0};
  assert_true(mt__maps_find(path_is, &q, got, sizeof got, &m));
  assert_string_equal(got, path);
  assert_ptr_equal(m.lo, p);
  assert_ptr_equal(m.hi, p + page);
  assert_int_equal(m.inode, st.st_ino);
  assert_int_equal(m.exec, 0);
  q.after = (uintptr_t)p + page;
  assert_true(mt__maps_find(path_is, &q, got, sizeof got, &m));
  assert_ptr_equal(m.lo, p + 2 * page);
  assert_int_equal(m.offset, page);
  assert_int_equal(m.exec, 1);
  assert_true(mt__maps_find(path_is, &q, got, strlen(path) + 1, &m)); /* just fits */
  assert_false(mt__maps_find(path_is, &q, got, strlen(path), &m));    /* one byte short */
  assert_false(q.empty_seen); /* anonymous mappings are not given */
  unlink(path);
  rmdir(dir);
  release(p, 3);
  int local = 0;
  q = (path_query){.path = "[stack]"};
  assert_true(mt__maps_find(path_is, &q, got, sizeof got, &m));
  assert_true(m.lo <= (uintptr_t)&local && (uintptr_t)&local < m.hi);
  q = (path_query){.path = path}; /* unmapped now */
  assert_false(mt__maps_find(path_is, &q, got, sizeof got, &m));
}

/* This program's own code mapped again from its file: told as the same
 * code in the program; anonymous memory is no object's. */
__attribute__((noinline)) static int remapped_here(int x) { return x * 3 + 1; }

static void test_remapped_code(void **state) {
  (void)state;
  /* the symbolizer's list of the loaded objects, as it makes it */
  static const Dwfl_Callbacks callbacks = {.find_elf = dwfl_linux_proc_find_elf,
                                           .find_debuginfo = dwfl_standard_find_debuginfo};
  Dwfl *dwfl = dwfl_begin(&callbacks);
  assert_non_null(dwfl);
  dwfl_report_begin(dwfl);
  assert_int_equal(dwfl_linux_proc_report(dwfl, getpid()), 0);
  assert_int_equal(dwfl_report_end(dwfl, NULL, NULL), 0);
  char *at_fn = map_code_again((void *)remapped_here);
  assert_non_null(at_fn);
  mt__remaps r = {0};
  uint64_t same = 0, at = (uint64_t)(uintptr_t)at_fn;
  assert_int_equal(mt__remap_of(&r, dwfl, at + 3, &same), 1);
  assert_int_equal(same, (uintptr_t)remapped_here + 3);
  assert_int_equal(mt__remap_of(&r, dwfl, at, &same), 1); /* kept: the same answer */
  assert_int_equal(same, (uintptr_t)remapped_here);
  char *anon = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(anon != MAP_FAILED);
  assert_int_equal(mt__remap_of(&r, dwfl, (uintptr_t)anon + 8, &same), 0);
  assert_int_equal(mt__remap_of(&r, dwfl, (uintptr_t)anon + 16, &same), 0);
  assert_int_equal(remapped_here(2), 7);
  assert_int_equal(mt__remap_of(&r, NULL, at + 64, &same), 1); /* kept: no list needed */
  munmap(anon, page);
  munmap((void *)((uintptr_t)at_fn & ~(uintptr_t)(page - 1)), MAP_AGAIN_BYTES);
  dwfl_end(dwfl);
}

/* The main thread's stack: guarded (the kernel's gap under it). */
static void test_main_stack(void **state) {
  (void)state;
  char here;
  EACH_FINDER {
    mt__mapping m = {0};
    assert_true(FIND(&here, &m));
    assert_true(m.lo <= (uintptr_t)&here && (uintptr_t)&here < m.hi);
    assert_int_equal(m.guarded, 1);
  }
}

/* A thread's stack: what the C library says it is, from the kernel. */
static void *thread_stack(void *arg) {
  (void)arg;
  char here;
  pthread_attr_t a;
  void *lo;
  size_t size;
  assert_int_equal(pthread_getattr_np(pthread_self(), &a), 0);
  assert_int_equal(pthread_attr_getstack(&a, &lo, &size), 0);
  pthread_attr_destroy(&a);
  EACH_FINDER {
    mt__mapping m = {0};
    assert_true(FIND(&here, &m));
    assert_ptr_equal(m.lo, lo); /* the guard is below the stack glibc reports */
    assert_true(m.hi >= (uintptr_t)lo + size);
    assert_int_equal(m.guarded, 1);
  }
  return NULL;
}

static void test_thread_stack(void **state) {
  (void)state;
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, thread_stack, NULL), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
}

int main(void) {
  page = (size_t)sysconf(_SC_PAGESIZE);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_guarded),     cmocka_unit_test(test_unguarded),
      cmocka_unit_test(test_joined),      cmocka_unit_test(test_unmapped),
      cmocka_unit_test(test_main_stack),  cmocka_unit_test(test_thread_stack),
      cmocka_unit_test(test_readable),    cmocka_unit_test(test_file_mapping),
      cmocka_unit_test(test_remapped_code), cmocka_unit_test(test_maps_find),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
