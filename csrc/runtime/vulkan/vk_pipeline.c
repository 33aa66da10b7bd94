/* runtime/vulkan/vk_pipeline.c -- compute pipelines from SPIR-V.
 *
 * A kernel task is one compute pipeline: a shader module of the SPIR-V that codegen/glsl and
 * glslang made, entry point "main", and the runtime's one pipeline layout (a push-constant range
 * of QD_VK_PUSH_BYTES for the compute stage, no descriptor sets; vk_device.c). The module is
 * destroyed once the pipeline exists. Pipelines go through the device's in-memory
 * VkPipelineCache, so a task compiled twice in a process (a reset, a second kernel with the same
 * code) is cheap to create again. Creation takes no lock: pipeline caches are internally
 * synchronized, and nothing here records commands.
 */
#include "vk_internal.h"

#include <stdio.h>
#include <stdlib.h>

#define SPIRV_MAGIC 0x07230203u

int
qd_vk_pipeline_new(QdCtx *ctx, const uint32_t *spirv, size_t nwords, const char *what,
                   QdVkPipeline **out)
{
    const QdVkApi *vk = &qd_vk.api;
    VkShaderModule module = VK_NULL_HANDLE;
    int rc = -1;

    *out = NULL;
    if (qd_vk_device(ctx) == NULL) {
        return -1;
    }
    if (nwords < 5 || spirv[0] != SPIRV_MAGIC) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_INTERNAL,
                        "the code of %s is not SPIR-V (%zu words)", what, nwords);
    }
    QdVkPipeline *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    snprintf(p->what, sizeof(p->what), "%s", what);
    VkShaderModuleCreateInfo module_info = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = nwords * sizeof(uint32_t),
        .pCode = spirv,
    };
    if (qd_vk_check(ctx, vk->vkCreateShaderModule(qd_vk.device, &module_info, NULL, &module),
                    "creating the shader module of %s", what) < 0) {
        goto done;
    }
    VkComputePipelineCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage =
            {
                .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = module,
                .pName = "main",
            },
        .layout = qd_vk.pipeline_layout,
        .basePipelineIndex = -1,
    };
    if (qd_vk_check(ctx,
                    vk->vkCreateComputePipelines(qd_vk.device, qd_vk.pipeline_cache, 1, &info, NULL,
                                                 &p->pipeline),
                    "creating the compute pipeline of %s", what) < 0) {
        goto done;
    }
    *out = p;
    rc = 0;
done:
    if (module != VK_NULL_HANDLE) {
        vk->vkDestroyShaderModule(qd_vk.device, module, NULL);
    }
    if (rc < 0) {
        free(p);
    }
    return rc;
}

void
qd_vk_pipeline_free(QdVkPipeline *pipeline)
{
    if (pipeline == NULL) {
        return;
    }
    /* a launch in flight may still run it (its error, if any, surfaces at the next wait) */
    QdCtx ctx;
    qd_ctx_init(&ctx);
    pthread_mutex_lock(&qd_vk.lock);
    (void)qd_vk_drain_locked(&ctx);
    qd_vk.api.vkDestroyPipeline(qd_vk.device, pipeline->pipeline, NULL);
    pthread_mutex_unlock(&qd_vk.lock);
    free(pipeline);
}
