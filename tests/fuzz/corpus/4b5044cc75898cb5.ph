a < b < c
