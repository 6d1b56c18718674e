'doc' 'string'
x = 1
