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

/* The mapping holding addr: 1, -1 if none, 0 if the kernel has no
 * PROCMAP_QUERY (the caller reads the text instead). */
static int query(long fd, uintptr_t addr, uintptr_t *lo, uintptr_t *hi, unsigned *flags) {
  struct procmap_query q = {.size = sizeof q, .query_addr = addr};
  if (syscall(SYS_ioctl, (int)fd, (unsigned long)PROCMAP_QUERY_CMD, &q) != 0)
    return errno == ENOENT ? -1 : 0;
  *lo = (uintptr_t)q.vma_start, *hi = (uintptr_t)q.vma_end, *flags = (unsigned)q.vma_flags;
  return 1;
}

/* What a mapping must allow: reading and writing (a stack), or reading
 * (code a walk reads). */
enum { NEED_RW = Q_READABLE | Q_WRITABLE, NEED_R = Q_READABLE };

static int by_query(long fd, uintptr_t addr, unsigned need, mt__mapping *out) {
  uintptr_t lo, hi, nlo, nhi;
  unsigned f, nf;
  int r = query(fd, addr, &lo, &hi, &f);
  if (r <= 0) return r;
  if ((f & need) != need) return -1;
  for (int k = 0; k < MAX_JOINED && query(fd, hi, &nlo, &nhi, &nf) > 0 && nlo == hi &&
                  (nf & need) == need;
       k++)
    hi = nhi;
  /* guarded: a mapping without access right below */
  out->lo = lo, out->hi = hi;
  out->guarded = need == NEED_RW && lo && query(fd, lo - 1, &nlo, &nhi, &nf) > 0 && nhi == lo &&
                 !(nf & (Q_READABLE | Q_WRITABLE | Q_EXECUTABLE));
  return 1;
}

/* The text: "lo-hi rwxp offset dev inode path\n" per mapping, in address
 * order. Read through a small buffer, one character at a time: only the
 * addresses and the permissions matter, and a line may straddle reads. */
typedef struct map_line {
  uintptr_t lo, hi;
  char perms[4];
} map_line;

typedef struct text_scan {
  uintptr_t addr;
  unsigned need;
  map_line cur, prev;
  int state, nperm, found;
  mt__mapping *out;
} text_scan;

enum { T_LO, T_HI, T_PERMS, T_REST };

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

static int allows(const map_line *l, unsigned need) {
  return l->perms[0] == 'r' && (!(need & Q_WRITABLE) || l->perms[1] == 'w');
}

/* One whole line's fields: 1 when the scan is over (found or passed). */
static int take_line(text_scan *s) {
  const map_line *l = &s->cur;
  if (!s->found) {
    if (s->addr < l->lo) return 1; /* passed it: not mapped */
    if (s->addr < l->hi) {
      if (!allows(l, s->need)) return 1;
      s->found = 1;
      s->out->lo = l->lo, s->out->hi = l->hi;
      s->out->guarded = s->prev.hi == l->lo && s->prev.perms[0] == '-' && s->prev.perms[1] == '-' &&
                        s->prev.perms[2] == '-';
      return 0;
    }
    s->prev = *l;
    return 0;
  }
  if (l->lo != s->out->hi || !allows(l, s->need) || s->found > MAX_JOINED) return 1;
  s->out->hi = l->hi, s->found++;
  return 0;
}

/* Feeds n characters: 1 when the scan is over. */
static int scan(text_scan *s, const char *p, long n) {
  for (long i = 0; i < n; i++) {
    char c = p[i];
    int v;
    switch (s->state) {
    case T_LO:
      if ((v = hexval(c)) >= 0) s->cur.lo = s->cur.lo << 4 | (uintptr_t)v;
      else s->state = c == '-' ? T_HI : T_REST;
      break;
    case T_HI:
      if ((v = hexval(c)) >= 0) {
        s->cur.hi = s->cur.hi << 4 | (uintptr_t)v;
      } else {
        s->state = c == ' ' ? T_PERMS : T_REST;
        s->nperm = 0;
      }
      break;
    case T_PERMS:
      s->cur.perms[s->nperm++] = c;
      if (s->nperm == 4) {
        if (take_line(s)) return 1;
        s->state = T_REST;
      }
      break;
    }
    if (c == '\n') { /* a line ends (early too, if malformed) */
      s->state = T_LO;
      s->cur = (map_line){0};
    }
  }
  return 0;
}

static int by_text(long fd, uintptr_t addr, unsigned need, mt__mapping *out) {
  text_scan s = {.addr = addr, .need = need, .out = out};
  char buf[512]; /* on the thread's stack, which may be small */
  long n;
  while ((n = syscall(SYS_read, (int)fd, buf, sizeof buf)) > 0)
    if (scan(&s, buf, n)) break;
  return s.found ? 1 : -1;
}

/* ---- the file mapped at an address (mt__file_mapping_of) ---- */

