/* cpusim_asm.c: sm_90a's inline PTX (compiler/nvidia/ptx_asm.c: wgmma's
 * fence, mma_async, commit_group and wait_group, fence.proxy.async,
 * fence.acq_rel.cta,
 * setmaxnreg; the mbarrier init fence, expect_tx and try_wait.parity, the
 * bulk tensor copy; sm_90's vector atomic add, red.global.add.v2/v4.f32) made
 * calls into the executor. Each asm call is recognised by its text and
 * constraints, and its callee replaced by a wrapper of the same type that
 * stores its arguments to a slot array and calls sim_asm with the call's
 * index (cpusim.asm_calls: what the text said, where the call is); the
 * wrapper returns the outputs sim_asm leaves in a second array. Asm text
 * the executor does not know fails the load. */
#define _GNU_SOURCE
#include "cpusim_impl.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The constraint string's outputs ("=f", or "=r": try_wait's), and for
 * each input the output it is tied to ("0", "1"...) or -1; false when it
 * has another form. */
static bool read_constraints(const char *cons, size_t len, int *nout, int *tied, int nin)
{
    char *text = strndup(cons, len), *save = NULL;
    int in = 0;
    bool ok = true;
    *nout = 0;
    for (char *c = strtok_r(text, ",", &save); c && ok; c = strtok_r(NULL, ",", &save)) {
        if (!strncmp(c, "~{", 2)) continue;   /* clobbers */
        if (!strcmp(c, "=f") || !strcmp(c, "=r")) {
            ok = in == 0;
            ++*nout;
        } else if (in >= nin) {
            ok = false;
        } else if (*c >= '0' && *c <= '9') {
            tied[in++] = atoi(c);
        } else {
            tied[in++] = -1;
        }
    }
    free(text);
    return ok && in == nin;
}

/* The accumulators: output i tied to argument acc[i], every output once. */
static bool tie_accumulators(AsmCall *a, const int *tied, int nin, int nout)
{
    a->nacc = nout;
    a->acc = xmalloc(sizeof *a->acc * (size_t)(nout ? nout : 1));
    for (int i = 0; i < nout; i++) a->acc[i] = -1;
    for (int j = 0; j < nin; j++)
        if (tied[j] >= 0) {
            if (tied[j] >= nout || a->acc[tied[j]] >= 0) return false;
            a->acc[tied[j]] = j;
        }
    for (int i = 0; i < nout; i++)
        if (a->acc[i] < 0) return false;
    return true;
}

/* The operand $k of the text as an argument index (outputs come first). */
static int argument_of(int operand, int nout) { return operand - nout; }

/* wgmma.mma_async as ptx_wgmma_mma writes it: a scale-d predicate set
 * from one operand, then m64nNk16.f32.T.T {$0..} descA, descB, p,
 * imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b; or, as
 * ptx_wgmma_mma_regs does, A as four registers {$a0, $a1, $a2, $a3}
 * and no imm-trans-a. */
