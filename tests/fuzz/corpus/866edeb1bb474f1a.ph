False