static int file_by_query(long fd, uintptr_t addr, mt__file_mapping *out) {
  struct procmap_query q = {.size = sizeof q, .query_addr = addr};
  if (syscall(SYS_ioctl, (int)fd, (unsigned long)PROCMAP_QUERY_CMD, &q) != 0)
    return errno == ENOENT ? -1 : 0;
  *out = (mt__file_mapping){(uintptr_t)q.vma_start, (uintptr_t)q.vma_end, q.vma_offset, q.inode,
                            q.dev_major, q.dev_minor, (q.vma_flags & Q_EXECUTABLE) != 0};
  return 1;
}

/* The text, "lo-hi perms offset major:minor inode path", a field at a time:
 * the hexadecimal ones each ended by its character, then the next. */
enum { F_LO, F_HI, F_PERMS, F_OFF, F_MAJ, F_MIN, F_INODE, F_REST };
static const char field_end[F_REST] = {[F_LO] = '-', [F_HI] = ' ', [F_OFF] = ' ', [F_MAJ] = ':',
                                       [F_MIN] = ' '};

typedef struct file_scan {
  uintptr_t addr;
  uint64_t f[F_REST]; /* the line's fields so far */
  int exec, state, nperm, found;
} file_scan;

/* The line's fields, whole: 1 when the scan is over (found, or passed). */
static int take_file_line(file_scan *s) {
  if (s->addr < s->f[F_LO]) return 1;
  if (s->addr >= s->f[F_HI]) return 0;
  s->found = 1;
  return 1;
}

static int scan_files(file_scan *s, const char *p, long n) {
  for (long i = 0; i < n; i++) {
    char c = p[i];
    int v = hexval(c);
    switch (s->state) {
    case F_PERMS:
      if (s->nperm++ == 2) s->exec = c == 'x';
      if (c == ' ') s->state = F_OFF;
      break;
    case F_INODE:
      if (c >= '0' && c <= '9') {
        s->f[F_INODE] = s->f[F_INODE] * 10 + (uint64_t)(c - '0');
      } else {
        if (take_file_line(s)) return 1;
        s->state = F_REST;
      }
      break;
    case F_REST:
      break;
    default: /* a hexadecimal field */
      if (v >= 0) s->f[s->state] = s->f[s->state] << 4 | (uint64_t)v;
      else s->state = c == field_end[s->state] ? s->state + 1 : F_REST;
    }
    if (c == '\n') { /* a line ends (early too, if malformed) */
      s->state = F_LO;
      s->nperm = s->exec = 0;
      memset(s->f, 0, sizeof s->f);
    }
  }
  return 0;
}

static int file_by_text(long fd, uintptr_t addr, mt__file_mapping *out) {
  file_scan s = {.addr = addr};
  char buf[512];
  long n;
  while ((n = syscall(SYS_read, (int)fd, buf, sizeof buf)) > 0)
    if (scan_files(&s, buf, n)) break;
  if (!s.found) return -1;
  *out = (mt__file_mapping){(uintptr_t)s.f[F_LO], (uintptr_t)s.f[F_HI], s.f[F_OFF], s.f[F_INODE],
                            (unsigned)s.f[F_MAJ], (unsigned)s.f[F_MIN], s.exec};
  return 1;
}

static int file_mapping_of(uintptr_t addr, mt__file_mapping *out, int text_only) {
  int saved = errno;
  long fd = raw_open("/proc/self/maps");
  int r = -1;
  if (fd >= 0) {
    r = text_only ? 0 : file_by_query(fd, addr, out);
    if (r == 0) r = file_by_text(fd, addr, out);
    raw_close(fd);
  }
  errno = saved;
  return r > 0;
}

int mt__file_mapping_of(uintptr_t addr, mt__file_mapping *out) {
  return file_mapping_of(addr, out, 0);
}

int mt__file_mapping_of_text(uintptr_t addr, mt__file_mapping *out) {
  return file_mapping_of(addr, out, 1);
}

/* 0 until known whether the kernel answers PROCMAP_QUERY, then 1 or -1 */
static _Atomic int has_query;

static int mapping_of(uintptr_t addr, unsigned need, mt__mapping *out, int text_only) {
  int saved = errno; /* the program's, whatever happens here */
  long fd = raw_open("/proc/self/maps");
  int r = -1;
  if (fd >= 0) {
    r = 0;
    if (!text_only && atomic_load_explicit(&has_query, memory_order_relaxed) >= 0) {
      r = by_query(fd, addr, need, out);
      atomic_store_explicit(&has_query, r == 0 ? -1 : 1, memory_order_relaxed);
    }
    if (r == 0) r = by_text(fd, addr, need, out);
    raw_close(fd);
  }
  if (r > 0 && &__libc_stack_end && __libc_stack_end) {
    uintptr_t main_start = (uintptr_t)__libc_stack_end;
    if (main_start >= out->lo && main_start < out->hi) out->guarded = 1;
  }
  errno = saved;
  return r > 0;
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
