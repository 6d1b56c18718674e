a, b = c
