/* Symbolization with elfutils' libdwfl/libdw: the DWARF scopes at an address
 * give the inlined subroutines around it (innermost first); each inlined
 * call's DW_AT_call_{file,line,column} is the position in its caller. */
#include "symbols.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "scopes.h"
#include "srclines.h"
#include "symtab.h"
#include "units.h"
#include "base/containers.h"
#include "tracer/dest.h"
#include "tracer/events.h"
#include "tracer/interposer.h"
#include "tracer/runtimes/cxxrt.h"
#include "tracer/runtimes/perfmap.h"
#include "tracer/runtimes/remaps.h"
#include "tracer/runtimes/rustdemangle.h"
#include "tracer/runtimes/rustrt.h"
#include "tracer/unwind/bigstack.h"

#define MAX_INLINE 64

typedef struct entry {
  mt_location *locs;
  size_t n;
} entry;

/* Code in no module (a JIT compiler's), as the perf map named it. */
typedef struct jit_named {
  uint64_t addr; /* the call's address: the return address less one */
  uint64_t name; /* a hash of the map's name for it (0: none) */
  uint32_t next; /* the next one in its page, + 1 (0: none) */
} jit_named;

struct mt__symbols {
  Dwfl *dwfl;
  mt__symtabs symtabs; /* sorted ELF symbols of dwfl's modules, built on use */
  mt__scopes scopes;   /* the functions of dwfl's units, indexed on use */
  mt__srclines lines;  /* the line tables of dwfl's units, read on use */
  mt__units units;     /* dwfl's units by their own ranges, where libdwfl's do not say */
  mt__perfmap perfmap; /* names of code in no module: a JIT compiler's map */
  mt__perfmap jitdump; /* or its jitdump, at jd_path (see jitdump_path) */
  mt__remaps remaps;   /* a loaded file's code mapped again (V8's builtins) */
  char jd_path[256];
  pid_t jd_pid;        /* the process jd_path was looked for in */
  uint64_t jd_looked;  /* when, in ns (0: never) */
  Dwfl_Callbacks callbacks;
  char *debuginfo_path;
  mt__u64map index; /* code -> entry */
  entry *entries;
  size_t nentries, cap;
  mt__strtab strings;
  /* modules (their load address) whose mangled names sent seek_runtime to
   * look for a C++ runtime */
  uintptr_t sought[16];
  size_t nsought;
  /* code in no module, as named: watched for the map naming it again */
  jit_named *jit;
  size_t njit, jitcap;
  mt__u64map jit_pages; /* a 4 KiB page -> its first jit[] (+ 1 as stored) */
};

/* The modules are listed from /proc/self/maps at the first lookup. A
 * library loaded since is reported alone when a code first falls in it:
 * the loader's own record of the object holding the address
 * (_dl_find_object: no lock, no system call) gives its range and path.
 * Listing them all again instead dropped every module's ELF and DWARF
 * state, read anew. (Reporting every module this way, without the first
 * listing, made LeakSanitizer crash at the exit of a traced test program
 * under ASan: the first listing stays.) Before glibc 2.35 the maps are
 * listed again. */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define MODULES_ONE_BY_ONE 1
#else
#define MODULES_ONE_BY_ONE 0
#endif

static int open_dwfl(mt__symbols *s) {
  s->dwfl = dwfl_begin(&s->callbacks);
  if (!s->dwfl) return -1;
  dwfl_report_begin(s->dwfl);
  if (dwfl_linux_proc_report(s->dwfl, getpid()) != 0 ||
      dwfl_report_end(s->dwfl, NULL, NULL) != 0) {
    dwfl_end(s->dwfl);
    s->dwfl = NULL;
    return -1;
  }
  return 0;
}

/* The module tables name into the Dwfl's ELF data: they go first. */
static void close_dwfl(mt__symbols *s) {
  mt__symtabs_clear(&s->symtabs);
  mt__scopes_clear(&s->scopes);
  mt__srclines_clear(&s->lines);
  mt__units_clear(&s->units);
  if (s->dwfl) dwfl_end(s->dwfl);
  s->dwfl = NULL;
}

