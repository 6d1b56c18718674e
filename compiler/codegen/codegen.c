/* codegen.c: the kernel ABI, the two emissions of a kernel, the LLVM driver.
 *
 * Expects: verified IR (compiler/ir/verify.c), every shape static.
 * Guarantees: one kernel per IrFunc, with the ABI of codegen.h, its shared
 * area placed and sized (cg_smem.c); then LLVM's optimization and NVPTX's
 * PTX (or the LLVM IR). The order the back end's steps run in is emit_func's; cg.h
 * says which file does what. */
#include "target.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- line information (-lineinfo) ----
 * What nvcc -lineinfo gives: a file for the .ph source, a subprogram per
 * kernel, and on each instruction the line and column of the IR op it
 * lowers (cg_locate, once per op). The NVPTX back end writes them as .file
 * and .loc directives, which ptxas keeps for compute-sanitizer and Nsight
 * Compute to map SASS to .ph lines. The compile unit's emission kind is
 * LLVM's DebugDirectivesOnly (3; the C API names no such value): with
 * LineTablesOnly the back end also writes `.target sm_90, debug` and DWARF
 * sections, and ptxas then allocates registers differently (spills where
 * the plain PTX has none); with directives only, ptxas -v reports the
 * same registers, spills and shared memory as without line information.
 * Without -lineinfo none of this runs and the PTX does not change. */
enum { DEBUG_DIRECTIVES_ONLY = 3 };

static void begin_line_info(Cg *c, const CodegenOptions *o)
{
    if (!o || !o->lineinfo) return;
    const char *path = o->source && *o->source ? o->source : "<string>";
    char cwd[4096] = "";
    /* a relative path is read from the folder phc ran in, as DW_AT_comp_dir
     * says; a name such as <stdin> or <string> names no file */
    if (path[0] != '/' && path[0] != '<' && !getcwd(cwd, sizeof cwd)) cwd[0] = 0;
    c->di = LLVMCreateDIBuilder(c->mod);
    c->di_file = LLVMDIBuilderCreateFile(c->di, path, strlen(path), cwd, strlen(cwd));
    static const char producer[] = "phc";
    LLVMDIBuilderCreateCompileUnit(c->di, LLVMDWARFSourceLanguagePython, c->di_file, producer, strlen(producer),
                                   o->opt_level != 0, "", 0, 0, "", 0, (LLVMDWARFEmissionKind)DEBUG_DIRECTIVES_ONLY, 0, 0, 0,
                                   "", 0, "", 0);
    static const char version[] = "Debug Info Version";
    LLVMAddModuleFlag(c->mod, LLVMModuleFlagBehaviorWarning, version, strlen(version),
                      LLVMValueAsMetadata(LLVMConstInt(c->ti32, LLVMDebugMetadataVersion(), 0)));
}

/* The kernel's subprogram: its name, the entry's as linkage name, the line of its def. */
static void describe_kernel(Cg *c, const IrFunc *f)
{
    if (!c->di) return;
    unsigned line = f->loc.line > 0 ? (unsigned)f->loc.line : 0;
    LLVMMetadataRef type = LLVMDIBuilderCreateSubroutineType(c->di, c->di_file, NULL, 0, LLVMDIFlagZero);
    c->di_kernel = LLVMDIBuilderCreateFunction(c->di, c->di_file, f->kernel, strlen(f->kernel), f->name, strlen(f->name),
                                               c->di_file, line, type, 0, 1, line, LLVMDIFlagZero, 0);
    LLVMSetSubprogram(c->fn, c->di_kernel);
}

/* What the builder makes from here on comes from op's line: ops that
 * passes made without one (async's ring arithmetic) take their enclosing
 * op's, and the kernel's own code (thread indices) its def line. */
void cg_locate(Cg *c, const IrOp *op, const IrOp *parent)
{
    if (!c->di || !c->di_kernel) return;
    Loc at = op && op->loc.line > 0 ? op->loc : parent && parent->loc.line > 0 ? parent->loc : c->f->loc;
    LLVMMetadataRef loc = LLVMDIBuilderCreateDebugLocation(c->ctx, at.line > 0 ? (unsigned)at.line : 0,
                                                           at.col > 0 ? (unsigned)at.col : 0, c->di_kernel, NULL);
    LLVMSetCurrentDebugLocation2(c->b, loc);
}

