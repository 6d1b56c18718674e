a <= b
