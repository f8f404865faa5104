/* The mapping that holds an address, asked of the kernel: PROCMAP_QUERY
 * (an ioctl on /proc/self/maps, Linux 6.11) where it exists, else a read
 * of the map's text through a small buffer on the stack. Raw system calls
 * only: this runs inside malloc, on any thread, at any point of the C
 * library (stackmap.h). */
#include "stackmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <string.h>
#include <unistd.h>

/* The kernel's interface (linux/fs.h from 6.11; older headers lack it). */
struct procmap_query {
  uint64_t size, query_flags, query_addr;                      /* in */
  uint64_t vma_start, vma_end, vma_flags, vma_page_size;       /* out */
  uint64_t vma_offset, inode;                                  /* out */
  uint32_t dev_major, dev_minor, vma_name_size, build_id_size; /* in/out */
  uint64_t vma_name_addr, build_id_addr;                       /* in */
};
#define PROCMAP_QUERY_CMD _IOWR('f', 17, struct procmap_query)
#define Q_READABLE 0x1u
#define Q_WRITABLE 0x2u
#define Q_EXECUTABLE 0x4u

/* Where the main thread's stack began (the dynamic loader's): the mapping
 * that holds it is the main stack, which the kernel keeps a gap under. */
extern void *__libc_stack_end __attribute__((weak));

/* Adjacent writable mappings are one region: the kernel does not always
 * merge them (a part madvised or mlocked differently). A few at most. */
#define MAX_JOINED 8

static long raw_open(const char *path) {
  return syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
}

static void raw_close(long fd) { syscall(SYS_close, (int)fd); }

/* One mapping, as either source tells it. */
typedef struct vma {
  uintptr_t lo, hi;
  unsigned flags; /* Q_READABLE | Q_WRITABLE | Q_EXECUTABLE */
  uint64_t offset, inode;
  unsigned dev_major, dev_minor;
} vma;

/* The mapping holding addr: 1, -1 if none, 0 if the kernel has no
 * PROCMAP_QUERY (the caller reads the text instead). */
static int query(long fd, uintptr_t addr, vma *v) {
  struct procmap_query q = {.size = sizeof q, .query_addr = addr};
  if (syscall(SYS_ioctl, (int)fd, (unsigned long)PROCMAP_QUERY_CMD, &q) != 0)
    return errno == ENOENT ? -1 : 0;
  *v = (vma){(uintptr_t)q.vma_start, (uintptr_t)q.vma_end, (unsigned)q.vma_flags, q.vma_offset,
             q.inode, q.dev_major, q.dev_minor};
  return 1;
}

/* What a mapping must allow: reading and writing (a stack), or reading
 * (code a walk reads). */
enum { NEED_RW = Q_READABLE | Q_WRITABLE, NEED_R = Q_READABLE };
#define NO_ACCESS(v) (!((v).flags & (Q_READABLE | Q_WRITABLE | Q_EXECUTABLE)))

/* A search of the mappings, by either source: for the region of mappings
 * that allow `need` around addr (into *out), or for the one mapping
 * holding addr (cur, found). */
typedef struct line_scan line_scan;
struct line_scan {
  uintptr_t addr;
  unsigned need;
  mt__mapping *out;
  /* the text's lines, a field at a time (scan) */
  uint64_t f[7]; /* the fields read so far (see the F_ states) */
  unsigned flags;
  vma cur, prev;
  int state, nperm, found;
  int (*take)(line_scan *s); /* a line's fields, whole: 1 when the scan is over */
  int (*by_query)(long fd, line_scan *s); /* NULL: by the text only */
  /* with a path (mt__maps_find): the line's path, then take at its end */
  char *path;
  size_t path_cap, path_len;
  mt__map_match *match;
  void *ctx;
};

/* ---- the region allowing `need` (mt__mapping_of, mt__readable) ---- */

