/* floormod.c: Python's float floor division and modulo (floormod.h).
 * The steps are CPython's float_divmod, kept in this order because the
 * code generator mirrors them one for one: any reordering would change
 * a rounding somewhere and the GPU would no longer match. */
#include "floormod.h"

#include <math.h>

static void divmod(double a, double b, double *quot, double *rem)
{
    if (b == 0) {
        *quot = a / b;
        *rem = NAN;
        return;
    }
    double mod = fmod(a, b);
    /* a - mod is a multiple of b, but rounded: div is near an integer, not on one */
    double div = (a - mod) / b;
    if (mod != 0) {
        if ((b < 0) != (mod < 0)) {
            mod += b;
            div -= 1.0;
        }
    } else {
        mod = copysign(0.0, b);
    }
    if (div != 0) {
        double q = floor(div);
        *quot = div - q > 0.5 ? q + 1.0 : q;
    } else {
        *quot = copysign(0.0, a / b);
    }
    *rem = mod;
}

double floor_div_f64(double a, double b)
{
    double q, r;
    divmod(a, b, &q, &r);
    return q;
}

double floor_mod_f64(double a, double b)
{
    double q, r;
    divmod(a, b, &q, &r);
    return r;
}

static float canonical_f32(double v)
{
    return isnan(v) ? NAN : (float)v;
}

float floor_div_f32(float a, float b) { return canonical_f32(floor_div_f64(a, b)); }
float floor_mod_f32(float a, float b) { return canonical_f32(floor_mod_f64(a, b)); }
