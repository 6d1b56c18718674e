@ph.kernel
x = 1
