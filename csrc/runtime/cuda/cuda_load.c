/* runtime/cuda/cuda_load.c -- finding the CUDA driver with dlopen, the device and its context.
 *
 * Loading happens once per process (pthread_once), on the first call that needs the driver:
 *   1. dlopen $QD_CUDA_DRIVER when set (tests point it at a missing file to exercise the
 *      no-driver path on any machine), else libcuda.so.1, else libcuda.so;
 *   2. dlsym every row of cuda_api.def; a missing one fails the load, naming the symbol;
 *   3. cuInit(0).
 * The outcome, success or the reason for failure, is kept: later calls answer from it, and
 * the library handle is never closed (the driver cannot be unloaded safely while contexts may
 * exist).
 *
 * The device is opened on first use too (qd_cuda_device): device $QD_CUDA_DEVICE or 0, its
 * attributes, and a retained primary context. The primary context is made current on each
 * thread that calls in (qd_cuda_enter), which costs one cuCtxGetCurrent when it already is.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Process-wide loader state, written once under `load_once`. */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static QdCudaApi api;           /* filled when is_loaded */
static bool is_loaded;          /* the library, every symbol and cuInit succeeded */
static char load_error[512];    /* why not, when !is_loaded */

/* The device, opened under `device_lock`. */
static pthread_mutex_t device_lock = PTHREAD_MUTEX_INITIALIZER;
static QdCudaDevice device;
static bool is_device_open; /* set (release) once `device` is filled; read without the lock */

/* The names of the rows, for the dlsym loop and for messages. */
static const char *const api_symbols[] = {
#define QD_CUDA_API(name, symbol, params) symbol,
#include "cuda_api.def"
#undef QD_CUDA_API
};

/* Whether each row may be missing (QD_CUDA_API_OPTIONAL), in the same order. */
static const bool api_optional[] = {
#define QD_CUDA_API(name, symbol, params) false,
#define QD_CUDA_API_OPTIONAL(name, symbol, params) true,
#include "cuda_api.def"
#undef QD_CUDA_API_OPTIONAL
#undef QD_CUDA_API
};

/* Where each row's pointer goes, in the order of api_symbols. */
static void
api_slots(void **slots[])
{
    size_t i = 0;
#define QD_CUDA_API(name, symbol, params) slots[i++] = (void **)&api.name;
#include "cuda_api.def"
#undef QD_CUDA_API
}

static void
load_driver(void)
{
    const char *explicit_path = getenv("QD_CUDA_DRIVER");
    const char *candidates[] = {"libcuda.so.1", "libcuda.so"};
    void *lib = NULL;
    void **slots[QD_ARRAY_LEN(api_symbols)];

    if (explicit_path != NULL && explicit_path[0] != '\0') {
        lib = dlopen(explicit_path, RTLD_NOW | RTLD_LOCAL);
    } else {
        for (size_t i = 0; i < QD_ARRAY_LEN(candidates) && lib == NULL; i++) {
            lib = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
        }
    }
    if (lib == NULL) {
        const char *why = dlerror();
        snprintf(load_error, sizeof(load_error), "the CUDA driver library (%s) cannot be loaded: %s",
                 explicit_path && explicit_path[0] ? explicit_path : "libcuda.so.1",
                 why ? why : "not found");
        return;
    }
    api_slots(slots);
    for (size_t i = 0; i < QD_ARRAY_LEN(api_symbols); i++) {
        *slots[i] = dlsym(lib, api_symbols[i]);
        if (*slots[i] == NULL && !api_optional[i]) {
            snprintf(load_error, sizeof(load_error),
                     "the CUDA driver lacks the entry point %s (driver too old?)", api_symbols[i]);
            return;
        }
    }
    QdCuResult r = api.cuInit(0);
    if (r != 0) {
        snprintf(load_error, sizeof(load_error), "cuInit failed: %s", qd_cuda_error_name(r));
        return;
    }
    is_loaded = true;
}

const QdCudaApi *
qd_cuda_load(QdCtx *ctx)
{
    pthread_once(&load_once, load_driver);
    if (!is_loaded) {
        qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME, "CUDA is not available: %s", load_error);
        return NULL;
    }
    return &api;
}

bool
qd_cuda_available(void)
{
    int count = 0;
    pthread_once(&load_once, load_driver);
    return is_loaded && api.cuDeviceGetCount(&count) == 0 && count > 0;
}

const char *
qd_cuda_error_name(QdCuResult r)
{
    static _Thread_local char fallback[32];
    const char *name = NULL;
    if (api.cuGetErrorName != NULL && api.cuGetErrorName(r, &name) == 0 && name != NULL) {
        return name;
    }
    snprintf(fallback, sizeof(fallback), "CUDA error %d", r);
    return fallback;
}

