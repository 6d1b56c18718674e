#!/bin/sh
# wgmma_hazards.sh: no register a wgmma may still use is touched in phc's
# sm_90a PTX (tests/ptx/wgmma_hazards.py): the attention tutorial, the
# fused and tuned attention files and the GEMMs, by default and under the
# code generation switches that move waits (docs/runtime.md); first the
# checker's own fixtures, one with each hazard and one without.
#
#   BUILD=build sh tests/ptx/wgmma_hazards.sh
set -eu
BUILD=${BUILD:-build}
PHC=$BUILD/bin/phc
CHECK="python3 tests/ptx/wgmma_hazards.py"
work=$BUILD/wgmma-hazards
rm -rf "$work" && mkdir -p "$work"

if $CHECK tests/ptx/hazards/carried_a.ptx > "$work/fixture.txt" 2>&1; then
    echo "wgmma_hazards.sh: the checker passed tests/ptx/hazards/carried_a.ptx, which has hazards"; exit 1
fi
for want in "carried_a: %r2 written" "early_read: %f1 read"; do
    grep -q "$want" "$work/fixture.txt" || { echo "wgmma_hazards.sh: no '$want' in:"; cat "$work/fixture.txt"; exit 1; }
done
$CHECK tests/ptx/hazards/waited.ptx

# the modules compiled side by side, each one's status in a file of its own
n=0
compile() {
    # shellcheck disable=SC2086 # $1 is a list of NAME=VALUE
    { env $1 "$PHC" --arch=sm_90a "$2" -o "$work/$n.ptx" && echo ok > "$work/$n.ok"; } &
    n=$((n + 1))
}
for f in examples/attention/attention.ph tests/gpu/attention_fused.ph bench/attention_fused.ph bench/attention_tuned.ph bench/gemm_tuned.ph; do
    compile "" "$f"
done
for sw in PHOBOS_DOT_OVERLAP=1 "PHOBOS_MASK_SPLIT=1 PHOBOS_OVERLAP_WIDE=1" "PHOBOS_VECTOR_RING=0 PHOBOS_SCRATCH_TURNS=0"; do
    compile "$sw" bench/attention_fused.ph
done
wait
i=0
while [ $i -lt $n ]; do
    [ -f "$work/$i.ok" ] || { echo "wgmma_hazards.sh: module $i did not compile"; exit 1; }
    i=$((i + 1))
done
$CHECK "$work"/*.ptx
echo "wgmma_hazards.sh: $n sm_90a modules, no register touched while a wgmma may use it"
