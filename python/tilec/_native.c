/* _native.c — the Python binding of the tilec runtime (stable ABI, Python >= 3.11).
 *
 * Kept thin and fast: a launch converts its arguments (torch tensors read through data_ptr(),
 * shape, stride() and dtype; ints; floats; None for an absent optional tensor; Arg views for
 * reinterpreted storage; a list or tuple of those tensors for a tensor list parameter) into
 * tilec_rt_arg on the stack (a list's tensors too, up to 64 of them in all; more go to a
 * buffer freed after the launch) and calls tilec_rt_launch, which validates them against the
 * kernel's signature. Each runtime serves one device (the CPU emulator, or one CUDA device): a
 * tensor on another device is refused by name before the launch ('xs[2]' for a list's). */
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "tilec/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static PyObject *s_data_ptr, *s_shape, *s_stride, *s_dtype, *s_get_device;

/* Device keys: the CPU emulator, a CUDA device's index (torch's Tensor.get_device()), or unknown
 * (an Arg over a raw pointer without an owning tensor: not checked). */
enum { DEV_CPU = -1, DEV_UNKNOWN = -2 };
static PyObject *dtype_map; /* torch dtype -> int (tilec_rt_dtype) */
static PyObject *LaunchError;

/* ---------------- Runtime ---------------- */
typedef struct {
    PyObject_HEAD
    tilec_rt *rt;
    int dev;
} RuntimeObj;

typedef struct {
    PyObject_HEAD
    tilec_rt_library *lib;
    PyObject *runtime; /* keeps the runtime alive */
} LibraryObj;

typedef struct {
    PyObject_HEAD
    tilec_rt_kernel *k;
    PyObject *library;
    int nparams;
    int dev;
} KernelObj;

/* A tensor argument with explicit dtype/shape/strides (reinterpreted storage, e2m1 views). */
typedef struct {
    PyObject_HEAD
    tilec_rt_tensor t;
    PyObject *owner;
    int dev;
} ArgObj;

static PyTypeObject *RuntimeType, *LibraryType, *KernelType, *ArgType;

static PyObject *rt_error(tilec_status s)
{
    PyObject *exc = (s == TILEC_ERROR_LAUNCH || s == TILEC_ERROR_INVALID_ARGUMENT) ? LaunchError : PyExc_RuntimeError;
    PyErr_Format(exc, "%s", tilec_rt_last_error());
    return NULL;
}

/* TILEC_DEVICE=cpu makes every runtime the CPU emulator's (tilec_rt_create) */
static int getenv_is_cpu(void)
{
    const char *e = getenv("TILEC_DEVICE");
    return e && !strcmp(e, "cpu");
}

static PyObject *Runtime_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"cache_dir", "device", "opt_level", "memory_only", "cpu", "device_key", NULL};
    const char *cache_dir = NULL;
    int device = 0, opt = 3, memory_only = 0, cpu = 0;
    PyObject *key = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|ziippO", kwlist, &cache_dir, &device, &opt, &memory_only, &cpu,
                                     &key))
        return NULL;
    long key_v = 0;
    if (key != Py_None && ((key_v = PyLong_AsLong(key)) == -1 && PyErr_Occurred()))
        return NULL;
    if (key != Py_None && key_v < DEV_CPU) {
        PyErr_Format(PyExc_ValueError, "device_key must be -1 (the CPU) or a CUDA device index, got %ld", key_v);
        return NULL;
    }
    tilec_rt_options o = tilec_rt_default_options();
    o.cache_dir = cache_dir;
    o.device = device;
    o.opt_level = opt;
    if (memory_only)
        o.flags |= TILEC_RT_NO_DISK_CACHE;
    if (cpu)
        o.flags |= TILEC_RT_CPU;
    tilec_rt *rt = NULL;
    tilec_status s = tilec_rt_create(&o, &rt);
    if (s != TILEC_OK)
        return rt_error(s);
    RuntimeObj *self = (RuntimeObj *)PyType_GenericAlloc(type, 0);
    if (!self) {
        tilec_rt_destroy(rt);
        return NULL;
    }
    self->rt = rt;
    self->dev = key != Py_None ? (int)key_v : cpu || getenv_is_cpu() ? DEV_CPU : device;
    return (PyObject *)self;
}

