/* codegen/llvm/llvm_internal.h -- what the files of the LLVM code generator share.
 *
 * Not a public header: codegen.h is. The emitter state (Emitter) is built by llvm_emit.c for
 * one kernel and one LLVM module (regions, control flow), llvm_emit_task.c makes the functions
 * of each task; llvm_emit_mem.c emits addresses,
 * loads, stores and atomics, llvm_emit_ops.c arithmetic, math and casts, llvm_emit_debug.c
 * print and assert, llvm_emit_simt.c the SIMT instructions (GPU only); llvm_types.c maps QIR
 * types to LLVM types; target_cpu.c owns the host target machine, the optimizer and the
 * object / dump writers; llvm_jit.c ties them to ORC; target_nvptx.c is the NVPTX (CUDA)
 * target: the same emitter, PTX out.
 *
 * One emitter, two targets (Emitter.target). What differs, and where:
 *   - function shape (llvm_emit.c): CPU tasks take (ctx, lo, hi) and range tasks get a bounds
 *     function; NVPTX tasks are kernels taking the packed parameter buffer by value, and a
 *     range task runs its own grid-stride loop;
 *   - field bases (llvm_emit_mem.c): the address of an external symbol on the CPU, a pointer
 *     loaded from a module global on NVPTX;
 *   - math (llvm_emit_ops.c): libm on the CPU, libdevice (__nv_*) on NVPTX;
 *   - print / assert (llvm_emit_debug.c): runtime calls on the CPU, vprintf / a device flag on
 *     NVPTX; SIMT and fences: rejected / nvvm intrinsics.
 */
#ifndef QD_LLVM_INTERNAL_H
#define QD_LLVM_INTERNAL_H

#include "codegen.h"

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

/* The fast-math flags put on float operations when QdLlvmOptions.fast_math is set. */
#define QD_FAST_MATH_FLAGS                                                                         \
    (LLVMFastMathAllowReassoc | LLVMFastMathAllowContract | LLVMFastMathApproxFunc |               \
     LLVMFastMathNoSignedZeros | LLVMFastMathAllowReciprocal)

/* Targets of break / continue for the innermost serial loop being emitted. */
typedef struct LoopTargets {
    LLVMBasicBlockRef cont; /* where `continue` goes (the latch or the loop header) */
    LLVMBasicBlockRef exit; /* where `break` goes */
} LoopTargets;

/* An assert of an NVPTX kernel, by id (the assert flag holds id + 1). */
typedef struct QdLlvmAssert {
    const char *format; /* the message, a printf format when it has values */
    const char *kinds;  /* one letter per value: 'i' signed, 'u' unsigned, 'f' float */
} QdLlvmAssert;

/* The machine the emitter generates code for. */
typedef enum QdLlvmTarget {
    QD_LLVM_TARGET_CPU,   /* the host CPU (ORC JIT) */
    QD_LLVM_TARGET_NVPTX, /* NVIDIA GPUs through PTX */
} QdLlvmTarget;

/* A func compiled as an LLVM function (llvm_emit_call.c). */
typedef struct LlvmFunc {
    QdFunc *func;      /* the QIR func */
    LLVMValueRef fn;   /* its LLVM function */
    LLVMTypeRef type;  /* ... and type */
    bool emitted;      /* its body is emitted */
} LlvmFunc;

