if a:
    pass
elif b:
    pass
