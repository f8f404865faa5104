/* A module's ELF symbols sorted by address, to name code without DWARF in
 * O(log n) per address. elfutils' dwfl_module_addrname reads the whole
 * symbol table at every call (~700k instructions per address in the C
 * library); this table is built once per module (O(n log n)) and gives the
 * same answers. Internal (mt__ prefix). */
#ifndef MT_TRACER_SYMTAB_H
#define MT_TRACER_SYMTAB_H

#include <elfutils/libdwfl.h>
#include <stddef.h>
#include <stdint.h>

#include "base/containers.h"

typedef struct mt__symtab mt__symtab;

/* The symbols of `mod`, read once. NULL when out of memory. The names point
 * into the module's ELF data: the table must go before the Dwfl that owns
 * the module (dwfl_end). */
mt__symtab *mt__symtab_build(Dwfl_Module *mod);
void mt__symtab_free(mt__symtab *t);
/* The symbol for `addr` (an address in the module, bias included), the
 * same as dwfl_module_addrname(mod, addr); NULL when none. */
const char *mt__symtab_name(const mt__symtab *t, uint64_t addr);
/* Entries kept (symbols that can name an address). */
size_t mt__symtab_count(const mt__symtab *t);

/* The tables of one Dwfl's modules, each built at its module's first
 * lookup. elfutils reads every symbol at each lookup; a table costs about
 * two such lookups to build, and nearly every traced process names at least
 * two codes in the C library (its start-up frames). Zero-initialize; clear
 * before dwfl_end and whenever the Dwfl is replaced. */
typedef struct mt__symtabs {
  mt__u64map index;    /* Dwfl_Module pointer -> position in tables */
  mt__symtab **tables; /* NULL until built (or when it could not be) */
  size_t n, cap;
} mt__symtabs;

/* The same as dwfl_module_addrname(mod, addr): by mod's table once built
 * (by elfutils if it cannot be). */
const char *mt__symtabs_name(mt__symtabs *s, Dwfl_Module *mod, uint64_t addr);
void mt__symtabs_clear(mt__symtabs *s);

/* A find_debuginfo that finds nothing: libdw then uses the DWARF inside the
 * module, if any, and its ELF symbol table (the tracer's default: no
 * separate debug-info files). */
int mt__dwfl_embedded_only(Dwfl_Module *mod, void **user, const char *name, Dwarf_Addr base,
                           const char *file, const char *debuglink, GElf_Word crc,
                           char **debuginfo_file);

#endif