static void end_kernel_line_info(Cg *c)
{
    if (!c->di || !c->di_kernel) return;
    LLVMSetCurrentDebugLocation2(c->b, NULL);
    LLVMDIBuilderFinalizeSubprogram(c->di, c->di_kernel);
}

static void end_line_info(Cg *c)
{
    if (!c->di) return;
    LLVMDIBuilderFinalize(c->di);
    LLVMDisposeDIBuilder(c->di);
    c->di = NULL;
}

/* ---- functions and the module ---- */

/* The LLVM type of one entry parameter of the kernel ABI (ir/abi.h). */
static LLVMTypeRef abi_param_ty(Cg *c, const IrFunc *f, IrAbiParam a)
{
    switch (a.slot) {
    case IR_ABI_TENSOR_ADDRESS: return c->tptr1;
    case IR_ABI_SCALAR: case IR_ABI_SCALAR64: return dtype_ty(c, f->params[a.param].dt);
    default: return c->ti64;   /* dims and strides */
    }
}

/* Whether dim `axis` of tensor p is known when f is compiled, and its
 * value: a literal, or a dim named like one of f's meta-parameters (a
 * specialized dim, LANGUAGE.md: f is launched only where the dim equals
 * the meta-parameter's value; runtime/args.c checks both before every
 * launch). The kernel then multiplies by a constant and drops the bounds
 * tests that the window's own extent answers (a column window [0, D) of a
 * D-column tensor); the dim stays a kernel parameter (the ABI does not
 * move). On by default; PHOBOS_SPECIALIZED_DIMS=0 turns it off (every dim
 * read from the parameters). */
static bool known_dim(const IrFunc *f, const IrParam *p, int axis, int64_t *value)
{
    if (!env_switch("PHOBOS_SPECIALIZED_DIMS", true) || axis >= p->rank) return false;
    if (!p->dim_name[axis]) return *value = p->dim_value[axis], true;
    for (int m = 0; m < f->nmeta; m++)
        if (!strcmp(f->meta[m].name, p->dim_name[axis])) return *value = f->meta[m].value, true;
    return false;
}

int copy_descriptor(Cg *c, CodegenCopyDesc d, bool add)
{
    for (int j = 0; j < c->ndescs; j++)
        if (!memcmp(&c->descs[j], &d, sizeof d)) return j;
    if (!add || c->ndescs == CODEGEN_MAX_COPY_DESCS) return -1;
    c->descs[c->ndescs] = d;
    return c->ndescs++;
}

/* The copy descriptors' parameters after the ABI's np (codegen.h): each
 * map passed by value, 128 bytes aligned to 64, then the flags; and the
 * constant that lists them for the launch. */
static void declare_copy_descriptors(Cg *c, int np)
{
    int nd = c->ndescs;
    if (!nd) return;
    unsigned byval = LLVMGetEnumAttributeKindForName("byval", 5), align = LLVMGetEnumAttributeKindForName("align", 5);
    LLVMTypeRef map = LLVMArrayType2(LLVMInt8TypeInContext(c->ctx), 128);
    enum { W = CODEGEN_COPY_DESC_WORDS };
    LLVMValueRef words[1 + W * CODEGEN_MAX_COPY_DESCS];
    words[0] = i32c(c, nd);
    for (int j = 0; j < nd; j++) {
        unsigned at = (unsigned)(np + j + 1);   /* attribute indices count parameters from 1 */
        LLVMAddAttributeAtIndex(c->fn, at, LLVMCreateTypeAttribute(c->ctx, byval, map));
        LLVMAddAttributeAtIndex(c->fn, at, LLVMCreateEnumAttribute(c->ctx, align, 64));
        c->desc_map[j] = LLVMGetParam(c->fn, (unsigned)(np + j));
        c->desc_ok[j] = LLVMGetParam(c->fn, (unsigned)(np + nd + j));
        const CodegenCopyDesc *d = &c->descs[j];
        words[1 + W * j] = i32c(c, d->param), words[2 + W * j] = i32c(c, d->rows), words[3 + W * j] = i32c(c, d->cols);
        words[4 + W * j] = i32c(c, d->swizzle), words[5 + W * j] = i32c(c, d->elem_bytes);
    }
    char name[300];
    snprintf(name, sizeof name, "%s%s", c->f->name, CODEGEN_COPY_DESCS_SUFFIX);
    LLVMTypeRef at = LLVMArrayType2(c->ti32, (uint64_t)(1 + W * nd));
    if (LLVMGetNamedGlobal(c->mod, name)) return;   /* the second emission's */
    LLVMValueRef g = LLVMAddGlobalInAddressSpace(c->mod, at, name, 4);
    LLVMSetInitializer(g, LLVMConstArray2(c->ti32, words, (uint64_t)(1 + W * nd)));
    LLVMSetGlobalConstant(g, 1);
    LLVMSetAlignment(g, 4);
}

