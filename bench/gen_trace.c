/*
 * mt_gen_trace: writes a large synthetic memtrace trace for the benchmarks.
 *
 *   mt_gen_trace OUT [--events N] [--seed S] [--version 2|3] [--domains D]
 *                    [--stacks N]
 *
 * The trace is written with the library's own writer (mt_writer_*), so it is
 * byte for byte what a memtrace-c tracer would write for this program. What
 * makes a trace expensive to read is the shape of its data, not its length
 * alone, so the simulated program is built to look like a large C++/OCaml
 * server rather than a toy:
 *
 * - a few thousand functions with C++-style demangled names (namespaces,
 *   templates, lambdas, the standard library's long instantiations) in a
 *   few hundred source files; every call site is a distinct code, some with
 *   2-3 locations (frames inlined at that return address);
 * - stacks of 10 to 60 frames: a driver prefix shared by every stack, a
 *   layered call graph walked from a phase's entry points, recursive groups
 *   (parsers, tree code) that deepen stacks in "recursive phases";
 * - consecutive stacks share prefixes the way a running program's do: after
 *   each allocation a few frames return and new calls are made, so the
 *   writer's common-prefix and prediction coding see realistic input, and
 *   the ~16k codes, as many as its 16k-slot two-way cache has slots, do not
 *   all fit, so cold codes are evicted, miss again and have
 *   their locations written again;
 * - minor (short form), major and external allocations with per-site size
 *   and lifetime distributions; minor collections every ~26 sampled minor
 *   allocations that collect the dead young objects and promote survivors;
 *   major objects collected at major-slice boundaries; external blocks freed
 *   at their death; some objects live to the end;
 * - timestamps in microseconds over a few minutes, with idle pauses longer
 *   than 30 s so that the writer's packet time-span rule is exercised.
 *
 * By default nearly every allocation's stack is new (an adversarial trace
 * for tools whose cost grows with distinct stacks). --stacks N models an
 * ordinary program instead: N stacks drawn once and reused, the k-th most
 * popular with weight 1/k.
 *
 * Everything derives from one xoshiro256** generator seeded by splitmix64:
 * the same seed gives the same file.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "memtrace/format.h"
#include "base/rng.h"

#define DEFAULT_EVENTS 12000000ull

/* ---- random numbers --------------------------------------------------------
 * Our own generator (not rand()) so that a seed gives the same trace on any
 * libc. */

/* The project's generator (src/format/rng.h), under local names. */
typedef mt__rng rng;
#define rng_seed mt__rng_seed
#define rng_next mt__rng_next

/* Uniform in [0, 1). */
static inline double rng_unit(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* Uniform in [0, n), n < 2^32 (multiply-shift: the bias is far below what
 * a benchmark could notice). */
static inline uint32_t rng_below(rng *r, uint32_t n) {
  return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

static inline uint32_t rng_range(rng *r, uint32_t lo, uint32_t hi) {
  return lo + rng_below(r, hi - lo + 1);
}

static double rng_exp(rng *r, double mean) { return -mean * log1p(-rng_unit(r)); }

static double rng_normal(rng *r) {
  double u = rng_unit(r), v = rng_unit(r);
  return sqrt(-2.0 * log1p(-u)) * cos(2.0 * M_PI * v);
}

static double rng_lognormal(rng *r, double median, double sigma) {
  return median * exp(sigma * rng_normal(r));
}

/* Log-uniform in [lo, hi]: sizes and time scales spread over decades. */
static double rng_logu(rng *r, double lo, double hi) {
  return lo * exp(rng_unit(r) * log(hi / lo));
}

static uint64_t rng_poisson(rng *r, double mean) {
  if (mean <= 0) return 0;
  if (mean < 30) {
    double l = exp(-mean), p = rng_unit(r);
    uint64_t k = 0;
    while (p > l) {
      p *= rng_unit(r);
      k++;
    }
    return k;
  }
  double x = mean + sqrt(mean) * rng_normal(r) + 0.5;
  return x < 0 ? 0 : (uint64_t)x;
}

/* Picks an index with probability proportional to w[i]. */
static size_t rng_weighted(rng *r, const double *w, size_t n) {
  double total = 0;
  for (size_t i = 0; i < n; i++) total += w[i];
  double x = rng_unit(r) * total;
  for (size_t i = 0; i < n; i++) {
    if (x < w[i]) return i;
    x -= w[i];
  }
  return n - 1;
}

/* ---- small utilities ---- */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("mt_gen_trace: ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) die("out of memory");
  return p;
}

static void *xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) die("out of memory");
  return p;
}

/* Names live as long as the program model: one growing list of strdup'ed
 * strings, freed at exit. */
static char **g_strings;
static size_t g_nstrings, g_strings_cap;

static const char *keep(const char *s) {
  if (g_nstrings == g_strings_cap) {
    g_strings_cap = g_strings_cap ? g_strings_cap * 2 : 4096;
    g_strings = xrealloc(g_strings, g_strings_cap * sizeof *g_strings);
  }
  char *c = strdup(s);
  if (!c) die("out of memory");
  return g_strings[g_nstrings++] = c;
}

