# An if whose else branch yields the var's initial value (a splat, built
# where it is used) after a nested if that returns: the code generator built
# the yielded slots in its cache of conversions, which forgot (freed) them
# when the branch ended, before the phis took them; phc crashed (SIGSEGV in
# LLVMAddIncoming, 8 of 150 random programs). Blocks 2 and 3 return: their
# Y and Z stay untouched, and the store after the nested if does not run.
# run: grid 6 1 1 N=192
import phobos.lang as ph


@ph.kernel
def fuzz(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], Z: ph.tensor[ph.f32][N]):
    b: ph.let = ph.ctx.block.x
    v: ph.var[ph.tile[ph.f32][32]] = 1.0
    if b > 3:
        v = X[b * 32:+32]
    else:
        if b > 1:
            return
        Z[b * 32:+32] = X[b * 32:+32] * 2.0
    Y[b * 32:+32] = v
