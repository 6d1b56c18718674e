/* cg_scalar.c: scalar arithmetic, one element of any dtype.
 *
 * Expects: operands already in their dtype's LLVM type.
 * Guarantees: the interpreter's semantics (compiler/ir/interp.c): f16 and bf16
 * compute in f32 and round once; Python's float // and % are exact, step
 * for step as compiler/base/floormod.c. */
#include "target.h"

#include <math.h>

/* ---- Python's float // and %: compiler/base/floormod.c, step for step ---- */

static LLVMValueRef f64_call1(Cg *c, LLVMBuilderRef B, const char *name, LLVMValueRef x)
{
    return cg_call_at(c, B, name, c->tf64, 1, &c->tf64, &x);
}

static LLVMValueRef f64_copysign(Cg *c, LLVMBuilderRef B, LLVMValueRef mag, LLVMValueRef sign)
{
    LLVMTypeRef t2[2] = {c->tf64, c->tf64};
    LLVMValueRef a2[2] = {mag, sign};
    return cg_call_at(c, B, "llvm.copysign.f64", c->tf64, 2, t2, a2);
}

/* The exponent field of a positive double. */
static LLVMValueRef f64_exponent(Cg *c, LLVMBuilderRef B, LLVMValueRef v)
{
    return LLVMBuildLShr(B, LLVMBuildBitCast(B, v, c->ti64, ""), LLVMConstInt(c->ti64, 52, 0), "");
}

/* phc.fmod.f64(x, y): C's fmod of two f32 values widened to double,
 * exactly, for every x and y (the GPU has no fmod instruction). With
 * r = |x| and the divisor s = |y| 2^k scaled so that r / s < 2^29, the
 * quotient q = trunc(r / s) has at most 29 bits and s at most 24, so
 * q s is exact in double and so is r - q s (it is below s, a multiple of
 * s's last bit): r becomes r mod s, again a 24-bit number. The trunc is
 * never one too many: r and s are multiples of s's last bit 2^e, so an
 * r / s below an integer n is below it by more than 2^e / s > 2^-24,
 * while the rounding of a quotient below 2^29 moves it by at most 2^-25.
 * s is a multiple of |y|, so repeating with k = 0 at the end gives
 * r mod |y|; each step takes at least 27 bits off r's exponent, so an f32
 * quotient (below 2^277) takes at most 11. fmod(x, inf) is x; inf or NaN
 * operands and a zero divisor give NaN. */
static LLVMValueRef exact_fmod_fn(Cg *c)
{
    static const char name[] = "phc.fmod.f64";   /* a dot: no kernel can take the name */
    LLVMValueRef fn = LLVMGetNamedFunction(c->mod, name);
    if (fn) return fn;
    LLVMTypeRef td = c->tf64, pt[2] = {td, td};
    fn = LLVMAddFunction(c->mod, name, LLVMFunctionType(td, pt, 2, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    LLVMBuilderRef B = LLVMCreateBuilderInContext(c->ctx);
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c->ctx, fn, "entry");
    LLVMBasicBlockRef nan = LLVMAppendBasicBlockInContext(c->ctx, fn, "nan");
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(c->ctx, fn, "loop");
    LLVMBasicBlockRef step = LLVMAppendBasicBlockInContext(c->ctx, fn, "step");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, fn, "done");
    LLVMValueRef x = LLVMGetParam(fn, 0), y = LLVMGetParam(fn, 1);

    LLVMPositionBuilderAtEnd(B, entry);
    LLVMValueRef ax = f64_call1(c, B, "llvm.fabs.f64", x), ay = f64_call1(c, B, "llvm.fabs.f64", y);
    LLVMValueRef finite_x = LLVMBuildFCmp(B, LLVMRealOLT, ax, LLVMConstReal(td, INFINITY), "");
    LLVMValueRef nonzero_y = LLVMBuildFCmp(B, LLVMRealOGT, ay, LLVMConstReal(td, 0), "");   /* false for NaN */
    LLVMBuildCondBr(B, LLVMBuildAnd(B, finite_x, nonzero_y, ""), loop, nan);

    LLVMPositionBuilderAtEnd(B, nan);
    LLVMBuildRet(B, LLVMConstReal(td, NAN));

    LLVMPositionBuilderAtEnd(B, loop);
    LLVMValueRef r = LLVMBuildPhi(B, td, "r");
    LLVMBuildCondBr(B, LLVMBuildFCmp(B, LLVMRealOGE, r, ay, ""), step, done);

    LLVMPositionBuilderAtEnd(B, step);
    LLVMValueRef k = LLVMBuildSub(B, LLVMBuildSub(B, f64_exponent(c, B, r), f64_exponent(c, B, ay), ""),
                                  LLVMConstInt(c->ti64, 28, 0), "");
    k = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, k, LLVMConstInt(c->ti64, 0, 0), ""), LLVMConstInt(c->ti64, 0, 0), k, "");
    LLVMValueRef sbits = LLVMBuildAdd(B, LLVMBuildBitCast(B, ay, c->ti64, ""), LLVMBuildShl(B, k, LLVMConstInt(c->ti64, 52, 0), ""), "");
    LLVMValueRef sdiv = LLVMBuildBitCast(B, sbits, td, "");
    LLVMValueRef q = f64_call1(c, B, "llvm.trunc.f64", LLVMBuildFDiv(B, r, sdiv, ""));
    LLVMValueRef r2 = LLVMBuildFSub(B, r, LLVMBuildFMul(B, q, sdiv, ""), "");
    LLVMBuildBr(B, loop);

    LLVMValueRef in_v[2] = {ax, r2};
    LLVMBasicBlockRef in_b[2] = {entry, step};
    LLVMAddIncoming(r, in_v, in_b, 2);

    LLVMPositionBuilderAtEnd(B, done);
    LLVMBuildRet(B, f64_copysign(c, B, r, x));
    LLVMDisposeBuilder(B);
    return fn;
}