static const char *fmt_keep(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *fmt_keep(const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return keep(buf);
}

/* CamelCase -> snake_case, for file names derived from class names. */
static void snake(char *out, size_t cap, const char *camel) {
  size_t n = 0;
  for (const char *p = camel; *p && n + 2 < cap; p++) {
    if (*p >= 'A' && *p <= 'Z') {
      if (p != camel) out[n++] = '_';
      out[n++] = (char)(*p - 'A' + 'a');
    } else {
      out[n++] = *p;
    }
  }
  out[n] = 0;
}

/* ---- the simulated program --------------------------------------------------- */

/* Subsystems: application namespaces (the call graph's upper layers) and
 * libraries every application layer calls into (the lower layers). The
 * recursive ones hold parsers, planners and tree code. */
static const char *const app_ns[] = {"storage", "index", "query", "planner", "exec",
                                     "net", "rpc", "http", "json", "sql", "txn", "wal",
                                     "cache", "repl", "compress", "metrics"};
static const int app_recursive[] = {0, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0};
#define N_APP (sizeof app_ns / sizeof app_ns[0])
static const char *const lib_ns[] = {"util", "mem", "std", "io"};
#define N_LIB (sizeof lib_ns / sizeof lib_ns[0])
#define N_SUBSYS (N_APP + N_LIB)

#define FUNCS_PER_SUBSYS 150 /* 20 subsystems: 3000 functions */
#define FUNCS_PER_CLASS 10
#define APP_LEVELS 24        /* application functions: levels 0..23 */
#define LIB_LEVEL0 18        /* library functions: levels 18..31 */
#define LIB_LEVELS 14
#define MAX_LEVEL (LIB_LEVEL0 + LIB_LEVELS - 1)

#define PREFIX 6     /* driver frames common to every stack */
#define MIN_DEPTH 10 /* stacks are at least this deep ... */
#define MAX_DEPTH 60 /* ... and at most this deep */

static const char *const noun_a[] = {
    "Page", "Node", "Table", "Block", "Segment", "Row", "Record", "Batch", "Frame",
    "Session", "Request", "Response", "Column", "Tuple", "Plan", "Expr", "Token",
    "Schema", "Key", "Log", "Snapshot", "Message", "Header", "Chunk", "Bucket",
    "Range", "Filter", "Join", "Sort", "Tree"};
static const char *const noun_b[] = {
    "Cursor", "Builder", "Writer", "Reader", "Manager", "Pool", "Map", "Queue",
    "Stream", "Handler", "Visitor", "Codec", "Parser", "Scanner", "Iterator", "Cache",
    "Set", "Store", "Allocator", "Encoder", "Decoder", "Merger", "Splitter",
    "Evaluator", "Resolver", "Context", "Tracker", "Registry"};
static const char *const verbs[] = {
    "insert", "erase", "find", "lookup", "split", "merge", "rebalance", "scan", "next",
    "seek", "flush", "append", "encode", "decode", "parse", "visit", "emit", "build",
    "resolve", "apply", "commit", "rollback", "serialize", "deserialize", "compact",
    "materialize", "evaluate", "project", "filter", "probe", "grow", "reserve",
    "clone", "dispatch", "handle", "read_frame", "write_frame", "on_message",
    "schedule", "drain", "refresh", "prepare", "finish", "copy_from", "collect"};
#define COUNT(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))
#define N_NOUN_A COUNT(noun_a)
#define N_NOUN_B COUNT(noun_b)
#define N_VERBS COUNT(verbs)
static const char *const verb_suffix[] = {"", "", "", "", "_impl", "_rec", "_slow_path",
                                          "_locked", "_inner", "_batch"};
static const char *const scalar_args[] = {"int", "unsigned long", "bool", "double",
                                          "std::string_view", "void*", "unsigned int",
                                          "long", "char const*", "std::size_t"};
#define N_SUFFIX COUNT(verb_suffix)
#define N_SCALAR COUNT(scalar_args)
/* Value types that fill the standard library's templates. */
static const char *const std_value_types[] = {
    "acme::exec::Row", "acme::storage::PageRef", "acme::query::Token",
    "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >",
    "acme::json::Value", "std::pair<unsigned long, acme::index::Posting>",
    "acme::net::Buffer", "std::shared_ptr<acme::txn::Transaction>", "unsigned long",
    "acme::planner::PlanNode*"};
#define N_STDVT (sizeof std_value_types / sizeof std_value_types[0])

/* The standard library's functions that are real frames (not inlined):
 * %1$s is a value type, %2$s a key type. */
static const struct {
  const char *name, *file;
} std_funcs[] = {
    {"std::vector<%1$s, std::allocator<%1$s > >::_M_realloc_insert<%1$s const&>("
     "__gnu_cxx::__normal_iterator<%1$s*, std::vector<%1$s, std::allocator<%1$s > > >, "
     "%1$s const&)",
     "/usr/include/c++/12/bits/vector.tcc"},
    {"std::vector<%1$s, std::allocator<%1$s > >::reserve(unsigned long)",
     "/usr/include/c++/12/bits/vector.tcc"},
    {"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::"
     "_M_mutate(unsigned long, unsigned long, char const*, unsigned long)",
     "/usr/include/c++/12/bits/basic_string.tcc"},
    {"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::"
     "_M_construct<char const*>(char const*, char const*, std::forward_iterator_tag)",
     "/usr/include/c++/12/bits/basic_string.tcc"},
    {"std::_Hashtable<%2$s, std::pair<%2$s const, %1$s >, std::allocator<std::pair<%2$s "
     "const, %1$s > >, std::__detail::_Select1st, std::equal_to<%2$s >, std::hash<%2$s >, "
     "std::__detail::_Mod_range_hashing, std::__detail::_Default_ranged_hash, "
     "std::__detail::_Prime_rehash_policy, std::__detail::_Hashtable_traits<true, false, "
     "true> >::_M_rehash(unsigned long, unsigned long const&)",
     "/usr/include/c++/12/bits/hashtable.h"},
    {"std::__detail::_Map_base<%2$s, std::pair<%2$s const, %1$s >, std::allocator<std::"
     "pair<%2$s const, %1$s > >, std::__detail::_Select1st, std::equal_to<%2$s >, "
     "std::hash<%2$s >, std::__detail::_Mod_range_hashing, std::__detail::_Default_ranged_"
     "hash, std::__detail::_Prime_rehash_policy, std::__detail::_Hashtable_traits<true, "
     "false, true>, true>::operator[](%2$s const&)",
     "/usr/include/c++/12/bits/hashtable_policy.h"},
    {"std::_Rb_tree<%2$s, std::pair<%2$s const, %1$s >, std::_Select1st<std::pair<%2$s "
     "const, %1$s > >, std::less<%2$s >, std::allocator<std::pair<%2$s const, %1$s > > "
     ">::_M_emplace_hint_unique<std::piecewise_construct_t const&, std::tuple<%2$s const&>, "
     "std::tuple<> >(std::_Rb_tree_const_iterator<std::pair<%2$s const, %1$s > >, "
     "std::piecewise_construct_t const&, std::tuple<%2$s const&>&&, std::tuple<>&&)",
     "/usr/include/c++/12/bits/stl_tree.h"},
    {"std::deque<%1$s, std::allocator<%1$s > >::_M_push_back_aux<%1$s const&>(%1$s "
     "const&)",
     "/usr/include/c++/12/bits/deque.tcc"},
    {"std::_Function_handler<void (%1$s&), acme::sched::Task::wrap<%1$s >(std::function<"
     "void (%1$s&)>)::{lambda(%1$s&)#1}>::_M_invoke(std::_Any_data const&, %1$s&)",
     "/usr/include/c++/12/bits/std_function.h"},
    {"std::__shared_count<(__gnu_cxx::_Lock_policy)2>::__shared_count<%1$s, "
     "std::allocator<%1$s >>(%1$s*&, std::_Sp_alloc_shared_tag<std::allocator<%1$s > >)",
     "/usr/include/c++/12/bits/shared_ptr_base.h"},
};
#define N_STDF (sizeof std_funcs / sizeof std_funcs[0])

/* Small functions that only ever appear inlined into a frame. */
static const struct {
  const char *name, *file;
} std_inline[] = {
    {"std::vector<%1$s, std::allocator<%1$s > >::push_back(%1$s const&)",
     "/usr/include/c++/12/bits/stl_vector.h"},
    {"std::vector<%1$s, std::allocator<%1$s > >::emplace_back<%1$s >(%1$s&&)",
     "/usr/include/c++/12/bits/vector.tcc"},
    {"std::unique_ptr<%1$s, std::default_delete<%1$s > >::reset(%1$s*)",
     "/usr/include/c++/12/bits/unique_ptr.h"},
    {"std::make_unique<%1$s>()", "/usr/include/c++/12/bits/unique_ptr.h"},
    {"std::__new_allocator<%1$s >::allocate(unsigned long, void const*)",
     "/usr/include/c++/12/bits/new_allocator.h"},
    {"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::"
     "append(char const*, unsigned long)",
     "/usr/include/c++/12/bits/basic_string.h"},
    {"std::function<void (%1$s&)>::operator()(%1$s&) const",
     "/usr/include/c++/12/bits/std_function.h"},
    {"std::allocate_shared<%1$s, std::allocator<%1$s > >(std::allocator<%1$s > const&)",
     "/usr/include/c++/12/bits/shared_ptr.h"},
};
#define N_STDI (sizeof std_inline / sizeof std_inline[0])

typedef enum { SZ_MINOR_FIXED, SZ_MINOR_SMALL, SZ_MINOR_MEDIUM, SZ_MAJOR, SZ_EXTERNAL } size_kind;

typedef struct site {
  uint64_t code;
  uint32_t owner;  /* the function whose frame holds this code */
  int32_t target;  /* the callee, or -1: an allocation site */
  uint8_t back;    /* a recursive edge (the callee is not deeper) */
  uint8_t nlocs;
  /* allocation sites: what and how long-lived */
  uint8_t size_kind;
  uint8_t fixed_len;     /* SZ_MINOR_FIXED */
  float len_a, len_b;    /* size parameters of the other kinds */
  float p_survive;       /* minor: survives its first minor collection */
  float p_immortal;      /* survivors, major, external: never collected */
  float life_median_us;  /* survivors, major, external: median lifetime */
  mt_location locs[3];   /* outermost first: the frame, then inlined calls */
} site;

typedef struct func {
  const char *name, *file;
  uint32_t line;
  uint16_t level, subsys;
  uint32_t call0, ncall;   /* call sites: sites[call0, call0 + ncall) */
  uint32_t alloc0, nalloc; /* allocation sites */
  uint32_t dispatch;       /* roots: the driver's site that calls it */
  float p_alloc;           /* a visit allocates here rather than calling on */
} func;

typedef struct program {
  func *funcs;
  size_t nfuncs;
  site *sites;
  size_t nsites, sites_cap;
  uint32_t sub_first[N_SUBSYS], sub_count[N_SUBSYS];
  uint32_t driver[PREFIX];  /* the driver's functions, outermost first */
  /* code -> site index + 1, open addressing (the resolver's lookup) */
  uint64_t *hkeys;
  uint32_t *hvals;
  size_t hcap;
  /* inlinable functions */
  const char **inl_name, **inl_file;
  uint32_t *inl_line;
  size_t ninl;
  uint64_t text_cursor;     /* next free code address */
} program;

static uint32_t new_site(program *p, uint32_t owner) {
  if (p->nsites == p->sites_cap) {
    p->sites_cap = p->sites_cap ? p->sites_cap * 2 : 8192;
    p->sites = xrealloc(p->sites, p->sites_cap * sizeof *p->sites);
  }
  site *s = &p->sites[p->nsites];
  memset(s, 0, sizeof *s);
  s->owner = owner;
  s->target = -1;
  return (uint32_t)p->nsites++;
}

/* A location in `f` near its start line, with plausible columns. */
static mt_location loc_in(rng *r, const char *file, const char *def, uint32_t base) {
  uint32_t start = rng_range(r, 2, 40);
  return (mt_location){file, def, base + rng_range(r, 1, 180), start,
                       start + rng_range(r, 6, 70)};
}

/* Adds 0-2 inlined frames after the site's own location: templates and
 * small helpers inlined at the return address, as debug info reports. */
static void add_inlined(program *p, rng *r, site *s, size_t subsys) {
  double u = rng_unit(r);
  int extra = u < 0.08 ? 2 : u < 0.38 ? 1 : 0;
  for (int i = 0; i < extra; i++) {
    /* The standard library's templates, or a header of the caller's own
     * namespace (make_names lays them out in that order). */
    size_t k = subsys < N_APP && rng_unit(r) < 0.5
                   ? N_STDI * 4 + subsys * 12 + rng_below(r, 12)
                   : rng_below(r, N_STDI * 4);
    uint32_t start = rng_range(r, 4, 30);
    s->locs[s->nlocs++] = (mt_location){p->inl_file[k], p->inl_name[k],
                                        p->inl_line[k] + rng_range(r, 0, 12), start,
                                        start + rng_range(r, 8, 60)};
  }
}

static void index_code(program *p, uint64_t code, uint32_t site_ix) {
  size_t mask = p->hcap - 1, i = (size_t)((code * 0x9e3779b97f4a7c15ull) >> 20) & mask;
  while (p->hkeys[i] != 0) {
    if (p->hkeys[i] == code) die("internal error: code 0x%llx assigned twice",
                                 (unsigned long long)code);
    i = (i + 1) & mask;
  }
  p->hkeys[i] = code;
  p->hvals[i] = site_ix + 1;
}

static const site *find_code(const program *p, uint64_t code) {
  size_t mask = p->hcap - 1, i = (size_t)((code * 0x9e3779b97f4a7c15ull) >> 20) & mask;
  while (p->hkeys[i] != 0) {
    if (p->hkeys[i] == code) return &p->sites[p->hvals[i] - 1];
    i = (i + 1) & mask;
  }
  return NULL;
}

/* A random function of subsystem `s` with level in [lo, hi], or -1. Levels
 * grow with the index inside a subsystem, so the candidates are a range. */
static int32_t pick_func(const program *p, rng *r, size_t s, int lo, int hi) {
  uint32_t a = p->sub_first[s], n = p->sub_count[s], b = a + n, i = a, j;
  while (i < b && p->funcs[i].level < lo) i++;
  j = i;
  while (j < b && p->funcs[j].level <= hi) j++;
  if (i == j) return -1;
  return (int32_t)(i + rng_below(r, j - i));
}

static void make_names(program *p, rng *r) {
  /* Inlinable helpers: the standard library's, and small methods of each
   * application namespace defined in headers. */
  size_t cap = N_STDI * 4 + N_APP * 12;
  p->inl_name = xmalloc(cap * sizeof *p->inl_name);
  p->inl_file = xmalloc(cap * sizeof *p->inl_file);
  p->inl_line = xmalloc(cap * sizeof *p->inl_line);
  for (size_t i = 0; i < N_STDI; i++)
    for (int k = 0; k < 4; k++) {
      const char *vt = std_value_types[rng_below(r, N_STDVT)];
      char buf[1024];
      snprintf(buf, sizeof buf, std_inline[i].name, vt);
      p->inl_name[p->ninl] = keep(buf);
      p->inl_file[p->ninl] = std_inline[i].file;
      p->inl_line[p->ninl++] = rng_range(r, 80, 1900);
    }
  for (size_t s = 0; s < N_APP; s++)
    for (int k = 0; k < 12; k++) {
      char cls[64], sn[80];
      snprintf(cls, sizeof cls, "%s%s", noun_a[rng_below(r, N_NOUN_A)], noun_b[rng_below(r, N_NOUN_B)]);
      snake(sn, sizeof sn, cls);
      static const char *const small[] = {"size", "data", "get", "at", "operator[]",
                                          "empty", "push", "make", "view", "ref"};
      const char *m = small[rng_below(r, COUNT(small))];
      p->inl_name[p->ninl] = fmt_keep("acme::%s::%s::%s(%s)%s", app_ns[s], cls, m,
                                      rng_unit(r) < 0.5 ? "" : "unsigned long",
                                      rng_unit(r) < 0.6 ? " const" : "");
      p->inl_file[p->ninl] = fmt_keep("include/acme/%s/%s.h", app_ns[s], sn);
      p->inl_line[p->ninl++] = rng_range(r, 30, 600);
    }
}

/* Name and file of function number `k` of subsystem `s` (classes of
 * FUNCS_PER_CLASS methods, each class one file). */
static void name_func(program *p, rng *r, func *f, size_t s, uint32_t k,
                      const char **cls_name, const char **cls_file, uint32_t *cls_line) {
  (void)p;
  if (k % FUNCS_PER_CLASS == 0) {
    /* A new class: CamelCase from two nouns, sometimes a template. */
    char cls[512], base[64], sn[96];
    snprintf(base, sizeof base, "%s%s", noun_a[rng_below(r, N_NOUN_A)], noun_b[rng_below(r, N_NOUN_B)]);
    snake(sn, sizeof sn, base);
    if (s >= N_APP && strcmp(lib_ns[s - N_APP], "std") == 0) {
      *cls_name = NULL; /* std functions are named from std_funcs */
      *cls_file = NULL;
    } else {
      const char *ns = s < N_APP ? app_ns[s] : lib_ns[s - N_APP];
      double u = rng_unit(r);
      if (u < 0.2)
        snprintf(cls, sizeof cls, "acme::%s::%s<%s, %s>", ns, base,
                 std_value_types[rng_below(r, N_STDVT)],
                 rng_unit(r) < 0.5 ? "64ul" : "acme::mem::ArenaAllocator");
      else if (u < 0.3)
        snprintf(cls, sizeof cls, "acme::%s::detail::%s", ns, base);
      else
        snprintf(cls, sizeof cls, "acme::%s::%s", ns, base);
      *cls_name = keep(cls);
      *cls_file = fmt_keep("src/%s/%s.cc", ns, sn);
    }
    *cls_line = rng_range(r, 20, 200);
  }
  if (!*cls_name) {
    size_t j = rng_below(r, N_STDF);
    char buf[2048];
    snprintf(buf, sizeof buf, std_funcs[j].name, std_value_types[rng_below(r, N_STDVT)],
             rng_unit(r) < 0.5 ? "unsigned long"
                               : "std::__cxx11::basic_string<char, std::char_traits<char>, "
                                 "std::allocator<char> >");
    f->name = keep(buf);
    f->file = std_funcs[j].file;
    f->line = rng_range(r, 100, 2400);
    return;
  }
  const char *ns = s < N_APP ? app_ns[s] : lib_ns[s - N_APP];
  char args[512] = "";
  int nargs = (int)rng_below(r, 4);
  for (int a = 0; a < nargs; a++) {
    char one[160];
    if (rng_unit(r) < 0.55)
      snprintf(one, sizeof one, "%s", scalar_args[rng_below(r, N_SCALAR)]);
    else
      snprintf(one, sizeof one, "acme::%s::%s%s%s", ns, noun_a[rng_below(r, N_NOUN_A)],
               noun_b[rng_below(r, N_NOUN_B)], rng_unit(r) < 0.5 ? " const&" : "&");
    if (a) strcat(args, ", ");
    strcat(args, one);
  }
  const char *cq = rng_unit(r) < 0.3 ? " const" : "";
  const char *verb = verbs[rng_below(r, N_VERBS)];
  const char *suffix = verb_suffix[rng_below(r, N_SUFFIX)];
  if (rng_unit(r) < 0.06) {
    /* A lambda body: its own frame, named after the enclosing method. */
    f->name = fmt_keep("%s::%s%s(%s)%s::{lambda(acme::exec::Row const&)#%u}::operator()("
                       "acme::exec::Row const&) const",
                       *cls_name, verb, suffix, args, cq, rng_range(r, 1, 3));
  } else {
    f->name = fmt_keep("%s::%s%s(%s)%s", *cls_name, verb, suffix, args, cq);
  }
  f->file = *cls_file;
  *cls_line += rng_range(r, 15, 220);
  f->line = *cls_line;
}

/* Per allocation site: what it allocates and how long that lives. */
static void make_alloc_site(rng *r, site *s) {
  double u = rng_unit(r);
  if (u < 0.80) {
    double v = rng_unit(r);
    if (v < 0.70) {
      /* A fixed-size OCaml-like block: pairs, records, closures... */
      static const double w[16] = {4, 20, 18, 12, 10, 8, 5, 6, 3, 3, 2, 2, 1, 1, 1, 4};
      s->size_kind = SZ_MINOR_FIXED;
      s->fixed_len = (uint8_t)(1 + rng_weighted(r, w, 16));
    } else if (v < 0.90) {
      s->size_kind = SZ_MINOR_SMALL; /* strings, small arrays */
    } else {
      s->size_kind = SZ_MINOR_MEDIUM; /* buffers up to the minor heap's limit */
    }
    double w = rng_unit(r);
    s->p_survive = w < 0.75 ? (float)rng_logu(r, 0.003, 0.05)
                   : w < 0.95 ? (float)rng_logu(r, 0.1, 0.5)
                              : (float)rng_logu(r, 0.6, 0.98);
  } else if (u < 0.87) {
    s->size_kind = SZ_MAJOR; /* arrays and tables: 257 words to 8 MiB */
    s->len_a = 257;
    s->len_b = (float)rng_logu(r, 1024, 1 << 20);
  } else {
    s->size_kind = SZ_EXTERNAL; /* malloc'ed buffers: lognormal bytes */
    s->len_a = (float)rng_logu(r, 16, 8192);
    s->len_b = (float)(0.5 + rng_unit(r));
  }
  double w = rng_unit(r);
  s->p_immortal = w < 0.85 ? 0.002f : w < 0.97 ? 0.05f : 0.5f;
  s->life_median_us = (float)rng_logu(r, 500, 20e6);
}

static void build_program(program *p, rng *r) {
  memset(p, 0, sizeof *p);
  make_names(p, r);
  size_t nf = N_SUBSYS * FUNCS_PER_SUBSYS + PREFIX;
  p->funcs = xmalloc(nf * sizeof *p->funcs);
  memset(p->funcs, 0, nf * sizeof *p->funcs);

  /* Functions, subsystem by subsystem, levels increasing with the index. */
  for (size_t s = 0; s < N_SUBSYS; s++) {
    p->sub_first[s] = (uint32_t)p->nfuncs;
    p->sub_count[s] = FUNCS_PER_SUBSYS;
    const char *cls = NULL, *file = NULL;
    uint32_t line = 0;
    for (uint32_t k = 0; k < FUNCS_PER_SUBSYS; k++) {
      func *f = &p->funcs[p->nfuncs++];
      f->subsys = (uint16_t)s;
      f->level = s < N_APP ? (uint16_t)(k * APP_LEVELS / FUNCS_PER_SUBSYS)
                           : (uint16_t)(LIB_LEVEL0 + k * LIB_LEVELS / FUNCS_PER_SUBSYS);
      name_func(p, r, f, s, k, &cls, &file, &line);
      /* Deep functions allocate more and call less: leaves are utilities. */
      double depth = (double)f->level / MAX_LEVEL;
      f->p_alloc = (float)(0.03 + 0.55 * depth * depth);
    }
  }
  /* The driver: main's chain down to the worker that runs each task. */
  static const struct {
    const char *name, *file;
    uint32_t line;
  } drv[PREFIX] = {
      {NULL, NULL, 0}, /* _start: libc without debug info, no location */
      {NULL, NULL, 0}, /* __libc_start_main: likewise */
      {"main", "src/main.cc", 42},
      {"acme::App::run(int, char**)", "src/app.cc", 118},
      {"acme::sched::EventLoop::run()", "src/sched/event_loop.cc", 207},
      {"acme::sched::Worker::process(acme::sched::Task&)", "src/sched/worker.cc", 61},
  };
  for (int i = 0; i < PREFIX; i++) {
    func *f = &p->funcs[p->nfuncs];
    p->driver[i] = (uint32_t)p->nfuncs++;
    f->name = drv[i].name;
    f->file = drv[i].file;
    f->line = drv[i].line;
    f->subsys = UINT16_MAX;
  }

  /* Call sites and allocation sites, with their codes: functions are laid
   * out one after another in a PIE text segment, each code a return
   * address inside its function. */
  p->text_cursor = 0x55d5c3a04000ull;
  for (size_t fi = 0; fi < p->nfuncs; fi++) {
    func *f = &p->funcs[fi];
    int is_driver = f->subsys == UINT16_MAX;
    uint32_t ncall, nalloc;
    if (is_driver) {
      ncall = fi == p->driver[PREFIX - 1] ? 0 : 1; /* the worker's sites: below */
      nalloc = 0;
    } else {
      ncall = f->level >= MAX_LEVEL ? 0 : rng_range(r, 2, 6);
      nalloc = rng_range(r, 1, 2);
    }
    int recursive = !is_driver && f->subsys < N_APP && f->level >= 2 &&
                    rng_unit(r) < (app_recursive[f->subsys] ? 0.25 : 0.04);
    f->call0 = (uint32_t)p->nsites;
    f->ncall = ncall;
    for (uint32_t k = 0; k < ncall; k++) {
      uint32_t si = new_site(p, (uint32_t)fi);
      site *s = &p->sites[si];
      if (is_driver) {
        s->target = (int32_t)(fi + 1);
      } else if (recursive && k == 0) {
        /* Direct recursion, or a back edge into the caller's group. */
        s->back = 1;
        s->target = rng_unit(r) < 0.5 ? (int32_t)fi
                                      : pick_func(p, r, f->subsys, f->level - 3, f->level);
        if (s->target < 0) s->target = (int32_t)fi;
      } else {
        double u = rng_unit(r);
        int lo = f->level + 1, hi = f->level + (rng_unit(r) < 0.6 ? 1 : 3);
        int32_t t = -1;
        if (u < 0.70 && f->subsys < N_APP)
          t = pick_func(p, r, f->subsys, lo, hi);
        else if (u < 0.78 && f->subsys < N_APP)
          t = pick_func(p, r, rng_below(r, N_APP), lo, hi);
        if (t < 0) {
          /* Into a library, at the first library level below this one. */
          int llo = lo > LIB_LEVEL0 ? lo : LIB_LEVEL0 + (int)rng_below(r, 3);
          for (int tries = 0; t < 0 && tries < 8; tries++)
            t = pick_func(p, r, N_APP + rng_below(r, N_LIB), llo, llo + 2);
        }
        if (t < 0) t = pick_func(p, r, f->subsys, lo, MAX_LEVEL);
        if (t < 0) { /* nothing deeper: this site allocates instead */
          f->ncall = k;
          p->nsites--;
          break;
        }
        s->target = t;
      }
    }
    f->alloc0 = (uint32_t)p->nsites;
    f->nalloc = nalloc;
    for (uint32_t k = 0; k < nalloc; k++) {
      uint32_t si = new_site(p, (uint32_t)fi); /* may move p->sites */
      make_alloc_site(r, &p->sites[si]);
    }
  }
  /* The worker dispatches to every application entry point (level 0). */
  func *worker = &p->funcs[p->driver[PREFIX - 1]];
  worker->call0 = (uint32_t)p->nsites;
  for (size_t fi = 0; fi < N_APP * FUNCS_PER_SUBSYS; fi++) {
    if (p->funcs[fi].level != 0) continue;
    uint32_t si = new_site(p, p->driver[PREFIX - 1]);
    p->sites[si].target = (int32_t)fi;
    p->funcs[fi].dispatch = si;
    worker->ncall++;
  }

  /* Codes and locations, in address order. Sites were created function by
   * function (except the worker's, made last), so address order is just
   * the site order within each function. */
  p->hcap = 1;
  while (p->hcap < p->nsites * 2) p->hcap <<= 1;
  p->hkeys = xmalloc(p->hcap * sizeof *p->hkeys);
  p->hvals = xmalloc(p->hcap * sizeof *p->hvals);
  memset(p->hkeys, 0, p->hcap * sizeof *p->hkeys);
  for (size_t fi = 0; fi < p->nfuncs; fi++) {
    func *f = &p->funcs[fi];
    int libc = f->name == NULL;
    uint64_t base = libc ? 0x7f3a1c029d10ull + fi * 0x1a0 : p->text_cursor;
    uint32_t nsites = f->ncall + f->nalloc;
    uint64_t size = 0x40 + (uint64_t)nsites * rng_range(r, 0x18, 0x120);
    if (!libc) p->text_cursor += (size + 0x3f) & ~0x3full;
    uint32_t ranges[2][2] = {{f->call0, f->ncall}, {f->alloc0, f->nalloc}};
    uint64_t off = 0x10;
    for (int g = 0; g < 2; g++)
      for (uint32_t k = 0; k < ranges[g][1]; k++) {
        site *s = &p->sites[ranges[g][0] + k];
        off += rng_range(r, 5, (uint32_t)(size / (nsites + 1)) + 5);
        s->code = base + off;
        if (!libc) {
          s->locs[0] = loc_in(r, f->file, f->name, f->line);
          s->nlocs = 1;
          if (f->subsys != UINT16_MAX) add_inlined(p, r, s, f->subsys);
        }
        index_code(p, s->code, ranges[g][0] + k);
      }
  }
}

static void free_program(program *p) {
  free(p->funcs);
  free(p->sites);
  free(p->hkeys);
  free(p->hvals);
  free(p->inl_name);
  free(p->inl_file);
  free(p->inl_line);
  for (size_t i = 0; i < g_nstrings; i++) free(g_strings[i]);
  free(g_strings);
}

static int resolve(void *ctx, uint64_t code, const mt_location **locs, size_t *n) {
  const site *s = find_code(ctx, code);
  *locs = s && s->nlocs ? s->locs : NULL;
  *n = s ? s->nlocs : 0;
  return 0;
}

/* ---- the run: stacks, allocations, lifetimes -------------------------------- */

#define SAMPLE_RATE 1e-4
/* A 256k-word minor heap at one sample per 10^4 words: a minor collection
 * every ~26 sampled minor allocations. */
#define MINOR_GC_SAMPLES 26
#define MAJOR_SLICE_US 5000 /* major objects are collected in slices */
#define MEAN_GAP_US 25.0    /* between sampled allocations */
#define NPHASES 12

typedef struct young {
  uint64_t id;
  uint32_t site;
} young;

typedef struct death {
  uint64_t time, id;
} death;

typedef struct dheap { /* a min-heap of deaths by (time, id) */
  death *v;
  size_t n, cap;
} dheap;

typedef struct walker {
  uint32_t fn[MAX_DEPTH];
  uint64_t bt[MAX_DEPTH];
  uint32_t site[MAX_DEPTH];
  size_t depth;
} walker;

typedef struct dom_state {
  walker w;
  young *young;
  size_t nyoung, young_cap;
  uint64_t young_samples;
} dom_state;

typedef struct gen {
  program prog;
  rng r;
  mt_writer *wr;
  int version;
  uint32_t ndomains, cur;
  dom_state *doms;
  uint64_t now, target_events, events;
  uint64_t n_alloc[3], n_short, n_promote, n_collect;
  uint64_t frames_total, max_depth_seen, min_depth_seen;
  dheap gc, ext;     /* deaths to come: GC-reported, and external frees */
  uint64_t hold_from; /* in an idle pause: its start, else UINT64_MAX */
  uint64_t floor;     /* deaths are not reported before this time */
  /* the phase */
  uint32_t roots[8];
  size_t nroots;
  double back_boost;
  size_t depth_cap;
  uint64_t pauses;
  /* --stacks N: the program's stacks, drawn once (pool), then reused with
   * Zipf popularity (cum: cumulative weights); npool 0: every stack is
   * walked afresh (the default, adversarial diversity) */
  walker *pool;
  double *pool_cum;
  uint32_t npool;
} gen;

static void check(gen *g, int rc) {
  if (rc != MT_OK) die("writer: %s", mt_writer_error(g->wr));
}

static int before(const death *a, const death *b) {
  return a->time < b->time || (a->time == b->time && a->id < b->id);
}

static void heap_push(dheap *h, uint64_t time, uint64_t id) {
  if (h->n == h->cap) {
    h->cap = h->cap ? h->cap * 2 : 65536;
    h->v = xrealloc(h->v, h->cap * sizeof *h->v);
  }
  size_t i = h->n++;
  death d = {time, id};
  while (i > 0 && before(&d, &h->v[(i - 1) / 2])) {
    h->v[i] = h->v[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->v[i] = d;
}

static death heap_pop(dheap *h) {
  death top = h->v[0], last = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c])) c++;
    if (!before(&h->v[c], &last)) break;
    h->v[i] = h->v[c];
    i = c;
  }
  h->v[i] = last;
  return top;
}

