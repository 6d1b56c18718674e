# ws_copies.sh: sourced by gpucheck.sh and gpusanitize.sh. ws_copies DIR
# writes the warp-specialized copies of the tuned files into DIR:
# gemm_ws.ph, bench/gemm_tuned.ph with W=[1] for its W=[0], and
# attention_ws.ph and attention_turns.ph, bench/attention_tuned.ph with
# @ph.warp_specialize(1) and (2) on every kernel; false (saying why) when
# the GEMM file has no W=[0].
ws_copies() {
    sed 's/W=\[0\])/W=[1])/' bench/gemm_tuned.ph > "$1/gemm_ws.ph"
    awk '/^@ph.kernel$/ { print; print "@ph.warp_specialize(1)"; next } { print }' bench/attention_tuned.ph > "$1/attention_ws.ph"
    awk '/^@ph.kernel$/ { print; print "@ph.warp_specialize(2)"; next } { print }' bench/attention_tuned.ph > "$1/attention_turns.ph"
    grep -q 'W=\[1\])' "$1/gemm_ws.ph" || { echo "  bench/gemm_tuned.ph has no W=[0] to turn into W=[1]"; return 1; }
}
