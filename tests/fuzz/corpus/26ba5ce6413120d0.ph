@ph.kernel x
def f(): pass