static int done(const gen *g) { return g->events >= g->target_events; }

/* Emits the collections due by `t`, in time order. During an idle pause
 * (hold_from set) nothing that falls due after the pause began is
 * reported: the GC runs only when the program allocates and frees happen
 * only when its code runs, so those deaths are reported when it resumes,
 * at `floor`. Collections are reported by the domain that sweeps, the
 * current one (v3: of any domain's objects). */
static void drain(gen *g, uint64_t t) {
  uint64_t limit = t < g->hold_from ? t : g->hold_from;
  while (!done(g)) {
    int ext = g->ext.n > 0 && g->ext.v[0].time <= limit;
    int gc = g->gc.n > 0 && g->gc.v[0].time <= limit;
    if (ext && gc) gc = before(&g->gc.v[0], &g->ext.v[0]), ext = !gc;
    if (!ext && !gc) return;
    death d = heap_pop(gc ? &g->gc : &g->ext);
    check(g, mt_writer_collect(g->wr, d.time < g->floor ? g->floor : d.time, g->cur, d.id));
    g->n_collect++;
    g->events++;
  }
}

/* When a promoted, major or external object dies (or never: UINT64_MAX). */
static uint64_t death_time(gen *g, const site *s, uint64_t born, int quantize) {
  if (rng_unit(&g->r) < s->p_immortal) return UINT64_MAX;
  double life = rng_lognormal(&g->r, s->life_median_us, 1.5);
  if (life > 1e12) return UINT64_MAX;
  uint64_t t = born + 1 + (uint64_t)life;
  if (quantize) t = (t + MAJOR_SLICE_US - 1) / MAJOR_SLICE_US * MAJOR_SLICE_US;
  return t;
}

