"""test_phobos.py: the Python package over libphobos.so: the examples run on
the CPU interpreter with NumPy inputs against NumPy references, every
argument check names the parameter at fault (dtypes and strides checked
by the runtime itself), and source errors come back as file:line:col
messages. The GPU tests need torch and CUDA and skip
without them."""

import os

import numpy as np
import pytest

import phobos

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def example(name):
    return os.path.join(ROOT, "examples", name, name + ".ph")


@pytest.fixture(scope="module", autouse=True)
def interpreter():
    phobos.shutdown()
    assert phobos.init("interp") == "interp"
    yield
    phobos.shutdown()


@pytest.fixture(scope="module")
def vecadd():
    return phobos.load(example("vecadd")).vecadd


def test_signature_comes_from_the_runtime(vecadd):
    assert [repr(p) for p in vecadd.params] == ["X: f32[N]", "Y: f32[N]", "Z: f32[N]"]
    assert phobos.device_name() == "the CPU interpreter"
    assert phobos.device_multiprocessors() == 1


def test_vecadd_with_a_grid_of_the_meta_parameters(vecadd):
    n = 1000   # the last block reaches past the end
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    z = np.full(n, np.nan, dtype=np.float32)
    seen = []
    vecadd[lambda meta: (seen.append(meta) or phobos.cdiv(n, meta["BLOCK"]),)](x, y, z)
    np.testing.assert_array_equal(z, x + y)
    assert seen[0] == {"BLOCK": 128} and vecadd.last_config == "vecadd__BLOCK_128"


def test_vecadd_with_a_fixed_grid_and_an_entry_name():
    m = phobos.load(example("vecadd"))
    n = 512
    x, y = np.arange(n, dtype=np.float32), np.ones(n, dtype=np.float32)
    z = np.zeros(n, dtype=np.float32)
    m["vecadd__BLOCK_256"](x, y, z, grid=(2,))
    np.testing.assert_array_equal(z, x + 1)
    z[:] = 0
    m["vecadd__BLOCK_256"][(1,)](x, y, z)   # one block of 256: half the vector
    np.testing.assert_array_equal(z[:256], x[:256] + 1)
    assert not z[256:].any()


def test_matmul_against_numpy():
    mm = phobos.load(example("matmul")).matmul
    rng = np.random.default_rng(2)
    M, K, N = 70, 50, 40   # no size a multiple of a block
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), dtype=np.float32)
    mm[lambda meta: (phobos.cdiv(M, meta["BM"]), phobos.cdiv(N, meta["BN"]))](a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(c - ref).max() < 1e-3


def test_int8gemm_against_numpy():
    g = phobos.load(example("int8gemm")).int8gemm
    rng = np.random.default_rng(8)
    M, K, N = 70, 100, 40
    a = rng.integers(-128, 128, (M, K), dtype=np.int8)
    b = rng.integers(-128, 128, (K, N), dtype=np.int8)
    sa = rng.uniform(0, 1e-3, M).astype(np.float32)
    sb = rng.uniform(0, 1e-2, N).astype(np.float32)
    c = np.zeros((M, N), dtype=np.float16)
    g[lambda meta: (phobos.cdiv(M, meta["BM"]), phobos.cdiv(N, meta["BN"]))](a, b, sa, sb, c)
    ref = (a.astype(np.int64) @ b.astype(np.int64)) * sa[:, None].astype(np.float64) * sb[None, :]
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=1e-3, atol=1e-6)
    with pytest.raises(phobos.LaunchError, match=r"^int8gemm: parameter A: expected i8, got u8$"):
        g[(1, 1)](a.view(np.uint8), b, sa, sb, c)


def e4m3_value(bits):
    """An e4m3 code's value (NumPy has no fp8: arrays of uint8 bit patterns)."""
    bits = bits.astype(np.int64)
    e, m = (bits >> 3) & 15, bits & 7
    v = np.where(e > 0, (1 + m / 8) * 2.0 ** (e - 7), m / 8 * 2.0 ** -6)
    return np.where(bits & 0x80, -v, v)


