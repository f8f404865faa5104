/* memtrace_c._core: a trace still being written, read as it grows
 * (mt_follow): a Trace whose analysis update() brings up to date with
 * what the writer has appended, each packet read once. An update holds
 * the GIL throughout, and refuses while an answer computes with the GIL
 * released (Trace.busy), so the analysis never changes under an answer. */
#include "core.h"

PyObject *mt_py_follow(PyObject *module, PyObject *args) {
  (void)module;
  PyObject *given, *path, *fs;
  if (!PyArg_ParseTuple(args, "O", &given)) return NULL;
  if (!PyUnicode_FSDecoder(given, &path)) return NULL;
  if (!PyUnicode_FSConverter(given, &fs)) {
    Py_DECREF(path);
    return NULL;
  }
  mt_follow *fw = NULL;
  char err[1024];
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = mt_follow_open(&fw, PyBytes_AS_STRING(fs), err, sizeof err);
  if (rc == MT_OK) rc = mt_follow_read(fw, 0, NULL);
  Py_END_ALLOW_THREADS
  Py_DECREF(fs);
  if (rc != MT_OK) {
    if (rc == MT_ERR_NOMEM) PyErr_NoMemory();
    else if (fw) mt_py_trace_error_raise(path, mt_analysis_error(mt_follow_analysis(fw)),
                                         mt_analysis_error_offset(mt_follow_analysis(fw)),
                                         mt_status_name(rc));
    else mt_py_trace_error_raise(path, err, MT_NO_OFFSET, mt_status_name(rc));
    mt_follow_close(fw);
    Py_DECREF(path);
    return NULL;
  }
  mt_py_trace *t = PyObject_New(mt_py_trace, &mt_py_trace_type);
  if (!t) {
    mt_follow_close(fw);
    Py_DECREF(path);
    return NULL;
  }
  t->fw = fw;
  t->busy = 0;
  t->a = mt_follow_analysis(fw);
  t->path = path;
  return (PyObject *)t;
}

PyObject *mt_py_update(mt_py_trace *self, PyObject *args) {
  int end = 0;
  if (!PyArg_ParseTuple(args, "p", &end)) return NULL;
  if (!self->fw) {
    PyErr_SetString(PyExc_ValueError,
                    "update: this trace was loaded whole (memtrace_c.follow reads one as it grows)");
    return NULL;
  }
  if (self->busy) {
    PyErr_SetString(PyExc_RuntimeError,
                    "update: another thread is computing an answer from this trace; "
                    "update once it has its answer");
    return NULL;
  }
  /* the GIL is held throughout: no answer starts meanwhile */
  uint64_t events = 0;
  int rc = end ? mt_follow_end(self->fw, &events) : mt_follow_read(self->fw, 0, &events);
  if (rc == MT_ERR_NOMEM) return PyErr_NoMemory();
  if (rc != MT_OK)
    return mt_py_trace_error_raise(self->path, mt_analysis_error(self->a),
                                   mt_analysis_error_offset(self->a), mt_status_name(rc));
  return PyLong_FromUnsignedLongLong(events);
}
