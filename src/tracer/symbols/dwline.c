/* A unit's DWARF line table, read for the row at an address (dwline.h).
 *
 * The program runs once when the table is read: it is checked as libdw
 * checks it (a table libdw would refuse is refused here, the caller then
 * asks libdw and gets its refusal), its sequences are noted (their first
 * and end addresses) and a resume point is kept at every sequence's first
 * row and every LINE_POINT_EVERY rows after it. Within a sequence the
 * addresses only go up (a table where they do not is not taken), so the
 * rows of a sequence at or below an address follow from the last point at
 * or below it. */
#include "dwline.h"

#include <stdlib.h>
#include <string.h>

#include "dwread.h"
#include "base/containers.h"

#define LINE_POINT_EVERY 32

/* The DWARF constants this reader uses (dwarf.h's names). */
enum {
  LNS_copy = 1, LNS_advance_pc, LNS_advance_line, LNS_set_file, LNS_set_column,
  LNS_negate_stmt, LNS_set_basic_block, LNS_const_add_pc, LNS_fixed_advance_pc,
  LNS_set_prologue_end, LNS_set_epilogue_begin, LNS_set_isa
};
enum { LNE_end_sequence = 1, LNE_set_address = 2, LNE_define_file = 3 };
enum { LNCT_path = 1, LNCT_directory_index = 2 };
enum {
  FORM_block2 = 0x03, FORM_block4 = 0x04, FORM_data2 = 0x05, FORM_data4 = 0x06,
  FORM_data8 = 0x07, FORM_string = 0x08, FORM_block = 0x09, FORM_block1 = 0x0a,
  FORM_data1 = 0x0b, FORM_sdata = 0x0d, FORM_strp = 0x0e, FORM_udata = 0x0f,
  FORM_sec_offset = 0x17, FORM_strx = 0x1a, FORM_data16 = 0x1e, FORM_line_strp = 0x1f,
  FORM_strx1 = 0x25, FORM_strx2 = 0x26, FORM_strx3 = 0x27, FORM_strx4 = 0x28
};

#define NO_DIR UINT32_MAX /* a file name used as it is */

typedef struct lt_file {
  const char *name;
  uint32_t dir;
} lt_file;

/* The decoder's registers that make a row (the others never show). */
typedef struct regs {
  uint64_t addr;
  int64_t line;
  uint32_t file, column;
} regs;

/* A resume point: a row, and where the program goes on after it. */
typedef struct point {
  uint64_t addr;
  uint32_t off, file;
  int32_t line;
  uint32_t column;
} point;

typedef struct seq {
  uint64_t lo, hi; /* its first row's address, its end marker's */
  uint32_t first, n; /* its points */
} seq;

struct mt__line_table {
  const unsigned char *prog, *end;
  unsigned addr_size;
  uint8_t min_len, line_range, opcode_base;
  int8_t line_base;
  const unsigned char *std_lengths; /* of opcodes 1 .. opcode_base - 1 */
  /* Each special opcode's two advances, worked out once: the division by
   * line_range was most of a row's decoding. */
  int16_t special_line[256];
  uint16_t special_addr[256];
  const char **dirs;
  size_t ndirs;
  lt_file *files;
  size_t nfiles;
  seq *seqs;
  size_t nseqs;
  point *points;
  size_t npoints, rows;
  uint64_t max_addr; /* of every row: libdw marks the last row there an end */
};

/* The operands of the standard opcodes (DWARF 4 6.2.5.2): libdw refuses a
 * table whose header says otherwise for one it knows. */
static const uint8_t standard_lengths[] = {0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1};

enum { ERR = -1, DONE = 0, ROW = 1, END = 2 };

static uint64_t fixed(cursor *c, unsigned n) {
  uint64_t v = 0;
  unsigned char b[8];
  if (n > 8 || !take(c, b, n)) return c->bad = 1, 0;
  for (unsigned i = n; i-- > 0;) v = v << 8 | b[i]; /* little-endian */
  return v;
}

/* A NUL-terminated string at [p, end), or NULL. */
static const char *string_at(const unsigned char *p, const unsigned char *end) {
  return p < end && memchr(p, 0, (size_t)(end - p)) ? (const char *)p : NULL;
}

/* A string of form `form` at c (offsets of offset_size bytes); NULL for a
 * form not read here. */
