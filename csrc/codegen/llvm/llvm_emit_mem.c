/* codegen/llvm/llvm_emit_mem.c -- memory: parameters, addresses, loads and stores, atomics.
 *
 * Addresses follow codegen.h (KERNEL ABI): parameters live in the packed argument buffer,
 * ndarray and field elements are addressed row-major with an i64 linear index, tmp slots are
 * offsets into ctx->tmps, kernel results 8-byte slots of ctx->results, and field bases the
 * external symbols `qd_field_<name>` that the JIT defines.
 *
 * Everything that is invariant for the whole function (parameter values, ndarray data
 * pointers and extents, tmp slot addresses, allocas) is created once, in the entry block,
 * through e->hoist, the first time it is used. Loads there cannot be clobbered by stores in
 * loops as far as LLVM can tell, so no alias question stands in the way of vectorization.
 *
 * Atomics are monotonic atomicrmw / cmpxchg (codegen.h lists the semantics); atomic_mul, which
 * LLVM has no atomicrmw for, is a compare-and-swap loop.
 *
 * NVPTX: a field's base is loaded (once per function, invariant) from its module global
 * `qd_field_<name>`; field and ndarray elements are addressed in the global address space
 * and made generic last (global_space, element_address), tmps and results are marked global
 * with qd_llvm_global_ptr, so loads and stores become ld.global / st.global rather than
 * generic accesses.
 */
#include "llvm_internal.h"

#include <stdio.h>

/***** hoisted values *****/

LLVMValueRef
qd_llvm_global_ptr(Emitter *e, LLVMBuilderRef b, LLVMValueRef v)
{
    if (!qd_llvm_is_gpu(e)) {
        return v;
    }
    LLVMTypeRef global = LLVMPointerTypeInContext(e->llctx, 1);
    return LLVMBuildAddrSpaceCast(b, LLVMBuildAddrSpaceCast(b, v, global, ""), e->t_ptr, "");
}

/* NVPTX: v as a pointer into the global address space (one cast, which the optimizer keeps:
 * a cast there and back to generic would fold away before the address spaces are inferred).
 * Element addresses are computed in that space and made generic last (element_address), so
 * the accesses through them become ld.global / st.global. The CPU: v. */
static LLVMValueRef
global_space(Emitter *e, LLVMBuilderRef b, LLVMValueRef v)
{
    if (!qd_llvm_is_gpu(e)) {
        return v;
    }
    return LLVMBuildAddrSpaceCast(b, v, LLVMPointerTypeInContext(e->llctx, 1), "");
}

/* Element `index` of type ty after base (from global_space), as a generic pointer. */
static LLVMValueRef
element_address(Emitter *e, LLVMTypeRef ty, LLVMValueRef base, LLVMValueRef index)
{
    LLVMValueRef p = LLVMBuildInBoundsGEP2(e->b, ty, base, &index, 1, "");
    return qd_llvm_is_gpu(e) ? LLVMBuildAddrSpaceCast(e->b, p, e->t_ptr, "") : p;
}

/* Address of byte `offset` of base (i8 GEP). */
static LLVMValueRef
byte_offset(Emitter *e, LLVMBuilderRef b, LLVMValueRef base, uint64_t offset)
{
    LLVMValueRef at = LLVMConstInt(e->t_i64, offset, 0);
    return LLVMBuildInBoundsGEP2(b, e->t_i8, base, &at, 1, "");
}

/* A scalar parameter's value, loaded in the entry block. */
static LLVMValueRef
load_scalar_param(Emitter *e, int32_t param, const QdType *ty)
{
    LLVMBuilderRef saved = e->b;
    e->b = e->hoist;
    LLVMValueRef ptr = byte_offset(e, e->b, e->args_ptr, e->arg_offsets[param]);
    LLVMValueRef v;
    v = qd_llvm_load(e, ty, ptr);
    if (qd_llvm_is_gpu(e) && (ty->kind == QD_TY_F16 || ty->kind == QD_TY_BF16)) {
        /* volatile: LLVM 19's load-store vectorizer merges adjacent f16 and bf16 parameter
         * loads into one <2 x half> load, whose bf16 half the NVPTX backend cannot select */
        LLVMSetVolatile(v, 1);
    }
    e->b = saved;
    return v;
}

/* The record (abi.h) of ndarray parameter `param`: in the kernel's argument buffer, or, in a
 * func, the pointer its caller passed (the caller's record). */
