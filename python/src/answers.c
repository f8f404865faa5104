/* memtrace_c._core: rankings, leaks, statistics and backtraces. Rankings
 * and leaks come as columns (numbers in arrays, names in lists: one entry
 * per group, never per allocation); the statistics as their JSON document,
 * whose shares and rates the library computes (memtrace/json.h). */
#include "core.h"

#include <inttypes.h>
#include <stdlib.h>

#include "memtrace/json.h"
#include "memtrace/rank.h"
#include "memtrace/stats.h"

/* ---- rankings and leaks ---------------------------------------------------- */

enum { N_BYTES, N_BYTES_LO, N_BYTES_HI, N_OBJ, N_OBJ_LO, N_OBJ_HI, N_OLDEST, N_NEWEST, N_AGE,
       NDBL };
static const char *const dbl_names[NDBL] = {"bytes",        "bytes_lo",     "bytes_hi",
                                            "objects",      "objects_lo",   "objects_hi",
                                            "oldest_alloc", "newest_alloc", "age"};
enum { U_SAMPLES, U_SAMPLED, U_LINE, U_FRAMES_TOTAL, U_BACKTRACE, NU64 };
static const char *const u64_names[NU64] = {"samples", "sampled_objects", "line",
                                            "frames_total", "backtrace"};

/* A frame as the command line prints it: "function (file:line)", or the
 * code in hex. */
static PyObject *hex(const char *prefix, uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%s%" PRIx64, prefix, v);
  return PyUnicode_FromString(buf);
}

static PyObject *frame_text(const mt_stack_frame *f) {
  if (!f->function) return hex("#", f->code);
  PyObject *fn = mt_py_str(f->function), *file = mt_py_str(f->file), *s = NULL;
  if (fn && file) s = PyUnicode_FromFormat("%U (%U:%u)", fn, file, (unsigned)f->line);
  Py_XDECREF(fn);
  Py_XDECREF(file);
  return s;
}

static PyObject *stack_tuple(const mt_rank_row *row) {
  PyObject *t = PyTuple_New((Py_ssize_t)row->nframes);
  for (size_t k = 0; t && k < row->nframes; k++) {
    PyObject *s = frame_text(&row->frames[k]);
    if (!s) Py_CLEAR(t);
    else PyTuple_SET_ITEM(t, (Py_ssize_t)k, s);
  }
  return t;
}

/* The site's names: function and file (None for a code or no backtrace),
 * code (hex, or None). */
static int site_names(const mt_site *s, PyObject *fn, PyObject *file, PyObject *code,
                      Py_ssize_t i) {
  int loc = s->kind == MT_SITE_LOCATION;
  PyObject *a = loc ? mt_py_str(s->function) : Py_NewRef(Py_None);
  PyObject *b = loc ? mt_py_str(s->file) : Py_NewRef(Py_None);
  PyObject *c = s->kind == MT_SITE_CODE ? hex("", s->code) : Py_NewRef(Py_None);
  if (!a || !b || !c) {
    Py_XDECREF(a);
    Py_XDECREF(b);
    Py_XDECREF(c);
    return -1;
  }
  PyList_SET_ITEM(fn, i, a);
  PyList_SET_ITEM(file, i, b);
  PyList_SET_ITEM(code, i, c);
  return 0;
}

static PyObject *estimate(const mt_estimate *e) {
  return Py_BuildValue("(ddd)", e->value, e->lo, e->hi);
}

static PyObject *tally_dict(const mt_analysis *a, const mt_tally *t) {
  mt_estimate b = mt_estimate_bytes(a, t), o = mt_estimate_objects(a, t);
  return Py_BuildValue("{s:N,s:N,s:K,s:K}", "bytes", estimate(&b), "objects", estimate(&o),
                       "samples", (unsigned long long)t->samples, "sampled_objects",
                       (unsigned long long)t->objects);
}

