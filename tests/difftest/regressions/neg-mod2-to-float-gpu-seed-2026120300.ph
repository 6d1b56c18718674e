# LLVM 19's NVPTX back end lowers `sitofp i1` as an unsigned conversion (selp.u32 1, 0, then
# cvt.rn.f32.s32): InstCombine turns -(q % 2) converted to f32 into that instruction, and true
# came out 1.0 instead of -1.0. compiler/nvidia/cg_ptxas.c now rewrites it into a select of -1.0
# and 0.0 before the back end. Found by a ten-minute gpufuzz run (seeds 2026120208..2026120876),
# widened here from one element to 64 so that odd and even quotients both occur.
# gpufuzz --backend gpu: mismatch in fuzz__BM_1__BN_1__BK_1__NT_32__K_8: Y7[0, 0]: back end 1, interpreter -1 (Y7: 1 of 1 elements differ, tolerance 0.002)
# A program from tests/difftest/phgen.c (seed 2026120300) for differential testing.
# run: grid 1 4 1 M=1 N=64 K=8 n=4 s=1.25
import phobos.lang as ph


@ph.kernel
@ph.autotune(BM=[1], BN=[16], NT=[32], K=[8])
@ph.launch(NT)
def fuzz(X0: ph.tensor[ph.f32][M, K], X2: ph.tensor[ph.i32][N], Y7: ph.tensor[ph.f32][M, N], n: ph.i32, s: ph.f32):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    t2: ph.let = (((X2[c0:+BN] * X2[c0:+BN]) // (-3)) % 2)
    for i4 in range(0, BM, 2):
        Y7[r0 + i4, c0:+BN] = (-t2)
