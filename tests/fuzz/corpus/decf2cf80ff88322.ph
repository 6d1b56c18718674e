a < b + 1
