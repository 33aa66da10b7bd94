/* codegen/llvm/nvptx_remat.c -- recomputes cheap lane-dependent values where they are used.
 *
 * LLVM's optimizer hoists every loop-invariant computation into the loop's preheader and keeps
 * its result live across the loop. On a CPU the register allocator undoes that when registers
 * run short (it rematerializes the value next to its use); the NVPTX backend hands virtual
 * registers to ptxas, which does not, so each hoisted value holds a register for the whole
 * loop. A tile's identity pattern (`1 if lane == j else 0`, j = 0..15) is such a value: hoisted
 * out of a blocked Cholesky's outer loop it kept 16 registers busy in every step of it, and
 * the lane predicates of its updates (`lane > k`) as many again.
 *
 * qd_nvptx_rematerialize runs after the optimizer, before the PTX is printed, and shapes the
 * module for ptxas's register allocation in four ways:
 *   - recomputation: a value is cheap when it is a lane predicate or a value selected by one
 *     (a compare or select, possibly converted) computed from constants, kernel parameters and
 *     the lane id through at most MAX_DEPTH levels of compares, selects, casts and integer or
 *     float arithmetic other than division. Every use of a cheap value in a block other than
 *     its own gets a copy of the computation in that block, right before the first such use
 *     (for a phi: at the end of the incoming block), shared by the later uses of that block;
 *     the lane id is read again there (a read the code generator can neither hoist nor merge)
 *     and the original goes once unused, so only the leaves stay live across loops;
 *   - compares move down to their first user within a block (the printer would otherwise keep
 *     a predicate per compare live from the block's start);
 *   - arithmetic on shuffle results stays in the shuffle's block (pin_shuffle_consumers);
 *   - one active-lane mask per block serves all its subgroup operations (share_activemask).
 */
#include "llvm_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH  4   /* levels of operations in a recomputed value */
#define MAX_CLONES 256 /* distinct values recomputed in one block */

/* The special register whose reads are recomputed: the lane id only. Thread and block ids
 * feed address arithmetic, which the loop optimizer strength-reduces better from a hoisted
 * value than from a read in every iteration. */
#define LANE_SREG "laneid"

/* The name of the function v calls directly, or "" when v is not such a call. */
static const char *
callee_name(LLVMValueRef v)
{
    LLVMValueRef callee = LLVMIsACallInst(v) ? LLVMGetCalledValue(v) : NULL;
    size_t len = 0;
    return callee && LLVMIsAFunction(callee) ? LLVMGetValueName2(callee, &len) : "";
}

/* LANE_SREG when v reads the lane id (llvm.nvvm.read.ptx.sreg.laneid), else NULL. */
static const char *
sreg_read(LLVMValueRef v)
{
    return strcmp(callee_name(v), "llvm.nvvm.read.ptx.sreg." LANE_SREG) == 0 ? LANE_SREG : NULL;
}

/* A read of special register `reg` (an i32) that the code generator can neither hoist nor
 * merge with another: inline PTX with side effects. */
static LLVMValueRef
pinned_sreg_read(LLVMBuilderRef b, LLVMTypeRef i32, const char *reg)
{
    char text[32];
    snprintf(text, sizeof(text), "mov.u32 $0, %%%s;", reg);
    LLVMTypeRef fnty = LLVMFunctionType(i32, NULL, 0, false);
    LLVMValueRef asm_fn = LLVMGetInlineAsm(fnty, text, strlen(text), "=r", 2, true, false,
                                           LLVMInlineAsmDialectATT, false);
    return LLVMBuildCall2(b, fnty, asm_fn, NULL, 0, "");
}

/* An operation cheap enough to repeat in every block that needs its result. */
static bool
is_cheap_op(LLVMOpcode op)
{
    switch (op) {
    case LLVMICmp:
    case LLVMFCmp:
    case LLVMSelect:
    case LLVMZExt:
    case LLVMSExt:
    case LLVMTrunc:
    case LLVMBitCast:
    case LLVMSIToFP:
    case LLVMUIToFP:
    case LLVMFPExt:
    case LLVMFPTrunc:
    case LLVMAdd:
    case LLVMSub:
    case LLVMMul:
    case LLVMAnd:
    case LLVMOr:
    case LLVMXor:
    case LLVMShl:
    case LLVMLShr:
    case LLVMAShr:
    case LLVMFAdd:
    case LLVMFSub:
    case LLVMFMul:
    case LLVMFNeg:
        return true;
    default:
        return false;
    }
}

