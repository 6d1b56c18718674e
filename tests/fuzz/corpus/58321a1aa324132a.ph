x = 1
'not a docstring'