/* x // y (quot) or x % y on f32 values: CPython's float_divmod in double,
 * rounded once to f32, a NaN result made the quiet NaN, a zero divisor
 * giving x / y and NaN, exactly as floormod.c. No step multiplies and
 * adds, so there is nothing to contract into an FMA. */
static LLVMValueRef floor_divmod(Cg *c, LLVMValueRef x32, LLVMValueRef y32, bool quot)
{
    LLVMBuilderRef B = c->b;
    LLVMTypeRef td = c->tf64, pt[2] = {td, td};
    LLVMValueRef zero = LLVMConstReal(td, 0), one = LLVMConstReal(td, 1);
    LLVMValueRef x = LLVMBuildFPExt(B, x32, td, ""), y = LLVMBuildFPExt(B, y32, td, "");
    LLVMValueRef xy[2] = {x, y};
    LLVMValueRef fm = exact_fmod_fn(c);
    LLVMValueRef mod0 = LLVMBuildCall2(B, LLVMFunctionType(td, pt, 2, 0), fm, xy, 2, "");
    LLVMValueRef div0 = LLVMBuildFDiv(B, LLVMBuildFSub(B, x, mod0, ""), y, "");
    LLVMValueRef nonzero = LLVMBuildFCmp(B, LLVMRealUNE, mod0, zero, "");   /* C's mod != 0: true for NaN */
    LLVMValueRef signs_differ = LLVMBuildXor(B, LLVMBuildFCmp(B, LLVMRealOLT, y, zero, ""),
                                             LLVMBuildFCmp(B, LLVMRealOLT, mod0, zero, ""), "");
    LLVMValueRef flip = LLVMBuildAnd(B, nonzero, signs_differ, "");
    LLVMValueRef mod = LLVMBuildSelect(B, flip, LLVMBuildFAdd(B, mod0, y, ""),
                                       LLVMBuildSelect(B, nonzero, mod0, f64_copysign(c, B, zero, y), ""), "");
    LLVMValueRef div = LLVMBuildSelect(B, flip, LLVMBuildFSub(B, div0, one, ""), div0, "");
    LLVMValueRef fl = f64_call1(c, B, "llvm.floor.f64", div);
    LLVMValueRef up = LLVMBuildFCmp(B, LLVMRealOGT, LLVMBuildFSub(B, div, fl, ""), LLVMConstReal(td, 0.5), "");
    LLVMValueRef snapped = LLVMBuildSelect(B, up, LLVMBuildFAdd(B, fl, one, ""), fl, "");
    LLVMValueRef ratio = LLVMBuildFDiv(B, x, y, "");
    LLVMValueRef q = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealUNE, div, zero, ""), snapped,
                                     f64_copysign(c, B, zero, ratio), "");
    LLVMValueRef by_zero = LLVMBuildFCmp(B, LLVMRealOEQ, y, zero, "");
    LLVMValueRef r = quot ? LLVMBuildSelect(B, by_zero, ratio, q, "")
                          : LLVMBuildSelect(B, by_zero, LLVMConstReal(td, NAN), mod, "");
    LLVMValueRef r32 = LLVMBuildFPTrunc(B, r, c->tf32, "");
    return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealUNO, r32, r32, ""), f32c(c, NAN), r32, "");
}

