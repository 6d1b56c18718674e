#!/bin/sh
# gpucheck.sh: every GPU test, run from a build folder made elsewhere (the GPU
# machine has no LLVM): the example checks on the GPU, the tutorial at the
# seed's size and at H 4, N_CTX 4096, the GPU suites, and 100 generated
# programs (seed 1) and every regression of tests/difftest against the
# interpreter. Builds nothing.
BUILD=${BUILD:-build}
export LD_LIBRARY_PATH="$BUILD/gpulibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PHOBOS_TARGET=gpu PHOBOS_REQUIRE_GPU=1
status=0
for e in "$BUILD"/examples/*_check; do
    name=$(basename "$e" _check)
    echo "== $name"
    "$e" "examples/$name/$name.ph" || status=1
done
echo "== attention at Z 1 H 4 N_CTX 4096 HEAD_DIM 64"
"$BUILD/examples/attention_check" examples/attention/attention.ph --size 1 4 4096 64 || status=1
echo "== every config of bench/attention_tuned.ph"
for i in 0 1 2 3 4 5 6 7; do
    out=$(PHOBOS_CONFIG_INDEX=$i "$BUILD/examples/attention_check" bench/attention_tuned.ph 2>&1) || status=1
    echo "config index $i: $(echo "$out" | tail -1)"
done
echo "== docs/runtime.md embedding example"
"$BUILD/docs/embed" || status=1
for t in test_gpu test_gpu_ops test_runtime test_codegen; do
    echo "== $t"
    "$BUILD/tests/$t" --jobs 1 || status=1
done
echo "== gpufuzz: 100 generated programs from seed 1, and tests/difftest/regressions"
"$BUILD/tests/gpufuzz" --backend gpu --seed 1 --count 100 --out "$BUILD/gpufuzz" \
    --regress tests/difftest/regressions/*.ph || status=1
[ $status = 0 ] && echo "gpucheck: all passed" || echo "gpucheck: FAILED"
exit $status
