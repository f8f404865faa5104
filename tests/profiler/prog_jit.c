/* Generated code, as a JIT compiler makes it: stubs copied into an
 * anonymous mapping made executable, which call back into the program,
 * which allocates: one keeps a frame record, two do not (CPython's perf
 * trampolines, with and without endbr64: called with rbp holding data,
 * calling a function that keeps none either), one named in a jitdump
 * rather than the perf map, a function of the program run from a second
 * mapping of its file, a script's function calling the runtime's library
 * code (named as node's built-in modules are), and a copy
 * of the first named as V8 names a function without a name in a script
 * without one, then replaced by other code named by a later line. Their ranges and names go to /tmp/perf-PID.map, the perf
 * map runtimes write for profilers (e2e.sh, jit). x86-64. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cpython_trampoline.h"
#include "map_again.h"

__attribute__((noinline)) static void *alloc_from_jit(void) {
  void *p = malloc(4096);
  __asm__ volatile("" ::: "memory"); /* no tail call */
  return p;
}

/* A trampoline called as CPython built with frame pointers calls it: from
 * a function that keeps a record, the evaluator (here alloc_from_jit)
 * keeping one too, in rcx, the fourth argument. */
typedef void *(*trampoline)(void *, void *, void *, void *(*)(void));
__attribute__((noinline)) static void *rec_outer(trampoline t) {
  void *p = t(NULL, NULL, NULL, alloc_from_jit);
  __asm__ volatile("" ::: "memory"); /* no tail call */
  return p;
}

/* The jitdump runtimes write for perf (LLVM's JITs, wasmtime, node
 * --perf-prof, CPython 3.13 -X perf_jit): /tmp/jit-PID.dump, a header and a
 * code load record naming [code, code + size), mapped executable as they
 * map it (perf finds it so; the profiler too). 0, or -1 and a message. */
static int write_jitdump(const void *code, size_t size) {
  unsigned char b[256] = {0};
  const char name[] = "wasm[0]::function[1]::dumped";
  uint32_t u32;
  uint64_t u64;
  size_t n = 0;
#define PUT(v) (memcpy(b + n, &(v), sizeof(v)), n += sizeof(v))
  u32 = 0x4A695444, PUT(u32); /* magic, version, header size, EM_X86_64, pad, pid */
  u32 = 1, PUT(u32);
  u32 = 40, PUT(u32);
  u32 = 62, PUT(u32);
  u32 = 0, PUT(u32);
  u32 = (uint32_t)getpid(), PUT(u32);
  u64 = 0, PUT(u64), PUT(u64); /* timestamp, flags */
  u32 = 0, PUT(u32); /* JIT_CODE_LOAD, its size, timestamp */
  u32 = (uint32_t)(16 + 40 + sizeof name + size), PUT(u32);
  u64 = 0, PUT(u64);
  u32 = (uint32_t)getpid(), PUT(u32), PUT(u32); /* pid, tid */
  u64 = (uint64_t)(uintptr_t)code, PUT(u64), PUT(u64); /* vma, code_addr */
  u64 = size, PUT(u64);
  u64 = 1, PUT(u64); /* code_index */
#undef PUT
  memcpy(b + n, name, sizeof name);
  n += sizeof name;
  memcpy(b + n, code, size);
  n += size;
  char path[64];
  snprintf(path, sizeof path, "/tmp/jit-%ld.dump", (long)getpid());
  int fd = open(path, O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 || write(fd, b, n) != (ssize_t)n) return perror(path), -1;
  if (mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED)
    return perror("prog_jit: mmap of the jitdump"), -1;
  close(fd);
  return 0;
}

/* Script code calling the runtime's own library code (node's built-in
 * modules), which allocates: user -> inner_hop -> lib -> alloc_from_lib. */
__attribute__((noinline)) static void *alloc_from_lib(void) {
  void *p = malloc(2048);
  __asm__ volatile("" ::: "memory");
  return p;
}

static void *(*lib_stub)(void *(*)(void));
__attribute__((noinline)) static void *inner_hop(void) {
  void *p = lib_stub(alloc_from_lib);
  __asm__ volatile("" ::: "memory");
  return p;
}

/* prog_jit_nofp.S */
void *nofp_outer(void *(*stub)(void *(*)(void)), void *(*callback)(void));
void *nofp_alloc(void);
void *remap_caller(void *(*callback)(void));