/* Per-kernel emitter state. Everything LLVM lives in `llctx`, owned by the caller. */
typedef struct Emitter {
    QdCtx *ctx;                /* where errors go */
    QdLlvmTarget target;       /* what the code is for (see the file comment) */
    bool bounds_only;          /* CPU: emit only the bounds functions that need no device memory
                                  (the CUDA launcher sizes grids with them); no task bodies */
    const QdLlvmOptions *opts; /* fast math, ... */
    QdArena *scratch;          /* per-compile scratch memory */
    QdModule *m;               /* the QIR module */
    QdFunc *kernel;            /* the kernel being compiled (while a called func's body is
                                  emitted: that func) */
    const char *symbol;        /* the kernel's symbol, prefix of its functions' names */
    QdVec(LlvmFunc) funcs;     /* funcs called by the kernel (recursion), declared so far */
    LLVMContextRef llctx;      /* LLVM context of the module */
    LLVMModuleRef mod;         /* the module being built */
    LLVMBuilderRef b;          /* builder at the current instruction */
    LLVMBuilderRef hoist;      /* builder before the branch that ends the entry block */
    /* the function being emitted */
    LLVMValueRef fn;          /* the task or bounds function */
    LLVMValueRef ctx_arg;     /* its `ctx` parameter */
    LLVMValueRef args_ptr;    /* ctx->args, loaded in the entry block */
    LLVMValueRef results_ptr; /* ctx->results */
    LLVMValueRef tmps_ptr;    /* ctx->tmps */
    LLVMValueRef *values;     /* QIR value id -> LLVM value in this function (NULL = none) */
    LLVMValueRef *nd_data;    /* param index -> ndarray data pointer (loaded lazily) */
    LLVMValueRef **nd_shape;  /* param index -> ndarray extents (loaded lazily) */
    /* kernel-wide facts */
    uint32_t *arg_offsets;               /* per parameter */
    uint32_t *tmp_offsets;               /* value id of a tmp_alloc -> offset in ctx->tmps */
    LLVMValueRef *field_globals;         /* field index in m->fields -> `qd_field_<name>` global */
    LLVMValueRef print_fn;               /* qd_rt_print declaration (created on first use) */
    LLVMValueRef assert_fn;              /* qd_rt_assert_fail declaration */
    LLVMValueRef ipow_fns[QD_TY_COUNT_]; /* integer pow helpers, per type */
    uint64_t shared_offset;              /* CPU SIMT: bytes of shared memory given out in this
                                            function (llvm_emit_simt_cpu.c) */
    QdVec(const QdInst *) partials;      /* the partial_* of the task being emitted, combined
                                            into their targets after its loop */
    /* NVPTX only */
    uint32_t args_size;          /* bytes of packed arguments; the launch tail follows them */
    uint32_t default_block_dim;  /* threads per block of a range_for task without block_dim */
    uint32_t max_blocks_per_sm;  /* blocks one SM of the device can hold at once (0: unknown) */
    int sm;                      /* NVPTX: the sm_XY targeted (0 elsewhere) */
    LLVMValueRef rt_ptr;         /* the tail's runtime-state pointer (assert flag) */
    LLVMValueRef *field_bases;   /* field index -> its base, loaded in this function's entry */
    QdLlvmAssert *asserts;       /* each assert, by id (nasserts entries) */
    uint32_t nasserts;           /* number of asserts emitted */
    bool has_asserts;            /* the kernel contains an assert (tasks check the flag first) */
    bool has_print;              /* the kernel prints (vprintf) */
    bool uses_libdevice;         /* a __nv_* function was called: libdevice must be linked */
    bool ftz;                    /* NVPTX: f32 denormals are flushed (fast math, no f16/bf16) */
    LLVMMetadataRef access_group; /* inside a grid-stride loop: the access group its global
                                     loads and stores join (llvm.access.group), else NULL */
    /* common LLVM types */
    LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64, t_f32, t_f64, t_ptr;
} Emitter;

/***** llvm_types.c *****/

/* LLVM type of a QIR value of type ty in registers (u1 is i1; pointers are `ptr`). */
LLVMTypeRef qd_llvm_reg_type(const Emitter *e, const QdType *ty);
/* LLVM type of ty in memory (u1 is i8; arrays nest). */
LLVMTypeRef qd_llvm_mem_type(const Emitter *e, const QdType *ty);
/* Integer type of the same width as scalar ty (u1: i8, its memory width). */
LLVMTypeRef qd_llvm_bits_type(const Emitter *e, const QdType *ty);
/* Size and alignment in bytes of a scalar type in memory (u1: 1). */
uint32_t qd_llvm_scalar_size(const QdType *ty);
/* The `const` instruction's value. */
LLVMValueRef qd_llvm_const(const Emitter *e, const QdType *ty, const QdConst *c);
/* A value loaded from memory of type ty as a register value (i8 -> i1 for u1), and back. */
LLVMValueRef qd_llvm_from_mem(Emitter *e, const QdType *ty, LLVMValueRef v);
LLVMValueRef qd_llvm_to_mem(Emitter *e, const QdType *ty, LLVMValueRef v);
/* Loads / stores a scalar of type ty at ptr with its natural alignment. */
LLVMValueRef qd_llvm_load(Emitter *e, const QdType *ty, LLVMValueRef ptr);
void qd_llvm_store(Emitter *e, const QdType *ty, LLVMValueRef ptr, LLVMValueRef v);
/* Sign- or zero-extends (by ty's signedness) or truncates an integer register value to `to`. */
LLVMValueRef qd_llvm_int_resize(Emitter *e, const QdType *ty, LLVMValueRef v, LLVMTypeRef to);

