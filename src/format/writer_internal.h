/* The writer's entry points for the tracer (not part of the public API). */
#ifndef MT_WRITER_INTERNAL_H
#define MT_WRITER_INTERNAL_H

#include "memtrace/format.h"

/* mt_writer_alloc for a caller whose arguments are valid (a known source,
 * a backtrace if len, length and nsamples within INT64_MAX) and that knows
 * that the backtrace's first `known` codes equal those of the previous
 * alloc it wrote to this domain (the tracer's queues: consecutive samples
 * of one thread): they are not compared again. The writer still limits
 * them to what it remembers of that backtrace (none at a packet's start).
 * A `known` larger than the truth writes a wrong backtrace. */
int mt__writer_alloc_known(mt_writer *w, uint64_t time, uint32_t domain, uint64_t length,
                           uint64_t nsamples, mt_source source, const uint64_t *bt, size_t len,
                           size_t known, uint64_t *obj_id);

/* mt_writer_collect in domain 0 for an object id this writer returned
 * (its validity is not checked again). */
int mt__writer_collect_known(mt_writer *w, uint64_t time, uint64_t obj_id);

/* From now on the writer's backtrace caches place codes by address (see
 * mt__bt_encoder.by_address): for codes that are a live program's return
 * addresses. The trace reads the same; it is no longer byte for byte
 * what memtrace would write for the same events. */
void mt__writer_place_by_address(mt_writer *w);

#endif
