"""The attention tutorial's four kernels with more configs for the
autotuner: head dim 128 beside 64, larger tiles, 256-thread blocks, and for
the forward pass 2 or 3 stages of K and V in flight, row blocks of 128 and
256 on two warpgroups and, at head dim 64, of 192 on three (FlashAttention-3's
tile with blocks of 128 or 192 keys; a second @ph.autotune product, since
it needs 384 threads), at head dim 128 blocks of 176 keys (FlashAttention-3's 128 x 176, a third product),
the last row block cut at N_CTX by masked stores and the keys at or past
N_CTX masked out of the scores (MASKED=1 tells the hosts that neither
block need divide N_CTX: examples/attention/attention_host.h), with or without a producer warpgroup issuing the
copies (W 1), whose consumers may take turns at the tensor cores (W 2:
FlashAttention-3's ping-pong, with each P V issued beside the next Q K^T),
its softmax in base 2 (log2(e) folded into the scale: one multiply a score
fewer; L turned back to base e for the backward);
dK/dV computes the
transposed scores S^T = K Q^T, as FlashAttention-2 does, so P^T and dS^T
are made in the layout the next dots read them in (their A operands, in
registers) and nothing is transposed. dQ has a kernel of its own, which
computes S and P again, with or without a producer warpgroup (W 1, the
H200's pick at head dim 128: 128 rows on two warpgroups). Adding each K/V
block's share of dQ into an f32 buffer with ph.atomic_add from the dK/dV
kernel instead is FlashAttention-2's way, bench/attention_fused.ph (on the
H200 1.07-1.21x this backward at head dim 64, 0.88-1.01x at 128:
docs/performance.md, "seventeenth"); bench/run.sh times both files and
tests/gpucheck.sh checks every config of each. At head
dim 128 some configs spill (phc --stats shows which): they stay, for the
autotuner to time and pass over, since the product cannot leave them out."""


from __future__ import annotations


import phobos.lang as ph




@ph.kernel
@ph.warp_specialize(W)
@ph.tensorcore
@ph.launch(NT)
@ph.stages(S)
@ph.autotune(D=[64, 128], BR=[128, 256], BC=[64, 128], NT=[256], S=[2, 3], W=[0, 1, 2], MASKED=[1])
@ph.autotune(D=[64], BR=[192], BC=[128, 192], NT=[384], S=[2, 3], W=[1, 2], MASKED=[1])
@ph.autotune(D=[128], BR=[128], BC=[176], NT=[256], S=[2], W=[1, 2], MASKED=[1])
@ph.autotune_key("causal")
def attn_fwd(Q: ph.tensor[ph.f16][R, D], K: ph.tensor[ph.f16][R, D], V: ph.tensor[ph.f16][R, D],
             O: ph.tensor[ph.f16][R, D], L: ph.tensor[ph.f32][R, 1], n_ctx: ph.i32, scale: ph.f32, causal: ph.i32):
    base: ph.let = ph.ctx.block.y * n_ctx
    q0: ph.let = ph.ctx.block.x * BR
    q: ph.let = Q[base + q0:+BR, :]
    acc: ph.var[ph.tile[ph.f32][BR, D]] = 0.0
    m: ph.var[ph.tile[ph.f32][BR, 1]] = -1.0e30
    l: ph.var[ph.tile[ph.f32][BR, 1]] = 0.0
    end: ph.let = ph.where(causal == 1, ph.min(q0 + BR, n_ctx), n_ctx)
    for kt in range(0, end, BC):
        k: ph.let = K[base + kt:+BC, :]
        v: ph.let = V[base + kt:+BC, :]
        s: ph.var[ph.tile[ph.f32][BR, BC]] = ph.dot_t(q, k)
        s = s * (scale * 1.4426950408889634)
        s = ph.where(kt + ph.iota(1) < n_ctx, s, -1.0e30)
        if causal == 1:
            s = ph.where(kt + ph.iota(1) <= q0 + ph.iota(0), s, -1.0e30)
        ph.online_softmax2(acc, m, l, s, v)
    rows: ph.let = q0 + ph.iota(0, BR) < n_ctx
    # `/` is IEEE: one reciprocal a row, where acc / l divides every element
    ph.store(O[base + q0:+BR, :], acc * (1.0 / l), mask=rows)
    ph.store(L[base + q0:+BR, 0:+1], (m + ph.log2(l)) * 0.6931471805599453, mask=rows)




