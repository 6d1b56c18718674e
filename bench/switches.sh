#!/bin/sh
# switches.sh: bench/attention_bench over one program under several
# settings of the code generation switches (docs/runtime.md), one after
# another in one run on one GPU, each setting with a PTX cache of its own
# (so no setting's PTX or autotuning winners serve another): the
# before/after tables of docs/performance.md.
#   BUILD=build/gpu sh bench/switches.sh PROGRAM.ph "--d 128" - "PHOBOS_MASK_SPLIT=1" ...
# The second argument goes to attention_bench as it is; each setting after
# it is a list of NAME=VALUE, or - for the defaults. A setting that runs
# past SWITCH_TIMEOUT seconds (default 300: a kernel that hangs) is
# stopped and reported, and the next one runs.
BUILD=${BUILD:-build}
limit=${SWITCH_TIMEOUT:-300}
if [ $# -lt 3 ]; then
    echo "usage: switches.sh PROGRAM.ph 'BENCH ARGS' SETTING..." >&2
    exit 2
fi
prog=$1
args=$2
shift 2
export LD_LIBRARY_PATH="$BUILD/gpulibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
status=0
for setting in "$@"; do
    cache=$(mktemp -d) || exit 1
    echo "== $prog $args: $setting"
    [ "$setting" = - ] && setting=
    # shellcheck disable=SC2086 # args and setting are lists
    env $setting PHOBOS_TARGET=gpu PHOBOS_REQUIRE_GPU=1 PHOBOS_CACHE_DIR="$cache" \
        timeout "$limit" "$BUILD/bench/attention_bench" $args "$prog"
    rc=$?
    [ $rc = 124 ] && echo "switches.sh: stopped after $limit s (a kernel that does not finish?)"
    [ $rc = 0 ] || status=1
    rm -rf "$cache"
done
exit $status
