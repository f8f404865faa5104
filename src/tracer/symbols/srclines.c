/* Unit line tables for naming (srclines.h): each unit's read once by
 * dwline.c, from the sections of the DWARF data libdw opened. */
#include "srclines.h"

#include <dwarf.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "dwline.h"

struct mt__srclines_dw {
  Dwarf *dw;
  mt__line_sections sec;
};

/* The DWARF data's line sections, as libdw holds them: a compressed
 * section is decompressed in place when libdw opens the data, so one
 * still flagged compressed is left alone (and its tables to libdw). */
static void find_sections(Dwarf *dw, mt__line_sections *sec) {
  *sec = (mt__line_sections){0};
  Elf *elf = dwarf_getelf(dw);
  size_t shstrndx;
  if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0) return;
  for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS || (shdr.sh_flags & SHF_COMPRESSED))
      continue;
    const char *name = elf_strptr(elf, shstrndx, shdr.sh_name);
    const unsigned char **p;
    size_t *size;
    if (!name) continue;
    if (strcmp(name, ".debug_line") == 0) p = &sec->line, size = &sec->line_size;
    else if (strcmp(name, ".debug_line_str") == 0) p = &sec->line_str, size = &sec->line_str_size;
    else if (strcmp(name, ".debug_str") == 0) p = &sec->str, size = &sec->str_size;
    else continue;
    Elf_Data *d = elf_getdata(scn, NULL);
    if (d && d->d_buf) *p = d->d_buf, *size = d->d_size;
  }
}

static const mt__line_sections *sections_of(mt__srclines *s, Dwarf *dw) {
  for (size_t i = 0; i < s->ndws; i++)
    if (s->dws[i].dw == dw) return &s->dws[i].sec;
  if (mt__reserve((void **)&s->dws, s->ndws, &s->dws_cap, sizeof *s->dws)) return NULL;
  mt__srclines_dw *d = &s->dws[s->ndws++];
  d->dw = dw;
  find_sections(dw, &d->sec);
  return &d->sec;
}

/* cu's table, or NULL if it is libdw's to read. */
static mt__line_table *read_table(mt__srclines *s, Dwarf_Die *cu) {
  Dwarf_Half version;
  uint8_t unit_type, addr_size, offset_size;
  int tag = dwarf_tag(cu);
  /* A skeleton unit (split DWARF) has the line table, in this file; its
   * split unit (the .dwo's) and partial units: libdw finds their lines
   * elsewhere. */
  if ((tag != DW_TAG_compile_unit && tag != DW_TAG_skeleton_unit) ||
      dwarf_cu_info(cu->cu, &version, &unit_type, NULL, NULL, NULL, &addr_size, &offset_size) !=
          0 ||
      (unit_type != DW_UT_compile && unit_type != DW_UT_skeleton))
    return NULL;
  Dwarf_Attribute a;
  Dwarf_Word offset;
  if (!dwarf_attr(cu, DW_AT_stmt_list, &a) || dwarf_formudata(&a, &offset) != 0) return NULL;
  const char *comp_dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a));
  Dwarf *dw = dwarf_cu_getdwarf(cu->cu);
  const mt__line_sections *sec = dw ? sections_of(s, dw) : NULL;
  return sec ? mt__line_table_read(sec, offset, comp_dir, addr_size) : NULL;
}

/* cu's table, read at its first use; NULL if libdw is to read it. */
static mt__line_table *table_of(mt__srclines *s, Dwarf_Die *cu) {
  uint64_t key = (uint64_t)(uintptr_t)cu->addr;
  uint32_t *ix = mt__u64map_get(&s->index, key);
  if (ix) return s->v[*ix - 1]; /* stored + 1 */
  if (mt__reserve((void **)&s->v, s->n, &s->cap, sizeof *s->v)) return NULL;
  mt__line_table *t = read_table(s, cu);
  if (mt__u64map_put(&s->index, key, (uint32_t)s->n)) {
    mt__line_table_free(t);
    return NULL;
  }
  s->v[s->n++] = t;
  return t;
}

/* File idx of t into buf: 0 and *name (NULL: no such file), or -1 for a
 * name longer than buf (libdw's to give). */
static int file_name(const mt__line_table *t, uint64_t idx, char *buf, size_t cap,
                     const char **name) {
  int named = idx <= UINT32_MAX ? mt__line_table_file(t, (uint32_t)idx, buf, cap) : 0;
  if (named < 0) return -1;
  *name = named ? buf : NULL;
  return 0;
}

int mt__srclines_at(mt__srclines *s, Dwarf_Die *cu, Dwarf_Addr pc, char *buf, size_t cap,
                    const char **file, int *line, int *col) {
  mt__line_table *t = table_of(s, cu);
  if (!t) return -1;
  mt__line_row row;
  if (!mt__line_table_find(t, pc, &row)) return 0;
  if (file_name(t, row.file, buf, cap, file) != 0) return -1;
  *line = row.line;
  *col = row.column;
  return 1;
}

int mt__srclines_file(mt__srclines *s, Dwarf_Die *cu, Dwarf_Word idx, char *buf, size_t cap,
                      const char **name) {
  mt__line_table *t = table_of(s, cu);
  return t ? file_name(t, idx, buf, cap, name) : -1;
}

void mt__srclines_clear(mt__srclines *s) {
  for (size_t i = 0; i < s->n; i++) mt__line_table_free(s->v[i]);
  free(s->v);
  free(s->dws);
  mt__u64map_free(&s->index);
  *s = (mt__srclines){0};
}
