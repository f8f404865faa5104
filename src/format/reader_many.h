/* Several traces read as one (mt_reader_open_many, memtrace/format.h): the
 * reader's public functions hand a merged reader's calls here. */
#ifndef MT_FORMAT_READER_MANY_H
#define MT_FORMAT_READER_MANY_H

#include "memtrace/format.h"

typedef struct mt__many mt__many;

/* A merged reader of the traces at paths[0..n) (n >= 2): 0 with *out, or
 * a negative status with the message in err (n_err bytes); *out is then
 * NULL. */
int mt__many_open(mt__many **out, const char *const *paths, size_t n, char *err, size_t n_err,
                  uint64_t *err_off);
void mt__many_free(mt__many *m);

const mt_trace_info *mt__many_info(const mt__many *m);
int mt__many_next(mt__many *m, mt_event *ev);
const mt_location *mt__many_lookup(const mt__many *m, uint64_t code, size_t *n);
int mt__many_has_code(const mt__many *m, uint64_t code);
void mt__many_progress(const mt__many *m, uint64_t *done, uint64_t *total);
const char *mt__many_error(const mt__many *m);
const char *mt__many_warning(const mt__many *m);
uint64_t mt__many_error_offset(const mt__many *m);
uint64_t mt__many_truncated(const mt__many *m);
size_t mt__many_count(const mt__many *m);
/* The time of trace k's last event read so far (us since the epoch). */
uint64_t mt__many_end(const mt__many *m, size_t k);
/* The i-th trace read to its end, or SIZE_MAX while fewer have ended. */
size_t mt__many_finished(const mt__many *m, size_t i);
/* Which trace an event came from (its index in paths), from ev->domain. */
static inline size_t mt__many_trace_of(uint32_t domain) { return domain >> 16; }

#endif