/* The kernel's LLVM function and its parameters, by the kernel ABI (ir/abi.h). */
static void declare_kernel(Cg *c, const IrFunc *f)
{
    c->f = f;
    c->T = f->threads;
    c->failed = false;
    int np = ir_abi_params(f->params, f->nparams, NULL);
    IrAbiParam *abi = xcalloc((size_t)np + 1, sizeof *abi);
    ir_abi_params(f->params, f->nparams, abi);
    int nd = c->ndescs;
    LLVMTypeRef *pts = xcalloc((size_t)(np + 2 * nd) + 1, sizeof *pts);
    for (int k = 0; k < np; k++) pts[k] = abi_param_ty(c, f, abi[k]);
    for (int j = 0; j < nd; j++) pts[np + j] = LLVMPointerTypeInContext(c->ctx, 0), pts[np + nd + j] = c->ti32;
    c->fn = LLVMAddFunction(c->mod, f->name, LLVMFunctionType(c->tvoid, pts, (unsigned)(np + 2 * nd), 0));
    free(pts);
    declare_copy_descriptors(c, np);
    LLVMSetFunctionCallConv(c->fn, 71 /* PTX_Kernel */);
    size_t np1 = (size_t)f->nparams + 1;
    c->tensor_ptr = xcalloc(np1, sizeof(LLVMValueRef));
    c->tensor_dim0 = xcalloc(np1, sizeof(LLVMValueRef));
    c->tensor_dim1 = xcalloc(np1, sizeof(LLVMValueRef));
    c->scalar = xcalloc(np1, sizeof(LLVMValueRef));
    c->tensor_dims = xcalloc(np1, sizeof *c->tensor_dims);
    c->tensor_strides = xcalloc(np1, sizeof *c->tensor_strides);
    c->stored = ir_stored_params(f);
    for (int k = 0; k < np; k++) {
        int i = abi[k].param;
        LLVMValueRef v = LLVMGetParam(c->fn, (unsigned)k);
        switch (abi[k].slot) {
        case IR_ABI_TENSOR_ADDRESS: c->tensor_ptr[i] = v; break;
        case IR_ABI_TENSOR_DIM0: c->tensor_dim0[i] = v; break;
        case IR_ABI_TENSOR_DIM1: c->tensor_dim1[i] = v; break;
        case IR_ABI_SCALAR: case IR_ABI_SCALAR64: c->scalar[i] = v; break;
        default: break;
        }
        int axis = ir_abi_dim_axis(abi[k].slot);
        int64_t known;
        if (axis >= 0 && known_dim(f, &f->params[i], axis, &known)) {
            v = LLVMConstInt(c->ti64, (unsigned long long)known, 0);
            if (abi[k].slot == IR_ABI_TENSOR_DIM0) c->tensor_dim0[i] = v;
            if (abi[k].slot == IR_ABI_TENSOR_DIM1) c->tensor_dim1[i] = v;
        }
        if (axis >= 0) c->tensor_dims[i][axis] = v;
        if (ir_abi_stride_axis(abi[k].slot) >= 0) c->tensor_strides[i][ir_abi_stride_axis(abi[k].slot)] = v;
        if (abi[k].slot == IR_ABI_TENSOR_ADDRESS || ir_abi_is_scalar(abi[k].slot))
            LLVMSetValueName2(v, f->params[i].name, strlen(f->params[i].name));
    }
    free(abi);
}

