/* A function's or object's address in another process: its library's load
 * address there (from /proc/PID/maps) plus the symbol's value in the
 * library's file (its dynamic symbol table). For memtrace attach. */
#ifndef MT_CLI_ATTACH_ELF_SYMBOLS_H
#define MT_CLI_ATTACH_ELF_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The value of the defined dynamic symbol `name` in the ELF file at path:
 * 0 and *value, or -1 (not found, not a 64-bit ELF file, unreadable). */
int mt_elf_dynsym(const char *path, const char *name, uint64_t *value);

/* The first mapping of process pid whose file's name is `base` (the last
 * component, as "libc.so.6") or whose path is `base`, at file offset 0:
 * its start (the object's load address, for a shared object) and the
 * path the process mapped, in path (n bytes). 0, or -1 (none). */
int mt_maps_object(pid_t pid, const char *base, uint64_t *start, char *path, size_t n);

#endif