static const char *form_string(cursor *c, unsigned form, unsigned offset_size,
                               const mt__line_sections *sec) {
  if (form == FORM_string) {
    const char *s = string_at(c->p, c->end);
    if (!s) return c->bad = 1, NULL;
    c->p += strlen(s) + 1;
    return s;
  }
  if (form != FORM_strp && form != FORM_line_strp) return NULL;
  uint64_t off = fixed(c, offset_size);
  const unsigned char *base = form == FORM_strp ? sec->str : sec->line_str;
  size_t size = form == FORM_strp ? sec->str_size : sec->line_str_size;
  if (c->bad || !base || off >= size) return NULL;
  return string_at(base + off, base + size);
}

/* Passes over a value of form `form`; 0 if the form is not one read here. */
static int skip_form(cursor *c, unsigned form, unsigned offset_size) {
  size_t n;
  switch (form) {
  case FORM_data1: case FORM_strx1: n = 1; break;
  case FORM_data2: case FORM_strx2: n = 2; break;
  case FORM_strx3: n = 3; break;
  case FORM_data4: case FORM_strx4: n = 4; break;
  case FORM_data8: n = 8; break;
  case FORM_data16: n = 16; break;
  case FORM_strp: case FORM_line_strp: case FORM_sec_offset: n = offset_size; break;
  case FORM_udata: case FORM_strx: uleb(c); return !c->bad;
  case FORM_sdata: sleb(c); return !c->bad;
  case FORM_string: {
    const char *s = string_at(c->p, c->end);
    if (!s) return c->bad = 1, 0;
    n = strlen(s) + 1;
    break;
  }
  case FORM_block1: n = (size_t)fixed(c, 1); break;
  case FORM_block2: n = (size_t)fixed(c, 2); break;
  case FORM_block4: n = (size_t)fixed(c, 4); break;
  case FORM_block: n = (size_t)uleb(c); break;
  default: return 0;
  }
  if (c->bad || (size_t)(c->end - c->p) < n) return c->bad = 1, 0;
  c->p += n;
  return 1;
}

/* An unsigned constant of form `form` (a directory index). */
static int form_index(cursor *c, unsigned form, uint64_t *v) {
  switch (form) {
  case FORM_data1: *v = fixed(c, 1); break;
  case FORM_data2: *v = fixed(c, 2); break;
  case FORM_data4: *v = fixed(c, 4); break;
  case FORM_data8: *v = fixed(c, 8); break;
  case FORM_udata: *v = uleb(c); break;
  default: return 0;
  }
  return !c->bad;
}

/* A DWARF 5 entry format: which of its forms is the path, and the
 * directory index (-1: none). 0 if malformed. */
typedef struct entry_format {
  unsigned n;
  unsigned forms[256];
  int path, dir;
} entry_format;

static int read_format(cursor *c, entry_format *f) {
  f->n = u8(c);
  f->path = f->dir = -1;
  for (unsigned i = 0; i < f->n; i++) {
    uint64_t kind = uleb(c), form = uleb(c);
    if (c->bad || form > 0xffff) return 0;
    f->forms[i] = (unsigned)form;
    if (kind == LNCT_path) f->path = (int)i;
    else if (kind == LNCT_directory_index) f->dir = (int)i;
  }
  return 1;
}

static int grow_files(mt__line_table *t, size_t *cap) {
  return mt__reserve((void **)&t->files, t->nfiles, cap, sizeof *t->files) == 0;
}

/* The header's directories and files (DWARF 2-4). */
static int read_names_v4(mt__line_table *t, cursor *c, const char *comp_dir) {
  const unsigned char *start = c->p;
  size_t ndirs = 1; /* directory 0: the unit's */
  for (;;) {
    const char *s = string_at(c->p, c->end);
    if (!s) return 0;
    c->p += strlen(s) + 1;
    if (!*s) break;
    ndirs++;
  }
  if (!(t->dirs = malloc(ndirs * sizeof *t->dirs))) return 0;
  t->ndirs = ndirs;
  t->dirs[0] = comp_dir;
  const unsigned char *p = start;
  for (size_t i = 1; i < ndirs; i++) {
    t->dirs[i] = (const char *)p;
    p += strlen((const char *)p) + 1;
  }
  size_t cap = 0;
  if (!grow_files(t, &cap)) return 0;
  t->files[t->nfiles++] = (lt_file){"???", NO_DIR}; /* file 0: none before DWARF 5 */
  for (;;) {
    const char *name = string_at(c->p, c->end);
    if (!name) return 0;
    c->p += strlen(name) + 1;
    if (!*name) break;
    uint64_t dir = uleb(c);
    uleb(c); /* modification time */
    uleb(c); /* length */
    if (c->bad || dir >= ndirs || !grow_files(t, &cap)) return 0;
    t->files[t->nfiles++] = (lt_file){name, (uint32_t)dir};
  }
  return 1;
}