static void Runtime_dealloc(PyObject *o)
{
    RuntimeObj *self = (RuntimeObj *)o;
    tilec_rt_destroy(self->rt);
    PyTypeObject *tp = Py_TYPE(o);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(o);
    Py_DECREF(tp);
}

static int str_list(PyObject *seq, const char ***out, int *n)
{
    *out = NULL;
    *n = 0;
    if (!seq || seq == Py_None)
        return 0;
    PyObject *fast = PySequence_Tuple(seq);
    if (!fast)
        return -1;
    Py_ssize_t len = PyTuple_Size(fast);
    const char **v = PyMem_Malloc(sizeof(char *) * (size_t)(len + 1));
    for (Py_ssize_t i = 0; i < len; i++) {
        v[i] = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(fast, i), NULL);
        if (!v[i]) {
            PyMem_Free(v);
            Py_DECREF(fast);
            return -1;
        }
    }
    *out = v;
    *n = (int)len;
    /* the strings live as long as the tuple: keep it alive in the caller's frame */
    Py_DECREF(fast);
    return 0;
}

static PyObject *Runtime_open(PyObject *o, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"source", "fatbin", "manifest", "include_dirs", "defines", NULL};
    const char *source = NULL, *fatbin = NULL, *manifest = NULL;
    PyObject *incs = NULL, *defs = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|zzzOO", kwlist, &source, &fatbin, &manifest, &incs, &defs))
        return NULL;
    tilec_rt_library_options lo;
    memset(&lo, 0, sizeof lo);
    lo.source = source;
    lo.fatbin = fatbin;
    lo.manifest = manifest;
    const char **iv, **dv;
    int ni, nd;
    if (str_list(incs, &iv, &ni) < 0 || str_list(defs, &dv, &nd) < 0)
        return NULL;
    lo.include_dirs = iv;
    lo.ninclude = ni;
    lo.defines = dv;
    lo.ndefines = nd;
    tilec_rt_library *lib = NULL;
    tilec_status s = tilec_rt_library_open(((RuntimeObj *)o)->rt, &lo, &lib);
    PyMem_Free(iv);
    PyMem_Free(dv);
    if (s != TILEC_OK)
        return rt_error(s);
    LibraryObj *L = (LibraryObj *)PyType_GenericAlloc(LibraryType, 0);
    if (!L) {
        tilec_rt_library_close(lib);
        return NULL;
    }
    L->lib = lib;
    L->runtime = o;
    Py_INCREF(o);
    return (PyObject *)L;
}

static PyObject *Runtime_stats(PyObject *o, PyObject *unused)
{
    tilec_rt_stats st;
    tilec_rt_get_stats(((RuntimeObj *)o)->rt, &st);
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K}", "memory_hits", (unsigned long long)st.memory_hits, "disk_hits",
                         (unsigned long long)st.disk_hits, "aot_hits", (unsigned long long)st.aot_hits, "compiles",
                         (unsigned long long)st.compiles, "disk_rejects", (unsigned long long)st.disk_rejects);
}

static PyObject *Runtime_cache_dir(PyObject *o, PyObject *unused)
{
    const char *d = tilec_rt_cache_dir(((RuntimeObj *)o)->rt);
    if (!d)
        Py_RETURN_NONE;
    return PyUnicode_FromString(d);
}

static PyMethodDef Runtime_methods[] = {
    {"open", (PyCFunction)(void (*)(void))Runtime_open, METH_VARARGS | METH_KEYWORDS,
     "open(source=None, fatbin=None, manifest=None, include_dirs=None, defines=None) -> Library"},
    {"stats", Runtime_stats, METH_NOARGS, "cache counters: memory_hits, disk_hits, aot_hits, compiles, disk_rejects"},
    {"cache_dir", Runtime_cache_dir, METH_NOARGS, "the disk cache directory, or None"},
    {NULL, NULL, 0, NULL}};

