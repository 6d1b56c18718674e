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
# BENCH_PARTS narrows the GPU part to some of: seed (the tutorial's own
# file), tuned (bench/attention_tuned.ph), fused (bench/attention_fused.ph),
# gemm, torch; all by default. The whole grid outlasts a 10-minute device
# call on an H200: `BENCH_PARTS="fused torch"` is the attention grid beside
# PyTorch's flash and cuDNN backends in one run.
BUILD=${BUILD:-build}
OUT="$BUILD/bench"
PARTS=${BENCH_PARTS:-seed tuned fused gemm torch}
export LD_LIBRARY_PATH="$BUILD/gpulibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for part in $PARTS; do
    case $part in
        seed | tuned | fused | gemm | torch) ;;
        *) echo "bench/run.sh: BENCH_PARTS names '$part'; the parts are seed, tuned, fused, gemm, torch" >&2; exit 2 ;;
    esac
done
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; echo "bench/run.sh: $1 skipped (BENCH_PARTS)"; return 1; }
mkdir -p "$OUT" || exit 1
rm -f "$OUT"/*.tsv "$OUT/table.md"   # no figures of an earlier run in this one's table
status=0
"$BUILD/bench/frontend_bench" examples/attention/attention.ph || exit 1
if part seed; then
    "$BUILD/bench/attention_bench" --short --impl phc-seed --tsv "$OUT/phc_seed_attention.tsv" \
        examples/attention/attention.ph || status=1
fi
if part tuned; then
    "$BUILD/bench/attention_bench" --tsv "$OUT/phc_attention.tsv" bench/attention_tuned.ph || status=1
fi
if part fused; then
    "$BUILD/bench/attention_bench" --impl phc-fused --tsv "$OUT/phc_fused_attention.tsv" bench/attention_fused.ph || status=1
fi
if part gemm; then
    "$BUILD/bench/gemm_bench" --tsv "$OUT/phc_gemm.tsv" bench/gemm_tuned.ph || status=1
fi
if ! command -v python3 >/dev/null; then
    echo "torch bench and bench table skipped: no python3"
    exit $status
fi
if ! part torch; then
    :
elif python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    python3 bench/torch_bench.py "$OUT" || status=1
else
    echo "torch bench skipped: no PyTorch with CUDA here"
fi
python3 bench/benchtable.py --commit "$(git rev-parse --short HEAD 2>/dev/null)" "$OUT" || status=1
exit $status
