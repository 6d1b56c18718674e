from a imp x
