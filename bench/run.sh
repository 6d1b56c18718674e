#!/bin/sh
# run.sh: every benchmark, from a build folder made beforehand (make all
# build-tests): the front end here; on a machine with a GPU, the attention
# kernels side by side with PyTorch's attention in the same run.
BUILD=${BUILD:-build}
export LD_LIBRARY_PATH="$BUILD/gpulibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$BUILD/bench/frontend_bench" examples/attention/attention.ph || exit 1
"$BUILD/bench/attention_bench" examples/attention/attention.ph || exit 1
"$BUILD/bench/attention_bench" bench/attention_tuned.ph || exit 1
if command -v python3 >/dev/null && python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    python3 bench/torch_attention.py || exit 1
else
    echo "torch attention bench skipped: no PyTorch with CUDA here"
fi