int
qd_cuda_check(QdCtx *ctx, QdCuResult r, const char *what, ...)
{
    char purpose[256];
    const char *text = NULL;
    const char *last = qd_cuda_last_kernel();
    va_list ap;

    if (r == 0) {
        return 0;
    }
    va_start(ap, what);
    vsnprintf(purpose, sizeof(purpose), what, ap);
    va_end(ap);
    if (api.cuGetErrorString == NULL || api.cuGetErrorString(r, &text) != 0 || text == NULL) {
        text = "unknown error";
    }
    if (last[0] != '\0') {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME, "%s: %s: %s (last kernel launched: %s)",
                        purpose, qd_cuda_error_name(r), text, last);
    }
    return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME, "%s: %s: %s", purpose, qd_cuda_error_name(r),
                    text);
}

/***** the device *****/

/* Queries the facts of device `ordinal` and retains its primary context. */
static int
open_device(QdCtx *ctx, int ordinal)
{
    QdCudaDevice d = {0};
    int count = 0;

    RETURN_IF_ERROR(qd_cuda_check(ctx, api.cuDeviceGetCount(&count), "cuDeviceGetCount"));
    if (count == 0) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME, "CUDA is not available: no CUDA device");
    }
    if (ordinal < 0 || ordinal >= count) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                        "CUDA device %d requested ($QD_CUDA_DEVICE) but only %d exist", ordinal,
                        count);
    }
    d.ordinal = ordinal;
    RETURN_IF_ERROR(qd_cuda_check(ctx, api.cuDeviceGet(&d.handle, ordinal), "cuDeviceGet"));
    struct {
        int attribute;
        int *out;
    } attrs[] = {
        {QD_CU_ATTR_CC_MAJOR, &d.cc_major},
        {QD_CU_ATTR_CC_MINOR, &d.cc_minor},
        {QD_CU_ATTR_SM_COUNT, &d.sm_count},
        {QD_CU_ATTR_MAX_THREADS_PER_SM, &d.max_threads_per_sm},
        {QD_CU_ATTR_MAX_THREADS_PER_BLOCK, &d.max_threads_per_block},
        {QD_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK, &d.max_shared_memory_per_block},
    };
    for (size_t i = 0; i < QD_ARRAY_LEN(attrs); i++) {
        RETURN_IF_ERROR(qd_cuda_check(
            ctx, api.cuDeviceGetAttribute(attrs[i].out, attrs[i].attribute, d.handle),
            "cuDeviceGetAttribute(%d)", attrs[i].attribute));
    }
    /* Optional (qd.clock_freq_hz): a driver that no longer reports it leaves 0. */
    if (api.cuDeviceGetAttribute(&d.clock_rate_khz, QD_CU_ATTR_CLOCK_RATE, d.handle) != 0) {
        d.clock_rate_khz = 0;
    }
    RETURN_IF_ERROR(qd_cuda_check(ctx, api.cuDeviceGetName(d.name, sizeof(d.name), d.handle),
                                  "cuDeviceGetName"));
    RETURN_IF_ERROR(
        qd_cuda_check(ctx, api.cuDeviceTotalMem(&d.total_memory, d.handle), "cuDeviceTotalMem"));
    RETURN_IF_ERROR(
        qd_cuda_check(ctx, api.cuDriverGetVersion(&d.driver_version), "cuDriverGetVersion"));
    RETURN_IF_ERROR(qd_cuda_check(ctx, api.cuDevicePrimaryCtxRetain(&d.context, d.handle),
                                  "retaining the primary context of device %d", ordinal));
    device = d;
    __atomic_store_n(&is_device_open, true, __ATOMIC_RELEASE);
    return 0;
}

const QdCudaDevice *
qd_cuda_device(QdCtx *ctx)
{
    int rc = 0;

    if (!__atomic_load_n(&is_device_open, __ATOMIC_ACQUIRE)) {
        if (qd_cuda_load(ctx) == NULL) {
            return NULL;
        }
        pthread_mutex_lock(&device_lock);
        if (!is_device_open) {
            const char *env = getenv("QD_CUDA_DEVICE");
            rc = open_device(ctx, env && env[0] ? atoi(env) : 0);
        }
        pthread_mutex_unlock(&device_lock);
    }
    if (rc < 0) {
        return NULL;
    }
    QdCuContext current = NULL;
    if (api.cuCtxGetCurrent(&current) != 0 || current != device.context) {
        if (qd_cuda_check(ctx, api.cuCtxSetCurrent(device.context), "cuCtxSetCurrent") < 0) {
            return NULL;
        }
    }
    return &device;
}

/* The context this thread made current through qd_cuda_enter, as far as this file knows. Other
 * code on the thread (a user's context push) may have changed it since: only launches trust it,
 * and they check the driver's answer. */
static _Thread_local QdCuContext entered_context;

int
qd_cuda_enter(QdCtx *ctx)
{
    const QdCudaDevice *d = qd_cuda_device(ctx);
    if (d == NULL) {
        return -1;
    }
    entered_context = d->context;
    return 0;
}

int
qd_cuda_enter_cached(QdCtx *ctx)
{
    if (entered_context != NULL && __atomic_load_n(&is_device_open, __ATOMIC_ACQUIRE) &&
        entered_context == device.context) {
        return 0;
    }
    return qd_cuda_enter(ctx);
}

void
qd_cuda_forget_entry(void)
{
    entered_context = NULL;
}
