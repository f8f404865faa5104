/* SVG charts and terminal chart pieces for stats and timeline (svg.h). */
#include "svg.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- numbers and axes ---- */

const char *mt_fmt_double(char *buf, size_t n, double v) {
  if (!isfinite(v)) {
    snprintf(buf, n, "null");
    return buf;
  }
  /* The shortest of 15, 16, 17 significant digits that reads back exactly:
   * integers stay integers, 0.1 stays 0.1, and nothing is lost. */
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, n, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  return buf;
}

double mt_nice_step(double span, int target) {
  if (!(span > 0) || !isfinite(span) || target < 1) return 1;
  double raw = span / target;
  double mag = pow(10, floor(log10(raw)));
  double r = raw / mag;
  double m = r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10;
  return m * mag;
}

double mt_axis_unit(mt_axis_kind kind, double max, const char **name) {
  static const char *const bytes[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  static const char *const counts[] = {"", "k", "M", "G", "T", "P"};
  double unit = 1;
  int k = 0;
  switch (kind) {
  case MT_AXIS_BYTES:
    while (max >= 1024 * unit && k < 5) unit *= 1024, k++;
    *name = bytes[k];
    return unit;
  case MT_AXIS_NUMBER:
    while (max >= 1000 * unit && k < 5) unit *= 1000, k++;
    *name = counts[k];
    return unit;
  case MT_AXIS_SECONDS:
    if (max > 0 && max < 1e-3) {
      *name = "us";
      return 1e-6;
    }
    if (max > 0 && max < 1) {
      *name = "ms";
      return 1e-3;
    }
    *name = "s";
    return 1;
  }
  *name = "";
  return 1;
}

const char *mt_axis_label(char *buf, size_t n, double v, double unit, const char *name) {
  double x = v / unit;
  if (fabs(x) < 1e-9) x = 0; /* no "-0" or 1e-17 from accumulated steps */
  /* Count suffixes read "12.5k"; units get a space: "12.5 MiB". */
  int glue = name[0] && !name[1] && strchr("kMGTP", name[0]);
  snprintf(buf, n, "%.4g%s%s", x, name[0] && !glue ? " " : "", name);
  return buf;
}

/* ---- SVG ---- */

#define W 800.0
#define H 450.0
#define LEFT 84.0
#define RIGHT 24.0
#define TOP 62.0
#define BOTTOM 72.0

static const char *const palette[] = {"#4e79a7", "#e15759", "#59a14f", "#b07aa1"};
#define APART_COLOUR "#f28e2b"

static void esc(FILE *f, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&apos;", f); break;
    default:
      /* Control characters are not allowed in XML 1.0 text. */
      if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n') fputc('?', f);
      else fputc(*s, f);
    }
  }
}

static void head(FILE *f, const char *title, const char *subtitle) {
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
          "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n<title>",
          W, H, W, H);
  esc(f, title);
  fputs("</title>\n", f);
  fputs("<style>\n"
        "  .t { font-size: 17px; font-weight: bold; }\n"
        "  .st { font-size: 12px; fill: #555; }\n"
        "  .tick { font-size: 11px; fill: #333; }\n"
        "  .lab { font-size: 13px; fill: #222; }\n"
        "  .grid { stroke: #ddd; stroke-width: 1; }\n"
        "  .axis { stroke: #222; stroke-width: 1; }\n"
        "  .ci { stroke: #222; stroke-width: 1.2; }\n"
        "  .note { font-size: 10px; fill: #333; }\n"
        "</style>\n",
        f);
  fputs("<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"white\"/>\n", f);
  fprintf(f, "<text class=\"t\" x=\"%.1f\" y=\"24\" text-anchor=\"middle\">", W / 2);
  esc(f, title);
  fputs("</text>\n", f);
  if (subtitle && *subtitle) {
    fprintf(f, "<text class=\"st\" x=\"%.1f\" y=\"42\" text-anchor=\"middle\">", W / 2);
    esc(f, subtitle);
    fputs("</text>\n", f);
  }
}

