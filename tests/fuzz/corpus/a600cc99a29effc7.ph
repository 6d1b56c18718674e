a, b
