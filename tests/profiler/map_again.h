/* Code of this program mapped a second time, from its own file at the same
 * offset, where the loader does not know it (as V8 maps node's builtins):
 * for prog_jit and test_stackmap (remaps.h). */
#ifndef MT_TESTS_MAP_AGAIN_H
#define MT_TESTS_MAP_AGAIN_H

#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAP_AGAIN_BYTES 8192 /* from the page holding the code: two pages */

typedef struct map_again_search {
  uintptr_t at;
  uint64_t offset; /* at's offset in its object's file, once found */
} map_again_search;

static int map_again_find(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  map_again_search *s = data;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && s->at >= lo && s->at < lo + ph->p_filesz) {
      s->offset = ph->p_offset + (s->at - lo);
      return 1;
    }
  }
  return 0;
}

/* The address of the code at `code` (the program's own, within a page of
 * the end of its segment at most) in a new mapping of the program's file;
 * NULL if it is in no segment or cannot be mapped. The mapping starts at
 * the result rounded down to a page, MAP_AGAIN_BYTES long. */
static inline void *map_code_again(const void *code) {
  map_again_search s = {(uintptr_t)code, 0};
  if (!dl_iterate_phdr(map_again_find, &s)) return NULL;
  int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  uint64_t page = s.offset & ~(uint64_t)(sysconf(_SC_PAGESIZE) - 1);
  unsigned char *m = mmap(NULL, MAP_AGAIN_BYTES, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, (off_t)page);
  close(fd);
  return m == MAP_FAILED ? NULL : m + (s.offset - page);
}

#endif