/* A minor collection at `t` on the current domain: dead young objects are
 * collected, survivors promoted (then die later, in the major heap). */
static void minor_gc(gen *g, uint64_t t) {
  dom_state *d = &g->doms[g->cur];
  drain(g, t);
  for (size_t i = 0; i < d->nyoung && !done(g); i++) {
    const site *s = &g->prog.sites[d->young[i].site];
    if (rng_unit(&g->r) < s->p_survive) {
      check(g, mt_writer_promote(g->wr, t, g->cur, d->young[i].id));
      g->n_promote++;
      uint64_t dt = death_time(g, s, t, 1);
      if (dt != UINT64_MAX) heap_push(&g->gc, dt, d->young[i].id);
    } else {
      check(g, mt_writer_collect(g->wr, t, g->cur, d->young[i].id));
      g->n_collect++;
    }
    g->events++;
  }
  d->nyoung = 0;
  d->young_samples = 0;
}

/* Descends from the top frame (whose site is to be chosen) until a frame
 * allocates. */
static void descend(gen *g, walker *w) {
  const program *p = &g->prog;
  for (;;) {
    size_t top = w->depth - 1;
    const func *f = &p->funcs[w->fn[top]];
    int must_alloc = w->depth >= g->depth_cap || f->ncall == 0;
    int may_alloc = w->depth >= MIN_DEPTH;
    uint32_t si;
    if (must_alloc || (may_alloc && rng_unit(&g->r) < f->p_alloc)) {
      si = f->alloc0 + rng_below(&g->r, f->nalloc);
    } else {
      /* Call sites are Zipf-weighted (a function has hot and cold paths);
       * recursive edges are boosted in recursive phases. */
      double wts[16];
      for (uint32_t k = 0; k < f->ncall; k++) {
        const site *s = &p->sites[f->call0 + k];
        wts[k] = 1.0 / (k + 1) * (s->back ? g->back_boost : 1.0);
        if (s->back && w->depth + 8 >= g->depth_cap) wts[k] = 0;
      }
      si = f->call0 + (uint32_t)rng_weighted(&g->r, wts, f->ncall);
    }
    w->site[top] = si;
    w->bt[top] = p->sites[si].code;
    if (p->sites[si].target < 0) return;
    w->fn[w->depth] = (uint32_t)p->sites[si].target;
    w->depth++;
  }
}