static LLVMValueRef
nd_record(Emitter *e, int32_t param)
{
    if (e->kernel->kind == QD_FUNC_FUNC) {
        return e->values[e->kernel->params[param]];
    }
    return byte_offset(e, e->hoist, e->args_ptr, e->arg_offsets[param]);
}

/* Data pointer of ndarray parameter `param`. */
static LLVMValueRef
nd_data(Emitter *e, int32_t param)
{
    if (e->nd_data[param] == NULL) {
        LLVMValueRef ptr = byte_offset(e, e->hoist, nd_record(e, param), QD_NDARRAY_DATA_OFFSET);
        LLVMValueRef v = LLVMBuildLoad2(e->hoist, e->t_ptr, ptr, "data");
        LLVMSetAlignment(v, 8);
        e->nd_data[param] = global_space(e, e->hoist, v);
    }
    return e->nd_data[param];
}

/* Extent `axis` (i32) of ndarray parameter `param`; NULL when out of memory. */
static LLVMValueRef
nd_shape(Emitter *e, int32_t param, uint32_t axis)
{
    const QdType *ty = qd_value_type(e->kernel, e->kernel->params[param]);
    if (e->nd_shape[param] == NULL) {
        e->nd_shape[param] = QD_NEW_ARRAY(e->scratch, LLVMValueRef, ty->ndim ? ty->ndim : 1);
        if (e->nd_shape[param] == NULL) {
            return NULL;
        }
    }
    if (e->nd_shape[param][axis] == NULL) {
        LLVMValueRef ptr = byte_offset(e, e->hoist, nd_record(e, param),
                                       (uint64_t)qd_ndarray_extent_offset(axis));
        LLVMValueRef v = LLVMBuildLoad2(e->hoist, e->t_i32, ptr, "shape");
        LLVMSetAlignment(v, 4);
        e->nd_shape[param][axis] = v;
    }
    return e->nd_shape[param][axis];
}

LLVMValueRef
qd_llvm_value(Emitter *e, uint32_t id)
{
    if (id >= e->kernel->nvalues) {
        return NULL;
    }
    if (e->values[id] != NULL) {
        return e->values[id];
    }
    const QdValue *v = &e->kernel->values[id];
    if (v->param >= 0 && qd_type_is_scalar(v->type)) {
        e->values[id] = load_scalar_param(e, v->param, v->type);
    } else if (v->param >= 0 && v->type->kind == QD_TY_PTR) {
        /* a pointer argument: 8 bytes in the buffer (qd_arg_layout) */
        LLVMValueRef ptr = byte_offset(e, e->hoist, e->args_ptr, e->arg_offsets[v->param]);
        e->values[id] = LLVMBuildLoad2(e->hoist, e->t_ptr, ptr, "");
        LLVMSetAlignment(e->values[id], 8);
    } else if (v->param >= 0 && v->type->kind == QD_TY_NDARRAY) {
        /* an ndarray argument passed on to a func: its record */
        e->values[id] = nd_record(e, v->param);
    } else if (v->def != NULL && v->def->op == QD_OP_TMP_ALLOC) {
        e->values[id] = byte_offset(e, e->hoist, e->tmps_ptr, e->tmp_offsets[id]);
    }
    return e->values[id];
}

/* The parameter index of an ndarray operand, or -1 with a diag. */
static int32_t
ndarray_param(Emitter *e, const QdInst *inst, uint32_t id)
{
    const QdValue *v = &e->kernel->values[id];
    if (v->param < 0 || v->type->kind != QD_TY_NDARRAY) {
        qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_INTERNAL,
                 "%s: ndarray operand is not a parameter", qd_op_info[inst->op].text);
        return -1;
    }
    return v->param;
}

/***** addresses *****/

/* Index operand k of inst, resized (by its signedness) to integer type ty. */
static LLVMValueRef
index_as(Emitter *e, const QdInst *inst, uint32_t k, LLVMTypeRef ty)
{
    uint32_t id = inst->args[k];
    return qd_llvm_int_resize(e, qd_value_type(e->kernel, id), qd_llvm_value(e, id), ty);
}

/* Strips `add x, const` layers (either operand constant, 32-bit signed integers) off value id:
 * *sum receives the constants' sum, the result is what remains. */
