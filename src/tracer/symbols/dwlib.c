/* libdw, loaded when tracing starts rather than with the profiler.
 *
 * Symbolization is the only user of elfutils' libdw, and only a process
 * that traces symbolizes. Linked, libdw (with libelf, libz, libbz2) was
 * loaded by every process that loaded the profiler: a program linking
 * libmemtrace that never traces, a process preloading the interposer
 * without MEMTRACE, each paying for its loading and page faults
 * (docs/benchmarks.md, "Loading libraries").
 *
 * So the functions the tracer calls are defined here, under libdw's names
 * and hidden: each calls libdw's own, looked up with dlsym once libdw.so.1
 * is opened. mt_trace_start opens it (mt__dw_load) before it takes the
 * tracer's lock: dlopen takes the loader's lock, which a sample taken in a
 * library's constructor holds while it waits for the tracer's. Any other
 * first use opens it then. Without libdw at run time every function here
 * fails as libdw's would (NULL, -1), and codes are named "??". */
#include <dlfcn.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols.h"

#define MT__DW_FUNCTIONS(X)                                                                  \
  X(dwarf_attr) X(dwarf_attr_integrate) X(dwarf_child) X(dwarf_cu_getdwarf) X(dwarf_cu_info) \
  X(dwarf_filesrc) X(dwarf_formstring) X(dwarf_formudata) X(dwarf_get_units) X(dwarf_getelf) \
  X(dwarf_getscopes) X(dwarf_getscopes_die) X(dwarf_getsrc_die) X(dwarf_getsrcfiles)         \
  X(dwarf_linecol) X(dwarf_lineno) X(dwarf_linesrc) X(dwarf_ranges) X(dwarf_siblingof)       \
  X(dwarf_tag) X(dwfl_addrmodule) X(dwfl_begin) X(dwfl_end) X(dwfl_linux_proc_find_elf)      \
  X(dwfl_linux_proc_report) X(dwfl_module_addrdie) X(dwfl_module_address_section)            \
  X(dwfl_module_addrinfo) X(dwfl_module_addrname) X(dwfl_module_getdwarf)                    \
  X(dwfl_module_getsym_info) X(dwfl_module_getsymtab) X(dwfl_module_getsymtab_first_global)  \
  X(dwfl_module_info) X(dwfl_report_begin) X(dwfl_report_begin_add) X(dwfl_report_end)      \
  X(dwfl_report_module) X(dwfl_standard_find_debuginfo)                                      \
  X(elf_getdata) X(elf_getshdrstrndx) X(elf_nextscn) X(elf_strptr) X(gelf_getshdr)       \
  X(dwfl_getmodules) X(dwfl_module_getelf) X(elf_getphdrnum) X(gelf_getphdr)

#define AS_INDEX(name) I_##name,
enum { MT__DW_FUNCTIONS(AS_INDEX) NFUNCTIONS };
#define AS_NAME(name) #name,
static const char *const names[NFUNCTIONS] = {MT__DW_FUNCTIONS(AS_NAME)};
static void *fn[NFUNCTIONS];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* libdw and libelf keep their error state in thread-local variables. The
 * first access to a dlopened object's in the process decides where they
 * live, under the loader's TLS lock (glibc's tls_get_addr_tail), and the
 * naming of codes runs under the tracer's lock, which a thread holding
 * the loader's locks (in dlopen, in pthread_create) may be waiting for:
 * the first naming would wait for it, and it for the naming. So they are
 * touched here, when the library is opened, outside the tracer's lock;
 * later threads' first accesses take no lock. */
static void touch_thread_locals(void *h) {
#ifdef __SANITIZE_ADDRESS__
  /* Not in the sanitizers' build of libmemtrace (the interposer is built
   * without them): LeakSanitizer's exit check then crashes (GCC 12's, on
   * the thread-locals of a dlopened library so placed). */
  (void)h;
  return;
#endif
  static const char *const errnos[] = {"dwarf_errno", "dwfl_errno", "elf_errno"};
  for (size_t i = 0; i < sizeof errnos / sizeof *errnos; i++) {
    int (*get)(void) = (int (*)(void))(uintptr_t)dlsym(h, errnos[i]);
    if (get) get();
  }
}

static void load(void) {
  void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  for (int i = 0; i < NFUNCTIONS; i++) fn[i] = dlsym(h, names[i]);
  touch_thread_locals(h);
}

void mt__dw_load(void) { pthread_once(&once, load); }

/* libdw's function `name`, or NULL */
#define REAL(name) (mt__dw_load(), (__typeof__(&name))fn[I_##name])