/* dwfl's module at addr if its range holds addr. (With the modules listed
 * from the maps, dwfl_addrmodule answered some addresses past a module's
 * end with that module: in a CPython run importing extension modules,
 * codes came out as "libcrypto.so.3+0x6711b4", its segments ending at
 * 0x4875b0, and no listing again found the library they were in.) */
static Dwfl_Module *listed_module(mt__symbols *s, uint64_t addr) {
  Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, addr);
  Dwarf_Addr low = 0, high = 0;
  if (mod) dwfl_module_info(mod, NULL, &low, &high, NULL, NULL, NULL, NULL);
  return mod && addr >= low && addr < high ? mod : NULL;
}

#if MODULES_ONE_BY_ONE
/* Reports the loaded object holding addr, a library loaded since the
 * listing; NULL if none does (code the loader did not map: a JIT's). The
 * main program, named "" by the loader, was in the listing. The name is the
 * one the maps would show: the loader keeps the one it opened (/lib/...
 * for /usr/lib/...), so symbolic links are resolved; a name that is no
 * file stays as it is. */
static Dwfl_Module *report_module_at(mt__symbols *s, uint64_t addr) {
  struct dl_find_object fo;
  if (_dl_find_object((void *)(uintptr_t)addr, &fo) != 0 || !fo.dlfo_link_map ||
      !fo.dlfo_link_map->l_name || !fo.dlfo_link_map->l_name[0])
    return NULL;
  char path[PATH_MAX];
  const char *name = realpath(fo.dlfo_link_map->l_name, path) ? path : fo.dlfo_link_map->l_name;
  dwfl_report_begin_add(s->dwfl);
  Dwfl_Module *mod = dwfl_report_module(s->dwfl, name, (Dwarf_Addr)(uintptr_t)fo.dlfo_map_start,
                                        (Dwarf_Addr)(uintptr_t)fo.dlfo_map_end);
  if (dwfl_report_end(s->dwfl, NULL, NULL) != 0) return NULL;
  return mod ? listed_module(s, addr) : NULL;
}
#endif

/* Whether addr lies in an object the loader mapped. A second mapping of an
 * object's file (remaps.h) does not, though libdwfl's listing may take it
 * for the object's (its module then spans from one to the other, and the
 * code there was named by an offset past the object's end). Without
 * _dl_find_object (glibc before 2.35), only code in no module is looked
 * at again. */
static int in_loaded_object(uint64_t addr) {
#if MODULES_ONE_BY_ONE
  struct dl_find_object fo;
  return _dl_find_object((void *)(uintptr_t)addr, &fo) == 0;
#else
  (void)addr;
  return 0;
#endif
}

/* The module holding addr, reported now if need be; NULL if none. */
static Dwfl_Module *module_at(mt__symbols *s, uint64_t addr) {
  if (!s->dwfl) open_dwfl(s); /* without it, every code gets "??" */
  Dwfl_Module *mod = s->dwfl ? listed_module(s, addr) : NULL;
  if (mod || !s->dwfl) return mod;
#if MODULES_ONE_BY_ONE
  return report_module_at(s, addr);
#else
  /* A library loaded since the modules were listed: list them again (the
   * cache stays: codes already described keep their answer). */
  close_dwfl(s);
  open_dwfl(s);
  return s->dwfl ? listed_module(s, addr) : NULL;
#endif
}

/* The files libdwfl opens for the modules stay open as long as the Dwfl:
 * moved to high numbers, as the trace's own descriptor is (dest.h), so
 * that the program's opens get the numbers they get plain. (elfutils'
 * finders open a file and return its descriptor, no Elf made from it yet.) */
static int find_elf_parked(Dwfl_Module *mod, void **user, const char *name, Dwarf_Addr base,
                           char **file, Elf **elfp) {
  int fd = dwfl_linux_proc_find_elf(mod, user, name, base, file, elfp);
  return fd >= 0 && !*elfp ? mt__dest_park(fd) : fd;
}