static PyType_Slot Runtime_slots[] = {{Py_tp_new, Runtime_new},
                                      {Py_tp_dealloc, Runtime_dealloc},
                                      {Py_tp_methods, Runtime_methods},
                                      {Py_tp_doc, "Runtime(cache_dir=None, device=0, opt_level=3, memory_only=False, cpu=False, "
                                                  "device_key=None): a tilec runtime for CUDA device `device` (bound "
                                                  "to the current CUDA context), or for the CPU emulator with "
                                                  "cpu=True. device_key: the device its launches' tensors must be "
                                                  "on (-1: the CPU; default: the runtime's own), so that a runtime "
                                                  "over a stand-in driver (TILEC_LIBCUDA) takes CPU tensors "
                                                  "(bench/host_overhead.py)."},
                                      {0, NULL}};
static PyType_Spec Runtime_spec = {"tilec._native.Runtime", sizeof(RuntimeObj), 0, Py_TPFLAGS_DEFAULT, Runtime_slots};

/* ---------------- Library ---------------- */
static void Library_dealloc(PyObject *o)
{
    LibraryObj *self = (LibraryObj *)o;
    tilec_rt_library_close(self->lib);
    Py_XDECREF(self->runtime);
    PyTypeObject *tp = Py_TYPE(o);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(o);
    Py_DECREF(tp);
}

static PyObject *Library_kernel(PyObject *o, PyObject *args)
{
    const char *name;
    PyObject *gens = NULL;
    if (!PyArg_ParseTuple(args, "s|O", &name, &gens))
        return NULL;
    PyObject *tup = gens && gens != Py_None ? PySequence_Tuple(gens) : PyTuple_New(0);
    if (!tup)
        return NULL;
    Py_ssize_t n = PyTuple_Size(tup);
    const char *gv[64];
    if (n > 64) {
        Py_DECREF(tup);
        PyErr_SetString(PyExc_ValueError, "at most 64 generic values");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        gv[i] = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(tup, i), NULL);
        if (!gv[i]) {
            Py_DECREF(tup);
            return NULL;
        }
    }
    tilec_rt_kernel *k = NULL;
    tilec_status s;
    Py_BEGIN_ALLOW_THREADS;
    s = tilec_rt_get_kernel(((LibraryObj *)o)->lib, name, gv, (int)n, &k);
    Py_END_ALLOW_THREADS;
    Py_DECREF(tup);
    if (s != TILEC_OK)
        return rt_error(s);
    KernelObj *K = (KernelObj *)PyType_GenericAlloc(KernelType, 0);
    if (!K)
        return NULL;
    K->k = k;
    K->nparams = tilec_rt_kernel_num_params(k);
    K->dev = ((RuntimeObj *)((LibraryObj *)o)->runtime)->dev;
    K->library = o;
    Py_INCREF(o);
    return (PyObject *)K;
}

static PyObject *Library_kernels(PyObject *o, PyObject *unused)
{
    const tilec_rt_library *lib = ((LibraryObj *)o)->lib;
    int n = tilec_rt_library_num_kernels(lib);
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        PyObject *name = PyUnicode_FromString(tilec_rt_library_kernel_name(lib, i));
        if (!name) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SetItem(list, i, name);
    }
    return list;
}

static PyObject *Library_interface(PyObject *o, PyObject *args)
{
    const char *name, *text = NULL;
    if (!PyArg_ParseTuple(args, "s", &name))
        return NULL;
    tilec_status s = tilec_rt_library_interface(((LibraryObj *)o)->lib, name, &text);
    if (s == TILEC_ERROR_NOT_FOUND)
        Py_RETURN_NONE;
    if (s != TILEC_OK)
        return rt_error(s);
    return PyUnicode_FromString(text);
}