static bool read_mma(const char *text, AsmCall *a, int nin, int nout)
{
    const char *setp = strstr(text, "setp.ne.b32 p, $"), *mma = strstr(text, "wgmma.mma_async.sync.aligned.m64n");
    if (!setp || !mma) return false;
    int scale, n, da, db, sa, sb, ta, tb, used = 0;
    char t1[8], t2[8];
    if (sscanf(setp, "setp.ne.b32 p, $%d, 0;", &scale) != 1) return false;
    if (sscanf(mma, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%7[a-z0-9].%7[a-z0-9] {%n", &n, t1, t2, &used) != 3 || !used)
        return false;
    const char *p = mma + used;
    for (int i = 0; i < nout; i++) {   /* the destinations: $0, $1, ... in order */
        int k, len = 0;
        if (sscanf(p, i ? ", $%d%n" : "$%d%n", &k, &len) != 1 || k != i) return false;
        p += len;
    }
    int ra[4];
    if (sscanf(p, "}, {$%d, $%d, $%d, $%d}, $%d, p, %d, %d, %d;", &ra[0], &ra[1], &ra[2], &ra[3], &db, &sa, &sb, &tb) == 8) {
        da = -1, ta = 0;
        for (int i = 0; i < 4; i++) {
            a->reg_a[i] = argument_of(ra[i], nout);
            if (a->reg_a[i] < 0 || a->reg_a[i] >= nin) return false;
        }
    } else if (sscanf(p, "}, $%d, $%d, p, %d, %d, %d, %d;", &da, &db, &sa, &sb, &ta, &tb) != 6)
        return false;
    bool bf = !strcmp(t1, "bf16");
    if (strcmp(t1, t2) || (!bf && strcmp(t1, "f16")) || n < 8 || n > 256 || n % 8 || nout != n / 2) return false;
    if ((sa != 1 && sa != -1) || (sb != 1 && sb != -1) || (ta != 0 && ta != 1) || (tb != 0 && tb != 1)) return false;
    a->op = IN_WGMMA;
    a->n = n;
    a->bf16 = bf;
    a->scale_a = sa, a->scale_b = sb;
    a->trans_a = ta, a->trans_b = tb;
    a->desc_a = da < 0 ? -1 : argument_of(da, nout), a->desc_b = argument_of(db, nout), a->scale_d = argument_of(scale, nout);
    return (da < 0 || (a->desc_a >= 0 && a->desc_a < nin)) && a->desc_b >= 0 && a->desc_b < nin && a->scale_d >= 0 && a->scale_d < nin;
}

/* fp8 mma.sync as ptx_mma_f8 writes it: A's four registers, B's two, the
 * four accumulators (tied to the outputs). */
static bool read_mma_f8(const char *text, AsmCall *a, int nin, int nout)
{
    char t1[8], t2[8];
    int used = 0;
    if (sscanf(text, "mma.sync.aligned.m16n8k32.row.col.f32.%7[a-z0-9].%7[a-z0-9].f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, "
                     "{$8, $9}, {$10, $11, $12, $13};%n", t1, t2, &used) != 2 || used != (int)strlen(text))
        return false;
    bool ok = (!strcmp(t1, "e4m3") || !strcmp(t1, "e5m2")) && (!strcmp(t2, "e4m3") || !strcmp(t2, "e5m2"));
    a->op = IN_MMA_F8;
    a->a_e5m2 = !strcmp(t1, "e5m2");
    a->b_e5m2 = !strcmp(t2, "e5m2");
    return ok && nin == 10 && nout == 4;
}

/* The copy engine's asm texts (ptx_asm.c), each with its operands in a
 * fixed order: the mbarrier's shared address first (try_wait: after its
 * result), the bulk copy's destination, map, x, y and mbarrier; then the
 * named barrier's arrival (id, count) of consumers taking turns. */
static const char *const tma_texts[] = {
    "fence.mbarrier_init.release.cluster;",
    "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [$0], $1;",
    "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\nselp.b32 $0, 1, 0, p;\n}",
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3}], [$4];",
    "bar.arrive $0, $1;",
};
static const int tma_inputs[] = {0, 2, 2, 5, 2}, tma_outputs[] = {0, 0, 1, 0, 0};

static bool read_tma(const char *text, AsmCall *a)
{
    for (int i = 0; i < 5; i++)
        if (!strcmp(text, tma_texts[i])) {
            a->op = IN_FENCE_MBAR_INIT + i;
            return true;
        }
    return false;
}

/* What the asm text of call says, into a; false if the executor does not
 * know it. */
static bool read_asm(LLVMValueRef call, LLVMValueRef asm_val, AsmCall *a)
{
    size_t tlen, clen;
    const char *t = LLVMGetInlineAsmAsmString(asm_val, &tlen);
    const char *cons = LLVMGetInlineAsmConstraintString(asm_val, &clen);
    char *text = strndup(t, tlen);
    int nin = LLVMGetNumArgOperands(call), nout = 0;
    int *tied = xmalloc(sizeof *tied * (size_t)(nin ? nin : 1));
    bool ok = read_constraints(cons, clen, &nout, tied, nin);
    memset(a, 0, sizeof *a);
    a->desc_a = a->desc_b = a->scale_d = -1;
    if (!ok) {
    } else if (!strcmp(text, "fence.proxy.async.shared::cta;")) {
        a->op = IN_FENCE_PROXY_ASYNC;
    } else if (!strcmp(text, "fence.acq_rel.cta;")) {
        a->op = IN_FENCE_CTA;
    } else if (!strcmp(text, "wgmma.fence.sync.aligned;")) {
        a->op = IN_WGMMA_FENCE;
    } else if (!strcmp(text, "wgmma.commit_group.sync.aligned;")) {
        a->op = IN_WGMMA_COMMIT;
    } else if (sscanf(text, "wgmma.wait_group.sync.aligned %d;", &a->pending) == 1 && a->pending >= 0) {
        a->op = IN_WGMMA_WAIT;
    } else if (!strncmp(text, "setmaxnreg.", 11)) {
        char action[4] = "";
        int regs = 0;
        ok = sscanf(text, "setmaxnreg.%3[a-z].sync.aligned.u32 %d;", action, &regs) == 2 &&
             (!strcmp(action, "inc") || !strcmp(action, "dec")) && regs >= 24 && regs <= 256 && regs % 8 == 0;
        a->op = IN_SETMAXNREG;
        a->regs = !strcmp(action, "inc") ? regs : -regs;
    } else if (strstr(text, "wgmma.mma_async")) {
        ok = read_mma(text, a, nin, nout);
    } else if (!strncmp(text, "mma.sync.aligned.m16n8k32", 25)) {
        ok = read_mma_f8(text, a, nin, nout);
    } else if (!strcmp(text, "cp.async.bulk.wait_group 0;")) {
        a->op = IN_BULK_DRAIN;
    } else if (!strcmp(text, "cp.async.bulk.wait_group.read 0;")) {
        a->op = IN_BULK_WAIT_READ;
    } else if (!strcmp(text, "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [$0, {$1, $2}], [$3];\n"
                             "cp.async.bulk.commit_group;")) {
        a->op = IN_BULK_ADD_TENSOR;
    } else if (!strncmp(text, "cp.reduce.async.bulk.", 21)) {
        int used = 0;
        ok = sscanf(text, "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], %d;\ncp.async.bulk.commit_group;%n",
                    &a->n, &used) == 1 && used == (int)strlen(text) && a->n > 0;
        a->op = IN_BULK_ADD_F32;
    } else if (!strncmp(text, "cp.async.bulk.shared::cluster.global.", 37)) {
        int used = 0;
        ok = sscanf(text, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], %d, [$2];%n", &a->n,
                    &used) == 1 && used == (int)strlen(text) && a->n > 0;
        a->op = IN_BULK_LOAD;
    } else if (sscanf(text, "red.global.add.v%d.f32", &a->n) == 1) {
        ok = a->n == 2 || a->n == 4;
        a->op = IN_RED_ADD_F32;
    } else {
        ok = read_tma(text, a);
    }
    if (a->op == IN_BULK_LOAD) {   /* the shared and global addresses, the mbarrier; nothing out */
        for (int j = 0; j < nin; j++) ok = ok && tied[j] < 0;
        ok = ok && nout == 0 && nin == 3;
        a->acc = xmalloc(sizeof *a->acc);
    } else if (a->op == IN_BULK_ADD_F32 || a->op == IN_BULK_ADD_TENSOR || a->op == IN_BULK_DRAIN || a->op == IN_BULK_WAIT_READ) {
        /* the global and shared addresses, the map, its box's column and row and the shared address, or nothing; nothing out */
        for (int j = 0; j < nin; j++) ok = ok && tied[j] < 0;
        ok = ok && nout == 0 && nin == (a->op == IN_BULK_ADD_F32 ? 2 : a->op == IN_BULK_ADD_TENSOR ? 4 : 0);
        a->acc = xmalloc(sizeof *a->acc);
    } else if (a->op == IN_RED_ADD_F32) {   /* the address, then the floats; nothing out */
        for (int j = 0; j < nin; j++) ok = ok && tied[j] < 0;
        ok = ok && nout == 0 && nin == 1 + a->n;
        a->acc = xmalloc(sizeof *a->acc);
    } else if (a->op >= IN_FENCE_MBAR_INIT) {   /* no accumulators: an i32 result at most, untied */
        for (int j = 0; j < nin; j++) ok = ok && tied[j] < 0;
        ok = ok && nout == tma_outputs[a->op - IN_FENCE_MBAR_INIT] && nin == tma_inputs[a->op - IN_FENCE_MBAR_INIT];
        a->acc = xmalloc(sizeof *a->acc);
    } else {
        /* mma's other inputs are the descriptors and scale-d, wait_group's none */
        int others = a->op == IN_MMA_F8 ? 6 : a->op != IN_WGMMA ? 0 : a->desc_a < 0 ? 6 : 3;
        ok = ok && a->op && tie_accumulators(a, tied, nin, nout) && nin == nout + others;
    }
    free(tied);
    free(text);
    return ok;
}

