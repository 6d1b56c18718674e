/* cpusim_module.c: loading: the code generator's LLVM IR made runnable on
 * the host (cpusim.c says how): each intrinsic declaration replaced by a
 * wrapper that calls the executor, each kernel given a trampoline, the
 * module retargeted, JIT-compiled with MCJIT, and its kernels and shared
 * areas found. */
#define _GNU_SOURCE
#include "cpusim_impl.h"
#include "codegen/codegen.h"
#include "driver/targets.h"
#include "base/util.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- loading: the GPU module made runnable on the host ---- */

int intrinsic_id(const char *name)
{
    for (int i = 0; i < IN_COUNT; i++)
        if (!strcmp(intrinsic_names[i], name)) return i;
    return -1;
}

/* 32-bit floats and pairs of 16-bit floats are carried as their bits. */
static bool is_word_type(LLVMTypeRef t)
{
    LLVMTypeKind k = LLVMGetTypeKind(t);
    if (k == LLVMFloatTypeKind) return true;
    if (k != LLVMVectorTypeKind || LLVMGetVectorSize(t) != 2) return false;
    LLVMTypeKind e = LLVMGetTypeKind(LLVMGetElementType(t));
    return e == LLVMHalfTypeKind || e == LLVMBFloatTypeKind;
}

bool slot_type_ok(LLVMTypeRef t)
{
    LLVMTypeKind k = LLVMGetTypeKind(t);
    return k == LLVMPointerTypeKind || (k == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) <= 64) || is_word_type(t);
}

LLVMValueRef to_slot(LLVMBuilderRef b, LLVMContextRef ctx, LLVMValueRef v)
{
    LLVMTypeRef t = LLVMTypeOf(v), i64 = LLVMInt64TypeInContext(ctx);
    switch (LLVMGetTypeKind(t)) {
    case LLVMPointerTypeKind: return LLVMBuildPtrToInt(b, v, i64, "");
    case LLVMIntegerTypeKind: return LLVMGetIntTypeWidth(t) == 64 ? v : LLVMBuildZExt(b, v, i64, "");
    default: return LLVMBuildZExt(b, LLVMBuildBitCast(b, v, LLVMInt32TypeInContext(ctx), ""), i64, "");
    }
}

LLVMValueRef from_slot(LLVMBuilderRef b, LLVMContextRef ctx, LLVMValueRef v, LLVMTypeRef t)
{
    switch (LLVMGetTypeKind(t)) {
    case LLVMPointerTypeKind: return LLVMBuildIntToPtr(b, v, t, "");
    case LLVMIntegerTypeKind: return LLVMGetIntTypeWidth(t) == 64 ? v : LLVMBuildTrunc(b, v, t, "");
    default: return LLVMBuildBitCast(b, LLVMBuildTrunc(b, v, LLVMInt32TypeInContext(ctx), ""), t, "");
    }
}

LLVMValueRef slot_ptr(LLVMBuilderRef b, LLVMContextRef ctx, LLVMValueRef base, unsigned i)
{
    LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
    LLVMValueRef idx = LLVMConstInt(i64, i, 0);
    return LLVMBuildGEP2(b, i64, base, &idx, 1, "");
}

/* Replaces the declaration of intrinsic id by a function of the same type
 * that passes its arguments and results through slot arrays to
 * sim_intrinsic. */
