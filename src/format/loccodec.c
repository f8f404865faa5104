#include "loccodec.h"

#include <string.h>

void mt__mtf_init(mt__mtf *m) { memset(m, 0, sizeof *m); }

/* Moves slot i to the front. */
static void mtf_swap_file(mt__mtf *m, unsigned i) {
  const char *f = m->file[i];
  mt__mtf_defs *d = m->defs[i];
  memmove(&m->file[1], &m->file[0], i * sizeof m->file[0]);
  memmove(&m->defs[1], &m->defs[0], i * sizeof m->defs[0]);
  m->file[0] = f;
  m->defs[0] = d;
}

/* Pushes a new file at the front; the last slot falls off. Its function
 * table is reused: the writer clears it (memtrace's encoder starts a fresh
 * table), the reader keeps its contents (memtrace's decoder does, to read
 * traces of the v1 encoder that relied on it; for every other trace the
 * stale entries are never referenced, so both agree). */
static void mtf_push_file(mt__mtf *m, const char *f, int clear) {
  mt__mtf_defs *d = m->defs[MT__MTF_LEN - 1];
  if (!m->file[MT__MTF_LEN - 1] || !d) {
    d = &m->pool[m->pool_used++];
    memset(d, 0, sizeof *d);
  } else if (clear) {
    memset(d, 0, sizeof *d);
  }
  memmove(&m->file[1], &m->file[0], (MT__MTF_LEN - 1) * sizeof m->file[0]);
  memmove(&m->defs[1], &m->defs[0], (MT__MTF_LEN - 1) * sizeof m->defs[0]);
  m->file[0] = f;
  m->defs[0] = d;
}

static void mtf_swap_def(mt__mtf_defs *d, unsigned i) {
  const char *s = d->name[i];
  memmove(&d->name[1], &d->name[0], i * sizeof d->name[0]);
  d->name[0] = s;
}

static void mtf_push_def(mt__mtf_defs *d, const char *s) {
  memmove(&d->name[1], &d->name[0], (MT__MTF_LEN - 1) * sizeof d->name[0]);
  d->name[0] = s;
}

static unsigned clamp(uint32_t v, uint32_t lim) { return v > lim ? lim : v; }

int mt__loc_encode(mt__mtf *m, mt__strtab *strings, mt__wr *w, uint64_t code,
                   const mt_location *locs, size_t n) {
  static const mt_location unknown = {"<unknown>", "??", 1, 1, 1};
  size_t worst = 8 + 1;
  for (size_t i = 0; i < n && worst <= MT__LOC_MAX_LENGTH; i++)
    worst += 6 + strlen(locs[i].filename) + 1 + strlen(locs[i].defname) + 1;
  if (n > 255 || worst > MT__LOC_MAX_LENGTH) {
    locs = &unknown;
    n = 1;
  }
  mt__put64(w, code);
  mt__put8(w, (uint8_t)n);
  for (size_t i = 0; i < n; i++) {
    const mt_location *l = &locs[i];
    const char *file = mt__strtab_intern(strings, l->filename, strlen(l->filename));
    const char *def = mt__strtab_intern(strings, l->defname, strlen(l->defname));
    if (!file || !def) return -1;

    unsigned fcode = MT__MTF_LEN;
    for (unsigned j = 0; j < MT__MTF_LEN && m->file[j]; j++)
      if (m->file[j] == file) {
        fcode = j;
        break;
      }
    if (fcode == MT__MTF_LEN) mtf_push_file(m, file, 1);
    else mtf_swap_file(m, fcode);

    mt__mtf_defs *d = m->defs[0];
    unsigned dcode = MT__MTF_LEN;
    for (unsigned j = 0; j < MT__MTF_LEN && d->name[j]; j++)
      if (d->name[j] == def) {
        dcode = j;
        break;
      }
    if (dcode == MT__MTF_LEN) mtf_push_def(d, def);
    else mtf_swap_def(d, dcode);

    uint64_t packed = (uint64_t)clamp(l->line, 0xfffff) |
                      (uint64_t)clamp(l->start_char, 0xff) << 20 |
                      (uint64_t)clamp(l->end_char, 0x3ff) << 28 |
                      (uint64_t)fcode << 38 | (uint64_t)dcode << 43;
    mt__put32(w, (uint32_t)packed);
    mt__put16(w, (uint16_t)(packed >> 32));
    if (fcode == MT__MTF_LEN) mt__putstr(w, file, strlen(file));
    if (dcode == MT__MTF_LEN) mt__putstr(w, def, strlen(def));
  }
  return 0;
}

const char *mt__loc_decode(mt__mtf *m, mt__strtab *strings, mt__rd *r,
                           uint64_t *code, mt_location *out, size_t *n) {
  *code = mt__get64(r);
  unsigned nlocs = mt__get8(r);
  if (r->bad) return "location event cut short";
  for (unsigned i = 0; i < nlocs; i++) {
    const uint8_t *at = r->p;
    uint64_t lo = mt__get32(r), hi = mt__get16(r);
    if (r->bad) return "location event cut short";
    uint64_t packed = lo | hi << 32;
    unsigned fcode = (packed >> 38) & 0x1f, dcode = (packed >> 43) & 0x1f;
    mt_location *l = &out[i];
    l->line = packed & 0xfffff;
    l->start_char = (packed >> 20) & 0xff;
    l->end_char = (packed >> 28) & 0x3ff;

    if (fcode == MT__MTF_LEN) {
      size_t len;
      const char *s = mt__getstr(r, &len);
      if (!s) return "unterminated file name in location event";
      const char *f = mt__strtab_intern(strings, s, len);
      if (!f) return "out of memory";
      mtf_push_file(m, f, 0);
    } else {
      if (!m->file[fcode]) {
        r->p = at;
        return "file name index refers to an empty move-to-front slot";
      }
      mtf_swap_file(m, fcode);
    }
    l->filename = m->file[0];

    mt__mtf_defs *d = m->defs[0];
    if (dcode == MT__MTF_LEN) {
      size_t len;
      const char *s = mt__getstr(r, &len);
      if (!s) return "unterminated function name in location event";
      const char *f = mt__strtab_intern(strings, s, len);
      if (!f) return "out of memory";
      mtf_push_def(d, f);
    } else {
      if (!d->name[dcode]) {
        r->p = at;
        return "function name index refers to an empty move-to-front slot";
      }
      mtf_swap_def(d, dcode);
    }
    l->defname = d->name[0];
  }
  *n = nlocs;
  return NULL;
}
