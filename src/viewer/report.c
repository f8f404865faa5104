/* memtrace report: the page with its style, code and the unfiltered API
 * answers inlined, one file that needs no server. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answers.h"
#include "live.h"
#include "viewer.h"

/* Writes [p, end) with every "</" written "<\/": safe inside <script> and
 * <style> (a JS or CSS text may hold "</script>" in a string). */
static void put_escaped(FILE *f, const char *p, const char *end, int js) {
  for (const char *s = p; s < end; s++) {
    fputc(*s, f);
    if (*s == '<' && s + 1 < end && s[1] == '/' && js) fputc('\\', f);
  }
}

/* Finds the tag starting with `open` that contains `needle`, e.g. the
 * <link ... href="style.css"> element; returns its start and end. */
static const char *find_tag(const char *html, const char *open, const char *needle,
                            const char *close, const char **end) {
  for (const char *p = strstr(html, open); p; p = strstr(p + 1, open)) {
    const char *gt = strchr(p, '>');
    if (!gt) return NULL;
    const char *n = strstr(p, needle);
    if (n && n < gt) {
      const char *e = close ? strstr(gt, close) : gt + 1;
      if (!e) return NULL;
      *end = close ? e + strlen(close) : e;
      return p;
    }
  }
  return NULL;
}

static int answers(const mt_vsnap *s, mt_json *j) {
  mt_vquery q;
  mt_vquery_init(&q);
  q.min = 0.0005;
  mt_json_obj(j);
  static const char *keys[] = {"info",  "summary", "timeline", "flame",      "functions",
                               "paths", "sites",   "leaks",    "histograms", "stats",
                               "diff"};
  int (*fns[])(const mt_vsnap *, const mt_vquery *, mt_json *) = {
      NULL,          mt_vanswer_summary, mt_vanswer_timeline, mt_vanswer_flame,
      mt_vanswer_functions, mt_vanswer_paths, mt_vanswer_sites, mt_vanswer_leaks,
      mt_vanswer_histograms, mt_vanswer_stats, mt_vanswer_diff};
  for (int k = 0; k < (s->base ? 11 : 10); k++) {
    mt_json_key(j, keys[k]);
    if ((fns[k] ? fns[k](s, &q, j) : mt_vanswer_info(s, 0, j)) != 0) return -1;
  }
  mt_json_end_obj(j);
  return j->oom ? -1 : 0;
}

/* The traces loaded (compared with base when nbase > 0) and the page's
 * data: the unfiltered answers as one JSON text to free, or NULL after
 * saying why. */
static char *report_data(const char *const *traces, size_t n, const char *const *base,
                         size_t nbase, size_t *len) {
  static mt_vlive l = {.lock = PTHREAD_MUTEX_INITIALIZER,
                       .changed = PTHREAD_COND_INITIALIZER,
                       .state = "loading",
                       .listen_fd = -1};
  char name[300], base_name[300];
  mt_vlive_name(name, sizeof name, traces, n);
  mt_vlive_name(base_name, sizeof base_name, base, nbase);
  l.paths = traces;
  l.npaths = n;
  l.base_paths = base;
  l.nbase = nbase;
  l.base_name = base_name;
  if (mt_vlive_load_once(&l, traces[0], name)) return NULL;
  mt_vsnap *s = mt_vlive_get(&l);
  mt_json j;
  mt_json_init(&j);
  j.script_safe = 1;
  int rc = answers(s, &j);
  mt_vsnap_unref(s);
  mt_vlive_stop(&l);
  char *data = rc == 0 ? mt_json_take(&j, len) : NULL;
  mt_json_free(&j);
  if (!data) fprintf(stderr, "memtrace report: out of memory\n");
  return data;
}

int mt_viewer_report(const char *const *traces, size_t n, const char *const *base, size_t nbase,
                     const char *out, const char *title) {
  size_t len;
  char *data = report_data(traces, n, base, nbase, &len);
  if (!data) return 1;
  char name[300];
  mt_vlive_name(name, sizeof name, traces, n);
  const mt_vasset *html = mt_vasset_find("/index.html"), *css = mt_vasset_find("/style.css"),
                  *js = mt_vasset_find("/app.js"), *icon = mt_vasset_find("/favicon.svg");
  if (!html || !js) {
    fprintf(stderr, "memtrace report: this build has no page (src/viewer/assets)\n");
    free(data);
    return 1;
  }
  FILE *f = strcmp(out, "-") == 0 ? stdout : fopen(out, "w");
  if (!f) {
    fprintf(stderr, "memtrace report: %s: cannot create: %m\n", out);
    free(data);
    return 1;
  }
  /* the page, with its three references replaced by their content */
  char *page = strndup((const char *)html->data, html->len);
  const char *p = page, *end;
  const char *t_css = css ? find_tag(page, "<link", "style.css", NULL, &end) : NULL;
  const char *e_css = t_css ? end : NULL;
  const char *t_js = find_tag(page, "<script", "app.js", "</script>", &end), *e_js = end;
  const char *t_icon = icon ? find_tag(page, "<link", "favicon.svg", NULL, &end) : NULL;
  const char *e_icon = t_icon ? end : NULL;
  const char *t_title = find_tag(page, "<title", "<title", "</title>", &end), *e_title = end;
  if (!t_js) {
    fprintf(stderr, "memtrace report: index.html does not load app.js\n");
    free(page);
    free(data);
    if (f != stdout) fclose(f);
    return 1;
  }
  /* the pieces in the order they appear */
  const char *starts[4] = {t_icon, t_css, t_title, t_js}, *ends[4] = {e_icon, e_css, e_title, e_js};
  for (;;) {
    int next = -1;
    for (int k = 0; k < 4; k++)
      if (starts[k] && starts[k] >= p && (next < 0 || starts[k] < starts[next])) next = k;
    if (next < 0) break;
    fwrite(p, 1, (size_t)(starts[next] - p), f);
    if (next == 0) {
      fputs("<link rel=\"icon\" type=\"image/svg+xml\" href=\"data:image/svg+xml,", f);
      for (unsigned long i = 0; i < icon->len; i++) {
        unsigned char c = icon->data[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr(" =:/.-_", c))
          fputc(c, f);
        else fprintf(f, "%%%02X", c);
      }
      fputs("\">", f);
    } else if (next == 1) {
      fputs("<style>\n", f);
      put_escaped(f, (const char *)css->data, (const char *)css->data + css->len, 1);
      fputs("</style>", f);
    } else if (next == 2) {
      fputs("<title>", f);
      const char *tt = title ? title : name;
      for (const char *c = tt; *c; c++) {
        if (*c == '<') fputs("&lt;", f);
        else if (*c == '>') fputs("&gt;", f);
        else if (*c == '&') fputs("&amp;", f);
        else fputc(*c, f);
      }
      fputs(" - memtrace</title>", f);
    } else {
      fputs("<script type=\"application/json\" id=\"memtrace-data\">", f);
      fwrite(data, 1, len, f);
      fputs("</script>\n", f);
      /* the original tag's attributes (type="module"...) without src */
      fputs("<script>\n", f);
      put_escaped(f, (const char *)js->data, (const char *)js->data + js->len, 1);
      fputs("\n</script>", f);
    }
    p = ends[next];
  }
  fputs(p, f);
  free(page);
  free(data);
  if (f != stdout && fclose(f) != 0) {
    fprintf(stderr, "memtrace report: %s: write failed\n", out);
    return 1;
  }
  return 0;
}