static uint32_t
constant_addends(const QdFunc *f, uint32_t id, int64_t *sum)
{
    *sum = 0;
    for (int depth = 0; depth < 4; depth++) {
        const QdInst *def = f->values[id].def;
        if (def == NULL || def->op != QD_OP_ADD || qd_value_type(f, id)->kind != QD_TY_I32) {
            break;
        }
        const QdInst *a = f->values[def->args[0]].def, *b = f->values[def->args[1]].def;
        if (b && b->op == QD_OP_CONST) {
            *sum += b->imm.cst.i;
            id = def->args[0];
        } else if (a && a->op == QD_OP_CONST) {
            *sum += a->imm.cst.i;
            id = def->args[1];
        } else {
            break;
        }
    }
    return id;
}

/* Row-major linear index ((i0 * s1 + i1) * s2 + i2) ... in integer type ty; extents[k] are
 * values of ty. */
static LLVMValueRef
linear_index(Emitter *e, const QdInst *inst, uint32_t first, LLVMValueRef *extents, LLVMTypeRef ty)
{
    LLVMValueRef lin = index_as(e, inst, first, ty);
    for (uint32_t k = first + 1; k < inst->nargs; k++) {
        lin = LLVMBuildNSWMul(e->b, lin, extents[k - first], "");
        lin = LLVMBuildNSWAdd(e->b, lin, index_as(e, inst, k, ty), "");
    }
    return lin;
}

/* The base address of a field. CPU: the external global `qd_field_<name>` itself (the JIT
 * defines the symbol at the field's address). NVPTX: the pointer stored in the module global
 * `qd_field_<name>`, loaded in the entry block. NULL when the field is not in the module. */
static LLVMValueRef
field_base(Emitter *e, const QdField *field)
{
    for (uint32_t i = 0; i < e->m->fields.len; i++) {
        if (e->m->fields.data[i] != field) {
            continue;
        }
        if (e->field_globals[i] == NULL) {
            char name[300];
            snprintf(name, sizeof(name), "qd_field_%s", field->name);
            if (qd_llvm_is_gpu(e)) {
                LLVMValueRef g = LLVMAddGlobalInAddressSpace(e->mod, e->t_ptr, name, 1);
                LLVMSetInitializer(g, LLVMConstPointerNull(e->t_ptr));
                LLVMSetExternallyInitialized(g, 1);
                LLVMSetAlignment(g, 8);
                e->field_globals[i] = g;
            } else {
                e->field_globals[i] = LLVMAddGlobal(e->mod, e->t_i8, name);
            }
        }
        if (!qd_llvm_is_gpu(e)) {
            return e->field_globals[i];
        }
        if (e->field_bases[i] == NULL) {
            LLVMValueRef base = LLVMBuildLoad2(e->hoist, e->t_ptr, e->field_globals[i], "field");
            LLVMSetAlignment(base, 8);
            /* the runtime writes it before any launch; nothing in a kernel does */
            LLVMSetMetadata(base, LLVMGetMDKindIDInContext(e->llctx, "invariant.load", 14),
                            LLVMMDNodeInContext(e->llctx, NULL, 0));
            e->field_bases[i] = global_space(e, e->hoist, base);
        }
        return e->field_bases[i];
    }
    return NULL;
}

/* field_ptr @f, i, j: base + linear index with the declared (constant) extents, so the
 * index arithmetic folds into the addressing of the loop. A 0-d field is its base. */
static int
emit_field_ptr(Emitter *e, const QdInst *inst)
{
    const QdField *field = inst->imm.field;
    LLVMValueRef base = field_base(e, field);
    LLVMValueRef extents[8];
    LLVMValueRef lin;

    if (base == NULL || field->ndim > QD_ARRAY_LEN(extents)) {
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_COMPILATION,
                        "field @%s is not usable here (unknown or more than 8 dimensions)",
                        field->name);
    }
    if (field->ndim == 0) {
        LLVMValueRef zero = LLVMConstInt(e->t_i64, 0, 0);
        e->values[inst->result] = element_address(e, e->t_i8, base, zero);
        return 0;
    }
    /* On a GPU, a field of fewer than 2^31 elements is indexed in 32 bits, as CUDA C indexes
     * with int: the loops' index registers stay 32-bit (one register each, not two) and only
     * the final offset is widened. Indices are in range (bounds are the field's shape). */
    bool narrow = qd_llvm_is_gpu(e) && !qd_field_is_wide(field);
    for (uint32_t i = 0; narrow && i < inst->nargs; i++) {
        const QdType *ty = qd_value_type(e->kernel, inst->args[i]);
        narrow = ty->kind == QD_TY_I32;
    }
    LLVMTypeRef index_type = narrow ? e->t_i32 : e->t_i64;
    for (uint32_t k = 0; k < field->ndim; k++) {
        extents[k] = LLVMConstInt(index_type, (uint64_t)field->shape[k], 0);
    }
    lin = linear_index(e, inst, 0, extents, index_type);
    if (narrow) {
        lin = LLVMBuildSExt(e->b, lin, e->t_i64, "");
    }
    e->values[inst->result] = element_address(e, qd_llvm_mem_type(e, field->elem), base, lin);
    return 0;
}

