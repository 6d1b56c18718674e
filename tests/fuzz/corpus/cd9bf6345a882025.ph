x = X[a b]