def test_fp8gemm_against_numpy():
    mod = phobos.load(example("fp8gemm"))
    rng = np.random.default_rng(8)
    M, K, N = 70, 100, 40
    x = rng.standard_normal((M, K)).astype(np.float32)
    a = np.zeros((M, K), dtype=np.uint8)
    sa = np.zeros(M, dtype=np.float32)
    mod.quantize_rows[lambda meta: (phobos.cdiv(M, meta["BM"]),)](x, a, sa)
    np.testing.assert_array_equal(sa, np.maximum(np.abs(x).max(axis=1), np.float32(1e-30)) / np.float32(448))
    assert np.abs(e4m3_value(a) * sa[:, None] - x).max() <= np.abs(x).max() / 16   # within half an e4m3 step
    b = rng.integers(0, 256, (K, N), dtype=np.uint8)
    b[(b & 0x7f) == 0x7f] = 0                                 # no NaN
    c = np.zeros((M, N), dtype=np.float16)
    mod.fp8gemm[lambda meta: (phobos.cdiv(M, meta["BM"]), phobos.cdiv(N, meta["BN"]))](a, b, sa, np.float32(0.5), c)
    ref = (e4m3_value(a) @ e4m3_value(b)) * sa[:, None].astype(np.float64) * 0.5
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2e-3, atol=1e-2 * np.abs(ref).max())
    with pytest.raises(phobos.LaunchError, match=r"^fp8gemm: parameter A: expected f8e4m3, got i8$"):
        mod.fp8gemm[(1, 1)](a.view(np.int8), b, sa, 0.5, c)


def attention_reference(q, k, v, scale, causal):
    s = (q.astype(np.float64) @ k.astype(np.float64).T) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape, dtype=bool)), s, -np.inf)
    m = s.max(axis=1, keepdims=True)
    p = np.exp(s - m)
    l = p.sum(axis=1, keepdims=True)
    return (p / l) @ v.astype(np.float64), m + np.log(l)


