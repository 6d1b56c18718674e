while x:
    pass
