"""torch_bench.py: PyTorch on the grid of bench/attention_bench.c and
bench/gemm_bench.c (benchtable.py holds it), timed as bench/gpubench.h times
phc: CUDA events around each repetition, a 256 MB write before it outside
the timed interval (no repetition finds the last one's data in L2), 3
warm-ups and a quarter second of them, the median of 20 or more runs and of
a second of them at least. Attention is
torch.nn.functional.scaled_dot_product_attention with the FlashAttention
backend forced and with the cuDNN backend forced, forward and backward
(torch.autograd.grad of the output: dQ, dK and dV); GEMM is torch.matmul,
f16 with f32 accumulation (reduced-precision reductions turned off). A
backend that refuses a case gets "n/a" and the reason it gave.

    python3 bench/torch_bench.py DIR

writes DIR/torch_attention.tsv and DIR/torch_gemm.tsv for benchtable.py.
"""

import os
import statistics
import sys
import time
import warnings

import benchtable as bt

ATTENTION_COLUMNS = "impl\tpass\tcausal\tB\tH\tD\tN\tms\tconfig"
GEMM_COLUMNS = "impl\tM\tN\tK\tms\tconfig"
BACKENDS = (("flash", "FLASH_ATTENTION"), ("cudnn", "CUDNN_ATTENTION"))
SCALE = 0.5   # as attention_bench.c passes


class Timer:
    """Times a function as gpubench_time does."""

    def __init__(self, torch):
        self.torch = torch
        self.flush = torch.empty(bt.FLUSH_BYTES, dtype=torch.uint8, device="cuda")
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def median_ms(self, fn, reps):
        began = time.perf_counter()
        warmups = 0
        while warmups < bt.WARMUPS or (time.perf_counter() - began) * 1e3 < bt.WARM_MS:
            fn()
            self.torch.cuda.synchronize()
            warmups += 1
        times, total = [], 0.0
        while len(times) < bt.MAX_REPS and (len(times) < reps or total < bt.TIMED_MS):
            self.flush.zero_()
            self.start.record()
            fn()
            self.end.record()
            self.end.synchronize()
            times.append(self.start.elapsed_time(self.end))
            total += times[-1]
        return statistics.median(times)


class Tsv:
    def __init__(self, path, meta, columns):
        self.file = open(path, "w", encoding="utf-8")
        for key, value in meta.items():
            self.file.write(f"# {key}: {value}\n")
        self.file.write(columns + "\n")

    def row(self, key, ms, note=""):
        note = " ".join(str(note).split())[:300]
        self.file.write("\t".join(str(x) for x in key) + "\t" + ("n/a" if ms is None else f"{ms:.6f}") + "\t" + note + "\n")
        self.file.flush()

    def close(self):
        self.file.close()


def refusal(error, caught):
    """Why a forced backend gave no figure: its warnings say why, the error that
    it could not run."""
    why = [str(w.message) for w in caught] + [str(error).splitlines()[0] if str(error) else type(error).__name__]
    return "; ".join(dict.fromkeys(" ".join(w.split()) for w in why))


