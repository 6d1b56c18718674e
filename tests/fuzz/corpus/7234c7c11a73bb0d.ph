x = lambda: 1