/* ---- scalar arithmetic: one element, any dtype ----
 * Each op means what the reference table says (scalarops.c, which the
 * interpreter and the fold pass compute with); where C or LLVM leave an
 * edge open (a zero divisor, INT32_MIN // -1, the sign of max(-0, +0)),
 * the code below closes it the same way. tests/test_scalarops.c holds all
 * three to the documented results. */

/* Python's floor division or modulo on i32 or i64 (scalarops.c,
 * floor_divmod_i32 and _i64): a zero divisor gives 0; a divisor of -1
 * gives -a (wrapping) and 0, since sdiv INT_MIN, -1 is undefined in LLVM
 * (the host traps on it). */
static LLVMValueRef int_floor_divmod(Cg *c, LLVMValueRef a, LLVMValueRef b, bool quot)
{
    LLVMBuilderRef B = c->b;
    LLVMTypeRef ty = LLVMTypeOf(a);
    LLVMValueRef zero = LLVMConstInt(ty, 0, 1), one = LLVMConstInt(ty, 1, 1);
    LLVMValueRef bz = LLVMBuildICmp(B, LLVMIntEQ, b, zero, "");
    LLVMValueRef bm1 = LLVMBuildICmp(B, LLVMIntEQ, b, LLVMConstInt(ty, (unsigned long long)-1, 1), "");
    LLVMValueRef bs = LLVMBuildSelect(B, LLVMBuildOr(B, bz, bm1, ""), one, b, "");
    LLVMValueRef q = LLVMBuildSDiv(B, a, bs, ""), r = LLVMBuildSRem(B, a, bs, "");
    LLVMValueRef adjust = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, r, zero, ""),
        LLVMBuildICmp(B, LLVMIntNE, LLVMBuildICmp(B, LLVMIntSLT, r, zero, ""),
                      LLVMBuildICmp(B, LLVMIntSLT, bs, zero, ""), ""), "");
    LLVMValueRef out = quot ? LLVMBuildSelect(B, adjust, LLVMBuildSub(B, q, one, ""), q, "")
                            : LLVMBuildSelect(B, adjust, LLVMBuildAdd(B, r, bs, ""), r, "");
    out = LLVMBuildSelect(B, bm1, quot ? LLVMBuildSub(B, zero, a, "") : zero, out, "");
    return LLVMBuildSelect(B, bz, zero, out, "");
}

/* max or min ignoring a NaN operand with -0 ordered below +0 (scalarops.c,
 * max_number: IEEE 754-2019 maximumNumber). llvm.maxnum leaves the zeros'
 * order open, but the NVPTX back end lowers it to PTX max.f32 (min.f32),
 * which the ISA defines as exactly this ("if values of both inputs are
 * 0.0, then +0.0 > -0.0"; a NaN operand gives the other), one FMNMX; and
 * LLVM folds constants the same way. So no compare, AND and select around
 * it, which in a row max were three quarters of the work. The CPU
 * executor runs llvm.maxnum as max.f32 does. */
static LLVMValueRef float_max_min(Cg *c, LLVMValueRef x, LLVMValueRef y, bool max)
{
    LLVMTypeRef t2[2] = {c->tf32, c->tf32};
    LLVMValueRef xy[2] = {x, y};
    return cg_call(c, max ? "llvm.maxnum.f32" : "llvm.minnum.f32", c->tf32, 2, t2, xy);
}

/* An f32 multiply and the add or subtract it feeds may fuse into one
 * fma.rn.f32, rounded once, as nvcc (-fmad=true) and Triton do by default
 * (docs/language.md). f16 and bf16 values are rounded to their dtype
 * after each op, which keeps their products apart. */
static LLVMValueRef contractable(DType dt, LLVMValueRef inst)
{
    if (dt == DT_F32 && LLVMIsAInstruction(inst)) LLVMSetFastMathFlags(inst, LLVMFastMathAllowContract);
    return inst;
}