static int lower_intrinsic(LLVMModuleRef mod, LLVMValueRef decl, int id, char *err, size_t errlen)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMTypeRef fty = LLVMGlobalGetValueType(decl), ret = LLVMGetReturnType(fty);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx), i64 = LLVMInt64TypeInContext(ctx), ptr = LLVMPointerTypeInContext(ctx, 0);
    unsigned n = LLVMCountParamTypes(fty), nret = 0;
    LLVMTypeRef pts[16];
    if (n > 16) return snprintf(err, errlen, "%s: %u parameters", intrinsic_names[id], n), 1;
    LLVMGetParamTypes(fty, pts);
    for (unsigned i = 0; i < n; i++)
        if (!slot_type_ok(pts[i])) return snprintf(err, errlen, "%s: a parameter type the executor cannot carry", intrinsic_names[id]), 1;
    LLVMTypeKind rk = LLVMGetTypeKind(ret);
    if (rk == LLVMStructTypeKind) {
        nret = LLVMCountStructElementTypes(ret);
        for (unsigned i = 0; i < nret; i++)
            if (nret > 4 || !slot_type_ok(LLVMStructGetTypeAtIndex(ret, i)))
                return snprintf(err, errlen, "%s: a result type the executor cannot carry", intrinsic_names[id]), 1;
    } else if (rk != LLVMVoidTypeKind && !slot_type_ok(ret)) {
        return snprintf(err, errlen, "%s: a result type the executor cannot carry", intrinsic_names[id]), 1;
    }

    char name[128];
    snprintf(name, sizeof name, "cpusim.%s", intrinsic_names[id] + strlen("llvm."));
    LLVMValueRef fn = LLVMAddFunction(mod, name, fty);
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
    LLVMValueRef in = LLVMBuildAlloca(b, LLVMArrayType2(i64, n ? n : 1), "in");
    LLVMValueRef out = LLVMBuildAlloca(b, LLVMArrayType2(i64, 4), "out");
    for (unsigned i = 0; i < n; i++) LLVMBuildStore(b, to_slot(b, ctx, LLVMGetParam(fn, i)), slot_ptr(b, ctx, in, i));
    LLVMTypeRef hpts[3] = {i32, ptr, ptr};
    LLVMTypeRef hty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), hpts, 3, 0);
    LLVMValueRef host = LLVMConstIntToPtr(LLVMConstInt(i64, (uint64_t)(uintptr_t)sim_intrinsic, 0), ptr);
    LLVMValueRef hargs[3] = {LLVMConstInt(i32, (unsigned long long)id, 0), in, out};
    LLVMBuildCall2(b, hty, host, hargs, 3, "");
    if (rk == LLVMVoidTypeKind) {
        LLVMBuildRetVoid(b);
    } else if (rk == LLVMStructTypeKind) {
        LLVMValueRef agg = LLVMGetUndef(ret);
        for (unsigned i = 0; i < nret; i++) {
            LLVMValueRef w = LLVMBuildLoad2(b, i64, slot_ptr(b, ctx, out, i), "");
            agg = LLVMBuildInsertValue(b, agg, from_slot(b, ctx, w, LLVMStructGetTypeAtIndex(ret, i)), i, "");
        }
        LLVMBuildRet(b, agg);
    } else {
        LLVMBuildRet(b, from_slot(b, ctx, LLVMBuildLoad2(b, i64, slot_ptr(b, ctx, out, 0), ""), ret));
    }
    LLVMDisposeBuilder(b);
    LLVMReplaceAllUsesWith(decl, fn);
    LLVMDeleteFunction(decl);
    return 0;
}

/* Gives kernel fn the C convention and a trampoline NAME.simentry(ptr
 * slots) that loads each parameter from its slot and calls it. A tensor
 * map's byval parameter becomes a plain pointer: the slot points at the
 * map the launch built (cpusim_tma.c), which the kernel only passes on. */
static void add_trampoline(LLVMModuleRef mod, LLVMValueRef fn)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMSetFunctionCallConv(fn, LLVMCCallConv);
    unsigned byval = LLVMGetEnumAttributeKindForName("byval", 5);
    for (unsigned i = 0; i < LLVMCountParams(fn); i++) LLVMRemoveEnumAttributeAtIndex(fn, i + 1, byval);
    LLVMTypeRef fty = LLVMGlobalGetValueType(fn), ptr = LLVMPointerTypeInContext(ctx, 0);
    unsigned n = LLVMCountParamTypes(fty);
    LLVMTypeRef *pts = calloc(n ? n : 1, sizeof *pts);
    LLVMValueRef *args = calloc(n ? n : 1, sizeof *args);
    LLVMGetParamTypes(fty, pts);
    size_t len;
    const char *kname = LLVMGetValueName2(fn, &len);
    char *name = malloc(len + 16);
    snprintf(name, len + 16, "%.*s.simentry", (int)len, kname);
    LLVMValueRef tr = LLVMAddFunction(mod, name, LLVMFunctionType(LLVMVoidTypeInContext(ctx), &ptr, 1, 0));
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, tr, "entry"));
    for (unsigned i = 0; i < n; i++) args[i] = LLVMBuildLoad2(b, pts[i], slot_ptr(b, ctx, LLVMGetParam(tr, 0), i), "");
    LLVMValueRef call = LLVMBuildCall2(b, fty, fn, args, n, "");
    LLVMSetInstructionCallConv(call, LLVMCCallConv);
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    free(name); free(pts); free(args);
}

