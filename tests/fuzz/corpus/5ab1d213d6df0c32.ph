if a:
pass