static int find_debuginfo_parked(Dwfl_Module *mod, void **user, const char *name,
                                 Dwarf_Addr base, const char *file, const char *debuglink,
                                 GElf_Word crc, char **debuginfo_file) {
  int fd = dwfl_standard_find_debuginfo(mod, user, name, base, file, debuglink, crc,
                                        debuginfo_file);
  return fd >= 0 ? mt__dest_park(fd) : fd;
}

mt__symbols *mt__symbols_new(int separate_debuginfo) {
  mt__symbols *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->callbacks.find_elf = find_elf_parked;
  s->callbacks.find_debuginfo = separate_debuginfo ? find_debuginfo_parked
                                                    : mt__dwfl_embedded_only;
  s->callbacks.debuginfo_path = &s->debuginfo_path;
  /* the modules are listed at the first lookup: a process that never
   * samples does not read /proc/self/maps (half a million instructions) */
  return s;
}

static void drop_entries(mt__symbols *s) {
  for (size_t i = 0; i < s->nentries; i++) free(s->entries[i].locs);
  free(s->entries);
  s->entries = NULL;
  s->nentries = s->cap = 0;
  mt__u64map_free(&s->index);
}

void mt__symbols_free(mt__symbols *s) {
  if (!s) return;
  close_dwfl(s);
  drop_entries(s);
  mt__perfmap_clear(&s->perfmap);
  mt__perfmap_clear(&s->jitdump);
  free(s->jit);
  mt__u64map_free(&s->jit_pages);
  mt__strtab_free(&s->strings);
  free(s);
}

void mt__symbols_reset(mt__symbols *s) {
  close_dwfl(s); /* listed again at the next lookup */
  drop_entries(s);
  s->nsought = 0;
  s->njit = 0; /* noted again as they are described again */
  mt__remaps_clear(&s->remaps);
  mt__u64map_free(&s->jit_pages);
}

/* ---- code named by the perf map, watched ---- */

static uint64_t name_hash(const char *name) { /* never 0 for a name */
  if (!name) return 0;
  uint64_t h = mt__hash_bytes(name, strlen(name));
  return h ? h : 1;
}

/* Watched codes are listed by page: a line of the map names a few hundred
 * bytes of code, and a process may have tens of thousands of codes named. */
#define JIT_PAGE_BITS 12

/* jit[] index of the first code watched in addr's page, + 1 (0: none). */
static uint32_t jit_first(const mt__symbols *s, uint64_t page) {
  const uint32_t *v = mt__u64map_get(&s->jit_pages, page);
  return v ? *v - 1 : 0; /* the map stores value + 1 */
}

/* The process's jitdump (perfmap.h), looked for among its mappings while
 * none is found at most every JD_LOOK_NS (a code in no module that the
 * perf map does not name asks: in a process with neither, many do), and
 * again in a forked child. NULL: none (yet). */
#define JD_LOOK_NS 10000000
static const char *jitdump_path(mt__symbols *s) {
  pid_t pid = getpid();
  if (s->jd_pid != pid) {
    s->jd_pid = pid;
    s->jd_path[0] = '\0';
    s->jd_looked = 0;
  }
  if (s->jd_path[0]) return s->jd_path;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + 1;
  if (s->jd_looked && now - s->jd_looked < JD_LOOK_NS) return NULL;
  s->jd_looked = now;
  return mt__jitdump_path(s->jd_path, sizeof s->jd_path) ? s->jd_path : NULL;
}

int mt__symbols_jitdump_found(const mt__symbols *s) {
  return s->jd_path[0] && s->jd_pid == getpid();
}

/* The name the runtime gives code at addr, in no module: its perf map's,
 * else its jitdump's (*file: that file's path; map: room for the perf
 * map's). NULL if neither names it. */
static const char *jit_name(mt__symbols *s, uint64_t addr, char map[64], const char **file) {
  mt__perfmap_path(map, 64);
  const char *name = mt__perfmap_name(&s->perfmap, map, addr), *jd;
  *file = map;
  if (!name && (jd = jitdump_path(s)) && (name = mt__perfmap_name(&s->jitdump, jd, addr)))
    *file = jd;
  return name;
}

/* addr, in no module, was named `name` (NULL: the map does not name it):
 * watched from now on. Out of memory, it is not. */