static int prepare_module(cpusim *s, LLVMModuleRef mod, char *err, size_t errlen)
{
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
        if (!LLVMIsDeclaration(f) && LLVMGetFunctionCallConv(f) == 71 /* PTX_Kernel */ && define_dynamic_shared(mod, f, err, errlen))
            return 1;
    if (lower_inline_asm(s, mod, err, errlen)) return 1;
    instrument_shared_accesses(s, mod);
    fuse_multiply_adds(mod);
    LLVMValueRef next;
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = next) {
        next = LLVMGetNextFunction(f);
        size_t len;
        const char *name = LLVMGetValueName2(f, &len);
        if (LLVMIsDeclaration(f) && (!strncmp(name, "llvm.nvvm.", 10) || intrinsic_id(name) >= 0)) {
            int id = intrinsic_id(name);
            if (id < 0) return snprintf(err, errlen, "an intrinsic the executor does not model: %s", name), 1;
            if (lower_intrinsic(mod, f, id, err, errlen)) return 1;
        } else if (!LLVMIsDeclaration(f) && LLVMGetFunctionCallConv(f) == 71 /* PTX_Kernel */) {
            add_trampoline(mod, f);
        }
    }
    /* a wgmma descriptor holds bits 4-17 of a shared address, and the
     * hardware swizzles by address bits: an area on a 256 KiB boundary
     * (above the GPU's 228 KiB) makes both the offset's */
    for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g))
        if (LLVMGetPointerAddressSpace(LLVMTypeOf(g)) == 3) {
            LLVMSetLinkage(g, LLVMExternalLinkage);
            LLVMSetAlignment(g, SHARED_AREA_ALIGN);
        }
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        snprintf(err, errlen, "internal error: the retargeted module does not verify: %.300s", msg ? msg : "");
        LLVMDisposeMessage(msg);
        return 1;
    }
    LLVMDisposeMessage(msg);
    return 0;
}

static int init_host_target(char *err, size_t errlen)
{
    static int done, failed;
    if (!done) {
        done = 1;
        LLVMLinkInMCJIT();
        failed = LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter();
        add_libcalls();
        add_debug_calls();
    }
    if (failed) snprintf(err, errlen, "no native target in this LLVM");
    return failed;
}

static int set_host_layout(LLVMModuleRef mod, char *err, size_t errlen)
{
    char *triple = LLVMGetDefaultTargetTriple(), *msg = NULL;
    LLVMTargetRef target;
    int bad = LLVMGetTargetFromTriple(triple, &target, &msg);
    if (bad) {
        snprintf(err, errlen, "host target %s: %s", triple, msg ? msg : "");
    } else {
        LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, "", "", LLVMCodeGenLevelDefault, LLVMRelocDefault,
                                                          LLVMCodeModelJITDefault);
        LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
        LLVMSetTarget(mod, triple);
        LLVMSetModuleDataLayout(mod, td);
        LLVMDisposeTargetData(td);
        LLVMDisposeTargetMachine(tm);
    }
    LLVMDisposeMessage(msg);
    LLVMDisposeMessage(triple);
    return bad;
}

/* The shared area of kernel name (codegen: NAME_smem, or NAME_shared when
 * dynamic), -1 if none. */
static int kernel_area(const cpusim *s, const char *name)
{
    size_t len = strlen(name);
    for (int i = 0; i < s->nshared; i++) {
        const char *a = s->shared[i].name;
        if (!strncmp(a, name, len) && (!strcmp(a + len, "_smem") || !strcmp(a + len, CODEGEN_DYNAMIC_AREA_SUFFIX))) return i;
    }
    return -1;
}

/* Kernel name's bulk copy descriptors, from the global
 * NAME_copy_descriptors (codegen.h) if it has one; false when it is
 * malformed. */