/* A function returning `type`, `fail` without libdw. */
#define FORWARD(type, fail, name, params, args)                                                \
  type name params {                                                                           \
    __typeof__(&name) f = REAL(name);                                                          \
    return f ? f args : fail;                                                                  \
  }
#define FORWARD_VOID(name, params, args)                                                       \
  void name params {                                                                           \
    __typeof__(&name) f = REAL(name);                                                          \
    if (f) f args;                                                                             \
  }

FORWARD(Dwarf_Attribute *, NULL, dwarf_attr,
        (Dwarf_Die * die, unsigned int search_name, Dwarf_Attribute *result),
        (die, search_name, result))
FORWARD(Dwarf_Attribute *, NULL, dwarf_attr_integrate,
        (Dwarf_Die * die, unsigned int search_name, Dwarf_Attribute *result),
        (die, search_name, result))
FORWARD(int, -1, dwarf_child, (Dwarf_Die * die, Dwarf_Die *result), (die, result))
FORWARD(Dwarf *, NULL, dwarf_cu_getdwarf, (Dwarf_CU * cu), (cu))
FORWARD(int, -1, dwarf_cu_info,
        (Dwarf_CU * cu, Dwarf_Half *version, uint8_t *unit_type, Dwarf_Die *cudie,
         Dwarf_Die *subdie, uint64_t *unit_id, uint8_t *address_size, uint8_t *offset_size),
        (cu, version, unit_type, cudie, subdie, unit_id, address_size, offset_size))
FORWARD(int, -1, dwarf_get_units,
        (Dwarf * dwarf, Dwarf_CU *cu, Dwarf_CU **next_cu, Dwarf_Half *version, uint8_t *unit_type,
         Dwarf_Die *cudie, Dwarf_Die *subdie),
        (dwarf, cu, next_cu, version, unit_type, cudie, subdie))
FORWARD(Elf *, NULL, dwarf_getelf, (Dwarf * dwarf), (dwarf))
FORWARD(Dwarf *, NULL, dwfl_module_getdwarf, (Dwfl_Module * mod, Dwarf_Addr *bias), (mod, bias))
/* libelf's, found through libdw's handle: libdw.so.1 depends on it */
FORWARD(Elf_Data *, NULL, elf_getdata, (Elf_Scn * scn, Elf_Data *data), (scn, data))
FORWARD(int, -1, elf_getshdrstrndx, (Elf * elf, size_t *dst), (elf, dst))
FORWARD(Elf_Scn *, NULL, elf_nextscn, (Elf * elf, Elf_Scn *scn), (elf, scn))
FORWARD(char *, NULL, elf_strptr, (Elf * elf, size_t index, size_t offset), (elf, index, offset))
FORWARD(GElf_Shdr *, NULL, gelf_getshdr, (Elf_Scn * scn, GElf_Shdr *dst), (scn, dst))
FORWARD(int, -1, elf_getphdrnum, (Elf * elf, size_t *dst), (elf, dst))
FORWARD(GElf_Phdr *, NULL, gelf_getphdr, (Elf * elf, int ndx, GElf_Phdr *dst), (elf, ndx, dst))
FORWARD(ptrdiff_t, -1, dwfl_getmodules,
        (Dwfl * dwfl, int (*callback)(Dwfl_Module *, void **, const char *, Dwarf_Addr, void *),
         void *arg, ptrdiff_t offset),
        (dwfl, callback, arg, offset))
FORWARD(Elf *, NULL, dwfl_module_getelf, (Dwfl_Module * mod, GElf_Addr *bias), (mod, bias))
FORWARD(ptrdiff_t, -1, dwarf_ranges,
        (Dwarf_Die * die, ptrdiff_t offset, Dwarf_Addr *basep, Dwarf_Addr *startp,
         Dwarf_Addr *endp),
        (die, offset, basep, startp, endp))
FORWARD(int, -1, dwarf_siblingof, (Dwarf_Die * die, Dwarf_Die *result), (die, result))
FORWARD(const char *, NULL, dwarf_filesrc,
        (Dwarf_Files * file, size_t idx, Dwarf_Word *mtime, Dwarf_Word *length),
        (file, idx, mtime, length))
FORWARD(const char *, NULL, dwarf_formstring, (Dwarf_Attribute * attrp), (attrp))
FORWARD(int, -1, dwarf_formudata, (Dwarf_Attribute * attr, Dwarf_Word *return_uval),
        (attr, return_uval))
FORWARD(int, -1, dwarf_getscopes, (Dwarf_Die * cudie, Dwarf_Addr pc, Dwarf_Die **scopes),
        (cudie, pc, scopes))