/* The header's directories and files (DWARF 5). */
static int read_names_v5(mt__line_table *t, cursor *c, unsigned offset_size,
                         const mt__line_sections *sec) {
  entry_format f;
  if (!read_format(c, &f) || (f.n && f.path < 0)) return 0;
  uint64_t ndirs = uleb(c);
  if (c->bad || (!f.n && ndirs) || (f.n && ndirs > (uint64_t)(c->end - c->p) / f.n)) return 0;
  if (ndirs && !(t->dirs = malloc((size_t)ndirs * sizeof *t->dirs))) return 0;
  t->ndirs = (size_t)ndirs;
  for (size_t i = 0; i < t->ndirs; i++) {
    const char *dir = NULL;
    for (unsigned m = 0; m < f.n; m++) {
      if ((int)m == f.path) {
        if (!(dir = form_string(c, f.forms[m], offset_size, sec))) return 0;
      } else if (!skip_form(c, f.forms[m], offset_size)) {
        return 0;
      }
    }
    if (!dir) return 0;
    t->dirs[i] = dir;
  }
  if (!read_format(c, &f) || (f.n && (f.path < 0 || f.dir < 0))) return 0;
  uint64_t nfiles = uleb(c);
  if (c->bad || (!f.n && nfiles) || (f.n && nfiles > (uint64_t)(c->end - c->p) / f.n)) return 0;
  size_t cap = 0;
  if (!grow_files(t, &cap)) return 0;
  t->files[t->nfiles++] = (lt_file){"???", NO_DIR}; /* replaced by file 0 if any */
  for (uint64_t i = 0; i < nfiles; i++) {
    const char *name = NULL;
    uint64_t dir = UINT64_MAX;
    for (unsigned m = 0; m < f.n; m++) {
      if ((int)m == f.path) {
        if (!(name = form_string(c, f.forms[m], offset_size, sec))) return 0;
      } else if ((int)m == f.dir) {
        if (!form_index(c, f.forms[m], &dir)) return 0;
      } else if (!skip_form(c, f.forms[m], offset_size)) {
        return 0;
      }
    }
    if (!name || dir >= t->ndirs) return 0;
    if (i > 0 && !grow_files(t, &cap)) return 0;
    t->files[i == 0 ? 0 : t->nfiles++] = (lt_file){name, (uint32_t)dir};
  }
  return 1;
}

/* Runs the program from c to its next row: ROW, END (an end of sequence;
 * the caller resets the registers), DONE (the program's end), ERR. */
static inline __attribute__((always_inline)) int next_row(const mt__line_table *t, cursor *c,
                                                          regs *r) {
  while (c->p < c->end) {
    unsigned op = *c->p++;
    if (op >= t->opcode_base) { /* special: both advances, and a row */
      r->line += t->special_line[op];
      r->addr += t->special_addr[op];
      return ROW;
    }
    switch (op) {
    case 0: { /* extended */
      uint64_t len = uleb(c);
      if (c->bad || len == 0 || len > (uint64_t)(c->end - c->p)) return ERR;
      const unsigned char *next = c->p + len;
      unsigned sub = u8(c);
      if (sub == LNE_end_sequence) {
        c->p = next;
        return END;
      }
      if (sub == LNE_set_address) {
        if (len != 1 + (uint64_t)t->addr_size) return ERR;
        r->addr = fixed(c, t->addr_size);
      } else if (sub == LNE_define_file) {
        return ERR; /* changes the files as the program goes: libdw's */
      }
      c->p = next; /* DW_LNE_set_discriminator and others: nothing shown */
      break;
    }
    case LNS_copy: return ROW;
    case LNS_advance_pc: {
      uint64_t v = uleb(c);
      if (v > UINT32_MAX) return ERR;
      r->addr += (uint64_t)t->min_len * v;
      break;
    }
    case LNS_advance_line: {
      int64_t v = sleb(c);
      if (v < INT32_MIN || v > INT32_MAX) return ERR;
      r->line += v;
      break;
    }
    case LNS_set_file: {
      uint64_t v = uleb(c);
      if (v > UINT32_MAX) return ERR;
      r->file = (uint32_t)v;
      break;
    }
    case LNS_set_column: {
      uint64_t v = uleb(c);
      if (v > 0xffff) return ERR; /* libdw keeps 16 bits, and refuses more */
      r->column = (uint32_t)v;
      break;
    }
    case LNS_const_add_pc:
      r->addr += (uint64_t)t->min_len * ((255u - t->opcode_base) / t->line_range);
      break;
    case LNS_fixed_advance_pc: r->addr += fixed(c, 2); break;
    case LNS_set_isa:
      if (uleb(c) > 0xff) return ERR; /* libdw keeps 8 bits */
      break;
    case LNS_negate_stmt: case LNS_set_basic_block: case LNS_set_prologue_end:
    case LNS_set_epilogue_begin:
      break;
    default: /* an opcode of a later standard: its operands, unread */
      for (unsigned n = t->std_lengths[op - 1]; n > 0; n--) uleb(c);
    }
    if (c->bad) return ERR;
  }
  return DONE;
}

