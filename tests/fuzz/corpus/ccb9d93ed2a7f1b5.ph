def f(*a): pass
