"""Embedding bag, sum mode with per-index weights (PyTorch's
nn.EmbeddingBag(mode="sum") with offsets and per_sample_weights): bag b is
the sum of W[j] * E[I[j], :] for j from Off[b] to Off[b + 1] - 1, over an
[V, D] f32 table. A block takes one bag and BD columns, BJ indices at a
time: the indices are a tile, and E[idx, c0:+BD] gathers their rows. An
index outside the table (or past the bag's end, sent to -1) reads a row of
zeros, so it adds nothing."""

import phobos.lang as ph


@ph.kernel
@ph.autotune(BJ=[16, 32], BD=[64])
def embedding_bag(I: ph.tensor[ph.i32][L], W: ph.tensor[ph.f32][L], Off: ph.tensor[ph.i32][NOFF],
                  E: ph.tensor[ph.f32][V, D], O: ph.tensor[ph.f32][B, D]):
    b: ph.let = ph.ctx.block.x
    c0: ph.let = ph.ctx.block.y * BD
    end: ph.let = Off[b + 1]
    acc: ph.var[ph.tile[ph.f32][1, BD]] = 0.0
    for j in range(Off[b], end, BJ):
        idx: ph.let = ph.where(j + ph.iota(1, BJ) < end, I[j:+BJ], -1)
        w: ph.let = ph.reshape(W[j:+BJ], [BJ, 1])
        acc += ph.colsum(E[idx, c0:+BD] * w)
    O[b, c0:+BD] = acc
