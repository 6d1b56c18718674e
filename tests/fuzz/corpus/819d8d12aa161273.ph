True
