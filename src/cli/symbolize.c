/* Names for a trace's anonymous frames, after the program has ended
 * (symbolize.h), through elfutils' libdw: its offline module reports find
 * a stripped file's separate debug information by build id, in
 * /usr/lib/debug and, with DEBUGINFOD_URLS set, from debuginfod servers
 * (libdw calls elfutils' debuginfod client). libdw is opened when a trace
 * needs it, not linked. */
#include "symbolize.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "anonymous.h"
#include "base/dlbind.h"

static struct {
  Dwfl *(*begin)(const Dwfl_Callbacks *);
  void (*end)(Dwfl *);
  void (*report_begin)(Dwfl *);
  Dwfl_Module *(*report_offline)(Dwfl *, const char *, const char *, int);
  int (*report_end)(Dwfl *, int (*)(Dwfl_Module *, void *, const char *, Dwarf_Addr, void *), void *);
  const char *(*module_info)(Dwfl_Module *, void ***, Dwarf_Addr *, Dwarf_Addr *, Dwarf_Addr *,
                             Dwarf_Addr *, const char **, const char **);
  Dwarf *(*module_getdwarf)(Dwfl_Module *, Dwarf_Addr *);
  const char *(*module_addrinfo)(Dwfl_Module *, GElf_Addr, GElf_Off *, GElf_Sym *, GElf_Word *,
                                 Elf **, Dwarf_Addr *);
  Dwfl_Line *(*module_getsrc)(Dwfl_Module *, Dwarf_Addr);
  const char *(*lineinfo)(Dwfl_Line *, Dwarf_Addr *, int *, int *, Dwarf_Word *, Dwarf_Word *);
  Dwarf_Die *(*module_addrdie)(Dwfl_Module *, Dwarf_Addr, Dwarf_Addr *);
  int (*getscopes)(Dwarf_Die *, Dwarf_Addr, Dwarf_Die **);
  int (*tag)(Dwarf_Die *);
  const char *(*diename)(Dwarf_Die *);
  Dwarf_Attribute *(*attr)(Dwarf_Die *, unsigned int, Dwarf_Attribute *);
  int (*formudata)(Dwarf_Attribute *, Dwarf_Word *);
  int (*getsrcfiles)(Dwarf_Die *, Dwarf_Files **, size_t *);
  const char *(*filesrc)(Dwarf_Files *, size_t, Dwarf_Word *, Dwarf_Word *);
  int (*find_elf)(Dwfl_Module *, void **, const char *, Dwarf_Addr, char **, Elf **);
  int (*find_debuginfo)(Dwfl_Module *, void **, const char *, Dwarf_Addr, const char *,
                        const char *, GElf_Word, char **);
  int (*section_address)(Dwfl_Module *, void **, const char *, Dwarf_Addr, const char *,
                         GElf_Word, const GElf_Shdr *, Dwarf_Addr *);
} dw;

static int bind_libdw(char *err, size_t n) {
  const mt_dl_fn fns[] = {
      {"dwfl_begin", &dw.begin},
      {"dwfl_end", &dw.end},
      {"dwfl_report_begin", &dw.report_begin},
      {"dwfl_report_offline", &dw.report_offline},
      {"dwfl_report_end", &dw.report_end},
      {"dwfl_module_info", &dw.module_info},
      {"dwfl_module_getdwarf", &dw.module_getdwarf},
      {"dwfl_module_addrinfo", &dw.module_addrinfo},
      {"dwfl_module_getsrc", &dw.module_getsrc},
      {"dwfl_lineinfo", &dw.lineinfo},
      {"dwfl_module_addrdie", &dw.module_addrdie},
      {"dwarf_getscopes", &dw.getscopes},
      {"dwarf_tag", &dw.tag},
      {"dwarf_diename", &dw.diename},
      {"dwarf_attr", &dw.attr},
      {"dwarf_formudata", &dw.formudata},
      {"dwarf_getsrcfiles", &dw.getsrcfiles},
      {"dwarf_filesrc", &dw.filesrc},
      {"dwfl_build_id_find_elf", &dw.find_elf},
      {"dwfl_standard_find_debuginfo", &dw.find_debuginfo},
      {"dwfl_offline_section_address", &dw.section_address},
  };
  return mt_dl_bind("libdw.so.1", fns, sizeof fns / sizeof *fns,
                    "install Debian's libdw1 to name frames from debug information",
                    "an elfutils older than 0.158", err, n);
}

/* One module (a file the trace names a frame in), reported to libdw once;
 * NULL dwfl when it has no debug information to give. */