static void axis_titles(FILE *f, const char *xlabel, const char *ylabel) {
  fprintf(f, "<text class=\"lab\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
          LEFT + (W - LEFT - RIGHT) / 2, H - 12);
  esc(f, xlabel);
  fputs("</text>\n", f);
  fprintf(f,
          "<text class=\"lab\" x=\"16\" y=\"%.1f\" text-anchor=\"middle\" "
          "transform=\"rotate(-90 16 %.1f)\">",
          TOP + (H - TOP - BOTTOM) / 2, TOP + (H - TOP - BOTTOM) / 2);
  esc(f, ylabel);
  fputs("</text>\n", f);
}

/* The y axis from 0 to a nice top above ymax: grid lines and labels.
 * Returns the top. */
static double y_axis(FILE *f, mt_axis_kind kind, double ymax) {
  if (!(ymax > 0) || !isfinite(ymax)) ymax = 1;
  const char *uname;
  double unit = mt_axis_unit(kind, ymax, &uname);
  double step = mt_nice_step(ymax / unit, 5) * unit;
  int nticks = (int)ceil(ymax / step - 1e-9);
  if (nticks < 1) nticks = 1;
  double top = nticks * step;
  double ph = H - TOP - BOTTOM;
  fputs("<g class=\"yaxis\">\n", f);
  for (int i = 0; i <= nticks; i++) {
    double y = H - BOTTOM - ph * i / nticks;
    char lab[48];
    fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", LEFT,
            y, W - RIGHT, y);
    fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", LEFT - 6,
            y + 4);
    esc(f, mt_axis_label(lab, sizeof lab, i * step, unit, uname));
    fputs("</text>\n", f);
  }
  fprintf(f, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", LEFT,
          TOP, LEFT, H - BOTTOM);
  fprintf(f, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", LEFT,
          H - BOTTOM, W - RIGHT, H - BOTTOM);
  fputs("</g>\n", f);
  return top;
}

static int finish(FILE *f) {
  fputs("</svg>\n", f);
  int bad = ferror(f);
  int saved = errno;
  if (fclose(f) != 0) return -1;
  if (bad) {
    errno = saved ? saved : EIO;
    return -1;
  }
  return 0;
}

int mt_svg_write_bar_chart(const char *path, const mt_svg_bar_chart *c) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  head(f, c->title, c->subtitle);
  double ymax = 0;
  size_t gaps = 0;
  for (size_t i = 0; i < c->nbars; i++) {
    const mt_svg_bar *b = &c->bars[i];
    if (b->value > ymax) ymax = b->value;
    if (isfinite(b->hi) && b->hi > ymax) ymax = b->hi;
    if (b->apart && (i == 0 || !c->bars[i - 1].apart)) gaps++;
  }
  double top = y_axis(f, c->ykind, ymax);
  double pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM;
  double slot = pw / ((double)c->nbars + 0.6 * (double)gaps + 0.2);
  size_t longest = 0;
  for (size_t i = 0; i < c->nbars; i++) {
    size_t l = c->bars[i].label ? strlen(c->bars[i].label) : 0;
    if (l > longest) longest = l;
  }
  /* Labels that would overlap their neighbours are turned. */
  int turn = (double)longest * 6.2 > slot * 0.95;
  double x = LEFT + slot * 0.1;
  fputs("<g class=\"bars\">\n", f);
  for (size_t i = 0; i < c->nbars; i++) {
    const mt_svg_bar *b = &c->bars[i];
    if (b->apart && (i == 0 || !c->bars[i - 1].apart)) x += slot * 0.6;
    double v = b->value > 0 ? b->value : 0;
    double h = ph * v / top, bx = x + slot * 0.15, bw = slot * 0.7;
    double y = H - BOTTOM - h;
    char val[48];
    const char *uname;
    double unit = mt_axis_unit(c->ykind, v, &uname); /* the tooltip's own unit */
    mt_axis_label(val, sizeof val, v, unit, uname);
    fprintf(f,
            "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"%s\"><title>",
            bx, y, bw, h, b->apart ? APART_COLOUR : palette[0]);
    esc(f, b->label);
    fputs(": ", f);
    esc(f, val);
    fputs("</title></rect>\n", f);
    if (isfinite(b->lo) && isfinite(b->hi) && b->hi > b->lo) {
      double ylo = H - BOTTOM - ph * fmax(b->lo, 0) / top, yhi = H - BOTTOM - ph * b->hi / top;
      double cx = bx + bw / 2, wing = fmin(bw / 4, 6);
      fprintf(f,
              "<path class=\"ci\" d=\"M%.1f %.1fH%.1fM%.1f %.1fV%.1fM%.1f %.1fH%.1f\" "
              "fill=\"none\"/>\n",
              cx - wing, ylo, cx + wing, cx, ylo, yhi, cx - wing, yhi, cx + wing);
      if (yhi < y) y = yhi;
    }
    if (b->note && *b->note) {
      fprintf(f, "<text class=\"note\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
              bx + bw / 2, y - 4);
      esc(f, b->note);
      fputs("</text>\n", f);
    }
    double lx = bx + bw / 2, ly = H - BOTTOM + 16;
    if (turn)
      fprintf(f,
              "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
              "transform=\"rotate(-30 %.1f %.1f)\">",
              lx, ly - 4, lx, ly - 4);
    else fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", lx, ly);
    esc(f, b->label);
    fputs("</text>\n", f);
    x += slot;
  }
  fputs("</g>\n", f);
  axis_titles(f, c->xlabel, c->ylabel);
  return finish(f);
}

