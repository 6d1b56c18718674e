x = f(a, )
y = )
