"""test_strided.py: tensors of rank 3 and 4 passed as views, without copies:
examples/attention_bhnd's kernels on the CPU interpreter with NumPy views
(K and V as transposes of [B, N, H, D] arrays, O written into one, the keys
as a [B, H, D, N] view) against a NumPy reference, the strides the runtime
refuses, and on the GPU (skipped without torch and CUDA) from torch views."""

import os

import numpy as np
import pytest

import phobos

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PATH = os.path.join(ROOT, "examples", "attention_bhnd", "attention_bhnd.ph")
B, H, N, D, SCALE = 2, 3, 100, 64, 0.125

try:
    import torch
    HAS_CUDA = torch.cuda.is_available()
except ImportError:
    torch, HAS_CUDA = None, False


@pytest.fixture(scope="module", autouse=True)
def interpreter():
    phobos.shutdown()
    assert phobos.init("interp") == "interp"
    yield
    phobos.shutdown()


def reference(q, k, v, causal):
    """softmax(q k^T * SCALE) v over [B, H, N, D] arrays, in float64."""
    s = np.einsum("bhnd,bhmd->bhnm", q.astype(np.float64), k.astype(np.float64)) * SCALE
    if causal:
        s = np.where(np.tril(np.ones((N, N), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("bhnm,bhmd->bhnd", p / p.sum(-1, keepdims=True), v.astype(np.float64))


def grid(meta):
    return (phobos.cdiv(N, meta["BM"]), H, B)


@pytest.mark.parametrize("causal", [0, 1])
def test_views_of_bnhd_arrays_against_numpy(causal):
    rng = np.random.default_rng(5)
    q = rng.standard_normal((B, H, N, D)).astype(np.float16)
    kb, vb = (rng.standard_normal((B, N, H, D)).astype(np.float16) for _ in range(2))
    k, v = kb.transpose(0, 2, 1, 3), vb.transpose(0, 2, 1, 3)    # views: [B, H, N, D] of [B, N, H, D] memory
    assert k.base is kb and not k.flags.c_contiguous
    o = np.full((B, N, H, D), np.nan, np.float16)
    phobos.load(PATH).attn_bhnd[grid](q, k, v, o, SCALE, causal)
    assert np.abs(o.transpose(0, 2, 1, 3) - reference(q, k, v, causal)).max() < 1e-2


def test_keys_as_a_bhdn_view_against_numpy():
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((B, H, N, D)).astype(np.float16) for _ in range(3))
    kt = k.transpose(0, 1, 3, 2)                                 # [B, H, D, N], the last stride D
    o = np.full((B, H, N, D), np.nan, np.float16)
    phobos.load(PATH).attn_bhnd_kt[grid](q, kt, v, o, SCALE)
    assert np.abs(o - reference(q, k, v, 0)).max() < 1e-2


def test_strides_the_runtime_refuses():
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((B, H, N, D)).astype(np.float16) for _ in range(3))
    o = np.zeros((B, N, H, D), np.float16)
    backwards = k[:, :, ::-1]                                    # a negative stride
    with pytest.raises(phobos.LaunchError, match=r"^attn_bhnd: parameter K: stride 2 is -64; strides must be from 0"):
        phobos.load(PATH).attn_bhnd[grid](q, backwards, v, o, SCALE, 0)
    with pytest.raises(ValueError, match="must have rank 4, got rank 3"):
        phobos.load(PATH).attn_bhnd[grid](q, k[0], v, o, SCALE, 0)


@pytest.mark.skipif(not HAS_CUDA, reason="needs torch and CUDA")
@pytest.mark.parametrize("causal", [0, 1])
def test_torch_views_on_the_gpu(causal):
    phobos.shutdown()
    try:
        phobos.init("gpu", device=torch.cuda.current_device())
        kern = phobos.load(PATH).attn_bhnd
        q = torch.randn(B, H, N, D, device="cuda", dtype=torch.float16)
        kb, vb = (torch.randn(B, N, H, D, device="cuda", dtype=torch.float16) for _ in range(2))
        k, v = kb.transpose(1, 2), vb.transpose(1, 2)
        o = torch.empty(B, N, H, D, device="cuda", dtype=torch.float16)
        kern[grid](q, k, v, o, SCALE, causal)
        want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), scale=SCALE)
        torch.testing.assert_close(o.transpose(1, 2), want, atol=1e-2, rtol=0)
    finally:
        phobos.shutdown()
        phobos.init("interp")


ROWS = '''
import phobos.lang as ph

@ph.kernel
@ph.autotune(BM=[16], BK=[32])
def rowsum(X: ph.tensor[ph.f32][1, M, K], S: ph.tensor[ph.f32][M]):
    r0: ph.let = ph.ctx.block.x * BM
    acc: ph.var[ph.tile[ph.f32][BM, 1]] = 0.0
    for k0 in range(0, K, BK):
        acc += ph.rowsum(X[0, r0:+BM, k0:+BK])
    S[r0:+BM] = acc
'''


def test_a_matrix_view_with_a_leading_axis_of_one():
    """A rank-2 view that is not row-major (a transpose, a slice of columns)
    goes to a rank-3 parameter [1, M, K] with the axis added, a view too."""
    k = phobos.compile(ROWS, name="rows.ph").rowsum
    w = np.random.default_rng(8).standard_normal((70, 90)).astype(np.float32)
    for x in (w.T, w[:, 10:60], w.T[5:65:2]):
        s = np.full(x.shape[0], np.nan, np.float32)
        k[lambda meta: (phobos.cdiv(x.shape[0], meta["BM"]),)](x[None], s)
        np.testing.assert_allclose(s, x.sum(1), rtol=1e-5, atol=1e-4)