/* The loop-invariant tensor-core operands' regions of the area. */
static void plan_operand_regions(Cg *c, const IrFunc *f)
{
    int *def_depth = xcalloc((size_t)f->nvalues + 1, sizeof *def_depth);
    plan_regions(c, f->body, 0, def_depth);
    free(def_depth);
}

static bool has_rings(const IrBlock *b)
{
    for (int i = 0; i < b->nops; i++)
        if (b->ops[i]->kind == OP_COPY_ASYNC || (b->ops[i]->body && has_rings(b->ops[i]->body)) ||
            (b->ops[i]->els && has_rings(b->ops[i]->els)))
            return true;
    return false;
}

/* @ph.warp_specialize: the threads past the tile code's are the
 * producer's, and the first of them runs the producer's code
 * (IrFunc.producer, a target pass's), the others nothing; the tile code's
 * threads run the body. Both are emitted from the same values: the
 * producer's are forgotten before the body is emitted. The producer
 * records no shared-memory access (it makes none the plan orders: its
 * copies' slots are the copy engine's to order) and waits at no barrier.
 * The rings keep their bytes for the whole kernel (an access of each at
 * the body's start), as the mbarriers do (emit_body): the producer may
 * refill a slot while the tile code runs an epilogue in scratch that
 * could otherwise share them. */
static void emit_roles(Cg *c, const IrFunc *f)
{
    LLVMBuilderRef B = c->b;
    LLVMBasicBlockRef prod = new_bb(c, "producer"), cons = new_bb(c, "consumers");
    LLVMValueRef elected = LLVMBuildICmp(B, LLVMIntEQ, c->tid, i32c(c, c->T), "");
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntULT, c->tid, i32c(c, c->T), ""), cons, prod);
    LLVMPositionBuilderAtEnd(B, prod);
    if (f->producer) {
        if (c->target->isa->role_begin) c->target->isa->role_begin(c, true);
        LLVMBasicBlockRef run = new_bb(c, "produce");
        LLVMBuildCondBr(B, elected, run, c->exit_bb);
        LLVMPositionBuilderAtEnd(B, run);
        c->role = CG_PRODUCER;
        emit_block(c, f->producer, NULL, NULL);
        LLVMBuildUnreachable(B);
        for (int i = 0; i <= f->nvalues; i++) {
            free(c->vals[i].v);
            c->vals[i] = (Slots){0};
        }
        cache_truncate(c, 0);
    } else {
        LLVMBuildBr(B, c->exit_bb);
    }
    LLVMPositionBuilderAtEnd(B, cons);
    c->role = CG_CONSUMERS;
    if (f->producer && c->target->isa->role_begin) c->target->isa->role_begin(c, false);
    for (int r = 0; f->producer && r < CG_MAX_RINGS; r++)
        if (c->ring_buf[r] >= 0) smem_access(c, c->ring_buf[r], false);
    emit_block(c, f->body, NULL, NULL);
    LLVMBuildUnreachable(B);
}

const char *const codegen_switches[] = {
    "PHOBOS_DOT_OVERLAP",   /* wgmma_overlap.c */
    "PHOBOS_RESCALE_SKIP",  /* cg_values.c */
    "PHOBOS_BULK_ADD",      /* cg_store.c */
    "PHOBOS_ADD_INSIDE",    /* cg_store.c */
    "PHOBOS_VECTOR_TRANSPOSE", /* cg_control.c */
    "PHOBOS_ADD_EXCHANGE",  /* cg_store.c */
    "PHOBOS_MASK_SPLIT",    /* passes.c, masks.c */
    "PHOBOS_OVERLAP_WIDE",  /* wgmma_overlap.c */
    "PHOBOS_VECTOR_RING",   /* async.c */
    "PHOBOS_SCRATCH_TURNS", /* dot_wgmma.c */
    "PHOBOS_HOLD_WAIT",     /* dot_wgmma.c */
    "PHOBOS_FEWER_FENCES",  /* dot_wgmma.c */
    "PHOBOS_SHARED_DIVISOR", /* cg_values.c */
    "PHOBOS_SPECIALIZED_DIMS", /* codegen.c */
    "PHOBOS_WINDOW_DIVISIONS", /* irutil.c: the async pass */
    "PHOBOS_PRODUCER_REGS", /* isa.c */
    "PHOBOS_PRODUCER_ADDS", /* warp_specialize.c, cg_store.c */
    "PHOBOS_TENSOR_ADDS",   /* cg_store.c */
    "PHOBOS_SHORT_DESCRIPTORS", /* dot_wgmma.c */
    "PHOBOS_PRODUCER_FENCE", /* nvidia/targets.c */
    "PHOBOS_COPY_ONCE",     /* fold.c, async.c */
    NULL,
};

