def f(a) pass