static int region_by_query(long fd, line_scan *s) {
  vma v, n;
  int r = query(fd, s->addr, &v);
  if (r <= 0) return r;
  if ((v.flags & s->need) != s->need) return -1;
  for (int k = 0; k < MAX_JOINED && query(fd, v.hi, &n) > 0 && n.lo == v.hi &&
                  (n.flags & s->need) == s->need;
       k++)
    v.hi = n.hi;
  /* guarded: a mapping without access right below */
  s->out->lo = v.lo, s->out->hi = v.hi;
  s->out->guarded = s->need == NEED_RW && v.lo && query(fd, v.lo - 1, &n) > 0 && n.hi == v.lo &&
                    NO_ACCESS(n);
  return 1;
}

static int take_region(line_scan *s) {
  const vma *l = &s->cur;
  if (!s->found) {
    if (s->addr < l->lo) return 1; /* passed it: not mapped */
    if (s->addr < l->hi) {
      if ((l->flags & s->need) != s->need) return 1;
      s->found = 1;
      s->out->lo = l->lo, s->out->hi = l->hi;
      s->out->guarded = s->prev.hi == l->lo && NO_ACCESS(s->prev);
      return 0;
    }
    s->prev = *l;
    return 0;
  }
  if (l->lo != s->out->hi || (l->flags & s->need) != s->need || s->found > MAX_JOINED) return 1;
  s->out->hi = l->hi, s->found++;
  return 0;
}

/* ---- the one mapping holding addr (mt__file_mapping_of) ---- */

static int file_by_query(long fd, line_scan *s) {
  int r = query(fd, s->addr, &s->cur);
  s->found = r > 0;
  return r;
}

static int take_file(line_scan *s) {
  if (s->addr < s->cur.lo) return 1;
  if (s->addr >= s->cur.hi) return 0;
  s->found = 1;
  return 1;
}

/* ---- a mapping by its path (mt__maps_find) ---- */

static mt__file_mapping file_mapping(const vma *v) {
  return (mt__file_mapping){v->lo,        v->hi,        v->offset,
                            v->inode,     v->dev_major, v->dev_minor,
                            (v->flags & Q_EXECUTABLE) != 0};
}

static int take_path(line_scan *s) {
  if (!s->path_len || s->path_len > s->path_cap) return 0; /* none, or longer than the buffer */
  s->path[s->path_len] = '\0';
  mt__file_mapping m = file_mapping(&s->cur);
  if (!s->match(&m, s->path, s->ctx)) return 0;
  s->found = 1;
  return 1;
}

/* ---- the text ----
 *
 * "lo-hi perms offset major:minor inode path\n" per mapping, in address
 * order. Read through a small buffer, one character at a time (a line may
 * straddle reads): the hexadecimal fields each ended by its character,
 * then the next; the permissions; the inode in decimal; the path, after
 * the spaces that align it, only if the search wants it (F_PATH). */
enum { F_LO, F_HI, F_PERMS, F_OFF, F_MAJ, F_MIN, F_INODE, F_REST, F_PATH };
static const char field_end[F_REST] = {[F_LO] = '-', [F_HI] = ' ', [F_OFF] = ' ', [F_MAJ] = ':',
                                       [F_MIN] = ' '};

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

/* Feeds n characters: 1 when the scan is over. */
static int scan(line_scan *s, const char *p, long n) {
  static const char perm_letter[3] = {'r', 'w', 'x'};
  static const unsigned perm_flag[3] = {Q_READABLE, Q_WRITABLE, Q_EXECUTABLE};
  for (long i = 0; i < n; i++) {
    char c = p[i];
    int v;
    switch (s->state) {
    case F_PERMS:
      if (c == ' ') s->state = F_OFF;
      else if (s->nperm < 3 && c == perm_letter[s->nperm]) s->flags |= perm_flag[s->nperm];
      s->nperm++;
      break;
    case F_INODE:
      if (c >= '0' && c <= '9') {
        s->f[F_INODE] = s->f[F_INODE] * 10 + (uint64_t)(c - '0');
        break;
      }
      s->cur = (vma){(uintptr_t)s->f[F_LO], (uintptr_t)s->f[F_HI], s->flags, s->f[F_OFF],
                     s->f[F_INODE], (unsigned)s->f[F_MAJ], (unsigned)s->f[F_MIN]};
      if (s->path) {
        s->path_len = 0;
        s->state = F_PATH;
        break;
      }
      if (s->take(s)) return 1;
      s->state = F_REST;
      break;
    case F_REST:
      break;
    case F_PATH:
      if (c == '\n') {
        if (s->take(s)) return 1;
      } else if (c != ' ' || s->path_len) { /* past the spaces that align it */
        if (s->path_len < s->path_cap) s->path[s->path_len++] = c;
        else s->path_len = s->path_cap + 1; /* too long */
      }
      break;
    default: /* a hexadecimal field */
      if ((v = hexval(c)) >= 0) s->f[s->state] = s->f[s->state] << 4 | (uint64_t)v;
      else s->state = c == field_end[s->state] ? s->state + 1 : F_REST;
    }
    if (c == '\n') { /* a line ends (early too, if malformed) */
      s->state = F_LO;
      s->nperm = 0;
      s->flags = 0;
      memset(s->f, 0, sizeof s->f);
    }
  }
  return 0;
}

