/* codegen/llvm/codegen.h -- the LLVM code generator: QIR kernels to host-CPU machine code and
 * to PTX for NVIDIA GPUs (the NVPTX KERNEL ABI section below).
 *
 * Pipeline of one kernel (qd_cpu_jit_compile):
 *   QIR module (the pass pipeline already run; verified QD_VERIFY_CONCRETE)
 *     -> llvm_emit*.c: one LLVM function per task (and per range_for bounds), via LLVM-C
 *     -> target_cpu.c: `default<O3>` for the host CPU, then an ELF object in memory
 *     -> llvm_jit.c: the object is linked into the JIT's ORC LLJIT; task entry points come back.
 * The JIT (QdCpuJit) lives as long as the runtime instance that owns it: one target machine,
 * one LLJIT, the field symbols defined so far. Each compile uses a fresh LLVMContext that is
 * dropped once the object exists, so memory does not grow with the number of kernels beyond
 * the machine code itself.
 *
 * This header describes the contract between the generated code and whoever launches it (the
 * CPU runtime in runtime/cpu, the Python launchers, the tests); abi/abi.h defines its facts
 * (launch context, result slots, ndarray record, NVPTX tail) once, for all of them.
 *
 * ====================================== KERNEL ABI =========================================
 *
 * Launch context. Every generated function takes `struct QdLaunchCtx *ctx` (abi/abi.h). The generated code reads only its first three fields, each a pointer:
 *     offset 0   void *args     packed kernel arguments (below)
 *     offset 8   void *results  kernel_ret slots: result i at byte 8*i, stored with its own type
 *     offset 16  void *tmps     tmp_alloc slots (qd_arg_layout's sibling: QdCompiledKernel)
 * and passes ctx itself to the runtime functions below.
 *
 * Packed arguments (qd_arg_layout): the kernel's parameters in order, each at the next offset
 * aligned to its alignment. Scalars take their size and align to it: u1 is one byte holding 0 or
 * 1, f16 / bf16 two bytes (IEEE half / bfloat16 bits). ndarray<T, n> is the record
 * { u64 data; int32_t shape[n]; }, aligned to 8, its size rounded up to 8 (abi.h:
 * qd_ndarray_record_size). A parameter no instruction reads takes no room: its offset is
 * QD_ARG_UNUSED and launchers skip its argument. The total size is rounded up to 8.
 *
 * Memory. ndarray and field elements are row-major; the linear index is computed in i64:
 * ((i0 * s1 + i1) * s2 + i2) ..., and the element address is data + index * sizeof(T). Fields
 * use their constant declared shape. The base of field @name is the address of the external
 * symbol `qd_field_<name>`; the JIT defines it, once per name, from the address the caller's
 * QdFieldResolver returns (field memory never moves while the JIT lives). u1 occupies one byte
 * (0 or 1) in every kind of memory. tmp_alloc slots are ctx->tmps + offset, each slot aligned to
 * 8; their contents at the first task are undefined (no launch zeroes them).
 *
 * Tasks. Task i of kernel K becomes
 *     void K.t<i>(struct QdLaunchCtx *ctx, int64_t lo, int64_t hi)
 * and a range_for task also gets
 *     void K.t<i>.bounds(struct QdLaunchCtx *ctx, int64_t out[2])
 * (K is the kernel name, with a ".<n>" suffix when the JIT already holds a kernel of that name).
 *   - serial task: K.t<i> runs the body once; lo and hi are ignored (the runtime passes 0, 1).
 *   - range_for task: `bounds` evaluates the prologue (the instructions before the
 *     parallel_for) and writes [begin, end) widened to i64 (by the bound type's signedness).
 *     K.t<i> evaluates the prologue again, for the values the loop body uses, and runs the
 *     iterations [lo, hi), which the runtime takes inside [begin, end). Why this split: the
 *     runtime learns the trip count before it wakes any thread, so a small range runs on the
 *     calling thread alone (no wake-up, no barrier), a large one is cut into one contiguous
 *     chunk per thread (static chunks keep the inner loop vectorizable), and the chunking
 *     policy (static, or dynamic later) stays in the runtime. The prologue runs once per chunk
 *     plus once for the bounds, so it must not write memory other than its own allocas: the
 *     code generator rejects stores, atomics, print, assert and kernel_ret in a prologue, and
 *     a loop body must not write what its prologue reads.
 *   The task boundary is a barrier: a task starts after every iteration of the previous one.
 *
 * Runtime functions the generated code calls (resolved through the QdJitSymbol table given to
 * qd_cpu_jit_new; runtime/cpu provides them):
 *     void qd_rt_print(const char *format, const char *kinds, const uint64_t *values, int32_t n)
 *         print "fmt", args: kinds[k] is 'i' (signed integer, value sign-extended to 64 bits),
 *         'u' (unsigned, zero-extended) or 'f' (float, stored as a double); C printf
 *         conversions, each argument converted to what its conversion asks for.
 *     void qd_rt_assert_fail(struct QdLaunchCtx *ctx, const char *message)
 *         records the first failing assert of a launch (atomically).
 *     __truncsfbf2, __truncdfbf2, __truncdfhf2, __truncsfhf2, __extendhfsf2
 *         the half / bfloat16 conversions LLVM calls when the CPU has no instruction for them.
 * libm functions (tanf, atan2, fmodf, ...) are defined by the JIT itself.
 *
 * Semantics chosen where ops.def leaves room (the CPU and GPU backends must agree):
 *   - integer div, rem, floordiv, floormod by 0 give 0; INT_MIN / -1 gives INT_MIN (wraps) and
 *     its remainder 0: nothing traps;
 *   - shifts: the amount is taken modulo the width of the shifted type (its low log2(width)
 *     bits, as x86 does for 32- and 64-bit shifts), so no amount is undefined;
 *   - float -> integer casts saturate (llvm.fpto[su]i.sat): out of range gives the nearest
 *     bound, NaN gives 0; integer -> u1 casts keep the low bit, like every integer narrowing;
 *   - integer pow: exponentiation by squaring, wrapping; a negative exponent gives 1;
 *   - min / max on floats are minnum / maxnum (a NaN operand loses); comparisons are ordered
 *     except `ne`, which is true when either operand is NaN;
 *   - atomics are monotonic read-modify-writes returning the old value; atomic_mul and the u1
 *     arithmetic ones are compare-and-swap loops;
 *   - f16 / bf16 arithmetic uses LLVM's half / bfloat types (computed in f32, rounded back);
 *     f64 -> bf16 rounds through f32.
 * Fast math (QdLlvmOptions.fast_math) puts reassoc, contract, afn, nsz and arcp on float
 * operations, never nnan or ninf, so NaN and infinity tests keep working.
 *
 * Not supported on the CPU: SIMT instructions (thread_idx, shuffle, block_sync, shared_alloc,
 * ...): compiling a kernel that uses one fails with QD_ERR_SYNTAX "<op> is not supported on the
 * CPU backend".
 *
 * =================================== NVPTX KERNEL ABI ======================================
 *
 * qd_nvptx_compile turns a kernel into one PTX module (target_nvptx.c has the pipeline). The
 * same emitter builds it; what differs from the CPU:
 *
 * Entry points. Task i is the kernel `K_t<i>`, or `K_t<i>_<name>` when the task has a name
 * (loop_config(name=...)), so that profilers show it; K is "qd_" and the kernel name, every
 * character outside [A-Za-z0-9_] replaced by '_' (in the task name too); QdCompiledTask.entry
 * holds the result. Its only parameter is the parameter buffer, by value (`.param .align 8 .b8
 * K_t<i>_param_0[P]`), so a launch is one cuLaunchKernel with kernelParams[0] pointing at the
 * host's copy of the buffer:
 *     [0, args_size)          the packed arguments, laid out as above (qd_arg_layout), with
 *                             ndarray data pointers being device pointers
 *     args_size + 0           u64 results: device buffer of the kernel_ret slots
 *     args_size + 8           u64 tmps: device buffer of the tmp_alloc slots (never zeroed:
 *                             a slot is stored before it is loaded, as an alloca is)
 *     args_size + 16          u64 runtime state: device buffer whose first i32 is the assert
 *                             flag (0: no assert failed), followed from byte 8 by the values
 *                             of the failed assert's message (QD_NVPTX_RUNTIME_STATE_BYTES)
 *   P = args_size + QD_NVPTX_TAIL_BYTES.
 * A serial task runs on one thread of one block. A range_for task evaluates its prologue on
 * every thread and runs a grid-stride loop: iteration begin + j on global thread j (block
 * j / block_dim, thread j % block_dim), then j + grid threads, ...; any grid is correct. The
 * kernel carries `maxntid` = its block_dim (default: QdNvptxOptions.default_block_dim), which
 * the launcher must use as the block size. Bounds whose prologue reads no device memory are
 * also compiled for the host (qd_cpu_jit_compile_bounds) so the launcher can size the grid
 * exactly; tasks with an empty range are then not launched at all.
 *
 * Fields. The base of field @name is loaded from the module global `qd_field_<name>` (8 bytes,
 * .global, externally initialized): the runtime stores the field's device pointer there after
 * loading the module (cuModuleGetGlobal). QdNvptxKernel.fields lists the names the module
 * reads.
 *
 * print -> vprintf. The format is rewritten at compile time so that every integer conversion
 * takes a 64-bit argument (%d -> %lld, %x -> %llx) and every float conversion a double; each
 * value is converted to what its conversion asks for, as the CPU runtime does, so both print
 * the same text. Output appears when the device synchronizes (the launcher synchronizes after
 * a kernel that prints).
 * assert -> when the condition is false, atomically set the assert flag from 0 to id + 1 (the
 * first failure wins and stores its message's values, 64-bit slots as print's; asserts[id] is
 * the message and assert_kinds[id] the kind letters of its values); every task of a kernel with
 * an assert returns at once when the flag is set, so the launch stops after the failing task.
 * The launcher reads and clears the flag after a launch of such a kernel.
 *
 * Math: LLVM intrinsics where NVPTX has instructions (sqrt, fabs, floor, ceil, round, min, max),
 * libdevice (__nv_expf, __nv_sin, ..., linked from libdevice.10.bc) for the rest, f16 / bf16
 * computed in f32. Fast math (the default) means what it means on the CPU (reassoc, contract,
 * afn, nsz, arcp on float ops) plus, as in the reference implementation, single-precision
 * denormals flushed to zero (FTZ: "denormal-fp-math-f32"="preserve-sign" and libdevice's
 * __CUDA_FTZ reflection; not in kernels that use f16 / bf16, whose subnormals it would flush
 * too); division and sqrt stay IEEE-rounded, which the reference relaxes to
 * approximations, so that float floor division gives the same results as on the CPU.
 * SIMT instructions are supported (llvm_emit_simt.c); subgroup operations act on the lanes
 * active at the call (activemask), the whole warp in uniform code.
 */
