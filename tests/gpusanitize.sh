#!/bin/sh
# gpusanitize.sh: compute-sanitizer's memcheck, racecheck and synccheck over
# every tuned GEMM and attention config at a small size, on the sm_90a path
# and on the mma.sync path (PHOBOS_ARCH=sm_90), from a build folder made
# elsewhere (make gpu-bundle); builds nothing. The GEMM runs once per path
# and tool at 384 x 640 x 192 on 3 blocks with the autotuner on, so every
# config of bench/gemm_tuned.ph is launched (and checked by the sanitizer)
# while it is timed, each block looping over several tiles; the attention check runs each config index of
# bench/attention_tuned.ph (PHOBOS_CONFIG_INDEX, as gpucheck.sh does) at
# Z 1 H 1 N_CTX 128, head dims 64 and 128, and of bench/attention_fused.ph
# (the benchmarks' fast kernels: the persistent forward, dK/dV adding dQ,
# L and Delta through rings its threads read). Every run must end with the
# tool's summary at 0 errors (0 hazards) and the check passing.
# The GEMM runs again as gemm_ws.ph, bench/gemm_tuned.ph with W=[1] (the
# warp-specialized configs, out of the tuned set: not faster), and on the
# sm_90a path the attention check runs again with every kernel of
# bench/attention_tuned.ph warp-specialized (attention_ws.ph), and again
# with the consumer warpgroups taking turns (attention_turns.ph).
# SANITIZE_TOOLS and SANITIZE_ARCHS narrow the runs (a space-separated list
# each), for a device session too short for all of them; SANITIZE_JOBS runs
# go at once; SANITIZE_LOGS names a folder where each failing run's whole
# report is written (its label as the file name); SANITIZE_ATTENTION="FILE
# ..." runs the attention check of those files alone (the GEMM and the
# other files not).
BUILD=${BUILD:-build}
. tests/ws_copies.sh
. tests/gpurefusal.sh
export LD_LIBRARY_PATH="$BUILD/gpulibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PHOBOS_TARGET=gpu PHOBOS_REQUIRE_GPU=1
SAN=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
TOOLS=${SANITIZE_TOOLS:-memcheck racecheck synccheck}
ARCHS=${SANITIZE_ARCHS:-sm_90a sm_90}
[ -x "$SAN" ] || { echo "gpusanitize: no compute-sanitizer ($SAN)"; exit 1; }
status=0 runs=0

# The runs of one tool and path go SANITIZE_JOBS at once (default: a
# quarter of the CPUs): each compiles its configs and the GPU work is
# small. Their reports are printed in order once all are done.
JOBS=${SANITIZE_JOBS:-$(( $(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 4) / 4 ))}
[ "$JOBS" -ge 1 ] 2>/dev/null || JOBS=1
Q=$(mktemp -d)
queued=0

# sanitize LABEL COMMAND...: one run under $tool, started now
sanitize() {
    label=$1
    shift
    queued=$((queued + 1))
    printf '%s\n' "$label" > "$Q/$queued.label"
    ( "$SAN" --tool "$tool" --error-exitcode 99 "$@" > "$Q/$queued.out" 2>&1; echo $? > "$Q/$queued.rc" ) &
    [ $((queued % JOBS)) != 0 ] || wait
}

refused=0

# report: once the runs started are done, each one's summary line, and the
# report's first lines when it found anything or the command failed; a
# refused run is a line that says so
report() {
    wait
    n=1
    while [ $n -le $queued ]; do
        label=$(cat "$Q/$n.label") rc=$(cat "$Q/$n.rc") out=$(cat "$Q/$n.out")
        runs=$((runs + 1))
        summary=$(printf '%s\n' "$out" | grep -E '(ERROR|RACECHECK) SUMMARY' | tail -1 | sed 's/^========= //')
        # a refused run (gpurefusal.sh) that the tool found clean
        if [ "$rc" = 1 ] && printf '%s\n' "$summary" | grep -qE '^(ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards displayed \(0 errors)' &&
           why=$(refusal "$out"); then
            echo "  $label: refused ($why)"
            refused=$((refused + 1))
            n=$((n + 1))
            continue
        fi
        echo "  $label: ${summary:-no summary} (exit $rc)"
        if [ "$rc" != 0 ]; then
            status=1
            printf '%s\n' "$out" | grep -v '^=========     ' | head -30 | sed 's/^/    /'
            [ -z "$SANITIZE_LOGS" ] || { mkdir -p "$SANITIZE_LOGS" &&
                printf '%s\n' "$out" > "$SANITIZE_LOGS/$tool-$arch-$(printf '%s' "$label" | tr -c 'A-Za-z0-9.\n' '_').txt"; }
        fi
        n=$((n + 1))
    done
    rm -f "$Q"/*
    queued=0
}

WS=$(mktemp -d)
trap 'rm -rf "$WS" "$Q"' EXIT
ws_copies "$WS" || exit 1

# attention_runs FILE LABEL: each config index of FILE at N_CTX 128, head dims 64 and 128
attention_runs() {
    for d in 64 128; do
        n=$(PHOBOS_CONFIG_INDEX=0 "$BUILD/examples/attention_check" "$1" --size 1 1 128 $d 2>&1 |
            sed -n 's/^configs that fit: //p' | tr ',' '\n' | awk '$2 > most { most = $2 } END { print most + 0 }')
        i=0
        while [ $i -lt "${n:-0}" ]; do
            PHOBOS_CONFIG_INDEX=$i sanitize "$2 D $d, config index $i" "$BUILD/examples/attention_check" "$1" --size 1 1 128 $d
            i=$((i + 1))
        done
    done
}

for arch in $ARCHS; do
    export PHOBOS_ARCH=$arch
    for tool in $TOOLS; do
        echo "== $tool, $arch"
        if [ -n "$SANITIZE_ATTENTION" ]; then
            for f in $SANITIZE_ATTENTION; do attention_runs "$f" "$(basename "$f")"; done
            report
            continue
        fi
        sanitize "gemm_tuned.ph 384x640x192 on 3 blocks, every config" \
            "$BUILD/bench/gemm_bench" --shape 384 640 192 --blocks 3 bench/gemm_tuned.ph
        sanitize "gemm_ws.ph (W=[1]) 384x640x192 on 3 blocks, every config" \
            "$BUILD/bench/gemm_bench" --shape 384 640 192 --blocks 3 "$WS/gemm_ws.ph"
        attention_runs bench/attention_tuned.ph attention
        attention_runs bench/attention_fused.ph attention_fused.ph
        # the producer warp exists on sm_90a only (elsewhere it exits at once)
        [ "$arch" != sm_90a ] || attention_runs "$WS/attention_ws.ph" "attention_ws.ph (@ph.warp_specialize(1))"
        [ "$arch" != sm_90a ] || attention_runs "$WS/attention_turns.ph" "attention_turns.ph (@ph.warp_specialize(2))"
        report
    done
done
[ $status = 0 ] && echo "gpusanitize: $runs runs, 0 errors, $refused refused for shared memory" || echo "gpusanitize: FAILED"
exit $status
