a = b = 1