/* x ticks of a line chart between xmin and xmax. */
static void x_axis(FILE *f, mt_axis_kind kind, double xmin, double xmax) {
  const char *uname;
  double unit = mt_axis_unit(kind, fmax(fabs(xmin), fabs(xmax)), &uname);
  double step = mt_nice_step((xmax - xmin) / unit, 8) * unit;
  double pw = W - LEFT - RIGHT;
  fputs("<g class=\"xaxis\">\n", f);
  for (double t = ceil(xmin / step - 1e-9) * step; t <= xmax + step * 1e-9; t += step) {
    double x = LEFT + pw * (t - xmin) / (xmax - xmin);
    char lab[48];
    fprintf(f, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x,
            H - BOTTOM, x, H - BOTTOM + 5);
    fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", x,
            H - BOTTOM + 18);
    esc(f, mt_axis_label(lab, sizeof lab, t, unit, uname));
    fputs("</text>\n", f);
  }
  fputs("</g>\n", f);
}

int mt_svg_write_line_chart(const char *path, const mt_svg_line_chart *c) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  head(f, c->title, c->subtitle);
  double xmin = 0, xmax = 0, ymax = 0;
  int first = 1;
  for (size_t s = 0; s < c->nseries; s++) {
    const mt_svg_series *se = &c->series[s];
    for (size_t i = 0; i < se->n; i++) {
      double x = se->x[i];
      if (first || x < xmin) xmin = x;
      if (first || x > xmax) xmax = x;
      first = 0;
      if (se->y[i] > ymax) ymax = se->y[i];
      if (se->band_hi && se->band_hi[i] > ymax) ymax = se->band_hi[i];
    }
  }
  if (xmin > 0) xmin = 0; /* time axes start at the trace's start */
  if (c->marker && c->my > ymax) ymax = c->my;
  if (!(xmax > xmin)) xmax = xmin + 1;
  double top = y_axis(f, c->ykind, ymax);
  x_axis(f, c->xkind, xmin, xmax);
  double pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM;