/* Starts a task: the driver prefix, then one of the phase's entry points. */
static void start_task(gen *g, walker *w) {
  const program *p = &g->prog;
  for (int i = 0; i < PREFIX; i++) {
    const func *f = &p->funcs[p->driver[i]];
    w->fn[i] = p->driver[i];
    if (i < PREFIX - 1) w->site[i] = f->call0;
  }
  uint32_t root = g->roots[rng_below(&g->r, (uint32_t)g->nroots)];
  w->site[PREFIX - 1] = p->funcs[root].dispatch;
  for (int i = 0; i < PREFIX; i++) w->bt[i] = p->sites[w->site[i]].code;
  w->fn[PREFIX] = root;
  w->depth = PREFIX + 1;
  descend(g, w);
}

/* After an allocation: return from a few frames, then call on. */
static void step(gen *g, walker *w) {
  double u = rng_unit(&g->r);
  if (u < 0.01) {
    start_task(g, w); /* the worker picks the next task */
    return;
  }
  size_t pop;
  if (u < 0.05) {
    pop = rng_below(&g->r, (uint32_t)(w->depth - PREFIX)); /* a long return */
  } else {
    pop = 1 + (size_t)rng_exp(&g->r, 2.5);
  }
  size_t keep_depth = w->depth > pop + PREFIX + 1 ? w->depth - pop : PREFIX + 1;
  w->depth = keep_depth;
  descend(g, w);
}