/* A value that needs no recomputation: a constant, a parameter or a lane id read. */
static bool
is_leaf(LLVMValueRef v)
{
    return LLVMIsAConstant(v) || LLVMIsAArgument(v) || sreg_read(v) != NULL;
}

/* Whether v is a cheap computation over leaves (see the file comment), not itself a leaf;
 * *lane is set when a special register is among the leaves. */
static bool
is_cheap_tree(LLVMValueRef v, int depth, bool *lane)
{
    if (depth > MAX_DEPTH || !LLVMIsAInstruction(v) || is_leaf(v) ||
        !is_cheap_op(LLVMGetInstructionOpcode(v))) {
        return false;
    }
    int n = LLVMGetNumOperands(v);
    for (int i = 0; i < n; i++) {
        LLVMValueRef op = LLVMGetOperand(v, (unsigned)i);
        if (sreg_read(op) != NULL) {
            *lane = true;
        } else if (!is_leaf(op) && !is_cheap_tree(op, depth + 1, lane)) {
            return false;
        }
    }
    return true;
}

/* A cheap value that depends on the lane id and is a lane predicate or a value chosen by
 * one (a compare, a select, or one of them converted): the ones worth recomputing. A value
 * of constants and parameters only would be hoisted again by the code generator. */
static bool
is_cheap(LLVMValueRef v)
{
    bool lane = false;
    LLVMOpcode op = LLVMIsAInstruction(v) ? LLVMGetInstructionOpcode(v) : LLVMRet;
    if (op == LLVMZExt || op == LLVMSExt || op == LLVMUIToFP || op == LLVMSIToFP) {
        LLVMValueRef from = LLVMGetOperand(v, 0);
        op = LLVMIsAInstruction(from) ? LLVMGetInstructionOpcode(from) : LLVMRet;
    }
    if (op != LLVMICmp && op != LLVMFCmp && op != LLVMSelect) {
        return false;
    }
    return is_cheap_tree(v, 1, &lane) && lane;
}

/* The copies made in one block: original -> copy. */
typedef struct Clones {
    LLVMValueRef from[MAX_CLONES];
    LLVMValueRef to[MAX_CLONES];
    int n;
} Clones;

/* A copy of cheap value v (and of its cheap operands) inserted at b; reuses the copies in
 * `done` when given. NULL when the table is full. */
static LLVMValueRef
clone_tree(LLVMBuilderRef b, LLVMValueRef v, Clones *done)
{
    const char *reg = sreg_read(v);
    if (reg == NULL && is_leaf(v)) {
        return v;
    }
    for (int i = 0; done && i < done->n; i++) {
        if (done->from[i] == v) {
            return done->to[i];
        }
    }
    if (done && done->n == MAX_CLONES) {
        return NULL;
    }
    if (reg != NULL) {
        LLVMValueRef c = pinned_sreg_read(b, LLVMTypeOf(v), reg);
        if (done) {
            done->from[done->n] = v;
            done->to[done->n++] = c;
        }
        return c;
    }
    int n = LLVMGetNumOperands(v);
    LLVMValueRef ops[3];
    for (int i = 0; i < n && i < 3; i++) {
        ops[i] = clone_tree(b, LLVMGetOperand(v, (unsigned)i), done);
        if (ops[i] == NULL) {
            return NULL;
        }
    }
    LLVMValueRef c = LLVMInstructionClone(v);
    LLVMInsertIntoBuilder(b, c);
    for (int i = 0; i < n && i < 3; i++) {
        LLVMSetOperand(c, (unsigned)i, ops[i]);
    }
    if (done) {
        done->from[done->n] = v;
        done->to[done->n++] = c;
    }
    return c;
}

