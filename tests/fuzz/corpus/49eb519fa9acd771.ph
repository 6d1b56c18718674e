a == b and c != d or e
