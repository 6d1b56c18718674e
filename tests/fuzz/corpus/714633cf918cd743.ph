def f():
    x = )
    y = 1
    if :
        z = 1
    w = 2