/* elem_ptr %x, i, j: data + linear index with the extents read from the argument (hoisted). */
static int
emit_elem_ptr(Emitter *e, const QdInst *inst)
{
    int32_t param = ndarray_param(e, inst, inst->args[0]);
    const QdType *nd = qd_value_type(e->kernel, inst->args[0]);
    LLVMValueRef extents[9] = {NULL};

    if (param < 0) {
        return -1;
    }
    if (nd->ndim >= QD_ARRAY_LEN(extents)) {
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_COMPILATION,
                        "ndarrays of more than 8 dimensions are not supported");
    }
    for (uint32_t k = 1; k < nd->ndim; k++) {
        LLVMValueRef s = nd_shape(e, param, k);
        if (s == NULL) {
            return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_NOMEM, "out of memory");
        }
        extents[k] = LLVMBuildSExt(e->b, s, e->t_i64, "");
    }
    LLVMValueRef lin =
        nd->ndim ? linear_index(e, inst, 1, extents, e->t_i64) : LLVMConstInt(e->t_i64, 0, 0);
    int64_t offset = 0;
    if (nd->ndim == 1) {
        /* i + c: the constant as a separate offset, so that addresses differing only by it
         * share one base register (an index is meaningful only within the ndarray, where the
         * 32-bit sum does not wrap) */
        uint32_t rest = constant_addends(e->kernel, inst->args[1], &offset);
        if (offset != 0) {
            lin = qd_llvm_int_resize(e, qd_value_type(e->kernel, rest), qd_llvm_value(e, rest),
                                     e->t_i64);
            lin = LLVMBuildNSWAdd(e->b, lin, LLVMConstInt(e->t_i64, (uint64_t)offset, 1), "");
        }
    }
    e->values[inst->result] =
        element_address(e, qd_llvm_mem_type(e, nd->elem), nd_data(e, param), lin);
    return 0;
}

/* array_ptr %p, i: element i of the array %p points to; the index extends by its own
 * signedness. */
static int
emit_array_ptr(Emitter *e, const QdInst *inst)
{
    const QdType *pty = qd_value_type(e->kernel, inst->args[0]);
    LLVMValueRef idx[2] = {LLVMConstInt(e->t_i64, 0, 0), index_as(e, inst, 1, e->t_i64)};
    e->values[inst->result] = LLVMBuildInBoundsGEP2(e->b, qd_llvm_mem_type(e, pty->elem),
                                                    qd_llvm_value(e, inst->args[0]), idx, 2, "");
    return 0;
}

/***** atomics *****/

/* The atomicrmw operation of an atomic op on type ty; false when there is none (a CAS loop). */
static bool
rmw_op(QdOp op, const QdType *ty, LLVMAtomicRMWBinOp *out)
{
    bool is_float = qd_type_is_float(ty);
    bool is_signed = qd_type_is_signed(ty);
    bool is_bool = ty->kind == QD_TY_U1;

    switch (op) {
    case QD_OP_ATOMIC_ADD:
    case QD_OP_ATOMIC_SUB:
        /* On u1 (0 / 1 in a byte), a + b and a - b wrap to a ^ b. */
        *out = is_bool ? LLVMAtomicRMWBinOpXor
               : is_float
                   ? (op == QD_OP_ATOMIC_ADD ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpFSub)
                   : (op == QD_OP_ATOMIC_ADD ? LLVMAtomicRMWBinOpAdd : LLVMAtomicRMWBinOpSub);
        /* (qd_llvm_atomic_rmw turns a float sub into the add of the negation first) */
        return true;
    case QD_OP_ATOMIC_MUL:
        *out = LLVMAtomicRMWBinOpAnd; /* on u1 only: a * b is a & b */
        return is_bool;
    case QD_OP_ATOMIC_MIN:
        *out = is_float    ? LLVMAtomicRMWBinOpFMin
               : is_signed ? LLVMAtomicRMWBinOpMin
                           : LLVMAtomicRMWBinOpUMin;
        return true;
    case QD_OP_ATOMIC_MAX:
        *out = is_float    ? LLVMAtomicRMWBinOpFMax
               : is_signed ? LLVMAtomicRMWBinOpMax
                           : LLVMAtomicRMWBinOpUMax;
        return true;
    case QD_OP_ATOMIC_AND:
        *out = LLVMAtomicRMWBinOpAnd;
        return true;
    case QD_OP_ATOMIC_OR:
        *out = LLVMAtomicRMWBinOpOr;
        return true;
    case QD_OP_ATOMIC_XOR:
        *out = LLVMAtomicRMWBinOpXor;
        return true;
    default: /* XCHG */
        *out = LLVMAtomicRMWBinOpXchg;
        return true;
    }
}

