"""attention_heads.py: phc kernels inside a torch.distributed program, the
heads of one attention split across GPUs.

One process per GPU (torch.multiprocessing, NCCL). Rank 0 draws Q, K, V of
shape [B, H, N, D] and broadcasts them; each rank takes its share of the
heads as a view (`q[:, h0:h1]`, no copy: attention_bhnd.ph reads rank-4
tensors through their strides), runs examples/attention_bhnd's forward on
its GPU into a [B, N, H/world, D] tensor, and the shares are gathered
(`all_gather`) into the whole [B, N, H, D] output on every rank, which each
rank checks against torch's scaled_dot_product_attention of the whole
problem, causal and not. N is not a multiple of the kernel's blocks.

    PYTHONPATH=python python3 examples/distributed/attention_heads.py [--gpus G]

G defaults to every visible GPU (at most H); with one GPU the program runs
the same collectives on a world of one. Without torch, CUDA or NCCL it
prints 'skipped: ...' and exits 0; a failed check exits 1."""

import argparse
import os
import socket
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))   # the package of this source tree

B, H, N, D = 2, 8, 1000, 64
SCALE = 0.125
ATOL = 1e-2


def rank_main(rank, world, port, results):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import phobos

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    phobos.init("gpu", device=rank)
    attn = phobos.load(os.path.join(ROOT, "examples", "attention_bhnd", "attention_bhnd.ph")).attn_bhnd

    if rank == 0:
        gen = torch.Generator(device="cuda").manual_seed(7)
        q, k, v = (torch.empty((B, H, N, D), dtype=torch.float16, device="cuda").normal_(0.0, 1.0, generator=gen)
                   for _ in range(3))
    else:
        q, k, v = (torch.empty((B, H, N, D), dtype=torch.float16, device="cuda") for _ in range(3))
    for t in (q, k, v):
        dist.broadcast(t, src=0)

    share = H // world
    h0 = rank * share
    ok = True
    for causal in (0, 1):
        mine = torch.full((B, N, share, D), float("nan"), dtype=torch.float16, device="cuda")
        attn[lambda meta: (phobos.cdiv(N, meta["BM"]), share, B)](
            q[:, h0:h0 + share], k[:, h0:h0 + share], v[:, h0:h0 + share], mine, SCALE, causal)
        shares = [torch.empty_like(mine) for _ in range(world)]
        dist.all_gather(shares, mine)
        out = torch.cat(shares, dim=2)                                        # [B, N, H, D]
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=bool(causal),
                                             scale=SCALE).transpose(1, 2)
        diff = (out.float() - ref).abs().max().item()                        # NaN if a head was not written
        good = diff <= ATOL
        ok &= good
        print(f"rank {rank} of {world} ({phobos.device_name()}, heads {h0}..{h0 + share - 1}, "
              f"config {attn.last_config}): causal {causal}: max |diff| over all {H} heads {diff:.3e}"
              f"{'' if good else f' > {ATOL}: FAILED'}", flush=True)
    flag = torch.tensor([1 if ok else 0], device="cuda")
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    results[rank] = int(flag.item())
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", type=int, default=0, help="processes, one per GPU (default: every visible GPU)")
    args = ap.parse_args()
    try:
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
    except ImportError:
        print("skipped: torch is not installed")
        return 0
    if not torch.cuda.is_available():
        print("skipped: no CUDA")
        return 0
    if not dist.is_available() or not dist.is_nccl_available():
        print("skipped: this torch has no NCCL")
        return 0
    world = args.gpus or min(torch.cuda.device_count(), H)
    if world < 1 or world > torch.cuda.device_count() or H % world:
        print(f"attention_heads: {world} GPUs asked for, {torch.cuda.device_count()} visible; "
              f"the {H} heads must split evenly")
        return 1
    results = mp.get_context("spawn").Manager().dict()
    mp.spawn(rank_main, args=(world, free_port(), results), nprocs=world, join=True)
    ok = len(results) == world and all(results.values())
    print(f"attention_heads: {world} GPU{'s' if world > 1 else ''}, B {B} H {H} N {N} D {D}: "
          f"{'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
