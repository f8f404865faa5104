/* Traces for the subcommands: opening and loading them with a message
 * naming the file on failure, and a command's JSON document. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "output.h"

mt_reader *mt_cli_open(const char *path) {
  mt_reader *r;
  int rc = mt_reader_open(&r, path);
  if (rc != MT_OK) {
    fprintf(stderr, "memtrace: %s\n", mt_reader_error(r));
    mt_reader_close(r);
    exit(1);
  }
  return r;
}

void mt_cli_finish(mt_reader *r, int rc) {
  if (rc < 0) {
    fflush(stdout);
    fprintf(stderr, "memtrace: %s\n", mt_reader_error(r));
    mt_reader_close(r);
    exit(1);
  }
  const char *warn = mt_reader_warning(r);
  if (warn) fprintf(stderr, "memtrace: warning: %s\n", warn);
}

int mt_cli_load_whole(void) {
  const char *e = getenv("MEMTRACE_LOAD");
  return e && strcmp(e, "whole") == 0;
}

mt_analysis *mt_cli_load(const char *path) { return mt_cli_load_keep(path, MT_KEEP_ALL, NULL); }

mt_analysis *mt_cli_load_folded(const char *path, const mt_filter *fold) {
  return mt_cli_load_keep(path, fold ? MT_KEEP_FOLDED : MT_KEEP_ALL, fold);
}

mt_keep mt_cli_rank_keep(const mt_filter *f, const mt_rank_spec *spec) {
  return mt_rank_folds(f, spec)               ? MT_KEEP_SITES
         : f->collected == MT_COLLECTED_NEVER ? MT_KEEP_LIVE
                                              : MT_KEEP_ALL;
}

/* One trace's load, keeping `keep`: a status, *a set either way. */
static int load_keep(mt_analysis **a, const char *path, mt_keep keep, const mt_filter *fold) {
  return keep == MT_KEEP_FOLDED  ? mt_analysis_load_folded(a, &path, 1, fold, NULL, NULL)
         : keep == MT_KEEP_SITES ? mt_analysis_load_sites(a, &path, 1, fold, NULL, NULL)
                                 : mt_analysis_load_keep(a, &path, 1, keep, NULL, NULL);
}

mt_analysis *mt_cli_load_keep(const char *path, mt_keep keep, const mt_filter *fold) {
  mt_analysis *a;
  int rc = load_keep(&a, path, mt_cli_load_whole() ? MT_KEEP_ALL : keep, fold);
  if (rc != MT_OK) {
    fprintf(stderr, "memtrace: %s\n", mt_analysis_error(a));
    mt_analysis_free(a);
    exit(1);
  }
  const char *w = mt_analysis_warning(a);
  if (w) fprintf(stderr, "memtrace: warning: %s\n", w);
  return a;
}

size_t mt_cli_traces(const mt_command *cmd, const char *const *args, size_t n, char ***out) {
  char **list = NULL;
  size_t count = 0, cap = 0;
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (stat(args[i], &st) != 0) {
      fprintf(stderr, "memtrace %s: %s: cannot open: %s\n", cmd->name, args[i],
              strerror(errno));
      exit(1);
    }
    char **dir = NULL;
    long found = 1;
    if (S_ISDIR(st.st_mode)) {
      found = mt_cli_trace_dir(args[i], &dir);
      if (found < 0) {
        fprintf(stderr, "memtrace %s: %s: cannot read: %s\n", cmd->name, args[i],
                strerror(errno));
        exit(1);
      }
      if (found == 0) {
        fprintf(stderr, "memtrace %s: %s: no trace (*.ctf) in this directory\n", cmd->name,
                args[i]);
        exit(1);
      }
    }
    if (count + (size_t)found > cap) {
      while (count + (size_t)found > cap) cap = cap ? 2 * cap : 16;
      list = mt_cli_xrealloc(cmd, list, cap * sizeof *list);
    }
    if (dir) {
      memcpy(list + count, dir, (size_t)found * sizeof *list);
      count += (size_t)found;
      free(dir);
      continue;
    }
    list[count] = mt_cli_xrealloc(cmd, NULL, strlen(args[i]) + 1);
    strcpy(list[count++], args[i]);
  }
  *out = list;
  return count;
}

/* ---- a set of traces, loaded in parallel ---- */

typedef struct loading {
  mt_cli_trace_set *t;
  mt_keep keep;
  const mt_filter *fold;
  int *rc;
  size_t next; /* the next trace to take, under lock */
  pthread_mutex_t lock;
} loading;