static PyObject *Library_aot_signatures(PyObject *o, PyObject *unused)
{
    const tilec_rt_library *lib = ((LibraryObj *)o)->lib;
    int n = tilec_rt_library_num_aot(lib);
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        PyObject *sig = PyUnicode_FromString(tilec_rt_library_aot_signature(lib, i));
        if (!sig) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SetItem(list, i, sig);
    }
    return list;
}

/* warm_up(entries, threads=0): entries is a sequence of (name, generics); every entry is built
 * (compiled on threads, or read from the disk cache) with the GIL released; raises the first
 * failing entry's error after all were tried */
static PyObject *Library_warm_up(PyObject *o, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"entries", "threads", NULL};
    PyObject *entries;
    int threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i", kwlist, &entries, &threads))
        return NULL;
    if (threads < 0) {
        PyErr_SetString(PyExc_ValueError, "threads must be >= 0");
        return NULL;
    }
    PyObject *list = PySequence_Tuple(entries);
    if (!list)
        return NULL;
    Py_ssize_t n = PyTuple_Size(list);
    if (n > INT32_MAX / 2) {
        Py_DECREF(list);
        PyErr_SetString(PyExc_ValueError, "too many entries");
        return NULL;
    }
    tilec_rt_spec *specs = PyMem_Calloc((size_t)n + 1, sizeof *specs);
    PyObject **keep = PyMem_Calloc((size_t)n + 1, sizeof *keep); /* the generics tuples, alive during the call */
    const char **gv = NULL;
    Py_ssize_t total = 0;
    PyObject *ret = NULL;
    if (!specs || !keep) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = PyTuple_GetItem(list, i);
        PyObject *name, *gens = NULL;
        if (!PyTuple_Check(e) || !PyArg_ParseTuple(e, "U|O", &name, &gens)) {
            PyErr_Format(PyExc_TypeError, "entry %zd: expected (name, generics)", i);
            goto done;
        }
        keep[i] = gens && gens != Py_None ? PySequence_Tuple(gens) : PyTuple_New(0);
        if (!keep[i])
            goto done;
        total += PyTuple_Size(keep[i]);
        specs[i].kernel = PyUnicode_AsUTF8AndSize(name, NULL);
        if (!specs[i].kernel)
            goto done;
    }
    gv = PyMem_Calloc((size_t)total + 1, sizeof *gv);
    if (!gv) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t m = PyTuple_Size(keep[i]);
        specs[i].generics = gv + at;
        specs[i].ngenerics = (int)m;
        for (Py_ssize_t j = 0; j < m; j++) {
            PyObject *g = PyTuple_GetItem(keep[i], j);
            if (!PyUnicode_Check(g) || !(gv[at++] = PyUnicode_AsUTF8AndSize(g, NULL))) {
                if (!PyErr_Occurred())
                    PyErr_Format(PyExc_TypeError, "entry %zd: generic values are \"NAME=VALUE\" strings", i);
                goto done;
            }
        }
    }
    tilec_status s;
    Py_BEGIN_ALLOW_THREADS;
    s = tilec_rt_warm_up(((LibraryObj *)o)->lib, specs, (int)n, threads, NULL);
    Py_END_ALLOW_THREADS;
    if (s != TILEC_OK)
        rt_error(s);
    else
        ret = Py_NewRef(Py_None);
done:
    if (keep)
        for (Py_ssize_t i = 0; i < n; i++)
            Py_XDECREF(keep[i]);
    PyMem_Free(keep);
    PyMem_Free(specs);
    PyMem_Free(gv);
    Py_DECREF(list);
    return ret;
}