def attempt(measure, backend, sdpa_kernel):
    """(measure()'s milliseconds, None) with backend forced, or (None, why) when
    the backend refuses or fails."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with sdpa_kernel(backend):
                return measure(), None
        except Exception as e:   # no kernel for this case, out of memory: a row "n/a", never the end of the run
            return None, refusal(e, caught)


def attention_case(torch, timer, tsv, impl, backend, sdpa_kernel, q, k, v, dout, causal):
    F = torch.nn.functional
    d, n = q.shape[-1], q.shape[-2]
    reps = bt.attention_reps(n)

    def forward():
        return F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), scale=SCALE)

    def time_backward():
        out = forward()   # the graph the backward pass runs, built by the backend forced
        return timer.median_ms(lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True), reps)

    results = {"fwd": attempt(lambda: timer.median_ms(forward, reps), backend, sdpa_kernel)}
    results["bwd"] = attempt(time_backward, backend, sdpa_kernel) if results["fwd"][0] is not None else results["fwd"]
    for pass_ in ("fwd", "bwd"):
        ms, why = results[pass_]
        flops = bt.attention_flops(pass_, causal, bt.BATCH, bt.HEADS, d, n)
        if ms is None:
            print(f"  {impl} {pass_} causal {causal}: n/a: {why}")
        else:
            print(f"  {impl} {pass_} causal {causal}: {ms:9.3f} ms {bt.tflops(flops, ms):7.1f} TFLOP/s")
        tsv.row((impl, pass_, causal, bt.BATCH, bt.HEADS, d, n), ms, why or "")


def attention(torch, timer, tsv):
    api = getattr(torch.nn, "attention", None)   # torch 2.3 and later
    SDPBackend, sdpa_kernel = getattr(api, "SDPBackend", None), getattr(api, "sdpa_kernel", None)
    if sdpa_kernel is None:
        SDPBackend = None
    for d in bt.HEAD_DIMS:
        for n in bt.N_CTXS:
            print(f"torch attention: D {d}, N_CTX {n}")
            shape = (bt.BATCH, bt.HEADS, n, d)
            q, k, v = (torch.randn(shape, device="cuda", dtype=torch.float16, requires_grad=True) for _ in range(3))
            dout = torch.randn(shape, device="cuda", dtype=torch.float16)
            for impl, name in BACKENDS:
                backend = getattr(SDPBackend, name, None) if SDPBackend else None
                for causal in (0, 1):
                    if backend is None:
                        why = f"torch {torch.__version__} has no SDPBackend.{name}"
                        for pass_ in ("fwd", "bwd"):
                            tsv.row((impl, pass_, causal, bt.BATCH, bt.HEADS, d, n), None, why)
                        continue
                    attention_case(torch, timer, tsv, impl, backend, sdpa_kernel, q, k, v, dout, causal)
            del q, k, v, dout
            torch.cuda.empty_cache()


def gemm(torch, timer, tsv):
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    for m, n, k in bt.GEMM_SHAPES:
        a = torch.randn((m, k), device="cuda", dtype=torch.float16)
        b = torch.randn((k, n), device="cuda", dtype=torch.float16)
        try:
            ms, why = timer.median_ms(lambda: torch.matmul(a, b), bt.GEMM_REPS), ""
            print(f"torch.matmul M {m} N {n} K {k}: {ms:8.3f} ms {bt.tflops(bt.gemm_flops(m, n, k), ms):7.1f} TFLOP/s")
        except Exception as e:   # out of memory, most likely: a row "n/a"
            ms, why = None, str(e).splitlines()[0] if str(e) else type(e).__name__
            print(f"torch.matmul M {m} N {n} K {k}: n/a: {why}")
        tsv.row(("torch", m, n, k), ms, why)


def run(torch, out_dir):
    """Times the grids with the torch module given (tests pass a stand-in)."""
    if not torch.cuda.is_available():
        print("torch bench skipped: no CUDA device")
        return 0
    os.makedirs(out_dir, exist_ok=True)
    device = torch.cuda.get_device_name()
    print(f"torch {torch.__version__} on {device}: batch {bt.BATCH}, {bt.HEADS} heads, f16")
    meta = {"source": "torch", "device": device, "torch": torch.__version__}
    timer = Timer(torch)
    tsv = Tsv(os.path.join(out_dir, "torch_attention.tsv"), meta, ATTENTION_COLUMNS)
    try:
        attention(torch, timer, tsv)
    finally:
        tsv.close()
    tsv = Tsv(os.path.join(out_dir, "torch_gemm.tsv"), meta, GEMM_COLUMNS)
    try:
        gemm(torch, timer, tsv)
    finally:
        tsv.close()
    return 0


def main(argv):
    try:
        import torch
    except ImportError:
        print("torch bench skipped: no PyTorch here")
        return 0
    try:
        import torch.nn.attention  # noqa: F401  (a submodule: torch.nn.attention.sdpa_kernel)
    except ImportError:
        pass
    return run(torch, argv[1] if len(argv) > 1 else "build/bench")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
