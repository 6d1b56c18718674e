"""Attention forward over PyTorch's [B, H, N, D] tensors, without copies.

FlashAttention-2's forward pass in fp16 with fp32 softmax state, reading
rank-4 tensors through their strides: a block takes BM queries of one batch
z and head h, `Q[z, h, m0:+BM, :]`, and walks the keys BN at a time. The
tensors may be views: K and V given as `k.transpose(1, 2)` of the
[B, N, H, D] tensors a projection writes, O written straight into a
[B, N, H, D] tensor (`O[z, m0:+BM, h, :]`), so no layout is copied before or
after. `attn_bhnd_kt` takes the keys as a [B, H, D, N] view instead
(`k.transpose(2, 3)` of a [B, H, N, D] tensor: the last stride is D, not 1),
each block of keys a [D, BN] tile for `ph.dot`. N need not be a multiple of
the blocks: queries past N read zeros and are not written, keys past N are
masked out of the softmax.

examples/attention_bhnd/attention_bhnd_check.c checks both against a
reference in double, causal and not, in the interpreter (CI) and on the GPU
(PHOBOS_TARGET=gpu, make gpucheck); tests/python/test_strided.py runs it
from torch views.
"""

import phobos.lang as ph


@ph.kernel
@ph.tensorcore
@ph.autotune(D=[64], BM=[64], BN=[32, 64])
def attn_bhnd(Q: ph.tensor[ph.f16][B, H, N, D], K: ph.tensor[ph.f16][B, H, N, D], V: ph.tensor[ph.f16][B, H, N, D],
              O: ph.tensor[ph.f16][B, N, H, D], scale: ph.f32, causal: ph.i32):
    m0: ph.let = ph.ctx.block.x * BM
    h: ph.let = ph.ctx.block.y
    z: ph.let = ph.ctx.block.z
    q: ph.let = Q[z, h, m0:+BM, :]
    acc: ph.var[ph.tile[ph.f32][BM, D]] = 0.0
    m: ph.var[ph.tile[ph.f32][BM, 1]] = -1.0e30
    l: ph.var[ph.tile[ph.f32][BM, 1]] = 0.0
    end: ph.let = ph.where(causal == 1, ph.min(m0 + BM, N), N)
    for n0 in range(0, end, BN):
        k: ph.let = K[z, h, n0:+BN, :]
        v: ph.let = V[z, h, n0:+BN, :]
        s: ph.var[ph.tile[ph.f32][BM, BN]] = ph.dot_t(q, k) * scale
        s = ph.where(n0 + ph.iota(1) < N, s, -1.0e30)
        if causal == 1:
            s = ph.where(n0 + ph.iota(1) <= m0 + ph.iota(0), s, -1.0e30)
        ph.online_softmax(acc, m, l, s, v)
    O[z, m0:+BM, h, :] = acc / l


@ph.kernel
@ph.tensorcore
@ph.autotune(D=[64], BM=[64], BN=[32])
def attn_bhnd_kt(Q: ph.tensor[ph.f16][B, H, N, D], KT: ph.tensor[ph.f16][B, H, D, N], V: ph.tensor[ph.f16][B, H, N, D],
                 O: ph.tensor[ph.f16][B, H, N, D], scale: ph.f32):
    m0: ph.let = ph.ctx.block.x * BM
    h: ph.let = ph.ctx.block.y
    z: ph.let = ph.ctx.block.z
    q: ph.let = Q[z, h, m0:+BM, :]
    acc: ph.var[ph.tile[ph.f32][BM, D]] = 0.0
    m: ph.var[ph.tile[ph.f32][BM, 1]] = -1.0e30
    l: ph.var[ph.tile[ph.f32][BM, 1]] = 0.0
    for n0 in range(0, N, BN):
        s: ph.var[ph.tile[ph.f32][BM, BN]] = ph.dot(q, KT[z, h, :, n0:+BN]) * scale
        s = ph.where(n0 + ph.iota(1) < N, s, -1.0e30)
        ph.online_softmax(acc, m, l, s, V[z, h, n0:+BN, :])
    O[z, h, m0:+BM, :] = acc / l