/* old = *ptr; do { new = old OP v } while (!cas(ptr, old, new)); returns old. The exchange
 * works on the integer bits, so it serves floats of every width. */
static LLVMValueRef
cas_loop(Emitter *e, QdOp op, const QdType *ty, LLVMValueRef ptr, LLVMValueRef v)
{
    LLVMTypeRef bits = qd_llvm_bits_type(e, ty);
    LLVMTypeRef t = qd_llvm_reg_type(e, ty);
    LLVMValueRef init = LLVMBuildLoad2(e->b, bits, ptr, "");
    LLVMSetAlignment(init, qd_llvm_scalar_size(ty));
    LLVMSetOrdering(init, LLVMAtomicOrderingMonotonic);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(e->b);
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(e->llctx, e->fn, "cas");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(e->llctx, e->fn, "cas.done");

    LLVMBuildBr(e->b, loop);
    LLVMPositionBuilderAtEnd(e->b, loop);
    LLVMValueRef old_bits = LLVMBuildPhi(e->b, bits, "");
    LLVMValueRef old = LLVMBuildBitCast(e->b, old_bits, t, "");
    LLVMValueRef new_value = qd_llvm_binary(e, op == QD_OP_ATOMIC_MUL ? QD_OP_MUL : op, ty, old, v);
    LLVMValueRef new_bits = LLVMBuildBitCast(e->b, new_value, bits, "");
    LLVMValueRef pair = LLVMBuildAtomicCmpXchg(
        e->b, ptr, old_bits, new_bits, LLVMAtomicOrderingMonotonic, LLVMAtomicOrderingMonotonic, 0);
    LLVMValueRef seen = LLVMBuildExtractValue(e->b, pair, 0, "");
    LLVMValueRef ok = LLVMBuildExtractValue(e->b, pair, 1, "");
    LLVMBasicBlockRef from_loop = LLVMGetInsertBlock(e->b);
    LLVMBuildCondBr(e->b, ok, done, loop);
    LLVMValueRef incoming[2] = {init, seen};
    LLVMBasicBlockRef from[2] = {pre, from_loop};
    LLVMAddIncoming(old_bits, incoming, from, 2);
    LLVMPositionBuilderAtEnd(e->b, done);
    return old;
}

LLVMValueRef
qd_llvm_atomic_rmw(Emitter *e, QdOp op, const QdType *ty, LLVMValueRef ptr, LLVMValueRef v)
{
    LLVMAtomicRMWBinOp rmw;
    if (op == QD_OP_ATOMIC_SUB && qd_type_is_float(ty)) {
        /* a - b is exactly a + (-b): GPUs add floats atomically in global and shared memory
         * (atom.add.f32), while an fsub would be a CAS loop. */
        v = LLVMBuildFNeg(e->b, v, "");
        op = QD_OP_ATOMIC_ADD;
    }
    if (!rmw_op(op, ty, &rmw)) {
        return cas_loop(e, op, ty, ptr, v);
    }
    LLVMValueRef old =
        LLVMBuildAtomicRMW(e->b, rmw, ptr, qd_llvm_to_mem(e, ty, v), LLVMAtomicOrderingMonotonic, 0);
    return qd_llvm_from_mem(e, ty, old);
}

