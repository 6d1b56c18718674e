import a.