static void note_jit(mt__symbols *s, uint64_t addr, const char *name) {
  uint64_t page = addr >> JIT_PAGE_BITS;
  uint32_t first = jit_first(s, page);
  for (uint32_t i = first; i; i = s->jit[i - 1].next)
    if (s->jit[i - 1].addr == addr) {
      s->jit[i - 1].name = name_hash(name);
      return;
    }
  if (s->njit >= UINT32_MAX - 2 || mt__reserve((void **)&s->jit, s->njit, &s->jitcap, sizeof *s->jit) ||
      mt__u64map_put(&s->jit_pages, page, (uint32_t)s->njit + 1))
    return;
  s->jit[s->njit++] = (jit_named){addr, name_hash(name), first};
  s->perfmap.watch = 1;
  s->jitdump.watch = 1;
}

int mt__symbols_jit_watched(const mt__symbols *s) { return s->njit != 0; }

/* Whether the maps now name watched code i otherwise: its hash updated.
 * A map that names it no more (gone since it was read) changes nothing. */
static int renamed(mt__symbols *s, size_t i) {
  char map[64];
  const char *file;
  uint64_t h = name_hash(jit_name(s, s->jit[i].addr, map, &file));
  if (!h || h == s->jit[i].name) return 0;
  s->jit[i].name = h;
  return 1;
}

void mt__symbols_jit_poll(mt__symbols *s, void (*on_renamed)(void *ctx, uint64_t pc),
                          void *ctx) {
  if (!s->njit) return;
  char map[64];
  mt__perfmap_path(map, sizeof map);
  mt__perfmap_refresh(&s->perfmap, map);
  if (mt__symbols_jitdump_found(s)) mt__perfmap_refresh(&s->jitdump, s->jd_path);
  /* taken out first: naming reads the maps, which may note more */
  mt__perfmap *maps[2] = {&s->perfmap, &s->jitdump};
  mt__perfmap_range *fresh[2];
  size_t nfresh[2];
  int all = 0;
  for (int m = 0; m < 2; m++) {
    fresh[m] = maps[m]->fresh;
    nfresh[m] = maps[m]->nfresh;
    all |= maps[m]->fresh_all;
    maps[m]->fresh = NULL;
    maps[m]->nfresh = maps[m]->fresh_cap = 0;
    maps[m]->fresh_all = 0;
  }
  for (int m = 0; m < 2; m++)
    for (size_t k = 0; k < nfresh[m] && !all; k++) {
      mt__perfmap_range r = fresh[m][k];
      uint64_t lo = r.start >> JIT_PAGE_BITS, hi = (r.end - 1) >> JIT_PAGE_BITS;
      if (hi - lo >= s->njit) { /* a range wider than the codes are many */
        all = 1;
        break;
      }
      for (uint64_t page = lo; page <= hi; page++)
        for (uint32_t i = jit_first(s, page); i; i = s->jit[i - 1].next)
          if (s->jit[i - 1].addr >= r.start && s->jit[i - 1].addr < r.end && renamed(s, i - 1))
            on_renamed(ctx, s->jit[i - 1].addr + 1);
    }
  if (all)
    for (size_t i = 0; i < s->njit; i++)
      if (renamed(s, i)) on_renamed(ctx, s->jit[i].addr + 1);
  free(fresh[0]);
  free(fresh[1]);
}

/* Readable names: Rust's here (rustdemangle.h), C++'s through the C++
 * runtime's demangler when the process has one (cxxrt.h). Once per code:
 * the buffer is the heap's. */
#define RUST_NAME_MAX 4096
static const char *demangled(mt__symbols *s, const char *name) {
  if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R')) return name;
  char *d = malloc(RUST_NAME_MAX);
  if (d && mt__rust_demangle(name, d, RUST_NAME_MAX) < 0) {
    free(d);
    d = NULL;
  }
  if (!d && name[1] == 'Z') d = mt__cxxrt_demangle(name);
  if (!d) return name;
  const char *r = mt__strtab_intern(&s->strings, d, strlen(d));
  free(d);
  return r ? r : name;
}