LLVMValueRef scalar_binop(Cg *c, IrBinop op, DType dt, LLVMValueRef a, LLVMValueRef b)
{
    LLVMBuilderRef B = c->b;
    if (dt == DT_BOOL) return op == BIN_AND ? LLVMBuildAnd(B, a, b, "") : LLVMBuildOr(B, a, b, "");
    if (dt == DT_I32 || dt == DT_I64) {
        switch (op) {
        case BIN_ADD: return LLVMBuildAdd(B, a, b, "");   /* no nsw: i32 and i64 wrap */
        case BIN_SUB: return LLVMBuildSub(B, a, b, "");
        case BIN_MUL: return LLVMBuildMul(B, a, b, "");
        case BIN_MAX: return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, a, b, ""), a, b, "");
        case BIN_MIN: return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a, b, ""), a, b, "");
        case BIN_FLOORDIV: case BIN_MOD: return int_floor_divmod(c, a, b, op == BIN_FLOORDIV);
        default: return LLVMConstInt(LLVMTypeOf(a), 0, 1);   /* the verifier allows no other op on integers */
        }
    }
    LLVMValueRef x = to_f32(c, a, dt), y = to_f32(c, b, dt), r;
    switch (op) {
    case BIN_ADD: r = contractable(dt, LLVMBuildFAdd(B, x, y, "")); break;
    case BIN_SUB: r = contractable(dt, LLVMBuildFSub(B, x, y, "")); break;
    case BIN_MUL: r = contractable(dt, LLVMBuildFMul(B, x, y, "")); break;
    case BIN_DIV: r = LLVMBuildFDiv(B, x, y, ""); break;
    case BIN_MAX: case BIN_MIN: r = float_max_min(c, x, y, op == BIN_MAX); break;
    case BIN_FLOORDIV: case BIN_MOD: r = floor_divmod(c, x, y, op == BIN_FLOORDIV); break;
    case BIN_POW: r = math_pow(c, x, y); break;
    default: r = x; break;
    }
    return from_f32(c, r, dt);
}

LLVMValueRef scalar_unop(Cg *c, IrUnop op, DType dt, LLVMValueRef a)
{
    LLVMBuilderRef B = c->b;
    if (op == UN_NOT) return LLVMBuildXor(B, a, LLVMConstInt(c->ti1, 1, 0), "");
    if (dt == DT_I32 || dt == DT_I64) {
        if (op == UN_NEG) return LLVMBuildNeg(B, a, "");
        if (op == UN_ABS)
            return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a, LLVMConstInt(LLVMTypeOf(a), 0, 1), ""), LLVMBuildNeg(B, a, ""), a, "");
        return a;
    }
    LLVMValueRef x = to_f32(c, a, dt), r;
    const TargetIsa *isa = c->target->isa;
    switch (op) {
    case UN_NEG: r = LLVMBuildFNeg(B, x, ""); break;
    /* the target's fast approximations (subnormal results flushed to zero, docs/language.md) */
    case UN_EXP: r = isa->exp2_fast(c, LLVMBuildFMul(B, x, f32c(c, 1.4426950408889634), "")); break;
    case UN_EXP2: r = isa->exp2_fast(c, x); break;
    case UN_LOG: r = LLVMBuildFMul(B, isa->log2_fast(c, x), f32c(c, 0.6931471805599453), ""); break;
    case UN_LOG2: r = isa->log2_fast(c, x); break;
    case UN_SQRT: r = call1f(c, "llvm.sqrt.f32", x); break;
    case UN_RSQRT: r = isa->rsqrt_fast(c, x); break;
    case UN_ABS: r = call1f(c, "llvm.fabs.f32", x); break;
    case UN_TANH: r = math_tanh(c, x); break;
    case UN_ERF: r = math_erf(c, x); break;
    case UN_SIGMOID: r = math_sigmoid(c, x); break;
    default: r = x; break;
    }
    return from_f32(c, r, dt);
}

LLVMValueRef scalar_fma(Cg *c, DType dt, LLVMValueRef a, LLVMValueRef b, LLVMValueRef d)
{
    return from_f32(c, math_fma(c, to_f32(c, a, dt), to_f32(c, b, dt), to_f32(c, d, dt)), dt);
}