#ifndef QD_CODEGEN_LLVM_H
#define QD_CODEGEN_LLVM_H

#include "../../abi/abi.h"
#include "../../ir/ir.h"

/* The launch context, result slots, ndarray record and NVPTX tail are defined by abi/abi.h. */

/* Entry point of a task: runs the iterations [lo, hi) (a serial task ignores them). */
typedef void (*QdTaskEntry)(struct QdLaunchCtx *ctx, int64_t lo, int64_t hi);
/* Bounds of a range_for task: out[0] = begin, out[1] = end. */
typedef void (*QdTaskBounds)(struct QdLaunchCtx *ctx, int64_t *out);

/***** llvm_types.c *****/

/* Offsets of the kernel's parameters in the packed argument buffer (offsets: one entry per
 * parameter) and the buffer's total size, per the layout above. `kernel` must be concrete. */
void qd_arg_layout(const QdFunc *kernel, uint32_t *offsets, uint32_t *total_size);

/***** llvm_jit.c *****/

/* Code generation options; qd_llvm_options_default fills the defaults. */
typedef struct QdLlvmOptions {
    int opt_level;  /* 0..3: LLVM's default<On> pipeline and codegen level (default 3) */
    bool fast_math; /* reassoc contract afn nsz arcp on float ops (default true) */
    bool cpu_simt;  /* CPU: emulate SIMT operations (runtime/cpu/simt.c) instead of rejecting
                       them; their range_for tasks get block_dim > 0 (default false) */
    /* Dumps, written to dump_dir (NULL: the working directory) with NNNN a process-wide
     * counter per kind: quadrants_kernel_cpu_llvm_ir_NNNN.ll (before optimization),
     * quadrants_kernel_cpu_llvm_ir_optimized_NNNN.ll, and
     * quadrants_kernel_cpu_llvm_ir_optimized_asm_NNNN.s (native assembly). */
    bool print_kernel_llvm_ir;
    bool print_kernel_llvm_ir_optimized;
    bool print_kernel_asm;
    const char *dump_dir;
} QdLlvmOptions;