static const char *die_name(mt__symbols *s, Dwarf_Die *die) {
  Dwarf_Attribute attr;
  const char *n = NULL;
  if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
      dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
    n = demangled(s, dwarf_formstring(&attr));
  if (!n && dwarf_attr_integrate(die, DW_AT_name, &attr)) n = dwarf_formstring(&attr);
  return n ? n : "??";
}

/* str's first len bytes, interned; "??" when out of memory. */
static const char *intern_n(mt__symbols *s, const char *str, size_t len) {
  const char *r = mt__strtab_intern(&s->strings, str, len);
  return r ? r : "??";
}

static const char *intern(mt__symbols *s, const char *str) { return intern_n(s, str, strlen(str)); }

/* A name for code in no symbol (a stripped library's local functions, such
 * as the C library's __libc_start_call_main): "libc.so.6+0x271d7", the
 * module and the code's offset from the module's load address, the same in
 * every process. Without a symbol the function's start is unknown (the
 * unwind tables give the range of a row, not of a function), so each call
 * site in such a function gets its own name: better than one "??" that
 * merges unrelated functions into one frame. */
static const char *anonymous_name(Dwfl_Module *mod, const char *modname, uint64_t addr,
                                  char *buf, size_t cap) {
  Dwarf_Addr low = 0;
  dwfl_module_info(mod, NULL, &low, NULL, NULL, NULL, NULL, NULL);
  if (addr < low) return NULL;
  const char *base = modname ? strrchr(modname, '/') : NULL;
  base = base ? base + 1 : modname ? modname : "??";
  snprintf(buf, cap, "%.40s+0x%llx", base, (unsigned long long)(addr - low));
  return buf;
}

/* The unit holding cu's functions: cu itself, or for a skeleton unit
 * (split DWARF, -gsplit-dwarf) its split unit in the .dwo file when libdw
 * finds it (into *split). The line table stays the skeleton's; the
 * split unit's file names (an inlined call's DW_AT_call_file) are its own. */
static Dwarf_Die *functions_unit(Dwarf_Die *cu, Dwarf_Die *split) {
  uint8_t unit_type;
  if (cu && dwarf_cu_info(cu->cu, NULL, &unit_type, NULL, split, NULL, NULL, NULL) == 0 &&
      unit_type == DW_UT_skeleton && split->addr)
    return split;
  return cu;
}

