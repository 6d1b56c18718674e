~a & b
