/* memtrace_c._core: the module, the Trace type, loading and the helpers
 * the answers share (core.h). */
#define MT_PY_IMPORT_ARRAY
#include "core.h"

#include <stdint.h>

PyObject *mt_py_trace_error;

/* ---- helpers --------------------------------------------------------------- */

/* The columns' memory comes from malloc, not numpy's allocator: numpy
 * advises transparent huge pages for its large arrays, and a column is
 * written once, front to back, right after it is allocated, where a huge
 * page's first touch costs the most (the kernel may compact memory to find
 * one, in the fault) and its fewer TLB misses pay back least. The array
 * frees the block through its base, a capsule. */
static void free_block(PyObject *capsule) { free(PyCapsule_GetPointer(capsule, NULL)); }

PyObject *mt_py_array(npy_intp n, int type) {
  PyArray_Descr *descr = PyArray_DescrFromType(type);
  if (!descr) return NULL;
  size_t bytes = (size_t)n * (size_t)descr->elsize;
  void *block = malloc(bytes ? bytes : 1);
  PyObject *capsule = block ? PyCapsule_New(block, NULL, free_block) : NULL;
  if (!capsule) {
    Py_DECREF(descr);
    free(block);
    return block ? NULL : PyErr_NoMemory();
  }
  /* steals descr, even when it fails */
  PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, descr, 1, &n, NULL, block,
                                       NPY_ARRAY_CARRAY, NULL);
  if (!arr) {
    Py_DECREF(capsule); /* frees block */
    return NULL;
  }
  if (PyArray_SetBaseObject((PyArrayObject *)arr, capsule) < 0) { /* steals capsule */
    Py_DECREF(arr);
    return NULL;
  }
  return arr;
}

PyObject *mt_py_str(const char *s) {
  if (!s) s = "";
  return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

int mt_py_set(PyObject *d, const char *key, PyObject *value) {
  if (!value) return -1;
  int rc = PyDict_SetItemString(d, key, value);
  Py_DECREF(value);
  return rc;
}

PyObject *mt_py_status(int status, const char *what) {
  if (status == MT_ERR_NOMEM) return PyErr_NoMemory();
  PyErr_Format(PyExc_ValueError, "%s: %s", what, mt_status_name(status));
  return NULL;
}

int mt_py_filter(PyObject *spec, mt_filter *f) {
  mt_filter_init(f);
  if (spec == Py_None) return 0;
  PyObject *seq = PySequence_Fast(spec, "a filter is a sequence of (keyword, parameter, text)");
  if (!seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  for (Py_ssize_t i = 0; i < n; i++) {
    const char *keyword, *param, *text;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "sss", &keyword, &param, &text))
      goto fail;
    char err[512];
    int rc = mt_filter_set(f, param, text, err, sizeof err);
    if (rc == 1) {
      PyErr_Format(PyExc_ValueError, "%s: no such filter", keyword);
      goto fail;
    }
    if (rc != MT_OK) {
      PyErr_Format(PyExc_ValueError, "%s: %s", keyword, err);
      goto fail;
    }
  }
  Py_DECREF(seq);
  return 0;
fail:
  Py_DECREF(seq);
  return -1;
}

/* ---- loading --------------------------------------------------------------- */

typedef struct {
  PyObject *callback; /* callable(done, total) or None */
  PyObject *type, *value, *tb; /* the exception that cancelled the load */
} progress_ctx;

/* Runs with the GIL released around it: takes it to check for Ctrl-C and
 * to call the callback; an exception cancels the load and is raised once
 * the load returns. */
static int on_progress(void *vctx, uint64_t done, uint64_t total) {
  progress_ctx *c = vctx;
  PyGILState_STATE g = PyGILState_Ensure();
  int stop = PyErr_CheckSignals() < 0;
  if (!stop && c->callback != Py_None) {
    PyObject *r = PyObject_CallFunction(c->callback, "KK", (unsigned long long)done,
                                        (unsigned long long)total);
    stop = r == NULL;
    Py_XDECREF(r);
  }
  if (stop) PyErr_Fetch(&c->type, &c->value, &c->tb);
  PyGILState_Release(g);
  return stop;
}

/* Raises TraceError(message) with its path, offset (None when the problem
 * has no place) and status name. */
PyObject *mt_py_trace_error_raise(PyObject *path, const char *message, uint64_t offset,
                                  const char *status) {
  PyObject *e = PyObject_CallFunction(mt_py_trace_error, "s", message);
  if (!e) return NULL;
  PyObject *off = offset == MT_NO_OFFSET ? Py_NewRef(Py_None)
                                         : PyLong_FromUnsignedLongLong(offset);
  PyObject *st = PyUnicode_FromString(status);
  if (off && st && PyObject_SetAttrString(e, "path", path) == 0 &&
      PyObject_SetAttrString(e, "offset", off) == 0 &&
      PyObject_SetAttrString(e, "status", st) == 0)
    PyErr_SetObject(mt_py_trace_error, e);
  Py_XDECREF(off);
  Py_XDECREF(st);
  Py_DECREF(e);
  return NULL;
}

