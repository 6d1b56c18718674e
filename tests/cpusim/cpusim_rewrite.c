/* cpusim_rewrite.c: rewrites of the retargeted module: every shared-memory
 * access and cp.async reports itself to the executor first (for the race
 * checks), a kernel's dynamic shared memory becomes a global of its size,
 * and multiply-adds are fused as the NVPTX back end fuses them. */
#define _GNU_SOURCE
#include "cpusim_impl.h"
#include "codegen/codegen.h"

#include <llvm-c/Target.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- race instrumentation: every shared access reports itself ---- */

typedef struct { LLVMValueRef ptr, bytes; int kind; } SharedAccess;

static bool is_shared_ptr(LLVMValueRef p)
{
    LLVMTypeRef t = LLVMTypeOf(p);
    return LLVMGetTypeKind(t) == LLVMPointerTypeKind && LLVMGetPointerAddressSpace(t) == 3;
}

static bool callee_named(LLVMValueRef call, const char *prefix)
{
    LLVMValueRef callee = LLVMGetCalledValue(call);
    if (!callee || !LLVMIsAFunction(callee)) return false;
    size_t len;
    const char *name = LLVMGetValueName2(callee, &len);
    return !strncmp(name, prefix, strlen(prefix));
}

/* The shared-memory accesses inst makes (at most two); atomics count as
 * writes (the code generator emits none). A memset or memcpy's length is
 * the value the call is given. */
static int shared_accesses(LLVMValueRef inst, LLVMTargetDataRef td, SharedAccess acc[2])
{
    LLVMContextRef ctx = LLVMGetTypeContext(LLVMTypeOf(inst));
    LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
    int n = 0;
    LLVMValueRef p;
    switch (LLVMGetInstructionOpcode(inst)) {
    case LLVMLoad:
        if (is_shared_ptr(p = LLVMGetOperand(inst, 0)))
            acc[n++] = (SharedAccess){p, LLVMConstInt(i64, LLVMStoreSizeOfType(td, LLVMTypeOf(inst)), 0), ACCESS_READ};
        break;
    case LLVMStore:
    case LLVMAtomicRMW:
    case LLVMAtomicCmpXchg: {
        bool store = LLVMGetInstructionOpcode(inst) == LLVMStore;
        LLVMValueRef v = LLVMGetOperand(inst, store ? 0 : 1);
        if (is_shared_ptr(p = LLVMGetOperand(inst, store ? 1 : 0)))
            acc[n++] = (SharedAccess){p, LLVMConstInt(i64, LLVMStoreSizeOfType(td, LLVMTypeOf(v)), 0), ACCESS_WRITE};
        break;
    }
    case LLVMCall: {
        bool set = callee_named(inst, "llvm.memset."), copy = callee_named(inst, "llvm.memcpy.") || callee_named(inst, "llvm.memmove.");
        if (!set && !copy) break;
        LLVMValueRef len = LLVMGetOperand(inst, 2);
        if (is_shared_ptr(p = LLVMGetOperand(inst, 0))) acc[n++] = (SharedAccess){p, len, ACCESS_WRITE};
        if (copy && is_shared_ptr(p = LLVMGetOperand(inst, 1))) acc[n++] = (SharedAccess){p, len, ACCESS_READ};
        break;
    }
    default:
        break;
    }
    return n;
}

/* A site's description: "function, block %name" (the names --emit=llvm
 * prints), then what, if any. */
int32_t add_site(cpusim *s, LLVMValueRef fn, LLVMBasicBlockRef bb, const char *what)
{
    size_t len;
    const char *fname = LLVMGetValueName2(fn, &len);
    const char *bname = LLVMGetBasicBlockName(bb);
    char buf[700];
    snprintf(buf, sizeof buf, "%.*s, block %%%s%s", (int)len, fname, bname && *bname ? bname : "(unnamed)", what);
    s->sites = realloc(s->sites, sizeof *s->sites * (size_t)(s->nsites + 1));
    s->sites[s->nsites] = xstrdup(buf);
    return s->nsites++;
}

/* The id of the cp.async copy or wait inst calls, or -1. */
static int async_op_called(LLVMValueRef inst)
{
    if (LLVMGetInstructionOpcode(inst) != LLVMCall || !callee_named(inst, "llvm.nvvm.cp.async.")) return -1;
    size_t len;
    int id = intrinsic_id(LLVMGetValueName2(LLVMGetCalledValue(inst), &len));
    return id >= 0 && (is_async_copy(id) || is_async_wait(id)) ? id : -1;
}

