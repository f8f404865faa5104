/* Charts for the analysis tools (stats, timeline): standalone SVG files
 * (bar charts and line charts with axes, labels and a title) and the small
 * pieces the terminal charts share (width, bars, nice axis steps).
 *
 * The SVG is written in one piece from fixed-size layouts with coordinates
 * printed to 0.1 px, so the same data always gives the same bytes. Text is
 * XML-escaped; every chart has a <title> (for viewers and tests) besides the
 * visible heading. */
#ifndef MT_CLI_SVG_H
#define MT_CLI_SVG_H

#include <stddef.h>

#include "output.h"

/* How an axis labels its values: picks a unit (KiB, MiB...; k, M...) from
 * the axis' largest value so that ticks read "50 MiB", not "52428800". */
typedef enum mt_axis_kind {
  MT_AXIS_NUMBER, /* plain counts: k, M, G suffixes          */
  MT_AXIS_BYTES,  /* B, KiB, MiB, GiB...                      */
  MT_AXIS_SECONDS /* s                                        */
} mt_axis_kind;

/* One bar. lo/hi: a 95% interval drawn as a whisker, or NAN for none. */
typedef struct mt_svg_bar {
  const char *label;
  double value, lo, hi;
  const char *note; /* text above the bar (a share, say), or NULL     */
  int apart;        /* drawn after a gap, in the second colour (e.g.
                       objects never collected beside lifetimes)      */
} mt_svg_bar;

typedef struct mt_svg_bar_chart {
  const char *title, *subtitle, *xlabel, *ylabel;
  mt_axis_kind ykind;
  const mt_svg_bar *bars;
  size_t nbars;
} mt_svg_bar_chart;

/* One line of a line chart: n points (x ascending). band_lo/band_hi, when
 * not NULL, shade the range between them (an envelope). */
typedef struct mt_svg_series {
  const char *name;
  const double *x, *y;
  const double *band_lo, *band_hi;
  size_t n;
} mt_svg_series;

typedef struct mt_svg_line_chart {
  const char *title, *subtitle, *xlabel, *ylabel;
  mt_axis_kind xkind, ykind;
  const mt_svg_series *series;
  size_t nseries;       /* at most 4 */
  int marker;           /* non-zero: mark (mx, my) with mlabel */
  double mx, my;
  const char *mlabel;
} mt_svg_line_chart;

/* Write a chart to `path`. Return 0, or -1 with errno set (the caller
 * names the file in its message). */
int mt_svg_write_bar_chart(const char *path, const mt_svg_bar_chart *c);
int mt_svg_write_line_chart(const char *path, const mt_svg_line_chart *c);

/* A "nice" step (1, 2 or 5 times a power of ten) that cuts [0, span] into
 * about `target` intervals. */
double mt_nice_step(double span, int target);

/* The unit an axis of `kind` reaching `max` is labelled in: its size (e.g.
 * 1048576) and name ("MiB"); "" for plain numbers below 1000. */
double mt_axis_unit(mt_axis_kind kind, double max, const char **name);

/* "12.5 MiB", "3.2k", "1.5 s": v in a unit, trailing zeros dropped. */
const char *mt_axis_label(char *buf, size_t n, double v, double unit, const char *name);

/* ---- terminal charts ---- */

/* The width to draw in: $COLUMNS when it is a number, else 80; at least
 * 40 so that the charts keep room for their bars. */
int mt_term_columns(void);

/* A horizontal bar of frac (0..1) of `width` cells: eighth blocks, or '#'
 * with ascii. Pads with spaces to `width` cells. */
void mt_term_hbar(mt_out *o, double frac, int width, int ascii);

/* One cell of a vertical bar: level 0..8 eighths (0 is a space). */
void mt_term_vcell(mt_out *o, int eighths, int ascii);

/* Shortest decimal that reads back as the same double (JSON, CSV), or
 * "null" for NaN and infinities. buf: at least 32 bytes. */
const char *mt_fmt_double(char *buf, size_t n, double v);

#endif