FORWARD(int, -1, dwarf_getscopes_die, (Dwarf_Die * die, Dwarf_Die **scopes), (die, scopes))
FORWARD(Dwarf_Line *, NULL, dwarf_getsrc_die, (Dwarf_Die * cudie, Dwarf_Addr addr), (cudie, addr))
FORWARD(int, -1, dwarf_linecol, (Dwarf_Line * line, int *colp), (line, colp))
FORWARD(int, -1, dwarf_lineno, (Dwarf_Line * line, int *linep), (line, linep))
FORWARD(const char *, NULL, dwarf_linesrc,
        (Dwarf_Line * line, Dwarf_Word *mtime, Dwarf_Word *length), (line, mtime, length))
FORWARD(int, -1, dwarf_getsrcfiles, (Dwarf_Die * cudie, Dwarf_Files **files, size_t *nfiles),
        (cudie, files, nfiles))
FORWARD(int, -1, dwarf_tag, (Dwarf_Die * die), (die))
FORWARD(Dwfl_Module *, NULL, dwfl_addrmodule, (Dwfl * dwfl, Dwarf_Addr address),
        (dwfl, address))
FORWARD(Dwfl *, NULL, dwfl_begin, (const Dwfl_Callbacks *callbacks), (callbacks))
FORWARD_VOID(dwfl_end, (Dwfl * dwfl), (dwfl))
FORWARD(int, -1, dwfl_linux_proc_find_elf,
        (Dwfl_Module * mod, void **userdata, const char *module_name, Dwarf_Addr base,
         char **file_name, Elf **elfp),
        (mod, userdata, module_name, base, file_name, elfp))
FORWARD(int, -1, dwfl_linux_proc_report, (Dwfl * dwfl, pid_t pid), (dwfl, pid))
FORWARD(Dwarf_Die *, NULL, dwfl_module_addrdie,
        (Dwfl_Module * mod, Dwarf_Addr addr, Dwarf_Addr *bias), (mod, addr, bias))
FORWARD(Elf_Scn *, NULL, dwfl_module_address_section,
        (Dwfl_Module * mod, Dwarf_Addr *address, Dwarf_Addr *bias), (mod, address, bias))
FORWARD(const char *, NULL, dwfl_module_addrinfo,
        (Dwfl_Module * mod, GElf_Addr address, GElf_Off *offset, GElf_Sym *sym,
         GElf_Word *shndxp, Elf **elfp, Dwarf_Addr *bias),
        (mod, address, offset, sym, shndxp, elfp, bias))
FORWARD(const char *, NULL, dwfl_module_addrname, (Dwfl_Module * mod, GElf_Addr address),
        (mod, address))
FORWARD(const char *, NULL, dwfl_module_getsym_info,
        (Dwfl_Module * mod, int ndx, GElf_Sym *sym, GElf_Addr *addr, GElf_Word *shndxp,
         Elf **elfp, Dwarf_Addr *bias),
        (mod, ndx, sym, addr, shndxp, elfp, bias))
FORWARD(int, -1, dwfl_module_getsymtab, (Dwfl_Module * mod), (mod))
FORWARD(int, -1, dwfl_module_getsymtab_first_global, (Dwfl_Module * mod), (mod))
FORWARD(const char *, NULL, dwfl_module_info,
        (Dwfl_Module * mod, void ***userdata, Dwarf_Addr *start, Dwarf_Addr *end,
         Dwarf_Addr *dwbias, Dwarf_Addr *symbias, const char **mainfile,
         const char **debugfile),
        (mod, userdata, start, end, dwbias, symbias, mainfile, debugfile))
FORWARD_VOID(dwfl_report_begin, (Dwfl * dwfl), (dwfl))
FORWARD_VOID(dwfl_report_begin_add, (Dwfl * dwfl), (dwfl))
FORWARD(Dwfl_Module *, NULL, dwfl_report_module,
        (Dwfl * dwfl, const char *name, Dwarf_Addr start, Dwarf_Addr end),
        (dwfl, name, start, end))
FORWARD(int, -1, dwfl_report_end,
        (Dwfl * dwfl, int (*removed)(Dwfl_Module *, void *, const char *, Dwarf_Addr, void *arg),
         void *arg),
        (dwfl, removed, arg))
FORWARD(int, -1, dwfl_standard_find_debuginfo,
        (Dwfl_Module * mod, void **userdata, const char *modname, Dwarf_Addr base,
         const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
         char **debuginfo_file_name),
        (mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
         debuginfo_file_name))