typedef struct module {
  char *path;
  Dwfl *dwfl;
  Dwfl_Module *mod;
  Dwarf_Addr low; /* its lowest address as libdw laid it out */
} module;

struct mt_cli_symbolizer {
  Dwfl_Callbacks callbacks;
  char *debuginfo_path;
  module *mods;
  size_t nmods, cap;
  /* the locations handed out, freed with the symbolizer */
  mt_location *locs;
  size_t nlocs, locs_cap;
  char **strings;
  size_t nstrings, strings_cap;
  size_t named; /* frames named */
  struct timespec start;
};

/* All the fetches of one trace together may take this long; then the
 * modules left are named from local debug information only. */
#define FETCH_BUDGET_S 30

int mt_cli_symbolizer_new(mt_cli_symbolizer **out, char *err, size_t n) {
  *out = NULL;
  if (!dw.begin && bind_libdw(err, n) != 0) return -1;
  mt_cli_symbolizer *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, n, "out of memory");
    return -1;
  }
  s->callbacks.find_elf = dw.find_elf;
  s->callbacks.find_debuginfo = dw.find_debuginfo;
  s->callbacks.section_address = dw.section_address;
  s->callbacks.debuginfo_path = &s->debuginfo_path;
  clock_gettime(CLOCK_MONOTONIC, &s->start);
  *out = s;
  return 0;
}

void mt_cli_symbolizer_free(mt_cli_symbolizer *s) {
  if (!s) return;
  for (size_t i = 0; i < s->nmods; i++) {
    if (s->mods[i].dwfl) dw.end(s->mods[i].dwfl);
    free(s->mods[i].path);
  }
  for (size_t i = 0; i < s->nstrings; i++) free(s->strings[i]);
  free(s->strings);
  free(s->mods);
  free(s->locs);
  free(s);
}

size_t mt_cli_symbolizer_named(const mt_cli_symbolizer *s) { return s->named; }

static const char *keep(mt_cli_symbolizer *s, const char *text) {
  if (s->nstrings == s->strings_cap) {
    size_t c = s->strings_cap ? 2 * s->strings_cap : 64;
    char **p = realloc(s->strings, c * sizeof *p);
    if (!p) return NULL;
    s->strings = p, s->strings_cap = c;
  }
  char *copy = strdup(text ? text : "");
  if (copy) s->strings[s->nstrings++] = copy;
  return copy;
}

/* The module for path, reported and with its debug information looked
 * for (the fetch, if any, happens here); its dwfl is NULL when there is
 * none. */
static module *module_for(mt_cli_symbolizer *s, const char *path) {
  for (size_t i = 0; i < s->nmods; i++)
    if (strcmp(s->mods[i].path, path) == 0) return &s->mods[i];
  if (s->nmods == s->cap) {
    size_t c = s->cap ? 2 * s->cap : 16;
    module *m = realloc(s->mods, c * sizeof *m);
    if (!m) return NULL;
    s->mods = m, s->cap = c;
  }
  module *m = &s->mods[s->nmods];
  *m = (module){strdup(path), NULL, NULL, 0};
  if (!m->path) return NULL;
  s->nmods++;
  /* libdw asks debuginfod (through elfutils' client, which reads
   * DEBUGINFOD_URLS for each module's lookup) while the budget lasts */
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (now.tv_sec - s->start.tv_sec > FETCH_BUDGET_S && getenv("DEBUGINFOD_URLS")) {
    fprintf(stderr, "memtrace: debuginfod took over %d s: the other files are named from local "
                    "debug information only\n",
            FETCH_BUDGET_S);
    unsetenv("DEBUGINFOD_URLS");
  }
  Dwfl *dwfl = dw.begin(&s->callbacks);
  if (!dwfl) return m;
  dw.report_begin(dwfl);
  Dwfl_Module *mod = dw.report_offline(dwfl, path, path, -1);
  Dwarf_Addr bias;
  if (!mod || dw.report_end(dwfl, NULL, NULL) != 0 || !dw.module_getdwarf(mod, &bias)) {
    dw.end(dwfl);
    return m;
  }
  dw.module_info(mod, NULL, &m->low, NULL, NULL, NULL, NULL, NULL);
  m->dwfl = dwfl;
  m->mod = mod;
  return m;
}

/* Whether a location is an anonymous frame the tracer named
 * "MODULE+0xOFFSET" (a code in no symbol), with the module's path as its
 * file; *offset receives OFFSET. */
