def g(): return