/* A function of call's type (the asm's) that gives sim_asm its arguments
 * and the index of the call, and returns the outputs it leaves. */
static LLVMValueRef asm_wrapper(LLVMModuleRef mod, LLVMTypeRef fty, int index)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMTypeRef ret = LLVMGetReturnType(fty);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx), i64 = LLVMInt64TypeInContext(ctx), ptr = LLVMPointerTypeInContext(ctx, 0);
    unsigned n = LLVMCountParamTypes(fty);
    char name[64];
    snprintf(name, sizeof name, "cpusim.asm.%d", index);
    LLVMValueRef fn = LLVMAddFunction(mod, name, fty);
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
    bool agg = LLVMGetTypeKind(ret) == LLVMStructTypeKind;
    unsigned nret = agg ? LLVMCountStructElementTypes(ret) : LLVMGetTypeKind(ret) != LLVMVoidTypeKind;
    LLVMValueRef in = LLVMBuildAlloca(b, LLVMArrayType2(i64, n ? n : 1), "in");
    LLVMValueRef out = LLVMBuildAlloca(b, LLVMArrayType2(i64, nret ? nret : 1), "out");
    for (unsigned i = 0; i < n; i++) LLVMBuildStore(b, to_slot(b, ctx, LLVMGetParam(fn, i)), slot_ptr(b, ctx, in, i));
    LLVMTypeRef hpts[3] = {i32, ptr, ptr};
    LLVMTypeRef hty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), hpts, 3, 0);
    LLVMValueRef host = LLVMConstIntToPtr(LLVMConstInt(i64, (uint64_t)(uintptr_t)sim_asm, 0), ptr);
    LLVMValueRef hargs[3] = {LLVMConstInt(i32, (unsigned)index, 0), in, out};
    LLVMBuildCall2(b, hty, host, hargs, 3, "");
    if (!nret) {
        LLVMBuildRetVoid(b);
    } else if (!agg) {
        LLVMBuildRet(b, from_slot(b, ctx, LLVMBuildLoad2(b, i64, slot_ptr(b, ctx, out, 0), ""), ret));
    } else {
        LLVMValueRef r = LLVMGetUndef(ret);
        for (unsigned i = 0; i < nret; i++) {
            LLVMValueRef w = LLVMBuildLoad2(b, i64, slot_ptr(b, ctx, out, i), "");
            r = LLVMBuildInsertValue(b, r, from_slot(b, ctx, w, LLVMStructGetTypeAtIndex(ret, i)), i, "");
        }
        LLVMBuildRet(b, r);
    }
    LLVMDisposeBuilder(b);
    return fn;
}

