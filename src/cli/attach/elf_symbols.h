/* A function's or object's address in another process: its library's load
 * address there (from /proc/PID/maps) plus the symbol's value in the
 * library's file (its dynamic symbol table). For memtrace attach. */
#ifndef MT_CLI_ATTACH_ELF_SYMBOLS_H
#define MT_CLI_ATTACH_ELF_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The values of the defined dynamic symbols names[0..n) in the ELF file at
 * path, read once: 0 and values[0..n), or -1 (one not found, not a 64-bit
 * ELF file, unreadable). */
int mt_elf_dynsyms(const char *path, const char *const *names, size_t n, uint64_t *values);

/* Calls fn for each mapping of process pid that maps a file (its path
 * begins with '/'), in the map's order, until fn returns non-zero: that
 * value, 0 when none did, or -1 when the map cannot be read. perms is the
 * map's "r-xp" and the like; off the file offset. */
typedef int (*mt_maps_fn)(void *ctx, uint64_t lo, uint64_t hi, const char *perms, uint64_t off,
                          const char *path);
int mt_maps_each(pid_t pid, mt_maps_fn fn, void *ctx);
/* The same for every mapping: path is then also "" (anonymous memory) or
 * the kernel's name in brackets ("[stack]", "[heap]", "[vdso]"). */
int mt_maps_each_any(pid_t pid, mt_maps_fn fn, void *ctx);

/* The first mapping of process pid whose file's name is `base` (the last
 * component, as "libc.so.6") or whose path is `base`, at file offset 0:
 * its start (the object's load address, for a shared object) and the
 * path the process mapped, in path (n bytes). 0, or -1 (none). */
int mt_maps_object(pid_t pid, const char *base, uint64_t *start, char *path, size_t n);

#endif
