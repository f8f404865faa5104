/* The compilation unit whose code holds an address, for modules whose
 * .debug_aranges does not say. Internal (mt__ prefix).
 *
 * libdwfl finds an address's unit through .debug_aranges only (elfutils
 * 0.188): clang and rustc do not emit that section by default, and a
 * program built by them got no source position and no inlined frames,
 * only its ELF symbols. And where the section lists some units only (a
 * Rust program: its own units are listed, not the standard library's
 * code built into it), libdwfl gives an address of an unlisted unit to
 * the listed one before it, which does not hold it: no line, no inlined
 * frames. This lists a module's units once, with the address ranges of
 * each unit DIE, when libdwfl first finds no unit holding an address of
 * it (code outside every unit, such as crt1.o's, asks once too). */
#ifndef MT_TRACER_UNITS_H
#define MT_TRACER_UNITS_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stddef.h>

#include "base/containers.h"

typedef struct mt__units_table mt__units_table;

/* The tables of one Dwfl's modules, built on use. Zero-initialize; clear
 * before dwfl_end and whenever the Dwfl is replaced (they hold its DIEs). */
typedef struct mt__units_held mt__units_held;

typedef struct mt__units {
  mt__units_table *v;
  size_t n, cap;
  mt__u64map held_index; /* a unit DIE's address -> its ranges in held */
  mt__units_held *held;
  size_t nheld, held_cap;
} mt__units;

/* The unit of mod whose ranges hold addr (the module's address): its DIE
 * into *cu and the module's DWARF bias into *bias, and cu; NULL if none. */
Dwarf_Die *mt__units_at(mt__units *u, Dwfl_Module *mod, Dwarf_Addr addr, Dwarf_Die *cu,
                        Dwarf_Addr *bias);

/* Whether unit cu's own ranges hold pc (an address in the DWARF's terms):
 * a binary search in the unit's ranges, read at its first question (a
 * unit of a C++ program built with -ffunction-sections has thousands). */
int mt__units_hold(mt__units *u, Dwarf_Die *cu, Dwarf_Addr pc);

void mt__units_clear(mt__units *u);

#endif
