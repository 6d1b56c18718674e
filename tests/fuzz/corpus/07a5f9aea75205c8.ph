x = (a + b
