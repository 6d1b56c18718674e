X[i,]
