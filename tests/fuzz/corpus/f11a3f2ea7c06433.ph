a + b * c