void qd_llvm_options_default(QdLlvmOptions *opts);

/* Any function, as the JIT's symbol table stores it (cast to and from the real type). */
typedef void (*QdJitFunction)(void);

/* A name the JIT resolves to a function of this process (runtime functions). */
typedef struct QdJitSymbol {
    const char *name;      /* unmangled symbol name */
    QdJitFunction address; /* the function */
} QdJitSymbol;

/* Returns the base address of field `name` (without '@'), or NULL when the caller has none;
 * called at most once per name and JIT. */
typedef const void *(*QdFieldResolver)(void *user, const char *name);

/* One compiled task. */
typedef struct QdCompiledTask {
    QdTaskEntry run;     /* entry point */
    QdTaskBounds bounds; /* range_for: bounds function; NULL for a serial task */
    uint32_t block_dim;  /* block_dim of the task (0 = default); CPU: nonzero only for tasks
                            run as emulated SIMT blocks (cpu_simt) */
    int64_t grain;       /* range_for: fewest iterations worth a thread of their own,
                            estimated from the loop body's size; 0 for a serial task */
    char entry[160];     /* NVPTX: the task kernel's name; "" on the CPU */
    bool reduces;        /* NVPTX range_for: the kernel combines partial_* accumulators into
                            memory with atomics after its loop (llvm_emit_reduce.c), so its
                            grid is kept small (cuda_launch.c) */
} QdCompiledTask;

