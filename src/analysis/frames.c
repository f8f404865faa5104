/* Backtraces as printed: their frames innermost first, and the order of
 * two stacks by those frames. */
#include <string.h>

#include "analysis_internal.h"

void mt__frame_iter_init(mt__frame_iter *it, const mt_analysis *a, const mt__query *q,
                         const uint32_t *codes, size_t n) {
  it->a = a;
  it->q = q;
  it->codes = codes;
  it->ncodes = n;
  it->frames = NULL;
  it->left = 0;
  it->code = 0;
}

int mt__frame_next(mt__frame_iter *it, mt__printed *out) {
  const mt_analysis *a = it->a;
  for (;;) {
    while (it->left) {
      const mt_frame *f = &it->frames[--it->left];
      if (it->q && mt__query_hidden(it->q, f->function)) continue;
      out->function = f->function;
      out->line = f->line;
      out->code = it->code;
      return 1;
    }
    if (it->ncodes == 0) return 0;
    uint32_t c = it->code = it->codes[--it->ncodes];
    it->left = a->code_n[c];
    it->frames = &a->frames[a->code_first[c]];
    if (it->left == 0) {
      out->function = UINT32_MAX;
      out->line = 0;
      out->code = c;
      return 1;
    }
  }
}

static int frame_cmp(const mt_analysis *a, const mt__printed *x, const mt__printed *y) {
  int ux = x->function == UINT32_MAX, uy = y->function == UINT32_MAX;
  if (ux || uy) {
    if (!ux) return -1;
    if (!uy) return 1;
    uint64_t cx = a->code_val[x->code], cy = a->code_val[y->code];
    return cx < cy ? -1 : cx > cy;
  }
  int c = strcmp(a->fn_name[x->function], a->fn_name[y->function]);
  if (!c) c = strcmp(a->fn_file[x->function], a->fn_file[y->function]);
  if (!c) c = x->line < y->line ? -1 : x->line > y->line;
  return c;
}

int mt__codes_cmp(const mt_analysis *a, const mt__query *q, const uint32_t *x, size_t nx,
                  const uint32_t *y, size_t ny) {
  mt__frame_iter ix, iy;
  mt__frame_iter_init(&ix, a, q, x, nx);
  mt__frame_iter_init(&iy, a, q, y, ny);
  for (;;) {
    mt__printed fx, fy;
    int hx = mt__frame_next(&ix, &fx), hy = mt__frame_next(&iy, &fy);
    if (!hx || !hy) return hx - hy;
    int c = frame_cmp(a, &fx, &fy);
    if (c) return c;
  }
}