#define PX(v) (LEFT + pw * ((v) - xmin) / (xmax - xmin))
#define PY(v) (H - BOTTOM - ph * ((v) > 0 ? (v) : 0) / top)
  size_t ns = c->nseries < 4 ? c->nseries : 4;
  for (size_t s = 0; s < ns; s++) {
    const mt_svg_series *se = &c->series[s];
    if (se->n == 0) continue;
    if (se->band_lo && se->band_hi) {
      fprintf(f, "<polygon class=\"band\" fill=\"%s\" fill-opacity=\"0.25\" stroke=\"none\" points=\"",
              palette[s]);
      for (size_t i = 0; i < se->n; i++)
        fprintf(f, "%.1f,%.1f ", PX(se->x[i]), PY(se->band_hi[i]));
      for (size_t i = se->n; i-- > 0;)
        fprintf(f, "%.1f,%.1f%s", PX(se->x[i]), PY(se->band_lo[i]), i ? " " : "");
      fputs("\"><title>", f);
      esc(f, se->name);
      fputs(": least and most within each interval</title></polygon>\n", f);
    }
    fprintf(f, "<polyline class=\"line\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\" points=\"",
            palette[s]);
    for (size_t i = 0; i < se->n; i++)
      fprintf(f, "%.1f,%.1f%s", PX(se->x[i]), PY(se->y[i]), i + 1 < se->n ? " " : "");
    fputs("\"><title>", f);
    esc(f, se->name);
    fputs("</title></polyline>\n", f);
  }
  /* Legend under the x axis' labels, left to right: it never covers data
   * or the marker's label. */
  fputs("<g class=\"legend\">\n", f);
  double lx = LEFT;
  for (size_t s = 0; s < ns; s++) {
    double ly = H - BOTTOM + 40;
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"4\" fill=\"%s\"/>\n"
            "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\">",
            lx, ly - 4, palette[s], lx + 18, ly + 1);
    esc(f, c->series[s].name);
    fputs("</text>\n", f);
    lx += 18 + 6.2 * (double)strlen(c->series[s].name ? c->series[s].name : "") + 20;
  }
  fputs("</g>\n", f);
  if (c->marker) {
    double mx = PX(c->mx), my = PY(c->my);
    /* Keep the label inside the plot: anchor it on the side with room. */
    const char *anchor = mx > LEFT + pw * 0.7 ? "end" : "start";
    double dx = anchor[0] == 'e' ? -8 : 8;
    fprintf(f,
            "<g class=\"marker\">\n"
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\" "
            "stroke-dasharray=\"4 3\"/>\n"
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"none\" stroke=\"#d00\" "
            "stroke-width=\"2\"/>\n"
            "<text class=\"lab\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">",
            mx, my, mx, H - BOTTOM, mx, my, mx + dx, my < TOP + 14 ? my + 16 : my - 8, anchor);
    esc(f, c->mlabel);
    fputs("</text>\n</g>\n", f);
  }
#undef PX
#undef PY
  axis_titles(f, c->xlabel, c->ylabel);
  return finish(f);
}

/* ---- terminal ---- */

int mt_term_columns(void) {
  const char *s = getenv("COLUMNS");
  long n = 80;
  if (s && *s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (!*end && v > 0) n = v;
  }
  if (n < 40) n = 40;
  if (n > 1000) n = 1000;
  return (int)n;
}

void mt_term_hbar(mt_out *o, double frac, int width, int ascii) {
  static const char *const part[] = {"", "\u258f", "\u258e", "\u258d", "\u258c",
                                     "\u258b", "\u258a", "\u2589"};
  if (!(frac > 0)) frac = 0;
  if (frac > 1) frac = 1;
  int used;
  if (ascii) {
    int n = (int)lround(frac * width);
    for (int i = 0; i < n; i++) mt_out_char(o, '#');
    used = n;
    /* Something, however small, is not nothing. */
    if (n == 0 && frac > 0) mt_out_char(o, '.'), used = 1;
  } else {
    long eighths = lround(frac * width * 8);
    if (eighths == 0 && frac > 0) eighths = 1;
    int full = (int)(eighths / 8), rem = (int)(eighths % 8);
    for (int i = 0; i < full; i++) mt_out_str(o, "\u2588");
    mt_out_str(o, part[rem]);
    used = full + (rem > 0);
  }
  for (int i = used; i < width; i++) mt_out_char(o, ' ');
}

void mt_term_vcell(mt_out *o, int eighths, int ascii) {
  static const char *const lvl[] = {" ", "\u2581", "\u2582", "\u2583", "\u2584",
                                    "\u2585", "\u2586", "\u2587", "\u2588"};
  if (eighths < 0) eighths = 0;
  if (eighths > 8) eighths = 8;
  if (ascii) mt_out_char(o, eighths >= 4 ? '#' : eighths > 0 ? '.' : ' ');
  else mt_out_str(o, lvl[eighths]);
}
