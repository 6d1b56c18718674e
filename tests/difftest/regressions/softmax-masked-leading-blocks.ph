# Rows whose first key blocks are all masked with -1.0e30, the value m
# starts from: there mn is -1.0e30, p = exp(s - mn) is exp(0) = 1 for
# every masked key, and the first real score makes a = exp(m - mn) zero,
# which clears it. Row r keeps the keys from 8 + r on: rows 0..7 have no
# masked block, rows 8..23 one, rows 24..31 two. The expansion must
# subtract before it scales: exp2(s * log2e - mn * log2e), one fma per
# score once multiply-adds contract, is exact here in the interpreter,
# but on the GPU (and the CPU executor) the fused exponent of a masked
# key is the rounding error of -1.0e30 * log2e, about 1e22, so p is inf
# or 0 and O NaN in rows 8..31 (384 of 512 elements, checked).
# run: grid 2 1 1 M=32 start=8
import phobos.lang as ph


@ph.kernel
@ph.launch(128)
def masked_fma(S: ph.tensor[ph.f32][M, 64], V: ph.tensor[ph.f16][64, 16], O: ph.tensor[ph.f32][M, 16], start: ph.i32):
    r0: ph.let = ph.ctx.block.x * 16
    acc: ph.var[ph.tile[ph.f32][16, 16]] = 0.0
    m: ph.var[ph.tile[ph.f32][16, 1]] = -1.0e30
    l: ph.var[ph.tile[ph.f32][16, 1]] = 0.0
    for kt in range(0, 64, 16):
        s: ph.let = ph.where(kt + ph.iota(1) >= start + r0 + ph.iota(0), S[r0:+16, kt:+16], -1.0e30)
        ph.online_softmax(acc, m, l, s, V[kt:+16, :])
    O[r0:+16, :] = acc / l


@ph.kernel
@ph.tensorcore
@ph.launch(128)
def masked_mma(S: ph.tensor[ph.f32][M, 64], V: ph.tensor[ph.f16][64, 16], O: ph.tensor[ph.f32][M, 16], start: ph.i32):
    r0: ph.let = ph.ctx.block.x * 16
    acc: ph.var[ph.tile[ph.f32][16, 16]] = 0.0
    m: ph.var[ph.tile[ph.f32][16, 1]] = -1.0e30
    l: ph.var[ph.tile[ph.f32][16, 1]] = 0.0
    for kt in range(0, 64, 16):
        s: ph.let = ph.where(kt + ph.iota(1) >= start + r0 + ph.iota(0), S[r0:+16, kt:+16], -1.0e30)
        ph.online_softmax(acc, m, l, s, V[kt:+16, :])
    O[r0:+16, :] = acc / l
