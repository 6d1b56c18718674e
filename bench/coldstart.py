"""coldstart.py: the first launch of the tuned attention forward in a fresh
process (B 4, H 32, N_CTX 4096, D 64, bench/attention_tuned.ph): loading
the module, generating and assembling every config that fits, the
autotuner timing them, and the launch, in milliseconds; then a second
launch. Run it with an empty PTX cache (PHOBOS_CACHE_DIR on a new folder)
and the driver's JIT cache off (CUDA_CACHE_DISABLE=1) for the cold figure.

    PYTHONPATH=python python3 bench/coldstart.py

Without torch or a CUDA device it prints 'skipped: no CUDA' and exits 0."""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))


def main():
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError
    except ImportError:
        print("skipped: no CUDA")
        return 0
    import phobos
    z, h, n, d = 4, 32, 4096, 64
    rows = z * h * n
    q, k, v = (torch.randn((rows, d), dtype=torch.float16, device="cuda") for _ in range(3))
    o = torch.empty_like(q)
    lse = torch.empty((rows, 1), dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fwd = phobos.load(os.path.join(HERE, "attention_tuned.ph")).attn_fwd
    t1 = time.perf_counter()
    times = []
    for _ in range(2):
        s = time.perf_counter()
        fwd[lambda meta: (n // meta["BR"], z * h)](q, k, v, o, lse, n, 0.125, 0)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - s)
    print(f"load {1e3 * (t1 - t0):.0f} ms, first launch {1e3 * times[0]:.0f} ms, second {1e3 * times[1]:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
