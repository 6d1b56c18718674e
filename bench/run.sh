#!/bin/sh
# run.sh: every benchmark, from a build folder made beforehand (make all
# build-tests): the front end here; on a machine with a GPU, the attention
# grid of Triton's fused-attention benchmark (bench/attention_tuned.ph, and
# bench/attention_fused.ph for its backward) and a GEMM grid through the
# runtime, then PyTorch on the same grids in the same run, and last the
# joined tables (bench/benchtable.py) from the figures each bench writes
# under $BUILD/bench/*.tsv. Without a GPU (or torch) those parts say they
# are skipped. A failing bench still lets the others and the table run;
# the exit status says it failed.
BUILD=${BUILD:-build}
OUT="$BUILD/bench"
export LD_LIBRARY_PATH="$BUILD/gpulibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$OUT" || exit 1
rm -f "$OUT"/*.tsv "$OUT/table.md"   # no figures of an earlier run in this one's table
status=0
"$BUILD/bench/frontend_bench" examples/attention/attention.ph || exit 1
"$BUILD/bench/attention_bench" --short --impl phc-seed --tsv "$OUT/phc_seed_attention.tsv" \
    examples/attention/attention.ph || status=1
"$BUILD/bench/attention_bench" --tsv "$OUT/phc_attention.tsv" bench/attention_tuned.ph || status=1
"$BUILD/bench/attention_bench" --impl phc-fused --tsv "$OUT/phc_fused_attention.tsv" bench/attention_fused.ph || status=1
"$BUILD/bench/gemm_bench" --tsv "$OUT/phc_gemm.tsv" bench/gemm_tuned.ph || status=1
if ! command -v python3 >/dev/null; then
    echo "torch bench and bench table skipped: no python3"
    exit $status
fi
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    python3 bench/torch_bench.py "$OUT" || status=1
else
    echo "torch bench skipped: no PyTorch with CUDA here"
fi
python3 bench/benchtable.py --commit "$(git rev-parse --short HEAD 2>/dev/null)" "$OUT" || status=1
exit $status