/* The body, op by op in program order, after the thread's index. */
static void emit_body(Cg *c, const IrFunc *f)
{
    LLVMBasicBlockRef entry = new_bb(c, "entry");
    cg_locate(c, NULL, NULL);
    c->exit_bb = new_bb(c, "exit");
    c->bulk_adds = false;
    c->nloop_adds = 0;
    LLVMPositionBuilderAtEnd(c->b, c->exit_bb);
    LLVMBuildRetVoid(c->b);
    LLVMPositionBuilderAtEnd(c->b, entry);
    c->tid = c->target->isa->thread_index(c);
    c->warp = udiv(c, c->tid, 32);
    c->lane = urem(c, c->tid, 32);
    c->vals = xcalloc((size_t)f->nvalues + 1, sizeof *c->vals);
    c->issued_scratch = xmalloc(sizeof *c->issued_scratch * 2 * ((size_t)f->nvalues + 1));
    for (int i = 0; i < 2 * (f->nvalues + 1); i++) c->issued_scratch[i] = -1;
    c->role = CG_ALL;
    if (c->target->copy->begin && has_rings(f->body)) c->target->copy->begin(c);
    if (f->producer_threads) {
        producer_adds_begin(c);
        emit_roles(c, f);
    } else {
        emit_block(c, f->body, NULL, NULL);
        /* the body ends with a return, so the insert point is a dead block */
        LLVMBuildUnreachable(c->b);
    }
    /* The mbarriers live as long as the block: PTX lets their bytes serve another buffer only
     * after mbarrier.inval, and a warp-specialized producer may still wait on them while the
     * consumers run the code after their loops. This access, after everything, is their last. */
    if (c->copy_buf >= 0) smem_access(c, c->copy_buf, false);
    producer_adds_end(c);
    c->role = CG_ALL;
    if (c->bulk_adds) {   /* the adds land before the block's end */
        LLVMPositionBuilderBefore(c->b, LLVMGetBasicBlockTerminator(c->exit_bb));
        c->target->bulk_add->drain(c);
    }
}

/* Forgets one emission's values, conversions, regions and parameters. */
static void free_emission_state(Cg *c, const IrFunc *f)
{
    free(c->regions.data);
    c->regions.data = NULL;
    c->regions.cap = c->regions.len = 0;

    cache_truncate(c, 0);
    free(c->cache.data);
    c->cache.data = NULL;
    c->cache.cap = 0;
    for (int i = 0; i <= f->nvalues; i++) free(c->vals[i].v);
    free(c->vals);
    free(c->ring_of);
    free(c->issued_scratch);
    free(c->tensor_ptr); free(c->tensor_dim0); free(c->tensor_dim1); free(c->tensor_dims); free(c->tensor_strides); free(c->scalar); free(c->stored);
}

/* One emission of the kernel: its declaration, its rings and regions, its
 * body; replay: the second, with the shared-memory plan made. */
static void emit_kernel(Cg *c, const IrFunc *f, bool replay)
{
    c->ndescs = 0;
    c->copy_buf = -1;
    if (c->target->copy->plan) c->target->copy->plan(c, f);
    producer_adds_plan(c, f);
    declare_kernel(c, f);
    if (replay) describe_kernel(c, f);
    else c->di_kernel = NULL;   /* the first emission is discarded: no line information */
    smem_begin(c, replay);
    plan_rings(c, f);                       /* ring slots */
    plan_operand_regions(c, f);
    emit_body(c, f);
}

/* The layout of a dot's result: its engine's (the target's first that accepts it). */
static const Layout *engine_result_layout(LayoutTable *t, const IrFunc *f, const IrOp *dot, const void *target)
{
    const DotEngine *e = dot_engine_for(target, f, dot);
    return e && e->result_layout ? e->result_layout(t, f, dot) : NULL;
}