LLVMValueRef scalar_cmp(Cg *c, IrCmp op, DType dt, LLVMValueRef a, LLVMValueRef b)
{
    if (dt == DT_I32 || dt == DT_I64) {
        static const LLVMIntPredicate ip[] = {LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE, LLVMIntEQ, LLVMIntNE};
        return LLVMBuildICmp(c->b, ip[op], a, b, "");
    }
    if (dt == DT_BOOL) {   /* false < true: to a signed compare an i1 true is -1 */
        static const LLVMIntPredicate up[] = {LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE, LLVMIntEQ, LLVMIntNE};
        return LLVMBuildICmp(c->b, up[op], a, b, "");
    }
    /* ordered predicates and an unordered !=: a NaN makes all false but != */
    static const LLVMRealPredicate fp[] = {LLVMRealOLT, LLVMRealOLE, LLVMRealOGT, LLVMRealOGE, LLVMRealOEQ, LLVMRealUNE};
    return LLVMBuildFCmp(c->b, fp[op], to_f32(c, a, dt), to_f32(c, b, dt), "");
}

/* Between integers: wraps to a narrower one, extends by the source's sign
 * to a wider one. From a float: truncates, saturating (NaN gives 0). */
static LLVMValueRef convert_to_int(Cg *c, LLVMValueRef v, DType from, DType to)
{
    LLVMTypeRef ty = dtype_ty(c, to);
    if (from == DT_BOOL || from == DT_U8) return LLVMBuildZExtOrBitCast(c->b, v, ty, "");
    if (ir_is_int(from)) return from == DT_I8 ? LLVMBuildSExtOrBitCast(c->b, v, ty, "") : LLVMBuildTrunc(c->b, v, ty, "");
    LLVMTypeRef t = c->tf32;
    LLVMValueRef x = to_f32(c, v, from);
    return cg_call(c, to == DT_U8 ? "llvm.fptoui.sat.i8.f32" : "llvm.fptosi.sat.i8.f32", ty, 1, &t, &x);
}

/* To i64: an integer extends by its sign (bool and u8 by zero), a float
 * truncates, saturating (NaN gives 0: cvt.rzi.s64.f32). From i64: an
 * integer wraps, bool is != 0, a float rounds once to f32 (then to dt). */
static LLVMValueRef convert_i64(Cg *c, LLVMValueRef v, DType from, DType to)
{
    if (to == DT_I64) {
        if (from == DT_BOOL || from == DT_U8) return LLVMBuildZExt(c->b, v, c->ti64, "");
        if (ir_is_int(from)) return LLVMBuildSExt(c->b, v, c->ti64, "");
        LLVMTypeRef t = c->tf32;
        LLVMValueRef x = to_f32(c, v, from);
        return cg_call(c, "llvm.fptosi.sat.i64.f32", c->ti64, 1, &t, &x);
    }
    if (to == DT_BOOL) return LLVMBuildICmp(c->b, LLVMIntNE, v, LLVMConstInt(c->ti64, 0, 0), "");
    if (ir_is_int(to)) return LLVMBuildTrunc(c->b, v, dtype_ty(c, to), "");
    return from_f32(c, to_f32(c, v, from), to);
}

LLVMValueRef cg_convert(Cg *c, LLVMValueRef v, DType from, DType to)
{
    if (from == to) return v;
    if (from == DT_I64 || to == DT_I64) return convert_i64(c, v, from, to);
    if (ir_is_f8(to)) return from_f32(c, to_f32(c, v, from), to);   /* an integer through f32, as the interpreter */
    bool int8 = from == DT_I8 || from == DT_U8;
    if (to == DT_I32 && int8) return convert_to_int(c, v, from, to);
    if (to == DT_I8 || to == DT_U8) return convert_to_int(c, v, from, to);
    if (to == DT_BOOL && int8) return LLVMBuildICmp(c->b, LLVMIntNE, v, LLVMConstInt(c->ti8, 0, 0), "");
    if (to == DT_I32) {
        if (from == DT_BOOL) return LLVMBuildZExt(c->b, v, c->ti32, "");
        LLVMTypeRef t = c->tf32;
        LLVMValueRef x = to_f32(c, v, from);
        return cg_call(c, "llvm.fptosi.sat.i32.f32", c->ti32, 1, &t, &x);
    }
    if (to == DT_BOOL) {
        if (from == DT_I32) return LLVMBuildICmp(c->b, LLVMIntNE, v, i32c(c, 0), "");
        return LLVMBuildFCmp(c->b, LLVMRealUNE, to_f32(c, v, from), f32c(c, 0), "");
    }
    LLVMValueRef x = to_f32(c, v, from);
    return to == DT_F32 ? x : LLVMBuildFPTrunc(c->b, x, dtype_ty(c, to), "");
}