/* Fills out[] innermost first; returns the count. */
static size_t describe_once(mt__symbols *s, uint64_t addr, mt_location *out) {
  Dwfl_Module *mod = module_at(s, addr);
  uint64_t same;
  Dwfl_Module *owner;
  if (!in_loaded_object(addr) && mt__remap_of(&s->remaps, s->dwfl, addr, &same) &&
      (owner = module_at(s, same)))
    mod = owner, addr = same; /* the object's own copy of this code, named as it is */
  if (!mod) { /* generated code: named by the runtime's perf map, if any */
    out[0] = (mt_location){"??", "??", 0, 0, 0};
    char map[64];
    const char *mapfile;
    const char *jit = jit_name(s, addr, map, &mapfile);
    note_jit(s, addr, jit);
    if (jit) { /* the file the name says, else the map's */
      mt__perfmap_where w;
      mt__perfmap_where_of(jit, &w);
      /* V8's function named without its tier mark (a function's code by
       * each of V8's compilers is one function to the tools: its
       * allocations are not split between "JS:^f" and "JS:*f"), and what
       * it has no name for as its stack traces say: a function
       * "(anonymous)", a script "<anonymous>" */
      char fn[MT__PERFMAP_MAX_NAME + sizeof "(anonymous)"];
      size_t k = 0;
      for (size_t i = 0; i < w.fn_len; i++)
        if (i != w.mark || !w.mark) fn[k++] = jit[i];
      if (w.anonymous) {
        memcpy(fn + k, "(anonymous)", sizeof "(anonymous)" - 1);
        k += sizeof "(anonymous)" - 1;
      }
      const char *file = !w.file ? intern(s, mapfile)
                         : w.file_len ? intern_n(s, w.file, w.file_len)
                                      : intern(s, "<anonymous>");
      out[0] = (mt_location){file, intern_n(s, fn, k), w.line, w.col, w.col};
    }
    return 1;
  }
  const char *modname = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
  mt__cxxrt_learn(mod, modname); /* before naming: its demangler, its frames hidden */
  const char *file = NULL;
  int line = 0, col = 0;
  Dwarf_Addr bias = 0;
  /* libdwfl's unit by .debug_aranges, else by the units' own ranges: the
   * section may be missing (clang) or list some units only (Rust) */
  Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &bias), unit;
  if (!cu || !mt__units_hold(&s->units, cu, addr - bias)) {
    Dwarf_Addr unit_bias;
    Dwarf_Die *found = mt__units_at(&s->units, mod, addr, &unit, &unit_bias);
    if (found) cu = found, bias = unit_bias;
  }
  char path[1024]; /* longer names: libdw's */
  if (cu &&
      mt__srclines_at(&s->lines, cu, addr - bias, path, sizeof path, &file, &line, &col) < 0) {
    /* a table our reader does not take: libdw's search, in the same unit */
    Dwarf_Line *l = dwarf_getsrc_die(cu, addr - bias);
    if (l) {
      file = dwarf_linesrc(l, NULL, NULL);
      dwarf_lineno(l, &line);
      dwarf_linecol(l, &col);
    }
  }
  Dwarf_Die split, *fcu = functions_unit(cu, &split);
  /* on the heap: MAX_INLINE DIEs would take a large frame */
  Dwarf_Die *scopes = fcu ? malloc(MAX_INLINE * sizeof *scopes) : NULL;
  int nscopes = scopes ? mt__scopes_at(&s->scopes, fcu, addr - bias, scopes, MAX_INLINE) : 0;
  if (nscopes < 0) nscopes = mt__scopes_by_libdw(fcu, addr - bias, scopes, MAX_INLINE);
  size_t n = 0;
  Dwarf_Files *files = NULL;
  size_t nfiles = 0;
  for (int i = 0; i < nscopes && n < MAX_INLINE; i++) { /* innermost first */
    int tag = dwarf_tag(&scopes[i]);
    out[n++] = (mt_location){intern(s, file ? file : (modname ? modname : "??")),
                             intern(s, die_name(s, &scopes[i])), (uint32_t)(line > 0 ? line : 0),
                             (uint32_t)(col > 0 ? col : 0), (uint32_t)(col > 0 ? col : 0)};
    if (tag == DW_TAG_subprogram) break;
    /* continue in the code it was inlined into, at the call's position */
    Dwarf_Attribute attr;
    Dwarf_Word w;
    file = NULL;
    line = col = 0;
    if (dwarf_attr(&scopes[i], DW_AT_call_file, &attr) && dwarf_formudata(&attr, &w) == 0 &&
        mt__srclines_file(&s->lines, fcu, w, path, sizeof path, &file) < 0) {
      if (!files) dwarf_getsrcfiles(fcu, &files, &nfiles); /* the whole table, by libdw */
      if (files && w < nfiles) file = dwarf_filesrc(files, w, NULL, NULL);
    }
    if (dwarf_attr(&scopes[i], DW_AT_call_line, &attr) && dwarf_formudata(&attr, &w) == 0)
      line = (int)w;
    if (dwarf_attr(&scopes[i], DW_AT_call_column, &attr) && dwarf_formudata(&attr, &w) == 0)
      col = (int)w;
  }
  free(scopes);
  if (n == 0) {
    /* no DWARF: the ELF symbol, in the module's file (what
     * dwfl_module_addrname says, by binary search in a table built once
     * per module, not by reading all the symbols at each address) */
    const char *sym = mt__symtabs_name(&s->symtabs, mod, addr);
    char anon[64];
    if (!sym) sym = anonymous_name(mod, modname, addr, anon, sizeof anon);
    out[0] = (mt_location){intern(s, file ? file : (modname ? modname : "??")),
                           sym ? intern(s, demangled(s, sym)) : "??",
                           (uint32_t)(line > 0 ? line : 0), (uint32_t)(col > 0 ? col : 0),
                           (uint32_t)(col > 0 ? col : 0)};
    n = 1;
  }
  return mt__rustrt_trim(mod, addr, out, n);
}

