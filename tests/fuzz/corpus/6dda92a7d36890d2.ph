X[0]: ph.let = 1
