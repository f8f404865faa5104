/* The process's perf map or jitdump (perfmap.h): its lines' (records')
 * ranges kept sorted by start address, read again from where they stopped
 * when the file grows; a name read from the file when asked. */
#include "perfmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/containers.h"
#include "tracer/unwind/stackmap.h"

/* 24 bytes a line, and 8 of reach. The names stay in the file: a
 * long-running node with --perf-basic-prof writes hundreds of thousands
 * of lines, whose names, kept, came to ~80 bytes a line (16 MB for a map
 * of 200k), where a handful of them are ever asked for. */
struct mt__perfmap_entry {
  uint64_t start, end; /* [start, end) */
  uint64_t at;         /* the name's offset in the file; the later line wins */
};

#define MAX_NAME MT__PERFMAP_MAX_NAME /* longer names are cut */
#define MAX_WALK 256  /* entries looked at below an address, at most */
#define CHUNK 65536

static int by_start(const void *a, const void *b) {
  const mt__perfmap_entry *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return (x->at > y->at) - (x->at < y->at);
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* A hexadecimal number at *p (an optional 0x, 1-16 digits), *p moved past
 * it; -1 if there is none or it does not fit 64 bits. */
static int parse_hex(const char **p, const char *end, uint64_t *out) {
  const char *s = *p;
  if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s += 2;
  uint64_t v = 0;
  int n = 0, d;
  for (; s < end && (d = hex_digit(*s)) >= 0; s++, n++) {
    if (n == 16) return -1;
    v = v << 4 | (uint64_t)d;
  }
  if (n == 0) return -1;
  *p = s;
  *out = v;
  return 0;
}

/* One line [p, end) (without its newline), at offset `at` of the file,
 * appended as an entry; 0 if it does not parse, -1 when out of memory. */
static int add_line(mt__perfmap *pm, const char *p, const char *end, off_t at) {
  const char *line = p;
  uint64_t start, size;
  if (parse_hex(&p, end, &start) != 0 || p == end || *p != ' ') return 0;
  while (p < end && *p == ' ') p++;
  if (parse_hex(&p, end, &size) != 0 || p == end || *p != ' ') return 0;
  while (p < end && *p == ' ') p++;
  if (end > p && end[-1] == '\r') end--;
  if (size == 0 || start > UINT64_MAX - size || p == end) return 0;
  if (mt__reserve((void **)&pm->v, pm->n, &pm->cap, sizeof *pm->v)) return -1;
  pm->v[pm->n++] = (mt__perfmap_entry){start, start + size, (uint64_t)(at + (p - line))};
  return 0;
}

/* Entries [0, old) sorted, [old, n) new: sorts the new ones and merges
 * (a lookup miss after the runtime wrote a few lines costs their sort and
 * one pass, not a sort of the whole map). Then the reach of each. */
static int merge_new(mt__perfmap *pm, size_t old) {
  size_t fresh = pm->n - old;
  if (fresh) {
    qsort(pm->v + old, fresh, sizeof *pm->v, by_start);
    if (old && by_start(&pm->v[old - 1], &pm->v[old]) > 0) {
      mt__perfmap_entry *tmp = malloc(fresh * sizeof *tmp);
      if (!tmp) return -1;
      memcpy(tmp, pm->v + old, fresh * sizeof *tmp);
      size_t i = old, j = fresh, k = pm->n; /* merged from the top down */
      while (j > 0) {
        if (i > 0 && by_start(&pm->v[i - 1], &tmp[j - 1]) > 0) pm->v[--k] = pm->v[--i];
        else pm->v[--k] = tmp[--j];
      }
      free(tmp);
    }
  }
  uint64_t *r = realloc(pm->reach, (pm->n ? pm->n : 1) * sizeof *r);
  if (!r) return -1;
  pm->reach = r;
  uint64_t reach = 0;
  for (size_t i = 0; i < pm->n; i++) {
    if (pm->v[i].end > reach) reach = pm->v[i].end;
    r[i] = reach;
  }
  return 0;
}

/* pread, again when a signal interrupted it. */
static ssize_t read_at(int fd, void *buf, size_t len, off_t at) {
  ssize_t r;
  while ((r = pread(fd, buf, len, at)) < 0 && errno == EINTR) {
  }
  return r;
}

/* Whether bytes [at - len, at) of fd are still `want`. */
static int still_there(int fd, off_t at, const unsigned char *want, unsigned len) {
  unsigned char got[sizeof ((mt__perfmap *)0)->tail];
  return read_at(fd, got, len, at - (off_t)len) == (ssize_t)len && memcmp(got, want, len) == 0;
}

/* ---- jitdump (perf's tools/perf/Documentation/jitdump-specification.txt) ----
 *
 * A header, then records, in the writer's byte order (the magic tells it:
 * only this machine's is read). The header: magic u32, version u32, its
 * own size u32, the ELF machine u32, padding u32, pid u32, timestamp u64,
 * flags u64. A record: id u32, its whole size u32 (fields, name, code),
 * timestamp u64, then the id's fields. JIT_CODE_LOAD's: pid u32, tid u32,
 * vma u64, code_addr u64, code_size u64, code_index u64, the name (ended by
 * a NUL), then the code's bytes. The others (code moved, line tables,
 * unwinding tables, close) are skipped by their size. */
#define JITDUMP_MAGIC 0x4A695444u /* "JiTD" */
#define JD_HEADER_MIN 40
#define JD_RECORD_HEAD 16
#define JD_CODE_LOAD 0
#define JD_LOAD_NAME 40 /* the name's offset after the record's head */

static uint32_t rd32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v); /* this machine's order, as the magic said */
  return v;
}

