"""torch_attention.py: PyTorch's scaled_dot_product_attention (FlashAttention
backend on Hopper) at the sizes of attention_bench.c, same flop convention,
timed with triton.testing.do_bench (median). Prints the same table."""
import sys

import torch
import torch.nn.functional as F

try:
    from triton.testing import do_bench
except ImportError:  # pragma: no cover
    do_bench = None


def bench(fn):
    if do_bench is not None:
        return do_bench(fn, warmup=25, rep=100, return_mode="median")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        fn()
    times = []
    for _ in range(20):
        start.record(); fn(); end.record(); torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[10]


def main():
    if not torch.cuda.is_available():
        print("torch attention bench skipped: no CUDA device")
        return 0
    print(f"torch {torch.__version__} sdpa on {torch.cuda.get_device_name()}")
    print(f"{'causal':6} {'pass':5} {'N_CTX':>6} {'Z':>4} {'H':>4} {'':8} {'ms':>10} {'TFLOP/s':>9}")
    for z, h, n, d in ((4, 16, 1024, 64), (4, 16, 4096, 64)):
        q, k, v = (torch.randn((z, h, n, d), device="cuda", dtype=torch.float16, requires_grad=True) for _ in range(3))
        dout = torch.randn_like(q)
        for causal in (False, True):
            flops = 4.0 * z * h * n * n * d * (0.5 if causal else 1.0)
            fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.5)  # noqa: E731
            o = fwd()
            bwd = lambda: torch.autograd.grad(o, (q, k, v), dout, retain_graph=True)  # noqa: E731
            f, b = bench(fwd), bench(bwd)
            print(f"{int(causal):<6} {'fwd':5} {n:>6} {z:>4} {h:>4} {'':8} {f:>10.3f} {flops / f / 1e9:>9.2f}")
            print(f"{int(causal):<6} {'bwd':5} {n:>6} {z:>4} {h:>4} {'':8} {b:>10.3f} {2.5 * flops / b / 1e9:>9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
