/* ptx_asm.c: inline PTX for what LLVM 19 has no intrinsic for (ptx_asm.h). */
#include "codegen/cg.h"
#include "nvidia/ptx_asm.h"

#include <stdio.h>
#include <string.h>

/* An asm statement of text with constraints cons over args, returning ret
 * (void: none). */
static LLVMValueRef asm_call(Cg *c, const char *text, const char *cons, LLVMTypeRef ret, LLVMValueRef *args, int n)
{
    LLVMTypeRef pts[300];
    for (int i = 0; i < n; i++) pts[i] = LLVMTypeOf(args[i]);
    LLVMTypeRef fty = LLVMFunctionType(ret, pts, (unsigned)n, 0);
    LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), cons, strlen(cons), 1, 0, LLVMInlineAsmDialectATT, 0);
    return LLVMBuildCall2(c->b, fty, fn, args, (unsigned)n, "");
}

static void asm_plain(Cg *c, const char *text) { asm_call(c, text, "~{memory}", c->tvoid, NULL, 0); }

void ptx_fence_proxy_async(Cg *c) { asm_plain(c, "fence.proxy.async.shared::cta;"); }
void ptx_wgmma_fence(Cg *c) { asm_plain(c, "wgmma.fence.sync.aligned;"); }
void ptx_wgmma_commit(Cg *c) { asm_plain(c, "wgmma.commit_group.sync.aligned;"); }

void ptx_setmaxnreg(Cg *c, bool inc, int regs)
{
    char text[64];
    snprintf(text, sizeof text, "setmaxnreg.%s.sync.aligned.u32 %d;", inc ? "inc" : "dec", regs);
    asm_plain(c, text);
}

/* "=f,=f,...,<inputs>,0,1,...,~{memory}": n outputs tied to the last n inputs */
static size_t tied_constraints(char *buf, size_t cap, int n, const char *inputs)
{
    size_t len = 0;
    for (int i = 0; i < n; i++) len += (size_t)snprintf(buf + len, cap - len, "=f,");
    len += (size_t)snprintf(buf + len, cap - len, "%s", inputs);
    for (int i = 0; i < n; i++) len += (size_t)snprintf(buf + len, cap - len, "%s%d", len && buf[len - 1] != ',' ? "," : "", i);
    len += (size_t)snprintf(buf + len, cap - len, ",~{memory}");
    return len;
}

static void take_results(Cg *c, LLVMValueRef r, LLVMValueRef *acc, int n)
{
    for (int i = 0; i < n; i++) acc[i] = n == 1 ? r : LLVMBuildExtractValue(c->b, r, (unsigned)i, "");
}

static LLVMTypeRef f32_struct(Cg *c, int n)
{
    LLVMTypeRef fs[128];
    for (int i = 0; i < n; i++) fs[i] = c->tf32;
    return n == 1 ? c->tf32 : LLVMStructTypeInContext(c->ctx, fs, (unsigned)n, 0);
}

void ptx_wgmma_wait(Cg *c, int pending, LLVMValueRef *acc, int n)
{
    char text[64], cons[1200];
    snprintf(text, sizeof text, "wgmma.wait_group.sync.aligned %d;", pending);
    tied_constraints(cons, sizeof cons, n, "");
    LLVMValueRef r = asm_call(c, text, cons, f32_struct(c, n), acc, n);
    take_results(c, r, acc, n);
}

/* One wgmma.mma_async whose A is na inputs (one descriptor, or four
 * registers), then B's descriptor and scale-d, then the tied accumulators. */
