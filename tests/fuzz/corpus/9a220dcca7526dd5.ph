(a, b)
