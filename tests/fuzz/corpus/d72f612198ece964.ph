def f():
    import x