/* Every atomic op: cmpxchg for atomic_cas, atomicrmw where LLVM has the operation (LLVM
 * expands the ones the CPU lacks, such as fmin or f16 fadd, into its own CAS loops), our CAS
 * loop for atomic_mul. u1 values are 0 / 1 bytes in memory, so they go in and out through
 * qd_llvm_to_mem / qd_llvm_from_mem. */
static int
emit_atomic(Emitter *e, const QdInst *inst)
{
    const QdType *ty = inst->type;
    LLVMValueRef ptr = qd_llvm_value(e, inst->args[0]);
    LLVMValueRef v = qd_llvm_value(e, inst->args[1]);
    LLVMValueRef old;

    if (inst->op == QD_OP_ATOMIC_CAS) {
        LLVMValueRef expected = qd_llvm_to_mem(e, ty, v);
        LLVMValueRef desired = qd_llvm_to_mem(e, ty, qd_llvm_value(e, inst->args[2]));
        LLVMValueRef pair =
            LLVMBuildAtomicCmpXchg(e->b, ptr, expected, desired, LLVMAtomicOrderingMonotonic,
                                   LLVMAtomicOrderingMonotonic, 0);
        old = qd_llvm_from_mem(e, ty, LLVMBuildExtractValue(e->b, pair, 0, ""));
    } else {
        old = qd_llvm_atomic_rmw(e, inst->op, ty, ptr, v);
    }
    e->values[inst->result] = old;
    return 0;
}

/***** grid-stride loops *****/

/* Inside an NVPTX grid-stride loop, a load or store of global memory joins the loop's access
 * group (llvm_emit_task.c: the loop's iterations are independent). Loads and stores of local
 * and shared memory never do: allocas are reused by every iteration of a thread. */
static void
join_access_group(Emitter *e, const QdInst *inst, LLVMValueRef access)
{
    const QdType *ptr = qd_value_type(e->kernel, inst->args[0]);
    if (e->access_group == NULL || ptr->space != QD_SPACE_GLOBAL || access == NULL) {
        return;
    }
    /* a u1 load is followed by its compare: tag the load itself */
    if (LLVMIsALoadInst(access) == NULL && LLVMIsAStoreInst(access) == NULL &&
        LLVMIsAInstruction(access) != NULL && LLVMGetNumOperands(access) > 0) {
        access = LLVMGetOperand(access, 0);
    }
    if (LLVMIsALoadInst(access) != NULL || LLVMIsAStoreInst(access) != NULL) {
        LLVMSetMetadata(access, LLVMGetMDKindIDInContext(e->llctx, "llvm.access.group", 17),
                        LLVMMetadataAsValue(e->llctx, e->access_group));
    }
}

/***** alignment of shared-memory accesses *****/

/* How many low bits of the integer value `id` are known to be zero (32 for the constant 0): the
 * constants, products, sums, left shifts and masks the QIR spells its index arithmetic with. */
static unsigned
known_zero_bits(const QdFunc *f, uint32_t id, int depth)
{
    const QdInst *def = f->values[id].def;
    if (def == NULL || depth > 8) {
        return 0;
    }
    unsigned a, b;
    switch (def->op) {
    case QD_OP_CONST: {
        uint64_t c = (uint64_t)def->imm.cst.i;
        return c == 0 ? 32 : (unsigned)__builtin_ctzll(c);
    }
    case QD_OP_MUL:
        a = known_zero_bits(f, def->args[0], depth + 1);
        b = known_zero_bits(f, def->args[1], depth + 1);
        return a + b > 32 ? 32 : a + b;
    case QD_OP_ADD:
    case QD_OP_SUB:
    case QD_OP_OR:
        a = known_zero_bits(f, def->args[0], depth + 1);
        b = known_zero_bits(f, def->args[1], depth + 1);
        return a < b ? a : b;
    case QD_OP_AND:
        a = known_zero_bits(f, def->args[0], depth + 1);
        b = known_zero_bits(f, def->args[1], depth + 1);
        return a > b ? a : b;
    case QD_OP_SHL: {
        const QdInst *amount = f->values[def->args[1]].def;
        if (amount == NULL || amount->op != QD_OP_CONST) {
            return 0;
        }
        a = known_zero_bits(f, def->args[0], depth + 1) + (unsigned)amount->imm.cst.i;
        return a > 32 ? 32 : a;
    }
    default:
        return 0;
    }
}