/* Copies op at b (sharing the block's copies in done) for operand i of user. */
static void
remat_operand(LLVMBuilderRef b, LLVMValueRef user, unsigned i, LLVMValueRef op, Clones *done)
{
    LLVMValueRef c = clone_tree(b, op, done);
    if (c != NULL) {
        LLVMSetOperand(user, i, c);
    }
}

/* Recomputes, in block bb, the cheap values from other blocks that bb's instructions use,
 * and those that phis of its successors take from bb (at its end). */
static void
remat_block(LLVMBuilderRef b, LLVMBasicBlockRef bb, Clones *done)
{
    done->n = 0;
    for (LLVMValueRef inst = LLVMGetFirstInstruction(bb); inst != NULL;
         inst = LLVMGetNextInstruction(inst)) {
        if (LLVMIsAPHINode(inst)) {
            continue;
        }
        int n = LLVMGetNumOperands(inst);
        for (int i = 0; i < n; i++) {
            LLVMValueRef op = LLVMGetOperand(inst, (unsigned)i);
            if (LLVMIsAInstruction(op) && LLVMGetInstructionParent(op) != bb && is_cheap(op)) {
                LLVMPositionBuilderBefore(b, inst);
                remat_operand(b, inst, (unsigned)i, op, done);
            }
        }
    }
    LLVMValueRef term = LLVMGetBasicBlockTerminator(bb);
    unsigned nsucc = term ? LLVMGetNumSuccessors(term) : 0;
    for (unsigned s = 0; s < nsucc; s++) {
        LLVMBasicBlockRef succ = LLVMGetSuccessor(term, s);
        for (LLVMValueRef phi = LLVMGetFirstInstruction(succ); phi && LLVMIsAPHINode(phi);
             phi = LLVMGetNextInstruction(phi)) {
            unsigned n = LLVMCountIncoming(phi);
            for (unsigned i = 0; i < n; i++) {
                LLVMValueRef op = LLVMGetIncomingValue(phi, i);
                if (LLVMGetIncomingBlock(phi, i) == bb && LLVMIsAInstruction(op) &&
                    LLVMGetInstructionParent(op) != bb && is_cheap(op)) {
                    LLVMPositionBuilderBefore(b, term);
                    remat_operand(b, phi, i, op, done);
                }
            }
        }
    }
}

/* Deletes the cheap instructions of fn left without uses (originals replaced by copies). */
static void
drop_unused(LLVMValueRef fn)
{
    bool again = true;
    while (again) {
        again = false;
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb;
             bb = LLVMGetNextBasicBlock(bb)) {
            LLVMValueRef inst = LLVMGetFirstInstruction(bb);
            while (inst != NULL) {
                LLVMValueRef next = LLVMGetNextInstruction(inst);
                if (LLVMGetFirstUse(inst) == NULL &&
                    (sreg_read(inst) != NULL || is_cheap_op(LLVMGetInstructionOpcode(inst)))) {
                    LLVMInstructionEraseFromParent(inst);
                    again = true;
                }
                inst = next;
            }
        }
    }
}

/* Moves each compare whose users all lie in its block down to just before the first of them. */
static void
sink_compares(LLVMBuilderRef b, LLVMBasicBlockRef bb)
{
    LLVMValueRef inst = LLVMGetFirstInstruction(bb);
    while (inst != NULL) {
        LLVMValueRef next = LLVMGetNextInstruction(inst);
        LLVMOpcode op = LLVMGetInstructionOpcode(inst);
        if ((op == LLVMICmp || op == LLVMFCmp) && LLVMGetFirstUse(inst) != NULL) {
            /* the first user in block order, if every user is a non-phi of this block */
            LLVMValueRef first = NULL;
            bool local = true;
            for (LLVMUseRef u = LLVMGetFirstUse(inst); u && local; u = LLVMGetNextUse(u)) {
                LLVMValueRef user = LLVMGetUser(u);
                local = LLVMGetInstructionParent(user) == bb && !LLVMIsAPHINode(user);
            }
            if (local) {
                for (LLVMValueRef s = next; s != NULL && first == NULL;
                     s = LLVMGetNextInstruction(s)) {
                    for (LLVMUseRef u = LLVMGetFirstUse(inst); u; u = LLVMGetNextUse(u)) {
                        if (LLVMGetUser(u) == s) {
                            first = s;
                            break;
                        }
                    }
                }
            }
            /* not past other compares only: two compares of one user would trade places */
            bool only_compares = true;
            for (LLVMValueRef s = next; first != NULL && s != first;
                 s = LLVMGetNextInstruction(s)) {
                LLVMOpcode sop = LLVMGetInstructionOpcode(s);
                only_compares &= sop == LLVMICmp || sop == LLVMFCmp;
            }
            if (first != NULL && !only_compares) {
                LLVMInstructionRemoveFromParent(inst);
                LLVMPositionBuilderBefore(b, first);
                LLVMInsertIntoBuilder(b, inst);
            }
        }
        inst = next;
    }
}