static int anonymous(const mt_location *l, uint64_t *offset) {
  return l->filename && l->filename[0] == '/' && mt_cli_anonymous_name(l->defname, offset);
}

static mt_location *new_loc(mt_cli_symbolizer *s) {
  if (s->nlocs == s->locs_cap) return NULL;
  return &s->locs[s->nlocs++];
}

/* The call site of an inlined scope: its caller's file and line. */
static void call_site(Dwarf_Die *cu, Dwarf_Die *scope, const char **file, uint32_t *line) {
  Dwarf_Attribute a;
  Dwarf_Word v;
  *file = "??";
  *line = 0;
  if (dw.attr(scope, DW_AT_call_line, &a) && dw.formudata(&a, &v) == 0) *line = (uint32_t)v;
  Dwarf_Files *files;
  size_t nfiles;
  if (dw.attr(scope, DW_AT_call_file, &a) && dw.formudata(&a, &v) == 0 &&
      dw.getsrcfiles(cu, &files, &nfiles) == 0 && v < nfiles) {
    const char *f = dw.filesrc(files, v, NULL, NULL);
    if (f) *file = f;
  }
}

/* The locations of address addr of module m, outermost first: the
 * function containing it and those inlined into it, each at the line
 * reached; 0 when libdw names nothing there. */
static size_t describe(mt_cli_symbolizer *s, module *m, Dwarf_Addr addr, mt_location **out) {
  GElf_Sym sym;
  GElf_Off off;
  const char *fname = dw.module_addrinfo(m->mod, addr, &off, &sym, NULL, NULL, NULL);
  Dwfl_Line *line = dw.module_getsrc(m->mod, addr);
  int lineno = 0;
  const char *file = line ? dw.lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
  if (!fname && !file) return 0;
  /* inlined scopes, innermost first */
  Dwarf_Addr bias;
  Dwarf_Die *cu = dw.module_addrdie(m->mod, addr, &bias);
  Dwarf_Die *scopes = NULL;
  int nscopes = cu ? dw.getscopes(cu, addr - bias, &scopes) : 0;
  enum { MAX_INLINE = 32 };
  const char *names[MAX_INLINE + 1], *files[MAX_INLINE + 1];
  uint32_t lines[MAX_INLINE + 1];
  size_t k = 0;
  const char *cur_file = file ? file : "??";
  uint32_t cur_line = (uint32_t)(lineno > 0 ? lineno : 0);
  for (int i = 0; i < nscopes && k < MAX_INLINE; i++) {
    int tag = dw.tag(&scopes[i]);
    if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram) continue;
    names[k] = dw.diename(&scopes[i]);
    files[k] = cur_file;
    lines[k] = cur_line;
    k++;
    if (tag == DW_TAG_subprogram) break;
    call_site(cu, &scopes[i], &cur_file, &cur_line);
  }
  free(scopes);
  if (k == 0) { /* no DWARF scope: the symbol's name and the line */
    names[0] = fname;
    files[0] = cur_file;
    lines[0] = cur_line;
    k = 1;
  } else if (fname && (!names[k - 1] || strcmp(names[k - 1], fname) != 0)) {
    names[k - 1] = fname; /* the linkage name the symbol table gives */
  }
  size_t first = s->nlocs;
  for (size_t j = k; j-- > 0;) { /* outermost first */
    mt_location *l = new_loc(s);
    if (!l) return 0;
    l->defname = keep(s, names[j] ? names[j] : "??");
    l->filename = keep(s, files[j]);
    l->line = lines[j] > 0xfffff ? 0xfffff : lines[j];
    l->start_char = l->end_char = 0;
    if (!l->defname || !l->filename) return 0;
  }
  *out = &s->locs[first];
  return k;
}

int mt_cli_symbolize(mt_cli_symbolizer *s, const mt_location *in, size_t n,
                     const mt_location **out, size_t *nout) {
  *out = in;
  *nout = n;
  uint64_t offset;
  if (n != 1 || !anonymous(&in[0], &offset)) return 0;
  module *m = module_for(s, in[0].filename);
  if (!m || !m->dwfl) return 0;
  /* The writer encodes a code's locations before it asks for the next
   * code's: one scratch array serves every call. */
  if (!s->locs && !(s->locs = malloc(64 * sizeof *s->locs))) return 0;
  s->locs_cap = 64;
  s->nlocs = 0;
  mt_location *locs;
  size_t k = describe(s, m, m->low + offset, &locs);
  if (!k) return 0;
  s->named++;
  *out = locs;
  *nout = k;
  return 1;
}
