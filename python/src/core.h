/*
 * memtrace_c._core: the CPython extension over libmemtrace's analysis API.
 *
 * The extension is a renderer: it turns the library's answers into numpy
 * arrays (one per column, filled in C with the GIL released: no Python
 * object per allocation) and small dicts; memtrace_c (Python) shapes them
 * into pandas DataFrames. It computes no estimate, filter or tree itself.
 *
 * Filters come from Python as a sequence of (keyword, parameter, text)
 * triples: `parameter` and `text` are the filter language's
 * (memtrace/filter.h); `keyword` names the condition in errors.
 */
#ifndef MT_PY_CORE_H
#define MT_PY_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#ifndef MT_PY_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#endif
#define PY_ARRAY_UNIQUE_SYMBOL mt_py_ARRAY_API
#include <numpy/arrayobject.h>

#include "memtrace/analysis.h"
#include "memtrace/filter.h"

typedef struct {
  PyObject_HEAD
  mt_analysis *a;
  PyObject *path; /* str */
  mt_follow *fw;  /* a trace followed as it grows (follow.c), which owns a; or NULL */
  int busy;       /* answers computing with the GIL released (update refuses then) */
} mt_py_trace;

/* Around an answer's work on the analysis with the GIL released: counted,
 * so that a followed trace's update (which holds the GIL throughout) never
 * changes the analysis under it. */
#define MT_PY_RELEASE(t) \
  (t)->busy++;           \
  Py_BEGIN_ALLOW_THREADS
#define MT_PY_REACQUIRE(t) \
  Py_END_ALLOW_THREADS     \
  (t)->busy--;

extern PyTypeObject mt_py_trace_type;
extern PyObject *mt_py_trace_error; /* memtrace_c.TraceError */

/* Fills f from the filter triples (None: no filter). The filter points into
 * the strings of `spec`, which the caller keeps alive while f is used.
 * 0, or -1 with ValueError naming the keyword. */
int mt_py_filter(PyObject *spec, mt_filter *f);

/* A new 1-d array of n elements of a numpy type; NULL with an exception. */
PyObject *mt_py_array(npy_intp n, int type);

/* A str from UTF-8 that may be invalid (bytes that are not UTF-8 become
 * U+FFFD, as in the JSON documents); "" for NULL. */
PyObject *mt_py_str(const char *s);

/* Sets d[key] = value and drops the reference to value; -1 if value is
 * NULL or the set fails. */
int mt_py_set(PyObject *d, const char *key, PyObject *value);

/* Raises MemoryError for MT_ERR_NOMEM, ValueError for MT_ERR_INVALID with
 * `what`; returns NULL. */
PyObject *mt_py_status(int status, const char *what);

/* Raises TraceError(message) with its path, offset (MT_NO_OFFSET: None)
 * and status name; returns NULL. */
PyObject *mt_py_trace_error_raise(PyObject *path, const char *message, uint64_t offset,
                                  const char *status);

/* follow(path) -> Trace: a trace still being written (follow.c). */
PyObject *mt_py_follow(PyObject *module, PyObject *args);
/* Trace.update(end) -> events read since (follow.c). */
PyObject *mt_py_update(mt_py_trace *self, PyObject *args);

/* The methods of Trace, by file. */
PyObject *mt_py_objects(mt_py_trace *self, PyObject *args);   /* objects.c  */
PyObject *mt_py_timeline(mt_py_trace *self, PyObject *args);  /* objects.c  */
PyObject *mt_py_top(mt_py_trace *self, PyObject *args);       /* answers.c  */
PyObject *mt_py_leaks(mt_py_trace *self, PyObject *args);     /* answers.c  */
PyObject *mt_py_stats(mt_py_trace *self, PyObject *args);     /* answers.c  */
PyObject *mt_py_backtrace(mt_py_trace *self, PyObject *args); /* answers.c  */

#endif /* MT_PY_CORE_H */
