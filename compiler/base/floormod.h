/* floormod.h: Python's float `//` and `%`, one definition for the
 * interpreter, the fold pass and sema's literal arithmetic; the code
 * generator emits the same steps for the GPU (compiler/codegen/cg_scalar.c,
 * floor_divmod), so every side gives the same bits. */
#ifndef PHC_FLOORMOD_H
#define PHC_FLOORMOD_H

/* CPython's float_divmod on doubles: the remainder takes the divisor's
 * sign (a zero one too) and the quotient is snapped to the integer that
 * (a - mod) / b is nearest to. Python raises on a zero divisor; here
 * a // 0 is a / 0 (an infinity, or NaN) and a % 0 is NaN. */
double floor_div_f64(double a, double b);
double floor_mod_f64(double a, double b);

/* The same on f32 operands: computed in double (fmod of two f32 values is
 * exact there, as on the GPU), rounded once to f32; a NaN result is the
 * positive quiet NaN, whatever produced it. */
float floor_div_f32(float a, float b);
float floor_mod_f32(float a, float b);

#endif