static void set_phase(gen *g, uint32_t phase) {
  /* Each phase works in one application subsystem (a rotation through
   * them), entered through 2-4 of its entry points. */
  size_t s = (phase * 7 + 3) % N_APP;
  const program *p = &g->prog;
  g->nroots = 0;
  uint32_t a = p->sub_first[s];
  uint32_t want = rng_range(&g->r, 2, 4);
  for (uint32_t i = a; i < a + p->sub_count[s] && g->nroots < want; i++)
    if (p->funcs[i].level == 0) g->roots[g->nroots++] = i;
  if (app_recursive[s]) {
    g->back_boost = 6.0;
    g->depth_cap = MAX_DEPTH;
  } else {
    g->back_boost = 1.0;
    g->depth_cap = 45;
  }
  for (uint32_t d = 0; d < g->ndomains; d++) start_task(g, &g->doms[d].w);
}

/* --stacks N: draws the program's N stacks once, each from a phase's entry
 * points as a task would (own generator, so that the default trace is
 * untouched), and gives stack k the weight 1/(k+1): a few hot stacks carry
 * most allocations, as in an ordinary program. */
static void build_pool(gen *g, uint32_t n, uint64_t seed) {
  rng saved = g->r;
  rng_seed(&g->r, seed ^ 0x9e3779b97f4a7c15ull);
  g->pool = xmalloc(n * sizeof *g->pool);
  g->pool_cum = xmalloc(n * sizeof *g->pool_cum);
  double total = 0;
  for (uint32_t k = 0; k < n; k++) {
    set_phase(g, k % NPHASES);
    g->pool[k] = g->doms[0].w;
    step(g, &g->pool[k]); /* not only each task's first stack */
    g->pool_cum[k] = total += 1.0 / (k + 1);
  }
  g->npool = n;
  g->r = saved;
}

