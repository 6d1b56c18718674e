a >> b