static uint64_t rd64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* The records of the jitdump open at fd from *at (a record's start) up to
 * size, the last one whole: each code load an entry, its name's offset
 * kept. *at: where reading stopped (a record not whole yet, or one too
 * small to be one: nothing after it is read). 0, or -1 when out of memory. */
static int read_records(mt__perfmap *pm, int fd, off_t size, off_t *at, unsigned char *buf) {
  for (;;) {
    ssize_t got = read_at(fd, buf, CHUNK, *at);
    if (got < JD_RECORD_HEAD) return 0;
    size_t p = 0, n = (size_t)got;
    while (p + JD_RECORD_HEAD <= n) {
      uint32_t id = rd32(buf + p), len = rd32(buf + p + 4);
      if (len < JD_RECORD_HEAD || (uint64_t)len > (uint64_t)(size - *at) - p) {
        *at += (off_t)p; /* not a record, or not whole yet */
        return 0;
      }
      if (id == JD_CODE_LOAD && len > JD_RECORD_HEAD + JD_LOAD_NAME) {
        size_t name = p + JD_RECORD_HEAD + JD_LOAD_NAME, lim = p + len < n ? p + len : n;
        const unsigned char *nul = name < lim ? memchr(buf + name, 0, lim - name) : NULL;
        if (!nul && p > 0 && p + len > n) break; /* read again from this record */
        /* (a name the buffer cannot hold, or not ended in its record: none) */
        uint64_t start = nul ? rd64(buf + p + JD_RECORD_HEAD + 16) : 0,
                 bytes = nul ? rd64(buf + p + JD_RECORD_HEAD + 24) : 0;
        if (nul && nul > buf + name && bytes && start <= UINT64_MAX - bytes) {
          if (mt__reserve((void **)&pm->v, pm->n, &pm->cap, sizeof *pm->v)) {
            *at += (off_t)p;
            return -1;
          }
          pm->v[pm->n++] = (mt__perfmap_entry){start, start + bytes, (uint64_t)*at + name};
        }
      }
      p += len; /* may pass the buffer's end: the next read starts there */
    }
    *at += (off_t)p;
  }
}

/* The jitdump's header, if the map at fd is one (its magic first): 1 and
 * *records, where its records start; 0 if the file is text; -1 if it
 * cannot be told yet (shorter than a header), or the header is not one. */
static int jitdump_header(int fd, off_t size, off_t *records) {
  unsigned char h[JD_HEADER_MIN];
  ssize_t got = read_at(fd, h, sizeof h, 0);
  if (got < 4) return -1;
  if (rd32(h) != JITDUMP_MAGIC) return 0;
  if (got < JD_HEADER_MIN) return -1;
  uint32_t len = rd32(h + 8);
  if (len < JD_HEADER_MIN || (off_t)len > size) return -1;
  *records = (off_t)len;
  return 1;
}

/* What was read of the map forgotten, its path kept: to read it anew.
 * Every line read then is new to whoever watches (fresh_all). */
static void forget(mt__perfmap *pm) {
  char path[sizeof pm->path];
  memcpy(path, pm->path, sizeof path);
  int watch = pm->watch;
  mt__perfmap_clear(pm);
  memcpy(pm->path, path, sizeof path);
  pm->watch = watch;
  pm->fresh_all = watch;
}

/* Entries [old, n) just read, noted for the watcher (perfmap.h); when
 * out of memory, noted as "everything". */
static void note_fresh(mt__perfmap *pm, size_t old) {
  if (!pm->watch || pm->fresh_all) return;
  for (size_t i = old; i < pm->n; i++) {
    if (mt__reserve((void **)&pm->fresh, pm->nfresh, &pm->fresh_cap, sizeof *pm->fresh)) {
      pm->fresh_all = 1;
      return;
    }
    pm->fresh[pm->nfresh++] = (mt__perfmap_range){pm->v[i].start, pm->v[i].end};
  }
}

/* Keeps the last bytes read, [at - tail_len, at), to tell later whether
 * the file was written anew. */
static void keep_tail(mt__perfmap *pm, int fd, off_t at) {
  unsigned len = at < (off_t)sizeof pm->tail ? (unsigned)at : (unsigned)sizeof pm->tail;
  pm->tail_len = read_at(fd, pm->tail, len, at - (off_t)len) == (ssize_t)len ? len : 0;
}

/* Reads the lines of the map open at fd (st: its status) written since
 * the last read, all of them if the file was written anew (perfmap.h); 0,
 * or -1 (not grown, or out of memory: what was read stays). */
static int read_more(mt__perfmap *pm, int fd, const struct stat *st) {
  if (pm->read_to > 0 &&
      (st->st_dev != pm->dev || st->st_ino != pm->ino || st->st_size < pm->read_to ||
       !still_there(fd, pm->read_to, pm->tail, pm->tail_len)))
    forget(pm);
  if (st->st_size <= pm->read_to) return -1;
  off_t at = pm->read_to;
  if (at == 0) {
    int kind = jitdump_header(fd, st->st_size, &at);
    if (kind < 0) return -1;
    pm->jitdump = kind;
  }
  pm->dev = st->st_dev;
  pm->ino = st->st_ino;
  char *buf = malloc(CHUNK);
  if (!buf) return -1;
  size_t old = pm->n, have = 0;
  int rc = 0;
  if (pm->jitdump) {
    rc = read_records(pm, fd, st->st_size, &at, (unsigned char *)buf);
    goto read;
  }
  for (;;) {
    ssize_t got = read_at(fd, buf + have, CHUNK - have, at + (off_t)have);
    if (got <= 0) break;
    have += (size_t)got;
    const char *p = buf, *end = buf + have, *nl;
    while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
      if (add_line(pm, p, nl, at + (p - buf)) != 0) {
        rc = -1;
        break;
      }
      p = nl + 1;
    }
    size_t used = (size_t)(p - buf);
    at += (off_t)used;
    have -= used;
    if (rc) break;
    if (have == CHUNK) { /* a line longer than the buffer: skipped whole, */
      off_t skip = at + CHUNK;
      const char *nl = NULL;
      ssize_t r;
      while ((r = read_at(fd, buf, CHUNK, skip)) > 0 && !(nl = memchr(buf, '\n', (size_t)r)))
        skip += r;
      if (!nl) break; /* or, not ended yet, read again later */
      at = skip + (nl - buf) + 1;
      have = 0;
      continue;
    }
    memmove(buf, p, have); /* the partial last line: read again next time */
  }
read:
  free(buf);
  pm->read_to = at;
  keep_tail(pm, fd, at);
  note_fresh(pm, old);
  if (merge_new(pm, old) != 0) rc = -1;
  return rc;
}

