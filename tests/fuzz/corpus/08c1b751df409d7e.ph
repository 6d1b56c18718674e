def (): pass
