/* The iteration order of OCaml's Hashtbl.Make tables, for the tools whose
 * output order is that order (memtrace's hotspots lists ties in it).
 *
 * What OCaml's stdlib does (hashtbl.ml, OCaml 4.04 and later):
 *   - `create n` allocates power_2_above 16 n buckets (a power of two);
 *   - a key lives in bucket (hash land (nbuckets - 1)), where hash is the
 *     value of the table's hash function, an OCaml int (its low bits are
 *     the same in 63-bit and in 64-bit arithmetic, so callers compute it in
 *     uint64_t);
 *   - `add` puts the new binding at the head of its bucket, then doubles the
 *     bucket array when size > 2 * nbuckets; resizing walks each old bucket
 *     from head to tail and appends to the new buckets, so the bindings of a
 *     new bucket keep their relative order;
 *   - `filter_map_inplace` and `remove` drop bindings and keep the order of
 *     the others; `clear` empties the buckets and keeps their number;
 *   - `iter` and `fold` walk buckets 0 .. nbuckets-1, each from head to tail.
 * Hence, whatever was removed in between, a table built with `add` iterates
 * its bindings ordered by bucket (hash land (nbuckets - 1)), ascending, then
 * by time of insertion, newest first; nbuckets being the table's bucket
 * count at that point. So instead of a replica of OCaml's linked buckets, a
 * tool can keep its bindings in any fast table, numbering insertions, and
 * sort them into OCaml's order when it needs it.
 */
#ifndef MT_CLI_OCAML_HASHTBL_H
#define MT_CLI_OCAML_HASHTBL_H

#include <stddef.h>
#include <stdint.h>

/* The bucket count of a table: created with `create n`, then followed
 * through its adds and removals. */
typedef struct mt_ocaml_shape {
  size_t nbuckets, size;
} mt_ocaml_shape;

static inline mt_ocaml_shape mt_ocaml_shape_create(size_t n) {
  size_t b = 16; /* power_2_above 16 n */
  while (b < n) b *= 2;
  return (mt_ocaml_shape){b, 0};
}
static inline void mt_ocaml_shape_add(mt_ocaml_shape *s) {
  if (++s->size > 2 * s->nbuckets) s->nbuckets *= 2;
}
static inline void mt_ocaml_shape_remove(mt_ocaml_shape *s) { s->size--; }

/* A binding: its key's OCaml hash, its insertion number (increasing with
 * time), and whatever the caller needs to find it again. */
typedef struct mt_ocaml_binding {
  uint64_t hash;
  uint64_t seq;
  uint32_t item;
} mt_ocaml_binding;

/* Sorts bindings into the iteration order of a table of nbuckets buckets. */
void mt_ocaml_hashtbl_order(mt_ocaml_binding *b, size_t n, size_t nbuckets);

#endif
