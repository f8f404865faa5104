/* Symbols of ELF files and where processes mapped them (elf_symbols.h). */
#include "elf_symbols.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The whole file, mapped read-only, or NULL. */
static unsigned char *map_file(const char *path, size_t *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  void *p = MAP_FAILED;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
    p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  *size = p == MAP_FAILED ? 0 : (size_t)st.st_size;
  return p == MAP_FAILED ? NULL : p;
}

static int within(size_t size, uint64_t off, uint64_t len) { return off <= size && len <= size - off; }

int mt_elf_dynsyms(const char *path, const char *const *names, size_t n, uint64_t *values) {
  size_t size, found = 0;
  unsigned char *f = map_file(path, &size);
  if (!f) return -1;
  for (size_t k = 0; k < n; k++) values[k] = UINT64_MAX;
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
  if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
      eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
      !within(size, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
    goto out;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(f + eh->e_shoff);
  for (size_t s = 0; s < eh->e_shnum && found < n; s++) {
    if (sh[s].sh_type != SHT_DYNSYM || sh[s].sh_link >= eh->e_shnum) continue;
    const Elf64_Shdr *str = &sh[sh[s].sh_link];
    if (!within(size, sh[s].sh_offset, sh[s].sh_size) || !within(size, str->sh_offset, str->sh_size))
      continue;
    const Elf64_Sym *sym = (const Elf64_Sym *)(f + sh[s].sh_offset);
    const char *strs = (const char *)(f + str->sh_offset);
    for (size_t j = 0; j < sh[s].sh_size / sizeof *sym && found < n; j++) {
      if (sym[j].st_shndx == SHN_UNDEF || sym[j].st_name >= str->sh_size) continue;
      const char *nm = strs + sym[j].st_name;
      if (strnlen(nm, str->sh_size - sym[j].st_name) == str->sh_size - sym[j].st_name) continue;
      for (size_t k = 0; k < n; k++)
        if (values[k] == UINT64_MAX && strcmp(nm, names[k]) == 0) {
          values[k] = sym[j].st_value; /* the first definition of a name */
          found++;
        }
    }
  }
out:
  munmap(f, size);
  return found == n ? 0 : -1;
}

int mt_maps_each_any(pid_t pid, mt_maps_fn fn, void *ctx) {
  char maps[64], line[4096 + 256];
  snprintf(maps, sizeof maps, "/proc/%d/maps", (int)pid);
  FILE *f = fopen(maps, "r");
  if (!f) return -1;
  int rc = 0;
  while (rc == 0 && fgets(line, sizeof line, f)) {
    unsigned long lo, hi, off;
    char perms[8];
    int name_at = 0;
    if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &lo, &hi, perms, &off, &name_at) < 4 ||
        !name_at)
      continue;
    char *path = line + name_at;
    path[strcspn(path, "\n")] = 0;
    rc = fn(ctx, lo, hi, perms, off, path);
  }
  fclose(f);
  return rc;
}

typedef struct file_maps {
  mt_maps_fn fn;
  void *ctx;
} file_maps;

static int file_only(void *ctx, uint64_t lo, uint64_t hi, const char *perms, uint64_t off,
                     const char *path) {
  const file_maps *m = ctx;
  return path[0] == '/' ? m->fn(m->ctx, lo, hi, perms, off, path) : 0;
}

int mt_maps_each(pid_t pid, mt_maps_fn fn, void *ctx) {
  file_maps m = {fn, ctx};
  return mt_maps_each_any(pid, file_only, &m);
}

typedef struct object_query {
  const char *base;
  uint64_t *start;
  char *path;
  size_t n;
} object_query;

static int object_match(void *ctx, uint64_t lo, uint64_t hi, const char *perms, uint64_t off,
                        const char *path) {
  (void)hi, (void)perms;
  object_query *q = ctx;
  const char *slash = strrchr(path, '/');
  if (off != 0 || (strcmp(path, q->base) != 0 && strcmp(slash + 1, q->base) != 0)) return 0;
  *q->start = lo;
  snprintf(q->path, q->n, "%s", path);
  return 1;
}

int mt_maps_object(pid_t pid, const char *base, uint64_t *start, char *path, size_t n) {
  object_query q = {base, start, path, n};
  return mt_maps_each(pid, object_match, &q) == 1 ? 0 : -1;
}