/* The ranking's rows as columns, and its totals. */
static PyObject *ranking_dict(const mt_analysis *a, const mt_ranking *r, const mt_filter *f) {
  Py_ssize_t n = (Py_ssize_t)r->nrows;
  PyObject *d = PyDict_New(), *dbl[NDBL] = {0}, *u64[NU64] = {0};
  PyObject *fn = PyList_New(n), *file = PyList_New(n), *code = PyList_New(n),
           *stack = PyList_New(n);
  int ok = d && fn && file && code && stack;
  for (int k = 0; ok && k < NDBL; k++) ok = (dbl[k] = mt_py_array(n, NPY_FLOAT64)) != NULL;
  for (int k = 0; ok && k < NU64; k++) ok = (u64[k] = mt_py_array(n, NPY_UINT64)) != NULL;
  for (Py_ssize_t i = 0; ok && i < n; i++) {
    const mt_rank_row *row = &r->rows[i];
    double dv[NDBL] = {row->bytes.value,   row->bytes.lo,   row->bytes.hi,
                       row->objects.value, row->objects.lo, row->objects.hi,
                       (double)row->oldest / 1e6, (double)row->newest / 1e6,
                       (double)(r->duration - row->oldest) / 1e6};
    uint64_t uv[NU64] = {row->tally.samples, row->tally.objects, row->site.line,
                         row->frames_total, row->backtrace};
    for (int k = 0; k < NDBL; k++) ((double *)PyArray_DATA((PyArrayObject *)dbl[k]))[i] = dv[k];
    for (int k = 0; k < NU64; k++)
      ((uint64_t *)PyArray_DATA((PyArrayObject *)u64[k]))[i] = uv[k];
    ok = site_names(&row->site, fn, file, code, i) == 0;
    PyObject *st = ok ? stack_tuple(row) : NULL;
    if (!st) ok = 0;
    else PyList_SET_ITEM(stack, i, st);
  }
  for (int k = 0; ok && k < NDBL; k++) ok = PyDict_SetItemString(d, dbl_names[k], dbl[k]) == 0;
  for (int k = 0; ok && k < NU64; k++) ok = PyDict_SetItemString(d, u64_names[k], u64[k]) == 0;
  char text[1024];
  mt_filter_describe(f, text, sizeof text);
  ok = ok && PyDict_SetItemString(d, "function", fn) == 0 &&
       PyDict_SetItemString(d, "file", file) == 0 && PyDict_SetItemString(d, "code", code) == 0 &&
       PyDict_SetItemString(d, "stack", stack) == 0 &&
       mt_py_set(d, "groups", PyLong_FromSize_t(r->groups)) == 0 &&
       mt_py_set(d, "total", tally_dict(a, &r->total)) == 0 &&
       mt_py_set(d, "trace_total", tally_dict(a, &r->trace_total)) == 0 &&
       mt_py_set(d, "duration", PyFloat_FromDouble((double)r->duration / 1e6)) == 0 &&
       mt_py_set(d, "filter_text", mt_py_str(text)) == 0;
  for (int k = 0; k < NDBL; k++) Py_XDECREF(dbl[k]);
  for (int k = 0; k < NU64; k++) Py_XDECREF(u64[k]);
  Py_XDECREF(fn);
  Py_XDECREF(file);
  Py_XDECREF(code);
  Py_XDECREF(stack);
  if (!ok) Py_CLEAR(d);
  return d;
}

PyObject *mt_py_top(mt_py_trace *self, PyObject *args) {
  int by, order;
  Py_ssize_t limit, depth;
  PyObject *spec;
  if (!PyArg_ParseTuple(args, "iinnO", &by, &order, &limit, &depth, &spec)) return NULL;
  if (by < MT_BY_FUNCTION || by > MT_BY_STACK || order < MT_ORDER_BYTES ||
      order > MT_ORDER_OBJECTS || limit < 0 || depth < 0) {
    PyErr_SetString(PyExc_ValueError, "top: bad grouping, order, limit or depth");
    return NULL;
  }
  mt_filter f;
  if (mt_py_filter(spec, &f) < 0) return NULL;
  mt_rank_spec rs = {(mt_group_by)by, (mt_rank_order)order, (size_t)limit, (size_t)depth};
  mt_ranking *r;
  int rc;
  MT_PY_RELEASE(self)
  rc = mt_rank(self->a, &f, &rs, &r);
  MT_PY_REACQUIRE(self)
  if (rc != MT_OK) return mt_py_status(rc, "top");
  PyObject *d = ranking_dict(self->a, r, &f);
  mt_ranking_free(r);
  return d;
}

PyObject *mt_py_leaks(mt_py_trace *self, PyObject *args) {
  Py_ssize_t limit, depth;
  int order;
  PyObject *spec;
  if (!PyArg_ParseTuple(args, "innO", &order, &limit, &depth, &spec)) return NULL;
  if (limit < 0 || depth < 0 || order < MT_ORDER_BYTES || order > MT_ORDER_OLDEST) {
    PyErr_SetString(PyExc_ValueError, "leaks: bad order, limit or depth");
    return NULL;
  }
  mt_filter f;
  if (mt_py_filter(spec, &f) < 0) return NULL;
  mt_ranking *r;
  int rc;
  MT_PY_RELEASE(self)
  rc = mt_leaks(self->a, &f, (mt_rank_order)order, (size_t)limit, (size_t)depth, &r);
  MT_PY_REACQUIRE(self)
  if (rc == MT_ERR_INVALID) {
    PyErr_SetString(PyExc_ValueError,
                    "collected: leaks are the objects never collected; a window of "
                    "collection times contradicts it");
    return NULL;
  }
  if (rc != MT_OK) return mt_py_status(rc, "leaks");
  mt_filter lf;
  mt_leaks_filter(&f, &lf);
  PyObject *d = ranking_dict(self->a, r, &lf);
  mt_ranking_free(r);
  return d;
}

