x = f(a b)
