X[i][j]