/* One kernel: the back end's steps, in the order they run. Which shared
 * buffers the body needs is known only once it is emitted (conversions
 * are decided as values are asked for), and their offsets are wanted as
 * it is emitted: so a first emission records them and is discarded, the
 * plan places them, and the second emission is the kernel. */
LayoutDotPolicy codegen_dot_policy(const Target *t) { return (LayoutDotPolicy){engine_result_layout, t, t->operand_layout}; }

static void emit_func(Cg *c, const IrFunc *f)
{
    c->f = f;
    c->layouts = layout_table_new();
    LayoutDotPolicy dots = codegen_dot_policy(c->target);
    c->plan = layout_plan(f, c->layouts, &dots);   /* where each tile value lives */
    emit_kernel(c, f, false);
    LLVMDeleteFunction(c->fn);
    smem_discard(c);
    free_emission_state(c, f);
    if (!c->failed && smem_place(c)) {
        emit_kernel(c, f, true);
        smem_place_area(c);                 /* now that the plan has sized it */
        c->target->isa->annotate_kernel(c);   /* what the assembler is told about the kernel emit_func keeps */
        end_kernel_line_info(c);
        free_emission_state(c, f);
    }
    smem_plan_free(&c->smem_plan);
    layout_plan_free(&c->plan);
    layout_table_free(c->layouts);
}

/* ---- the LLVM pipelines ----
 * What runs after lowering, by opt level (docs/performance.md, "Compile
 * time", has the figures that chose them):
 *   CODEGEN_OPT_NONE     nothing; the back end at -O0 (readable output)
 *   CODEGEN_OPT_DEFAULT  DEFAULT_PASSES, then the back end at its default
 *                        level: EarlyCSE where -O3 runs GVN, twice, over
 *                        the IR the back end prepares
 *   CODEGEN_OPT_FULL     LLVM's default<O3> and the back end at -O3 (phc -O3)
 * The SLP vectorizer is off in default<O3>: it changed the PTX of none of
 * the repository's kernels and took from an eighth to a third of a
 * config's compile time (LLVM reads that switch from its command line
 * only). */

/* default<O3>'s passes, in its order, run as it runs them within the
 * inliner's walk of the call graph (the inliner takes the code generator's
 * helpers, fmod's, into the kernels), less each one without which the PTX
 * of every kernel of bench/ and examples/ stays what default<O3> makes of
 * it, byte for byte, and no other kernel of the repository gets worse:
 * those for calls and attributes, scalar replacement, loop vectorizing and
 * idiom recognition, jump threading, dead stores, and two of its eight
 * InstCombines. GVN numbers values without MemoryDependence: the loads it
 * would remove change no kernel, and finding them took a fifth of
 * default<O3>'s time on attention. The list takes under half of
 * default<O3>'s time. */
static const char DEFAULT_PASSES[] =
    "function(nvvm-intr-range,early-cse),ipsccp,cgscc(devirt<4>(inline,"
    "function(instcombine<no-verify-fixpoint>,simplifycfg<switch-range-to-icmp>,early-cse,"
    "speculative-execution<only-if-divergent-target>,instcombine<no-verify-fixpoint>,reassociate,"
    "loop-mssa(loop-instsimplify,loop-simplifycfg,licm<no-allowspeculation>,loop-rotate,licm,simple-loop-unswitch<nontrivial>),"
    "simplifycfg<switch-range-to-icmp>,instcombine<no-verify-fixpoint>,loop(indvars,loop-unroll-full),"
    "vector-combine,gvn<no-memdep>,instcombine<no-verify-fixpoint>,correlated-propagation,"
    "simplifycfg<switch-range-to-icmp;hoist-common-insts;sink-common-insts>,instcombine<no-verify-fixpoint>,"
    "loop-unroll<O3>,infer-alignment,instcombine<no-verify-fixpoint>,simplifycfg<switch-range-to-icmp;speculate-unpredictables>)))";

typedef struct { const char *passes; LLVMCodeGenOptLevel backend; } Pipeline;