@pytest.mark.parametrize("causal", [0, 1])
def test_attention_forward_against_numpy(causal):
    fwd = phobos.load(example("attention")).attn_fwd
    H, N, D, scale = 2, 64, 64, 0.5
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((H * N, D)).astype(np.float16) for _ in range(3))
    o = np.zeros((H * N, D), dtype=np.float16)
    lse = np.zeros((H * N, 1), dtype=np.float32)
    fwd[lambda meta: (N // meta["BR"], H)](q, k, v, o, lse, N, scale, causal)
    for h in range(H):
        rows = slice(h * N, (h + 1) * N)
        ref_o, ref_l = attention_reference(q[rows], k[rows], v[rows], scale, causal)
        assert np.abs(o[rows] - ref_o).max() < 1e-2
        assert np.abs(lse[rows] - ref_l).max() < 1e-3


# ---- errors: each names the kernel and the parameter ----

def args(n=256, **replace):
    a = {"X": np.zeros(n, np.float32), "Y": np.zeros(n, np.float32), "Z": np.zeros(n, np.float32)}
    a.update(replace)
    return list(a.values())


def test_wrong_dtype(vecadd):
    with pytest.raises(TypeError, match=r"vecadd: argument Y \(Y: f32\[N\]\) must have dtype float32, got float64"):
        vecadd[(2,)](*args(Y=np.zeros(256)))


def test_a_dtype_of_the_language_but_not_the_parameters_is_refused_by_the_runtime(vecadd):
    z = np.zeros(256, np.float32)
    with pytest.raises(phobos.LaunchError, match=r"^vecadd: parameter Y: expected f32, got f16$"):
        vecadd[(2,)](*args(Y=np.zeros(256, np.float16), Z=z))
    with pytest.raises(phobos.LaunchError, match=r"^vecadd: parameter X: expected f32, got i32$"):
        vecadd[(2,)](*args(X=np.zeros(256, np.int32), Z=z))
    with pytest.raises(phobos.LaunchError, match=r"^vecadd: parameter Z: expected f32, got bf16$"):
        vecadd[(2,)](*args(Z=np.zeros(256, np.uint16)))   # NumPy's stand-in for bfloat16
    assert not z.any()


def test_wrong_rank(vecadd):
    with pytest.raises(ValueError, match=r"argument X .* must have rank 1, got rank 2"):
        vecadd[(2,)](*args(X=np.zeros((16, 16), np.float32)))


def test_not_contiguous(vecadd):
    with pytest.raises(phobos.LaunchError, match=r"^vecadd: parameter Z: strides \(2\) are not row-major contiguous "
                                                  r"for dims \(256\)$"):
        vecadd[(2,)](*args(Z=np.zeros(512, np.float32)[::2]))
    with pytest.raises(phobos.LaunchError, match=r"^vecadd: parameter Y: strides \(-1\)"):
        vecadd[(2,)](*args(Y=np.zeros(256, np.float32)[::-1]))
    with pytest.raises(phobos.LaunchError, match=r"^vecadd: parameter X: strides \(0\) are not row-major contiguous "
                                                  r"for dims \(256\)$"):
        vecadd[(2,)](*args(X=np.broadcast_to(np.float32(1), (256,))))


def test_a_transposed_matrix_is_refused_by_the_runtime():
    mm = phobos.load(example("matmul")).matmul
    M, K, N = 70, 50, 40
    a = np.zeros((K, M), np.float16).T   # (70, 50), column-major
    c = np.zeros((M, N), np.float32)
    with pytest.raises(phobos.LaunchError, match=r"^matmul: parameter A: strides \(1, 70\) are not row-major "
                                                  r"contiguous for dims \(70, 50\)$"):
        mm[(2, 2)](a, np.zeros((K, N), np.float16), c)
    assert not c.any()


def test_a_dim_of_size_one_may_have_any_stride():
    """A column of R rows viewed from a row: its strides are (1, R), which
    is still row-major contiguous (torch and NumPy agree)."""
    delta_kernel = phobos.load(example("attention")).attn_bwd_delta
    rows, D = 64, 64
    rng = np.random.default_rng(5)
    o, do = (rng.standard_normal((rows, D)).astype(np.float16) for _ in range(2))
    delta = np.zeros((1, rows), np.float32).T
    assert delta.shape == (rows, 1) and delta.strides == (4, 4 * rows)
    delta_kernel[lambda meta: (rows // meta["BR"],)](o, do, delta)
    want = (o.astype(np.float64) * do.astype(np.float64)).sum(axis=1, keepdims=True)
    assert np.abs(delta - want).max() < 1e-2


def test_not_an_array(vecadd):
    with pytest.raises(TypeError, match=r"argument X .* must be a NumPy array or a torch tensor, got list"):
        vecadd[(2,)](*args(X=[0.0] * 256))


def test_wrong_count(vecadd):
    with pytest.raises(TypeError, match=r"vecadd takes 3 arguments \(X: f32\[N\], Y: f32\[N\], Z: f32\[N\]\), got 2"):
        vecadd[(2,)](*args()[:2])


def test_dims_that_disagree_are_refused_by_the_runtime(vecadd):
    with pytest.raises(phobos.LaunchError, match=r"dim N is 256 in X but 128 in Y"):
        vecadd[(2,)](*args(Y=np.zeros(128, np.float32)))


def test_scalars_are_checked():
    fwd = phobos.load(example("attention")).attn_fwd
    t = np.zeros((64, 64), np.float16)
    lse = np.zeros((64, 1), np.float32)
    with pytest.raises(TypeError, match=r"attn_fwd: argument n_ctx \(n_ctx: i32\) must be an int, got float"):
        fwd[(2, 1)](t, t, t, t, lse, 64.0, 0.5, 0)
    with pytest.raises(ValueError, match=r"argument causal .* does not fit in an i32"):
        fwd[(2, 1)](t, t, t, t, lse, 64, 0.5, 2**40)
    with pytest.raises(ValueError, match=r"argument L .* must have rank 2"):
        fwd[(2, 1)](t, t, t, t, np.zeros(64, np.float32), 64, 0.5, 0)


def test_bad_grids(vecadd):
    with pytest.raises(phobos.LaunchError, match=r"grid 0 x 1 x 1"):
        vecadd[(0,)](*args())
    with pytest.raises(TypeError, match=r"a grid is a tuple of one to three ints"):
        vecadd[lambda meta: ("two",)](*args())
    with pytest.raises(KeyError):
        vecadd[lambda meta: (meta["NOPE"],)](*args())


def test_unknown_kernel():
    m = phobos.load(example("vecadd"))
    with pytest.raises(AttributeError, match=r"vecadd.ph: no kernel named 'nope' in this module \(its kernels: vecadd\)$"):
        m.nope
    with pytest.raises(AttributeError, match=r"no kernel named 'vecad' in this module; did you mean 'vecadd'\?"):
        m.vecad
    attention = phobos.load(example("attention"))
    with pytest.raises(AttributeError, match=r"no kernel named 'attn_bwd_dk' in this module; did you mean 'attn_bwd_dq'\?"):
        attention["attn_bwd_dk"]


def test_bad_source_says_file_line_col(tmp_path):
    bad = tmp_path / "bad.ph"
    bad.write_text("import phobos.lang as ph\n@ph.kernel\ndef k(n: ph.i32):\n    x: ph.let = n / 2\n")
    with pytest.raises(phobos.CompileError, match=r"bad.ph:4:\d+: error:"):
        phobos.load(bad)
    with pytest.raises(FileNotFoundError):
        phobos.load(tmp_path / "missing.ph")


def test_a_numpy_array_on_the_gpu_target_is_refused(vecadd, monkeypatch):
    monkeypatch.setattr(phobos, "_target", "gpu")   # what the check sees on a GPU, without one
    with pytest.raises(TypeError, match=r"argument X .* is in host memory, but the kernels run on the GPU"):
        vecadd[(2,)](*args())


# ---- on the GPU: torch tensors ----

try:
    import torch
except ImportError:
    torch = None
needs_cuda = pytest.mark.skipif(torch is None or not torch.cuda.is_available(), reason="needs torch with CUDA")


@needs_cuda
def test_a_launch_goes_on_torchs_current_stream():
    """On a side stream (torch's are non-blocking: the NULL stream does not
    order them) held busy by a sleep, the launch must wait for the fills
    queued before it and finish before the fill queued after it."""
    phobos.shutdown()
    try:
        phobos.init("gpu", device=torch.cuda.current_device())
        k = phobos.load(example("vecadd")).vecadd
        n = 1 << 22
        x, y = torch.zeros(n, device="cuda"), torch.zeros(n, device="cuda")
        z = torch.full((n,), float("nan"), device="cuda")
        torch.cuda.synchronize()
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            if hasattr(torch.cuda, "_sleep"):
                torch.cuda._sleep(100_000_000)   # tens of milliseconds of GPU cycles on the side stream
            x.fill_(1.5)
            y.fill_(-2.0)
            k[lambda meta: (phobos.cdiv(n, meta["BLOCK"]),)](x, y, z)
            x.fill_(100.0)
        side.synchronize()
        assert torch.equal(z, torch.full_like(z, -0.5))
        with pytest.raises(phobos.LaunchError, match=r"vecadd: parameter X: strides \(2\) are not row-major"):
            k[(1,)](torch.zeros(2 * n, device="cuda")[::2], y, z)
        with pytest.raises(phobos.LaunchError, match=r"vecadd: parameter Y: expected f32, got f16"):
            k[(1,)](x, y.half(), z)
    finally:
        phobos.shutdown()
        phobos.init("interp")


@needs_cuda
def test_vecadd_on_the_gpu():
    phobos.shutdown()
    try:
        phobos.init("gpu", device=torch.cuda.current_device())
        k = phobos.load(example("vecadd")).vecadd
        n = 1 << 20
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        z = torch.empty_like(x)
        k[lambda meta: (phobos.cdiv(n, meta["BLOCK"]),)](x, y, z)
        torch.testing.assert_close(z, x + y)
        with pytest.raises(TypeError, match="is in host memory"):
            k[(1,)](x.cpu(), y, z)
    finally:
        phobos.shutdown()
        phobos.init("interp")


@pytest.mark.parametrize("causal", [0, 1])
def test_attention_backward_against_numpy(causal):
    """The four launches of examples/attention/attention_torch.py, with its
    grids and argument order, on NumPy arrays."""
    m = phobos.load(example("attention"))
    H, N, D, scale = 1, 64, 64, 0.5
    rows = H * N
    rng = np.random.default_rng(4)
    q, k, v, do = (rng.standard_normal((rows, D)).astype(np.float16) for _ in range(4))
    o, dq, dk, dv = (np.zeros((rows, D), np.float16) for _ in range(4))
    lse, delta = np.zeros((rows, 1), np.float32), np.zeros((rows, 1), np.float32)
    m.attn_fwd[lambda meta: (N // meta["BR"], H)](q, k, v, o, lse, N, scale, causal)
    m.attn_bwd_delta[lambda meta: (rows // meta["BR"],)](o, do, delta)
    m.attn_bwd_dkdv[lambda meta: (N // meta["BC"], H)](q, k, v, do, lse, delta, dk, dv, N, scale, causal)
    m.attn_bwd_dq[lambda meta: (N // meta["BR"], H)](q, k, v, do, lse, delta, dq, N, scale, causal)
    q64, k64, v64, do64 = (t.astype(np.float64) for t in (q, k, v, do))
    s = q64 @ k64.T * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape, dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    ref_o = p @ v64
    ds = p * (do64 @ v64.T - (do64 * ref_o).sum(axis=1, keepdims=True))
    for name, got, want in (("dq", dq, ds @ k64 * scale), ("dk", dk, ds.T @ q64 * scale), ("dv", dv, p.T @ do64)):
        assert np.abs(got - want).max() < 2e-2, name


def test_version_is_the_librarys():
    assert phobos.__version__ == phobos.version()
    assert all(part.isdigit() for part in phobos.__version__.split("."))


def test_arguments_by_parameter_name(vecadd):
    x, y = np.arange(256, dtype=np.float32), np.full(256, 2.0, np.float32)
    z = np.full(256, np.nan, np.float32)
    vecadd[(2,)](x, Z=z, Y=y)
    np.testing.assert_array_equal(z, x + y)
    z[:] = np.nan
    vecadd(X=x, Y=y, Z=z, grid=(2,))
    np.testing.assert_array_equal(z, x + y)
    with pytest.raises(TypeError, match=r"vecadd has no parameter named 'W'"):
        vecadd[(2,)](x, y, W=z)
    with pytest.raises(TypeError, match=r"vecadd: argument X given by position and by name"):
        vecadd[(2,)](x, y, z, X=x)
    with pytest.raises(TypeError, match=r"vecadd: missing argument Z"):
        vecadd[(2,)](x, Y=y)


def test_read_only_buffers_are_refused(vecadd):
    x, y, z = (np.zeros(256, np.float32) for _ in range(3))
    frozen = np.frombuffer(bytes(256 * 4), dtype=np.float32)   # an immutable bytes buffer
    with pytest.raises(ValueError, match=r"argument Z .* is read-only"):
        vecadd[(2,)](x, y, frozen)
    z.flags.writeable = False
    with pytest.raises(ValueError, match=r"argument Z .* is read-only"):
        vecadd[(2,)](x, y, z)
    assert not z.any()   # nothing was written
    for immutable in (bytes(256 * 4), memoryview(bytes(256 * 4))):
        with pytest.raises(ValueError, match=r"argument Z .* is an immutable buffer"):
            vecadd[(2,)](x, y, immutable)


def test_a_module_lists_its_kernels():
    m = phobos.load(example("attention"))
    assert m.kernels == ("attn_fwd", "attn_bwd_delta", "attn_bwd_dkdv", "attn_bwd_dq")
    assert set(m.kernels) <= set(dir(m))
    assert phobos.load(example("vecadd")).kernels == ("vecadd",)
    assert "attn_fwd" in repr(m)


def test_a_kernel_from_a_source_string():
    source = open(example("vecadd")).read()
    k = phobos.compile(source, name="mine.ph").vecadd
    x = np.arange(256, dtype=np.float32)
    z = np.full(256, np.nan, np.float32)
    k[(2,)](x, x, z)
    np.testing.assert_array_equal(z, 2 * x)
    with pytest.raises(phobos.CompileError, match=r"mine.ph:4:\d+: error:"):
        phobos.compile("import phobos.lang as ph\n@ph.kernel\ndef k(n: ph.i32):\n    x: ph.let = n / 2\n", name="mine.ph")
    with pytest.raises(TypeError, match=r"source must be a str"):
        phobos.compile(b"bytes")


I64_SOURCE = """import phobos.lang as ph

@ph.kernel
@ph.autotune(BJ=[16], BD=[8])
def bag(Idx: ph.tensor[ph.i64][L], E: ph.tensor[ph.f32][V, D], O: ph.tensor[ph.f32][L, D],
        Y: ph.tensor[ph.i64][L], n: ph.i64):
    j0: ph.let = ph.ctx.block.x * BJ
    idx: ph.let = Idx[j0:+BJ]
    O[j0:+BJ, 0:+BD] = E[idx, 0:+BD]
    Y[j0:+BJ] = idx * 3000000000 + n // -7
"""


def test_int64_arrays_and_an_i64_scalar():
    """PyTorch's and NumPy's index arrays are int64: an embedding gather by
    them, i64 arithmetic past 2^31 and a Python int past i32 for n."""
    k = phobos.compile(I64_SOURCE, name="bag.ph").bag
    assert [repr(p) for p in k.params][-1] == "n: i64"
    rng = np.random.default_rng(64)
    L, V, D = 40, 30, 8
    idx = rng.integers(-5, V + 5, L, dtype=np.int64)   # some outside E: rows of zeros
    idx[0] = 2**40   # past i32: outside too, not wrapped into E
    e = rng.standard_normal((V, D)).astype(np.float32)
    o = np.full((L, D), np.nan, dtype=np.float32)
    y = np.zeros(L, dtype=np.int64)
    n = 5 * 10**12
    k[(phobos.cdiv(L, 16),)](idx, e, o, y, n)
    inside = (idx >= 0) & (idx < V)
    np.testing.assert_array_equal(o, np.where(inside[:, None], e[np.clip(idx, 0, V - 1)], 0))
    np.testing.assert_array_equal(y, idx * 3000000000 + n // -7)
    with pytest.raises(phobos.LaunchError, match=r"^bag: parameter Idx: expected i64, got i32$"):
        k[(1,)](idx.astype(np.int32), e, o, y, n)
    with pytest.raises(ValueError, match=r"does not fit in an i64"):
        k[(1,)](idx, e, o, y, 2**63)