/* Whether v calls an NVVM shuffle (llvm.nvvm.shfl.sync.*). */
static bool
is_shuffle(LLVMValueRef v)
{
    return strncmp(callee_name(v), "llvm.nvvm.shfl.sync.", 20) == 0;
}

/* A set of values (open addressing, pointer keys). */
typedef struct ValueSet {
    LLVMValueRef *slots;
    size_t cap; /* a power of two */
    size_t n;
} ValueSet;

static size_t
set_slot(const ValueSet *set, LLVMValueRef v)
{
    size_t h = ((size_t)(uintptr_t)v >> 4) * 0x9E3779B97F4A7C15ull;
    size_t i = h & (set->cap - 1);
    while (set->slots[i] != NULL && set->slots[i] != v) {
        i = (i + 1) & (set->cap - 1);
    }
    return i;
}

static bool
set_has(const ValueSet *set, LLVMValueRef v)
{
    return set->cap > 0 && set->slots[set_slot(set, v)] == v;
}

/* Adds v; false when out of memory. */
static bool
set_add(ValueSet *set, LLVMValueRef v)
{
    if (2 * (set->n + 1) > set->cap) {
        ValueSet bigger = {calloc(set->cap ? 2 * set->cap : 256, sizeof(LLVMValueRef)),
                           set->cap ? 2 * set->cap : 256, 0};
        if (bigger.slots == NULL) {
            return false;
        }
        for (size_t i = 0; i < set->cap; i++) {
            if (set->slots[i] != NULL) {
                bigger.slots[set_slot(&bigger, set->slots[i])] = set->slots[i];
                bigger.n++;
            }
        }
        free(set->slots);
        *set = bigger;
    }
    size_t i = set_slot(set, v);
    if (set->slots[i] == NULL) {
        set->slots[i] = v;
        set->n++;
    }
    return true;
}

/* The PTX move and constraint that pass a value of type ty through inline assembly. */
static bool
pin_asm(LLVMTypeRef ty, const char **text, const char **constraints)
{
    switch (LLVMGetTypeKind(ty)) {
    case LLVMFloatTypeKind:
        *text = "mov.b32 $0, $1;", *constraints = "=f,f";
        return true;
    case LLVMDoubleTypeKind:
        *text = "mov.b64 $0, $1;", *constraints = "=d,d";
        return true;
    case LLVMIntegerTypeKind:
        if (LLVMGetIntTypeWidth(ty) == 32) {
            *text = "mov.b32 $0, $1;", *constraints = "=r,r";
            return true;
        }
        if (LLVMGetIntTypeWidth(ty) == 64) {
            *text = "mov.b64 $0, $1;", *constraints = "=l,l";
            return true;
        }
        return false;
    default:
        return false;
    }
}

/* Keeps the arithmetic on shuffle results in the shuffle's block. A value computed from a
 * shuffle and used only in later blocks (the last element of a triangular solve, stored
 * under a bounds check) would be sunk by the code generator into the block that uses it,
 * leaving every shuffle it reads live across the blocks in between; such a value is passed
 * through a move that cannot be moved (inline PTX with side effects) where it is made. */
