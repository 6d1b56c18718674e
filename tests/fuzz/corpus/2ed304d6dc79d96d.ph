a >= b
