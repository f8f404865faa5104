/* Programs the interposer cannot load into (untraceable.h). Reads the ELF
 * header and program headers of the file, nothing more. */
#include "untraceable.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The file execvp would run for cmd, into out; -1 if none. */
static int resolve(const char *cmd, char *out, size_t cap) {
  if (strchr(cmd, '/')) {
    snprintf(out, cap, "%s", cmd);
    return 0;
  }
  const char *path = getenv("PATH");
  if (!path) path = "/bin:/usr/bin";
  for (const char *p = path;; p++) {
    const char *end = strchr(p, ':');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    /* an empty entry is the current directory */
    int n = snprintf(out, cap, "%.*s%s%s", (int)len, len ? p : ".", "/", cmd);
    struct stat st;
    if (n > 0 && (size_t)n < cap && stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
        access(out, X_OK) == 0)
      return 0;
    if (!end) return -1;
    p = end;
  }
}

/* Whether the 64-bit ELF file on fd asks for a dynamic loader (PT_INTERP);
 * -1 if its headers cannot be read. */
static int has_interp64(int fd, const Elf64_Ehdr *eh) {
  if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == 0 || eh->e_phnum > 4096)
    return -1;
  for (unsigned i = 0; i < eh->e_phnum; i++) {
    Elf64_Phdr ph;
    off_t at = (off_t)(eh->e_phoff + (uint64_t)i * sizeof ph);
    if (pread(fd, &ph, sizeof ph, at) != (ssize_t)sizeof ph) return -1;
    if (ph.p_type == PT_INTERP) return 1;
  }
  return 0;
}

int mt_cli_untraceable(const char *cmd, char *why, size_t cap) {
  char file[PATH_MAX];
  if (resolve(cmd, file, sizeof file) != 0) return 0;
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st;
  unsigned char id[EI_NIDENT];
  Elf64_Ehdr eh;
  int verdict = 0;
  if (fstat(fd, &st) != 0 || pread(fd, id, sizeof id, 0) != (ssize_t)sizeof id ||
      memcmp(id, ELFMAG, SELFMAG) != 0) {
    close(fd);
    return 0; /* a script, or not for us to judge */
  }
  if (id[EI_CLASS] != ELFCLASS64) {
    snprintf(why, cap,
             "%s is a 32-bit program: the interposer is a 64-bit library, which the "
             "dynamic loader will not load into it; its allocations will not be traced",
             file);
    verdict = 1;
  } else if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
             (eh.e_type == ET_EXEC || eh.e_type == ET_DYN) && has_interp64(fd, &eh) == 0) {
    snprintf(why, cap,
             "%s is statically linked: LD_PRELOAD cannot replace its malloc, so its own "
             "allocations will not be traced (dynamically linked programs it runs will be)",
             file);
    verdict = 1;
  } else if (((st.st_mode & S_ISUID) && st.st_uid != getuid()) ||
             ((st.st_mode & S_ISGID) && st.st_gid != getgid())) {
    snprintf(why, cap,
             "%s is set-user-ID or set-group-ID: the dynamic loader ignores LD_PRELOAD "
             "for it, so its allocations will not be traced",
             file);
    verdict = 1;
  }
  close(fd);
  return verdict;
}