/* Puts a call of sim_shared_access(address, bytes, kind, site) before
 * every access of shared memory in mod (ldmatrix's reads are checked where
 * the executor computes it), and one of sim_async_site(site) before every
 * cp.async copy and wait. A site is a basic block; a wait's says what it
 * is, since it is where its copies write. */
void instrument_shared_accesses(cpusim *s, LLVMModuleRef mod)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMTargetDataRef td = LLVMGetModuleDataLayout(mod);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx), i64 = LLVMInt64TypeInContext(ctx), ptr = LLVMPointerTypeInContext(ctx, 0);
    LLVMTypeRef pts[4] = {i64, i64, i32, i32};
    LLVMTypeRef hty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), pts, 4, 0);
    LLVMValueRef hook = LLVMConstIntToPtr(LLVMConstInt(i64, (uint64_t)(uintptr_t)sim_shared_access, 0), ptr);
    LLVMTypeRef aty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), &i32, 1, 0);
    LLVMValueRef async_hook = LLVMConstIntToPtr(LLVMConstInt(i64, (uint64_t)(uintptr_t)sim_async_site, 0), ptr);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
            int32_t site = -1;
            for (LLVMValueRef inst = LLVMGetFirstInstruction(bb); inst; inst = LLVMGetNextInstruction(inst)) {
                int op = async_op_called(inst);
                if (op >= 0) {
                    int32_t at = is_async_wait(op) ? add_site(s, f, bb, op == IN_CP_WAIT_ALL ? ", the cp.async.wait.all completing its cp.async"
                                                                                             : ", the cp.async.wait.group completing its cp.async")
                               : site >= 0 ? site : (site = add_site(s, f, bb, ""));
                    LLVMPositionBuilderBefore(b, inst);
                    LLVMValueRef arg = LLVMConstInt(i32, (unsigned)at, 0);
                    LLVMBuildCall2(b, aty, async_hook, &arg, 1, "");
                }
                SharedAccess acc[2];
                int n = shared_accesses(inst, td, acc);
                if (n && site < 0) site = add_site(s, f, bb, "");
                for (int i = 0; i < n; i++) {
                    LLVMPositionBuilderBefore(b, inst);
                    LLVMValueRef bytes = acc[i].bytes;
                    if (LLVMGetIntTypeWidth(LLVMTypeOf(bytes)) != 64) bytes = LLVMBuildZExt(b, bytes, i64, "");
                    LLVMValueRef args[4] = {LLVMBuildPtrToInt(b, acc[i].ptr, i64, ""), bytes,
                                            LLVMConstInt(i32, (unsigned)acc[i].kind, 0), LLVMConstInt(i32, (unsigned)site, 0)};
                    LLVMBuildCall2(b, hty, hook, args, 4, "");
                }
            }
        }
    LLVMDisposeBuilder(b);
}

/* A kernel with dynamic shared memory (codegen.h) declares an extern array
 * and the constant that sizes it: the array becomes a global of that many
 * bytes, what the runtime asks the driver for at launch, so it is poisoned
 * and shadowed like every static area. */
int define_dynamic_shared(LLVMModuleRef mod, LLVMValueRef kernel, char *err, size_t errlen)
{
    size_t len;
    const char *kname = LLVMGetValueName2(kernel, &len);
    char name[600];
    snprintf(name, sizeof name, "%s%s", kname, CODEGEN_DYNAMIC_AREA_SUFFIX);
    LLVMValueRef area = LLVMGetNamedGlobal(mod, name);
    if (!area) return 0;
    snprintf(name, sizeof name, "%s%s", kname, CODEGEN_DYNAMIC_SHARED_SUFFIX);
    LLVMValueRef size = LLVMGetNamedGlobal(mod, name);
    LLVMValueRef init = size ? LLVMGetInitializer(size) : NULL;
    if (!init || !LLVMIsAConstantInt(init) || LLVMConstIntGetSExtValue(init) < 1)
        return snprintf(err, errlen, "%s: an extern shared array with no size (%s)", kname, name), 1;
    LLVMTypeRef at = LLVMArrayType2(LLVMInt8TypeInContext(LLVMGetModuleContext(mod)), (uint64_t)LLVMConstIntGetSExtValue(init));
    LLVMValueRef g = LLVMAddGlobalInAddressSpace(mod, at, "", 3);
    LLVMSetInitializer(g, LLVMGetUndef(at));
    LLVMSetAlignment(g, 16);
    LLVMReplaceAllUsesWith(area, g);
    snprintf(name, sizeof name, "%s%s", kname, CODEGEN_DYNAMIC_AREA_SUFFIX);
    LLVMDeleteGlobal(area);
    LLVMSetValueName2(g, name, strlen(name));
    return 0;
}

