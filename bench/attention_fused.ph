"""The attention tutorial's kernels with FlashAttention-2's own backward:
the forward is bench/attention_tuned.ph's (its configs, its softmax in
base 2) with the softmax spelled out, so the scale goes into the
exponential's multiply-add (exp2(s c - m), the maximum taken of the raw
scores, which needs c > 0: 73 instructions fewer an iteration at head dim
128), persistent in its PERSISTENT=1 configs (docs/runtime.md), and in
its OCC=2 configs two blocks a multiprocessor, each a producer and one
consumer warpgroup of 64 rows, so one block's prologue and epilogue run
beside the other's loop (head dim 64's causal forward at N_CTX 1024 11-22%
faster on an H100, docs/performance.md "thirty-third"); the
dK/dV kernel adds each K/V block's share of dQ = dS K into an f32
buffer DQacc (ph.atomic_add) instead of a dQ kernel computing S and P
again: attn_bwd_delta zeroes DQacc beside Delta, attn_bwd_dq scales it into
f16 (examples/attention/attention_host.h runs either protocol). dK/dV's
row blocks of Q are 64 or 128 rows (128: the H200's pick at head dim 64,
5% faster, half the iterations; at 128 those configs spill and lose),
so every dot of its loop runs on wgmma on sm_90a (dQ's share split by
columns between two warpgroups), with or without a producer warp (W). bench/run.sh times it beside
bench/attention_tuned.ph (impl phc-fused) and bench/benchtable.py puts the
two backwards side by side: on the H200 this one is 1.07-1.21x as fast at
head dim 64 and 0.88-1.01x at 128 (level from N_CTX 8192; docs/performance.md,
"seventeenth"). tests/gpucheck.sh checks every config of this file."""


from __future__ import annotations


import phobos.lang as ph




