#!/bin/sh
# run.sh: every benchmark, from a build folder made beforehand (make all
# build-tests): the front end here; on a machine with a GPU, the attention
# grid of Triton's fused-attention benchmark and a GEMM grid through the
# runtime, each bench writing its figures under $BUILD/bench/*.tsv, then
# PyTorch's attention in the same run.
BUILD=${BUILD:-build}
OUT="$BUILD/bench"
export LD_LIBRARY_PATH="$BUILD/gpulibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$OUT" || exit 1
rm -f "$OUT"/*.tsv   # no figures of an earlier run
"$BUILD/bench/frontend_bench" examples/attention/attention.ph || exit 1
"$BUILD/bench/attention_bench" --short --impl phc-seed --tsv "$OUT/phc_seed_attention.tsv" \
    examples/attention/attention.ph || exit 1
"$BUILD/bench/attention_bench" --tsv "$OUT/phc_attention.tsv" bench/attention_tuned.ph || exit 1
"$BUILD/bench/gemm_bench" --tsv "$OUT/phc_gemm.tsv" bench/gemm_tuned.ph || exit 1
if command -v python3 >/dev/null && python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    python3 bench/torch_attention.py || exit 1
else
    echo "torch attention bench skipped: no PyTorch with CUDA here"
fi