static bool read_copy_descriptors(LLVMModuleRef mod, const char *name, SimKernel *k)
{
    char gname[600];
    snprintf(gname, sizeof gname, "%s%s", name, CODEGEN_COPY_DESCS_SUFFIX);
    LLVMValueRef g = LLVMGetNamedGlobal(mod, gname), init = g ? LLVMGetInitializer(g) : NULL;
    k->ndescs = 0;
    if (!g) return true;
    if (!init || LLVMGetTypeKind(LLVMTypeOf(init)) != LLVMArrayTypeKind) return false;
    unsigned n = LLVMGetArrayLength2(LLVMTypeOf(init));
    enum { W = CODEGEN_COPY_DESC_WORDS };
    int v[1 + W * CODEGEN_MAX_COPY_DESCS];
    for (unsigned i = 0; i < n && i < 1 + W * CODEGEN_MAX_COPY_DESCS; i++)
        v[i] = (int)LLVMConstIntGetSExtValue(LLVMGetAggregateElement(init, i));
    if (n < 1 || v[0] < 0 || v[0] > CODEGEN_MAX_COPY_DESCS || n != 1 + W * (unsigned)v[0]) return false;
    k->ndescs = v[0];
    for (int j = 0; j < k->ndescs; j++) {
        const int *d = &v[1 + W * j];
        k->descs[j] = (CodegenCopyDesc){d[0], d[1], d[2], d[3], d[4]};
        if (d[4] != 2 && d[4] != 4) return false;
    }
    return true;
}

/* Kernel name's .maxnreg, from the module's nvvm.annotations (isa.c);
 * 0 when it has none. */
static int read_maxnreg(LLVMModuleRef mod, const char *name)
{
    unsigned n = LLVMGetNamedMetadataNumOperands(mod, "nvvm.annotations");
    LLVMValueRef *nodes = calloc(n + 1, sizeof *nodes);
    int regs = 0;
    LLVMGetNamedMetadataOperands(mod, "nvvm.annotations", nodes);
    for (unsigned i = 0; i < n && !regs; i++) {
        LLVMValueRef ops[3];
        if (LLVMGetMDNodeNumOperands(nodes[i]) != 3) continue;
        LLVMGetMDNodeOperands(nodes[i], ops);
        unsigned klen = 0;
        size_t flen = 0;
        const char *key = ops[1] ? LLVMGetMDString(ops[1], &klen) : NULL;
        const char *fn = ops[0] ? LLVMGetValueName2(ops[0], &flen) : NULL;
        if (key && klen == 7 && !memcmp(key, "maxnreg", 7) && fn && flen == strlen(name) && !memcmp(fn, name, flen) && ops[2])
            regs = (int)LLVMConstIntGetSExtValue(ops[2]);
    }
    free(nodes);
    return regs;
}

/* Finds each kernel's trampoline and each shared global once compiled. */
static int resolve(cpusim *s, const IrModule *m, LLVMModuleRef mod, char *err, size_t errlen)
{
    LLVMTargetDataRef td = LLVMGetExecutionEngineTargetData(s->ee);
    s->kernels = calloc((size_t)m->nfuncs + 1, sizeof *s->kernels);
    for (int i = 0; i < m->nfuncs; i++) {
        const IrFunc *f = m->funcs[i];
        SimKernel *k = &s->kernels[s->nkernels++];
        k->name = xstrdup(f->name);
        k->threads = ir_launch_threads(f);
        k->nparams = f->nparams;
        k->params = calloc((size_t)f->nparams + 1, sizeof *k->params);
        for (int j = 0; j < f->nparams; j++) {
            k->params[j] = f->params[j];
            k->params[j].name = NULL;
            for (int a = 0; a < IR_MAX_RANK; a++) k->params[j].dim_name[a] = NULL;   /* the module's strings go with it */
        }
        char name[600];
        snprintf(name, sizeof name, "%s.simentry", f->name);
        uint64_t addr = LLVMGetFunctionAddress(s->ee, name);
        if (!addr || k->threads < 1 || k->threads > 1024)
            return snprintf(err, errlen, "%s: no compiled entry, or %d threads", f->name, k->threads), 1;
        k->entry = (void (*)(const uint64_t *))(uintptr_t)addr;
        if (!read_copy_descriptors(mod, f->name, k)) return snprintf(err, errlen, "%s: a malformed copy descriptor list", f->name), 1;
        k->maxnreg = read_maxnreg(mod, f->name);
    }
    for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g)) {
        if (LLVMGetPointerAddressSpace(LLVMTypeOf(g)) != 3) continue;
        size_t len;
        const char *name = LLVMGetValueName2(g, &len);
        s->shared = realloc(s->shared, sizeof *s->shared * (size_t)(s->nshared + 1));
        SharedArea *a = &s->shared[s->nshared++];
        a->name = xstrdup(name);
        a->addr = (unsigned char *)(uintptr_t)LLVMGetGlobalValueAddress(s->ee, name);
        a->bytes = LLVMABISizeOfType(td, LLVMGlobalGetValueType(g));
        a->shadow = calloc(a->bytes ? a->bytes : 1, sizeof *a->shadow);
        for (size_t i = 0; i < a->bytes; i++) a->shadow[i].copier = NO_THREAD;
        if (!a->addr) return snprintf(err, errlen, "shared global %s has no address", name), 1;
        if ((uintptr_t)a->addr % SHARED_AREA_ALIGN)
            return snprintf(err, errlen, "shared global %s at %p, not on a 256 KiB boundary", name, (void *)a->addr), 1;
    }
    for (int i = 0; i < s->nkernels; i++) s->kernels[i].area = kernel_area(s, s->kernels[i].name);
    return 0;
}