static void wgmma_mma(Cg *c, int n, bool bf16, const LLVMValueRef *a, int na, bool a_mn_major, LLVMValueRef db, bool b_mn_major,
                      bool accumulate, LLVMValueRef *acc)
{
    int nacc = n / 2;
    char text[2000], cons[1200], inputs[40] = "";
    size_t len = (size_t)snprintf(text, sizeof text,
                                  "{\n.reg .pred p;\nsetp.ne.b32 p, $%d, 0;\nwgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {",
                                  nacc + na + 1, n, bf16 ? "bf16" : "f16", bf16 ? "bf16" : "f16");
    for (int i = 0; i < nacc; i++) len += (size_t)snprintf(text + len, sizeof text - len, "%s$%d", i ? ", " : "", i);
    if (na == 1) {
        /* A from a descriptor: K-major (imm-trans-a 0) or M-major (1) */
        snprintf(text + len, sizeof text - len, "}, $%d, $%d, p, 1, 1, %d, %d;\n}", nacc, nacc + 1, a_mn_major ? 1 : 0,
                 b_mn_major ? 1 : 0);
        strcpy(inputs, "l,l,r,");
    } else {
        /* A from registers: no transpose operand for A */
        snprintf(text + len, sizeof text - len, "}, {$%d, $%d, $%d, $%d}, $%d, p, 1, 1, %d;\n}", nacc, nacc + 1, nacc + 2, nacc + 3,
                 nacc + 4, b_mn_major ? 1 : 0);
        strcpy(inputs, "r,r,r,r,l,r,");
    }
    tied_constraints(cons, sizeof cons, nacc, inputs);
    LLVMValueRef args[6 + 128];
    int k = 0;
    for (int i = 0; i < na; i++) args[k++] = a[i];
    args[k++] = db;
    args[k++] = i32c(c, accumulate);   /* scale-d: D = A B + D, or D = A B */
    for (int i = 0; i < nacc; i++) args[k++] = acc[i];
    LLVMValueRef r = asm_call(c, text, cons, f32_struct(c, nacc), args, k);
    take_results(c, r, acc, nacc);
}

void ptx_wgmma_mma(Cg *c, int n, bool bf16, LLVMValueRef da, bool a_mn_major, LLVMValueRef db, bool b_mn_major, bool accumulate,
                   LLVMValueRef *acc)
{
    wgmma_mma(c, n, bf16, &da, 1, a_mn_major, db, b_mn_major, accumulate, acc);
}

void ptx_wgmma_mma_regs(Cg *c, int n, bool bf16, const LLVMValueRef a[4], LLVMValueRef db, bool b_mn_major, bool accumulate,
                        LLVMValueRef *acc)
{
    wgmma_mma(c, n, bf16, a, 4, false, db, b_mn_major, accumulate, acc);
}

/* The instruction text with regs[0..n) (i32 or f32, n <= 64) passed
 * through it, tied: LLVM sees them written by it. */
static void tied_regs_asm(Cg *c, const char *text, LLVMValueRef *regs, int n)
{
    char cons[800];
    size_t len = 0;
    LLVMTypeRef ts[64];
    for (int i = 0; i < n; i++) {
        ts[i] = LLVMTypeOf(regs[i]);
        len += (size_t)snprintf(cons + len, sizeof cons - len, ts[i] == c->tf32 ? "=f," : "=r,");
    }
    for (int i = 0; i < n; i++) len += (size_t)snprintf(cons + len, sizeof cons - len, "%d,", i);
    snprintf(cons + len, sizeof cons - len, "~{memory}");
    LLVMTypeRef ret = n == 1 ? ts[0] : LLVMStructTypeInContext(c->ctx, ts, (unsigned)n, 0);
    LLVMValueRef r = asm_call(c, text, cons, ret, regs, n);
    for (int i = 0; i < n; i++) regs[i] = n == 1 ? r : LLVMBuildExtractValue(c->b, r, (unsigned)i, "");
}

void ptx_wgmma_fence_regs(Cg *c, LLVMValueRef *regs, int n) { tied_regs_asm(c, "wgmma.fence.sync.aligned;", regs, n); }

void ptx_wgmma_wait_regs(Cg *c, int pending, LLVMValueRef *regs, int n)
{
    char text[64];
    snprintf(text, sizeof text, "wgmma.wait_group.sync.aligned %d;", pending);
    for (int i = 0; i < n || i == 0; i += 64) {
        if (!n) {
            asm_plain(c, text);
            break;
        }
        tied_regs_asm(c, text, regs + i, n - i < 64 ? n - i : 64);
    }
}

LLVMValueRef ptx_shared_address(Cg *c, LLVMValueRef ptr3) { return LLVMBuildPtrToInt(c->b, ptr3, c->ti32, ""); }

void ptx_fence_cta(Cg *c) { asm_plain(c, "fence.acq_rel.cta;"); }

void ptx_fence_mbarrier_init(Cg *c) { asm_plain(c, "fence.mbarrier_init.release.cluster;"); }

void ptx_mbarrier_expect_tx(Cg *c, LLVMValueRef bar, LLVMValueRef bytes)
{
    LLVMValueRef args[2] = {bar, bytes};
    asm_call(c, "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [$0], $1;", "r,r,~{memory}", c->tvoid, args, 2);
}