static regs initial(void) { return (regs){0, 1, 1, 0}; }

static int push_point(mt__line_table *t, size_t *cap, const regs *r, const cursor *c) {
  if (mt__reserve((void **)&t->points, t->npoints, cap, sizeof *t->points)) return 0;
  t->points[t->npoints++] =
      (point){r->addr, (uint32_t)(c->p - t->prog), r->file, (int32_t)r->line, r->column};
  return 1;
}

/* Runs the whole program: its sequences and resume points. */
static int scan(mt__line_table *t) {
  cursor c = {t->prog, t->end, 0};
  regs r = initial();
  size_t seq_cap = 0, point_cap = 0, in_seq = 0;
  uint64_t last = 0;
  for (;;) {
    int k = next_row(t, &c, &r);
    if (k == ERR) return 0;
    if (k == DONE) return in_seq == 0; /* rows with no end after them: libdw's */
    if (in_seq ? r.addr < last : 0) return 0; /* going down: libdw's sort */
    if (r.line < INT32_MIN || r.line > INT32_MAX) return 0;
    if (!in_seq) {
      if (mt__reserve((void **)&t->seqs, t->nseqs, &seq_cap, sizeof *t->seqs)) return 0;
      t->seqs[t->nseqs] = (seq){r.addr, r.addr, (uint32_t)t->npoints, 0};
    }
    last = r.addr;
    t->rows++;
    if (r.addr > t->max_addr) t->max_addr = r.addr;
    seq *s = &t->seqs[t->nseqs];
    if (k == END) {
      s->hi = r.addr;
      s->n = (uint32_t)(t->npoints - s->first);
      t->nseqs++;
      in_seq = 0;
      r = initial();
      continue;
    }
    if (in_seq++ % LINE_POINT_EVERY == 0 && !push_point(t, &point_cap, &r, &c)) return 0;
  }
}

mt__line_table *mt__line_table_read(const mt__line_sections *sec, uint64_t offset,
                                    const char *comp_dir, unsigned addr_size) {
  if (!sec->line || offset >= sec->line_size || (addr_size != 4 && addr_size != 8)) return NULL;
  cursor c = {sec->line + offset, sec->line + sec->line_size, 0};
  unsigned offset_size = 4;
  uint64_t unit_length = fixed(&c, 4);
  if (unit_length == 0xffffffff) {
    offset_size = 8;
    unit_length = fixed(&c, 8);
  }
  if (c.bad || unit_length > (uint64_t)(c.end - c.p)) return NULL;
  c.end = c.p + unit_length;
  unsigned version = (unsigned)fixed(&c, 2);
  if (c.bad || version < 2 || version > 5) return NULL;
  if (version >= 5 && (u8(&c) != addr_size || u8(&c) != 0)) return NULL;
  uint64_t header_length = fixed(&c, offset_size);
  if (c.bad || header_length > (uint64_t)(c.end - c.p)) return NULL;
  const unsigned char *header_end = c.p + header_length;

  mt__line_table *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->addr_size = addr_size;
  t->min_len = u8(&c);
  unsigned max_ops = version >= 4 ? u8(&c) : 1;
  u8(&c); /* default_is_stmt: rows are found whatever it is */
  t->line_base = (int8_t)u8(&c);
  t->line_range = u8(&c);
  t->opcode_base = u8(&c);
  t->std_lengths = c.p;
  int ok = !c.bad && max_ops == 1 && t->line_range != 0 && t->opcode_base > 0 &&
           (size_t)(c.end - c.p) >= t->opcode_base - 1u;
  for (unsigned op = 1; ok && op < t->opcode_base && op < sizeof standard_lengths; op++)
    ok = t->std_lengths[op - 1] == standard_lengths[op];
  for (unsigned op = t->opcode_base; ok && op < 256; op++) {
    unsigned adj = op - t->opcode_base;
    t->special_line[op] = (int16_t)(t->line_base + (int)(adj % t->line_range));
    t->special_addr[op] = (uint16_t)(t->min_len * (adj / t->line_range));
  }
  if (ok) {
    c.p += t->opcode_base - 1;
    ok = version >= 5 ? read_names_v5(t, &c, offset_size, sec) : read_names_v4(t, &c, comp_dir);
  }
  if (ok && c.p == header_end - 4) c.p += 4; /* CUBIN: an offset libdw passes over */
  ok = ok && !c.bad && c.p == header_end;
  if (ok) {
    t->prog = header_end;
    t->end = c.end;
    ok = scan(t);
  }
  if (!ok) {
    mt__line_table_free(t);
    return NULL;
  }
  return t;
}

