/* scalarops.h: the meaning of every scalar (elementwise) op on one value,
 * the reference that the interpreter and the fold pass both compute with,
 * so the two cannot drift; the code generator emits the same meaning as
 * LLVM IR (compiler/codegen/cg_scalar.c: scalar_binop, scalar_unop,
 * scalar_cmp, cg_convert).
 * docs/language.md ("Scalar semantics") states it for users.
 *
 * Numbers travel as i32 (int32_t), f32 (float; f16 and bf16 values are
 * held widened, already rounded to their dtype) and bool (0 or 1). */
#ifndef PHC_SCALAROPS_H
#define PHC_SCALAROPS_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"

/* i32: + - * wrap; // and % floor like Python, x // 0 and x % 0 give 0,
 * INT32_MIN // -1 wraps to INT32_MIN (and % gives 0); max, min. */
int32_t sop_i32_binary(IrBinop op, int32_t a, int32_t b);
/* i32: - wraps (-INT32_MIN is INT32_MIN), abs likewise. */
int32_t sop_i32_unary(IrUnop op, int32_t a);

/* i64: the same meaning in 64 bits: + - * wrap; // and % floor, x // 0
 * and x % 0 give 0, INT64_MIN // -1 wraps to INT64_MIN (and % gives 0);
 * max, min; - and abs wrap. */
int64_t sop_i64_binary(IrBinop op, int64_t a, int64_t b);
int64_t sop_i64_unary(IrUnop op, int64_t a);

/* floats, computed in f32 and rounded once to dt (f16, bf16 or f32):
 * IEEE + - * /; // and % as Python's (floormod.h); max and min ignore
 * a NaN operand (NaN only when both are) and order -0 below +0; pow as
 * C's (its special values), computed in double and rounded once. */
float sop_float_binary(IrBinop op, DType dt, float a, float b);
/* - abs exp exp2 log log2 sqrt rsqrt as C's (IEEE special values), rounded
 * to dt; tanh, erf and sigmoid (1 / (1 + exp(-a))) computed in double and
 * rounded once. */
float sop_float_unary(IrUnop op, DType dt, float a);
/* a * b + c rounded once in f32 (C's fmaf), then to dt. */
float sop_float_fma(DType dt, float a, float b, float c);

/* bool: and, or; not. */
bool sop_bool_binary(IrBinop op, bool a, bool b);

/* Comparisons: a NaN operand makes all false but !=; on bools false < true. */
bool sop_compare_i32(IrCmp op, int32_t a, int32_t b);
bool sop_compare_float(IrCmp op, float a, float b);
bool sop_compare_i64(IrCmp op, int64_t a, int64_t b);

/* Conversions. A float to i32 truncates toward zero, saturating at
 * INT32_MIN and INT32_MAX, NaN giving 0; an i32 to a float rounds to
 * nearest even in f32, then (f16, bf16) again to dt; a float to another
 * float rounds to nearest even; anything to bool is != 0 (NaN is true). */
int32_t sop_float_to_i32(float x);
/* The integer dtypes (i32, i8, u8): an integer to one of them wraps
 * modulo 2^bits, as C's conversions to int8_t and uint8_t do on every
 * machine we target; a float truncates toward zero and saturates at the
 * dtype's range, NaN giving 0 (PTX's cvt.rzi.sat, LLVM's fptosi.sat).
 * i8 and u8 values travel as int32_t, within their range. */
int32_t sop_wrap_int(DType dt, int64_t x);
int32_t sop_float_to_int(DType dt, float x);
float sop_i32_to_float(DType dt, int32_t x);
/* i64: a float truncates toward zero, saturating at INT64_MIN and
 * INT64_MAX, NaN giving 0 (cvt.rzi.s64.f32, llvm.fptosi.sat.i64); an
 * integer widens by its sign (u8 and bool by zero); an i64 to a float
 * rounds to nearest even in f32 once (then, f16 and bf16, again to dt,
 * as from i32); to i32, i8 or u8 it wraps (sop_wrap_int). */
int64_t sop_float_to_i64(float x);
float sop_i64_to_float(DType dt, int64_t x);
float sop_round(DType dt, float x);

#endif