void ptx_red_add_f32(Cg *c, LLVMValueRef addr, const LLVMValueRef *v, int n)
{
    LLVMValueRef args[5] = {addr};
    for (int i = 0; i < n; i++) args[1 + i] = v[i];
    asm_call(c, n == 4 ? "red.global.add.v4.f32 [$0], {$1, $2, $3, $4};" : "red.global.add.v2.f32 [$0], {$1, $2};",
             n == 4 ? "l,f,f,f,f,~{memory}" : "l,f,f,~{memory}", c->tvoid, args, n + 1);
}

void ptx_bulk_add_f32(Cg *c, LLVMValueRef global_at, LLVMValueRef shared_at, int bytes)
{
    char text[200];
    snprintf(text, sizeof text,
             "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], %d;\ncp.async.bulk.commit_group;", bytes);
    LLVMValueRef args[2] = {global_at, shared_at};
    asm_call(c, text, "l,r,~{memory}", c->tvoid, args, 2);
}

void ptx_bulk_tensor_add_f32(Cg *c, LLVMValueRef map, LLVMValueRef x, LLVMValueRef y, LLVMValueRef src)
{
    LLVMValueRef args[4] = {map, x, y, src};
    asm_call(c, "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [$0, {$1, $2}], [$3];\ncp.async.bulk.commit_group;",
             "l,r,r,r,~{memory}", c->tvoid, args, 4);
}

void ptx_bulk_wait_reads(Cg *c) { asm_plain(c, "cp.async.bulk.wait_group.read 0;"); }

void ptx_bulk_drain(Cg *c) { asm_plain(c, "cp.async.bulk.wait_group 0;"); }

void ptx_barrier_arrive(Cg *c, LLVMValueRef id, int count)
{
    LLVMValueRef args[2] = {id, i32c(c, count)};
    asm_call(c, "bar.arrive $0, $1;", "r,r,~{memory}", c->tvoid, args, 2);
}

LLVMValueRef ptx_mbarrier_try_wait(Cg *c, LLVMValueRef bar, LLVMValueRef parity)
{
    LLVMValueRef args[2] = {bar, parity};
    LLVMValueRef r = asm_call(c, "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\nselp.b32 $0, 1, 0, p;\n}",
                              "=r,r,r,~{memory}", c->ti32, args, 2);
    return LLVMBuildICmp(c->b, LLVMIntNE, r, i32c(c, 0), "");
}

void ptx_mbarrier_wait(Cg *c, const char *name, LLVMValueRef bar, LLVMValueRef parity)
{
    LLVMBasicBlockRef spin = new_bb(c, name), done = new_bb(c, "mbseen");
    LLVMBuildBr(c->b, spin);
    LLVMPositionBuilderAtEnd(c->b, spin);
    LLVMBuildCondBr(c->b, ptx_mbarrier_try_wait(c, bar, parity), done, spin);
    LLVMPositionBuilderAtEnd(c->b, done);
}

void ptx_bulk_tensor_load(Cg *c, LLVMValueRef dst, LLVMValueRef map, LLVMValueRef x, LLVMValueRef y, LLVMValueRef bar)
{
    LLVMValueRef args[5] = {dst, map, x, y, bar};
    asm_call(c, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3}], [$4];",
             "r,l,r,r,r,~{memory}", c->tvoid, args, 5);
}

void ptx_bulk_load(Cg *c, LLVMValueRef dst, LLVMValueRef src, int bytes, LLVMValueRef bar)
{
    char text[160];
    snprintf(text, sizeof text, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], %d, [$2];", bytes);
    LLVMValueRef args[3] = {dst, src, bar};
    asm_call(c, text, "r,l,r,~{memory}", c->tvoid, args, 3);
}

void ptx_mma_f8(Cg *c, bool a_e5m2, bool b_e5m2, const LLVMValueRef a[4], const LLVMValueRef b[2], LLVMValueRef *acc)
{
    char text[200], cons[200];
    snprintf(text, sizeof text,
             "mma.sync.aligned.m16n8k32.row.col.f32.%s.%s.f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};",
             a_e5m2 ? "e5m2" : "e4m3", b_e5m2 ? "e5m2" : "e4m3");
    tied_constraints(cons, sizeof cons, 4, "r,r,r,r,r,r");
    LLVMValueRef args[10];
    for (int i = 0; i < 4; i++) args[i] = a[i];
    for (int i = 0; i < 2; i++) args[4 + i] = b[i];
    for (int i = 0; i < 4; i++) args[6 + i] = acc[i];
    LLVMValueRef r = asm_call(c, text, cons, f32_struct(c, 4), args, 10);
    take_results(c, r, acc, 4);
}