/* The entry the map gives addr: of those holding it, the line written
 * last; NULL if none. */
static const mt__perfmap_entry *find(const mt__perfmap *pm, uint64_t addr) {
  size_t lo = 0, hi = pm->n; /* entries [0, lo) start at or below addr */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (pm->v[mid].start <= addr) lo = mid + 1;
    else hi = mid;
  }
  const mt__perfmap_entry *best = NULL;
  for (size_t i = lo, walked = 0; i-- > 0 && pm->reach[i] > addr && walked < MAX_WALK; walked++)
    if (addr < pm->v[i].end && (!best || pm->v[i].at > best->at)) best = &pm->v[i];
  return best;
}

/* e's name, read from fd into pm->name; 0, or -1 if its line (record) is
 * no longer there whole. */
static int read_name(mt__perfmap *pm, int fd, const mt__perfmap_entry *e) {
  ssize_t got = read_at(fd, pm->name, MAX_NAME, (off_t)e->at);
  if (got <= 0) return -1;
  char *nl = memchr(pm->name, pm->jitdump ? '\0' : '\n', (size_t)got);
  size_t len = nl ? (size_t)(nl - pm->name) : (size_t)got;
  if (!nl && got < MAX_NAME) return -1; /* the file is shorter than it was */
  if (nl && len > 0 && pm->name[len - 1] == '\r' && !pm->jitdump) len--;
  pm->name[len] = '\0';
  return len ? 0 : -1;
}

