/* A writer of pprof profiles (perftools.profiles.Profile, see
 * ../shared/reference/profile.proto), gzip-compressed as pprof requires.
 *
 * The protobuf encoding is written here (varints, length-delimited
 * sub-messages, packed repeated scalars) so the command needs no protobuf
 * library. The profile is streamed: each repeated field is appended as it is
 * given and the encoded bytes go through gzip (gzip_out.h) to the file
 * descriptor in chunks, so memory stays bounded by the string table, not by
 * the profile.
 * Protobuf lets a message's fields come in any order; the string table,
 * which grows as other fields name strings, is written last, by
 * pprof_finish.
 *
 * Errors are sticky: after the first failure (out of memory, a write error)
 * every call does nothing, and pprof_finish returns the error. */
#ifndef MT_PPROF_H
#define MT_PPROF_H

#include <stddef.h>
#include <stdint.h>

/* ---- protobuf encoding into a growable buffer ---- */

typedef struct pb_buf {
  uint8_t *p;
  size_t len, cap;
  int failed; /* an allocation failed: the contents are incomplete */
} pb_buf;

void pb_free(pb_buf *b);
void pb_varint(pb_buf *b, uint64_t v);
/* A varint field; proto3 omits fields at their default, so 0 writes
 * nothing. int64 fields are varints of the two's complement. */
void pb_uint(pb_buf *b, uint32_t field, uint64_t v);
void pb_int(pb_buf *b, uint32_t field, int64_t v);
void pb_bool(pb_buf *b, uint32_t field, int v);
/* A length-delimited field (string, bytes, or an encoded sub-message);
 * written even when empty, as an element of a repeated field must be. */
void pb_bytes(pb_buf *b, uint32_t field, const void *data, size_t n);
/* A packed repeated field of varints; nothing when n is 0. */
void pb_packed(pb_buf *b, uint32_t field, const uint64_t *v, size_t n);

/* ---- the profile ---- */

typedef struct pprof pprof;

typedef struct pprof_line {
  uint64_t function_id;
  int64_t line, column;
} pprof_line;

typedef struct pprof_label {
  int64_t key, str, num, num_unit; /* string-table indices except num */
} pprof_label;

typedef struct pprof_mapping {
  uint64_t id, memory_start, memory_limit, file_offset;
  int64_t filename, build_id; /* string-table indices */
  int has_functions, has_filenames, has_line_numbers, has_inline_frames;
} pprof_mapping;

/* Starts a profile written, gzip-compressed at `level` (1 the fastest;
 * gzip_out.h), to `fd` (not closed). NULL when out of memory, or when no
 * compressor can be loaded (gz_load says why). */
pprof *pprof_open(int fd, int level);
/* Releases the writer (after pprof_finish, or to abandon the profile). */
void pprof_free(pprof *p);

/* The string-table index of `s`, adding it the first time: equal strings
 * share one entry, and "" is always index 0. NULL reads as "". */
int64_t pprof_string(pprof *p, const char *s);

/* Profile fields, in any order (repeated ones append). */
void pprof_sample_type(pprof *p, const char *type, const char *unit);
void pprof_period_type(pprof *p, const char *type, const char *unit);
/* A set of labels for samples to carry, encoded once: its number, or -1
 * when out of memory. */
int pprof_label_set(pprof *p, const pprof_label *labels, size_t nlabels);

/* The most values a sample has (one per sample type). */
#define PPROF_MAX_VALUES 16

/* One sample: its stack, the outermost frame first, as numbers whose
 * location ids are number + id_base (written leaf first, as profile.proto
 * wants; a sample of n = 0 has no location); `known` a count of its
 * outermost frames the caller knows the last sample had too (with the
 * same id_base; at most n and the last sample's n; 0 if not known);
 * nvalues (at most PPROF_MAX_VALUES) values, one per sample type; the
 * labels of pprof_label_set's set `label_set`, or none for -1. Returns how
 * many of its outermost frames the last sample had too (with the same
 * id_base, `known` and more): those frames' ids were given before. */
size_t pprof_sample(pprof *p, const uint32_t *stack, size_t n, size_t known, uint64_t id_base,
                    const int64_t *values, size_t nvalues, int label_set);
void pprof_mapping_add(pprof *p, const pprof_mapping *m);
/* One location; `lines` innermost (inlined) function first, the caller
 * they were inlined into last, as profile.proto specifies. */
void pprof_location(pprof *p, uint64_t id, uint64_t mapping_id, uint64_t address,
                    const pprof_line *lines, size_t nlines);
void pprof_function(pprof *p, uint64_t id, const char *name, const char *system_name,
                    const char *filename, int64_t start_line);
void pprof_comment(pprof *p, const char *text);
/* A scalar field of Profile (time_nanos, duration_nanos, period,
 * default_sample_type, ...) by its field number. */
void pprof_scalar(pprof *p, uint32_t field, int64_t v);

enum {
  PPROF_DROP_FRAMES = 7,
  PPROF_KEEP_FRAMES = 8,
  PPROF_TIME_NANOS = 9,
  PPROF_DURATION_NANOS = 10,
  PPROF_PERIOD = 12,
  PPROF_DEFAULT_SAMPLE_TYPE = 14,
  PPROF_DOC_URL = 15
};

/* Writes the string table, ends the gzip stream and flushes it. Returns 0,
 * or an errno value (ENOMEM, or the write's error) if anything failed. */
int pprof_finish(pprof *p);

/* Bytes written to the descriptor so far (compressed) and bytes of
 * protobuf encoded (uncompressed). */
void pprof_sizes(const pprof *p, uint64_t *compressed, uint64_t *encoded);

#endif
