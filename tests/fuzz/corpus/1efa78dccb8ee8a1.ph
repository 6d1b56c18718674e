x = a. b c
