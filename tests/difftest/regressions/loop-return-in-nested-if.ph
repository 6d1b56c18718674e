# A loop with returns nested in ifs, one after a store, one beside a branch
# that yields a splat into the carried tile: the splat's slots were freed
# before the if's phis took them. Blocks 0 and 1 store Y and return, 4 and
# 5 return from the nested if; the others run the loop out and store Z.
# run: grid 7 1 1 N=224 n=5
import phobos.lang as ph


@ph.kernel
def fuzz(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], Z: ph.tensor[ph.f32][N], n: ph.i32):
    b: ph.let = ph.ctx.block.x
    acc: ph.var[ph.tile[ph.f32][32]] = 0.0
    t: ph.var[ph.i32] = 0
    for i in range(0, n):
        acc += X[i * 32:+32]
        t += i
        if i == b + 3:
            Y[b * 32:+32] = acc
            return
        if b > 3:
            if i == 2:
                acc = 0.25
            else:
                if i == b - 1:
                    return
        else:
            acc = acc * 0.5
    Z[b * 32:+32] = acc + t
