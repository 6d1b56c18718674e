x = a.1