/* What a launcher needs to run a compiled kernel. Owned arrays: free with
 * qd_compiled_kernel_release; the machine code itself belongs to the JIT. */
typedef struct QdCompiledKernel {
    QdCompiledTask *tasks;    /* ntasks entries, in launch order */
    uint32_t ntasks;          /* number of tasks */
    uint32_t nparams;         /* number of kernel parameters */
    uint32_t *arg_offsets;    /* nparams offsets in the packed arguments */
    uint32_t args_size;       /* bytes of packed arguments */
    uint32_t tmps_size;       /* bytes of tmp_alloc slots (0 when none) */
    uint32_t nresults;        /* 1 + the highest kernel_ret index, 0 when none */
    QdTypeKind *result_types; /* nresults entries: type of each result (VOID: never set) */
    char symbol[128];         /* K (see the ABI), the prefix of the task symbols */
    double ms_emit;           /* milliseconds spent building LLVM IR */
    double ms_optimize;       /* ... in the LLVM optimizer */
    double ms_codegen;        /* ... emitting the object (and requested dumps) */
    double ms_link;           /* ... linking it into the JIT and looking up the tasks */
} QdCompiledKernel;

void qd_compiled_kernel_release(QdCompiledKernel *kernel);

typedef struct QdCpuJit QdCpuJit;

/* Creates a JIT for the host CPU. `symbols` (nsymbols entries, copied) are the runtime
 * functions of the ABI above. NULL with a diag (QD_ERR_COMPILATION) when LLVM has no target for
 * this machine or the JIT cannot be created. */
QdCpuJit *qd_cpu_jit_new(QdCtx *ctx, const QdLlvmOptions *opts, const QdJitSymbol *symbols,
                         uint32_t nsymbols);
/* Releases the JIT and all code compiled by it. NULL is allowed. */
void qd_cpu_jit_free(QdCpuJit *jit);

/* Compiles kernel `kernel_name` of module m (concrete: passes already run) into the JIT.
 * Fields the kernel references and the JIT does not know yet are resolved through `resolve`.
 * Safe to call from several threads on one JIT (calls are serialized). 0 with *out filled, or
 * -1 with a diag: QD_ERR_SYNTAX for constructs the CPU does not support, QD_ERR_COMPILATION
 * for invalid input or an unresolved field, QD_ERR_INTERNAL when LLVM rejects what we built. */
int qd_cpu_jit_compile(QdCtx *ctx, QdCpuJit *jit, QdModule *m, const char *kernel_name,
                       QdFieldResolver resolve, void *resolve_user, QdCompiledKernel *out);

/* The machine code of one compiled kernel as the offline cache keeps it: a relocatable object
 * whose symbols start with the kernel's `symbol`, and the fields it references. */
typedef struct QdCpuArtifact {
    void *object;        /* the object file (malloc) */
    size_t object_size;  /* its bytes */
    char **fields;       /* names of the fields whose qd_field_<name> it references (malloc) */
    uint32_t nfields;    /* how many */
} QdCpuArtifact;

void qd_cpu_artifact_release(QdCpuArtifact *artifact);

/* The version of the LLVM library the core runs with ("19.1.7"), and the host CPU it generates
 * code for ("znver3"); static strings. */
const char *qd_llvm_version(void);
const char *qd_llvm_host_cpu(void);

/* What identifies the code this JIT generates beyond the QIR: target triple, CPU, features,
 * optimization level, fast math, vector library. Part of every offline cache key. */
const char *qd_cpu_jit_identity(const QdCpuJit *jit);

/* As qd_cpu_jit_compile, with the symbol prefix `symbol` (made unique on this JIT with a
 * ".<n>" suffix if taken) and, when `artifact` is not NULL, a copy of the object and the names
 * of the fields it references, for the offline cache. */
