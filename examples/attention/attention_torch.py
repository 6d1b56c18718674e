"""attention_torch.py: the tutorial's attention (attention.ph) as a
torch.autograd.Function on the GPU, checked against PyTorch's
scaled_dot_product_attention, forward and gradients, causal and not, at
the tutorial's size (Z 1, H 2, N_CTX 1024, HEAD_DIM 64, sm_scale 0.5),
as attention_check.c checks it against double precision. Another program
with the same four kernels may be named instead, such as the autotuned
ones of bench/attention_tuned.ph, or bench/attention_fused.ph (the fast
kernels), whose dK/dV kernel adds dQ into an f32 buffer that its delta
kernel zeroes and its dQ kernel scales into f16 (the protocol
attention_host.h runs, told apart by the dK/dV kernel's 12 parameters).

    PYTHONPATH=python python3 examples/attention/attention_torch.py [PROGRAM.ph]

Without torch or a CUDA device it prints 'skipped: no CUDA' and exits 0."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))   # the package of this source tree

ATOL = 1e-2   # the tutorial's assert_close, rtol 0


def kernels(path):
    import phobos
    m = phobos.load(path)
    return m.attn_fwd, m.attn_bwd_delta, m.attn_bwd_dkdv, m.attn_bwd_dq


def make_function(torch, path):
    import phobos
    fwd, delta_k, dkdv_k, dq_k = kernels(path)
    fused = len(dkdv_k.params) == 12   # dK/dV(Q, K, V, dO, L, Delta, dK, dV, DQacc, n_ctx, scale, causal)

    def fwd_grid(meta, n, heads):
        """A block a (row block, head); a persistent config (PERSISTENT p)
        p blocks a multiprocessor, its kernel covering every tile."""
        tiles = phobos.cdiv(n, meta["BR"])
        blocks = meta.get("PERSISTENT", 0) * phobos.device_multiprocessors()
        return (blocks, 1) if 0 < blocks < tiles * heads else (tiles, heads)

    class PhobosAttention(torch.autograd.Function):
        """q, k, v: [Z, H, N_CTX, HEAD_DIM] f16 CUDA tensors. The kernels
        see the batch and heads flattened into the rows, [Z H N_CTX, D],
        and a block's second grid index picks the head (attention_host.h)."""

        @staticmethod
        def forward(ctx, q, k, v, causal, scale):
            z, h, n, d = q.shape
            rows = z * h * n
            q2, k2, v2 = (t.contiguous().view(rows, d) for t in (q, k, v))
            o = torch.empty_like(q2)
            lse = torch.empty((rows, 1), dtype=torch.float32, device=q.device)
            c = int(bool(causal))
            fwd[lambda meta: fwd_grid(meta, n, z * h)](q2, k2, v2, o, lse, n, scale, c)
            ctx.save_for_backward(q2, k2, v2, o, lse)
            ctx.shape, ctx.causal, ctx.scale = q.shape, c, scale
            return o.view(z, h, n, d)

        @staticmethod
        def backward(ctx, do):
            q2, k2, v2, o, lse = ctx.saved_tensors
            z, h, n, d = ctx.shape
            rows = z * h * n
            do2 = do.contiguous().view(rows, d)
            delta = torch.empty((rows, 1), dtype=torch.float32, device=do.device)
            dq, dk, dv = torch.empty_like(q2), torch.empty_like(k2), torch.empty_like(v2)
            if fused:
                dqacc = torch.empty((rows, d), dtype=torch.float32, device=do.device)   # zeroed by the delta kernel
                delta_k[lambda meta: (rows // meta["BR"],)](o, do2, delta, dqacc)
                dkdv_k[lambda meta: (n // meta["BC"], z * h)](q2, k2, v2, do2, lse, delta, dk, dv, dqacc, n, ctx.scale,
                                                             ctx.causal)
                dq_k[lambda meta: (rows // meta["BR"],)](dqacc, dq, ctx.scale)
            else:
                delta_k[lambda meta: (rows // meta["BR"],)](o, do2, delta)
                dkdv_k[lambda meta: (n // meta["BC"], z * h)](q2, k2, v2, do2, lse, delta, dk, dv, n, ctx.scale, ctx.causal)
                dq_k[lambda meta: (phobos.cdiv(n, meta["BR"]), z * h)](q2, k2, v2, do2, lse, delta, dq, n, ctx.scale,
                                                                       ctx.causal)
            shape = (z, h, n, d)
            return dq.view(shape), dk.view(shape), dv.view(shape), None, None

    return PhobosAttention


def check(torch, attention, causal, z=1, h=2, n=1024, d=64, scale=0.5):
    import torch.nn.functional as F
    gen = torch.Generator(device="cuda").manual_seed(20)
    q, k, v, do = (torch.empty((z, h, n, d), dtype=torch.float16, device="cuda").normal_(0.0, 0.5, generator=gen)
                   for _ in range(4))
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
    ref.backward(do)
    ref_grads = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    out = attention.apply(q, k, v, causal, scale)
    out.backward(do)
    ok = True
    for name, got, want in zip(("out", "dq", "dk", "dv"), [out] + [t.grad for t in (q, k, v)], [ref] + ref_grads):
        diff = (got.float() - want.float()).abs().max().item()
        ok &= diff <= ATOL
        print(f"attention Z {z} H {h} N_CTX {n} HEAD_DIM {d} causal {int(causal)}: {name} max |diff| {diff:.3e}"
              f"{'' if diff <= ATOL else f' > {ATOL}: FAILED'}")
    return ok


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "attention.ph")
    if len(sys.argv) > 2 or not os.path.isfile(path):
        print(f"usage: {sys.argv[0]} [PROGRAM.ph] (the four attention kernels; default attention.ph)", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("skipped: no CUDA (torch is not installed)")
        return 0
    if not torch.cuda.is_available():
        print("skipped: no CUDA")
        return 0
    import phobos
    phobos.init("gpu", device=torch.cuda.current_device())
    print(f"attention_torch ({os.path.relpath(path)}) on {phobos.device_name()}")
    attention = make_function(torch, path)
    ok = all([check(torch, attention, causal) for causal in (False, True)])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
