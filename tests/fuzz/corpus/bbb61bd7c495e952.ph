x = 'a' "b\n"