/* Whether every argument and output of fty travels in a slot. */
static bool slot_signature(LLVMTypeRef fty)
{
    unsigned n = LLVMCountParamTypes(fty);
    LLVMTypeRef *pts = xmalloc(sizeof *pts * (n ? n : 1));
    LLVMGetParamTypes(fty, pts);
    bool ok = true;
    for (unsigned i = 0; i < n && ok; i++) ok = slot_type_ok(pts[i]);
    free(pts);
    LLVMTypeRef ret = LLVMGetReturnType(fty);
    if (LLVMGetTypeKind(ret) == LLVMStructTypeKind) {
        for (unsigned i = 0; i < LLVMCountStructElementTypes(ret) && ok; i++) ok = slot_type_ok(LLVMStructGetTypeAtIndex(ret, i));
    } else if (LLVMGetTypeKind(ret) != LLVMVoidTypeKind) {
        ok = ok && slot_type_ok(ret);
    }
    return ok;
}

static const char *asm_what(int op)
{
    switch (op) {
    case IN_WGMMA: return ", wgmma.mma_async";
    case IN_WGMMA_WAIT: return ", wgmma.wait_group";
    case IN_MMA_F8: return ", mma.sync fp8";
    case IN_SETMAXNREG: return ", setmaxnreg";
    case IN_FENCE_PROXY_ASYNC: return ", fence.proxy.async";
    case IN_MBAR_EXPECT_TX: return ", mbarrier.expect_tx";
    case IN_MBAR_TRY_WAIT: return ", mbarrier.try_wait";
    case IN_BULK_TENSOR: return ", the bulk tensor copy";
    case IN_FENCE_MBAR_INIT: return ", fence.mbarrier_init";
    case IN_BAR_ARRIVE: return ", bar.arrive";
    case IN_RED_ADD_F32: return ", red.global.add.v";
    case IN_BULK_ADD_F32: return ", cp.reduce.async.bulk";
    case IN_BULK_DRAIN: return ", cp.async.bulk.wait_group";
    case IN_BULK_WAIT_READ: return ", cp.async.bulk.wait_group.read";
    case IN_BULK_LOAD: return ", cp.async.bulk (global to shared)";
    case IN_BULK_ADD_TENSOR: return ", cp.reduce.async.bulk.tensor";
    default: return ", wgmma";
    }
}