static void *load_worker(void *arg) {
  loading *l = arg;
  for (;;) {
    pthread_mutex_lock(&l->lock);
    size_t i = l->next++;
    pthread_mutex_unlock(&l->lock);
    if (i >= l->t->n) return NULL;
    const char *path = l->t->paths[i];
    mt_analysis **a = &l->t->as[i];
    l->rc[i] = load_keep(a, path, l->keep, l->fold);
  }
}

void mt_cli_load_set(const mt_command *cmd, const char *const *args, size_t n, mt_keep keep,
                     const mt_filter *fold, mt_cli_trace_set *t) {
  t->n = mt_cli_traces(cmd, args, n, &t->paths);
  t->as = mt_cli_xrealloc(cmd, NULL, t->n * sizeof *t->as);
  int *rc = mt_cli_xrealloc(cmd, NULL, t->n * sizeof *rc);
  loading l = {t, mt_cli_load_whole() ? MT_KEEP_ALL : keep, fold, rc, 0,
               PTHREAD_MUTEX_INITIALIZER};
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  size_t nthreads = cores > 1 ? (size_t)cores : 1;
  if (nthreads > t->n) nthreads = t->n;
  if (nthreads > 16) nthreads = 16;
  pthread_t threads[16];
  size_t started = 0;
  /* this thread is one of the workers; a thread that cannot start leaves
   * its share to the others */
  while (started + 1 < nthreads &&
         pthread_create(&threads[started], NULL, load_worker, &l) == 0)
    started++;
  load_worker(&l);
  for (size_t i = 0; i < started; i++) pthread_join(threads[i], NULL);
  for (size_t i = 0; i < t->n; i++) {
    if (rc[i] != MT_OK) {
      fprintf(stderr, "memtrace: %s\n", mt_analysis_error(t->as[i]));
      exit(1);
    }
    const char *w = mt_analysis_warning(t->as[i]);
    if (w) fprintf(stderr, "memtrace: warning: %s\n", w);
  }
  free(rc);
}

void mt_cli_free_set(mt_cli_trace_set *t) {
  for (size_t i = 0; i < t->n; i++) {
    mt_analysis_free(t->as[i]);
    free(t->paths[i]);
  }
  free(t->as);
  free(t->paths);
}

void mt_cli_names_init(mt_cli_names *w, const mt_filter *f) {
  size_t n = mt_filter_names(f, w->name, MT_FILTER_NAMES_MAX);
  w->n = n < MT_FILTER_NAMES_MAX ? n : MT_FILTER_NAMES_MAX;
  w->traces = 0;
  memset(w->found, 0, sizeof w->found);
}

void mt_cli_names_look(mt_cli_names *w, const mt_analysis *a) {
  w->traces++;
  for (size_t k = 0; k < w->n; k++) {
    const mt_filter_name *m = &w->name[k];
    if (!w->found[k]) w->found[k] = (unsigned char)mt_analysis_has_function_like(a, m->name, m->len);
  }
}

void mt_cli_names_warn(const mt_command *cmd, const mt_cli_names *w) {
  for (size_t k = 0; k < w->n; k++) {
    if (w->found[k]) continue;
    const mt_filter_name *m = &w->name[k];
    const char *option = !strcmp(m->param, "inside")       ? "--inside"
                         : !strcmp(m->param, "not_inside") ? "--not-inside"
                                                           : "--hide";
    fprintf(stderr,
            "memtrace %s: warning: %s \"%.*s\": no function of the trace%s has it in its name\n",
            cmd->name, option, (int)(m->len < 200 ? m->len : 200), m->name,
            w->traces > 1 ? "s" : "");
  }
}

void mt_cli_warn_unmatched(const mt_command *cmd, const mt_filter *f,
                           const mt_analysis *const *as, size_t n) {
  mt_cli_names w;
  mt_cli_names_init(&w, f);
  if (w.n == 0) return;
  for (size_t i = 0; i < n; i++) mt_cli_names_look(&w, as[i]);
  mt_cli_names_warn(cmd, &w);
}

const char *mt_cli_process_text(char *buf, size_t n, const mt_cli_trace_set *t, size_t k) {
  const mt_trace_info *i = mt_analysis_info(t->as[k]);
  const char *exe = i->executable_name ? strrchr(i->executable_name, '/') : NULL;
  /* a fleet: the host too, when the traces come from more than one */
  int hosts = 0;
  for (size_t j = 1; j < t->n && !hosts; j++)
    hosts = strcmp(mt_analysis_info(t->as[j])->host_name, mt_analysis_info(t->as[0])->host_name);
  snprintf(buf, n, "[%s %llu%s%s] ", exe ? exe + 1 : i->executable_name ? i->executable_name : "?",
           (unsigned long long)i->pid, hosts ? "@" : "", hosts ? i->host_name : "");
  return buf;
}