/* --stacks N: the next allocation's stack, one of the pool's. */
static void pick(gen *g, walker *w) {
  double x = rng_unit(&g->r) * g->pool_cum[g->npool - 1];
  uint32_t lo = 0, hi = g->npool - 1;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (g->pool_cum[mid] > x) hi = mid;
    else lo = mid + 1;
  }
  *w = g->pool[lo];
}

/* After an allocation: the next stack. */
static void next_stack(gen *g, walker *w) {
  if (g->npool) pick(g, w);
  else step(g, w);
}

static void alloc_one(gen *g) {
  dom_state *d = &g->doms[g->cur];
  walker *w = &d->w;
  const site *s = &g->prog.sites[w->site[w->depth - 1]];
  rng *r = &g->r;
  uint64_t len;
  mt_source src = MT_SOURCE_MINOR;
  switch (s->size_kind) {
  case SZ_MINOR_FIXED: len = s->fixed_len; break;
  case SZ_MINOR_SMALL: len = rng_range(r, 1, 16); break;
  case SZ_MINOR_MEDIUM: len = (uint64_t)rng_logu(r, 17, 256); break;
  case SZ_MAJOR:
    len = (uint64_t)rng_logu(r, s->len_a, s->len_b);
    src = MT_SOURCE_MAJOR;
    break;
  default: {
    double bytes = rng_lognormal(r, s->len_a, s->len_b);
    len = (uint64_t)(bytes / 8) + 1;
    src = MT_SOURCE_EXTERNAL;
  }
  }
  /* Given that a block was sampled, further sample points fall in it at
   * the sampling rate. */
  uint64_t nsamples = 1 + rng_poisson(r, SAMPLE_RATE * (double)(len + 1));
  uint64_t id;
  check(g, mt_writer_alloc(g->wr, g->now, g->cur, len, nsamples, src, w->bt, w->depth, &id));
  g->events++;
  g->n_alloc[src]++;
  if (src == MT_SOURCE_MINOR && len <= 16 && nsamples == 1) g->n_short++;
  g->frames_total += w->depth;
  if (w->depth > g->max_depth_seen) g->max_depth_seen = w->depth;
  if (w->depth < g->min_depth_seen) g->min_depth_seen = w->depth;

  if (src == MT_SOURCE_MINOR) {
    if (d->nyoung == d->young_cap) {
      d->young_cap = d->young_cap ? d->young_cap * 2 : 256;
      d->young = xrealloc(d->young, d->young_cap * sizeof *d->young);
    }
    d->young[d->nyoung++] = (young){id, (uint32_t)(s - g->prog.sites)};
    d->young_samples += nsamples;
    if (d->young_samples >= MINOR_GC_SAMPLES) minor_gc(g, g->now);
  } else {
    uint64_t dt = death_time(g, s, g->now, src == MT_SOURCE_MAJOR);
    if (dt != UINT64_MAX) heap_push(src == MT_SOURCE_MAJOR ? &g->gc : &g->ext, dt, id);
  }
}

static void run(gen *g) {
  g->min_depth_seen = UINT64_MAX;
  for (uint32_t phase = 0; phase < NPHASES && !done(g); phase++) {
    set_phase(g, phase);
    if (g->npool)
      for (uint32_t d = 0; d < g->ndomains; d++) pick(g, &g->doms[d].w);
    uint64_t phase_end = g->target_events * (phase + 1) / NPHASES;
    uint64_t next_switch = g->events + 1 + (uint64_t)rng_exp(&g->r, 3000);
    while (g->events < phase_end && !done(g)) {
      /* Sampled allocations arrive as a Poisson process. */
      g->now += (uint64_t)rng_exp(&g->r, MEAN_GAP_US);
      drain(g, g->now);
      if (done(g)) break;
      if (g->ndomains > 1 && g->events >= next_switch) {
        /* Domains take turns in runs (each switch flushes a packet). */
        g->cur = (g->cur + 1 + rng_below(&g->r, g->ndomains - 1)) % g->ndomains;
        next_switch = g->events + 1 + (uint64_t)rng_exp(&g->r, 3000);
      }
      alloc_one(g);
      next_stack(g, &g->doms[g->cur].w);
    }
    if (phase % 3 == 2 && phase + 1 < NPHASES) {
      /* The server idles (waiting on clients) for over 30 s, waking for a
       * timer every few seconds: a packet then spans the writer's 30 s
       * limit (and its 25-bit timestamps wrap). */
      uint64_t end = g->now + 31000000 + rng_below(&g->r, 14000000);
      g->hold_from = g->now;
      for (;;) {
        g->now += rng_range(&g->r, 5000000, 12000000);
        if (g->now >= end || done(g)) break;
        walker *w = &g->doms[g->cur].w;
        if (g->npool) pick(g, w);
        else start_task(g, w);
        for (uint32_t k = rng_range(&g->r, 1, 3); k > 0 && !done(g); k--) {
          alloc_one(g);
          next_stack(g, w);
          g->now += rng_range(&g->r, 20, 400);
        }
      }
      g->now = g->floor = end;
      g->hold_from = UINT64_MAX;
      g->pauses++;
    }
  }
}