int lower_inline_asm(cpusim *s, LLVMModuleRef mod, char *err, size_t errlen)
{
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
            for (LLVMValueRef inst = LLVMGetFirstInstruction(bb); inst; inst = LLVMGetNextInstruction(inst)) {
                if (LLVMGetInstructionOpcode(inst) != LLVMCall) continue;
                LLVMValueRef callee = LLVMGetCalledValue(inst);
                if (!callee || !LLVMIsAInlineAsm(callee)) continue;
                LLVMTypeRef fty = LLVMGetCalledFunctionType(inst);
                AsmCall a;
                if (!read_asm(inst, callee, &a) || !slot_signature(fty)) {
                    size_t len;
                    const char *text = LLVMGetInlineAsmAsmString(callee, &len);
                    free(a.acc);
                    return snprintf(err, errlen, "inline asm the executor does not model: \"%.*s\"", (int)(len < 200 ? len : 200), text), 1;
                }
                a.site = add_site(s, f, bb, asm_what(a.op));
                s->asm_calls = realloc(s->asm_calls, sizeof *s->asm_calls * (size_t)(s->nasm_calls + 1));
                s->asm_calls[s->nasm_calls] = a;
                LLVMValueRef fn = asm_wrapper(mod, fty, s->nasm_calls++);
                LLVMSetOperand(inst, LLVMGetNumOperands(inst) - 1, fn);   /* a call's callee is its last operand */
            }
    return 0;
}

void free_asm_calls(cpusim *s)
{
    for (int i = 0; i < s->nasm_calls; i++) free(s->asm_calls[i].acc);
    free(s->asm_calls);
    s->asm_calls = NULL;
    s->nasm_calls = 0;
}