static void json_trace(mt_json *j, const char *path, const mt_trace_info *info) {
  mt_json_obj(j);
  mt_json_key(j, "trace");
  mt_json_str(j, path);
  mt_json_key(j, "executable");
  mt_json_str(j, info->executable_name);
  mt_json_key(j, "pid");
  mt_json_uint(j, info->pid);
  mt_json_key(j, "host");
  mt_json_str(j, info->host_name);
  mt_json_key(j, "start_us");
  mt_json_uint(j, info->start_time);
  mt_json_end_obj(j);
}

void mt_cli_json_set(mt_json *j, const mt_cli_trace_set *t) {
  mt_json_key(j, "traces");
  mt_json_arr(j);
  for (size_t i = 0; i < t->n; i++) json_trace(j, t->paths[i], mt_analysis_info(t->as[i]));
  mt_json_end_arr(j);
}

void mt_cli_json_traces(mt_json *j, const char *const *paths, size_t n) {
  mt_json_key(j, "traces");
  mt_json_arr(j);
  for (size_t i = 0; i < n; i++) {
    mt_reader *r = mt_cli_open(paths[i]);
    json_trace(j, paths[i], mt_reader_info(r));
    mt_reader_close(r);
  }
  mt_json_end_arr(j);
}

int mt_cli_same_rate(const char *const *paths, size_t n) {
  double rate = 0, word = 0;
  int same = 1;
  for (size_t i = 0; i < n && same; i++) {
    mt_reader *r = mt_cli_open(paths[i]);
    const mt_trace_info *info = mt_reader_info(r);
    if (i == 0) rate = info->sample_rate, word = info->word_size;
    else same = info->sample_rate == rate && info->word_size == word;
    mt_reader_close(r);
  }
  return same;
}

mt_analysis *mt_cli_load_many(const mt_command *cmd, const char *const *paths, size_t n) {
  mt_analysis *a;
  if (mt_analysis_load_many(&a, paths, n, NULL, NULL) != MT_OK) {
    fprintf(stderr, "memtrace %s: %s\n", cmd->name, mt_analysis_error(a));
    mt_analysis_free(a);
    exit(1);
  }
  const char *w = mt_analysis_warning(a);
  if (w) fprintf(stderr, "memtrace: warning: %s\n", w);
  return a;
}

const char *mt_cli_rates_text(char *buf, size_t n, const mt_cli_trace_set *t) {
  double lo = 0, hi = 0;
  for (size_t k = 0; k < t->n; k++) {
    double r = mt_analysis_info(t->as[k])->sample_rate;
    if (k == 0 || r < lo) lo = r;
    if (k == 0 || r > hi) hi = r;
  }
  if (lo == hi) snprintf(buf, n, "Sample rate: %g", lo);
  else snprintf(buf, n, "Sample rates: %g to %g (each trace's estimates at its own rate, added)",
                lo, hi);
  return buf;
}

char *mt_cli_filter_text(const mt_filter *f) {
  size_t n = mt_filter_describe(f, NULL, 0);
  char *text = malloc(n + 1);
  if (!text) {
    fprintf(stderr, "memtrace: out of memory\n");
    exit(1);
  }
  mt_filter_describe(f, text, n + 1);
  return text;
}

char *mt_cli_filter_words(const mt_filter *f, int native) {
  char *text = mt_cli_filter_text(f);
  if (!native) return text;
  /* "collected" -> "freed", in place (shorter) */
  char *w = text;
  for (const char *r = text; *r;) {
    if (strncmp(r, "collected", 9) == 0) {
      memcpy(w, "freed", 5);
      w += 5, r += 9;
    } else {
      *w++ = *r++;
    }
  }
  *w = 0;
  return text;
}

void mt_cli_json_begin(mt_json *j, const mt_command *cmd, const char *path,
                       const mt_analysis *a) {
  mt_json_init(j);
  j->pretty = 1;
  mt_json_obj(j);
  mt_json_key(j, "command");
  mt_json_str(j, cmd->name);
  if (a) {
    mt_json_key(j, "trace");
    mt_json_str(j, path);
    mt_json_key(j, "sample_rate");
    mt_json_num(j, mt_analysis_info(a)->sample_rate);
  }
}

void mt_cli_json_end(mt_json *j, const mt_command *cmd) {
  mt_json_end_obj(j);
  size_t len;
  char *text = mt_json_take(j, &len);
  if (!text) mt_cli_nomem(cmd);
  mt_out o;
  mt_out_init(&o, STDOUT_FILENO);
  mt_out_write(&o, text, len);
  mt_out_flush(&o);
  mt_out_free(&o);
  free(text);
}
