@ph.kernel
def k():
    pass
