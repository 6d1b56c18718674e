not a and not b
