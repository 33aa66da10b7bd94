/* python/profiler.c -- the kernel profiler's records (qd.profiler, quadrants/profiler/).
 *
 * With qd.init(kernel_profiler=True) the Python layer turns the profiler on
 * (`kernel_profiler_enable(True)`); from then on every launch, whichever path it takes (the
 * Dispatcher's fast path and the Python launch both end in the call of a CompiledKernel or
 * DeviceKernel), times each of its tasks and appends one record per task that ran:
 *     (name, milliseconds)
 * name being the task's entry of the compiled kernel's `profile_names` (set by the Python
 * layer: "<kernel>_c<id>_<specialization>_kernel_<task>_<serial|range_for>"), or
 * "kernel_<task>" when none was set. The CPU launcher times tasks with the monotonic clock
 * around their run; the CUDA launcher synchronizes before the first task and after each one,
 * so a record is the task's time on the device plus the launch and synchronization latency.
 *
 *     kernel_profiler_enable(on)    turns recording on (keeping the records) or off (dropping them)
 *     kernel_profiler_records()     a new list of the records, oldest first
 *     kernel_profiler_clear()       drops the records
 *
 * When the profiler is off, state->profiler_records is NULL and a launch reads no clock: the
 * launchers test that pointer once per launch.
 */
#include "python.h"

#include <time.h>

double
qd_py_profiler_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The record name of task t: names[t] when names is a tuple with an entry for it. New
 * reference. */
static PyObject *
task_name(PyObject *names, uint32_t t)
{
    if (names && PyTuple_Check(names) && (Py_ssize_t)t < PyTuple_GET_SIZE(names)) {
        return Py_NewRef(PyTuple_GET_ITEM(names, t));
    }
    return PyUnicode_FromFormat("kernel_%u", (unsigned)t);
}

int
qd_py_profiler_record(QdPyState *state, PyObject *names, uint32_t ntasks, const double *seconds)
{
    if (!state->profiler_records) {
        return 0; /* turned off while the launch ran */
    }
    for (uint32_t t = 0; t < ntasks; t++) {
        if (seconds[t] < 0) {
            continue; /* did not run */
        }
        PyObject *name = task_name(names, t);
        PyObject *record = name ? Py_BuildValue("(Nd)", name, seconds[t] * 1e3) : NULL;
        if (!record || PyList_Append(state->profiler_records, record) < 0) {
            Py_XDECREF(record);
            return -1;
        }
        Py_DECREF(record);
    }
    return 0;
}

static PyObject *
profiler_enable(PyObject *module, PyObject *on)
{
    QdPyState *state = qd_py_state(module);
    int flag = PyObject_IsTrue(on);
    if (flag < 0) {
        return NULL;
    }
    if (!flag) {
        Py_CLEAR(state->profiler_records);
    } else if (!state->profiler_records && !(state->profiler_records = PyList_New(0))) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
profiler_records(PyObject *module, PyObject *unused)
{
    (void)unused;
    QdPyState *state = qd_py_state(module);
    if (!state->profiler_records) {
        return PyList_New(0);
    }
    return PyList_GetSlice(state->profiler_records, 0, PY_SSIZE_T_MAX);
}

static PyObject *
profiler_clear(PyObject *module, PyObject *unused)
{
    (void)unused;
    QdPyState *state = qd_py_state(module);
    if (state->profiler_records &&
        PyList_SetSlice(state->profiler_records, 0, PY_SSIZE_T_MAX, NULL) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef profiler_methods[] = {
    {"kernel_profiler_enable", profiler_enable, METH_O,
     "kernel_profiler_enable(on): record the time of every task of every launch (or stop)"},
    {"kernel_profiler_records", profiler_records, METH_NOARGS,
     "kernel_profiler_records() -> [(task name, milliseconds), ...], oldest first"},
    {"kernel_profiler_clear", profiler_clear, METH_NOARGS,
     "kernel_profiler_clear(): drop the records"},
    {NULL, NULL, 0, NULL},
};

int
qd_py_profiler_add(PyObject *module)
{
    return PyModule_AddFunctions(module, profiler_methods);
}
