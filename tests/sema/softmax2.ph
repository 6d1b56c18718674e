import phobos.lang as ph


# ph.online_softmax2 checks its arguments as ph.online_softmax does, and
# says its own name.
@ph.kernel
@ph.autotune(BR=[16], BC=[16], D=[16])
def k(S: ph.tensor[ph.f32][N, N], V: ph.tensor[ph.f16][N, D], O: ph.tensor[ph.f32][N, D]):
    acc: ph.var[ph.tile[ph.f32][BR, D]] = 0.0
    m: ph.var[ph.tile[ph.f32][BR, 1]] = -1.0e30
    l: ph.var[ph.tile[ph.f32][BR, 1]] = 0.0
    s: ph.let = S[0:+BR, 0:+BC]
    v: ph.let = V[0:+BC, :]
    ph.online_softmax2(acc, m, l, s, v)
    ph.online_softmax2(acc, m, 1.0, s, v)
    x: ph.let = ph.online_softmax2(acc, m, l, s, v)
    ph.online_softmax2(acc, m, l, s, ph.f32(v))
    ph.online_softmax2(acc, m, l, s)
    O[0:+BR, :] = acc / l