/* The map at path opened, *st its status: its descriptor, or -1 (none, not
 * a regular file, another user's). Another path than the last one's
 * forgets what was read. */
static int open_map(mt__perfmap *pm, const char *path, struct stat *st) {
  if (strlen(path) >= sizeof pm->path) return -1;
  if (pm->path[0] && strcmp(pm->path, path) != 0) {
    forget(pm);
    pm->path[0] = '\0';
  }
  if (!pm->path[0]) strcpy(pm->path, path);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -1;
  if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) ||
      (st->st_uid != geteuid() && st->st_uid != 0)) {
    close(fd);
    return -1;
  }
  return fd;
}

void mt__perfmap_refresh(mt__perfmap *pm, const char *path) {
  struct stat st;
  /* one system call when nothing was written (the usual case): the same
   * file, no larger (a file written anew no larger than it was is read
   * at the next lookup, which checks its last bytes) */
  if (pm->read_to > 0 && strcmp(pm->path, path) == 0 && stat(path, &st) == 0 &&
      st.st_dev == pm->dev && st.st_ino == pm->ino && st.st_size == pm->read_to)
    return;
  int fd = open_map(pm, path, &st);
  if (fd < 0) return;
  read_more(pm, fd, &st);
  close(fd);
}

const char *mt__perfmap_name(mt__perfmap *pm, const char *path, uint64_t addr) {
  struct stat st;
  int fd = open_map(pm, path, &st);
  if (fd < 0) return NULL;
  const char *name = NULL;
  /* what was written since, first: code replaced at these addresses is
   * named by its new line (an open, a stat and two or three reads per code
   * named this way). Then the name, unless the file was written anew
   * between the two reads: then once more. */
  for (int tries = 0; tries < 2 && !name; tries++) {
    if (tries && fstat(fd, &st) != 0) break;
    read_more(pm, fd, &st);
    const mt__perfmap_entry *e = find(pm, addr);
    if (!e) break;
    if (read_name(pm, fd, e) == 0 && still_there(fd, pm->read_to, pm->tail, pm->tail_len))
      name = pm->name;
  }
  close(fd);
  return name;
}

/* A decimal number of 1-9 digits ending at end (exclusive), scanning back;
 * its first digit's position, or NULL. */
static const char *number_before(const char *begin, const char *end, unsigned *out) {
  const char *p = end;
  while (p > begin && p[-1] >= '0' && p[-1] <= '9' && end - p < 9) p--;
  if (p == end || (p > begin && p[-1] >= '0' && p[-1] <= '9')) return NULL;
  unsigned v = 0;
  for (const char *q = p; q < end; q++) v = v * 10 + (unsigned)(*q - '0');
  *out = v;
  return p;
}

