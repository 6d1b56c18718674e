# ptxas (CUDA 13.0, the H200's driver JIT) fused max(a, -b) with the next integer max into one
# VIMNMX3 and dropped the negation: the row maximum of -X8 saw one element in four un-negated.
# compiler/nvidia/cg_ptxas.c now writes integer negation as not + add 1. Found by a ten-minute gpufuzz
# run (seeds 20261130..20262008).
# gpufuzz --backend gpu: mismatch in fuzz__BM_16__BN_8__BK_32__N_24: Y7[0, 1]: back end 39, interpreter 46; Y7[0, 5]: back end 39, interpreter 45; Y7[0, 7]: back end 39, interpreter 45 (Y7: 3 of 24 elements differ, tolerance 0)
# A program from tests/difftest/phgen.c (seed 20261980) for differential testing.
# run: grid 1 1 1 M=1 N=24 K=12 n=7 s=1.25
import phobos.lang as ph


@ph.kernel
@ph.autotune(BM=[16], BN=[8], BK=[32], N=[24])
@ph.tensorcore
def fuzz(Y7: ph.tensor[ph.i32][M, N], X8: ph.tensor[ph.i32][M, K], X9: ph.tensor[ph.i32][N], n: ph.i32, s: ph.f32):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    Y7[r0:+BM, c0:+BN] = ph.min(ph.rowmax((-X8[r0:+BM, 0:+BK])), X9[c0 - 1:+BN])
