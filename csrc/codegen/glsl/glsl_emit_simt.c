/* codegen/glsl/glsl_emit_simt.c -- SIMT instructions, fences and shared memory in GLSL.
 *
 *   thread_idx / block_idx / block_dim / grid_dim   gl_LocalInvocationID.x / gl_WorkGroupID.x /
 *                                                   gl_WorkGroupSize.x / gl_NumWorkGroups.x
 *   lane_id / subgroup_size                         gl_SubgroupInvocationID / gl_SubgroupSize
 *   block_sync                                      groupMemoryBarrier(); barrier()
 *   block_sync_{all,any,count}                      a shared counter between barriers
 *   fence_block / fence_device / fence_system       groupMemoryBarrier / memoryBarrier (twice:
 *                                                   GLSL has no system scope)
 *   subgroup_sync %mask                             subgroupBarrier() (the whole subgroup: the
 *                                                   mask is not honoured)
 *   shuffle{,_xor,_up,_down}                        subgroupShuffle{,Xor,Up,Down}; values
 *                                                   travel as 32-bit words (64-bit as uvec2),
 *                                                   lanes out of range keep their own value
 *   ballot / vote_all / vote_any                    subgroupBallot(p).x / subgroupAll / Any
 *   match_any                                       emulated: one shuffle per lane
 *   shared_alloc                                    a `shared` variable of the shader
 * The subgroup size is the device's (QdGlslOptions.subgroup_size); ballot and match_any give
 * the low 32 lanes.
 */
#include "glsl_internal.h"

#include <stdio.h>

/* The 32-bit word(s) of a value of type ty for a shuffle: the value itself for the types
 * subgroupShuffle takes (int, uint, float, double, bool), else uint / uvec2 bits. */
static void
shuffle_forms(Emitter *e, QdTypeKind k, const char **to, const char **from, const char **word)
{
    *to = "%s";
    *from = "%s";
    *word = qd_glsl_type(e, k);
    switch (k) {
    case QD_TY_I8:
    case QD_TY_I16:
    case QD_TY_U8:
    case QD_TY_U16:
        *to = k == QD_TY_I8 || k == QD_TY_I16 ? "uint(int(%s))" : "uint(%s)";
        *from = qd_glsl_str(e, "%s(%%s)", qd_glsl_type(e, k));
        *word = "uint";
        break;
    case QD_TY_F16:
        *to = "packHalf2x16(vec2(float(%s), 0.0))";
        *from = "float16_t(unpackHalf2x16(%s).x)";
        *word = "uint";
        break;
    case QD_TY_I64:
    case QD_TY_U64:
        *to = "unpackUint2x32(uint64_t(%s))";
        *from = qd_glsl_str(e, "%s(packUint2x32(%%s))", qd_glsl_type(e, k));
        *word = "uvec2";
        break;
    default:
        break;
    }
}

static int
emit_shuffle(Emitter *e, const QdInst *inst)
{
    QdTypeKind k = inst->type->kind;
    const char *v = qd_glsl_value(e, inst->args[0]);
    const char *b = qd_glsl_value(e, inst->args[1]);
    const char *to, *from, *word;
    shuffle_forms(e, k, &to, &from, &word);
    const char *x = qd_glsl_str(e, to, v);
    const char *call;
    const char *lane = qd_glsl_str(e, "uint(%s)", b);
    switch (inst->op) {
    case QD_OP_SHUFFLE:
        e->ext |= X_SG_SHUFFLE;
        call = qd_glsl_str(e, "subgroupShuffle(%s, %s & (gl_SubgroupSize - 1u))", x, lane);
        break;
    case QD_OP_SHUFFLE_XOR:
        e->ext |= X_SG_SHUFFLE;
        call = qd_glsl_str(e, "subgroupShuffleXor(%s, %s)", x, lane);
        break;
    case QD_OP_SHUFFLE_UP:
        e->ext |= X_SG_RELATIVE;
        call = qd_glsl_str(e, "subgroupShuffleUp(%s, %s)", x, lane);
        break;
    default:
        e->ext |= X_SG_RELATIVE;
        call = qd_glsl_str(e, "subgroupShuffleDown(%s, %s)", x, lane);
        break;
    }
    const char *r = qd_glsl_str(e, from, call);
    if (inst->op == QD_OP_SHUFFLE_UP || inst->op == QD_OP_SHUFFLE_DOWN) {
        /* Lanes whose source is outside the subgroup keep their own value. The shuffle is
         * evaluated by every lane first: inside a conditional expression it may become a branch
         * that only some lanes take, and a lane then reads from lanes that are not active. */
        const char *tmp = qd_glsl_str(e, "qd_sh%u", inst->result);
        qd_glsl_line(e, "%s %s = %s;", qd_glsl_type(e, k), tmp, r);
        r = inst->op == QD_OP_SHUFFLE_UP
                ? qd_glsl_str(e, "(gl_SubgroupInvocationID >= %s ? %s : %s)", lane, tmp, v)
                : qd_glsl_str(e, "(gl_SubgroupInvocationID + %s < gl_SubgroupSize ? %s : %s)", lane,
                              tmp, v);
    }
    (void)word;
    return qd_glsl_define(e, inst, r);
}

