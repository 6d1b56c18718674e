(a + b) * c