static PyMethodDef Library_methods[] = {
    {"kernel", Library_kernel, METH_VARARGS, "kernel(name, generics=()) -> Kernel: a specialisation, compiled on a miss"},
    {"kernels", Library_kernels, METH_NOARGS, "kernels() -> list of the kernel names the source declares"},
    {"interface", Library_interface, METH_VARARGS,
     "interface(name) -> the kernel's declared interface ('tilec-iface 1' text), or None without such a kernel"},
    {"aot_signatures", Library_aot_signatures, METH_NOARGS,
     "aot_signatures() -> the signatures of the specialisations the AOT manifest holds"},
    {"warm_up", (PyCFunction)(void (*)(void))Library_warm_up, METH_VARARGS | METH_KEYWORDS,
     "warm_up(entries, threads=0): build every (name, generics) entry on a thread pool (0: one thread per processor)"},
    {NULL, NULL, 0, NULL}};
static PyType_Slot Library_slots[] = {{Py_tp_dealloc, Library_dealloc}, {Py_tp_methods, Library_methods}, {0, NULL}};
static PyType_Spec Library_spec = {"tilec._native.Library", sizeof(LibraryObj), 0, Py_TPFLAGS_DEFAULT, Library_slots};

/* ---------------- Kernel ---------------- */
static void Kernel_dealloc(PyObject *o)
{
    Py_XDECREF(((KernelObj *)o)->library);
    PyTypeObject *tp = Py_TYPE(o);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(o);
    Py_DECREF(tp);
}

static int int_tuple(PyObject *t, int64_t *out, int max)
{
    Py_ssize_t n = PySequence_Size(t);
    if (n < 0 || n > max)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PySequence_GetItem(t, i);
        if (!x)
            return -1;
        out[i] = PyLong_AsLongLong(x);
        Py_DECREF(x);
        if (out[i] == -1 && PyErr_Occurred())
            return -1;
    }
    return (int)n;
}

/* The device key of a torch tensor (anything else: unknown). */
static int device_of(PyObject *t)
{
    PyObject *d = PyObject_CallMethodObjArgs(t, s_get_device, NULL);
    if (!d) {
        PyErr_Clear();
        return DEV_UNKNOWN;
    }
    long v = PyLong_AsLong(d);
    Py_DECREF(d);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return DEV_UNKNOWN;
    }
    return v < 0 ? DEV_CPU : (int)v;
}

static void device_str(int dev, char *buf, size_t n)
{
    if (dev == DEV_CPU)
        snprintf(buf, n, "cpu");
    else
        snprintf(buf, n, "cuda:%d", dev);
}

static const char *param_name(const tilec_rt_kernel *k, int i)
{
    tilec_rt_param_info info;
    return tilec_rt_kernel_param(k, i, &info) == TILEC_OK ? info.name : "?";
}

/* "'x'" or, for tensor e of a list argument, "'xs[2]'" */
static void arg_str(const KernelObj *self, int i, int e, char *buf, size_t n)
{
    if (e < 0)
        snprintf(buf, n, "'%s'", param_name(self->k, i));
    else
        snprintf(buf, n, "'%s[%d]'", param_name(self->k, i), e);
}

/* Every tensor of a launch on the kernel's device: the first one elsewhere is reported with
 * the first that is where it should be (or with the kernel's device). `first` holds the argument
 * and list element (-1: none) of the first tensor seen on the kernel's device. */
static int check_device(const KernelObj *self, int dev, int i, int e, int first[2])
{
    if (dev == DEV_UNKNOWN || dev == self->dev) {
        if (dev != DEV_UNKNOWN && first[0] < 0) {
            first[0] = i;
            first[1] = e;
        }
        return 0;
    }
    char have[32], want[32], here[96], there[96];
    device_str(dev, have, sizeof have);
    device_str(self->dev, want, sizeof want);
    arg_str(self, i, e, here, sizeof here);
    if (first[0] >= 0) {
        arg_str(self, first[0], first[1], there, sizeof there);
        PyErr_Format(LaunchError, "tensors on different devices: argument %s is on %s, argument %s on %s", there, want,
                     here, have);
    } else {
        PyErr_Format(LaunchError, "argument %s is on %s, but this kernel was loaded for %s", here, have, want);
    }
    return -1;
}

