f(a, b=1, c=d + 1)