/* match_any: the lanes whose value equals this lane's, found with one shuffle per lane (every
 * active lane runs the same trips). */
static int
emit_match_any(Emitter *e, const QdInst *inst)
{
    const QdType *ty = qd_value_type(e->kernel, inst->args[0]);
    const char *v = qd_glsl_value(e, inst->args[0]);
    const char *to, *from, *word;
    const char *name = qd_glsl_str(e, "v%u", inst->result);
    shuffle_forms(e, ty->kind, &to, &from, &word);
    e->ext |= X_SG_SHUFFLE | X_SG_BALLOT;
    qd_glsl_line(e, "uint %s = 0u;", name);
    qd_glsl_line(e, "{");
    e->indent++;
    qd_glsl_line(e, "uint qd_active = subgroupBallot(true).x;");
    qd_glsl_line(e, "for (uint qd_l = 0u; qd_l < min(gl_SubgroupSize, 32u); qd_l++) {");
    e->indent++;
    qd_glsl_line(e, "%s qd_o = subgroupShuffle(%s, qd_l);", word, qd_glsl_str(e, to, v));
    qd_glsl_line(e, "if ((qd_active & (1u << qd_l)) != 0u && qd_o == %s) {", qd_glsl_str(e, to, v));
    qd_glsl_line(e, "    %s |= 1u << qd_l;", name);
    qd_glsl_line(e, "}");
    e->indent--;
    qd_glsl_line(e, "}");
    e->indent--;
    qd_glsl_line(e, "}");
    (void)from;
    e->values[inst->result].name = name;
    return 0;
}

/* block_sync_all / any / count: predicates counted in a shared counter between barriers
 * (all: no false predicate; any: some true one; count: how many). */
static int
emit_sync_pred(Emitter *e, const QdInst *inst)
{
    const QdType *ty = qd_value_type(e->kernel, inst->args[0]);
    const char *p = qd_glsl_truth(e, ty, qd_glsl_value(e, inst->args[0]));
    const char *name = qd_glsl_str(e, "v%u", inst->result);
    if (!e->sync_counter) {
        e->sync_counter = true;
        qd_sbuf_puts(&e->globals, "shared int qd_sync_count;\n");
    }
    qd_glsl_line(e, "groupMemoryBarrier();");
    qd_glsl_line(e, "barrier();");
    qd_glsl_line(e, "if (gl_LocalInvocationIndex == 0u) {");
    qd_glsl_line(e, "    qd_sync_count = 0;");
    qd_glsl_line(e, "}");
    qd_glsl_line(e, "barrier();");
    qd_glsl_line(e, "if (%s%s) {", inst->op == QD_OP_BLOCK_SYNC_ALL ? "!" : "", p);
    qd_glsl_line(e, "    atomicAdd(qd_sync_count, 1);");
    qd_glsl_line(e, "}");
    qd_glsl_line(e, "barrier();");
    const char *r = inst->op == QD_OP_BLOCK_SYNC_COUNT ? "qd_sync_count"
                    : inst->op == QD_OP_BLOCK_SYNC_ALL ? "(qd_sync_count == 0 ? 1 : 0)"
                                                       : "(qd_sync_count != 0 ? 1 : 0)";
    qd_glsl_line(e, "int %s = %s;", name, r);
    qd_glsl_line(e, "barrier();");
    e->values[inst->result].name = name;
    return 0;
}

