/* The location codec: a location event's 48-bit packed line/column fields
 * and its move-to-front coded file and function names (31 recent files,
 * each with its own table of 31 recent function names). */
#ifndef MT_FORMAT_LOCCODEC_H
#define MT_FORMAT_LOCCODEC_H

#include <stddef.h>
#include <stdint.h>

#include "bytes.h"
#include "memtrace/format.h"
#include "base/containers.h"

#define MT__MTF_LEN 31
/* Largest location event the writer emits; bigger lists become one
 * "unknown" location, as in memtrace. */
#define MT__LOC_MAX_LENGTH 4096

typedef struct mt__mtf_defs {
  const char *name[MT__MTF_LEN]; /* interned; NULL = empty slot */
} mt__mtf_defs;

typedef struct mt__mtf {
  const char *file[MT__MTF_LEN]; /* interned; NULL = empty slot */
  mt__mtf_defs *defs[MT__MTF_LEN];
  mt__mtf_defs pool[MT__MTF_LEN]; /* never more than 31 tables are live */
  unsigned pool_used;
} mt__mtf;

void mt__mtf_init(mt__mtf *m);

/* Encodes one location event body (code, count, locations). Strings are
 * interned into `strings` (the MTF tables keep pointers). Returns 0, or -1
 * when out of memory. w must have MT__LOC_MAX_LENGTH bytes free. */
int mt__loc_encode(mt__mtf *m, mt__strtab *strings, mt__wr *w, uint64_t code,
                   const mt_location *locs, size_t n);

/* Decodes one location event body. Locations go to out[0..*n) (room for
 * 255); their strings are interned into `strings`. Returns NULL on success,
 * else a static message saying what was wrong (r->p is left at the bad
 * field). */
const char *mt__loc_decode(mt__mtf *m, mt__strtab *strings, mt__rd *r,
                           uint64_t *code, mt_location *out, size_t *n);

#endif