@ph.kernel
@ph.autotune(D=[64, 128], BR=[64, 128])
def attn_bwd_delta(O: ph.tensor[ph.f16][R, D], DO: ph.tensor[ph.f16][R, D], Delta: ph.tensor[ph.f32][R, 1]):
    r0: ph.let = ph.ctx.block.x * BR
    p: ph.var[ph.tile[ph.f32][BR, D]] = ph.f32(O[r0:+BR, :]) * ph.f32(DO[r0:+BR, :])
    Delta[r0:+BR, 0:+1] = ph.rowsum(p)




@ph.kernel
@ph.tensorcore
@ph.launch(NT)
@ph.autotune(D=[64, 128], BR=[32, 64], BC=[64, 128], NT=[128, 256])
@ph.autotune_key("causal")
def attn_bwd_dkdv(Q: ph.tensor[ph.f16][R, D], K: ph.tensor[ph.f16][R, D], V: ph.tensor[ph.f16][R, D],
                  DO: ph.tensor[ph.f16][R, D], L: ph.tensor[ph.f32][R, 1], Delta: ph.tensor[ph.f32][R, 1],
                  DK: ph.tensor[ph.f16][R, D], DV: ph.tensor[ph.f16][R, D], n_ctx: ph.i32, scale: ph.f32, causal: ph.i32):
    base: ph.let = ph.ctx.block.y * n_ctx
    k0: ph.let = ph.ctx.block.x * BC
    k: ph.let = K[base + k0:+BC, :]
    v: ph.let = V[base + k0:+BC, :]
    dk: ph.var[ph.tile[ph.f32][BC, D]] = 0.0
    dv: ph.var[ph.tile[ph.f32][BC, D]] = 0.0
    start: ph.let = ph.where(causal == 1, k0 // BR * BR, 0)
    for qt in range(start, n_ctx, BR):
        q: ph.let = Q[base + qt:+BR, :]
        do: ph.let = DO[base + qt:+BR, :]
        st: ph.var[ph.tile[ph.f32][BC, BR]] = ph.dot_t(k, q)
        pt: ph.var[ph.tile[ph.f32][BC, BR]] = ph.exp(st * scale - ph.transpose(L[base + qt:+BR, 0:+1]))
        if causal == 1:
            pt = ph.where(k0 + ph.iota(0) <= qt + ph.iota(1), pt, 0.0)
        dv += ph.dot(pt, do)
        dpt: ph.var[ph.tile[ph.f32][BC, BR]] = ph.dot_t(v, do)
        dst: ph.var[ph.tile[ph.f32][BC, BR]] = pt * (dpt - ph.transpose(Delta[base + qt:+BR, 0:+1]))
        dk += ph.dot(dst, q)
    DK[base + k0:+BC, :] = dk * scale
    DV[base + k0:+BC, :] = dv




@ph.kernel
@ph.warp_specialize(W)
@ph.tensorcore
@ph.launch(NT)
@ph.autotune(D=[64, 128], BR=[64, 128], BC=[32, 64], NT=[128, 256], W=[0, 1])
@ph.autotune_key("causal")
def attn_bwd_dq(Q: ph.tensor[ph.f16][R, D], K: ph.tensor[ph.f16][R, D], V: ph.tensor[ph.f16][R, D],
                DO: ph.tensor[ph.f16][R, D], L: ph.tensor[ph.f32][R, 1], Delta: ph.tensor[ph.f32][R, 1],
                DQ: ph.tensor[ph.f16][R, D], n_ctx: ph.i32, scale: ph.f32, causal: ph.i32):
    base: ph.let = ph.ctx.block.y * n_ctx
    q0: ph.let = ph.ctx.block.x * BR
    q: ph.let = Q[base + q0:+BR, :]
    do: ph.let = DO[base + q0:+BR, :]
    dq: ph.var[ph.tile[ph.f32][BR, D]] = 0.0
    end: ph.let = ph.where(causal == 1, ph.min(q0 + BR, n_ctx), n_ctx)
    for kt in range(0, end, BC):
        k: ph.let = K[base + kt:+BC, :]
        v: ph.let = V[base + kt:+BC, :]
        s: ph.var[ph.tile[ph.f32][BR, BC]] = ph.dot_t(q, k)
        p: ph.var[ph.tile[ph.f32][BR, BC]] = ph.exp(s * scale - L[base + q0:+BR, 0:+1])
        if causal == 1:
            p = ph.where(kt + ph.iota(1) <= q0 + ph.iota(0), p, 0.0)
        dp: ph.var[ph.tile[ph.f32][BR, BC]] = ph.dot_t(do, v)
        ds: ph.var[ph.tile[ph.f32][BR, BC]] = p * (dp - Delta[base + q0:+BR, 0:+1])
        dq += ph.dot(ds, k)
    DQ[base + q0:+BR, :] = dq * scale
