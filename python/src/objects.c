/* memtrace_c._core: the per-object columns and the live heap over time,
 * as numpy arrays filled in C. */
#include "core.h"

#include <math.h>
#include <stdlib.h>

#include "memtrace/stats.h"

static double seconds(uint64_t us) { return us == MT_NEVER ? NAN : (double)us / 1e6; }

enum {
  C_ALLOC, C_PROMOTE, C_FREE, C_SIZE, C_WORDS, C_NSAMPLES, C_SOURCE, C_MAPPING, C_BACKTRACE, NCOLS
};
static const char *const col_names[NCOLS] = {"alloc_time", "promote_time", "free_time",
                                             "size",       "words",        "nsamples",
                                             "source",     "mapping",      "backtrace"};
static const int col_types[NCOLS] = {NPY_FLOAT64, NPY_FLOAT64, NPY_FLOAT64,
                                     NPY_UINT64,  NPY_UINT64,  NPY_UINT64,
                                     NPY_INT8,    NPY_BOOL,    NPY_UINT32};

typedef struct {
  double *alloc, *promote, *free;
  uint64_t *size, *words, *nsamples;
  int8_t *source;
  npy_bool *mapping;
  uint32_t *backtrace;
} columns;

/* Bytes as the size filter computes them; a corrupt trace's lengths past
 * 2^64 bytes saturate. */
static uint64_t bytes_of(uint64_t words, double word_bytes) {
  double b = (double)words * word_bytes;
  return b >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)b;
}

/* Row k from object i. */
static void fill(const mt_analysis *a, const uint8_t *mask, size_t nobj, const columns *c) {
  double wb = mt_analysis_word_bytes(a);
  for (size_t i = 0, k = 0; i < nobj; i++) {
    if (mask && !mask[i]) continue;
    mt_object o = mt_analysis_object(a, i);
    c->alloc[k] = seconds(o.alloc_time);
    c->promote[k] = seconds(o.promote_time);
    c->free[k] = seconds(o.free_time);
    c->size[k] = bytes_of(o.length, wb);
    c->words[k] = o.length;
    c->nsamples[k] = o.nsamples;
    c->source[k] = (int8_t)o.source;
    c->mapping[k] = (npy_bool)(o.mapping != 0);
    c->backtrace[k] = o.backtrace;
    k++;
  }
}

PyObject *mt_py_objects(mt_py_trace *self, PyObject *args) {
  PyObject *spec;
  if (!PyArg_ParseTuple(args, "O", &spec)) return NULL;
  mt_filter f;
  if (mt_py_filter(spec, &f) < 0) return NULL;
  const mt_analysis *a = self->a;
  size_t nobj = mt_analysis_object_count(a), n = nobj;
  uint8_t *mask = NULL;
  if (!mt_filter_selects_all(&f)) {
    mask = malloc(nobj ? nobj : 1);
    if (!mask) return PyErr_NoMemory();
    int rc;
    MT_PY_RELEASE(self)
    rc = mt_analysis_select(a, &f, mask, &n);
    MT_PY_REACQUIRE(self)
    if (rc != MT_OK) {
      free(mask);
      return mt_py_status(rc, "selecting objects");
    }
  }
  PyObject *arrays[NCOLS] = {0}, *d = PyDict_New();
  int ok = d != NULL;
  for (int k = 0; ok && k < NCOLS; k++) ok = (arrays[k] = mt_py_array((npy_intp)n, col_types[k])) != NULL;
  if (ok) {
#define DATA(k) PyArray_DATA((PyArrayObject *)arrays[k])
    columns c = {DATA(C_ALLOC),    DATA(C_PROMOTE), DATA(C_FREE),    DATA(C_SIZE),
                 DATA(C_WORDS),    DATA(C_NSAMPLES), DATA(C_SOURCE), DATA(C_MAPPING),
                 DATA(C_BACKTRACE)};
#undef DATA
    MT_PY_RELEASE(self)
    fill(a, mask, nobj, &c);
    MT_PY_REACQUIRE(self)
    for (int k = 0; ok && k < NCOLS; k++) ok = PyDict_SetItemString(d, col_names[k], arrays[k]) == 0;
  }
  free(mask);
  for (int k = 0; k < NCOLS; k++) Py_XDECREF(arrays[k]);
  if (!ok) Py_CLEAR(d);
  return d;
}

