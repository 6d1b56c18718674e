"""Paged attention decode (vLLM's paged KV cache): one query token per
sequence and head attends over the sequence's Lens[s] keys and values,
which lie in pages of PAGE tokens scattered through a pool: page p of
sequence s starts at token BT[s, p] * PAGE of K and V ([T, H * D] f16,
the heads side by side). A block takes one (sequence, head) and visits
only that sequence's pages, reading each page's place from the block
table (an element read as a scalar, then a window start). A sequence of
no tokens gives zeros."""

import phobos.lang as ph


@ph.kernel
@ph.autotune(PAGE=[16, 32], D=[64])
def paged_decode(Q: ph.tensor[ph.f16][S, HD], K: ph.tensor[ph.f16][T, HD], V: ph.tensor[ph.f16][T, HD],
                 BT: ph.tensor[ph.i32][S, MAXP], Lens: ph.tensor[ph.i32][S], O: ph.tensor[ph.f32][S, HD],
                 scale: ph.f32):
    s: ph.let = ph.ctx.block.x
    h0: ph.let = ph.ctx.block.y * D
    n: ph.let = Lens[s]
    q: ph.let = ph.f32(Q[s, h0:+D]) * scale
    m: ph.var[ph.tile[ph.f32][1, 1]] = -ph.inf
    l: ph.var[ph.tile[ph.f32][1, 1]] = 0.0
    acc: ph.var[ph.tile[ph.f32][1, D]] = 0.0
    for p in range(0, (n + PAGE - 1) // PAGE):
        t0: ph.let = BT[s, p] * PAGE
        sc: ph.let = ph.dot_t(q, ph.f32(K[t0:+PAGE, h0:+D]))
        sc_live: ph.let = ph.where(p * PAGE + ph.iota(1) < n, sc, -ph.inf)
        ph.online_softmax(acc, m, l, sc_live, V[t0:+PAGE, h0:+D])
    O[s, h0:+D] = acc / ph.max(l, 1.0e-30)