/* a torch tensor (or anything with data_ptr/shape/stride/dtype); `what` names it in errors */
static int tensor_of(PyObject *t, tilec_rt_tensor *out, const char *what)
{
    PyObject *dt = PyObject_GetAttr(t, s_dtype);
    if (!dt)
        return -1;
    PyObject *code = PyDict_GetItem(dtype_map, dt);
    Py_DECREF(dt);
    if (!code) {
        PyErr_Format(LaunchError, "%s: unsupported tensor dtype", what);
        return -1;
    }
    out->dtype = (tilec_rt_dtype)PyLong_AsLong(code);
    PyObject *p = PyObject_CallMethodObjArgs(t, s_data_ptr, NULL);
    if (!p)
        return -1;
    out->data = PyLong_AsVoidPtr(p);
    Py_DECREF(p);
    PyObject *shape = PyObject_GetAttr(t, s_shape);
    if (!shape)
        return -1;
    int rank = int_tuple(shape, out->shape, TILEC_RT_MAX_RANK);
    Py_DECREF(shape);
    if (rank < 0) {
        if (!PyErr_Occurred())
            PyErr_Format(LaunchError, "%s: rank above %d", what, TILEC_RT_MAX_RANK);
        return -1;
    }
    out->rank = rank;
    PyObject *st = PyObject_CallMethodObjArgs(t, s_stride, NULL);
    if (!st)
        return -1;
    int r2 = int_tuple(st, out->strides, TILEC_RT_MAX_RANK);
    Py_DECREF(st);
    return r2 < 0 ? -1 : 0;
}

/* an element of a list argument: a torch tensor or an Arg */
static int list_item(const KernelObj *self, PyObject *x, tilec_rt_tensor *out, int i, int e, int first[2])
{
    if (PyObject_TypeCheck(x, ArgType)) {
        *out = ((ArgObj *)x)->t;
        return check_device(self, ((ArgObj *)x)->dev, i, e, first);
    }
    char what[48];
    snprintf(what, sizeof what, "argument %d element %d", i, e);
    const char *kind = x == Py_None ? "None" : PyBool_Check(x) ? "a bool" : PyLong_Check(x) ? "an int"
                       : PyFloat_Check(x) ? "a float" : PyList_Check(x) || PyTuple_Check(x) ? "a list" : NULL;
    if (kind) {
        PyErr_Format(LaunchError, "%s: a list argument holds tensors, not %s", what, kind);
        return -1;
    }
    if (tensor_of(x, out, what) < 0)
        return -1;
    return check_device(self, device_of(x), i, e, first);
}

