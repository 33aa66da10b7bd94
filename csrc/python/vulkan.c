/* python/vulkan.c -- the Python face of the Vulkan runtime: is there a device, and what is it.
 *
 * Adds to quadrants._core (qd_py_vulkan_add, from module.c):
 *     vulkan_available() -> bool        the loader opens and a suitable device exists
 *     vulkan_unavailable_reason() -> str | None
 *     vulkan_device_info() -> dict      the fields of QdVkDeviceInfo (runtime/vulkan/vulkan.h):
 *                                       name, api_version (major, minor, patch),
 *                                       driver_version, vendor_id, device_type ("discrete",
 *                                       "integrated", "virtual", "cpu" or "other"),
 *                                       subgroup_size, subgroup_ops, max_workgroup_size,
 *                                       max_workgroup_count, max_shared_bytes, max_push_bytes,
 *                                       and the feature flags of abi/vk_features.def
 * The first call opens the device (a few milliseconds; lavapipe starts its threads); the GIL is
 * released meanwhile. Without a device, vulkan_device_info raises QuadrantsRuntimeError with
 * the reason (no loader, no suitable device, ...).
 */
#include "python.h"

#include "../runtime/vulkan/vulkan.h"

/* The device, opening it with the GIL released; NULL with the reason in ctx. */
static const QdVkDeviceInfo *
open_device(QdCtx *ctx)
{
    const QdVkDeviceInfo *info;
    Py_BEGIN_ALLOW_THREADS
    info = qd_vk_device(ctx);
    Py_END_ALLOW_THREADS
    return info;
}

/* vulkan_available() and vulkan_unavailable_reason(): new references. */
static PyObject *
vulkan_available(PyObject *module, PyObject *unused)
{
    QdCtx ctx;
    (void)module;
    (void)unused;
    qd_ctx_init(&ctx);
    return PyBool_FromLong(open_device(&ctx) != NULL);
}

static PyObject *
vulkan_unavailable_reason(PyObject *module, PyObject *unused)
{
    QdCtx ctx;
    (void)module;
    (void)unused;
    qd_ctx_init(&ctx);
    if (open_device(&ctx) != NULL) {
        Py_RETURN_NONE;
    }
    return PyUnicode_FromString(ctx.diag.message);
}

/* VkPhysicalDeviceType as a word. */
static const char *
device_type_name(uint32_t type)
{
    static const char *const names[] = {"other", "integrated", "discrete", "virtual", "cpu"};
    return type < QD_ARRAY_LEN(names) ? names[type] : "other";
}

/* Returns a new reference to the info dict, NULL with an exception set. */
static PyObject *
vulkan_device_info(PyObject *module, PyObject *unused)
{
    QdCtx ctx;
    (void)unused;
    qd_ctx_init(&ctx);
    const QdVkDeviceInfo *d = open_device(&ctx);
    if (d == NULL) {
        qd_py_raise_diag(module, &ctx.diag);
        return NULL;
    }
    uint32_t v = d->api_version;
    PyObject *info = Py_BuildValue(
        "{s:s,s:(III),s:I,s:I,s:s,s:I,s:I,s:I,s:I,s:I,s:I}", "name", d->name, "api_version",
        (v >> 22) & 0x7f, (v >> 12) & 0x3ff, v & 0xfff, "driver_version", d->driver_version,
        "vendor_id", d->vendor_id, "device_type", device_type_name(d->device_type),
        "subgroup_size", d->subgroup_size, "subgroup_ops", d->subgroup_ops, "max_workgroup_size",
        d->max_workgroup_size, "max_workgroup_count", d->max_workgroup_count, "max_shared_bytes",
        d->max_shared_bytes, "max_push_bytes", d->max_push_bytes);
    int rc = info != NULL ? 0 : -1;
#define QD_VK_FEATURE(name, bit, dflt, source)                                                     \
    if (rc == 0) {                                                                                 \
        rc = PyDict_SetItemString(info, #name, d->features.name ? Py_True : Py_False);             \
    }
#include "../abi/vk_features.def"
#undef QD_VK_FEATURE
    if (rc < 0) {
        Py_XDECREF(info);
        return NULL;
    }
    return info;
}

static PyObject *
vulkan_sync(PyObject *module, PyObject *unused)
{
    QdCtx ctx;
    int rc;
    (void)unused;
    qd_ctx_init(&ctx);
    Py_BEGIN_ALLOW_THREADS
    rc = qd_vk_sync(&ctx);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        return qd_py_raise_diag(module, &ctx.diag), NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef vulkan_methods[] = {
    {"vulkan_sync", vulkan_sync, METH_NOARGS, "wait for all launched Vulkan work"},
    {"vulkan_available", vulkan_available, METH_NOARGS, "whether a Vulkan device can be used"},
    {"vulkan_unavailable_reason", vulkan_unavailable_reason, METH_NOARGS,
     "why Vulkan cannot be used, or None"},
    {"vulkan_device_info", vulkan_device_info, METH_NOARGS, "facts about the Vulkan device"},
    {NULL, NULL, 0, NULL},
};

int
qd_py_vulkan_add(PyObject *module)
{
    return PyModule_AddFunctions(module, vulkan_methods);
}
