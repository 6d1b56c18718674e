#!/bin/sh
# gpucheck.sh: every GPU test, run from a build folder made elsewhere (the GPU
# machine has no LLVM): the example checks on the GPU, the tutorial at the
# seed's size and at H 4, N_CTX 4096, the attention check with every config
# of bench/attention_tuned.ph, tests/gpu/attention_shapes.ph (head dim 64 and
# 128, every tile shape up to 128 x 128, 4 and 8 warps) and
# tests/gpu/attention_fused.ph and bench/attention_fused.ph (dQ by atomic
# adds, the second with a producer warp), every config of
# bench/gemm_tuned.ph at two small shapes, both files again with a producer
# warp (W=[1] for the GEMM, @ph.warp_specialize(1) on each attention
# kernel, and with @ph.warp_specialize(2)), the GPU
# suites, the Python examples on torch (when python3 has it: attention_torch.py,
# distributed/attention_heads.py), and 100 generated programs (seed 1) and every regression of
# tests/difftest against the interpreter. Builds nothing. A persistent
# attention config (PERSISTENT_1) runs again at Z 1 H 34 N_CTX 1024, more
# tiles than an H200 has multiprocessors, so its blocks loop over tiles.
# GPUCHECK_ATTENTION (below) narrows it to every config of some attention files;
# GPUCHECK_PART=1 runs the examples and the attention files only, =2 the rest
# (from the GEMMs on), so the sweep fits two device calls.
BUILD=${BUILD:-build}
. tests/ws_copies.sh
. tests/gpurefusal.sh
export LD_LIBRARY_PATH="$BUILD/gpulibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PHOBOS_TARGET=gpu PHOBOS_REQUIRE_GPU=1
status=0
START=$(date +%s)

# GPUCHECK_JOBS runs at once in the config sweeps below (default: half
# the CPUs): each run compiles its configs on one or a few threads and the
# GPU work is small, so the sweeps are bound by the compiler; the verdicts
# are printed in run order whatever order the runs finish in.
JOBS=${GPUCHECK_JOBS:-$(( $(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2) / 2 ))}
[ "$JOBS" -ge 1 ] 2>/dev/null || JOBS=1
SWEEP=$(mktemp -d)
trap 'rm -rf "$SWEEP"' EXIT

# attention_run I FILE HEAD_DIM: the attention check of FILE at Z 1 H 2
# N_CTX 1024 HEAD_DIM with PHOBOS_CONFIG_INDEX=I (each kernel's I-th config
# of those that fit, modulo their number); its output and status in
# $SWEEP/I.out and $SWEEP/I.rc.
attention_run() {
    PHOBOS_CONFIG_INDEX=$1 "$BUILD/examples/attention_check" "$2" --size 1 2 1024 "$3" > "$SWEEP/$1.out" 2>&1
    echo $? > "$SWEEP/$1.rc"
}

# verdict I CONFIGS OUT RC [NOTE]: the line for run I, its configs named in
# $ran when it passed (a persistent forward's run, with $pin, the kernel it
# pinned, in $persistent); a refusal's config in $refused_configs and
# $why. True when the run was refused.
verdict() {
    if [ "$4" = 0 ]; then
        echo "  index $1$5: $2: $(printf '%s\n' "$3" | tail -1 | sed 's/.*: //')"
        passed=$((passed + 1))
        ran=$(printf '%s\n%s\n' "$ran" "$2" | tr -d ' ' | tr ',' '\n' | grep . | sort -u)
        case $2 in *PERSISTENT_1*) persistent="$persistent $1:$d:$pin" ;; esac
        return 1
    elif why=$(refusal "$3"); then
        echo "  index $1$5: $2: refused ($why)"
        refused_configs=$(printf '%s\n%s\n' "$refused_configs" "${why%% *}" | grep . | sort -u)
        return 0
    fi
    echo "  index $1$5: ${2:-no configs}: FAILED"
    printf '%s\n' "$3" | sed 's/^/    /'
    status=1
    return 1
}

