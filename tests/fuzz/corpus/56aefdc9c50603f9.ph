x = X[]
