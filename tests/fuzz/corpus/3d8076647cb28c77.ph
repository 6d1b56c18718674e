def f():
    class A: pass
