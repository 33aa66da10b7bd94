/* runtime/vulkan/vk_load.c -- finding the Vulkan loader with dlopen, the instance, VkResult
 * names, and opening the runtime once per process.
 *
 * Opening happens once (pthread_once), on the first call that needs the device:
 *   1. dlopen $QD_VULKAN_LOADER when set (tests point it at a missing file to exercise the
 *      no-Vulkan path), else libvulkan.so.1, else libvulkan.so; dlsym vkGetInstanceProcAddr;
 *   2. the LOADER rows of vulkan_api.def; the loader must offer instance version 1.2 or later;
 *   3. an instance for API 1.2 (no layers, no extensions: compute needs no window system), its
 *      INSTANCE rows;
 *   4. the device and everything launches need (vk_device.c).
 * The outcome, success or the reason for failure, is kept: later calls answer from it, and the
 * library is never closed (a driver cannot be unloaded safely while its objects may exist).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "vk_internal.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

QdVkState qd_vk = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t open_once = PTHREAD_ONCE_INIT;
static bool is_open;                     /* everything of the steps above succeeded */
static char open_error[QD_DIAG_MSG_MAX]; /* why not, when !is_open */

/* The rows of vulkan_api.def: where each is resolved and where its pointer goes. */
static const struct {
    QdVkLevel level;  /* the level column */
    const char *name; /* the command's name */
    size_t offset;    /* of its field in QdVkApi */
} api_rows[] = {
#define QD_VULKAN_API(level, name) {QD_VK_##level, #name, offsetof(QdVkApi, name)},
#include "vulkan_api.def"
#undef QD_VULKAN_API
};

/***** errors *****/

/* The rows of vk_result.def. */
static const struct {
    VkResult code;           /* the enumerator's value */
    const char *name;        /* its name */
    const char *description; /* what it means */
} results[] = {
#define QD_VK_RESULT(name, description) {name, #name, description},
#include "vk_result.def"
#undef QD_VK_RESULT
};

const char *
qd_vk_result_name(VkResult r)
{
    static _Thread_local char fallback[32];
    for (size_t i = 0; i < QD_ARRAY_LEN(results); i++) {
        if (results[i].code == r) {
            return results[i].name;
        }
    }
    snprintf(fallback, sizeof(fallback), "VkResult %d", (int)r);
    return fallback;
}

int
qd_vk_check(QdCtx *ctx, VkResult r, const char *what, ...)
{
    char purpose[512];
    const char *description = "unknown error";
    va_list ap;

    if (r == VK_SUCCESS) {
        return 0;
    }
    va_start(ap, what);
    vsnprintf(purpose, sizeof(purpose), what, ap);
    va_end(ap);
    for (size_t i = 0; i < QD_ARRAY_LEN(results); i++) {
        if (results[i].code == r) {
            description = results[i].description;
        }
    }
    return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME, "%s: %s (%s)", purpose, qd_vk_result_name(r),
                    description);
}

/***** entry points *****/

int
qd_vk_resolve(QdCtx *ctx, QdVkLevel level)
{
    for (size_t i = 0; i < QD_ARRAY_LEN(api_rows); i++) {
        PFN_vkVoidFunction fn = NULL;
        if (api_rows[i].level != level) {
            continue;
        }
        if (level == QD_VK_DEVICE) {
            fn = qd_vk.api.vkGetDeviceProcAddr(qd_vk.device, api_rows[i].name);
        } else {
            VkInstance instance = level == QD_VK_LOADER ? VK_NULL_HANDLE : qd_vk.instance;
            fn = qd_vk.api.vkGetInstanceProcAddr(instance, api_rows[i].name);
        }
        if (fn == NULL) {
            return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                            "the Vulkan %s lacks the command %s (older than Vulkan 1.2?)",
                            level == QD_VK_DEVICE ? "driver" : "loader", api_rows[i].name);
        }
        memcpy((char *)&qd_vk.api + api_rows[i].offset, &fn, sizeof(fn));
    }
    return 0;
}

/***** opening *****/

/* Steps 1 and 2: the library and the loader's commands. */
static int
open_loader(QdCtx *ctx)
{
    const char *explicit_path = getenv("QD_VULKAN_LOADER");
    const char *candidates[] = {"libvulkan.so.1", "libvulkan.so"};
    void *lib = NULL;
    uint32_t version = 0;

    if (explicit_path != NULL && explicit_path[0] != '\0') {
        lib = dlopen(explicit_path, RTLD_NOW | RTLD_LOCAL);
    } else {
        for (size_t i = 0; i < QD_ARRAY_LEN(candidates) && lib == NULL; i++) {
            lib = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
        }
    }
    if (lib == NULL) {
        const char *why = dlerror();
        return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                        "the Vulkan loader (%s) cannot be loaded: %s",
                        explicit_path && explicit_path[0] ? explicit_path : "libvulkan.so.1",
                        why ? why : "not found");
    }
    void *sym = dlsym(lib, "vkGetInstanceProcAddr");
    if (sym == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                        "the Vulkan loader lacks vkGetInstanceProcAddr");
    }
    memcpy(&qd_vk.api.vkGetInstanceProcAddr, &sym, sizeof(sym));
    RETURN_IF_ERROR(qd_vk_resolve(ctx, QD_VK_LOADER));
    RETURN_IF_ERROR(qd_vk_check(ctx, qd_vk.api.vkEnumerateInstanceVersion(&version),
                                "vkEnumerateInstanceVersion"));
    if (version < VK_API_VERSION_1_2) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                        "the Vulkan loader supports instance version %u.%u; 1.2 is needed",
                        VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version));
    }
    return 0;
}

/* Step 3: the instance. */
static int
open_instance(QdCtx *ctx)
{
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "quadrants",
        .pEngineName = "quadrants",
        .apiVersion = VK_API_VERSION_1_2,
    };
    VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
    };
    RETURN_IF_ERROR(qd_vk_check(ctx, qd_vk.api.vkCreateInstance(&info, NULL, &qd_vk.instance),
                                "creating a Vulkan 1.2 instance"));
    return qd_vk_resolve(ctx, QD_VK_INSTANCE);
}

static void
open_runtime(void)
{
    QdCtx ctx;
    qd_ctx_init(&ctx);
    if (open_loader(&ctx) == 0 && open_instance(&ctx) == 0 && qd_vk_open_device(&ctx) == 0) {
        is_open = true;
        return;
    }
    if (qd_vk.instance != VK_NULL_HANDLE) {
        qd_vk_close_device();
        qd_vk.api.vkDestroyInstance(qd_vk.instance, NULL);
        qd_vk.instance = VK_NULL_HANDLE;
    }
    snprintf(open_error, sizeof(open_error), "%s", ctx.diag.message);
}

bool
qd_vk_available(void)
{
    pthread_once(&open_once, open_runtime);
    return is_open;
}

const QdVkDeviceInfo *
qd_vk_device(QdCtx *ctx)
{
    pthread_once(&open_once, open_runtime);
    if (!is_open) {
        qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME, "Vulkan is not available: %s", open_error);
        return NULL;
    }
    return &qd_vk.info;
}