static void
pin_shuffle_consumers(LLVMBuilderRef b, LLVMBasicBlockRef bb, ValueSet *tainted)
{
    free(tainted->slots);
    *tainted = (ValueSet){0};
    for (LLVMValueRef inst = LLVMGetFirstInstruction(bb); inst != NULL;
         inst = LLVMGetNextInstruction(inst)) {
        bool from_shuffle = is_shuffle(inst);
        int n = LLVMIsAPHINode(inst) ? 0 : LLVMGetNumOperands(inst);
        for (int i = 0; i < n && !from_shuffle; i++) {
            from_shuffle = set_has(tainted, LLVMGetOperand(inst, (unsigned)i));
        }
        if (!from_shuffle || !set_add(tainted, inst) || is_shuffle(inst) ||
            LLVMIsATerminatorInst(inst) || LLVMGetFirstUse(inst) == NULL) {
            continue;
        }
        bool all_outside = true;
        for (LLVMUseRef u = LLVMGetFirstUse(inst); u && all_outside; u = LLVMGetNextUse(u)) {
            LLVMValueRef user = LLVMGetUser(u);
            all_outside = LLVMGetInstructionParent(user) != bb || LLVMIsAPHINode(user);
        }
        const char *text, *constraints;
        if (!all_outside || !pin_asm(LLVMTypeOf(inst), &text, &constraints)) {
            continue;
        }
        LLVMTypeRef ty = LLVMTypeOf(inst);
        LLVMTypeRef fnty = LLVMFunctionType(ty, &ty, 1, false);
        LLVMValueRef asm_fn =
            LLVMGetInlineAsm(fnty, text, strlen(text), constraints, strlen(constraints), true,
                             false, LLVMInlineAsmDialectATT, false);
        LLVMValueRef next = LLVMGetNextInstruction(inst);
        LLVMPositionBuilderBefore(b, next);
        LLVMValueRef arg = inst;
        LLVMValueRef pinned = LLVMBuildCall2(b, fnty, asm_fn, &arg, 1, "");
        LLVMReplaceAllUsesWith(inst, pinned);
        LLVMSetOperand(pinned, 0, inst);
        inst = pinned;
    }
}

/* Whether v calls llvm.nvvm.activemask. */
static bool
is_activemask(LLVMValueRef v)
{
    return strcmp(callee_name(v), "llvm.nvvm.activemask") == 0;
}

/* One lane mask per block: every subgroup operation takes the mask of the lanes active at it
 * (an activemask read each), but the lanes active at a block's first read all run the rest of
 * the block (no branch leaves it before its end), so that mask serves every later operation
 * of the block: one vote instead of one per shuffle. */
static void
share_activemask(LLVMBasicBlockRef bb)
{
    LLVMValueRef first = NULL;
    LLVMValueRef inst = LLVMGetFirstInstruction(bb);
    while (inst != NULL) {
        LLVMValueRef next = LLVMGetNextInstruction(inst);
        if (is_activemask(inst)) {
            if (first == NULL) {
                first = inst;
            } else {
                LLVMReplaceAllUsesWith(inst, first);
                LLVMInstructionEraseFromParent(inst);
            }
        }
        inst = next;
    }
}

void
qd_nvptx_rematerialize(LLVMModuleRef mod)
{
    LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod));
    Clones *done = malloc(sizeof(*done));
    if (done == NULL) {
        LLVMDisposeBuilder(b);
        return; /* an optimization only */
    }
    ValueSet tainted = {0};
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        if (LLVMIsDeclaration(fn)) {
            continue;
        }
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb;
             bb = LLVMGetNextBasicBlock(bb)) {
            share_activemask(bb);
            pin_shuffle_consumers(b, bb, &tainted);
        }
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb;
             bb = LLVMGetNextBasicBlock(bb)) {
            remat_block(b, bb, done);
        }
        drop_unused(fn);
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb;
             bb = LLVMGetNextBasicBlock(bb)) {
            sink_compares(b, bb);
        }
    }
    free(tainted.slots);
    free(done);
    LLVMDisposeBuilder(b);
}
