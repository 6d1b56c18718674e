x = $
y = 'a
