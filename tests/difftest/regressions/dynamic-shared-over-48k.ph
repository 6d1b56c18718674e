# A tensor-core dot whose left operand (64 x 256 f16, loaded once, outside
# the loop) and right operand (256 x 64) need 67 KB of shared memory
# together, past the 48 KB a kernel may declare statically: ptxas refused
# it until the code generator placed both areas in dynamic shared memory,
# which the launch now asks for.
# run: grid 2 1 1 M=128 N=128 K=256
import phobos.lang as ph


@ph.kernel
@ph.tensorcore
@ph.launch(128)
@ph.autotune(BM=[64], BN=[64], K=[256])
def fuzz(A: ph.tensor[ph.f16][M, K], B: ph.tensor[ph.f16][K, N], Y: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    a: ph.let = A[r0:+BM, :]
    for c in range(0, N, BN):
        Y[r0:+BM, c:+BN] = ph.dot(a, B[:, c:+BN])