static Pipeline pipeline_of(int opt_level)
{
    switch (opt_level) {
    case CODEGEN_OPT_NONE: return (Pipeline){NULL, LLVMCodeGenLevelNone};
    case CODEGEN_OPT_FULL: return (Pipeline){"default<O3>", LLVMCodeGenLevelAggressive};
    default: return (Pipeline){DEFAULT_PASSES, LLVMCodeGenLevelDefault};
    }
}

static void init_llvm(void)
{
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    /* this LLVM is the library's own (linked in, its symbols hidden): its
     * options are nobody else's. The back end's CodeGenPrepare sweeps a
     * function again, whole, after any sweep that changed it, until one
     * changes nothing: some thirty sweeps of a large attention config, a
     * quarter of the back end's time. In its mode for huge functions (any
     * function here) a sweep after the first visits only the blocks that
     * changed; the PTX of every kernel of bench/ and examples/ is the same. */
    const char *const args[] = {"phobos", "-vectorize-slp=false", "-cgpp-huge-func=0"};
    LLVMParseCommandLineOptions(3, args, "");
}

/* Once per process, though threads of a host may compile at once. */
static void init_targets(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init_llvm);
}

/* The calling thread's CPU time: what a step cost, whatever else runs. */
static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* An empty module for NVPTX, its types made once. */
static void begin_module(Cg *c)
{
    c->ctx = LLVMContextCreate();
    c->mod = LLVMModuleCreateWithNameInContext("phobos", c->ctx);
    LLVMSetTarget(c->mod, CODEGEN_TRIPLE);
    LLVMSetDataLayout(c->mod, "e-i64:64-i128:128-v16:16-v32:32-n16:32:64");
    c->b = LLVMCreateBuilderInContext(c->ctx);
    c->tvoid = LLVMVoidTypeInContext(c->ctx);
    c->ti1 = LLVMInt1TypeInContext(c->ctx);
    c->ti8 = LLVMInt8TypeInContext(c->ctx);
    c->ti16 = LLVMInt16TypeInContext(c->ctx);
    c->ti32 = LLVMInt32TypeInContext(c->ctx);
    c->ti64 = LLVMInt64TypeInContext(c->ctx);
    c->tf16 = LLVMHalfTypeInContext(c->ctx);
    c->tbf16 = LLVMBFloatTypeInContext(c->ctx);
    c->tf32 = LLVMFloatTypeInContext(c->ctx);
    c->tf64 = LLVMDoubleTypeInContext(c->ctx);
    c->tptr1 = LLVMPointerTypeInContext(c->ctx, 1);
    c->tptr3 = LLVMPointerTypeInContext(c->ctx, 3);
    c->tv2f16 = LLVMVectorType(c->tf16, 2);
}

static void end_module(Cg *c)
{
    LLVMDisposeBuilder(c->b);
    LLVMDisposeModule(c->mod);
    LLVMContextDispose(c->ctx);
}

/* Every function of m into the module, which LLVM's verifier then checks. 0 or 1. */
/* f through the target's passes, when it has any: on a copy, which they
 * change; f stays as the caller gave it. */
static void emit_target_func(Cg *c, const IrFunc *f)
{
    if (!c->target->passes || !c->target->passes[0].name) {
        emit_func(c, f);
        return;
    }
    IrFunc *g = ir_func_clone(f);
    for (const TargetPass *p = c->target->passes; p->name; p++) p->run(g);
    char msg[300];
    if (ir_verify(g, msg, sizeof msg)) {
        snprintf(c->err, c->errlen, "internal error: %s's passes leave invalid IR: %s", c->target->name, msg);
        c->failed = true;
    } else {
        emit_func(c, g);
    }
    ir_func_free(g);
}

static int lower_module(Cg *c, const IrModule *m, const CodegenOptions *o)
{
    begin_line_info(c, o);
    for (int i = 0; i < m->nfuncs && !c->failed; i++) {
        /* sema refuses such kernels; IR from elsewhere is checked here */
        int64_t bytes = ir_param_bytes(m->funcs[i]->params, m->funcs[i]->nparams);
        if (bytes > IR_MAX_PARAM_BYTES) {
            snprintf(c->err, c->errlen, "%s: its parameters take %lld bytes; a GPU kernel's parameters are limited to %d bytes",
                     m->funcs[i]->name, (long long)bytes, IR_MAX_PARAM_BYTES);
            c->failed = true;
            break;
        }
        emit_target_func(c, m->funcs[i]);
    }
    end_line_info(c);
    if (c->failed) return 1;
    char *msg = NULL;
    int status = 0;
    if (LLVMVerifyModule(c->mod, LLVMReturnStatusAction, &msg)) {
        snprintf(c->err, c->errlen, "internal error: LLVM rejects the lowered module: %.400s", msg ? msg : "");
        status = 1;
    }
    LLVMDisposeMessage(msg);
    return status;
}