/***** llvm_emit_ops.c *****/

/* Emits a value-producing or memory instruction that has no regions (arithmetic, casts, math,
 * atomics, print, assert). 0, or -1 with a diag. */
int qd_llvm_emit_op(Emitter *e, const QdInst *inst);
/* The two-operand arithmetic of op on register values of type ty (also used by CAS loops). */
LLVMValueRef qd_llvm_binary(Emitter *e, QdOp op, const QdType *ty, LLVMValueRef a, LLVMValueRef b);
/* Puts the fast-math flags on v when enabled and v is a float operation. Returns v. */
LLVMValueRef qd_llvm_fast(Emitter *e, LLVMValueRef v);
/* An integer value as the i1 "is nonzero" (i1 values are returned as they are). */
LLVMValueRef qd_llvm_truth(Emitter *e, LLVMValueRef v);
/* Declares (once) and returns an LLVM function; fn_type receives its type. */
LLVMValueRef qd_llvm_declare(Emitter *e, const char *name, LLVMTypeRef ret, LLVMTypeRef *params,
                             unsigned nparams, LLVMTypeRef *fn_type);
/* Calls the intrinsic `name` overloaded on types[0..ntypes) with args. */
LLVMValueRef qd_llvm_intrinsic(Emitter *e, const char *name, LLVMTypeRef *types, unsigned ntypes,
                               LLVMValueRef *args, unsigned nargs);

/* `cast` from type `from` to type `to` (ops.def, codegen.h: saturating float -> int). */
LLVMValueRef qd_llvm_cast(Emitter *e, const QdType *from, const QdType *to, LLVMValueRef v);

/* Whether the module's code is for a GPU. */
static inline bool
qd_llvm_is_gpu(const Emitter *e)
{
    return e->target == QD_LLVM_TARGET_NVPTX;
}

/* NVPTX: a pointer value known to point to global memory, in a form the address-space
 * inference of the NVPTX backend turns into ld.global / st.global (a cast to addrspace(1) and
 * back). Returns v unchanged on the CPU. Built with builder b. */
LLVMValueRef qd_llvm_global_ptr(Emitter *e, LLVMBuilderRef b, LLVMValueRef v);

/***** llvm_emit_simt.c *****/

/* SIMT instructions (thread / block geometry, barriers, subgroup operations, shared_alloc)
 * and fences, on NVPTX. 0, or -1 with a diag. */
int qd_llvm_emit_simt(Emitter *e, const QdInst *inst);
/* The same for the CPU with cpu_simt: calls into runtime/cpu/simt.c (llvm_emit_simt_cpu.c). */
int qd_llvm_emit_simt_cpu(Emitter *e, const QdInst *inst);
/* The fences fence_block / fence_device / fence_system on the GPU. */
void qd_llvm_emit_gpu_fence(Emitter *e, QdOp op);
/* NVPTX: the value v of type ty from lane (lane_id ^ lane_mask), among the lanes of `mask`. */
LLVMValueRef qd_llvm_shuffle_xor(Emitter *e, const QdType *ty, LLVMValueRef v, LLVMValueRef mask,
                                 unsigned lane_mask);
/* NVPTX: the mask of the lanes executing this instruction (activemask). */
LLVMValueRef qd_llvm_active_mask(Emitter *e);
/* An NVPTX special register read (llvm.nvvm.read.ptx.sreg.<name>), i32. */
LLVMValueRef qd_llvm_sreg(Emitter *e, LLVMBuilderRef b, const char *name);