/* path: a str or path-like, or a list of them (several traces read as
 * one); their file-system encodings in *fs (a new list), C strings in
 * *names (to free), their count in *n. -1 with an exception set. */
static int paths_of(PyObject *path, PyObject **fs, const char ***names, size_t *n) {
  PyObject *list = PyList_Check(path) ? Py_NewRef(path) : PyList_New(1);
  if (!list) return -1;
  if (!PyList_Check(path)) PyList_SET_ITEM(list, 0, Py_NewRef(path));
  *n = (size_t)PyList_GET_SIZE(list);
  *fs = PyList_New((Py_ssize_t)*n);
  *names = PyMem_Malloc((*n ? *n : 1) * sizeof **names);
  if (!*fs || !*names || *n == 0) {
    if (*n == 0) PyErr_SetString(PyExc_ValueError, "no trace to open");
    else if (!*names) PyErr_NoMemory();
    goto fail;
  }
  for (size_t i = 0; i < *n; i++) {
    PyObject *b;
    if (!PyUnicode_FSConverter(PyList_GET_ITEM(list, (Py_ssize_t)i), &b)) goto fail;
    PyList_SET_ITEM(*fs, (Py_ssize_t)i, b);
    (*names)[i] = PyBytes_AS_STRING(b);
  }
  Py_DECREF(list);
  return 0;
fail:
  Py_DECREF(list);
  Py_XDECREF(*fs);
  PyMem_Free(*names);
  *fs = NULL;
  *names = NULL;
  return -1;
}

static PyObject *load(PyObject *module, PyObject *args) {
  (void)module;
  PyObject *path, *fs;
  const char **names;
  size_t n;
  progress_ctx c = {Py_None, NULL, NULL, NULL};
  int allow_truncated;
  PyObject *given;
  if (!PyArg_ParseTuple(args, "OOp", &given, &c.callback, &allow_truncated)) return NULL;
  if (paths_of(given, &fs, &names, &n)) return NULL;
  /* what Trace.path and errors show: the path as a str, or a list of them */
  if (PyList_Check(given)) {
    path = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; path && i < n; i++) {
      PyObject *one;
      if (!PyUnicode_FSDecoder(PyList_GET_ITEM(given, (Py_ssize_t)i), &one)) {
        Py_CLEAR(path);
        break;
      }
      PyList_SET_ITEM(path, (Py_ssize_t)i, one);
    }
  } else if (!PyUnicode_FSDecoder(given, &path)) {
    path = NULL;
  }
  if (!path) {
    Py_DECREF(fs);
    PyMem_Free(names);
    return NULL;
  }
  mt_analysis *a = NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = mt_analysis_load_many(&a, names, n, on_progress, &c);
  Py_END_ALLOW_THREADS
  Py_DECREF(fs);
  PyMem_Free(names);
  PyObject *result = NULL;
  if (c.type) {
    PyErr_Restore(c.type, c.value, c.tb);
  } else if (rc == MT_ERR_NOMEM && !a) {
    PyErr_NoMemory();
  } else if (rc != MT_OK) {
    mt_py_trace_error_raise(path, mt_analysis_error(a), mt_analysis_error_offset(a), mt_status_name(rc));
  } else if (!allow_truncated && mt_analysis_truncated(a) != MT_NO_OFFSET) {
    char msg[1024];
    snprintf(msg, sizeof msg,
             "%s (open it with allow_truncated=True to read those packets)",
             mt_analysis_warning(a));
    mt_py_trace_error_raise(path, msg, mt_analysis_truncated(a), "truncated trace");
  } else {
    mt_py_trace *t = PyObject_New(mt_py_trace, &mt_py_trace_type);
    if (t) {
      t->a = a;
      t->path = path;
      t->fw = NULL;
      t->busy = 0;
      return (PyObject *)t;
    }
  }
  mt_analysis_free(a);
  Py_DECREF(path);
  return result;
}

/* ---- Trace ----------------------------------------------------------------- */

static void trace_dealloc(mt_py_trace *self) {
  if (self->fw) mt_follow_close(self->fw); /* and its analysis */
  else mt_analysis_free(self->a);
  Py_XDECREF(self->path);
  PyObject_Free(self);
}

/* The function names of the filter's conditions (inside, not_inside, each
 * of hide's) that no function of the trace has in its name, as
 * (parameter, name) tuples. */
static PyObject *unmatched(mt_py_trace *self, PyObject *args) {
  PyObject *spec;
  if (!PyArg_ParseTuple(args, "O", &spec)) return NULL;
  mt_filter f;
  if (mt_py_filter(spec, &f) < 0) return NULL;
  mt_filter_name names[MT_FILTER_NAMES_MAX];
  size_t n = mt_filter_unmatched(self->a, &f, names, MT_FILTER_NAMES_MAX);
  PyObject *out = PyList_New(0);
  for (size_t k = 0; out && k < n; k++) {
    PyObject *t = Py_BuildValue("(ss#)", names[k].param, names[k].name, (Py_ssize_t)names[k].len);
    if (!t || PyList_Append(out, t) < 0) Py_CLEAR(out);
    Py_XDECREF(t);
  }
  return out;
}

