/* The iteration order of OCaml's Hashtbl.Make tables: see ocaml_hashtbl.h. */
#include "ocaml_hashtbl.h"

#include <stdlib.h>

static size_t sort_mask;

static int iteration_order(const void *pa, const void *pb) {
  const mt_ocaml_binding *a = pa, *b = pb;
  uint64_t ba = a->hash & sort_mask, bb = b->hash & sort_mask;
  if (ba != bb) return ba < bb ? -1 : 1;
  if (a->seq != b->seq) return a->seq > b->seq ? -1 : 1; /* newest first */
  return 0;
}

void mt_ocaml_hashtbl_order(mt_ocaml_binding *b, size_t n, size_t nbuckets) {
  sort_mask = nbuckets - 1;
  if (n) qsort(b, n, sizeof *b, iteration_order); /* qsort(NULL, 0) is undefined */
}