/* ---- contraction: the GPU's fused multiply-adds ----
 * The NVPTX back end fuses an fmul into the fadd or fsub it feeds when both
 * carry the contract flag and sit in one basic block (its selection DAG
 * is built a block at a time), even when the product has other users
 * (NVPTX asks for aggressive fusion). The same rewrite here, into
 * llvm.fma.f32, which the host computes exactly rounded, makes the
 * executor round as the GPU does; the order of preference is the DAG
 * combiner's: the left operand, unless both are products and the left
 * has more users. */

static bool contract_flag(LLVMValueRef v) { return LLVMCanValueUseFastMathFlags(v) && (LLVMGetFastMathFlags(v) & LLVMFastMathAllowContract); }

static unsigned count_uses(LLVMValueRef v)
{
    unsigned n = 0;
    for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u)) n++;
    return n;
}

/* An fmul of f32 values with the contract flag, in block bb. */
static bool fusable_product(LLVMValueRef v, LLVMBasicBlockRef bb)
{
    return LLVMIsAInstruction(v) && LLVMGetInstructionOpcode(v) == LLVMFMul && contract_flag(v)
        && LLVMGetInstructionParent(v) == bb && LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMFloatTypeKind;
}

/* Replaces add (an fadd or fsub) by an fma of product operand `which`;
 * the product goes when nothing else uses it. */
static void fuse(LLVMModuleRef mod, LLVMBuilderRef b, LLVMValueRef add, int which)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMTypeRef f32 = LLVMFloatTypeInContext(ctx);
    LLVMTypeRef fty = LLVMFunctionType(f32, (LLVMTypeRef[]){f32, f32, f32}, 3, 0);
    LLVMValueRef fma_fn = LLVMGetNamedFunction(mod, "llvm.fma.f32");
    if (!fma_fn) fma_fn = LLVMAddFunction(mod, "llvm.fma.f32", fty);
    bool sub = LLVMGetInstructionOpcode(add) == LLVMFSub;
    LLVMValueRef prod = LLVMGetOperand(add, (unsigned)which), other = LLVMGetOperand(add, (unsigned)!which);
    LLVMValueRef x = LLVMGetOperand(prod, 0), y = LLVMGetOperand(prod, 1);
    LLVMPositionBuilderBefore(b, add);
    if (sub && which == 0) other = LLVMBuildFNeg(b, other, "");   /* x*y - z: fma(x, y, -z) */
    if (sub && which == 1) x = LLVMBuildFNeg(b, x, "");           /* z - x*y: fma(-x, y, z) */
    LLVMValueRef r = LLVMBuildCall2(b, fty, fma_fn, (LLVMValueRef[]){x, y, other}, 3, "");
    LLVMReplaceAllUsesWith(add, r);
    LLVMInstructionEraseFromParent(add);
    if (!LLVMGetFirstUse(prod)) LLVMInstructionEraseFromParent(prod);
}

void fuse_multiply_adds(LLVMModuleRef mod)
{
    LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod));
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
            LLVMValueRef next;
            for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = next) {
                next = LLVMGetNextInstruction(i);
                LLVMOpcode op = LLVMGetInstructionOpcode(i);
                if ((op != LLVMFAdd && op != LLVMFSub) || !contract_flag(i)) continue;
                bool p0 = fusable_product(LLVMGetOperand(i, 0), bb), p1 = fusable_product(LLVMGetOperand(i, 1), bb);
                if (p0 && p1) fuse(mod, b, i, count_uses(LLVMGetOperand(i, 0)) > count_uses(LLVMGetOperand(i, 1)));
                else if (p0 || p1) fuse(mod, b, i, p1);
            }
        }
    }
    LLVMDisposeBuilder(b);
}

/* Retargets mod to the host: intrinsics lowered, kernels callable, shared
 * memory made visible to the executor (external linkage, so MCJIT can say
 * where each global lies), every shared access checked for races,
 * multiply-adds fused as on the GPU. */
