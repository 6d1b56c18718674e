def f():
    x = )
    y = 1
    for i in:
        z = 1

    w = ]
v = 1 2