/***** llvm_emit_debug.c *****/

/* print and assert. 0, or -1 with a diag (a format the runtime cannot honour). */
int qd_llvm_emit_print(Emitter *e, const QdInst *inst);
int qd_llvm_emit_assert(Emitter *e, const QdInst *inst);

/***** llvm_emit_mem.c *****/

/* Memory instructions: alloca, field_ptr, elem_ptr, array_ptr, shape, load, store, the
 * atomics, tmp_alloc and kernel_ret. 0, or -1 with a diag. */
int qd_llvm_emit_mem(Emitter *e, const QdInst *inst);
/* The value of QIR value id in the current function, creating hoisted parameter loads on first
 * use. NULL when the id has no value here (a bug in the emitter's caller). */
LLVMValueRef qd_llvm_value(Emitter *e, uint32_t id);

/* The atomic read-modify-write `op` (an atomic_* opcode) of v into *ptr, type ty; returns the
 * old value. */
LLVMValueRef qd_llvm_atomic_rmw(Emitter *e, QdOp op, const QdType *ty, LLVMValueRef ptr,
                                LLVMValueRef v);

/***** llvm_emit_reduce.c *****/

/* partial_*: the thread's accumulator, set to the operation's identity, remembered for
 * qd_llvm_flush_partials. 0, or -1 with a diag. */
int qd_llvm_emit_partial(Emitter *e, const QdInst *inst);
/* After a task's parallel loop: combines each accumulator of the task into its target (on
 * NVPTX across the warp first), then forgets them. */
void qd_llvm_flush_partials(Emitter *e);

/***** llvm_emit.c *****/

/* Where errors about inst point: its .qir line when it was parsed from text (the verifier's
 * rule), else the user's source location it carries. */
QdLoc qd_llvm_loc(const QdInst *inst);

/* Emits the kernel's task and bounds functions into e->mod. 0, or -1 with a diag. */
int qd_llvm_emit_kernel(Emitter *e, const char *symbol, QdCompiledKernel *out);
/* The regions and instructions of a function body; `loop` is the innermost serial loop (NULL
 * outside of one). 0, or -1 with a diag. */
int qd_llvm_emit_region(Emitter *e, const QdRegion *r, const LoopTargets *loop);
int qd_llvm_emit_inst(Emitter *e, const QdInst *inst, const LoopTargets *loop);
/* `for` and the CPU's parallel loop: the induction variable of inst runs over [lo, hi). */
int qd_llvm_emit_counted_loop(Emitter *e, const QdInst *inst, LLVMValueRef lo, LLVMValueRef hi);
/* Marks the loop ending in `latch_br` as not worth runtime unrolling. */
void qd_llvm_mark_loop(Emitter *e, LLVMValueRef latch_br);
/* A new block at the end of the current function; whether the current block lacks its
 * terminator. */
LLVMBasicBlockRef qd_llvm_new_block(Emitter *e, const char *name);
bool qd_llvm_block_is_open(Emitter *e);

/***** llvm_emit_call.c *****/

/* `call` of a func that stays a call (recursion), declaring its LLVM function; `ret`. */
int qd_llvm_emit_call(Emitter *e, const QdInst *inst);
int qd_llvm_emit_ret(Emitter *e, const QdInst *inst);
/* Emits the bodies of the declared funcs (and of the funcs they call). 0, or -1 with a diag. */
int qd_llvm_emit_funcs(Emitter *e);

/***** llvm_emit_task.c *****/

/* The function(s) of task `index` (a `task` instruction) of the kernel, named from `symbol`,
 * with *task filled (block_dim, grain, entry). 0, or -1 with a diag. */
int qd_llvm_emit_task(Emitter *e, const QdInst *inst, uint32_t index, const char *symbol,
                      QdCompiledTask *task);

/***** llvm_jit.c *****/

/* Checks that `kernel_name` is a kernel of m, verifies m as concrete, and fills nparams,
 * arg_offsets and args_size of `out`. NULL with a diag. */