/* Where V8's kind of JavaScript code ("JS:", "Eval:", "LazyCompile:")
 * ends in the function part [name, end), or NULL if it has none (other
 * kinds have no tier mark: "RegExp:^a+" is a pattern). */
static const char *v8_kind_end(const char *name, const char *end) {
  static const char *const kinds[] = {"JS:", "Function:", "LazyCompile:", "Script:", "Eval:"};
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
    size_t n = strlen(kinds[i]);
    if ((size_t)(end - name) >= n && memcmp(name, kinds[i], n) == 0) return name + n;
  }
  return NULL;
}

void mt__perfmap_where_of(const char *name, mt__perfmap_where *w) {
  size_t len = strlen(name);
  *w = (mt__perfmap_where){len, NULL, 0, 0, 0, 0, 0};
  if (strncmp(name, "py::", 4) == 0) { /* py::QUALNAME:FILE */
    const char *colon = strchr(name + 4, ':');
    if (colon && colon > name + 4 && colon[1]) {
      w->fn_len = (size_t)(colon - name);
      w->file = colon + 1;
      w->file_len = len - w->fn_len - 1;
    }
    return;
  }
  /* ... FILE:LINE[:COL], the last word */
  const char *space = strrchr(name, ' ');
  if (!space || space == name) return;
  const char *word = space + 1, *end = name + len, *p;
  unsigned a, b;
  if (!(p = number_before(word, end, &a)) || p == word || p[-1] != ':') return;
  end = p - 1; /* before the last number's colon */
  unsigned line = a, col = 0;
  const char *q = number_before(word, end, &b);
  if (q && q > word && q[-1] == ':') {
    line = b, col = a;
    end = q - 1;
  }
  /* an empty FILE only with LINE:COL, as V8 writes a script without a name
   * (new Function, an unnamed eval): "JS:* :1:20" */
  if (end == word && !col) return;
  const char *fn_end = space;
  while (fn_end > name && fn_end[-1] == ' ') fn_end--;
  if (fn_end == name) return;
  *w = (mt__perfmap_where){(size_t)(fn_end - name), word, (size_t)(end - word), line, col, 0, 0};
  const char *k = v8_kind_end(name, fn_end);
  if (k) {
    if (k < fn_end && strchr("~^+*", *k)) w->mark = (size_t)(k++ - name); /* tier */
    w->anonymous = k == fn_end;
  }
}

/* head, this process's pid in decimal, then tail, into buf ("" if cap is
 * too small). By hand: snprintf takes ~2 KiB of stack, and this runs on a
 * sampling thread's (jitcodes.c), which may be a 16 KiB one nearly used up. */
static void with_pid(char *buf, size_t cap, const char *head, const char *tail) {
  char digits[24];
  size_t n = 0, hl = strlen(head), tl = strlen(tail);
  for (unsigned long pid = (unsigned long)getpid(); n == 0 || pid; pid /= 10)
    digits[n++] = (char)('0' + pid % 10);
  if (cap < hl + n + tl + 1) {
    if (cap) buf[0] = '\0';
    return;
  }
  memcpy(buf, head, hl);
  char *p = buf + hl;
  while (n) *p++ = digits[--n];
  memcpy(p, tail, tl + 1);
}

void mt__perfmap_path(char *buf, size_t cap) { with_pid(buf, cap, "/tmp/perf-", ".map"); }

/* Whether path is a jitdump's of this process (ctx: "/jit-PID.dump"). */
static int is_jitdump(const mt__file_mapping *m, const char *path, void *ctx) {
  (void)m;
  size_t n = strlen(path), tail = strlen(ctx);
  return path[0] == '/' && n >= tail && memcmp(path + n - tail, ctx, tail) == 0;
}

int mt__jitdump_path(char *buf, size_t cap) {
  char tail[48];
  with_pid(tail, sizeof tail, "/jit-", ".dump");
  mt__file_mapping m;
  return mt__maps_find(is_jitdump, tail, buf, cap, &m);
}

void mt__perfmap_clear(mt__perfmap *pm) {
  free(pm->v);
  free(pm->reach);
  free(pm->fresh);
  memset(pm, 0, sizeof *pm);
}