int qd_cpu_jit_compile_artifact(QdCtx *ctx, QdCpuJit *jit, QdModule *m, const char *kernel_name,
                                const char *symbol, QdFieldResolver resolve, void *resolve_user,
                                QdCompiledKernel *out, QdCpuArtifact *artifact);

/* Loads a cached kernel: `kernel` comes filled from the cache (layout, symbol, tasks with
 * block_dim and grain; entry points NULL); its fields are resolved as a compile would, the
 * object is linked unless this JIT already holds `kernel->symbol` (the same code, loaded
 * before), and the task entry points are looked up. 0, or -1 with a diag (the caller then
 * compiles instead). */
int qd_cpu_jit_load(QdCtx *ctx, QdCpuJit *jit, const QdCpuArtifact *artifact,
                    QdFieldResolver resolve, void *resolve_user, bool bounds_only,
                    QdCompiledKernel *kernel);

/* Compiles only what the CUDA launcher runs on the host: for each range_for task whose
 * prologue reads no device memory (only arguments, ndarray shapes and constants), its bounds
 * function; tasks[i].bounds is NULL for the others and `run` is NULL everywhere. The bounds
 * functions take a QdLaunchCtx whose args are the packed arguments. 0, or -1 with a diag. */
int qd_cpu_jit_compile_bounds(QdCtx *ctx, QdCpuJit *jit, QdModule *m, const char *kernel_name,
                              QdCompiledKernel *out);
/* As qd_cpu_jit_compile_bounds, with a symbol prefix and the object kept for the cache (see
 * qd_cpu_jit_compile_artifact; load it back with qd_cpu_jit_load, bounds_only). */
int qd_cpu_jit_compile_bounds_artifact(QdCtx *ctx, QdCpuJit *jit, QdModule *m,
                                       const char *kernel_name, const char *symbol,
                                       QdCompiledKernel *out, QdCpuArtifact *artifact);

/***** target_nvptx.c *****/

/* Options of an NVPTX compile; qd_nvptx_options_default fills the defaults. */
typedef struct QdNvptxOptions {
    QdLlvmOptions llvm;          /* opt level, fast math, dumps: print_kernel_llvm_ir writes
                                    quadrants_kernel_cuda_llvm_ir_NNNN.ll, _optimized the
                                    optimized quadrants_kernel_cuda_llvm_ir_optimized_NNNN.ll,
                                    print_kernel_asm the PTX quadrants_kernel_nvptx_NNNN.ptx */
    int sm;                      /* 10 * major + minor of the device (default 90) */
    uint32_t default_block_dim;  /* threads per block of range_for tasks without one (128) */
    const char *const *libdevice_paths; /* candidate paths of libdevice.10.bc, in order */
    uint32_t nlibdevice_paths;   /* how many */
} QdNvptxOptions;

void qd_nvptx_options_default(QdNvptxOptions *opts);

/* A kernel compiled to PTX. Release with qd_nvptx_kernel_release. */
typedef struct QdNvptxKernel {
    QdCompiledKernel layout; /* argument layout, tmps, results, symbol (K above); tasks hold
                                block_dim (resolved: the launch's block size) and grain (1 for
                                a range_for task, 0 for a serial one), nothing else */
    char *ptx;               /* the PTX text, NUL-terminated (malloc) */
    size_t ptx_size;         /* bytes of ptx including the NUL */
    char **fields;           /* names of the fields whose qd_field_<name> the module reads */
    uint32_t nfields;        /* how many */
    char **asserts;          /* message of assert id i (a printf format if it has values) */
    char **assert_kinds;     /* kinds of its values ('i', 'u', 'f'; "" when none) */
    uint32_t nasserts;       /* how many */
    bool has_print;          /* the kernel prints (the launcher synchronizes after it) */
    int sm;                  /* the sm_XY the PTX targets */
} QdNvptxKernel;

void qd_nvptx_kernel_release(QdNvptxKernel *kernel);

/* The sm that code for a device of compute capability `sm` (10 * major + minor) targets: the
 * largest one LLVM 19 knows that is not above it (sm_90 for anything newer). 0 when the device
 * is older than every known one. */
int qd_nvptx_target_sm(int sm);

/* Compiles kernel `kernel_name` of m (concrete) to PTX. 0 with *out filled, or -1 with a diag:
 * QD_ERR_COMPILATION for invalid input or a missing libdevice (naming where it looked),
 * QD_ERR_INTERNAL when LLVM rejects what we built. Thread-safe (compiles are serialized). */
int qd_nvptx_compile(QdCtx *ctx, QdModule *m, const char *kernel_name, const QdNvptxOptions *opts,
                     QdNvptxKernel *out);

#endif /* QD_CODEGEN_LLVM_H */