static int
emit_shared_alloc(Emitter *e, const QdInst *inst)
{
    char dims[128];
    const QdType *elem = qd_glsl_array_dims(inst->type->elem, dims, sizeof(dims));
    const char *name = qd_glsl_str(e, "v%u", inst->result);
    GlslValue *gv = &e->values[inst->result];
    const char *type =
        gv->is_bits ? (elem->kind == QD_TY_F64 ? "uint64_t" : "uint") : qd_glsl_type(e, elem->kind);
    qd_sbuf_printf(&e->globals, "shared %s %s%s;\n", type, name, dims);
    gv->name = name;
    gv->ptr = PTR_LVALUE;
    return name ? 0 : qd_glsl_nomem(e, inst);
}

int
qd_glsl_emit_simt(Emitter *e, const QdInst *inst)
{
    const char *r = NULL;
    if (qd_op_has(inst->op, QD_SIMT) && !e->is_range) {
        return qd_error(e->ctx, qd_glsl_loc(inst), QD_ERR_COMPILATION,
                        "`%s` outside of a range_for task", qd_op_info[inst->op].text);
    }
    switch (inst->op) {
    case QD_OP_THREAD_IDX:
        r = "int(gl_LocalInvocationID.x)";
        break;
    case QD_OP_BLOCK_IDX:
        r = "int(gl_WorkGroupID.x)";
        break;
    case QD_OP_BLOCK_DIM:
        r = "int(gl_WorkGroupSize.x)";
        break;
    case QD_OP_GRID_DIM:
        r = "int(gl_NumWorkGroups.x)";
        break;
    case QD_OP_LANE_ID:
        e->ext |= X_SG_BASIC;
        r = "int(gl_SubgroupInvocationID)";
        break;
    case QD_OP_SUBGROUP_SIZE:
        e->ext |= X_SG_BASIC;
        r = "int(gl_SubgroupSize)";
        break;
    case QD_OP_BLOCK_SYNC:
        qd_glsl_line(e, "groupMemoryBarrier();");
        qd_glsl_line(e, "barrier();");
        return 0;
    case QD_OP_BLOCK_SYNC_ALL:
    case QD_OP_BLOCK_SYNC_ANY:
    case QD_OP_BLOCK_SYNC_COUNT:
        return emit_sync_pred(e, inst);
    case QD_OP_FENCE_BLOCK:
        qd_glsl_line(e, "groupMemoryBarrier();");
        return 0;
    case QD_OP_FENCE_DEVICE:
    case QD_OP_FENCE_SYSTEM:
        qd_glsl_line(e, "memoryBarrier();");
        return 0;
    case QD_OP_SUBGROUP_SYNC:
        e->ext |= X_SG_BASIC;
        qd_glsl_line(e, "subgroupMemoryBarrier();");
        qd_glsl_line(e, "subgroupBarrier();");
        return 0;
    case QD_OP_SHUFFLE:
    case QD_OP_SHUFFLE_XOR:
    case QD_OP_SHUFFLE_UP:
    case QD_OP_SHUFFLE_DOWN:
        return emit_shuffle(e, inst);
    case QD_OP_BALLOT: {
        const QdType *ty = qd_value_type(e->kernel, inst->args[0]);
        e->ext |= X_SG_BALLOT;
        r = qd_glsl_str(e, "subgroupBallot(%s).x",
                        qd_glsl_truth(e, ty, qd_glsl_value(e, inst->args[0])));
        break;
    }
    case QD_OP_VOTE_ALL:
    case QD_OP_VOTE_ANY: {
        const QdType *ty = qd_value_type(e->kernel, inst->args[0]);
        e->ext |= X_SG_VOTE;
        r = qd_glsl_str(e, "%s(%s)", inst->op == QD_OP_VOTE_ALL ? "subgroupAll" : "subgroupAny",
                        qd_glsl_truth(e, ty, qd_glsl_value(e, inst->args[0])));
        break;
    }
    case QD_OP_MATCH_ANY:
        return emit_match_any(e, inst);
    case QD_OP_SHARED_ALLOC:
        return emit_shared_alloc(e, inst);
    default:
        return qd_error(e->ctx, qd_glsl_loc(inst), QD_ERR_INTERNAL,
                        "cannot compile `%s` for Vulkan", qd_op_info[inst->op].text);
    }
    return qd_glsl_define(e, inst, r);
}