/* ---- the live heap --------------------------------------------------------- */

/* An array of n doubles copied from v, divided by `unit` (as the JSON
 * document divides, so that the figures are the same doubles). */
static PyObject *doubles(const double *v, size_t n, double unit) {
  PyObject *arr = mt_py_array((npy_intp)n, NPY_FLOAT64);
  if (!arr) return NULL;
  double *out = PyArray_DATA((PyArrayObject *)arr);
  for (size_t i = 0; i < n; i++) out[i] = v[i] / unit;
  return arr;
}

/* The filtered live bytes' 95% intervals: live bytes are samples x (word
 * bytes / rate), so each bin's figure is a tally of samples. */
static int intervals(const mt_timeline *t, PyObject *d) {
  PyObject *lo = mt_py_array((npy_intp)t->nbins, NPY_FLOAT64);
  PyObject *hi = mt_py_array((npy_intp)t->nbins, NPY_FLOAT64);
  if (!lo || !hi) {
    Py_XDECREF(lo);
    Py_XDECREF(hi);
    return -1;
  }
  double *l = PyArray_DATA((PyArrayObject *)lo), *h = PyArray_DATA((PyArrayObject *)hi);
  double per_sample = t->sampling.word_bytes / t->sampling.rate;
  for (size_t i = 0; i < t->nbins; i++) {
    mt_tally tally = {0};
    double samples = t->filtered[i] / per_sample; /* NaN for a trace of rate 0 */
    tally.samples = samples >= 0.5 && samples < 9e18 ? (uint64_t)llround(samples) : 0;
    mt_estimate e = mt_sampling_bytes(&t->sampling, &tally);
    l[i] = e.lo;
    h[i] = e.hi;
  }
  return mt_py_set(d, "live_bytes_lo", lo) | mt_py_set(d, "live_bytes_hi", hi);
}

PyObject *mt_py_timeline(mt_py_trace *self, PyObject *args) {
  Py_ssize_t nbins;
  PyObject *spec;
  if (!PyArg_ParseTuple(args, "nO", &nbins, &spec)) return NULL;
  if (nbins < 1) {
    PyErr_SetString(PyExc_ValueError, "bins: at least 1");
    return NULL;
  }
  mt_filter f;
  if (mt_py_filter(spec, &f) < 0) return NULL;
  mt_timeline *t;
  int rc;
  MT_PY_RELEASE(self)
  rc = mt_timeline_compute(self->a, &f, (size_t)nbins, &t);
  MT_PY_REACQUIRE(self)
  if (rc != MT_OK) return mt_py_status(rc, "timeline");
  size_t n = t->nbins;
  PyObject *d = PyDict_New();
  if (!d || mt_py_set(d, "time", doubles(t->end, n, 1e6)) < 0 ||
      mt_py_set(d, "live_bytes", doubles(t->filtered, n, 1)) < 0 || intervals(t, d) < 0 ||
      mt_py_set(d, "all_bytes", doubles(t->live, n, 1)) < 0 ||
      mt_py_set(d, "all_min", doubles(t->min, n, 1)) < 0 ||
      mt_py_set(d, "all_max", doubles(t->max, n, 1)) < 0 ||
      mt_py_set(d, "peak_time", PyFloat_FromDouble((double)t->peak_time / 1e6)) < 0 ||
      mt_py_set(d, "peak_bytes", Py_BuildValue("(ddd)", t->peak_bytes.value, t->peak_bytes.lo,
                                               t->peak_bytes.hi)) < 0)
    Py_CLEAR(d);
  mt_timeline_free(t);
  return d;
}