@ph.kernel
@ph.warp_specialize(W)
@ph.tensorcore
@ph.launch(NT)
@ph.stages(S)
@ph.occupancy(OCC)
@ph.autotune(D=[64, 128], BR=[128, 256], BC=[64, 128], NT=[256], S=[2, 3], W=[0, 1, 2], MASKED=[1], PERSISTENT=[0], OCC=[1])
@ph.autotune(D=[64], BR=[192], BC=[128, 192], NT=[384], S=[2, 3], W=[1, 2], MASKED=[1], PERSISTENT=[0], OCC=[1])
@ph.autotune(D=[128], BR=[128], BC=[176], NT=[256], S=[2], W=[1, 2], MASKED=[1], PERSISTENT=[0], OCC=[1])
@ph.autotune(D=[64], BR=[256], BC=[128], NT=[256], S=[2], W=[1], MASKED=[1], PERSISTENT=[1], OCC=[1])
@ph.autotune(D=[128], BR=[128], BC=[128], NT=[256], S=[3], W=[2], MASKED=[1], PERSISTENT=[1], OCC=[1])
@ph.autotune(D=[64], BR=[64], BC=[128], NT=[128], S=[2, 3], W=[1], MASKED=[1], PERSISTENT=[0], OCC=[2])
@ph.autotune(D=[64], BR=[128], BC=[64], NT=[256], S=[2], W=[0], MASKED=[1], PERSISTENT=[0], OCC=[2])
@ph.autotune_key("causal")
def attn_fwd(Q: ph.tensor[ph.f16][R, D], K: ph.tensor[ph.f16][R, D], V: ph.tensor[ph.f16][R, D],
             O: ph.tensor[ph.f16][R, D], L: ph.tensor[ph.f32][R, 1], n_ctx: ph.i32, scale: ph.f32, causal: ph.i32):
    q_blocks: ph.let = (n_ctx + BR - 1) // BR
    heads: ph.let = R // n_ctx
    blocks: ph.let = ph.ctx.grid.x * ph.ctx.grid.y
    first: ph.let = ph.ctx.block.x + ph.ctx.block.y * ph.ctx.grid.x
    for t in range(0, ph.where(PERSISTENT == 1, (q_blocks * heads - first + blocks - 1) // blocks, 1)):
        tile: ph.let = first + t * blocks
        base: ph.let = ph.where(PERSISTENT == 1, tile // q_blocks, ph.ctx.block.y) * n_ctx
        q0: ph.let = ph.where(PERSISTENT == 1, q_blocks - 1 - tile % q_blocks, ph.ctx.block.x) * BR
        q: ph.let = Q[base + q0:+BR, :]
        acc: ph.var[ph.tile[ph.f32][BR, D]] = 0.0
        m: ph.var[ph.tile[ph.f32][BR, 1]] = -1.0e30
        l: ph.var[ph.tile[ph.f32][BR, 1]] = 0.0
        end: ph.let = ph.where(causal == 1, ph.min(q0 + BR, n_ctx), n_ctx)
        for kt in range(0, end, BC):
            k: ph.let = K[base + kt:+BC, :]
            v: ph.let = V[base + kt:+BC, :]
            s: ph.var[ph.tile[ph.f32][BR, BC]] = ph.dot_t(q, k)
            s = ph.where(kt + ph.iota(1) < n_ctx, s, -1.0e30)
            if causal == 1:
                s = ph.where(kt + ph.iota(1) <= q0 + ph.iota(0), s, -1.0e30)
            # base 2, the scale in the exponential's multiply-add (it needs c > 0)
            c: ph.let = scale * 1.4426950408889634
            mn: ph.let = ph.max(m, ph.rowmax(s) * c)
            a: ph.let = ph.exp2(m - mn)
            p: ph.let = ph.exp2(s * c - mn)
            l = l * a + ph.rowsum(p)
            acc = acc * a + ph.dot(ph.f16(p), v)
            m = mn
        rows: ph.let = q0 + ph.iota(0, BR) < n_ctx
        # `/` is IEEE: one reciprocal a row, where acc / l divides every element
        ph.store(O[base + q0:+BR, :], acc * (1.0 / l), mask=rows)
        ph.store(L[base + q0:+BR, 0:+1], (m + ph.log2(l)) * 0.6931471805599453, mask=rows)





# delta and dq only move memory: small row blocks and 256 threads keep a
# thread's registers low (34-77 against 168-255), so more warps hide the loads
@ph.kernel
@ph.launch(NT)
@ph.autotune(D=[64, 128], BR=[16, 32, 64, 128], NT=[128, 256])
def attn_bwd_delta(O: ph.tensor[ph.f16][R, D], DO: ph.tensor[ph.f16][R, D], Delta: ph.tensor[ph.f32][R, 1],
                   DQacc: ph.tensor[ph.f32][R, D]):
    r0: ph.let = ph.ctx.block.x * BR
    p: ph.var[ph.tile[ph.f32][BR, D]] = ph.f32(O[r0:+BR, :]) * ph.f32(DO[r0:+BR, :])
    Delta[r0:+BR, 0:+1] = ph.rowsum(p)
    DQacc[r0:+BR, :] = 0.0




@ph.kernel
@ph.warp_specialize(W)
@ph.tensorcore
@ph.launch(NT)
@ph.autotune(D=[64, 128], BR=[64, 128], BC=[64, 128], NT=[128, 256], W=[0, 1])
@ph.autotune_restore("DQacc")
@ph.autotune_key("causal")
def attn_bwd_dkdv(Q: ph.tensor[ph.f16][R, D], K: ph.tensor[ph.f16][R, D], V: ph.tensor[ph.f16][R, D],
                  DO: ph.tensor[ph.f16][R, D], L: ph.tensor[ph.f32][R, 1], Delta: ph.tensor[ph.f32][R, 1],
                  DK: ph.tensor[ph.f16][R, D], DV: ph.tensor[ph.f16][R, D], DQacc: ph.tensor[ph.f32][R, D],
                  n_ctx: ph.i32, scale: ph.f32, causal: ph.i32):
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
        ph.atomic_add(DQacc[base + qt:+BR, :], ph.dot(ph.transpose(dst), k))
    DK[base + k0:+BC, :] = dk * scale
    DV[base + k0:+BC, :] = dv




@ph.kernel
@ph.launch(NT)
@ph.autotune(D=[64, 128], BR=[16, 32, 64, 128], NT=[128, 256])
def attn_bwd_dq(DQacc: ph.tensor[ph.f32][R, D], DQ: ph.tensor[ph.f16][R, D], scale: ph.f32):
    r0: ph.let = ph.ctx.block.x * BR
    DQ[r0:+BR, :] = DQacc[r0:+BR, :] * scale
