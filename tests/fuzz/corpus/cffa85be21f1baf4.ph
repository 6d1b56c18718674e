if a
    pass
