for i range(3):
    pass
