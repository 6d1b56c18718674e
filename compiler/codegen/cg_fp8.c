/* cg_fp8.c: e4m3 and e5m2 to and from f32 in LLVM IR, held in i8.
 *
 * LLVM 19 has no fp8 type and no NVPTX intrinsic for cvt's fp8 forms, so
 * the conversions are built from integer and f32 operations, step by step
 * as base/half.h's ph_f32_to_f8 and ph_f8_to_f32 write them (the same
 * constants, the PhF8Format rows): the generated code gives the
 * interpreter's bits on every target, which the CPU executor checks
 * (test_scalarops, tests/gpu/types.ph). Their meaning is cvt.rn.satfinite's
 * (docs/language.md). */
#include "cg.h"
#include "base/half.h"

static PhF8Format format_of(DType dt) { return dt == DT_F8E4M3 ? ph_e4m3 : ph_e5m2; }

static LLVMValueRef u32c(Cg *c, uint32_t v) { return LLVMConstInt(c->ti32, v, 0); }
static LLVMValueRef bits_f32(Cg *c, LLVMValueRef v) { return LLVMBuildBitCast(c->b, v, c->tf32, ""); }

LLVMValueRef cg_f8_to_f32(Cg *c, LLVMValueRef v, DType dt)
{
    PhF8Format fm = format_of(dt);
    LLVMBuilderRef B = c->b;
    LLVMValueRef w = LLVMBuildZExt(B, v, c->ti32, "");
    LLVMValueRef a = LLVMBuildAnd(B, w, u32c(c, 0x7f), "");
    LLVMValueRef sign = LLVMBuildShl(B, LLVMBuildAnd(B, w, u32c(c, 0x80), ""), u32c(c, 24), "");
    /* normal: the fields moved into place, the bias changed */
    LLVMValueRef normal = LLVMBuildAdd(B, LLVMBuildShl(B, a, u32c(c, (uint32_t)(23 - fm.man)), ""),
                                       u32c(c, (uint32_t)(127 - fm.bias) << 23), "");
    /* zero or subnormal: a units of 2^(1 - bias - man), exact */
    LLVMValueRef sub = LLVMBuildFMul(B, LLVMBuildUIToFP(B, a, c->tf32, ""),
                                     bits_f32(c, u32c(c, (uint32_t)(127 - (fm.bias - 1 + fm.man)) << 23)), "");
    LLVMValueRef is_sub = LLVMBuildICmp(B, LLVMIntULT, a, u32c(c, 1u << fm.man), "");
    LLVMValueRef r = LLVMBuildSelect(B, is_sub, LLVMBuildBitCast(B, sub, c->ti32, ""), normal, "");
    r = LLVMBuildOr(B, r, sign, "");
    uint32_t top = fm.has_inf ? 0x7fu & ~((1u << fm.man) - 1) : 0x7fu;
    if (fm.has_inf) {
        LLVMValueRef inf = LLVMBuildOr(B, sign, u32c(c, 0x7f800000u), "");
        r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, a, u32c(c, top), ""), inf, r, "");
        r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntUGT, a, u32c(c, top), ""), u32c(c, 0x7fffffffu), r, "");
    } else {
        r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, a, u32c(c, top), ""), u32c(c, 0x7fffffffu), r, "");
    }
    return bits_f32(c, r);
}

LLVMValueRef cg_f32_to_f8(Cg *c, LLVMValueRef x, DType dt)
{
    PhF8Format fm = format_of(dt);
    LLVMBuilderRef B = c->b;
    LLVMValueRef u = LLVMBuildBitCast(B, x, c->ti32, "");
    LLVMValueRef a = LLVMBuildAnd(B, u, u32c(c, 0x7fffffffu), "");
    LLVMValueRef sign = LLVMBuildAnd(B, LLVMBuildLShr(B, u, u32c(c, 24), ""), u32c(c, 0x80), "");
    /* below the smallest normal: rounded in units of the smallest subnormal */
    LLVMValueRef v = LLVMBuildFMul(B, bits_f32(c, a), bits_f32(c, u32c(c, (uint32_t)(127 + fm.bias - 1 + fm.man) << 23)), "");
    LLVMTypeRef tf = c->tf32;
    LLVMValueRef sub = LLVMBuildFPToUI(B, cg_call(c, "llvm.rint.f32", c->tf32, 1, &tf, &v), c->ti32, "");
    /* normal: round the f32 mantissa to man bits, to nearest even, and rebias */
    uint32_t shift = (uint32_t)(23 - fm.man);
    LLVMValueRef odd = LLVMBuildAnd(B, LLVMBuildLShr(B, a, u32c(c, shift), ""), u32c(c, 1), "");
    LLVMValueRef r = LLVMBuildAdd(B, LLVMBuildAdd(B, a, u32c(c, (1u << (shift - 1)) - 1), ""), odd, "");
    LLVMValueRef normal = LLVMBuildSub(B, LLVMBuildLShr(B, r, u32c(c, shift), ""), u32c(c, (uint32_t)(127 - fm.bias) << fm.man), "");
    LLVMValueRef is_sub = LLVMBuildICmp(B, LLVMIntULT, a, u32c(c, (uint32_t)(128 - fm.bias) << 23), "");
    LLVMValueRef code = LLVMBuildSelect(B, is_sub, sub, normal, "");
    code = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntUGT, a, u32c(c, fm.sat_above), ""), u32c(c, fm.maxnorm), code, "");
    code = LLVMBuildOr(B, code, sign, "");
    code = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntUGT, a, u32c(c, 0x7f800000u), ""), u32c(c, 0x7f), code, "");
    return LLVMBuildTrunc(B, code, c->ti8, "");
}