/* A mangled name out of describe_once, no demangler known yet: the C++
 * runtime may be loaded with no code of it ever named (cxxrt.h). Looks for
 * it once per module with such names (a C program's module, or a library
 * linking the runtime statically, would otherwise send every code there to
 * read the maps); 1 if a demangler is known now. The listing may be redone
 * meanwhile (module_at): the caller describes again from the address. */
static int seek_runtime(mt__symbols *s, uint64_t addr) {
  if (!mt__dlclose->hooked || mt__cxxrt_has_demangler()) return 0;
  Dwfl_Module *mod = module_at(s, addr);
  Dwarf_Addr low = 0;
  if (!mod) return 0;
  dwfl_module_info(mod, NULL, &low, NULL, NULL, NULL, NULL, NULL);
  for (size_t i = 0; i < s->nsought; i++)
    if (s->sought[i] == low) return 0;
  if (s->nsought == sizeof s->sought / sizeof *s->sought) return 0;
  s->sought[s->nsought++] = low;
  uintptr_t at = mt__cxxrt_unlearned();
  Dwfl_Module *rt = at ? module_at(s, at) : NULL;
  if (!rt) return 0;
  mt__cxxrt_learn(rt, dwfl_module_info(rt, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
  return mt__cxxrt_has_demangler();
}

static size_t describe(mt__symbols *s, uint64_t addr, mt_location *out) {
  size_t n = describe_once(s, addr, out);
  int mangled = 0;
  for (size_t i = 0; i < n; i++) mangled |= out[i].defname[0] == '_' && out[i].defname[1] == 'Z';
  if (mangled && seek_runtime(s, addr)) n = describe_once(s, addr, out);
  return n;
}

struct describe_call {
  mt__symbols *s;
  uint64_t addr;
  mt_location *locs; /* malloc'd, outermost first; NULL if that failed */
  size_t n;
};

/* On the big stack: libdw's calls, and the frames' buffer (2 KiB). */
static void describe_on(void *arg) {
  struct describe_call *c = arg;
  mt_location tmp[MAX_INLINE];
  size_t k = describe(c->s, c->addr, tmp);
  c->locs = malloc(k * sizeof *c->locs);
  c->n = k;
  if (c->locs)
    for (size_t i = 0; i < k; i++) c->locs[i] = tmp[k - 1 - i]; /* outermost first */
}

/* The frame the interposer puts innermost in an anonymous mapping's
 * stack (interposer.h): named here, never looked up. */
static const mt_location mapping_frame = {MT_MAPPING_FILENAME, MT_MAPPING_FUNCTION, 0, 0, 0};

int mt__symbols_lookup(mt__symbols *s, uint64_t code, uint64_t pc, const mt_location **locs,
                       size_t *n) {
  if (__builtin_expect((pc & MT__PC_MASK) == MT__MAPPING_PC, 0)) {
    *locs = &mapping_frame;
    *n = 1;
    return 0;
  }
  uint32_t *ix = mt__u64map_get(&s->index, code);
  if (ix) {
    *locs = s->entries[*ix - 1].locs;
    *n = s->entries[*ix - 1].n;
    return 0;
  }
  /* a return address points after the call: look at the call itself; on
   * the tracer's own stack, libdw needing more than a thread may have */
  struct describe_call c = {s, pc ? pc - 1 : 0, NULL, 0};
  mt__on_big_stack(describe_on, &c);
  size_t k = c.n;
  mt_location *l = c.locs;
  if (!l) return -1;
  if (s->nentries == s->cap) {
    size_t nc = s->cap ? s->cap * 2 : 256;
    entry *e = realloc(s->entries, nc * sizeof *e);
    if (!e) {
      free(l);
      return -1;
    }
    s->entries = e;
    s->cap = nc;
  }
  s->entries[s->nentries] = (entry){l, k};
  if (mt__u64map_put(&s->index, code, (uint32_t)s->nentries)) {
    free(l);
    return -1;
  }
  s->nentries++;
  *locs = l;
  *n = k;
  return 0;
}