# attention_configs FILE HEAD_DIM: attention_run for each config index
# until every config of the kernel with the most has run (index 0 first:
# it says how many), GPUCHECK_JOBS at once; a line per run, its configs
# and the check's verdict. A run whose launch the runtime refused for
# shared memory (gpurefusal.sh) is "refused (reason)", and runs again with
# the refused kernel pinned to its config of the first run that passed
# (PHOBOS_CONFIG_INDEX_<kernel>, examples/host.h), so the other kernels'
# configs are checked; anything
# else that is not "N of N ok" is a failure, shown whole. The configs of
# the runs that passed in $ran, the refused ones in $refused_configs (a
# line each); the counts in $passed, $refused.
attention_configs() {
    rm -f "$SWEEP"/*
    d=$2
    attention_run 0 "$1" "$2"
    runs=$(sed -n 's/^configs that fit: //p' "$SWEEP/0.out" | tr ',' '\n' |
           awk '$2 > most { most = $2 } END { print most + 0 }')
    i=1
    while [ $i -lt "$runs" ]; do
        attention_run $i "$1" "$2" &
        i=$((i + 1))
        [ $(( (i - 1) % JOBS )) = 0 ] && wait
    done
    wait
    # a refused kernel is pinned to its config in the first run that passed
    ok=0
    while [ $ok -lt "$runs" ] && [ "$(cat "$SWEEP/$ok.rc")" != 0 ]; do ok=$((ok + 1)); done
    i=0
    while [ $i -lt "$runs" ] || [ $i = 0 ]; do
        out=$(cat "$SWEEP/$i.out")
        configs=$(printf '%s\n' "$out" | sed -n 's/^configs: //p')
        pin=
        if verdict $i "$configs" "$out" "$(cat "$SWEEP/$i.rc")"; then
            refused=$((refused + 1))
            cfg=${why%% *}
            kernel=${cfg%%__*}
            pin=PHOBOS_CONFIG_INDEX_$kernel=$ok
            out=$(env "$pin" PHOBOS_CONFIG_INDEX=$i "$BUILD/examples/attention_check" "$1" --size 1 2 1024 "$2" 2>&1)
            rc=$?
            configs=$(printf '%s\n' "$out" | sed -n 's/^configs: //p')
            verdict $i "$configs" "$out" $rc " ($kernel's config of index $ok)" && refused=$((refused + 1))
        fi
        i=$((i + 1))
    done
}

# attention_file FILE: attention_configs at each head dim FILE's configs
# have (their D), then a summary; a config phc --list names that no run
# took is a failure.
attention_file() {
    echo "== every config of $1"
    ran="" refused_configs="" passed=0 refused=0 persistent=""
    dims=$("$BUILD/bin/phc" --list "$1" | grep -o ' D=[0-9]*' | cut -d= -f2 | sort -nu)
    [ -n "$dims" ] || { echo "  phc --list $1 names no head dim D"; status=1; return; }
    for d in $dims; do
        echo " HEAD_DIM $d"
        attention_configs "$1" "$d"
    done
    missed=$("$BUILD/bin/phc" --list "$1" | awk '/^  / { print $1 }' | while read -r c; do
        printf '%s\n%s\n' "$ran" "$refused_configs" | grep -qxF "$c" || echo "$c"
    done)
    [ -z "$missed" ] || { echo "  never checked:"; printf '%s\n' "$missed" | sed 's/^/    /'; status=1; }
    # a persistent forward's run again with more (row block, head) tiles
    # than an H200 has multiprocessors (132), so its blocks loop over tiles
    for p in $persistent; do
        i=${p%%:*} pin=${p##*:} d=${p#*:}
        d=${d%%:*}
        # shellcheck disable=SC2086 # $pin is one NAME=VALUE or nothing
        if out=$(env $pin PHOBOS_CONFIG_INDEX=$i "$BUILD/examples/attention_check" "$1" --size 1 34 1024 "$d" 2>&1); then
            echo "  index $i, HEAD_DIM $d at Z 1 H 34 N_CTX 1024 (persistent): $(printf '%s\n' "$out" | tail -1 | sed 's/.*: //')"
        else
            echo "  index $i, HEAD_DIM $d at Z 1 H 34 N_CTX 1024 (persistent): FAILED"
            printf '%s\n' "$out" | sed 's/^/    /'
            status=1
        fi
    done
    echo "  $1: $passed runs passed, $refused refused; $(printf '%s\n' "$ran" | grep -c .) configs checked, $(printf '%s\n' "$refused_configs" | grep -c .) refused"
}

# GPUCHECK_ATTENTION="FILE ...": every config of these attention files and
# nothing else (a new lever's check in little device time), then exit.
if [ -n "$GPUCHECK_ATTENTION" ]; then
    for f in $GPUCHECK_ATTENTION; do attention_file "$f"; done
    took="in $(( $(date +%s) - START )) s"
    [ $status = 0 ] && echo "gpucheck: the attention files passed $took" || echo "gpucheck: FAILED $took"
    exit $status
fi

PART=${GPUCHECK_PART:-all}
in_part() { [ "$PART" = all ] || [ "$PART" = "$1" ]; }
case $PART in all|1|2) ;; *) echo "gpucheck: GPUCHECK_PART is 1, 2 or unset, not '$PART'" >&2; exit 2 ;; esac

if in_part 1; then
for e in "$BUILD"/examples/*_check; do
    name=$(basename "$e" _check)
    echo "== $name"
    "$e" "examples/$name/$name.ph" || status=1
done
echo "== attention at Z 1 H 4 N_CTX 4096 HEAD_DIM 64"
"$BUILD/examples/attention_check" examples/attention/attention.ph --size 1 4 4096 64 || status=1
attention_file bench/attention_tuned.ph
attention_file tests/gpu/attention_shapes.ph
attention_file tests/gpu/attention_fused.ph
attention_file bench/attention_fused.ph
fi
# gemm_file FILE: each config of FILE's gemm, not only the autotuner's pick,
# checked on a shape whose rows TMA copies (384 x 640 x 192, 3 blocks: the
# persistent loop) and one with ragged edges and 16-byte-unaligned rows
# (333 x 517 x 200: the guarded copies), GPUCHECK_JOBS runs at once.
GEMM_SHAPES="384x640x192x3 333x517x200"
gemm_run() {   # gemm_run FILE CONFIG MxNxK[xBLOCKS]: output and status in $SWEEP/CONFIG.SHAPE.{out,rc}
    set -- "$1" "$2" "$3" $(echo "$3" | tr x ' ')
    "$BUILD/bench/gemm_bench" --kernel "$2" --shape "$4" "$5" "$6" ${7:+--blocks "$7"} "$1" > "$SWEEP/$2.$3.out" 2>&1
    echo $? > "$SWEEP/$2.$3.rc"
}
gemm_file() {
    echo "== every config of $1"
    rm -f "$SWEEP"/*
    configs=$("$BUILD/bin/phc" --list "$1" | awk '/^  gemm__/ { print $1 }')
    j=0
    for c in $configs; do
        for shape in $GEMM_SHAPES; do
            gemm_run "$1" "$c" "$shape" &
            j=$((j + 1))
            [ $((j % JOBS)) = 0 ] && wait
        done
    done
    wait
    n=0
    for c in $configs; do
        for shape in $GEMM_SHAPES; do
            if [ "$(cat "$SWEEP/$c.$shape.rc")" = 0 ] && grep -q '1024 sampled elements right' "$SWEEP/$c.$shape.out"; then
                n=$((n + 1))
            else
                echo "  $c at $shape (M x N x K x blocks): FAILED"
                sed 's/^/    /' "$SWEEP/$c.$shape.out"
                status=1
            fi
        done
    done
    [ $n -gt 0 ] || { echo "  no gemm config of $1 ran"; status=1; }
    echo "  $1: $n runs right"
}
if in_part 2; then
gemm_file bench/gemm_tuned.ph
# and their warp-specialized copies (tests/ws_copies.sh): the GEMM's W=[1]
# configs, out of the tuned set (not faster), and the attention kernels with
# a producer warpgroup, and with their warpgroups taking turns as well
WS=$(mktemp -d)
if ws_copies "$WS"; then gemm_file "$WS/gemm_ws.ph"; else status=1; fi
attention_file "$WS/attention_ws.ph"
attention_file "$WS/attention_turns.ph"
rm -rf "$WS"
echo "== docs/runtime.md embedding example"
"$BUILD/docs/embed" || status=1
# test_codegen needs no GPU (its ptxas checks run in CI); these do
for t in test_gpu test_gpu_ops test_runtime test_runtime_load test_runtime_launch test_runtime_autotune; do
    echo "== $t"
    "$BUILD/tests/$t" --jobs 1 || status=1
done
# the Python examples on torch's CUDA tensors, when this machine's python3 has torch
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    for py in examples/attention/attention_torch.py "examples/attention/attention_torch.py bench/attention_tuned.ph" \
              "examples/attention/attention_torch.py bench/attention_fused.ph" examples/distributed/attention_heads.py; do
        echo "== $py"
        PHOBOS_LIBRARY="$BUILD/gpulibs/libphobos.so.0" PYTHONPATH=python python3 $py || status=1
    done
else
    echo "== the Python examples: skipped, no python3 with torch and CUDA here"
fi
echo "== gpufuzz: 100 generated programs from seed 1, and tests/difftest/regressions"
"$BUILD/tests/gpufuzz" --backend gpu --seed 1 --count 100 --out "$BUILD/gpufuzz" \
    --regress tests/difftest/regressions/*.ph || status=1
fi
took="in $(( $(date +%s) - START )) s"
[ $status = 0 ] && echo "gpucheck: all passed (part $PART) $took" || echo "gpucheck: FAILED $took"
exit $status