ph_status cpusim_load_llvm(const IrModule *m, const char *llvm_ir, cpusim **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!m || !llvm_ir) return status_message(PH_ERR_INVALID, err, errlen, "no module");
    if (init_host_target(err, errlen)) return PH_ERR_INVALID;
    cpusim *s = calloc(1, sizeof *s);
    s->ctx = LLVMContextCreate();
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(llvm_ir, strlen(llvm_ir), "phobos.ll");
    LLVMModuleRef mod = NULL;
    char *msg = NULL;
    if (LLVMParseIRInContext(s->ctx, buf, &mod, &msg)) {
        snprintf(err, errlen, "internal error: the emitted LLVM IR does not parse: %.300s", msg ? msg : "");
        LLVMDisposeMessage(msg);
        cpusim_free(s);
        return PH_ERR_COMPILE;
    }
    if (set_host_layout(mod, err, errlen) || prepare_module(s, mod, err, errlen)) {
        LLVMDisposeModule(mod);
        cpusim_free(s);
        return PH_ERR_COMPILE;
    }
    struct LLVMMCJITCompilerOptions jo;
    LLVMInitializeMCJITCompilerOptions(&jo, sizeof jo);
    /* the IR is optimized already; fast instruction selection halves the load time */
    jo.OptLevel = 0;
    if (LLVMCreateMCJITCompilerForModule(&s->ee, mod, &jo, sizeof jo, &msg)) {
        snprintf(err, errlen, "MCJIT: %s", msg ? msg : "");
        LLVMDisposeMessage(msg);
        LLVMDisposeModule(mod);
        cpusim_free(s);
        return PH_ERR_COMPILE;
    }
    if (resolve(s, m, mod, err, errlen)) {
        cpusim_free(s);
        return PH_ERR_COMPILE;
    }
    *out = s;
    return PH_OK;
}

ph_status cpusim_load(const IrModule *m, cpusim **out, char *err, size_t errlen) { return cpusim_load_arch(m, "sm_90", out, err, errlen); }

ph_status cpusim_load_arch(const IrModule *m, const char *arch, cpusim **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!m) return status_message(PH_ERR_INVALID, err, errlen, "no module");
    const struct Target *t = arch ? target_find(arch) : NULL;
    if (!t) return status_message(PH_ERR_INVALID, err, errlen, "no target named %s", arch ? arch : "(null)");
    CodegenOptions o = {.target = t, .opt_level = CODEGEN_OPT_DEFAULT};
    char *text = NULL;
    if (codegen_emit(m, &o, CG_EMIT_LLVM, &text, err, errlen)) return PH_ERR_COMPILE;
    ph_status st = cpusim_load_llvm(m, text, out, err, errlen);
    free(text);
    return st;
}

void cpusim_free(cpusim *s)
{
    if (!s) return;
    for (int i = 0; i < s->nkernels; i++) { free(s->kernels[i].name); free(s->kernels[i].params); }
    free(s->kernels);
    for (int i = 0; i < s->nshared; i++) { free(s->shared[i].name); free(s->shared[i].shadow); }
    for (int i = 0; i < s->nsites; i++) free(s->sites[i]);
    free(s->sites);
    free_asm_calls(s);
    free(s->shared);
    free(s->printed);
    if (s->stacks) munmap(s->stacks, (size_t)s->nstacks * (STACK_BYTES + PAGE));
    if (s->ee) LLVMDisposeExecutionEngine(s->ee);   /* owns the module */
    LLVMContextDispose(s->ctx);
    free(s);
}