static int by_text(long fd, line_scan *s) {
  char buf[512]; /* on the thread's stack, which may be small */
  long n;
  while ((n = syscall(SYS_read, (int)fd, buf, sizeof buf)) > 0)
    if (scan(s, buf, n)) break;
  return s->found ? 1 : -1;
}

/* 0 until known whether the kernel answers PROCMAP_QUERY, then 1 or -1 */
static _Atomic int has_query;

/* The search s, by PROCMAP_QUERY if the kernel has it and text_only is 0,
 * else by the text: whether it found. */
static int search(line_scan *s, int text_only) {
  int saved = errno; /* the program's, whatever happens here */
  long fd = raw_open("/proc/self/maps");
  int r = -1;
  if (fd >= 0) {
    r = 0;
    if (!text_only && s->by_query && atomic_load_explicit(&has_query, memory_order_relaxed) >= 0) {
      r = s->by_query(fd, s);
      atomic_store_explicit(&has_query, r == 0 ? -1 : 1, memory_order_relaxed);
    }
    if (r == 0) r = by_text(fd, s);
    raw_close(fd);
  }
  errno = saved;
  return r > 0;
}

static int mapping_of(uintptr_t addr, unsigned need, mt__mapping *out, int text_only) {
  line_scan s = {.addr = addr, .need = need, .out = out, .take = take_region,
                 .by_query = region_by_query};
  if (!search(&s, text_only)) return 0;
  if (&__libc_stack_end && __libc_stack_end) {
    uintptr_t main_start = (uintptr_t)__libc_stack_end;
    if (main_start >= out->lo && main_start < out->hi) out->guarded = 1;
  }
  return 1;
}

int mt__mapping_of(uintptr_t addr, mt__mapping *out) { return mapping_of(addr, NEED_RW, out, 0); }

int mt__mapping_of_text(uintptr_t addr, mt__mapping *out) {
  return mapping_of(addr, NEED_RW, out, 1);
}

static int readable(uintptr_t addr, size_t len, int text_only) {
  mt__mapping m;
  return len && addr + len > addr && mapping_of(addr, NEED_R, &m, text_only) &&
         addr + len <= m.hi;
}

int mt__readable(uintptr_t addr, size_t len) { return readable(addr, len, 0); }

int mt__readable_text(uintptr_t addr, size_t len) { return readable(addr, len, 1); }

static int file_mapping_of(uintptr_t addr, mt__file_mapping *out, int text_only) {
  line_scan s = {.addr = addr, .take = take_file, .by_query = file_by_query};
  if (!search(&s, text_only)) return 0;
  *out = file_mapping(&s.cur);
  return 1;
}

int mt__file_mapping_of(uintptr_t addr, mt__file_mapping *out) {
  return file_mapping_of(addr, out, 0);
}

int mt__file_mapping_of_text(uintptr_t addr, mt__file_mapping *out) {
  return file_mapping_of(addr, out, 1);
}

int mt__maps_find(mt__map_match *match, void *ctx, char *path, size_t cap, mt__file_mapping *out) {
  if (!cap) return 0;
  line_scan s = {.take = take_path, .path = path, .path_cap = cap - 1, .match = match, .ctx = ctx};
  if (!search(&s, 1)) return 0;
  *out = file_mapping(&s.cur);
  return 1;
}