QdFunc *qd_llvm_prepare_kernel(QdCtx *ctx, QdModule *m, const char *kernel_name,
                               QdCompiledKernel *out);

/***** target_cpu.c *****/

/* Dump files (QdLlvmOptions.print_kernel_*), each kind numbered by its own process-wide
 * counter. */
typedef enum QdLlvmDump {
    QD_DUMP_CPU_IR,           /* quadrants_kernel_cpu_llvm_ir_NNNN.ll */
    QD_DUMP_CPU_IR_OPTIMIZED, /* quadrants_kernel_cpu_llvm_ir_optimized_NNNN.ll */
    QD_DUMP_CPU_ASM,          /* quadrants_kernel_cpu_llvm_ir_optimized_asm_NNNN.s */
    QD_DUMP_CUDA_IR,          /* quadrants_kernel_cuda_llvm_ir_NNNN.ll */
    QD_DUMP_CUDA_IR_OPTIMIZED, /* quadrants_kernel_cuda_llvm_ir_optimized_NNNN.ll */
    QD_DUMP_PTX,              /* quadrants_kernel_nvptx_NNNN.ptx */
    QD_DUMP_KINDS_
} QdLlvmDump;

/* The next file name of a dump kind, in opts->dump_dir or the working directory. */
void qd_llvm_dump_path(const QdLlvmOptions *opts, QdLlvmDump kind, char *out, size_t size);
/* Writes the module's IR as the next file of `kind`. 0, or -1 with a diag. */
int qd_llvm_dump_ir(QdCtx *ctx, LLVMModuleRef mod, const QdLlvmOptions *opts, QdLlvmDump kind);
/* Functions of more IR instructions than this are not vectorized (see qd_llvm_limit_vectorizers). */
#define QD_LLVM_VECTORIZE_MAX_INSTS 20000
/* Marks every function of `mod` larger than QD_LLVM_VECTORIZE_MAX_INSTS instructions
 * `noimplicitfloat`, which LLVM's SLP and loop vectorizers respect by leaving the function as it
 * is. Run before the optimizer: SLP's cost grows faster than the function (a 100k-instruction
 * task, every func of a collision pipeline inlined, spent 60% of its O3 time there), and a
 * task that large is straight-line code that vectorizing does not speed up. Explicit float
 * arithmetic is unaffected. */
void qd_llvm_limit_vectorizers(LLVMModuleRef mod);
/* Reports an LLVM message string (disposed) as a diag of `kind`; returns -1. */
int qd_llvm_message_error(QdCtx *ctx, QdErrKind kind, const char *what, char *msg);

/* The host target: one target machine, created once per JIT. */
typedef struct QdCpuTarget {
    LLVMTargetMachineRef tm; /* host CPU and features, PIC, small code model */
    char *triple;            /* LLVM-owned (LLVMDisposeMessage) */
    char *data_layout;       /* heap copy of the machine's data layout string */
    int opt_level;           /* 0..3 */
    char *identity;          /* heap: triple, CPU, features, opt level and vector library, the
                                part of an offline cache key that names the machine code */
} QdCpuTarget;

/* nvptx_remat.c: after the optimizer, recomputes values made of constants, parameters and
 * special registers in the blocks that use them instead of keeping them live across loops. */
void qd_nvptx_rematerialize(LLVMModuleRef mod);

int qd_cpu_target_init(QdCtx *ctx, QdCpuTarget *target, int opt_level);
void qd_cpu_target_release(QdCpuTarget *target);
/* Runs default<On> on the module, writing the requested dumps before and after. */
int qd_cpu_target_optimize(QdCtx *ctx, QdCpuTarget *target, LLVMModuleRef mod,
                           const QdLlvmOptions *opts);
/* Emits the module as an object file (and the assembly dump when requested). The buffer is
 * the caller's. */
int qd_cpu_target_emit(QdCtx *ctx, QdCpuTarget *target, LLVMModuleRef mod,
                       const QdLlvmOptions *opts, LLVMMemoryBufferRef *object);

#endif /* QD_LLVM_INTERNAL_H */