/* The last point of s at or below x (s has points, the first at or below x). */
static const point *point_at(const mt__line_table *t, const seq *s, uint64_t x) {
  size_t lo = s->first + 1, hi = s->first + s->n; /* points before lo are at or below x */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->points[mid].addr <= x) lo = mid + 1;
    else hi = mid;
  }
  return &t->points[lo - 1];
}

/* The last row of s at or below x (not the end marker): 1 and *out, or 0
 * if none. s's first row is at or below x. */
static int last_row_at_or_below(const mt__line_table *t, const seq *s, uint64_t x, regs *out) {
  if (!s->n) return 0; /* only an end marker */
  const point *p = point_at(t, s, x);
  regs r = {p->addr, p->line, p->file, p->column};
  cursor c = {t->prog + p->off, t->end, 0};
  *out = r;
  for (;;) {
    int k = next_row(t, &c, &r);
    if (k != ROW || r.addr > x) return 1; /* scan ran this program to its end */
    *out = r;
  }
}

int mt__line_table_find(const mt__line_table *t, uint64_t pc, mt__line_row *row) {
  /* The rows at the greatest address at or below pc: of the sequences
   * holding pc (their rows below it), and of those ended at or below it
   * (their end markers, and any row at a marker's address). Among them
   * the last one in the program: of the last sequence (sequences follow
   * one another in the program). */
  uint64_t a = 0, ended = 0;
  int have = 0, have_ended = 0;
  size_t best_seq = 0;
  regs best = {0, 0, 0, 0}, r;
  for (size_t i = 0; i < t->nseqs; i++) {
    const seq *s = &t->seqs[i];
    if (s->lo > pc) continue;
    if (s->hi <= pc) {
      if (!have_ended || s->hi > ended) ended = s->hi, have_ended = 1;
    } else if (last_row_at_or_below(t, s, pc, &r) && (!have || r.addr >= a)) {
      a = r.addr, best = r, best_seq = i, have = 1;
    }
  }
  if (have_ended && (!have || ended >= a)) {
    if (!have || ended > a) have = 0, a = ended; /* only rows at the markers' address count */
    for (size_t i = t->nseqs; i-- > 0;) { /* the last such sequence with a row there */
      const seq *s = &t->seqs[i];
      if (have && i < best_seq) break;
      if (s->lo > pc || s->hi != ended) continue;
      if (last_row_at_or_below(t, s, ended, &r) && r.addr == ended) {
        best = r, best_seq = i, have = 1;
        break;
      }
    }
  }
  /* Only markers there: libdw's sorted table has a marker last. And the
   * table's last row by address is made a marker by libdw. */
  if (!have || a == t->max_addr) return 0;
  *row = (mt__line_row){best.addr, best.file, (int)best.line, (int)best.column};
  return 1;
}

int mt__line_table_file(const mt__line_table *t, uint32_t file, char *buf, size_t cap) {
  if (file >= t->nfiles) return 0;
  const lt_file *f = &t->files[file];
  const char *dir = f->dir == NO_DIR || f->name[0] == '/' ? NULL : t->dirs[f->dir];
  size_t nl = strlen(f->name), dl = dir ? strlen(dir) : 0;
  if ((dir ? dl + 1 : 0) + nl + 1 > cap) return -1;
  char *p = buf;
  if (dir) {
    memcpy(p, dir, dl);
    p += dl;
    *p++ = '/';
  }
  memcpy(p, f->name, nl + 1);
  return 1;
}

void mt__line_table_each(const mt__line_table *t,
                         void (*fn)(void *arg, const mt__line_row *row, int end), void *arg) {
  cursor c = {t->prog, t->end, 0};
  regs r = initial();
  for (int k; (k = next_row(t, &c, &r)) == ROW || k == END;) {
    mt__line_row row = {r.addr, r.file, (int)r.line, (int)r.column};
    fn(arg, &row, k == END);
    if (k == END) r = initial();
  }
}

size_t mt__line_table_rows(const mt__line_table *t) { return t->rows; }
size_t mt__line_table_points(const mt__line_table *t) { return t->npoints; }

void mt__line_table_free(mt__line_table *t) {
  if (!t) return;
  free(t->dirs);
  free(t->files);
  free(t->seqs);
  free(t->points);
  free(t);
}
