"""Variable-length attention forward, FlashAttention's varlen API: the
batch's sequences are packed one after another into Q, K and V
([T, H * D] f16, the heads side by side), sequence b holding the tokens
CU[b] .. CU[b + 1] - 1 of the prefix sums CU ([B + 1] i32). A block takes
one block of BM queries of one sequence and one head (grid: query blocks
of the longest sequence, B, H) and walks only that sequence's keys, BN at
a time: the loop's bound is the sequence's length, read from CU. A block
past its sequence's end returns at once; the rows of a last, partial
block that lie past the end are masked: its keys read as zeros and score
-1e30, and its queries' rows are not stored, so no block writes into the
next sequence or past the packed tokens. causal == 1 masks a key past its
query (within the sequence) and stops the walk at the diagonal."""

import phobos.lang as ph


@ph.kernel
@ph.tensorcore
@ph.launch(128)
@ph.autotune(D=[64], BM=[32, 64], BN=[32])
def varlen_fwd(Q: ph.tensor[ph.f16][T, HD], K: ph.tensor[ph.f16][T, HD], V: ph.tensor[ph.f16][T, HD],
               CU: ph.tensor[ph.i32][B1], O: ph.tensor[ph.f16][T, HD], scale: ph.f32, causal: ph.i32):
    q0: ph.let = ph.ctx.block.x * BM
    b: ph.let = ph.ctx.block.y
    h0: ph.let = ph.ctx.block.z * D
    start: ph.let = CU[b]
    n: ph.let = CU[b + 1] - start
    if q0 >= n:
        return
    rows: ph.let = q0 + ph.iota(0, BM) < n
    q: ph.let = ph.load(Q[start + q0:+BM, h0:+D], mask=rows)
    acc: ph.var[ph.tile[ph.f32][BM, D]] = 0.0
    m: ph.var[ph.tile[ph.f32][BM, 1]] = -1.0e30
    l: ph.var[ph.tile[ph.f32][BM, 1]] = 0.0
    end: ph.let = ph.where(causal == 1, ph.min(q0 + BM, n), n)
    for kt in range(0, end, BN):
        keys: ph.let = kt + ph.iota(0, BN) < n
        k: ph.let = ph.load(K[start + kt:+BN, h0:+D], mask=keys)
        v: ph.let = ph.load(V[start + kt:+BN, h0:+D], mask=keys)
        s: ph.var[ph.tile[ph.f32][BM, BN]] = ph.dot_t(q, k) * scale
        s = ph.where(kt + ph.iota(1, BN) < n, s, -1.0e30)
        if causal == 1:
            s = ph.where(kt + ph.iota(1, BN) <= q0 + ph.iota(0, BM), s, -1.0e30)
        ph.online_softmax(acc, m, l, s, v)
    ph.store(O[start + q0:+BM, h0:+D], acc / l, mask=rows)
