def f():
    x: ph.let = 1
    y: ph.i32
    x = 2
    X[i, 0:+4] = v
    a += 1; a -= 2; a *= 3; a /= 4; a //= 5
    g(x)