int main(void) {
  /* push %rbp; mov %rsp,%rbp; call *%rdi; pop %rbp; ret */
  static const unsigned char stub_code[] = {0x55, 0x48, 0x89, 0xe5, 0xff, 0xd7, 0x5d, 0xc3};
  unsigned char *m =
      mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return perror("prog_jit: mmap"), 1;
  memcpy(m + 64, stub_code, sizeof stub_code);
  /* without a record: CPython's perf trampolines, bare and with endbr64 */
  size_t bare_size = put_cpython_trampoline(m + 128, 0);
  memcpy(m + 192, stub_code, sizeof stub_code); /* named as V8 names an unnamed function */
  size_t cet_size = put_cpython_trampoline(m + 256, 1);
  memcpy(m + 320, stub_code, sizeof stub_code); /* named in the jitdump alone */
  put_cpython_trampoline(m + 384, 0); /* called from code with records */
  memcpy(m + 448, stub_code, sizeof stub_code); /* a script's function */
  memcpy(m + 512, stub_code, sizeof stub_code); /* the runtime's library's */
  if (mprotect(m, 4096, PROT_READ | PROT_EXEC) != 0) return perror("prog_jit: mprotect"), 1;
  char path[64];
  snprintf(path, sizeof path, "/tmp/perf-%ld.map", (long)getpid());
  FILE *f = fopen(path, "w");
  if (!f) return perror(path), 1;
  fprintf(f, "%lx %zx jit_stub [generated]\n", (unsigned long)(m + 64), sizeof stub_code);
  fprintf(f, "%lx %zx jit_bare [generated]\n", (unsigned long)(m + 128), bare_size);
  fprintf(f, "%lx %zx JS:* :1:20\n", (unsigned long)(m + 192), sizeof stub_code);
  fprintf(f, "%lx %zx py::jit_cet:/app/t.py\n", (unsigned long)(m + 256), cet_size);
  fprintf(f, "%lx %zx py::jit_fp:/app/t.py\n", (unsigned long)(m + 384), bare_size);
  fprintf(f, "%lx %zx JS:user /app/u.js:1:1\n", (unsigned long)(m + 448), sizeof stub_code);
  fprintf(f, "%lx %zx JS:lib node:buffer:1:1\n", (unsigned long)(m + 512), sizeof stub_code);
  if (fclose(f) != 0) return perror(path), 1;
  if (write_jitdump(m + 320, sizeof stub_code) != 0) return 1;
  void *(*stub)(void *(*)(void)) = (void *(*)(void *(*)(void)))(void *)(m + 64);
  for (int i = 0; i < 10; i++) free(stub(alloc_from_jit));
  void *(*bare)(void *(*)(void)) = (void *(*)(void *(*)(void)))(void *)(m + 128);
  for (int i = 0; i < 10; i++) free(nofp_outer(bare, nofp_alloc));
  void *(*cet)(void *(*)(void)) = (void *(*)(void *(*)(void)))(void *)(m + 256);
  for (int i = 0; i < 10; i++) free(nofp_outer(cet, nofp_alloc));
  for (int i = 0; i < 10; i++) free(rec_outer((trampoline)(void *)(m + 384)));
  lib_stub = (void *(*)(void *(*)(void)))(void *)(m + 512);
  void *(*user)(void *(*)(void)) = (void *(*)(void *(*)(void)))(void *)(m + 448);
  for (int i = 0; i < 10; i++) free(user(inner_hop));
  /* remap_caller run from a second mapping of this program's file */
  void *(*again)(void *(*)(void)) = (void *(*)(void *(*)(void)))map_code_again((void *)remap_caller);
  if (!again) return perror("prog_jit: mapping itself again"), 1;
  for (int i = 0; i < 10; i++) free(again(alloc_from_jit));
  void *(*anon)(void *(*)(void)) = (void *(*)(void *(*)(void)))(void *)(m + 192);
  for (int i = 0; i < 10; i++) free(anon(alloc_from_jit));
  void *(*dumped)(void *(*)(void)) = (void *(*)(void *(*)(void)))(void *)(m + 320);
  for (int i = 0; i < 10; i++) free(dumped(alloc_from_jit));
  /* The runtime replaces that code by other code at the same addresses,
   * with a new line (V8 reusing its code space): the later samples through
   * it are named by the new line, the earlier ones keep the first name.
   * Paced so that the tracer writes the first ones before the new line:
   * an allocation over a millisecond after its queued ones writes them,
   * the tracer having looked for the map (every 10 ms) since it was
   * written. */
  struct timespec pause = {0, 15 * 1000 * 1000};
  nanosleep(&pause, NULL);
  free(malloc(1));
  if (mprotect(m, 4096, PROT_READ | PROT_WRITE) != 0) return perror("prog_jit: mprotect"), 1;
  memcpy(m + 192, stub_code, sizeof stub_code);
  if (mprotect(m, 4096, PROT_READ | PROT_EXEC) != 0) return perror("prog_jit: mprotect"), 1;
  if (!(f = fopen(path, "a"))) return perror(path), 1;
  fprintf(f, "%lx %zx JS:*replaced /app/r.js:7:3\n", (unsigned long)(m + 192), sizeof stub_code);
  if (fclose(f) != 0) return perror(path), 1;
  nanosleep(&pause, NULL);
  for (int i = 0; i < 10; i++) free(anon(alloc_from_jit));
  printf("%ld\n", (long)getpid()); /* the maps stay for the profiler: the test removes them */
  return 0;
}