static PyObject *Kernel_launch(PyObject *o, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    KernelObj *self = (KernelObj *)o;
    tilec_rt_launch_options lo = {NULL, 0};
    Py_ssize_t nkw = kwnames ? PyTuple_Size(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GetItem(kwnames, i);
        PyObject *v = args[nargs + i];
        if (PyUnicode_CompareWithASCIIString(name, "stream") == 0) {
            lo.stream = PyLong_AsVoidPtr(v);
        } else if (PyUnicode_CompareWithASCIIString(name, "num_sms") == 0) {
            lo.num_sms = (int)PyLong_AsLong(v);
        } else {
            PyErr_Format(PyExc_TypeError, "launch() got an unexpected keyword argument %U", name);
            return NULL;
        }
        if (PyErr_Occurred())
            return NULL;
    }
    if (nargs > 64) {
        PyErr_SetString(LaunchError, "at most 64 kernel arguments");
        return NULL;
    }
    tilec_rt_arg a[64];
    int first[2] = {-1, -1};
    /* the tensors of list arguments: on the stack, unless there are many */
    enum { POOL = 64 };
    tilec_rt_tensor pool[POOL], *items = pool;
    Py_ssize_t nitems = 0, used = 0;
    for (Py_ssize_t i = 0; i < nargs; i++)
        if (PyList_Check(args[i]) || PyTuple_Check(args[i]))
            nitems += PySequence_Size(args[i]);
    if (nitems > POOL && !(items = PyMem_Malloc(sizeof(tilec_rt_tensor) * (size_t)nitems)))
        return PyErr_NoMemory();
    PyObject *result = NULL;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyObject *x = args[i];
        if (x == Py_None) {
            a[i] = tilec_rt_arg_absent();
        } else if (PyList_Check(x) || PyTuple_Check(x)) {
            Py_ssize_t n = PySequence_Size(x);
            for (Py_ssize_t e = 0; e < n; e++) {
                PyObject *item = PySequence_GetItem(x, e);
                int rc = item ? list_item(self, item, &items[used + e], (int)i, (int)e, first) : -1;
                Py_XDECREF(item);
                if (rc < 0)
                    goto done;
            }
            a[i] = tilec_rt_arg_list(items + used, (int)n);
            used += n;
        } else if (PyObject_TypeCheck(x, ArgType)) {
            a[i].kind = TILEC_RT_ARG_TENSOR;
            a[i].u.tensor = ((ArgObj *)x)->t;
            if (check_device(self, ((ArgObj *)x)->dev, (int)i, -1, first) < 0)
                goto done;
        } else if (PyBool_Check(x)) {
            a[i] = tilec_rt_arg_int(TILEC_RT_BOOL, x == Py_True);
        } else if (PyLong_Check(x)) {
            long long v = PyLong_AsLongLong(x);
            if (v == -1 && PyErr_Occurred())
                goto done;
            a[i] = tilec_rt_arg_int(TILEC_RT_I64, v);
        } else if (PyFloat_Check(x)) {
            a[i] = tilec_rt_arg_float(TILEC_RT_F64, PyFloat_AsDouble(x));
        } else {
            char what[96];
            snprintf(what, sizeof what, "argument '%s'", param_name(self->k, (int)i));
            a[i].kind = TILEC_RT_ARG_TENSOR;
            if (tensor_of(x, &a[i].u.tensor, what) < 0 || check_device(self, device_of(x), (int)i, -1, first) < 0)
                goto done;
        }
    }
    tilec_status s = tilec_rt_launch(self->k, a, (int)nargs, &lo);
    if (s != TILEC_OK)
        rt_error(s);
    else
        result = Py_NewRef(Py_None);
done:
    if (items != pool)
        PyMem_Free(items);
    return result;
}

static PyObject *Kernel_signature(PyObject *o, void *unused)
{
    return PyUnicode_FromString(tilec_rt_kernel_signature(((KernelObj *)o)->k));
}

static PyMethodDef Kernel_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))Kernel_launch, METH_FASTCALL | METH_KEYWORDS,
     "launch(*args, stream=0, num_sms=0): check the arguments against the signature and launch"},
    {NULL, NULL, 0, NULL}};
static PyGetSetDef Kernel_getset[] = {{"signature", Kernel_signature, NULL, "the signature text", NULL}, {NULL}};
static PyType_Slot Kernel_slots[] = {
    {Py_tp_dealloc, Kernel_dealloc}, {Py_tp_methods, Kernel_methods}, {Py_tp_getset, Kernel_getset}, {0, NULL}};
static PyType_Spec Kernel_spec = {"tilec._native.Kernel", sizeof(KernelObj), 0, Py_TPFLAGS_DEFAULT, Kernel_slots};