/* ---- main ---- */

static void usage(FILE *f) {
  fprintf(f,
          "usage: mt_gen_trace OUT [--events N] [--seed S] [--version 2|3] [--domains D]\n"
          "                        [--stacks N]\n"
          "\n"
          "Writes a large synthetic memtrace trace of a simulated C++/OCaml server\n"
          "(deterministic for a seed), then prints its size, event count and bytes\n"
          "per event. Defaults: --events %llu --seed 1 --version 2 --domains 1.\n"
          "--domains D (version 3 only): D domains taking turns.\n"
          "--stacks N: ordinary diversity: the program allocates from N distinct\n"
          "stacks (drawn once, then reused; the k-th most popular with weight\n"
          "1/k), instead of walking a fresh stack for nearly every allocation.\n",
          DEFAULT_EVENTS);
}

static uint64_t parse_u64(const char *opt, const char *v) {
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v ? v : "", &end, 0);
  if (!v || !*v || *end || errno) {
    fprintf(stderr, "mt_gen_trace: %s needs a number\n", opt);
    usage(stderr);
    exit(2);
  }
  return x;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  const char *out = NULL;
  uint64_t events = DEFAULT_EVENTS, seed = 1, version = 2, domains = 1, stacks = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--events")) {
      events = parse_u64(a, i + 1 < argc ? argv[++i] : NULL);
    } else if (!strcmp(a, "--seed")) {
      seed = parse_u64(a, i + 1 < argc ? argv[++i] : NULL);
    } else if (!strcmp(a, "--version")) {
      version = parse_u64(a, i + 1 < argc ? argv[++i] : NULL);
    } else if (!strcmp(a, "--domains")) {
      domains = parse_u64(a, i + 1 < argc ? argv[++i] : NULL);
    } else if (!strcmp(a, "--stacks")) {
      stacks = parse_u64(a, i + 1 < argc ? argv[++i] : NULL);
      if (stacks < 1 || stacks > 10000000) die("--stacks must be 1 to 10000000");
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "mt_gen_trace: unknown option '%s'\n", a);
      usage(stderr);
      return 2;
    } else if (!out) {
      out = a;
    } else {
      fprintf(stderr, "mt_gen_trace: unexpected argument '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (!out) {
    usage(stderr);
    return 2;
  }
  if (version != 2 && version != 3) die("--version must be 2 or 3");
  if (domains < 1 || domains > 64) die("--domains must be 1 to 64");
  if (domains > 1 && version != 3) die("--domains needs --version 3");
  if (events < 1) die("--events must be at least 1");

  double t0 = now_s();
  static gen g; /* large: keep it off the stack */
  rng_seed(&g.r, seed);
  build_program(&g.prog, &g.r);
  g.version = (int)version;
  g.ndomains = (uint32_t)domains;
  g.doms = xmalloc(domains * sizeof *g.doms);
  memset(g.doms, 0, domains * sizeof *g.doms);
  g.target_events = events;
  /* A fixed start (2026-01-05 09:00 UTC): the trace must not depend on
   * when it was generated. */
  g.now = 1767603600000000ull;
  g.hold_from = UINT64_MAX;
  if (stacks) build_pool(&g, (uint32_t)stacks, seed);

  int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) die("%s: cannot create: %s", out, strerror(errno));
  char context[128];
  if (stacks)
    snprintf(context, sizeof context, "mt_gen_trace seed=%llu events=%llu stacks=%llu",
             (unsigned long long)seed, (unsigned long long)events,
             (unsigned long long)stacks);
  else
    snprintf(context, sizeof context, "mt_gen_trace seed=%llu events=%llu",
             (unsigned long long)seed, (unsigned long long)events);
  mt_trace_info info = {
      .sample_rate = SAMPLE_RATE,
      .word_size = 64,
      .executable_name = "/opt/acme/bin/acme-server",
      .host_name = "bench-host",
      .runtime_params = "s=256k,o=120,sampling=1e-4",
      .pid = 424242,
      .start_time = g.now,
      .context = context,
      .initial_domain = 0,
  };
  mt_writer_options opt = {.version = (int)version, .fd = fd, .resolve = resolve,
                           .resolve_ctx = &g.prog};
  if (mt_writer_open(&g.wr, &info, &opt) != MT_OK) die("writer: %s", mt_writer_error(g.wr));
  run(&g);
  check(&g, mt_writer_close(g.wr));
  if (close(fd) != 0) die("%s: %s", out, strerror(errno));
  double t1 = now_s();

  struct stat st;
  if (stat(out, &st) != 0) die("%s: %s", out, strerror(errno));
  uint64_t nalloc = g.n_alloc[0] + g.n_alloc[1] + g.n_alloc[2];
  size_t ncodes = g.prog.nsites;
  printf("trace:        %s (format version %d%s)\n", out, (int)version,
         domains > 1 ? ", several domains" : "");
  printf("file size:    %llu bytes (%.1f MB)\n", (unsigned long long)st.st_size,
         (double)st.st_size / 1e6);
  printf("events:       %llu\n", (unsigned long long)g.events);
  printf("bytes/event:  %.2f\n", (double)st.st_size / (double)g.events);
  printf("allocations:  %llu (minor %llu, of which short form %llu; major %llu; "
         "external %llu)\n",
         (unsigned long long)nalloc, (unsigned long long)g.n_alloc[0],
         (unsigned long long)g.n_short, (unsigned long long)g.n_alloc[1],
         (unsigned long long)g.n_alloc[2]);
  printf("promotions:   %llu\ncollections:  %llu\n", (unsigned long long)g.n_promote,
         (unsigned long long)g.n_collect);
  printf("stacks:       %.1f frames on average (%llu to %llu); %zu functions, %zu codes\n",
         nalloc ? (double)g.frames_total / (double)nalloc : 0.0,
         (unsigned long long)(nalloc ? g.min_depth_seen : 0),
         (unsigned long long)g.max_depth_seen, g.prog.nfuncs, ncodes);
  printf("simulated:    %.1f s (%llu idle pauses over 30 s)\n",
         (double)(g.now - info.start_time) / 1e6, (unsigned long long)g.pauses);
  printf("generated in: %.2f s\n", t1 - t0);

  for (uint32_t d = 0; d < g.ndomains; d++) free(g.doms[d].young);
  free(g.doms);
  free(g.pool);
  free(g.pool_cum);
  free(g.gc.v);
  free(g.ext.v);
  free_program(&g.prog);
  return 0;
}
