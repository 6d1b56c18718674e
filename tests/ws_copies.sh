# ws_copies.sh: sourced by gpucheck.sh and gpusanitize.sh. ws_copies DIR
# writes the warp-specialized copies of the tuned files into DIR:
# gemm_ws.ph, bench/gemm_tuned.ph with W=[1] for its W=[0], and
# attention_ws.ph and attention_turns.ph, bench/attention_tuned.ph with
# @ph.warp_specialize(1) and (2) on every kernel (ws_attention); false (saying why) when
# the GEMM file has no W=[0].
# bench/attention_tuned.ph with @ph.warp_specialize($1) on each kernel: added
# where a kernel has none, its autotuned W=[...] made W=[$1] where it has one
ws_attention() {
    awk -v w="$1" 'add && !/^@ph.warp_specialize/ { print "@ph.warp_specialize(" w ")" }
        { add = 0 } /^@ph.kernel$/ { add = 1 }
        /@ph.autotune\(/ { sub(/W=\[[0-9, ]*\]/, "W=[" w "]") } { print }' bench/attention_tuned.ph
}

ws_copies() {
    sed 's/W=\[0\])/W=[1])/' bench/gemm_tuned.ph > "$1/gemm_ws.ph"
    ws_attention 1 > "$1/attention_ws.ph"
    ws_attention 2 > "$1/attention_turns.ph"
    grep -q 'W=\[1\])' "$1/gemm_ws.ph" || { echo "  bench/gemm_tuned.ph has no W=[0] to turn into W=[1]"; return 1; }
}
