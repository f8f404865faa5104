/* Names of code generated at run time, from the process's perf map: the
 * file /tmp/perf-PID.map that JIT compilers write for profilers (node and
 * V8 with --perf-basic-prof, CPython 3.12 with -X perf, LuaJIT, Java
 * agents, .NET with DOTNET_PerfMapEnabled, Julia). Each line is
 * "START SIZE NAME": hexadecimal start and size, then the name to the end
 * of the line. Code in no loaded object was named "??" before. Internal
 * (mt__ prefix).
 *
 * Or from its jitdump, the binary file perf's `inject --jit` reads
 * (jit-PID.dump: CPython 3.13 with -X perf_jit, LLVM's JITs (Julia,
 * PostgreSQL), wasmtime, node with --perf-prof, Java's JVMTI agent),
 * told by its magic number: each code load record is a range and a name.
 * Records of code moved are not followed (the name stays where the code
 * was loaded), nor its line tables. Its path: mt__jitdump_path.
 *
 * The file is appended to as the runtime compiles: each lookup reads what
 * was written since the last one (from where that read stopped; nothing
 * when the file has not grown). Lookups come once per code, when it is
 * first named. Where code was replaced at the same
 * addresses (a runtime freeing and reusing its code space), the line
 * written last names them. Lines that do not parse are skipped. What is
 * kept of a line is its range and where its name is in the file (32
 * bytes): the name is read when asked for. The file
 * must be a regular file owned by the process's user or root (as perf
 * requires): another user's file in /tmp names nothing.
 *
 * A map written anew from its start is read anew: the JVM's `jcmd PID
 * Compiler.perfmap` truncates the file and writes every line again, and a
 * file may be replaced by another. Told by the file's identity (device
 * and inode), a size below what was read, or the last bytes read no longer
 * being there. */
#ifndef MT_TRACER_PERFMAP_H
#define MT_TRACER_PERFMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct mt__perfmap_entry mt__perfmap_entry;
typedef struct mt__perfmap_range {
  uint64_t start, end; /* [start, end) */
} mt__perfmap_range;

#define MT__PERFMAP_MAX_NAME 4096 /* a longer name is cut there */

/* What was read of one map. Zero-initialize; mt__perfmap_clear frees it. */
typedef struct mt__perfmap {
  mt__perfmap_entry *v; /* sorted by start, then by the order read */
  size_t n, cap;
  uint64_t *reach; /* reach[i]: the highest end of entries 0..i */
  off_t read_to;   /* bytes of the file read, through its last full line */
  dev_t dev;       /* the file read (read_to > 0) */
  ino_t ino;
  unsigned char tail[32]; /* its last tail_len bytes read, to [read_to) */
  unsigned tail_len;
  char name[MT__PERFMAP_MAX_NAME + 1]; /* the last name asked for */
  int jitdump;     /* the file is a jitdump (read_to > 0) */
  char path[256];  /* the file read ("" before the first lookup; another
                      after a fork: read anew) */
  /* For a watcher of code named again (symbols.c): with watch set, the
   * ranges of the lines read since the watcher last emptied fresh; or
   * fresh_all, when the map was read anew from its start (or the list ran
   * out of memory): then any line may be new. */
  int watch, fresh_all;
  mt__perfmap_range *fresh;
  size_t nfresh, fresh_cap;
} mt__perfmap;

/* The name the map at `path` gives to addr, or NULL (no such file, not
 * the user's, no line holding addr, out of memory). The name is valid
 * until the next call or mt__perfmap_clear. A map removed since it was
 * read names nothing. */
const char *mt__perfmap_name(mt__perfmap *pm, const char *path, uint64_t addr);

/* Reads what was written to the map at `path` since the last read, as a
 * lookup does first, naming nothing (watch: the lines then noted). */
void mt__perfmap_refresh(mt__perfmap *pm, const char *path);

/* A map line's name taken apart where it says where its code comes from:
 * V8's "JS:~work /app/j.js:2:14" (a last word FILE:LINE or FILE:LINE:COL
 * after the function) and CPython's "py::work:/app/j.py" (FILE after the
 * qualified name). The function is the name's first fn_len bytes; file is
 * NULL (the name says nothing of it) or points into the name, file_len
 * bytes: 0 for a script V8 gives no name (" :1:20": new Function, eval);
 * line and col are 0 when not said. V8's function part starts with the
 * code's kind and its tier mark ("JS:*", ~ ^ + * for its four compilers):
 * mark is the mark's offset in the name (0: none); anonymous, the part
 * has nothing after them ("JS:~ /app/j.js:3:9"): a function without a
 * name, or a script's top level. */
typedef struct mt__perfmap_where {
  size_t fn_len;
  const char *file;
  size_t file_len;
  unsigned line, col;
  int anonymous;
  size_t mark;
} mt__perfmap_where;

void mt__perfmap_where_of(const char *name, mt__perfmap_where *w);

/* The map's usual path for this process: /tmp/perf-PID.map (fits 64
 * bytes; "" if cap is too small). Takes little stack. */
void mt__perfmap_path(char *buf, size_t cap);

/* The path of the process's jitdump, found among its mappings (a runtime
 * maps the file it writes, so that perf sees it): a file named
 * jit-PID.dump, this process's pid. 1 and the path in buf, or 0 (none,
 * longer than cap, or the mappings unreadable). Reads /proc/self/maps
 * (with the heap's buffer): for the naming of codes, not every sample. */
int mt__jitdump_path(char *buf, size_t cap);

void mt__perfmap_clear(mt__perfmap *pm);

#endif
