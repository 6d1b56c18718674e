# A max or min over elements that are all NaN is NaN (NaN operands are
# ignored, so only an all-NaN set gives NaN): the interpreter starts from
# the first element, and the GPU's reductions started from -inf and +inf,
# giving -inf and +inf; they now start from NaN, which max and min ignore.
# Rows 0..3 of t are NaN, the others finite.
# run: grid 2 1 1 M=20 N=24 K=1 n=4 s=0.5
import phobos.lang as ph


@ph.kernel
@ph.autotune(BM=[16], BN=[24])
def fuzz(X: ph.tensor[ph.f32][M, N], Ymax: ph.tensor[ph.f32][M, 1], Ymin: ph.tensor[ph.f32][M, 1], Ycol: ph.tensor[ph.f32][1, N], n: ph.i32, s: ph.f32):
    r0: ph.let = ph.ctx.block.x * BM
    x: ph.let = X[r0:+BM, 0:+BN]
    zero: ph.let = ph.where((r0 + ph.iota(0, BM)) < n, x * 0.0, 1.0)
    t: ph.let = ph.where((r0 + ph.iota(0, BM)) < n, zero / zero, x)
    Ymax[r0:+BM, 0:+1] = ph.rowmax(t)
    Ymin[r0:+BM, 0:+1] = ph.rowmin(t)
    if ph.ctx.block.x == 0:
        Ycol[0:+1, 0:+BN] = ph.colmax(ph.where((ph.iota(0, BM) < BM), zero / zero, x))
