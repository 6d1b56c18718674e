for i in range(0, n, 2):
    pass
    return i, j
for j in r: return