/* The NVPTX target machine for t at the pipeline's back-end level, or NULL with err set. */
static LLVMTargetMachineRef target_machine(const Target *t, Pipeline p, char *err, size_t errlen)
{
    LLVMTargetRef target = NULL;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(CODEGEN_TRIPLE, &target, &msg)) {
        snprintf(err, errlen, "no NVPTX target in this LLVM: %s", msg ? msg : "");
        LLVMDisposeMessage(msg);
        return NULL;
    }
    return LLVMCreateTargetMachine(target, CODEGEN_TRIPLE, t->llvm_cpu, t->llvm_features, p.backend, LLVMRelocDefault,
                                   LLVMCodeModelDefault);
}

static int optimize(Cg *c, LLVMTargetMachineRef tm, Pipeline p)
{
    if (!p.passes) return 0;
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMErrorRef e = LLVMRunPasses(c->mod, p.passes, tm, po);
    LLVMDisposePassBuilderOptions(po);
    if (!e) return 0;
    char *em = LLVMGetErrorMessage(e);
    snprintf(c->err, c->errlen, "LLVM optimization failed: %s", em);
    LLVMDisposeErrorMessage(em);
    return 1;
}

/* The module as text: LLVM IR, or PTX from the back end (instruction
 * selection, the PTX printer) with the target's fix-ups. */
static int emit_text(Cg *c, LLVMTargetMachineRef tm, CgEmit what, char **out)
{
    if (what == CG_EMIT_LLVM) {
        char *s = LLVMPrintModuleToString(c->mod);
        *out = xstrdup(s);
        LLVMDisposeMessage(s);
        return 0;
    }
    LLVMMemoryBufferRef buf = NULL;
    char *msg = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, c->mod, LLVMAssemblyFile, &msg, &buf)) {
        snprintf(c->err, c->errlen, "PTX emission failed: %s", msg ? msg : "");
        LLVMDisposeMessage(msg);
        return 1;
    }
    char *ptx = xstrndup(LLVMGetBufferStart(buf), LLVMGetBufferSize(buf));
    LLVMDisposeMemoryBuffer(buf);
    if (!c->target->fix_ptx) {
        *out = ptx;
        return 0;
    }
    *out = c->target->fix_ptx(ptx);
    free(ptx);
    if (*out) return 0;
    snprintf(c->err, c->errlen, "out of memory rewriting the PTX");
    return 1;
}

int codegen_emit(const IrModule *m, const CodegenOptions *o, CgEmit what, char **out, char *err, size_t errlen)
{
    Pipeline p = pipeline_of(o ? o->opt_level : CODEGEN_OPT_DEFAULT);
    CodegenTimes *times = o ? o->times : NULL;
    *out = NULL;
    if (!o || !o->target) {
        snprintf(err, errlen, "internal error: no target to generate code for");
        return 1;
    }
    init_targets();
    Cg c = {0};
    c.target = o->target;
    c.err = err;
    c.errlen = errlen;
    double t0 = cpu_ms();
    begin_module(&c);
    int status = lower_module(&c, m, o);
    double t1 = cpu_ms();
    LLVMTargetMachineRef tm = status ? NULL : target_machine(c.target, p, err, errlen);
    if (!status && !tm) status = 1;
    if (!status) status = optimize(&c, tm, p);
    if (!status && c.target->fix_llvm) c.target->fix_llvm(c.mod);
    double t2 = cpu_ms();
    if (!status) status = emit_text(&c, tm, what, out);
    if (tm) LLVMDisposeTargetMachine(tm);
    end_module(&c);
    if (times) {
        times->lower_ms += t1 - t0;
        times->optimize_ms += t2 - t1;
        times->backend_ms += cpu_ms() - t2;
    }
    return status;
}