/* The alignment a load or store through pointer `id` may claim: an element of a shared array
 * (whose storage is 16-byte aligned, emit_shared_alloc) at an index known to be a multiple of
 * 2^k has min(16, element size * 2^k); anything else its element's natural alignment, 0. Wider
 * claims let the load-store vectorizer merge neighbouring accesses of staged tiles. */
static unsigned
shared_alignment(const Emitter *e, uint32_t id)
{
    const QdInst *def = e->kernel->values[id].def;
    if (def == NULL || def->op != QD_OP_ARRAY_PTR) {
        return 0;
    }
    const QdInst *base = e->kernel->values[def->args[0]].def;
    if (base == NULL || base->op != QD_OP_SHARED_ALLOC) {
        return 0;
    }
    const QdType *elem = qd_value_type(e->kernel, def->args[0])->elem->elem;
    if (elem == NULL || !qd_type_is_scalar(elem)) {
        return 0;
    }
    unsigned zeros = known_zero_bits(e->kernel, def->args[1], 0);
    uint64_t align = (uint64_t)qd_llvm_scalar_size(elem) << (zeros > 4 ? 4 : zeros);
    return align > 16 ? 16 : (unsigned)align;
}

/* Raises the alignment of the access just emitted for pointer `id` where shared_alignment
 * knows more than its element's. */
static void
align_access(Emitter *e, uint32_t id, LLVMValueRef access)
{
    unsigned align = shared_alignment(e, id);
    if (align == 0 || access == NULL ||
        (LLVMIsALoadInst(access) == NULL && LLVMIsAStoreInst(access) == NULL)) {
        return;
    }
    if (align > LLVMGetAlignment(access)) {
        LLVMSetAlignment(access, align);
    }
}

/***** dispatch *****/

int
qd_llvm_emit_mem(Emitter *e, const QdInst *inst)
{
    switch (inst->op) {
    case QD_OP_ALLOCA:
        e->values[inst->result] =
            LLVMBuildAlloca(e->hoist, qd_llvm_mem_type(e, inst->type->elem), "");
        return 0;
    case QD_OP_FIELD_PTR:
        return emit_field_ptr(e, inst);
    case QD_OP_ELEM_PTR:
        return emit_elem_ptr(e, inst);
    case QD_OP_ARRAY_PTR:
        return emit_array_ptr(e, inst);
    case QD_OP_SHAPE: {
        int32_t param = ndarray_param(e, inst, inst->args[0]);
        if (param < 0) {
            return -1;
        }
        e->values[inst->result] = nd_shape(e, param, (uint32_t)inst->imm.i);
        if (e->values[inst->result] == NULL) {
            return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_NOMEM, "out of memory");
        }
        return 0;
    }
    case QD_OP_LOAD:
        e->values[inst->result] = qd_llvm_load(e, inst->type, qd_llvm_value(e, inst->args[0]));
        join_access_group(e, inst, e->values[inst->result]);
        align_access(e, inst->args[0], e->values[inst->result]);
        return 0;
    case QD_OP_LOAD_VOLATILE: {
        LLVMValueRef v = LLVMBuildLoad2(e->b, qd_llvm_mem_type(e, inst->type),
                                        qd_llvm_value(e, inst->args[0]), "");
        LLVMSetAlignment(v, qd_llvm_scalar_size(inst->type));
        LLVMSetVolatile(v, 1);
        e->values[inst->result] = qd_llvm_from_mem(e, inst->type, v);
        return 0;
    }
    case QD_OP_STORE: {
        const QdType *ty = qd_value_type(e->kernel, inst->args[1]);
        qd_llvm_store(e, ty, qd_llvm_value(e, inst->args[0]), qd_llvm_value(e, inst->args[1]));
        join_access_group(e, inst, LLVMGetLastInstruction(LLVMGetInsertBlock(e->b)));
        align_access(e, inst->args[0], LLVMGetLastInstruction(LLVMGetInsertBlock(e->b)));
        return 0;
    }
    case QD_OP_KERNEL_RET: {
        const QdType *ty = qd_value_type(e->kernel, inst->args[0]);
        LLVMValueRef slot =
            byte_offset(e, e->b, e->results_ptr, QD_RESULT_SLOT_BYTES * (uint64_t)inst->imm.i);
        qd_llvm_store(e, ty, slot, qd_llvm_value(e, inst->args[0]));
        return 0;
    }
    default:
        return emit_atomic(e, inst);
    }
}