/* ---------------- Arg (explicit tensor view) ---------------- */
static PyObject *Arg_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"data_ptr", "dtype", "shape", "strides", "owner", NULL};
    unsigned long long ptr;
    const char *dtname;
    PyObject *shape, *strides, *owner = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "KsOO|O", kwlist, &ptr, &dtname, &shape, &strides, &owner))
        return NULL;
    ArgObj *self = (ArgObj *)PyType_GenericAlloc(type, 0);
    if (!self)
        return NULL;
    tilec_rt_dtype dt;
    if (tilec_rt_dtype_from_name(dtname, &dt) != TILEC_OK) {
        Py_DECREF(self);
        PyErr_Format(PyExc_ValueError, "unknown dtype '%s'", dtname);
        return NULL;
    }
    self->t.data = (void *)(uintptr_t)ptr;
    self->t.dtype = dt;
    int r = int_tuple(shape, self->t.shape, TILEC_RT_MAX_RANK);
    int r2 = int_tuple(strides, self->t.strides, TILEC_RT_MAX_RANK);
    if (r < 0 || r2 != r) {
        Py_DECREF(self);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "shape and strides must be sequences of the same length (at most 8)");
        return NULL;
    }
    self->t.rank = r;
    self->owner = owner;
    Py_INCREF(owner);
    self->dev = owner == Py_None ? DEV_UNKNOWN : device_of(owner);
    return (PyObject *)self;
}

static void Arg_dealloc(PyObject *o)
{
    Py_XDECREF(((ArgObj *)o)->owner);
    PyTypeObject *tp = Py_TYPE(o);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(o);
    Py_DECREF(tp);
}

static PyType_Slot Arg_slots[] = {{Py_tp_new, Arg_new},
                                  {Py_tp_dealloc, Arg_dealloc},
                                  {Py_tp_doc, "Arg(data_ptr, dtype, shape, strides, owner=None): a tensor argument "
                                              "with an explicit element type, shape and strides (in elements)"},
                                  {0, NULL}};
static PyType_Spec Arg_spec = {"tilec._native.Arg", sizeof(ArgObj), 0, Py_TPFLAGS_DEFAULT, Arg_slots};

/* ---------------- module ---------------- */
static PyObject *set_dtype(PyObject *mod, PyObject *args)
{
    PyObject *torch_dtype;
    const char *name;
    if (!PyArg_ParseTuple(args, "Os", &torch_dtype, &name))
        return NULL;
    tilec_rt_dtype dt;
    if (tilec_rt_dtype_from_name(name, &dt) != TILEC_OK) {
        PyErr_Format(PyExc_ValueError, "unknown dtype '%s'", name);
        return NULL;
    }
    PyObject *v = PyLong_FromLong((long)dt);
    int rc = PyDict_SetItem(dtype_map, torch_dtype, v);
    Py_DECREF(v);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"register_dtype", set_dtype, METH_VARARGS, "register_dtype(torch_dtype, name): map a torch dtype to a tilec dtype"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_native", "tilec runtime binding", -1, module_methods,
                                       NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__native(void);
PyMODINIT_FUNC PyInit__native(void)
{
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
    s_data_ptr = PyUnicode_InternFromString("data_ptr");
    s_shape = PyUnicode_InternFromString("shape");
    s_stride = PyUnicode_InternFromString("stride");
    s_dtype = PyUnicode_InternFromString("dtype");
    s_get_device = PyUnicode_InternFromString("get_device");
    dtype_map = PyDict_New();
    LaunchError = PyErr_NewException("tilec._native.LaunchError", PyExc_ValueError, NULL);
    RuntimeType = (PyTypeObject *)PyType_FromSpec(&Runtime_spec);
    LibraryType = (PyTypeObject *)PyType_FromSpec(&Library_spec);
    KernelType = (PyTypeObject *)PyType_FromSpec(&Kernel_spec);
    ArgType = (PyTypeObject *)PyType_FromSpec(&Arg_spec);
    if (!RuntimeType || !LibraryType || !KernelType || !ArgType || !dtype_map || !LaunchError)
        return NULL;
    PyModule_AddObject(m, "Runtime", (PyObject *)RuntimeType);
    PyModule_AddObject(m, "Library", (PyObject *)LibraryType);
    PyModule_AddObject(m, "Kernel", (PyObject *)KernelType);
    PyModule_AddObject(m, "Arg", (PyObject *)ArgType);
    PyModule_AddObject(m, "LaunchError", LaunchError);
    Py_INCREF(LaunchError);
    return m;
}