/* ---- statistics ------------------------------------------------------------ */

PyObject *mt_py_stats(mt_py_trace *self, PyObject *args) {
  Py_ssize_t nchunks;
  PyObject *spec;
  if (!PyArg_ParseTuple(args, "nO", &nchunks, &spec)) return NULL;
  if (nchunks < 1) {
    PyErr_SetString(PyExc_ValueError, "chunks: at least 1");
    return NULL;
  }
  mt_filter f;
  if (mt_py_filter(spec, &f) < 0) return NULL;
  mt_stats *s;
  int rc;
  char *text = NULL;
  size_t len = 0;
  MT_PY_RELEASE(self)
  rc = mt_stats_compute(self->a, &f, (size_t)nchunks, &s);
  if (rc == MT_OK) {
    mt_json j;
    mt_json_init(&j);
    mt_json_obj(&j);
    mt_json_stats(&j, s, &f);
    mt_json_key(&j, "histograms");
    mt_json_obj(&j);
    mt_json_histograms(&j, s);
    mt_json_end_obj(&j);
    mt_json_end_obj(&j);
    text = mt_json_take(&j, &len);
    mt_json_free(&j);
    mt_stats_free(s);
    if (!text) rc = MT_ERR_NOMEM;
  }
  MT_PY_REACQUIRE(self)
  if (rc != MT_OK) return mt_py_status(rc, "stats");
  PyObject *str = PyUnicode_DecodeUTF8(text, (Py_ssize_t)len, "strict");
  free(text);
  return str;
}

/* ---- backtraces ------------------------------------------------------------ */

/* Its frames innermost first: each code's locations innermost first, a
 * location `inlined` when the compiler inlined its function into the next
 * one out (every location of a code but its outermost). */
PyObject *mt_py_backtrace(mt_py_trace *self, PyObject *args) {
  unsigned long long bt;
  if (!PyArg_ParseTuple(args, "K", &bt)) return NULL;
  const mt_analysis *a = self->a;
  if (bt >= mt_analysis_backtrace_count(a)) {
    PyErr_Format(PyExc_IndexError, "backtrace %llu: the trace has %zu (0 to %zu)", bt,
                 mt_analysis_backtrace_count(a), mt_analysis_backtrace_count(a) - 1);
    return NULL;
  }
  size_t n = mt_analysis_backtrace_codes(a, (uint32_t)bt, NULL, 0);
  uint32_t *codes = malloc((n ? n : 1) * sizeof *codes);
  if (!codes) return PyErr_NoMemory();
  mt_analysis_backtrace_codes(a, (uint32_t)bt, codes, n);
  PyObject *fn = PyList_New(0), *file = PyList_New(0), *line = PyList_New(0),
           *inl = PyList_New(0), *code = PyList_New(0);
  int ok = fn && file && line && inl && code;
  for (size_t c = n; ok && c-- > 0;) {
    size_t nf;
    const mt_frame *fr = mt_analysis_code_frames(a, codes[c], &nf);
    PyObject *value = hex("", mt_analysis_code_value(a, codes[c]));
    ok = value != NULL;
    for (size_t k = nf; ok && k-- > 0;) {
      PyObject *v[4] = {mt_py_str(mt_analysis_function_name(a, fr[k].function)),
                        mt_py_str(mt_analysis_function_file(a, fr[k].function)),
                        PyLong_FromUnsignedLong(fr[k].line), PyBool_FromLong(k > 0)};
      PyObject *lists[4] = {fn, file, line, inl};
      for (int m = 0; m < 4; m++) {
        if (ok && (!v[m] || PyList_Append(lists[m], v[m]) < 0)) ok = 0;
        Py_XDECREF(v[m]);
      }
      if (ok) ok = PyList_Append(code, value) == 0;
    }
    if (ok && nf == 0) { /* a code the trace never described */
      ok = PyList_Append(fn, Py_None) == 0 && PyList_Append(file, Py_None) == 0 &&
           PyList_Append(line, Py_None) == 0 && PyList_Append(inl, Py_False) == 0 &&
           PyList_Append(code, value) == 0;
    }
    Py_XDECREF(value);
  }
  free(codes);
  PyObject *d = ok ? Py_BuildValue("{s:O,s:O,s:O,s:O,s:O}", "function", fn, "file", file,
                                   "line", line, "inlined", inl, "code", code)
                   : NULL;
  Py_XDECREF(fn);
  Py_XDECREF(file);
  Py_XDECREF(line);
  Py_XDECREF(inl);
  Py_XDECREF(code);
  return d;
}
