a > b