static PyObject *info(mt_py_trace *self, PyObject *unused) {
  (void)unused;
  const mt_analysis *a = self->a;
  const mt_trace_info *i = mt_analysis_info(a);
  uint64_t peak_time, peak_samples;
  mt_analysis_peak(a, &peak_time, &peak_samples);
  const char *w = mt_analysis_warning(a);
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  if (PyDict_SetItemString(d, "path", self->path) < 0 ||
      mt_py_set(d, "executable", mt_py_str(i->executable_name)) < 0 ||
      mt_py_set(d, "pid", PyLong_FromUnsignedLongLong(i->pid)) < 0 ||
      mt_py_set(d, "host", mt_py_str(i->host_name)) < 0 ||
      mt_py_set(d, "start_time_us", PyLong_FromUnsignedLongLong(i->start_time)) < 0 ||
      mt_py_set(d, "sample_rate", PyFloat_FromDouble(i->sample_rate)) < 0 ||
      mt_py_set(d, "word_size", PyLong_FromUnsignedLong(i->word_size)) < 0 ||
      mt_py_set(d, "context", mt_py_str(i->context)) < 0 ||
      mt_py_set(d, "runtime_params", mt_py_str(i->runtime_params)) < 0 ||
      mt_py_set(d, "format_version", PyLong_FromUnsignedLong(i->version)) < 0 ||
      mt_py_set(d, "duration_us", PyLong_FromUnsignedLongLong(mt_analysis_duration(a))) < 0 ||
      mt_py_set(d, "sampled_objects", PyLong_FromSize_t(mt_analysis_object_count(a))) < 0 ||
      mt_py_set(d, "backtraces", PyLong_FromSize_t(mt_analysis_backtrace_count(a))) < 0 ||
      mt_py_set(d, "peak_time_us", PyLong_FromUnsignedLongLong(peak_time)) < 0 ||
      mt_py_set(d, "peak_samples", PyLong_FromUnsignedLongLong(peak_samples)) < 0 ||
      mt_py_set(d, "warning", w ? mt_py_str(w) : Py_NewRef(Py_None)) < 0) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}

static PyMethodDef trace_methods[] = {
    {"info", (PyCFunction)info, METH_NOARGS, "The trace's description, as a dict."},
    {"objects", (PyCFunction)mt_py_objects, METH_VARARGS,
     "objects(filter) -> dict of column arrays, one row per sampled allocation."},
    {"timeline", (PyCFunction)mt_py_timeline, METH_VARARGS,
     "timeline(nbins, filter) -> dict of column arrays and the peak."},
    {"top", (PyCFunction)mt_py_top, METH_VARARGS,
     "top(by, order, limit, depth, filter) -> dict of columns and totals."},
    {"leaks", (PyCFunction)mt_py_leaks, METH_VARARGS,
     "leaks(order, limit, depth, filter) -> dict of columns and totals."},
    {"stats", (PyCFunction)mt_py_stats, METH_VARARGS,
     "stats(nchunks, filter) -> the statistics document (JSON text)."},
    {"unmatched", (PyCFunction)unmatched, METH_VARARGS,
     "unmatched(filter) -> [(parameter, name)]: names no function has in its name."},
    {"backtrace", (PyCFunction)mt_py_backtrace, METH_VARARGS,
     "backtrace(id) -> dict of columns, one row per frame, innermost first."},
    {"update", (PyCFunction)mt_py_update, METH_VARARGS,
     "update(end) -> events read since; a followed trace only (end: the writer is done)."},
    {NULL, NULL, 0, NULL}};

PyTypeObject mt_py_trace_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "memtrace_c._core.Trace",
    .tp_basicsize = sizeof(mt_py_trace),
    .tp_dealloc = (destructor)trace_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A trace loaded into the analysis tables (made by load()).",
    .tp_methods = trace_methods,
};

/* ---- the module ------------------------------------------------------------ */

static PyMethodDef module_methods[] = {
    {"load", load, METH_VARARGS,
     "load(path or [paths], progress, allow_truncated) -> Trace; raises TraceError."},
    {"follow", mt_py_follow, METH_VARARGS,
     "follow(path) -> Trace of a trace still being written; raises TraceError."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_core",
    "libmemtrace's analysis for memtrace_c (use the memtrace_c package).", -1,
    module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__core(void) {
  import_array();
  if (PyType_Ready(&mt_py_trace_type) < 0) return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  mt_py_trace_error = PyErr_NewExceptionWithDoc(
      "memtrace_c.TraceError",
      "A trace that cannot be read: missing, unreadable, corrupt or truncated.\n"
      "Attributes: path, offset (the byte where the problem is, or None), status.",
      NULL, NULL);
  if (!mt_py_trace_error || PyModule_AddObjectRef(m, "TraceError", mt_py_trace_error) < 0 ||
      PyModule_AddObjectRef(m, "Trace", (PyObject *)&mt_py_trace_type) < 0 ||
      PyModule_AddStringConstant(m, "library_version", mt_version()) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
